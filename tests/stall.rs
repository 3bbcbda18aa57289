//! A thread stalled inside one `add` while its bucket rolls over many times.
//!
//! One thread adds in a loop; a timer signal (`setitimer` + `SIGALRM`)
//! interrupts it, and the handler, running on that same thread, rolls the
//! one-bucket array forward `K` times (one add in each of `K` new windows)
//! before the interrupted add resumes. Signals land at random points; over
//! thousands of them some land in the two places that matter:
//!
//! 1. between an add's stamp load and its cell compare-and-swap (the main
//!    loop adds in the newest window);
//! 2. between a roller's stamp load and its seal (the main loop adds in the
//!    window after the newest one, so its add rolls the bucket).
//!
//! After every add the loop checks the newest window: it must hold exactly
//! the handler's add plus the main loop's `Ok` adds to it, and an add to the
//! newest window that no signal interrupted must be `Ok`. A watchdog thread
//! fails the run if the loop stops making progress (a roller spinning
//! forever inside the handler). Each case runs for its time and on until
//! 40 bursts have landed during adds (at most 30 s); fewer than 20 fails.
//! The same two stall points, placed exactly rather than by chance, are
//! the unit tests `bucket::tests::*_stalls_below_the_limit_are_exact`.
//!
//! `K` is chosen around half the generation range (2^7 for `Narrow`, 2^15
//! for `Wide`), where a resumed thread used to read the live generation as
//! an older one, and up to the documented limit (2^GEN_BITS - 2 roll-overs).
//!
//! A harness of its own (`harness = false`): `SIGALRM` from `setitimer` goes
//! to any thread of the process that does not block it, so the test must be
//! the only thread that leaves it unblocked.

#[cfg(all(unix, not(miri)))]
fn main() {
    run::main();
}

#[cfg(not(all(unix, not(miri))))]
fn main() {
    println!("stall: needs a unix host (signals), skipped");
}

#[cfg(all(unix, not(miri)))]
mod run {
    use std::num::NonZeroU64;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    use std::time::{Duration, Instant};

    use leaparray::array::Narrow;
    use leaparray::{AddError, LeapArray};

    const ONE: NonZeroU64 = NonZeroU64::new(1).unwrap();
    /// Window length 1 tick: a time is its window id.
    static WIDE: LeapArray<1> = LeapArray::new(ONE);
    static NARROW: LeapArray<1, 1, Narrow> = LeapArray::new_narrow(ONE);

    /// Which array the handler rolls: 0 = `Wide`, 1 = `Narrow`.
    static NARROW_MODE: AtomicBool = AtomicBool::new(false);
    /// Roll-overs per signal.
    static K: AtomicU64 = AtomicU64::new(0);
    /// The newest window anyone has used (only grows).
    static NEWEST: AtomicU64 = AtomicU64::new(0);
    /// The window the handler last added 1 to.
    static HANDLER_WINDOW: AtomicU64 = AtomicU64::new(u64::MAX);
    /// Set while the main loop is inside `add`: the handler rolls only then,
    /// so that signals landing elsewhere cost nothing.
    static IN_ADD: AtomicBool = AtomicBool::new(false);
    /// Roll-over bursts the handler ran (each during an `add`).
    static BURSTS: AtomicU64 = AtomicU64::new(0);
    /// A handler add that was not `Ok` (each of its windows is the newest).
    static HANDLER_FAILED: AtomicU64 = AtomicU64::new(0);
    /// Bumped by the main loop; the watchdog fails the run if it stops.
    static PROGRESS: AtomicU64 = AtomicU64::new(0);
    static PHASE: AtomicU64 = AtomicU64::new(0);

    fn add(t: u64) -> Result<(), AddError> {
        if NARROW_MODE.load(SeqCst) {
            NARROW.add(t, 0, 1)
        } else {
            WIDE.add(t, 0, 1)
        }
    }

    fn count(t: u64) -> u64 {
        let w = if NARROW_MODE.load(SeqCst) {
            NARROW.window_at(t)
        } else {
            WIDE.window_at(t)
        };
        w.map_or(0, |w| w.counts[0])
    }

