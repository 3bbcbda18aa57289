//! A keyed state store for [governor](https://docs.rs/governor)'s
//! [`RateLimiter`] in fixed memory: `CAP` slots (a capacity chosen at run
//! time) and a memory of evicted keys, allocated once when the store is
//! built. The table is lock-free while at most `min(16, CAP)` calls insert
//! keys at once (obstruction-free beyond: leaparray's GUARANTEES.md,
//! section 4); each call runs governor's closure at most
//! [`MAX_CLOSURE_RUNS`] times, whatever the contention ("Progress", below).
//!
//! governor's own keyed stores (`DashMapStateStore`, `HashMapStateStore`)
//! grow by one entry for every key ever seen until `retain_recent` runs; a
//! flood of distinct keys (every address of an IPv6 /64) grows them without
//! bound. [`KeyedStore`] keeps `CAP` slots of (a 56-bit key fingerprint,
//! governor's theoretical arrival time), whatever arrives. Migrating is one
//! line, `RateLimiter::keyed(quota)` (or `dashmap`) becoming
//! `RateLimiter::leaparray_with_capacity(quota, capacity)` ([`LeapArrayKeyed`],
//! imported), and governor's `DefaultKeyedRateLimiter<K, MW, S>`, where a
//! field names it, becoming [`KeyedRateLimiter<K, MW, S>`]:
//!
//! ```
//! use std::net::IpAddr;
//! use governor::{Quota, RateLimiter};
//! use leaparray_governor::{KeyedRateLimiter, LeapArrayKeyed};
//! use nonzero_ext::nonzero;
//!
//! let quota = Quota::per_second(nonzero!(10u32));
//! let limiter: KeyedRateLimiter<IpAddr> = RateLimiter::leaparray_with_capacity(quota, 65_536);
//! let ip: IpAddr = "192.0.2.1".parse().unwrap();
//! assert!(limiter.check_key(&ip).is_ok());
//! ```
//!
//! # Guarantees
//!
//! - **Exactness with room.** While every key evicted from a full probe
//!   of 16 slots had an arrival time at least the burst period the store
//!   was told (`D`: [`KeyedStore::with_quota`]; a minute if not told), and
//!   `D / 24` more, before the latest one written (the store follows the
//!   latest in steps of `D / 24`; a key evicted sooner comes back reading
//!   up to a third of `D` late: "The memory of evicted keys", below), each
//!   decision is the one governor's `DashMap` store makes,
//!   request for request, `retain_recent` included, for callers on one
//!   clock (`tests/differential.rs`). A used store given a new memory
//!   ([`KeyedStore::with_memory`]) is not: its keys come back as evicted
//!   keys do, and what its old memory held is a floor for every key.
//! - **No key past its quota.** An update swaps the whole slot from exactly
//!   the value governor's closure saw (its "update only if unchanged",
//!   leaparray's keyed slot table, `leaparray::keyed::Table`). A new key whose probe (16 slots) is full evicts the
//!   key with the earliest arrival time there, after folding that time into
//!   a fixed memory of evicted keys (`src/slot.rs`); `retain_recent` folds
//!   what it frees the same way. A key inserted later starts from the
//!   memory's estimate, never below its own folded arrival time, so each
//!   key's admissions are ones governor alone would admit
//!   (`tests/differential.rs`, the flood half: every admitted request,
//!   replayed with only its key's admissions into a fresh governor
//!   limiter, is admitted there), while governor's time is below `2^63 -
//!   1 - tau` ns ("What is not guaranteed"). A caller whose clock is
//!   behind the one that evicted or freed a key is limited as if the key
//!   had stayed.
//! - **Fingerprint collisions only refuse more.** A key's fingerprint is
//!   56 bits of its 64-bit hash, and a slot of its probe (16 slots) holds
//!   it if it holds its fingerprint: two keys with one fingerprint in one
//!   probe share one limit. A lookup meets another key's fingerprint in its
//!   probe with probability at most `16 * 2^-56` (2.2e-16), for a hasher
//!   whose output is uniform (the default, [`RandomSip13`]: std's
//!   SipHash-1-3 with random keys, which an attacker cannot aim).
//! - **The memory of evicted keys only refuses more.** It keeps arrival
//!   times in generations of a third of the quota's burst period `D`
//!   ([`KeyedStore::with_quota`]; `RateLimiter::leaparray*` tell it the
//!   quota, a store not told assumes `D` is a minute), four generations at
//!   once, a key's 3 bits per generation in one 48-bit word of one of
//!   `B` 32-byte blocks (`B = CAP`, one a slot, unless
//!   [`KeyedStore::with_memory`] sets another size). A key with no arrival time of
//!   its own starts from another's when (a) other keys' bits cover its own
//!   in a generation still ahead (a false positive: with `n` keys evicted
//!   per generation, about `(1 - e^(-3n / (48 * B)))^3` per generation),
//!   or (b) the
//!   memory's floor is ahead of the caller's `now`: the floor holds only
//!   times at or before some caller's `now` (`src/slot.rs`, "How far
//!   above"), so that takes a quota's burst
//!   period longer than the store was told, or a caller whose clock is
//!   behind another's. A new key of a caller `L` behind starts up to `L`
//!   above its `now`: up to `L` of its burst counts as spent, and past
//!   governor's `tau` (the quota's period times its burst less one: 0 for
//!   a burst of 1) its first request waits at most `L - tau`
//!   (`tests/review_stop55.rs`). Either way it is refused more (part
//!   of its burst counts as spent), never admitted more. An evicted key's
//!   own arrival time is read up to a third of `D` late (its generation's
//!   end). A word keeps its generation as 16 bits: a word last written a
//!   multiple of `2^16` generations before its plane's current one reads
//!   as current for that one generation (an over-read, at most `D + D /
//!   3` past `now`, beside the false positives above). Nothing expires in
//!   bulk: a time at or before `now` decides as no state.
//! - **Fixed memory.** `16 * CAP` bytes of slots and `32 * B` bytes of
//!   memory (48 bytes a slot by default), allocated and written by the
//!   constructors, and the store's few words; nothing allocates after
//!   them.
//!
//! # Under a flood
//!
//! A flood of new keys, each asking once, many more per burst period than
//! the store has slots: each evicts a key and is evicted in turn, and the
//! memory holds the flood's arrival times. A first-time user is refused
//! only for a false positive in a generation still ahead (above). While
//! the flood is about 10x the table per burst period, that is a few
//! percent; past it, the generations fill: at 100x and more, most
//! first-time users of a burst-1 quota are refused with the default
//! memory of 32 bytes a slot (the crate's README, "Numbers": 10x, 100x
//! and a key a microsecond, bursts 1 and 5). No store of 48 bytes a slot
//! (16 of slot and 32 of memory) reaches 95% there: to refuse every flood
//! key that comes back within its burst period while admitting a share
//! `1 - e` of new keys, a store holds at least `log2(1/e)` bits per flood
//! key live (an approximate membership filter's bound); at 100x the table
//! it has 3.8 bits a key (at best 93% of a burst-1 quota's newcomers), at
//! a key a microsecond for 16 seconds 1.6 bits (at best 66% at the end).
//! A store that expects such floods takes more memory with
//! [`KeyedStore::with_memory`]: 8 times the memory's bits a flood key at
//! 256 bytes a slot, 32 times at 1 KiB (the README's numbers give the
//! share of first-time users each admits), still a fixed amount, where
//! governor's `DashMap` store holds every key of the last burst period.
//!
//! # Progress
//!
//! A call runs governor's closure at most once per pass through the
//! table: when the swap of its decision fails, it leaves the table, backs
//! off (a spin, then `yield_now`s, growing with each attempt) and decides
//! again from a fresh read. After 32 attempts it falls back to a refusal:
//! governor's own `NotUntil`, from the closure run on arrival times above
//! the latest it saw, without the table ([`MAX_CLOSURE_RUNS`] runs in all).
//! A fallback refusal is a refusal governor's `DashMap` store might not
//! make, never an admission it would not: it needs 32 failed swaps in one
//! call, which a table within its lock-free bound (at most `min(16, CAP)`
//! calls inserting at once) with no closure that yields does not meet in
//! practice, and which a closure that yields beyond the bound (a logging
//! middleware, a table of one slot, two threads inserting new keys on one
//! core: `tests/progress.rs`) meets on some calls.
//!
//! # What is not guaranteed
//!
//! - **Limiter time past `2^63` ns.** A slot's arrival time has 63 bits
//!   (`src/slot.rs`, "A TAT out of range"): 292 years after the limiter's
//!   start (governor's time is nanoseconds since it). A request governor
//!   admits with a later arrival time is admitted and stores `2^63 - 1`
//!   ns: the key's next requests of `n` cells are refused until governor's
//!   time is within `tau - t * (n - 1)` of it (`tau`: the quota's period
//!   `t` times its burst less one), where governor's `DashMap` store,
//!   holding the true time, refuses them longer. So a quota whose arrival
//!   times pass `2^63` ns from the start (one request per `2^63` ns)
//!   admits each key's first request, as governor does; a key evicted
//!   after it is remembered at `2^63 - 1` ns, and a new key whose bits it
//!   covers (a false positive, above) is refused until then. From `2^63 -
//!   1 - tau` ns of limiter time on, the store limits nothing: the key
//!   stays at `2^63 - 1` ns, and every request governor admits there is
//!   admitted, as often as it comes (a one-cell request from then on, one
//!   of `n` cells from `t * (n - 1)` ns later).
//! - **`len` and `is_empty` scan every slot**: `O(CAP)`, racing updates
//!   (governor calls them only when asked; the decisions never do).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod hash;
mod slot;
mod sync;

