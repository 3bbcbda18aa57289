//! governor's `tests/memory_leaks.rs` `memleak_keyed`, ported (`PORTED.md`):
//! 500,000 decisions on 1,000 keys grow resident memory by less than
//! 10 MiB, for governor's `DashMapStateStore`, its `HashMapStateStore` and
//! `KeyedStore`. Resident memory is the whole process's, so this file has
//! one test, which runs the stores one after another: no other test of
//! the suite allocates while it measures.

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::{DashMapStateStore, HashMapStateStore};
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use leaparray_governor::KeyedStore;
use nonzero_ext::nonzero;

/// Resident memory, from `/proc/self/status` (governor's `memory_leaks.rs`
/// reads `getrusage`'s peak through `unsafe` libc calls).
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

fn memleak_keyed<S: StateStore<Key = usize> + Default>(name: &str) {
    let bucket: RateLimiter<
        usize,
        S,
        DefaultClock,
        NoOpMiddleware<<DefaultClock as Clock>::Instant>,
    > = RateLimiter::new(
        Quota::per_second(nonzero!(50u32)),
        S::default(),
        DefaultClock::default(),
    );
    let before = resident_kib();
    for i in 0..500_000 {
        drop(bucket.check_key(&(i % 1000)));
    }
    let after = resident_kib();
    assert!(
        after <= before + 10 * 1024,
        "{name}: {before} KiB -> {after} KiB"
    );
}

#[test]
fn memleak_keyed_every_store() {
    memleak_keyed::<DashMapStateStore<usize>>("dashmap");
    memleak_keyed::<HashMapStateStore<usize>>("hashmap");
    memleak_keyed::<KeyedStore<usize>>("keyed_store");
}
