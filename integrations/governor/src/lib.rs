//! A keyed state store for [governor](https://docs.rs/governor)'s
//! [`RateLimiter`] in fixed memory: `CAP` slots and a memory of evicted keys, lock-free
//! while at most `min(16, CAP)` calls insert keys at once (obstruction-free beyond: leaparray's
//! GUARANTEES.md, section 4),
//! allocated once by [`KeyedStore::new`].
//!
//! governor's own keyed stores (`DashMapStateStore`, `HashMapStateStore`)
//! grow by one entry for every key ever seen until `retain_recent` runs; a
//! flood of distinct keys (every address of an IPv6 /64) grows them without
//! bound. [`KeyedStore`] keeps `CAP` slots of (a 56-bit key fingerprint,
//! governor's theoretical arrival time), whatever arrives. Migrating is one
//! line (and the limiter's type, [`KeyedRateLimiter`], where nothing else
//! names it):
//!
//! ```
//! use std::net::IpAddr;
//! use governor::{clock::DefaultClock, Quota, RateLimiter};
//! use leaparray_governor::{KeyedRateLimiter, KeyedStore};
//! use nonzero_ext::nonzero;
//!
//! let quota = Quota::per_second(nonzero!(10u32));
//! let limiter: KeyedRateLimiter<IpAddr, 65_536> =
//!     RateLimiter::new(quota, KeyedStore::<IpAddr, 65_536>::new(), DefaultClock::default());
//! let ip: IpAddr = "192.0.2.1".parse().unwrap();
//! assert!(limiter.check_key(&ip).is_ok());
//! ```
//!
//! # Guarantees
//!
//! - **Exactness with room.** While no probe of 16 slots has been full of
//!   keys with live arrival times (so no key was evicted before its time
//!   passed), each decision is the one governor's `DashMap` store makes,
//!   request for request, `retain_recent` included, for callers on one
//!   clock (`tests/differential.rs`).
//! - **No key past its quota.** An update swaps the whole slot from exactly
//!   the value governor's closure saw (its "update only if unchanged",
//!   leaparray's keyed slot table, `leaparray::keyed::Table`). A new key whose probe (16 slots) is full evicts the
//!   key with the earliest arrival time there, after folding that time into
//!   the key's 3 cells of a fixed memory (each cell keeps the maximum folded
//!   into it); `retain_recent` folds what it frees the same way. A key
//!   inserted later starts from the least of its cells, never below its own
//!   folded arrival time, so each key's admissions are ones governor alone
//!   would admit (`tests/differential.rs`, the flood half: every admitted
//!   request, replayed with only its key's admissions into a fresh governor
//!   limiter, is admitted there). A caller whose clock is behind the one
//!   that evicted or freed a key is limited as if the key had stayed.
//! - **Fingerprint collisions only refuse more.** A key's fingerprint is
//!   56 bits of its 64-bit hash, and a slot of its probe (16 slots) holds
//!   it if it holds its fingerprint: two keys with one fingerprint in one
//!   probe share one limit. A lookup meets another key's fingerprint in its
//!   probe with probability at most `16 * 2^-56` (2.2e-16), for a hasher
//!   whose output is uniform (the default, [`RandomSip13`]: std's
//!   SipHash-1-3 with random keys, which an attacker cannot aim).
//! - **The memory of evicted keys only refuses more.** A key that has no
//!   arrival time of its own starts from another's when each of its 3
//!   cells was raised by other keys' folds to a time not yet passed: it is
//!   refused more (part of its burst counts as spent), never admitted
//!   more. With `L` keys evicted or freed whose arrival times are still
//!   ahead, and `W = 4 * CAP / 3` cells per row, this happens to a given
//!   key with probability at most `(L / W)^3`, modelling each row's pick as
//!   an independent uniform hash (8.3e-4 for `L = CAP / 8`; 4.3e-7 for
//!   `L = CAP / 100`). Cells never expire: a folded time at or before `now`
//!   decides as no state.
//! - **Fixed memory.** `16 * CAP` bytes of slots and `8 * 3 * W <= 32 * CAP`
//!   bytes of memory cells (at most three times the slots' bytes in all),
//!   allocated and written by `new`, and the store's few words; nothing
//!   allocates after it.
//!
//! What is not: a quota whose burst takes more than 146 years to refill
//! cannot be stored (a slot's arrival time has 63 bits: `src/slot.rs`, "A
//! TAT out of range"); such an update is admitted unrecorded.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod hash;
mod slot;
mod sync;

pub use hash::{RandomSip13, Sip13};

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::marker::PhantomData;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::StateStore;
use governor::RateLimiter;