pub use hash::{RandomSip13, Sip13};

/// The most runs of governor's closure in one call of the store's
/// `measure_and_replace` (crate docs, "Progress"): 32 attempts, one run
/// each, and 65 for a refusal that falls back.
///
/// ```
/// assert_eq!(leaparray_governor::MAX_CLOSURE_RUNS, 97);
/// ```
pub const MAX_CLOSURE_RUNS: usize = slot::MAX_RUNS;

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::marker::PhantomData;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::StateStore;
use governor::{Quota, RateLimiter};

/// governor's keyed `RateLimiter` on a [`KeyedStore`]: governor's
/// `DefaultKeyedRateLimiter<K, MW, S>` with this crate's store, its
/// parameters in governor's order (the key, the middleware, the hasher),
/// and the clock last (governor's `DefaultClock` unless given). Where a
/// struct field or a function names governor's limiter, this is the name
/// to put there.
///
/// ```
/// use governor::middleware::StateInformationMiddleware;
/// use governor::{Quota, RateLimiter};
/// use leaparray_governor::{KeyedRateLimiter, LeapArrayKeyed};
/// use nonzero_ext::nonzero;
///
/// struct App {
///     limiter: KeyedRateLimiter<u64, StateInformationMiddleware>,
/// }
/// let app = App {
///     limiter: RateLimiter::leaparray(Quota::per_minute(nonzero!(60u32)))
///         .with_middleware::<StateInformationMiddleware>(),
/// };
/// assert_eq!(app.limiter.check_key(&42).unwrap().remaining_burst_capacity(), 59);
/// ```
pub type KeyedRateLimiter<
    K,
    MW = NoOpMiddleware<<DefaultClock as Clock>::Instant>,
    S = RandomSip13,
    C = DefaultClock,
