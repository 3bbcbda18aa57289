//! A flood of 10,000,000 distinct keys through governor's `RateLimiter`,
//! once with this crate's `KeyedStore` and once with governor's
//! `DashMapStateStore`, in one process: resident memory (VmRSS, from
//! `/proc/self/status`, Linux) before and after each.
//!
//! `cargo run --release -p leaparray-governor --example flood`
//!
//! The flood: one new key per request, the clock (governor's
//! `FakeRelativeClock`) advancing 1 microsecond per request (a million new
//! keys a second), a quota of 10 per second per key (each key's arrival
//! time 100 ms ahead: about 100,000 keys live at any time). The store is a
//! `KeyedStore<u64, 262_144>` (4 MiB of slots and 8 MiB of memory cells
//! for evicted keys, all written by `new`). It prints how many requests
//! each store admitted. The run fails (exit code 1)
//! if the `KeyedStore` flood grew resident memory by more than 1 MiB past
//! the store's own allocation.

use std::num::NonZeroU32;
use std::process::ExitCode;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use leaparray_governor::KeyedStore;

const KEYS: u64 = 10_000_000;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Floods a limiter on `store`; returns (admitted, resident KiB after).
fn flood<S: StateStore<Key = u64>>(store: S) -> (u64, u64, S) {
    let clock = FakeRelativeClock::default();
    let quota = Quota::per_second(NonZeroU32::new(10).unwrap());
    let lim: RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>> =
        RateLimiter::new(quota, store, clock.clone());
    let mut admitted = 0;
    for key in 0..KEYS {
        clock.advance(Duration::from_micros(1));
        admitted += u64::from(
            lim.check_key(&key.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .is_ok(),
        );
    }
    let rss = rss_kib();
    (admitted, rss, lim.into_state_store())
}

fn main() -> ExitCode {
    let start = rss_kib();
    let store = KeyedStore::<u64>::with_capacity(262_144);
    let with_table = rss_kib();
    let (ours_admitted, ours_rss, store) = flood(store);
    drop(store);
    let before_dashmap = rss_kib();
    let (theirs_admitted, theirs_rss, map) = flood(DashMapStateStore::<u64>::default());
    let entries = map.len();
    drop(map);
    println!("keys: {KEYS} distinct, 1 us apart, 10 per second per key");
    println!(
        "KeyedStore<u64, 262_144>: RSS {start} KiB at start, {with_table} KiB with the store, \
         {ours_rss} KiB after the flood (+{} KiB); {ours_admitted} admitted",
        ours_rss.saturating_sub(with_table)
    );
    println!(
        "DashMapStateStore<u64>:   RSS {before_dashmap} KiB before, {theirs_rss} KiB after the flood \
         (+{} KiB, {entries} entries); {theirs_admitted} admitted",
        theirs_rss.saturating_sub(before_dashmap)
    );
    if ours_rss > with_table + 1024 {
        eprintln!("KeyedStore grew by more than 1 MiB");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