/// governor's keyed `RateLimiter` on a [`KeyedStore`] of `CAP` slots, with
/// no middleware and the clock `C` (governor's `DefaultClock` unless
/// given): the type to name where nothing else fixes the limiter's
/// middleware (`RateLimiter::new` is generic over it).
///
/// ```
/// use governor::{clock::DefaultClock, Quota, RateLimiter};
/// use leaparray_governor::{KeyedRateLimiter, KeyedStore};
/// use nonzero_ext::nonzero;
///
/// let limiter: KeyedRateLimiter<u64, 1024> =
///     RateLimiter::new(Quota::per_minute(nonzero!(60u32)), KeyedStore::new(), DefaultClock::default());
/// assert!(limiter.check_key(&42).is_ok());
/// ```
pub type KeyedRateLimiter<K, const CAP: usize, C = DefaultClock> =
    RateLimiter<K, KeyedStore<K, CAP>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// A keyed [`StateStore`] for governor of `CAP` slots, each a key's 56-bit
/// fingerprint (from the hash of the key by `S`) and its theoretical arrival
/// time, in one lock-free 128-bit word (crate docs: guarantees).
///
/// `K` is never stored: keys are known by fingerprint, so two keys with
/// the same fingerprint share one limit.
///
/// ```
/// use governor::{clock::FakeRelativeClock, Quota, RateLimiter};
/// use leaparray_governor::{KeyedRateLimiter, KeyedStore};
/// use nonzero_ext::nonzero;
///
/// let clock = FakeRelativeClock::default();
/// let limiter: KeyedRateLimiter<&str, 1024, FakeRelativeClock> = RateLimiter::new(
///     Quota::per_second(nonzero!(2u32)),
///     KeyedStore::<&str, 1024>::new(),
///     clock.clone(),
/// );
/// assert!(limiter.check_key(&"alice").is_ok());
/// assert!(limiter.check_key(&"alice").is_ok());
/// assert!(limiter.check_key(&"alice").is_err()); // alice's burst is spent
/// assert!(limiter.check_key(&"bob").is_ok()); // bob has his own
/// assert_eq!(limiter.len(), 2);
/// ```
pub struct KeyedStore<K, const CAP: usize, S = RandomSip13> {
    table: slot::Table,
    hasher: S,
    key: PhantomData<fn(&K)>,
}

impl<K, const CAP: usize> KeyedStore<K, CAP> {
    /// A store of `CAP` free slots, keys hashed by [`RandomSip13`]
    /// (std's SipHash-1-3, random keys per store). `CAP == 0` does not
    /// compile.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let store = KeyedStore::<u64, 4096>::new();
    /// assert_eq!(store.capacity(), 4096);
    /// ```
    pub fn new() -> Self {
        Self::with_hasher(RandomSip13::new())
    }
}

impl<K, const CAP: usize> Default for KeyedStore<K, CAP> {
    /// [`KeyedStore::new`].
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let store: KeyedStore<u64, 64> = Default::default();
    /// assert_eq!(store.capacity(), 64);
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<K, const CAP: usize, S> KeyedStore<K, CAP, S> {
    /// A store of `CAP` free slots, keys hashed by `hasher`. Its output is
    /// the fingerprint: a hasher an attacker can predict lets them aim keys
    /// at one probe (refusing the keys there) or at one key's fingerprint
    /// (sharing its limit).
    ///
    /// ```
    /// use std::hash::RandomState;
    /// use leaparray_governor::KeyedStore;
    /// let store = KeyedStore::<u64, 64, _>::with_hasher(RandomState::new());
    /// assert_eq!(store.capacity(), 64);
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        const {
            assert!(
                CAP > 0,
                "leaparray-governor: KeyedStore needs CAP >= 1 slots"
            )
        };
        KeyedStore {
            table: slot::Table::new(CAP),
            hasher,
            key: PhantomData,
        }
    }

    /// Slots in the store: `CAP`.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// assert_eq!(KeyedStore::<u32, 100>::new().capacity(), 100);
    /// ```
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }
}