> = RateLimiter<K, KeyedStore<K, S>, C, MW>;

/// governor's keyed constructors, for a limiter on a [`KeyedStore`]:
/// `RateLimiter::leaparray(quota)` where governor's users write
/// `RateLimiter::keyed(quota)` or `RateLimiter::dashmap(quota)`. Like
/// those, the limiter's clock is `DefaultClock` and its middleware
/// `NoOpMiddleware`, so `.with_middleware::<M>()` chains on it.
/// (`RateLimiter::new(quota, store, clock)` leaves the middleware to be
/// inferred, for any store: governor's own `DashMapStateStore` too.)
///
/// ```
/// use governor::{middleware::StateInformationMiddleware, Quota, RateLimiter};
/// use leaparray_governor::LeapArrayKeyed;
/// use nonzero_ext::nonzero;
///
/// let limiter = RateLimiter::leaparray_with_capacity(Quota::per_second(nonzero!(5u32)), 1024)
///     .with_middleware::<StateInformationMiddleware>();
/// assert_eq!(limiter.check_key(&"alice").unwrap().remaining_burst_capacity(), 4);
/// assert_eq!(limiter.into_state_store().capacity(), 1024);
/// ```
pub trait LeapArrayKeyed: Sized {
    /// The limiter's key.
    type Key: Hash + Eq + Clone;

