//! Real threads racing over many window roll-overs, with lagging clocks.
//!
//! Every writer keeps its own ledger of the adds that returned `Ok`, per
//! window. At the end, every window still live must hold exactly the sum of
//! its ledger entries: nothing lost, nothing leaked in from a late add.
//! Meanwhile a reader checks that no window it reads mixes in counts of
//! another window.
//!
//! What this cannot see: an add that returned `Ok` into a window that was
//! already retired (counted nowhere) leaves no trace in any window still
//! readable. The loom models check that case with the rollers' record of
//! each retired window's final counts (`loom-tests/`).

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use leaparray::array::{Narrow, Width};
use leaparray::{AddError, LeapArray};

const N: usize = 8;
const WINDOW: u64 = 16;
const WRITERS: u64 = 4;
const ADDS: u64 = if cfg!(miri) { 300 } else { 200_000 };

/// Counter 1 only ever receives adds of `unit(id)` in window `id`, so any
/// count read for window `id` must be a multiple of it; a count from
/// another window almost never is.
fn unit(id: u64) -> u64 {
    1_000 + id % 997
}

/// A smaller unit for 32-bit words: even if every add of the run landed in
/// one window, counter 1 stays below `Narrow::MAX_COUNT` (800,000 x 6).
fn small_unit(id: u64) -> u64 {
    2 + id % 5
}

#[test]
fn racing_roll_overs_count_exactly() {
    race(
        LeapArray::<N, 2>::new(NonZeroU64::new(WINDOW).unwrap()),
        unit,
    );
}

/// The same race on 32-bit words (`Narrow`), within their limits.
#[test]
fn narrow_racing_roll_overs_count_exactly() {
    race(
        // 16-tick windows, as for `Wide`: a bucket rolls over thousands of
        // times in a run, so descheduled writers stall across far more than
        // half the 8-bit generation range.
        LeapArray::<N, 2, Narrow>::new_narrow(NonZeroU64::new(WINDOW).unwrap()),
        small_unit,
    );
}

fn race<W: Width>(a: LeapArray<N, 2, W>, unit: fn(u64) -> u64) {
    let window = a.window();
    let a = Arc::new(a);
    // Start well past 0, so that lagging times never pile up at time 0.
    let clock = Arc::new(AtomicU64::new(4 * 64 * window));
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(WRITERS as usize + 1));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (a, clock, start) = (a.clone(), clock.clone(), start.clone());
            thread::spawn(move || {
                let mut ledger: HashMap<u64, (u64, u64)> = HashMap::new();
                let mut stale = 0u64;
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ w;
                start.wait();
                for i in 0..ADDS {
                    // Writer 0 drives the clock; the others lag behind it by
                    // up to 2N windows, so their adds race roll-overs (and
                    // many are refused as Stale).
                    let now = if w == 0 {
                        clock.fetch_add(1, Ordering::Relaxed) / 4
                    } else {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (clock.load(Ordering::Relaxed) / 4)
                            .saturating_sub(rng % (2 * N as u64 * window))
                    };
                    let id = now / window;
                    let (counter, n) = if i % 2 == 0 { (0, 1) } else { (1, unit(id)) };
                    match a.add(now, counter, n) {
                        Ok(()) => {
                            let e = ledger.entry(id).or_default();
                            if counter == 0 {
                                e.0 += n;
                            } else {
                                e.1 += n;
                            }
                        }
                        Err(AddError::Stale) => stale += 1,
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                (ledger, stale)
            })
        })
        .collect();

    let reader = {
        let (a, clock, done) = (a.clone(), clock.clone(), done.clone());
        thread::spawn(move || {
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                let now = clock.load(Ordering::Relaxed) / 4;
                for w in a.windows(now) {
                    let id = w.start / window;
                    assert_eq!(w.counts[1] % unit(id), 0, "window {id} mixed: {w:?}");
                    reads += 1;
                }
            }
            reads
        })
    };

    start.wait();
    // Stops the reader even if a writer panics, so a failure cannot hang.
    let _stop_reader = StopOnDrop(done.clone());
    let mut ledger: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut stale = 0;
    for h in writers {
        let (l, s) = h.join().unwrap();
        stale += s;
        for (id, (c0, c1)) in l {
            let e = ledger.entry(id).or_default();
            e.0 += c0;
            e.1 += c1;
        }
    }
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();

    let end = clock.load(Ordering::Relaxed) / 4;
    let live = a.windows(end);
    assert!(!live.is_empty());
    let rolled = end / window;
    assert!(
        cfg!(miri) || rolled > 300,
        "only {rolled} windows: the test did not roll over much"
    );
    for w in &live {
        let id = w.start / window;
        let want = ledger.get(&id).copied().unwrap_or_default();
        assert_eq!((w.counts[0], w.counts[1]), want, "window {id}");
    }
    // Older windows that their bucket still holds (no later window reused
    // it) are exact too.
    let mut older = 0;
    for (&id, &want) in &ledger {
        if let Some(w) = a.window_at(id * window) {
            assert_eq!((w.counts[0], w.counts[1]), want, "window {id}");
            older += 1;
        }
    }
    assert!(older >= live.len());
    eprintln!(
        "windows rolled: {rolled}, live checked: {}, stale adds: {stale}, reader windows: {reads}",
        live.len()
    );
}

/// Sets the flag when dropped (on success or while unwinding).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// GUARANTEES.md, section 2: a `sum` over several windows is not one atomic
/// snapshot, but with adds only (no roll-over) it lies between the total of
/// the adds that completed before the call and the total of the adds that
/// had started when it returned. Three writers add into four live windows,
/// moving forward through them; a reader brackets every `sum` with the two
/// totals.
#[test]
fn sum_lies_between_adds_completed_before_and_started_after() {
    const WRITERS: u64 = 3;
    let adds: u64 = if cfg!(miri) { 200 } else { 100_000 };
    let a = Arc::new(LeapArray::<4>::new(NonZeroU64::new(adds).unwrap()));
    let started = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicU64::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (a, started, completed, running) = (
                a.clone(),
                started.clone(),
                completed.clone(),
                running.clone(),
            );
            thread::spawn(move || {
                for i in 0..adds {
                    let n = 1 + (i + t) % 4;
                    // Times 0 .. 3 * adds: windows 0..=2, all live at the
                    // reader's time.
                    let now = i * 3;
                    started.fetch_add(n, Ordering::SeqCst);
                    a.add(now, 0, n).unwrap();
                    completed.fetch_add(n, Ordering::SeqCst);
                }
                running.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    let reader_now = 4 * adds - 1; // window 3: windows 0..=3 are live
    let mut reads = 0u64;
    while running.load(Ordering::SeqCst) > 0 {
        let low = completed.load(Ordering::SeqCst);
        let sum = a.sum(reader_now, 0);
        let high = started.load(Ordering::SeqCst);
        assert!(low <= sum && sum <= high, "{low} <= {sum} <= {high}");
        reads += 1;
    }
    writers.into_iter().for_each(|h| h.join().unwrap());
    let total = completed.load(Ordering::SeqCst);
    assert_eq!(a.sum(reader_now, 0), total, "every add counted at the end");
    assert_eq!(total, started.load(Ordering::SeqCst));
    assert!(reads > 0);
}