    /// Rolls the bucket `K` times, into windows past anything the
    /// interrupted add may be using (`NEWEST + 1` is the main loop's
    /// rolling add). Only atomics: async-signal-safe.
    extern "C" fn on_alarm(_: libc::c_int) {
        if !IN_ADD.load(SeqCst) {
            return;
        }
        let base = NEWEST.load(SeqCst) + 1;
        let k = K.load(SeqCst);
        for j in 1..=k {
            if add(base + j).is_err() {
                HANDLER_FAILED.fetch_add(1, SeqCst);
            }
        }
        HANDLER_WINDOW.store(base + k, SeqCst);
        NEWEST.store(base + k, SeqCst);
        BURSTS.fetch_add(1, SeqCst);
        // One burst per add: a second signal before the add resumes would
        // make the stall 2K roll-overs.
        IN_ADD.store(false, SeqCst);
    }

    fn set_timer(every: Duration) {
        let tv = libc::timeval {
            tv_sec: every.as_secs() as libc::time_t,
            tv_usec: every.subsec_micros() as libc::suseconds_t,
        };
        let it = libc::itimerval {
            it_interval: tv,
            it_value: tv,
        };
        // SAFETY: a valid itimerval; ITIMER_REAL delivers SIGALRM.
        let rc = unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) };
        assert_eq!(rc, 0, "setitimer failed");
    }

    fn block_alarm(block: bool) {
        // SAFETY: plain signal-mask calls on a local set.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGALRM);
            let how = if block {
                libc::SIG_BLOCK
            } else {
                libc::SIG_UNBLOCK
            };
            assert_eq!(libc::pthread_sigmask(how, &set, std::ptr::null_mut()), 0);
        }
    }

    struct Outcome {
        bursts: u64,
        interrupted_stale: u64,
        checks: u64,
    }

    /// Bursts a case must see: it runs for at least its time and until this
    /// many bursts landed during adds (or `PATIENCE` passed).
    const ENOUGH_BURSTS: u64 = 40;
    /// A case that saw fewer bursts than this proves too little: fail.
    const MIN_BURSTS: u64 = 20;
    const PATIENCE: Duration = Duration::from_secs(30);

    /// Runs the loop for `for_time`, and on until `ENOUGH_BURSTS` bursts
    /// landed during adds (at most `PATIENCE`), with `k` roll-overs per
    /// signal, a signal every `every`. Panics on the first wrong count or
    /// wrong `Stale`.
    fn stall(k: u64, every: Duration, for_time: Duration, label: &str) -> Outcome {
        K.store(k, SeqCst);
        BURSTS.store(0, SeqCst);
        HANDLER_FAILED.store(0, SeqCst);
        // The main loop's `Ok` adds per window, for the windows it checks.
        let mut ok_in: (u64, u64) = (u64::MAX, 0);
        let (mut interrupted_stale, mut checks) = (0u64, 0u64);
        let started = Instant::now();
        set_timer(every);
        let mut i = 0u64;
        while started.elapsed() < for_time
            || (BURSTS.load(SeqCst) < ENOUGH_BURSTS && started.elapsed() < PATIENCE)
        {
            i += 1;
            PROGRESS.fetch_add(1, SeqCst);
            // Even steps add in the newest window (stall point 1), odd steps
            // in the one after it, rolling the bucket (stall point 2).
            let newest = NEWEST.load(SeqCst);
            let w = if i.is_multiple_of(2) {
                newest
            } else {
                newest + 1
            };
            let bursts = BURSTS.load(SeqCst);
            IN_ADD.store(true, SeqCst);
            let r = add(w);
            IN_ADD.store(false, SeqCst);
            let interrupted = BURSTS.load(SeqCst) != bursts;
            match r {
                Ok(()) => {
                    NEWEST.fetch_max(w, SeqCst);
                    if ok_in.0 == w {
                        ok_in.1 += 1;
                    } else {
                        ok_in = (w, 1);
                    }
                }
                Err(AddError::Stale) if interrupted => interrupted_stale += 1,
                Err(e) => panic!(
                    "{label}: an add in the newest window, not interrupted, returned {e:?} \
                     (step {i}, window {w})"
                ),
            }
            // The newest window holds exactly what was added to it. No
            // signal ran between the two loads of NEWEST if they agree (a
            // burst always moves it forward).
            let n1 = NEWEST.load(SeqCst);
            let by_handler = u64::from(HANDLER_WINDOW.load(SeqCst) == n1);
            let c = count(n1);
            if NEWEST.load(SeqCst) == n1 {
                let expected = by_handler + if ok_in.0 == n1 { ok_in.1 } else { 0 };
                assert_eq!(
                    c,
                    expected,
                    "{label}: window {n1} holds {c}, but {expected} adds to it returned Ok \
                     (step {i}, after {} bursts; handler {by_handler}, main {ok_in:?}, \
                     this add {w} {r:?}, interrupted {interrupted})",
                    BURSTS.load(SeqCst)
                );
                checks += 1;
            }
            assert_eq!(
                HANDLER_FAILED.load(SeqCst),
                0,
                "{label}: an add in the newest window, inside the handler, was refused"
            );
        }
        set_timer(Duration::ZERO);
        Outcome {
            bursts: BURSTS.load(SeqCst),
            interrupted_stale,
            checks,
        }
    }

    pub fn main() {
        // The watchdog must never take SIGALRM: block it before spawning
        // (the mask is inherited), then unblock it on this thread only.
        block_alarm(true);
        std::thread::spawn(|| {
            let mut last = PROGRESS.load(SeqCst);
            let mut still = 0;
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let now = PROGRESS.load(SeqCst);
                if now == last {
                    still += 1;
                    if still == 10 {
                        eprintln!(
                            "stall: no progress for 5 s in phase {}: a roller or an add is \
                             spinning inside the signal handler",
                            PHASE.load(SeqCst)
                        );
                        std::process::exit(1);
                    }
                } else {
                    still = 0;
                }
                last = now;
            }
        });
        // SAFETY: installs an async-signal-safe handler (atomics only).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut()), 0);
        }
        block_alarm(false);

        // (narrow, K, signal period in µs, run time in ms)
        let cases: &[(bool, u64, u64, u64)] = &[
            (true, 127, 200, 1_500),
            (true, 128, 200, 1_500),
            (true, 129, 200, 1_500),
            (true, 200, 300, 1_500),
            (true, 253, 300, 1_500),
            (false, 32_767, 20_000, 2_000),
            (false, 32_768, 20_000, 2_000),
            (false, 32_769, 20_000, 2_000),
            (false, 50_000, 25_000, 2_000),
        ];
        let only: Option<u64> = std::env::var("LEAPARRAY_STALL_ONLY")
            .ok()
            .and_then(|v| v.parse().ok());
        let mut failed_min = false;
        for (phase, &(narrow, k, every_us, ms)) in cases.iter().enumerate() {
            if only.is_some_and(|o| o != k) {
                continue;
            }
            PHASE.store(phase as u64, SeqCst);
            NARROW_MODE.store(narrow, SeqCst);
            // Start each case in a fresh window, past the last one used.
            let start = NEWEST.load(SeqCst) + 2;
            add(start).expect("a fresh window");
            NEWEST.store(start, SeqCst);
            HANDLER_WINDOW.store(u64::MAX, SeqCst);
            let label = format!("{} K={k}", if narrow { "Narrow" } else { "Wide" });
            let o = stall(
                k,
                Duration::from_micros(every_us),
                Duration::from_millis(ms),
                &label,
            );
            println!(
                "stall {label}: {} roll-over bursts during adds, {} interrupted adds refused \
                 Stale, {} exact checks of the newest window",
                o.bursts, o.interrupted_stale, o.checks
            );
            // Enough bursts landed mid-add that both stall points were hit
            // (each is a sizeable share of an add's instructions). The
            // deterministic versions of both stall points are the unit tests
            // `bucket::tests::*_stalls_below_the_limit_are_exact`.
            if o.bursts < MIN_BURSTS {
                failed_min = true;
                eprintln!(
                    "stall {label}: only {} bursts: the run proves little",
                    o.bursts
                );
            }
        }
        assert!(!failed_min, "too few roll-over bursts landed during adds");
        println!("test result: ok. {} passed; 0 failed", cases.len());
    }
}