    /// A limiter of `quota` per key on a [`KeyedStore::new`] (its default
    /// capacity, [`KeyedStore::DEFAULT_CAPACITY`] slots).
    ///
    /// ```
    /// use governor::{Quota, RateLimiter};
    /// use leaparray_governor::LeapArrayKeyed;
    /// use nonzero_ext::nonzero;
    ///
    /// let limiter = RateLimiter::leaparray(Quota::per_second(nonzero!(1u32)));
    /// assert!(limiter.check_key(&7u32).is_ok());
    /// assert!(limiter.check_key(&7u32).is_err());
    /// ```
    fn leaparray(quota: Quota) -> Self;

    /// A limiter of `quota` per key on a [`KeyedStore::with_capacity`]
    /// of `capacity` slots, chosen at run time (a panic with the reason if
    /// it is 0 or cannot be allocated: [`KeyedStore::try_with_capacity`]
    /// returns the error instead).
    ///
    /// ```
    /// use governor::{Quota, RateLimiter};
    /// use leaparray_governor::LeapArrayKeyed;
    /// use nonzero_ext::nonzero;
    ///
    /// let slots: usize = "4096".parse().unwrap(); // from configuration
    /// let limiter = RateLimiter::leaparray_with_capacity(Quota::per_second(nonzero!(1u32)), slots);
    /// assert!(limiter.check_key(&7u32).is_ok());
    /// ```
    fn leaparray_with_capacity(quota: Quota, capacity: usize) -> Self;

    /// A limiter of `quota` per key on a
    /// [`KeyedStore::with_capacity_and_hasher`]: `RateLimiter::dashmap_with_hasher`'s
    /// counterpart, its type [`KeyedRateLimiter<K, NoOpMiddleware, S>`](KeyedRateLimiter).
    ///
    /// ```
    /// use std::hash::RandomState;
    /// use governor::{middleware::StateInformationMiddleware, Quota, RateLimiter};
    /// use leaparray_governor::LeapArrayKeyed;
    /// use nonzero_ext::nonzero;
    ///
    /// let quota = Quota::per_second(nonzero!(2u32));
    /// let limiter = RateLimiter::leaparray_with_hasher(quota, 256, RandomState::new())
    ///     .with_middleware::<StateInformationMiddleware>();
    /// assert_eq!(limiter.check_key(&1u64).unwrap().remaining_burst_capacity(), 1);
    /// ```
    fn leaparray_with_hasher<S: BuildHasher>(
        quota: Quota,
        capacity: usize,
        hasher: S,
    ) -> KeyedRateLimiter<Self::Key, NoOpMiddleware, S>;
}

impl<K: Hash + Eq + Clone> LeapArrayKeyed for KeyedRateLimiter<K> {
    type Key = K;

    fn leaparray(quota: Quota) -> Self {
        RateLimiter::new(
            quota,
            KeyedStore::new().with_quota(quota),
            DefaultClock::default(),
        )
    }

    fn leaparray_with_capacity(quota: Quota, capacity: usize) -> Self {
        RateLimiter::new(
            quota,
            KeyedStore::with_capacity(capacity).with_quota(quota),
            DefaultClock::default(),
        )
    }

