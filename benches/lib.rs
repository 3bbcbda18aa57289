//! The benchmarks of `leaparray` live in `benches/` of this crate and the
//! scaling tool in `bin/scaling.rs`; see `README.md` here for how to run
//! them and the figures of the last run. This library holds what more than
//! one of them uses: the key generator and key sets of the keyed
//! benchmarks, governor's keyed limiter as they set it up, a helper
//! that builds a large `KeyedGate` off the stack, what the binaries of
//! interleaved rounds share (`rounds`, `median`, `load_average`), and the
//! one-word reference gate of `bin/gate_vs.rs` (`reference`).

pub mod reference;

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use leaparray::{Decision, KeyedGate};

/// splitmix64's output function: a bijection, so distinct inputs give
/// distinct keys.
pub fn splitmix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `--rounds R` of the command line, or `default`.
pub fn rounds(default: usize) -> usize {
    std::env::args()
        .skip_while(|a| a != "--rounds")
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// The median of `v` (the upper one of an even count).
///
/// # Panics
///
/// If `v` is empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The host's load averages (1, 5 and 15 minutes, `/proc/loadavg`), or
/// `unknown`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// governor's keyed limiter on its default keyed store (a `DashMap`
/// hashing with std's SipHash), with the fake clock.
pub type KeyedGovernor = RateLimiter<
    u64,
    DashMapStateStore<u64>,
    FakeRelativeClock,
    NoOpMiddleware<<FakeRelativeClock as Clock>::Instant>,
>;

/// governor's keyed limiter with the quota matching a gate's `limit` per
/// interval of 1,000 ticks: a burst of `limit` and one permit per
/// microsecond (one gate tick); and its clock, which the caller advances.
///
/// # Panics
///
/// If `limit` is 0 or above `u32::MAX`.
pub fn keyed_governor(limit: u64) -> (KeyedGovernor, FakeRelativeClock) {
    let burst = u32::try_from(limit)
        .ok()
        .and_then(NonZeroU32::new)
        .expect("governor's burst is a non-zero u32");
    let quota = Quota::with_period(Duration::from_micros(1))
        .expect("a non-zero period")
        .allow_burst(burst);
    let clock = FakeRelativeClock::default();
    (RateLimiter::dashmap_with_clock(quota, clock.clone()), clock)
}

/// A key set and a random sequence of its keys, `2^log2` long.
pub struct Keys {
    /// The distinct keys, each resident in the gate they were made for.
    pub set: Vec<u64>,
    /// Keys of `set` in a pseudo-random order (xorshift64* draws).
    pub seq: Vec<u64>,
}

impl Keys {
    /// `n` distinct keys, each inserted into `gate` at `now` 0: the first
    /// `n` of a pseudo-random sequence that the gate has room for (a key
    /// whose probe of 16 slots is full is refused: reported on stderr, and
    /// replaced by the next one).
    pub fn new<const CAP: usize>(gate: &KeyedGate<2, CAP>, n: usize, log2: u32, seed: u64) -> Keys {
        let mut set = Vec::with_capacity(n);
        let mut tried = 0u64;
        while set.len() < n {
            let k = splitmix(tried ^ (seed << 40));
            tried += 1;
            if gate.try_acquire(k, 0, 1) == Decision::Pass {
                set.push(k);
            }
        }
        let s = gate.occupancy(0);
        eprintln!(
            "KeyedGate<2, {CAP}>: {} of the first {tried} keys found no room (load {:.3} after); \
             the {n} keys are the others",
            s.overflowed,
            s.resident as f64 / CAP as f64
        );
        // xorshift64*: the draws, mapped onto 0..n by multiply-shift.
        let mut x = splitmix(seed) | 1;
        let seq = (0..1usize << log2)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
                set[((r * n as u64) >> 32) as usize]
            })
            .collect();
        Keys { set, seq }
    }

    /// `seq.len() - 1`: the mask of an index into `seq`.
    pub fn mask(&self) -> usize {
        self.seq.len() - 1
    }
}

/// Books one permit for every key of `keys` at `now` and checks that each
/// is admitted (all are resident).
///
/// # Panics
///
/// If a key is refused, found no room or lost its slot.
pub fn warm_gate<const CAP: usize>(gate: &KeyedGate<2, CAP>, keys: &Keys, now: u64) {
    let before = gate.occupancy(now);
    for &k in &keys.set {
        assert_eq!(gate.try_acquire(k, now, 1), Decision::Pass);
    }
    let s = gate.occupancy(now);
    assert_eq!(s.overflowed, before.overflowed, "a key found no room");
    assert_eq!(s.recycled, before.recycled, "a key lost its slot");
    assert_eq!(s.resident, keys.set.len(), "{s:?}");
}

/// Books one permit for every key of `keys` in `lim`.
///
/// # Panics
///
/// If a key is refused or the limiter does not hold exactly the keys.
pub fn warm_governor(lim: &KeyedGovernor, keys: &Keys) {
    for k in &keys.set {
        assert!(lim.check_key(k).is_ok());
    }
    assert_eq!(lim.len(), keys.set.len());
}
