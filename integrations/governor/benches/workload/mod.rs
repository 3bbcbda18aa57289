//! The workload `benches/store.rs` measures and `examples/check_cost.rs`
//! counts: the key sets, their random order and the quota, in one place.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::Quota;

/// splitmix64: the key sequence.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` distinct keys and a random sequence of 2^22 draws from them.
pub fn keys(n: u64, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut s = seed;
    let set: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    let seq = (0..1 << 22)
        .map(|_| set[(splitmix(&mut s) % n) as usize])
        .collect();
    (set, seq)
}

/// A key set: how many keys, the seed of their values and order, and how
/// many decisions pass between clock steps of 1 microsecond.
#[derive(Clone, Copy)]
pub struct Size {
    pub keys: u64,
    pub seed: u64,
    pub every: usize,
}

/// 1,000 keys (cache-resident), the clock stepped every 256 decisions.
pub const SIZE_1K: Size = Size {
    keys: 1_000,
    seed: 1,
    every: 256,
};

/// 1,000,000 keys, the clock stepped every 4,096 decisions.
pub const SIZE_1M: Size = Size {
    keys: 1_000_000,
    seed: 2,
    every: 4096,
};

/// The store's slots for the 1,000 keys: load 0.49, as [`CAP_1M`] gives
/// the 1,000,000 (twice the keys, rounded to a power of two).
pub const CAP_1K: usize = 2048;

/// The store's slots for the 1,000,000 keys: load 0.48.
pub const CAP_1M: usize = 1 << 21;

/// A burst of 1,000, one cell per microsecond.
pub fn quota() -> Quota {
    Quota::with_period(Duration::from_micros(1))
        .unwrap()
        .allow_burst(NonZeroU32::new(1_000).unwrap())
}

/// The flood: a new key every decision, the clock advanced 1 microsecond
/// every decision (a million new keys a second), a quota of 10 per second
/// per key (each key's arrival time 100 ms ahead: about 100,000 keys live
/// at once), in a store of [`CAP_FLOOD`] slots told the quota.
pub const CAP_FLOOD: usize = 1 << 20;

/// Decisions between `retain_recent` and `shrink_to_fit` on governor's
/// stores in the flood: one second of the flood's clock, so they hold at
/// most a second of keys (about 1,000,000).
pub const FLOOD_RETAIN_EVERY: u64 = 1_000_000;

/// The flood's quota: 10 per second per key.
pub fn flood_quota() -> Quota {
    Quota::per_second(NonZeroU32::new(10).unwrap())
}

/// The flood's `i`-th key: distinct for every `i` (an odd multiplier).
pub fn flood_key(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