    fn leaparray_with_hasher<S: BuildHasher>(
        quota: Quota,
        capacity: usize,
        hasher: S,
    ) -> KeyedRateLimiter<K, NoOpMiddleware, S> {
        RateLimiter::new(
            quota,
            KeyedStore::with_capacity_and_hasher(capacity, hasher).with_quota(quota),
            DefaultClock::default(),
        )
    }
}

/// Why a [`KeyedStore`] of the capacity asked for cannot be built.
///
/// ```
/// use leaparray_governor::{CapacityError, KeyedStore};
/// assert_eq!(KeyedStore::<u64>::try_with_capacity(0).unwrap_err(), CapacityError::Zero);
/// let e = KeyedStore::<u64>::try_with_capacity(usize::MAX / 8).unwrap_err();
/// assert_eq!(e, CapacityError::OutOfMemory { capacity: usize::MAX / 8 });
/// assert_eq!(CapacityError::Zero.to_string(), "a KeyedStore needs at least one slot");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CapacityError {
    /// No slots asked for.
    Zero,
    /// The slots and memory of `capacity` (48 bytes a slot at most: 16 of
    /// slot, up to 32 of memory cells) could not be allocated: more bytes
    /// than an allocation holds, or the allocator refused.
    OutOfMemory {
        /// The capacity asked for.
        capacity: usize,
    },
    /// A memory of evicted keys ([`KeyedStore::with_memory`]) smaller than
    /// one 32-byte block.
    MemoryTooSmall {
        /// The bytes asked for.
        bytes: usize,
    },
    /// A memory of evicted keys ([`KeyedStore::with_memory`]) of `bytes`
    /// could not be allocated.
    MemoryOutOfMemory {
        /// The bytes asked for.
        bytes: usize,
    },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityError::Zero => f.write_str("a KeyedStore needs at least one slot"),
            CapacityError::OutOfMemory { capacity } => {
                write!(f, "a KeyedStore of {capacity} slots could not be allocated")
            }
            CapacityError::MemoryTooSmall { bytes } => write!(
                f,
                "a KeyedStore's memory of evicted keys needs at least 32 bytes, not {bytes}"
            ),
            CapacityError::MemoryOutOfMemory { bytes } => write!(
                f,
                "a KeyedStore's memory of evicted keys of {bytes} bytes could not be allocated"
            ),
        }
    }
}

impl std::error::Error for CapacityError {}

/// A keyed [`StateStore`] for governor of a capacity chosen at run time,
/// each slot a key's 56-bit fingerprint (from the hash of the key by `S`)
/// and its theoretical arrival time, in one lock-free 128-bit word (crate
/// docs: guarantees). The slots and the memory of evicted keys are on the
/// heap, allocated and written once by the constructor.
///
/// `K` is never stored: keys are known by fingerprint, so two keys with
/// the same fingerprint share one limit.
///
/// ```
/// use governor::{clock::FakeRelativeClock, middleware::NoOpMiddleware, nanos::Nanos};
/// use governor::{Quota, RateLimiter};
/// use leaparray_governor::KeyedStore;
/// use nonzero_ext::nonzero;
///
/// let clock = FakeRelativeClock::default();
/// let limiter: RateLimiter<&str, _, _, NoOpMiddleware<Nanos>> = RateLimiter::new(
///     Quota::per_second(nonzero!(2u32)),
///     KeyedStore::with_capacity(1024),
///     clock.clone(),
/// );
/// assert!(limiter.check_key(&"alice").is_ok());
/// assert!(limiter.check_key(&"alice").is_ok());
/// assert!(limiter.check_key(&"alice").is_err()); // alice's burst is spent
/// assert!(limiter.check_key(&"bob").is_ok()); // bob has his own
/// assert_eq!(limiter.len(), 2);
/// ```
pub struct KeyedStore<K, S = RandomSip13> {
    table: slot::Table,
    hasher: S,
    key: PhantomData<fn(&K)>,
}

impl<K> KeyedStore<K> {
    /// The capacity of [`new`](Self::new): 65,536 slots (1 MiB of slots
    /// and 2 MiB of memory cells), room for about 32,768 keys live at once
    /// (crate docs: what is not guaranteed).
    pub const DEFAULT_CAPACITY: usize = 65_536;

