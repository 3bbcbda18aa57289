//! Progress beyond the table's lock-free bound: a middleware that yields
//! inside governor's closure (logging and metrics middleware can), a store
//! of one slot, and two threads inserting new keys on one core. Each call
//! must run governor's closure a bounded number of times
//! ([`leaparray_governor::MAX_CLOSURE_RUNS`]).
//!
//! Run: `cargo test -p leaparray-governor --test progress`

use std::cell::Cell;
use std::sync::Arc;
use std::thread;

use governor::clock::DefaultClock;
use governor::clock::QuantaInstant;
use governor::middleware::{RateLimitingMiddleware, StateSnapshot};
use governor::{Quota, RateLimiter};
use leaparray_governor::{KeyedRateLimiter, KeyedStore, MAX_CLOSURE_RUNS};
use nonzero_ext::nonzero;

thread_local! {
    /// Runs of governor's closure in this thread's current call.
    static RUNS: Cell<usize> = const { Cell::new(0) };
}

/// Runs past this end the test: today's livelock would run without end.
const GIVE_UP: usize = 200_000;

/// A middleware that yields the CPU inside governor's closure.
#[derive(Debug)]
struct Yielding;

fn ran() {
    let n = RUNS.with(|r| {
        r.set(r.get() + 1);
        r.get()
    });
    assert!(n < GIVE_UP, "governor's closure ran {n} times in one call");
    thread::yield_now();
}

impl RateLimitingMiddleware<QuantaInstant> for Yielding {
    type PositiveOutcome = ();
    type NegativeOutcome = ();
    fn allow<K>(_: &K, _: impl Into<StateSnapshot>) {
        ran();
    }
    fn disallow<K>(_: &K, _: impl Into<StateSnapshot>, _: QuantaInstant) {
        ran();
    }
}

/// Pins the calling thread to CPU 0 (of those it may use).
#[cfg(target_os = "linux")]
fn pin_to_one_core() {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; the calls read and
    // write only the set passed, of the size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, size_of_val(&set), &mut set), 0);
        let first = (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .unwrap();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(first, &mut set);
        assert_eq!(libc::sched_setaffinity(0, size_of_val(&set), &set), 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to_one_core() {}

/// Two threads pinned to one core each make `CALLS` calls on new keys of
/// `quota` through the yielding middleware into a store of one slot:
/// the most runs of governor's closure in one call, and the refusals.
/// The store's memory is sized for a burst period of 1 ns (generations of
/// 1 ns: every evicted key's arrival time kept exactly), so that a key
/// started from the memory's estimate adds only its own booking: with the
/// quota's own period every new key of this one-slot store shares one
/// block of the memory, and each admitted key, started from the end of a
/// generation, would fold into the next (`src/slot.rs`, "How far above").
fn two_threads_on_one_core(quota: Quota) -> Vec<(usize, usize)> {
    const CALLS: u64 = 2_000;
    let one_ns = Quota::with_period(std::time::Duration::from_nanos(1)).unwrap();
    let store = KeyedStore::with_capacity(1).with_quota(one_ns);
    let limiter: KeyedRateLimiter<u64> = RateLimiter::new(quota, store, DefaultClock::default());
    let limiter: Arc<KeyedRateLimiter<u64, Yielding>> =
        Arc::new(limiter.with_middleware::<Yielding>());
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let limiter = Arc::clone(&limiter);
            thread::spawn(move || {
                pin_to_one_core();
                let (mut most, mut refused) = (0, 0);
                for i in 0..CALLS {
                    RUNS.with(|r| r.set(0));
                    refused += usize::from(limiter.check_key(&((t << 32) | i)).is_err());
                    most = most.max(RUNS.with(Cell::get));
                }
                (most, refused)
            })
        })
        .collect();
    let out: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!(
        "{quota:?}: (most runs of governor's closure in one call, refusals) per thread: {out:?}"
    );
    out
}

/// The case: a quota of one a second (each new key starts from
/// the memory its one slot's evicted keys left, so most are refused: the
/// flood issue's lockout, not this test's subject). Red on the store that
/// retried inside the table without end: 7,540 runs in one call.
#[test]
fn each_call_runs_governors_closure_a_bounded_number_of_times() {
    for (most, _) in two_threads_on_one_core(Quota::per_second(nonzero!(1u32))) {
        assert!(most <= MAX_CLOSURE_RUNS, "{most} runs in one call");
    }
}

/// A quota no key reaches: a refusal is the store's fallback. The back-off
/// lets a caller preempted inside governor's closure finish, so almost no
/// call falls back (red with no back-off: every call refused).
#[test]
fn a_yielding_closure_finishes_without_falling_back() {
    for (most, refused) in two_threads_on_one_core(Quota::per_second(nonzero!(1_000_000u32))) {
        assert!(most <= MAX_CLOSURE_RUNS, "{most} runs in one call");
        assert!(
            refused <= 20,
            "{refused} of 2,000 calls fell back to a refusal"
        );
    }
}