impl<K: Hash, const CAP: usize, S: BuildHasher> KeyedStore<K, CAP, S> {
    /// The hash of `key`: the table places the key and takes its 56-bit
    /// fingerprint from it.
    #[inline(always)]
    fn hash(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Whether `key` (or a key with its fingerprint) has a slot.
    ///
    /// ```
    /// use governor::{clock::FakeRelativeClock, Quota, RateLimiter};
    /// use leaparray_governor::{KeyedRateLimiter, KeyedStore};
    /// use nonzero_ext::nonzero;
    ///
    /// let limiter: KeyedRateLimiter<u32, 64, FakeRelativeClock> = RateLimiter::new(
    ///     Quota::per_second(nonzero!(1u32)),
    ///     KeyedStore::<u32, 64>::new(),
    ///     FakeRelativeClock::default(),
    /// );
    /// limiter.check_key(&7).unwrap();
    /// let store = limiter.into_state_store();
    /// assert!(store.contains_key(&7));
    /// assert!(!store.contains_key(&8));
    /// ```
    pub fn contains_key(&self, key: &K) -> bool {
        self.table.get(self.hash(key)).is_some()
    }
}

impl<K, const CAP: usize, S> fmt::Debug for KeyedStore<K, CAP, S> {
    /// The capacity and the slots in use.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let s = format!("{:?}", KeyedStore::<u8, 8>::new());
    /// assert_eq!(s, "KeyedStore { capacity: 8, len: 0 }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedStore")
            .field("capacity", &self.table.capacity())
            .field("len", &self.table.len())
            .finish()
    }
}

impl<K: Hash + Eq + Clone, const CAP: usize, S: BuildHasher> StateStore for KeyedStore<K, CAP, S> {
    type Key = K;

    /// governor's update of `key`'s arrival time by `f`, with its contract:
    /// `f` may run again on each retry, and the slot changes only if it
    /// still holds what `f` saw (leaparray's `keyed::Table::update`).
    ///
    /// ```
    /// use governor::{nanos::Nanos, state::StateStore};
    /// use leaparray_governor::KeyedStore;
    ///
    /// let store = KeyedStore::<u32, 64>::new();
    /// let first: Result<Option<Nanos>, ()> =
    ///     store.measure_and_replace(&1, |tat| Ok((tat, Nanos::from(10))));
    /// assert_eq!(first, Ok(None));
    /// let second: Result<Option<Nanos>, ()> =
    ///     store.measure_and_replace(&1, |tat| Ok((tat, Nanos::from(20))));
    /// assert_eq!(second, Ok(Some(Nanos::from(10))));
    /// ```
    #[inline]
    fn measure_and_replace<T, F, E>(&self, key: &Self::Key, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        self.table.update(self.hash(key), |tat| {
            f(tat.map(Nanos::from)).map(|(t, next)| (t, next.as_u64()))
        })
    }
}

impl<K: Hash + Eq + Clone, const CAP: usize, S: BuildHasher> ShrinkableKeyedStateStore<K>
    for KeyedStore<K, CAP, S>
{
    /// Frees the slot of every key whose arrival time is at or before
    /// `drop_below` (governor's `RateLimiter::retain_recent` passes `now`
    /// less one cell's time): such a key decides as a new one. One pass
    /// over the `CAP` slots.
    ///
    /// ```
    /// use std::time::Duration;
    /// use governor::{clock::FakeRelativeClock, Quota, RateLimiter};
    /// use leaparray_governor::{KeyedRateLimiter, KeyedStore};
    /// use nonzero_ext::nonzero;
    ///
    /// let clock = FakeRelativeClock::default();
    /// let limiter: KeyedRateLimiter<u32, 64, FakeRelativeClock> = RateLimiter::new(
    ///     Quota::per_second(nonzero!(1u32)),
    ///     KeyedStore::<u32, 64>::new(),
    ///     clock.clone(),
    /// );
    /// limiter.check_key(&1).unwrap();
    /// clock.advance(Duration::from_secs(3));
    /// limiter.retain_recent();
    /// assert!(limiter.is_empty());
    /// ```
    fn retain_recent(&self, drop_below: Nanos) {
        self.table.retain(drop_below.as_u64());
    }

    /// Slots holding a key: a count over the `CAP` slots, racing updates.
    ///
    /// ```
    /// use governor::{state::keyed::ShrinkableKeyedStateStore, state::StateStore, nanos::Nanos};
    /// use leaparray_governor::KeyedStore;
    ///
    /// let store = KeyedStore::<u32, 64>::new();
    /// let _ = store.measure_and_replace(&1, |_| Ok::<_, ()>(((), Nanos::from(5))));
    /// assert_eq!(ShrinkableKeyedStateStore::len(&store), 1);
    /// ```
    fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no slot holds a key (as [`len`](Self::len)).
    ///
    /// ```
    /// use governor::state::keyed::ShrinkableKeyedStateStore;
    /// use leaparray_governor::KeyedStore;
    /// assert!(ShrinkableKeyedStateStore::is_empty(&KeyedStore::<u32, 64>::new()));
    /// ```
    fn is_empty(&self) -> bool {
        self.table.len() == 0
    }
}