    /// A store of [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) free slots,
    /// keys hashed by [`RandomSip13`] (std's SipHash-1-3, random keys per
    /// store).
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// assert_eq!(KeyedStore::<u64>::new().capacity(), 65_536);
    /// ```
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// A store of `capacity` free slots (any number from 1, chosen at run
    /// time), keys hashed by [`RandomSip13`]. Panics with the reason if
    /// `capacity` is 0 or cannot be allocated
    /// ([`try_with_capacity`](Self::try_with_capacity) returns it).
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let slots: usize = std::env::var("SLOTS").ok().and_then(|s| s.parse().ok()).unwrap_or(4096);
    /// assert_eq!(KeyedStore::<u64>::with_capacity(slots).capacity(), slots);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_capacity_and_hasher(capacity, RandomSip13::new())
    }

    /// As [`with_capacity`](Self::with_capacity), with the error in place
    /// of the panic.
    ///
    /// ```
    /// use leaparray_governor::{CapacityError, KeyedStore};
    /// assert_eq!(KeyedStore::<u64>::try_with_capacity(100).unwrap().capacity(), 100);
    /// assert_eq!(KeyedStore::<u64>::try_with_capacity(0).unwrap_err(), CapacityError::Zero);
    /// ```
    pub fn try_with_capacity(capacity: usize) -> Result<Self, CapacityError> {
        Self::try_with_capacity_and_hasher(capacity, RandomSip13::new())
    }
}

impl<K> Default for KeyedStore<K> {
    /// [`KeyedStore::new`].
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let store: KeyedStore<u64> = Default::default();
    /// assert_eq!(store.capacity(), KeyedStore::<u64>::DEFAULT_CAPACITY);
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S> KeyedStore<K, S> {
    /// A store of [`KeyedStore::DEFAULT_CAPACITY`] free slots, keys hashed
    /// by `hasher`. Its output is the fingerprint: a hasher an attacker can
    /// predict lets them aim keys at one probe (refusing the keys there) or
    /// at one key's fingerprint (sharing its limit).
    ///
    /// ```
    /// use std::hash::RandomState;
    /// use leaparray_governor::KeyedStore;
    /// let store = KeyedStore::<u64, _>::with_hasher(RandomState::new());
    /// assert_eq!(store.capacity(), 65_536);
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_capacity_and_hasher(KeyedStore::<K>::DEFAULT_CAPACITY, hasher)
    }

