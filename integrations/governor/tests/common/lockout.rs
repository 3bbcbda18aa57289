//! The lockout flood (issue 47, item 3): one new key per step of fake
//! time, each asking once; every `legit_every` steps a first-time
//! legitimate user asking its whole burst (`burst` calls of `check_key`
//! at one instant); every `return_every`-th flood key asking again half a
//! period later, its admissions replayed alone into a governor limiter on
//! its own `DashMapStateStore` (an admission the replay refuses is a key
//! over its quota). Run on any store: the same requests, the same times.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};

/// A flood and its legitimate users.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Flood keys (one step each).
    pub keys: u64,
    /// Fake time between flood keys.
    pub gap: Duration,
    /// The quota: `burst` per minute.
    pub burst: u32,
    /// A legitimate newcomer every this many steps.
    pub legit_every: u64,
    /// Every this many flood keys comes back half a period later.
    pub return_every: u64,
}

impl Scenario {
    /// A flood of `x` times `cap` keys per period (a minute), `keys` keys.
    pub fn times_table(x: u64, cap: usize, keys: u64, burst: u32) -> Scenario {
        let per_period = x * cap as u64;
        Scenario {
            keys,
            gap: Duration::from_nanos(60_000_000_000 / per_period),
            burst,
            legit_every: 97,
            return_every: 61,
        }
    }

    /// Its quota.
    pub fn quota(&self) -> Quota {
        Quota::per_minute(NonZeroU32::new(self.burst).unwrap())
    }
}

/// What a run of a [`Scenario`] gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Requests of legitimate newcomers.
    pub legit_asked: u64,
    /// Of those, admitted.
    pub legit_admitted: u64,
    /// Admissions of returning flood keys that their replay alone refuses.
    pub over: u64,
    /// Admissions of returning flood keys.
    pub returns_admitted: u64,
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

type Lim<S> = RateLimiter<u64, S, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// Runs `s` on `store`.
pub fn run<S: StateStore<Key = u64>>(s: &Scenario, store: S) -> Outcome {
    let clock = FakeRelativeClock::default();
    let lim: Lim<S> = RateLimiter::new(s.quota(), store, clock.clone());
    let replay: Lim<DashMapStateStore<u64>> =
        RateLimiter::new(s.quota(), DashMapStateStore::default(), clock.clone());
    // Steps in half a period.
    let half = (30_000_000_000 / s.gap.as_nanos().max(1)) as u64;
    let flood = |i: u64| mix(i.wrapping_mul(2) + 1);
    let mut out = Outcome::default();
    for i in 0..s.keys {
        clock.advance(s.gap);
        let k = flood(i);
        let ok = lim.check_key(&k).is_ok();
        if ok && i % s.return_every == 0 {
            // The replay sees every admission of a returning key.
            replay
                .check_key(&k)
                .expect("a first request is admitted alone");
        }
        if let Some(j) = i.checked_sub(half).filter(|j| j % s.return_every == 0) {
            let k = flood(j);
            if lim.check_key(&k).is_ok() {
                out.returns_admitted += 1;
                if replay.check_key(&k).is_err() {
                    out.over += 1;
                }
            }
        }
        if i % s.legit_every == 0 {
            let k = mix(i.wrapping_mul(2).wrapping_add(0x5555_5555_5555_5556));
            for _ in 0..s.burst {
                out.legit_asked += 1;
                out.legit_admitted += u64::from(lim.check_key(&k).is_ok());
            }
        }
    }
    out
}
