//! First-time users under a flood of new keys (issue 47, item 3), small
//! and fast: 1,024 slots, per-minute quotas of burst 1 and 5, a flood of
//! 10x the table per minute for four minutes. First-time legitimate users
//! (each asking its whole burst at once) are admitted at least 95% of what
//! governor's `DashMapStateStore` admits them, and no returning flood key
//! is admitted past its quota (`tests/common/lockout.rs`). At 100x the
//! table per minute, the same holds with a memory of evicted keys of 1
//! KiB a slot (`KeyedStore::with_memory`). The full-size floods, one key a
//! microsecond included, are `examples/lockout.rs`.

#[path = "common/lockout.rs"]
mod lockout;

use governor::state::keyed::DashMapStateStore;
use leaparray_governor::KeyedStore;
use lockout::{run, Scenario};

const CAP: usize = 1024;

fn check(burst: u32) {
    check_flood(10, burst, None);
}

/// A flood of `times` the table per minute for four minutes, the store
/// with `memory` bytes of memory of evicted keys (`None`: its own).
fn check_flood(times: u64, burst: u32, memory: Option<usize>) {
    let s = Scenario::times_table(times, CAP, 4 * times * CAP as u64, burst);
    let store = KeyedStore::<u64>::with_capacity(CAP).with_quota(s.quota());
    let ours = run(
        &s,
        match memory {
            Some(bytes) => store.with_memory(bytes),
            None => store,
        },
    );
    let theirs = run(&s, DashMapStateStore::<u64>::default());
    assert_eq!(theirs.legit_admitted, theirs.legit_asked);
    assert_eq!(ours.over, 0, "{ours:?}");
    assert!(ours.returns_admitted > 0 || burst == 1, "{ours:?}");
    assert!(
        ours.legit_admitted * 100 >= theirs.legit_admitted * 95,
        "burst {burst}: first-time users admitted {} of {} (DashMap: {}): {ours:?}",
        ours.legit_admitted,
        ours.legit_asked,
        theirs.legit_admitted,
    );
}

#[test]
fn first_time_users_get_in_under_a_10x_flood_burst_1() {
    check(1);
}

#[test]
fn first_time_users_get_in_under_a_10x_flood_burst_5() {
    check(5);
}

#[test]
fn first_time_users_get_in_under_a_100x_flood_with_a_larger_memory_burst_1() {
    check_flood(100, 1, Some(1024 * CAP));
}

#[test]
fn first_time_users_get_in_under_a_100x_flood_with_a_larger_memory_burst_5() {
    check_flood(100, 5, Some(1024 * CAP));
}