    /// A store of `capacity` free slots, keys hashed by `hasher` (as
    /// [`with_hasher`](Self::with_hasher)). Panics with the reason if
    /// `capacity` is 0 or cannot be allocated.
    ///
    /// ```
    /// use std::hash::RandomState;
    /// use leaparray_governor::KeyedStore;
    /// let store = KeyedStore::<u64, _>::with_capacity_and_hasher(64, RandomState::new());
    /// assert_eq!(store.capacity(), 64);
    /// ```
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        match Self::try_with_capacity_and_hasher(capacity, hasher) {
            Ok(store) => store,
            Err(e) => panic!("leaparray-governor: {e}"),
        }
    }

    /// As [`with_capacity_and_hasher`](Self::with_capacity_and_hasher),
    /// with the error in place of the panic.
    ///
    /// ```
    /// use std::hash::RandomState;
    /// use leaparray_governor::{CapacityError, KeyedStore};
    /// let e = KeyedStore::<u64, _>::try_with_capacity_and_hasher(0, RandomState::new());
    /// assert_eq!(e.unwrap_err(), CapacityError::Zero);
    /// ```
    pub fn try_with_capacity_and_hasher(capacity: usize, hasher: S) -> Result<Self, CapacityError> {
        Ok(KeyedStore {
            table: slot::Table::try_new(capacity)?,
            hasher,
            key: PhantomData,
        })
    }

    /// The store sized for `quota`: its memory of evicted keys keeps
    /// arrival times in generations of a third of the quota's burst period
    /// (`quota.burst_size_replenished_in()`), so a key evicted under a
    /// flood is remembered as long as its arrival time is ahead and about
    /// a third of that period more (crate docs, "Under a flood").
    /// `RateLimiter::leaparray*` ([`LeapArrayKeyed`]) call it; a store not
    /// told its quota assumes a burst period of a minute. Call it on a new
    /// store: what a used store remembered becomes one floor that every key
    /// starts from until its time passes.
    ///
    /// ```
    /// use governor::{clock::DefaultClock, Quota, RateLimiter};
    /// use leaparray_governor::KeyedRateLimiter;
    /// use leaparray_governor::KeyedStore;
    /// use nonzero_ext::nonzero;
    ///
    /// let quota = Quota::per_second(nonzero!(10u32));
    /// let store = KeyedStore::with_capacity(4096).with_quota(quota);
    /// let limiter: KeyedRateLimiter<u64> = RateLimiter::new(quota, store, DefaultClock::default());
    /// assert!(limiter.check_key(&1).is_ok());
    /// ```
    #[must_use]
    pub fn with_quota(mut self, quota: Quota) -> Self {
        let horizon =
            u64::try_from(quota.burst_size_replenished_in().as_nanos()).unwrap_or(u64::MAX);
        self.table.set_horizon(horizon);
        self
    }

    /// Slots in the store.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// assert_eq!(KeyedStore::<u32>::with_capacity(100).capacity(), 100);
    /// ```
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// The store with a memory of evicted keys of `bytes` (whole 32-byte
    /// blocks) in place of its 32 bytes a slot, for floods of new keys
    /// far past the table (crate docs, "Under a flood"): more blocks keep
    /// more evicted keys apart, so fewer first-time users start from a
    /// flood key's arrival time. Exactness does not depend on it. It keeps
    /// the quota told by [`with_quota`](Self::with_quota), and on a used
    /// store what the store held: every key with a slot is folded into
    /// the new memory as an eviction folds it (it comes back with its
    /// arrival time or later), and what the old memory held becomes one
    /// floor that every key starts from until its time passes (refused
    /// more, never admitted more). Panics with the reason if `bytes` is
    /// less than 32 or cannot be allocated
    /// ([`try_set_memory`](Self::try_set_memory) returns it and keeps the
    /// store as it was).
    ///
    /// ```
    /// use governor::{clock::DefaultClock, Quota, RateLimiter};
    /// use leaparray_governor::{KeyedRateLimiter, KeyedStore};
    /// use nonzero_ext::nonzero;
    ///
    /// // 65,536 slots and 1 KiB of memory a slot: a flood of a new key
    /// // every microsecond (about 900 times the table per minute).
    /// let quota = Quota::per_minute(nonzero!(5u32));
    /// let store = KeyedStore::with_capacity(65_536).with_quota(quota).with_memory(64 << 20);
    /// assert_eq!(store.memory(), 64 << 20);
    /// let limiter: KeyedRateLimiter<u64> = RateLimiter::new(quota, store, DefaultClock::default());
    /// assert!(limiter.check_key(&1).is_ok());
    /// ```
    #[must_use]
    pub fn with_memory(mut self, bytes: usize) -> Self {
        if let Err(e) = self.try_set_memory(bytes) {
            panic!("KeyedStore::with_memory: {e}");
        }
        self
    }

    /// As [`with_memory`](Self::with_memory), in place, with the error in
    /// place of the panic: `MemoryTooSmall` for less than 32 bytes,
    /// `MemoryOutOfMemory` for a memory that cannot be allocated,
    /// `OutOfMemory` if the slots cannot be allocated again. On an error
    /// the store is as it was.
    ///
    /// ```
    /// use leaparray_governor::{CapacityError, KeyedStore};
    /// let mut store = KeyedStore::<u64>::with_capacity(64);
    /// assert_eq!(store.try_set_memory(31), Err(CapacityError::MemoryTooSmall { bytes: 31 }));
    /// let e = store.try_set_memory(usize::MAX);
    /// assert_eq!(e, Err(CapacityError::MemoryOutOfMemory { bytes: usize::MAX }));
    /// assert_eq!(store.memory(), 64 * 32); // as it was
    /// store.try_set_memory(100).unwrap();
    /// assert_eq!(store.memory(), 96); // whole blocks
    /// ```
    pub fn try_set_memory(&mut self, bytes: usize) -> Result<(), CapacityError> {
        self.table = self.table.try_with_memory(bytes)?;
        Ok(())
    }

    /// Bytes of the memory of evicted keys: 32 a slot, or what
    /// [`with_memory`](Self::with_memory) set.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// assert_eq!(KeyedStore::<u32>::with_capacity(100).memory(), 3_200);
    /// ```
    pub fn memory(&self) -> usize {
        self.table.memory()
    }
}

impl<K: Hash, S: BuildHasher> KeyedStore<K, S> {
    /// The hash of `key`: the table places the key and takes its 56-bit
    /// fingerprint from it.
    #[inline(always)]
    fn hash(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Whether `key` (or a key with its fingerprint) has a slot.
    ///
    /// ```
    /// use governor::{clock::FakeRelativeClock, middleware::NoOpMiddleware, nanos::Nanos};
    /// use governor::{Quota, RateLimiter};
    /// use leaparray_governor::KeyedStore;
    /// use nonzero_ext::nonzero;
    ///
    /// let limiter: RateLimiter<u32, _, _, NoOpMiddleware<Nanos>> = RateLimiter::new(
    ///     Quota::per_second(nonzero!(1u32)),
    ///     KeyedStore::with_capacity(64),
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

impl<K, S> fmt::Debug for KeyedStore<K, S> {
    /// The capacity and the slots in use.
    ///
    /// ```
    /// use leaparray_governor::KeyedStore;
    /// let s = format!("{:?}", KeyedStore::<u8>::with_capacity(8));
    /// assert_eq!(s, "KeyedStore { capacity: 8, len: 0 }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedStore")
            .field("capacity", &self.table.capacity())
            .field("len", &self.table.len())
            .finish()
    }
}

impl<K: Hash + Eq + Clone, S: BuildHasher> StateStore for KeyedStore<K, S> {
    type Key = K;

    /// governor's update of `key`'s arrival time by `f`, with its contract:
    /// `f` may run again on each retry, and the slot changes only if it
    /// still holds what `f` saw (leaparray's `keyed::Table::update`).
    ///
    /// ```
    /// use governor::{nanos::Nanos, state::StateStore};
    /// use leaparray_governor::KeyedStore;
    ///
    /// let store = KeyedStore::<u32>::with_capacity(64);
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

impl<K: Hash + Eq + Clone, S: BuildHasher> ShrinkableKeyedStateStore<K> for KeyedStore<K, S> {
    /// Frees the slot of every key whose arrival time is at or before
    /// `drop_below` (governor's `RateLimiter::retain_recent` passes `now`
    /// less one cell's time): such a key decides as a new one. One pass
    /// over the slots.
    ///
    /// ```
    /// use std::time::Duration;
    /// use governor::{clock::FakeRelativeClock, middleware::NoOpMiddleware, nanos::Nanos};
    /// use governor::{Quota, RateLimiter};
    /// use leaparray_governor::KeyedStore;
    /// use nonzero_ext::nonzero;
    ///
    /// let clock = FakeRelativeClock::default();
    /// let limiter: RateLimiter<u32, _, _, NoOpMiddleware<Nanos>> = RateLimiter::new(
    ///     Quota::per_second(nonzero!(1u32)),
    ///     KeyedStore::with_capacity(64),
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

    /// Slots holding a key: a scan of every slot (`O(CAP)`), racing
    /// updates.
    ///
    /// ```
    /// use governor::{state::keyed::ShrinkableKeyedStateStore, state::StateStore, nanos::Nanos};
    /// use leaparray_governor::KeyedStore;
    ///
    /// let store = KeyedStore::<u32>::with_capacity(64);
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
    /// assert!(ShrinkableKeyedStateStore::is_empty(&KeyedStore::<u32>::with_capacity(64)));
    /// ```
    fn is_empty(&self) -> bool {
        self.table.len() == 0
    }
}
