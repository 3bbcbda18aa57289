//! [`KeyedGate`]: the keyed table every thread and interrupt handler
//! shares (`&self`), one 128-bit compare-and-swap per decision. Its slots
//! follow the slot protocol (`table/mod.rs`) with the gate policy (`slot.rs`);
//! this file is its public surface.

use core::fmt;
use core::num::NonZeroU64;

#[cfg(feature = "alloc")]
use alloc::boxed::Box;

use crossbeam_utils::CachePadded;

use super::hash::mix;
use super::memory::{Memory, Shape, Words, WORDS_PER_SLOT};
use super::slot::{
    decide, gate_word, layout_of, max_limit_of, remaining_from, retry_after_from, table_value,
    Booking, GatePolicy, Shared, DEFAULT_SEED,
};
use super::table::{Found, Place, Policy, Slot, Snapshot, Step, Table};
#[cfg(feature = "alloc")]
use super::HEAP_TOO_LARGE;
use super::{Headroom, KeyedError, Occupancy, Overflow, SHARED_TOO_LARGE};
use crate::gate::decision::Decision;
use crate::gate::packed::{self, Outcome};
use crate::sync::{const_fn_unless_loom, AtomicU64, Ordering::Relaxed};

/// An empty [`KeyedCore`] over the slots `$slots` (all free) and the
/// memory words `$words` (all zero), written where it is used: a macro,
/// not a function, so that a table built by value is not copied through
/// the arguments of a call (a debug build copies each one).
macro_rules! keyed_core {
    ($layout:expr, $shape:expr, $slots:expr, $words:expr $(,)?) => {
        KeyedCore {
            table: Table {
                slots: $slots,
                policy: GatePolicy {
                    layout: $layout,
                    seed: DEFAULT_SEED,
                    overflow: Overflow::Evict,
                    shape: $shape,
                    shared: CachePadded::new(Shared {
                        high_water: crate::sync::atomic_u64(0),
                        recycled: crate::sync::atomic_u64(0),
                        overflowed: crate::sync::atomic_u64(0),
                        evicted: crate::sync::atomic_u64(0),
                        remembered: crate::sync::atomic_u64(0),
                    }),
                    memory: Memory {
                        ids: crate::sync::array_of!(
                            super::memory::MAX_PLANES,
                            crate::sync::atomic_u64(0)
                        ),
                        words: $words,
                    },
                },
                tokens: crate::sync::atomic_u64(0),
            },
        }
    };
}

/// A [`Gate`](crate::Gate) per key, for up to `CAP` keys at a time, in
/// `48 * CAP` bytes fixed at compile time: `N` windows per interval, keys
/// are `u64` (hash other keys with `KeyHasher` or your own keyed hash).
/// See the [module docs](crate::keyed) for where keys live, what happens when the
/// table is full, and the exactness guarantee.
///
/// Windows and times as for a `Gate`.
///
/// # The per-key limit ceiling
///
/// A slot's 64-bit word holds the key's counts for its `N` windows in 31
/// bits, `b = 31 / N` bits (rounded down) per window, so the largest
/// per-key limit is **`2^(31/N) - 1`**, fixed by the `N` you choose
/// ([`max_limit`](Self::max_limit)). A larger limit is a compile error in
/// a `static`, a panic in [`new`](Self::new) at run time, and
/// [`KeyedError::LimitTooLarge`] from [`try_new`](Self::try_new). The same
/// ceiling holds for a [`LocalKeyedGate`](super::LocalKeyedGate).
///
/// | `N` (windows) | bits per window | largest limit |
/// |---|---|---|
/// | 1 | 31 | 2,147,483,647 |
/// | 2 | 15 | 32,767 |
/// | 3 | 10 | 1,023 |
/// | 4 | 7 | 127 |
/// | 5 | 6 | 63 |
/// | 6 | 5 | 31 |
/// | 7 | 4 | 15 |
/// | 8 | 3 | 7 |
/// | 9 | 3 | 7 |
/// | 10 | 3 | 7 |
/// | 11 to 15 | 2 | 3 |
/// | 16 to 31 | 1 | 1 |
///
/// A finer window for the same interval takes a larger `N` and lowers the
/// ceiling: a limit above it needs fewer windows (or a [`Gate`](crate::Gate)
/// per key, which has no such word). This test reads the table above and
/// checks every row against `try_new` for both table types:
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyedError, LocalKeyedGate};
/// use leaparray::KeyedGate;
/// fn fits<const N: usize>(limit: u64) -> Result<(), KeyedError> {
///     let w = NonZeroU64::new(500).unwrap();
///     let local = LocalKeyedGate::<N, 1>::try_new(w, limit).map(|_| ());
///     assert_eq!(KeyedGate::<N, 1>::try_new(w, limit).map(|_| ()), local);
///     local
/// }
/// fn ceiling_is(n: usize, max: u64) {
///     macro_rules! each {
///         ($($k:literal)*) => { match n {
///             $($k => {
///                 assert_eq!(fits::<$k>(max), Ok(()), "N = {n}: {max} fits");
///                 assert_eq!(
///                     fits::<$k>(max + 1),
///                     Err(KeyedError::LimitTooLarge { max }),
///                     "N = {n}: {} does not",
///                     max + 1
///                 );
///             })*
///             _ => panic!("N = {n} is out of range"),
///         } };
///     }
///     each!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
/// }
/// # let src = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/keyed/shared.rs"));
/// # let mut rows = 0;
/// # let mut covered = Vec::new();
/// # for line in src.lines().map(str::trim).filter(|l| l.starts_with("/// | ") && l.ends_with(" |")) {
/// #     let cells: Vec<&str> = line.trim_start_matches("/// |").trim_end_matches('|').split('|').map(str::trim).collect();
/// #     let (Some(ns), Some(max)) = (cells.first(), cells.get(2)) else { continue };
/// #     let Ok(max) = max.replace(',', "").parse::<u64>() else { continue };
/// #     let (lo, hi) = match ns.split_once(" to ") {
/// #         Some((lo, hi)) => (lo.parse::<usize>().unwrap(), hi.parse::<usize>().unwrap()),
/// #         None => (ns.parse().unwrap(), ns.parse().unwrap()),
/// #     };
/// #     assert_eq!(cells[1].parse::<u32>().unwrap(), 31 / lo as u32, "bits for N = {lo}");
/// #     for n in lo..=hi {
/// #         ceiling_is(n, max);
/// #         covered.push(n);
/// #     }
/// #     rows += 1;
/// # }
/// # assert_eq!(rows, 12, "the table's rows were read");
/// # assert_eq!(covered, (1..=31).collect::<Vec<_>>(), "every N from 1 to 31, once");
/// // For example, the rows for N = 2 and N = 10:
/// ceiling_is(2, 32_767);
/// ceiling_is(10, 7);
/// ```
///
/// Memory: `CAP * 16` bytes of slots, `CAP * 32` bytes of the memory of
/// evicted keys ([module docs](crate::keyed), "Overflow") and at most
/// 1,024 bytes (the memory's plane ids, the table-wide counters on cache
/// lines of their own). Built by value: keep a large table in a `static`,
/// or on the heap ([`boxed`](Self::boxed), or a [`HeapKeyedGate`] of any
/// capacity at run time, with the `alloc` feature); a `let` puts it on the
/// stack.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::KeyedGate;
/// use leaparray::Decision;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
/// assert_eq!(T.try_acquire(7, 0, 3), Decision::Pass);
/// assert_eq!(T.try_acquire(7, 999, 1), Decision::Block);
/// assert_eq!(T.try_acquire(7, 1_000, 3), Decision::Pass); // window 0 slid out
/// assert_eq!(T.remaining(7, 1_000), 0);
/// assert_eq!(T.remaining(8, 1_000), 3);
/// ```
pub struct KeyedGate<const N: usize, const CAP: usize> {
    inner: KeyedCore<N, [Slot; CAP], [[AtomicU64; CAP]; WORDS_PER_SLOT]>,
}

/// What both shared tables are: the slots `S` and the gate policy over the
/// memory words `W`, the slot protocol (`table/mod.rs`) over gate words
/// (`slot.rs`). [`KeyedGate`] keeps both in itself, [`HeapKeyedGate`] on
/// the heap; every decision is this type's.
pub(super) struct KeyedCore<const N: usize, S, W> {
    pub(super) table: Table<GatePolicy<N, W>, S>,
}

impl<const N: usize, const CAP: usize> fmt::Debug for KeyedGate<N, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedGate")
            .field("windows", &N)
            .field("capacity", &CAP)
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("overflow", &self.overflow())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const CAP: usize> defmt::Format for KeyedGate<N, CAP> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "KeyedGate {{ windows: {=usize}, capacity: {=usize}, window: {=u64}, limit: {=u64}, overflow: {} }}",
            N,
            CAP,
            self.window(),
            self.limit(),
            self.overflow()
        );
    }
}

impl<const N: usize, const CAP: usize> KeyedGate<N, CAP> {
    const_fn_unless_loom! {
        /// A table of `CAP` keys, each admitted at most `limit` permits per
        /// interval of `N` windows of `window` ticks; [`Overflow::Evict`]
        /// when a key finds no room.
        ///
        /// `1 <= N <= 31` (a slot's word has 31 bits for `N` windows'
        /// counts) and `CAP >= 1`, checked at compile time.
        ///
        /// # Panics
        ///
        /// If `limit` does not fit a slot's word (above
        /// [`max_limit`](Self::max_limit): the type docs' table), with the
        /// reason, e.g. "KeyedGate::new: the limit does not fit a key slot's
        /// word; for N = 2 the largest is 32,767". In a `static` or `const`
        /// that panic is a compile error; [`try_new`](Self::try_new)
        /// returns the error instead.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::KeyedGate;
        /// static T: KeyedGate<2, 8> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 100);
        /// assert_eq!((T.limit(), T.window()), (100, 500));
        /// ```
        ///
        /// A limit that does not fit, in a `static`, does not compile:
        ///
        /// ```compile_fail,E0080
        /// # use core::num::NonZeroU64;
        /// use leaparray::KeyedGate;
        /// static T: KeyedGate<2, 8> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 32_768);
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64, limit: u64) -> Self {
            const {
                assert!(
                    N > 0 && N <= 31 && CAP > 0,
                    "KeyedGate<N, CAP> needs 1 <= N <= 31 and CAP >= 1"
                );
                assert!(
                    crate::sync::PORTABLE_U128_INTERRUPT_SAFE,
                    "leaparray: on this target a KeyedGate slot (portable-atomic's AtomicU128) \
                     is a global spin lock, and a handler that uses the table while the code it \
                     interrupted holds the lock deadlocks. On a single-core chip enable \
                     portable-atomic's `unsafe-assume-single-core` (or `critical-section` where \
                     there is no CAS); if no interrupt or signal handler ever uses the table, \
                     enable leaparray's `portable-atomic-fallback-not-interrupt-safe` feature."
                );
            };
            let layout = match layout_of::<N>(window, limit) {
                Ok(layout) => layout,
                Err(_) => panic!("{}", SHARED_TOO_LARGE[N - 1]),
            };
            KeyedGate {
                inner: keyed_core!(
                    layout,
                    Shape::of(N, CAP, limit),
                    crate::sync::array_of!(CAP, Slot::new()),
                    crate::sync::array_of!(
                        WORDS_PER_SLOT,
                        crate::sync::array_of!(CAP, crate::sync::atomic_u64(0))
                    ),
                ),
            }
        }
    }

    /// [`new`](Self::new), or the reason the parameters do not fit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(KeyedGate::<2, 8>::try_new(w, 32_767).is_ok());
    /// assert!(KeyedGate::<2, 8>::try_new(w, 32_768).is_err());
    /// ```
    pub fn try_new(window: NonZeroU64, limit: u64) -> Result<Self, KeyedError> {
        match layout_of::<N>(window, limit) {
            Ok(_) => Ok(Self::new(window, limit)),
            Err(e) => Err(e),
        }
    }

    /// The largest limit a `KeyedGate<N, _>` takes: `2^(31/N) - 1` (the
    /// type docs' table).
    ///
    /// ```
    /// use leaparray::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 1>::max_limit(), 32_767);
    /// assert_eq!(KeyedGate::<10, 1>::max_limit(), 7);
    /// ```
    #[must_use]
    pub const fn max_limit() -> u64 {
        max_limit_of::<N>()
    }

    const_fn_unless_loom! {
        /// The same table (it must be empty: the seed decides where keys
        /// live) with keys mixed with `seed`. Keys an attacker chooses should
        /// be hashed with a secret key first (`KeyHasher` behind `std`):
        /// the mix is not a keyed hash, and the default seed is public.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::KeyedGate;
        /// static T: KeyedGate<2, 64> =
        ///     KeyedGate::new(NonZeroU64::new(500).unwrap(), 10).with_seed(0x5eed);
        /// assert_eq!(T.try_acquire(1, 0, 1), leaparray::Decision::Pass);
        /// ```
        #[must_use]
        pub fn with_seed(self, seed: u64) -> Self {
            let mut t = self;
            t.inner.table.policy_mut().seed = seed;
            t
        }
    }

    const_fn_unless_loom! {
        /// The same table with `policy` for keys that find no room.
        /// Keys it evicted before keep their estimates: a changed policy
        /// never lets an evicted key start fresh.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::keyed::Overflow;
        /// use leaparray::KeyedGate;
        /// let t = KeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10)
        ///     .with_overflow(Overflow::Admit);
        /// assert_eq!(t.overflow(), Overflow::Admit);
        /// ```
        #[must_use]
        pub fn with_overflow(self, policy: Overflow) -> Self {
            let mut t = self;
            t.inner.table.policy_mut().overflow = policy;
            t
        }
    }

    /// The per-key limit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).limit(), 5);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.inner.limit()
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).window(), 9);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.inner.window()
    }

    /// The overflow policy.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::Overflow;
    /// use leaparray::KeyedGate;
    /// let t = KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5);
    /// assert_eq!(t.overflow(), Overflow::Evict);
    /// ```
    #[must_use]
    pub const fn overflow(&self) -> Overflow {
        self.inner.overflow()
    }

    /// Slots in the table: the most keys it holds at once.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).capacity(), 4);
    /// ```
    #[must_use]
    pub const fn capacity(&self) -> usize {
        CAP
    }

    /// Admits `n` permits for `key` at `now` if every interval of `N`
    /// windows that contains the booking window then holds at most `limit`
    /// of that key's permits, as a [`Gate`](crate::Gate) of its own would;
    /// inserts the key if it has no slot. `n == 0` always passes and books
    /// nothing; `n > limit` never passes and takes no slot. A key with no
    /// room in its probe gets the [`Overflow`] policy.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// use leaparray::Decision;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(T.try_acquire(1, 0, 2), Decision::Pass);
    /// assert_eq!(T.try_acquire(1, 0, 1), Decision::Block);
    /// assert_eq!(T.try_acquire(2, 0, 2), Decision::Pass); // its own limit
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision {
        self.inner.try_acquire(key, now, n)
    }

    /// [`try_acquire`](Self::try_acquire), and what `key` has left: the
    /// decision, and the [`Headroom`] that [`remaining`](Self::remaining) and
    /// [`retry_after`](Self::retry_after) (for `limit` permits) answer at
    /// `now` just after it if nothing else arrives in between. After a
    /// booking both are read from the word the booking stored, with no
    /// second look at the table: the key's headroom as of its booking (other
    /// threads' later bookings are not in it, as they would not be in a
    /// look made just then). A late caller's booking goes into the key's
    /// newest window, and its `reset` counts from there. Otherwise they
    /// are a second look.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::Headroom;
    /// use leaparray::KeyedGate;
    /// use leaparray::Decision::{Block, Pass};
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
    /// let h = |remaining, reset| Headroom { remaining, reset: Some(reset) };
    /// assert_eq!(T.try_acquire_headroom(1, 0, 2), (Pass, h(1, 1_000)));
    /// assert_eq!(T.try_acquire_headroom(1, 600, 2), (Block, h(1, 400)));
    /// assert_eq!(T.try_acquire_headroom(1, 1_000, 2), (Pass, h(1, 1_000))); // window 0 slid out
    /// assert_eq!(T.try_acquire_headroom(1, 900, 1), (Pass, h(0, 1_100))); // late: into window 2
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire_headroom(&self, key: u64, now: u64, n: u64) -> (Decision, Headroom) {
        self.inner.try_acquire_headroom(key, now, n)
    }

    /// [`try_acquire`](Self::try_acquire) for a burst of requests (`(key,
    /// n)` pairs) at one `now`, each decided as if alone, in order: the
    /// decision for `requests[i]` goes to `decisions[i]`. Returns how many
    /// were decided (the shorter of the two slices).
    ///
    /// Faster per decision than one call each when the table is larger than
    /// the caches: it reads the home slots of up to 16 keys before deciding
    /// any of them, so their cache misses overlap instead of following one
    /// another (a packet path's receive burst).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// use leaparray::Decision::{Block, Pass};
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 2);
    /// let mut out = [Block; 4];
    /// assert_eq!(T.try_acquire_burst(0, &[(1, 1), (2, 2), (1, 1), (1, 1)], &mut out), 4);
    /// assert_eq!(out, [Pass, Pass, Pass, Block]);
    /// ```
    #[must_use = "the decisions are in `decisions`; a Pass has booked its permits"]
    pub fn try_acquire_burst(
        &self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
    ) -> usize {
        self.inner.try_acquire_burst(now, requests, decisions)
    }

    /// Permits `key` could still take at `now`: `limit` minus the fullest
    /// interval a booking would join (`limit` for a key with no slot; 0 if
    /// it has no room and the policy refuses). Books nothing. Like
    /// [`retry_after`](Self::retry_after), it assumes nothing else arrives:
    /// a claim of another key in flight counts as room.
    ///
    /// Under [`Overflow::Evict`], for a key with no slot and no room (its
    /// insertion evicts), the answer is read before that eviction folds
    /// its victim into the memory; in a small table the victim's cells may
    /// be the key's, so the key may start from more: `remaining` is then
    /// at least what it can take (an upper bound).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// assert_eq!(T.remaining(1, 0), 10);
    /// let _ = T.try_acquire(1, 0, 4);
    /// assert_eq!(T.remaining(1, 600), 6); // window 0 still counts at 600
    /// ```
    #[must_use]
    pub fn remaining(&self, key: u64, now: u64) -> u64 {
        self.inner.remaining(key, now)
    }

    /// Exact ticks from `now` until `n` permits for `key` would be
    /// admitted if nothing else arrived: `Some(0)` if now; `None` if never
    /// (`n > limit`). A key with no
    /// room waits until the first slot of its probe becomes recyclable.
    ///
    /// Under [`Overflow::Evict`], for a key with no slot and no room (its
    /// insertion evicts), the answer is read before that eviction folds
    /// its victim into the memory; in a small table the victim's cells may
    /// be the key's, so the key may start from more: `retry_after` is then
    /// a lower bound (`Some(0)` and a refusal can follow each other).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = T.try_acquire(1, 100, 10);
    /// assert_eq!(T.retry_after(1, 700, 1), Some(300)); // at 1,000 window 0 slides out
    /// assert_eq!(T.retry_after(2, 700, 1), Some(0));
    /// assert_eq!(T.retry_after(1, 700, 11), None);
    /// ```
    #[must_use]
    pub fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        self.inner.retry_after(key, now, n)
    }

    /// How the slots are occupied, what a dashboard shows: keys resident and recyclable at `now` (a
    /// scan of every slot: `O(CAP)`), slots recycled and overflow decisions
    /// since the table was built.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = T.try_acquire(1, 0, 1);
    /// let _ = T.try_acquire(2, 0, 1);
    /// let s = T.occupancy(0);
    /// assert_eq!((s.resident, s.recyclable, s.recycled, s.overflowed), (2, 0, 0, 0));
    /// assert_eq!(T.occupancy(2_000).recyclable, 2); // idle for two intervals
    /// ```
    #[must_use]
    pub fn occupancy(&self, now: u64) -> Occupancy {
        self.inner.occupancy(now)
    }
}

impl<const N: usize, const CAP: usize> KeyedGate<N, CAP> {
    /// A table of `CAP` keys built on the heap, slot by slot: the same
    /// table as [`new`](Self::new) makes, as a [`HeapKeyedGate`], which
    /// never passes through a stack (a `KeyedGate` of 2^20 slots is 48 MiB
    /// by value). `CAP >= 1` and `1 <= N <= 31`, checked at compile time.
    ///
    /// # Panics
    ///
    /// As [`new`](Self::new) for a limit that does not fit, and if the
    /// allocation fails; [`try_boxed`](Self::try_boxed) returns either as
    /// an error.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::{Decision, KeyedGate};
    /// # if cfg!(miri) { return; } // 48 MiB: hours under Miri (tests/heap.rs runs small tables there)
    /// // 2^20 keys from a thread with a 64 KiB stack.
    /// let t = std::thread::Builder::new()
    ///     .stack_size(64 << 10)
    ///     .spawn(|| KeyedGate::<2, { 1 << 20 }>::boxed(NonZeroU64::new(500).unwrap(), 10))
    ///     .unwrap()
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(t.capacity(), 1 << 20);
    /// assert_eq!(t.try_acquire(7, 0, 10), Decision::Pass);
    /// assert_eq!(t.try_acquire(7, 1, 1), Decision::Block);
    /// ```
    ///
    /// A capacity of 0 does not compile:
    ///
    /// ```compile_fail,E0080
    /// # use core::num::NonZeroU64;
    /// let t = leaparray::KeyedGate::<2, 0>::boxed(NonZeroU64::new(500).unwrap(), 10);
    /// ```
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn boxed(window: NonZeroU64, limit: u64) -> HeapKeyedGate<N> {
        match Self::try_boxed(window, limit) {
            Ok(t) => t,
            Err(KeyedError::LimitTooLarge { .. }) => panic!("{}", SHARED_TOO_LARGE[N - 1]),
            Err(e) => panic!("KeyedGate::boxed: {e}"),
        }
    }

    /// [`boxed`](Self::boxed), or why it cannot be built: the limit does
    /// not fit, or the allocation failed.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::KeyedError;
    /// use leaparray::KeyedGate;
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(KeyedGate::<2, 1024>::try_boxed(w, 32_767).is_ok());
    /// let e = KeyedGate::<2, 1024>::try_boxed(w, 32_768).unwrap_err();
    /// assert_eq!(e, KeyedError::LimitTooLarge { max: 32_767 });
    /// ```
    #[cfg(feature = "alloc")]
    pub fn try_boxed(window: NonZeroU64, limit: u64) -> Result<HeapKeyedGate<N>, KeyedError> {
        const { assert!(CAP > 0, "KeyedGate<N, CAP>::boxed needs CAP >= 1") };
        HeapKeyedGate::try_new(CAP, window, limit)
    }
}

/// A [`KeyedGate`] whose slots and memory are on the heap, built slot by
/// slot (no value of it passes through a stack, in any build profile), its
/// capacity chosen at run time: from configuration, or too large for a
/// stack. It decides exactly as a `KeyedGate<N, CAP>` of the same capacity,
/// seed and policy (the same code); it is `Send` and `Sync`, shared as a
/// `KeyedGate` is (`&self` everywhere: an `Arc`, or a `&'static` from
/// `Box::leak`). Any capacity of at least 1 (a power of two is not
/// needed). Behind the `alloc` feature.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::HeapKeyedGate;
/// use leaparray::Decision;
/// let slots = 10_000; // e.g. from a configuration file
/// let t = HeapKeyedGate::<2>::new(slots, NonZeroU64::new(500).unwrap(), 3);
/// assert_eq!(t.capacity(), 10_000);
/// assert_eq!(t.try_acquire(7, 0, 3), Decision::Pass);
/// assert_eq!(t.try_acquire(7, 999, 1), Decision::Block);
/// assert_eq!(t.try_acquire(7, 1_000, 3), Decision::Pass); // window 0 slid out
/// ```
#[cfg(feature = "alloc")]
pub struct HeapKeyedGate<const N: usize> {
    inner: KeyedCore<N, Box<[Slot]>, Box<[AtomicU64]>>,
}

#[cfg(feature = "alloc")]
impl<const N: usize> fmt::Debug for HeapKeyedGate<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapKeyedGate")
            .field("windows", &N)
            .field("capacity", &self.capacity())
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("overflow", &self.overflow())
            .finish_non_exhaustive()
    }
}

#[cfg(all(feature = "alloc", feature = "defmt"))]
impl<const N: usize> defmt::Format for HeapKeyedGate<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "HeapKeyedGate {{ windows: {=usize}, capacity: {=usize}, window: {=u64}, limit: {=u64}, overflow: {} }}",
            N,
            self.capacity(),
            self.window(),
            self.limit(),
            self.overflow()
        );
    }
}

#[cfg(feature = "alloc")]
impl<const N: usize> HeapKeyedGate<N> {
    /// A table of `capacity` keys on the heap, each admitted at most
    /// `limit` permits per interval of `N` windows of `window` ticks;
    /// [`Overflow::Evict`] when a key finds no room. `1 <= N <= 31`,
    /// checked at compile time.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0, if `limit` does not fit a slot's word (above
    /// [`max_limit`](Self::max_limit)), or if the allocation fails, with
    /// the reason; [`try_new`](Self::try_new) returns it instead.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// let t = HeapKeyedGate::<2>::new(1 << 16, NonZeroU64::new(500).unwrap(), 100);
    /// assert_eq!((t.capacity(), t.limit(), t.window()), (65_536, 100, 500));
    /// ```
    #[must_use]
    pub fn new(capacity: usize, window: NonZeroU64, limit: u64) -> Self {
        match Self::try_new(capacity, window, limit) {
            Ok(t) => t,
            Err(KeyedError::LimitTooLarge { .. }) => panic!("{}", HEAP_TOO_LARGE[N - 1]),
            Err(e) => panic!("HeapKeyedGate::new: {e}"),
        }
    }

    /// [`new`](Self::new), or why it cannot be built: no capacity, a limit
    /// that does not fit, or an allocation that failed.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapKeyedGate, KeyedError};
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(HeapKeyedGate::<2>::try_new(100, w, 32_767).is_ok());
    /// assert_eq!(HeapKeyedGate::<2>::try_new(0, w, 10).unwrap_err(), KeyedError::ZeroCapacity);
    /// assert_eq!(
    ///     HeapKeyedGate::<2>::try_new(100, w, 32_768).unwrap_err(),
    ///     KeyedError::LimitTooLarge { max: 32_767 }
    /// );
    /// assert_eq!(
    ///     HeapKeyedGate::<2>::try_new(usize::MAX / 4, w, 10).unwrap_err(),
    ///     KeyedError::OutOfMemory { capacity: usize::MAX / 4 }
    /// );
    /// ```
    pub fn try_new(capacity: usize, window: NonZeroU64, limit: u64) -> Result<Self, KeyedError> {
        const {
            assert!(N > 0 && N <= 31, "HeapKeyedGate<N> needs 1 <= N <= 31");
            assert!(
                crate::sync::PORTABLE_U128_INTERRUPT_SAFE,
                "leaparray: on this target a KeyedGate slot (portable-atomic's AtomicU128) \
                 is a global spin lock, and a handler that uses the table while the code it \
                 interrupted holds the lock deadlocks. On a single-core chip enable \
                 portable-atomic's `unsafe-assume-single-core` (or `critical-section` where \
                 there is no CAS); if no interrupt or signal handler ever uses the table, \
                 enable leaparray's `portable-atomic-fallback-not-interrupt-safe` feature."
            );
        };
        if capacity == 0 {
            return Err(KeyedError::ZeroCapacity);
        }
        let layout = layout_of::<N>(window, limit)?;
        let words = capacity
            .checked_mul(WORDS_PER_SLOT)
            .ok_or(KeyedError::OutOfMemory { capacity })?;
        Ok(HeapKeyedGate {
            inner: keyed_core!(
                layout,
                Shape::of(N, capacity, limit),
                super::boxed_slice(capacity, capacity, Slot::new)?,
                super::boxed_slice(words, capacity, || crate::sync::atomic_u64(0))?,
            ),
        })
    }

    /// The largest limit a `HeapKeyedGate<N>` takes, as a
    /// [`KeyedGate`]'s ([`KeyedGate::max_limit`]).
    ///
    /// ```
    /// assert_eq!(leaparray::keyed::HeapKeyedGate::<2>::max_limit(), 32_767);
    /// ```
    #[must_use]
    pub const fn max_limit() -> u64 {
        max_limit_of::<N>()
    }

    /// The same table (it must be empty: the seed decides where keys live)
    /// with keys mixed with `seed`, as [`KeyedGate::with_seed`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 1).with_seed(0x5eed);
    /// assert_eq!(t.remaining(1, 0), 1);
    /// ```
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.inner.table.policy_mut().seed = seed;
        self
    }

    /// The same table with `policy` for keys that find no room, as
    /// [`KeyedGate::with_overflow`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapKeyedGate, Overflow};
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 1)
    ///     .with_overflow(Overflow::Refuse);
    /// assert_eq!(t.overflow(), Overflow::Refuse);
    /// ```
    #[must_use]
    pub fn with_overflow(mut self, policy: Overflow) -> Self {
        self.inner.table.policy_mut().overflow = policy;
        self
    }

    /// The number of key slots.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapKeyedGate;
    /// assert_eq!(HeapKeyedGate::<2>::new(1000, NonZeroU64::new(9).unwrap(), 5).capacity(), 1000);
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.table.capacity()
    }

    /// The per-key limit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapKeyedGate;
    /// assert_eq!(HeapKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5).limit(), 5);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.inner.limit()
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapKeyedGate;
    /// assert_eq!(HeapKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5).window(), 9);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.inner.window()
    }

    /// What the table does when a key finds no room ([`Overflow::Evict`]
    /// unless set with [`with_overflow`](Self::with_overflow)).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapKeyedGate, Overflow};
    /// let t = HeapKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5);
    /// assert_eq!(t.overflow(), Overflow::Evict);
    /// ```
    #[must_use]
    pub const fn overflow(&self) -> Overflow {
        self.inner.overflow()
    }

    /// As [`KeyedGate::try_acquire`]: admits `n` permits for `key` at
    /// `now` if every interval containing the booking window then holds at
    /// most `limit` of the key's permits.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// use leaparray::Decision;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(t.try_acquire(1, 0, 2), Decision::Pass);
    /// assert_eq!(t.try_acquire(1, 0, 1), Decision::Block);
    /// assert_eq!(t.try_acquire(2, 0, 2), Decision::Pass); // its own limit
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision {
        self.inner.try_acquire(key, now, n)
    }

    /// As [`KeyedGate::try_acquire_headroom`]: the decision, and what the
    /// key has left just after it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{Headroom, HeapKeyedGate};
    /// use leaparray::Decision;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 5);
    /// let (d, h) = t.try_acquire_headroom(1, 100, 2);
    /// assert_eq!((d, h), (Decision::Pass, Headroom { remaining: 3, reset: Some(900) }));
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire_headroom(&self, key: u64, now: u64, n: u64) -> (Decision, Headroom) {
        self.inner.try_acquire_headroom(key, now, n)
    }

    /// As [`KeyedGate::try_acquire_burst`]: a decision for each `(key, n)`
    /// of `requests` at `now`, in order, into `decisions`; returns how many.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// use leaparray::Decision;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 1);
    /// let mut out = [Decision::Block; 3];
    /// assert_eq!(t.try_acquire_burst(0, &[(1, 1), (1, 1), (2, 1)], &mut out), 3);
    /// assert_eq!(out, [Decision::Pass, Decision::Block, Decision::Pass]);
    /// ```
    #[must_use = "the decisions are in `decisions`; a Pass has booked its permits"]
    pub fn try_acquire_burst(
        &self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
    ) -> usize {
        self.inner.try_acquire_burst(now, requests, decisions)
    }

    /// As [`KeyedGate::remaining`]: the permits `key` could still take at
    /// `now`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 2);
    /// assert_eq!((t.remaining(1, 0), t.remaining(2, 0)), (1, 3));
    /// ```
    #[must_use]
    pub fn remaining(&self, key: u64, now: u64) -> u64 {
        self.inner.remaining(key, now)
    }

    /// As [`KeyedGate::retry_after`]: ticks from `now` until `n` permits
    /// for `key` would pass, if nothing else arrived.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 3);
    /// assert_eq!(t.retry_after(1, 200, 1), Some(800));
    /// ```
    #[must_use]
    pub fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        self.inner.retry_after(key, now, n)
    }

    /// As [`KeyedGate::occupancy`]: the slots in use at `now` and the
    /// table's counters (a scan of every slot).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapKeyedGate;
    /// let t = HeapKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 1);
    /// assert_eq!(t.occupancy(0).resident, 1);
    /// ```
    #[must_use]
    pub fn occupancy(&self, now: u64) -> Occupancy {
        self.inner.occupancy(now)
    }
}

impl<const N: usize, S: AsRef<[Slot]>, W: Words<AtomicU64>> KeyedCore<N, S, W> {
    const fn limit(&self) -> u64 {
        self.gate().layout.limit
    }

    const fn window(&self) -> u64 {
        self.gate().layout.window.get()
    }

    const fn overflow(&self) -> Overflow {
        self.gate().overflow
    }

    /// The gate policy.
    #[inline(always)]
    const fn gate(&self) -> &GatePolicy<N, W> {
        self.table.policy()
    }

    /// Where `key` lives: its home slot and fingerprint, as `slot::locate`
    /// places it for a [`LocalKeyedGate`](super::LocalKeyedGate).
    #[inline(always)]
    fn locate(&self, key: u64) -> Place {
        self.table.place(mix(key ^ self.gate().seed))
    }

    /// Inline where it is called: the key's value in its home slot
    /// decided and swapped (`Table::update_at_home`). The rest goes to
    /// [`try_acquire_by_scan`](Self::try_acquire_by_scan), a function of
    /// its own (the scan, an insertion), so the common decision carries
    /// none of its code or saved registers; `n` out of range to
    /// [`book`](Self::book).
    #[inline(always)]
    fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision {
        let l = &self.gate().layout;
        // `1 <= n <= limit` in one test: for `n == 0`, `n - 1` wraps to
        // `u64::MAX`, above any limit (`max_limit`).
        if n.wrapping_sub(1) >= l.limit {
            return self.decision(self.book(key, now, n));
        }
        let (c, place) = (l.window.div(now), self.locate(key));
        match self.table.update_at_home(place, &mut self.decider(c, n)) {
            Some(b) => self.decision(b),
            None => self.try_acquire_by_scan(place, c, n),
        }
    }

    /// [`try_acquire`](Self::try_acquire) past its home-slot step, for `1
    /// <= n <= limit`.
    #[inline(never)]
    fn try_acquire_by_scan(&self, place: Place, c: u64, n: u64) -> Decision {
        let b = self
            .table
            .update_by_scan(place, None, c, self.decider(c, n))
            .unwrap_or(Booking::Overflowed);
        self.decision(self.counted(b))
    }

    /// `b`, the final booking of a decision, with an overflow counted.
    #[inline(always)]
    fn counted(&self, b: Booking) -> Booking {
        if let Booking::Overflowed = b {
            self.gate().shared.overflowed.fetch_add(1, Relaxed);
        }
        b
    }

    fn try_acquire_headroom(&self, key: u64, now: u64, n: u64) -> (Decision, Headroom) {
        let l = &self.gate().layout;
        let c = l.window.div(now);
        let b = self.book_from(self.locate(key), None, c, n);
        let headroom = match b {
            // `at`, the window booked, is the word's newest (a keyed table
            // never books a later one) and holds the booking.
            Booking::In { at, word } => Headroom {
                remaining: packed::left_of::<u64, N>(l, word, c),
                reset: packed::reset_of(l, at, now),
            },
            _ => Headroom {
                remaining: self.remaining(key, now),
                reset: self.retry_after(key, now, l.limit),
            },
        };
        (self.decision(b), headroom)
    }

    fn try_acquire_burst(
        &self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
    ) -> usize {
        const AHEAD: usize = 16;
        let len = requests.len().min(decisions.len());
        // One window for the whole burst: one division, not one a request.
        let c = self.gate().layout.window.div(now);
        for (reqs, outs) in requests[..len]
            .chunks(AHEAD)
            .zip(decisions[..len].chunks_mut(AHEAD))
        {
            let mut places = [Place::HOME; AHEAD];
            let mut firsts = [Snapshot::FREE; AHEAD];
            for (i, &(key, _)) in reqs.iter().enumerate() {
                places[i] = self.locate(key);
                firsts[i] = self.table.peek(places[i]);
            }
            for (i, (&(_, n), out)) in reqs.iter().zip(outs.iter_mut()).enumerate() {
                *out = self.decision(self.book_from(places[i], Some(firsts[i]), c, n));
            }
        }
        len
    }

    /// The decision a booking means, under the overflow policy.
    #[inline(always)]
    fn decision(&self, b: Booking) -> Decision {
        match b {
            Booking::In { .. } | Booking::Nothing => Decision::Pass,
            Booking::Refused | Booking::Counted => Decision::Block,
            Booking::Overflowed => match self.overflow() {
                // (An evicting table overflows only when its memory
                // cannot hold an evicted key: then it refuses.)
                Overflow::Refuse | Overflow::Evict => Decision::Block,
                Overflow::Admit => Decision::Pass,
            },
        }
    }

    /// The decision, and the window it booked into.
    #[inline]
    fn book(&self, key: u64, now: u64, n: u64) -> Booking {
        let c = self.gate().layout.window.div(now);
        self.book_from(self.locate(key), None, c, n)
    }

    /// [`book`](Self::book), given the key's home and maybe the value of
    /// its home slot read earlier. A stale value costs a failed swap when
    /// it leads to a booking; a refusal or an overflow it led to is decided
    /// again from a fresh read, so every decision of a burst is made on the
    /// table as the requests before it left it.
    #[inline(always)]
    fn book_from(&self, place: Place, first: Option<Snapshot>, c: u64, n: u64) -> Booking {
        let b = match self.book_scan(place, first, c, n) {
            Booking::Refused | Booking::Overflowed if first.is_some() => {
                self.book_scan(place, None, c, n)
            }
            b => b,
        };
        self.counted(b)
    }

    /// [`book_from`](Self::book_from), taking `first` as the home slot's
    /// read: one decision of the key's gate on its slot through the table
    /// (`table/mod.rs`, "One update"), inserting the key if it has none.
    #[inline(always)]
    fn book_scan(&self, place: Place, first: Option<Snapshot>, c: u64, n: u64) -> Booking {
        if n == 0 {
            return Booking::Nothing;
        }
        if n > self.gate().layout.limit {
            // Never admitted: no slot for it either.
            return Booking::Refused;
        }
        let booked = self.table.update(place, first, c, self.decider(c, n));
        booked.unwrap_or(Booking::Overflowed)
    }

    /// The table's closure for a decision of `n` permits (`1 <= n <=
    /// limit`) in window `c`: the key's gate decides on its word. Inlined
    /// into the table's loop (`Table::update` is inlined at each of the
    /// burst's calls): out of line it is a call a decision, its registers
    /// saved and its `Step` returned through memory.
    #[inline(always)]
    fn decider(&self, c: u64, n: u64) -> impl FnMut(u8, u64) -> Step<Booking> + '_ {
        let g = self.gate();
        let l = &g.layout;
        #[inline(always)]
        move |tag, v| {
            let w = gate_word(v);
            match decide::<N>(l, u64::from(tag), w, c, n) {
                Some((half, new, outcome)) => {
                    // No prioritized request borrows here.
                    let at = match outcome {
                        Outcome::Booked(w) => w,
                        Outcome::Borrowed { .. } | Outcome::Refused => c,
                    };
                    Step::Write {
                        tag: half as u8,
                        word: table_value(new),
                        out: Booking::In { at, word: new },
                    }
                }
                // A refusal counts in the key's demand (while the counter
                // is below saturation).
                None if tag < 255 && g.evicts() => Step::Write {
                    tag: (u64::from(tag) + n).min(255) as u8,
                    word: table_value(w),
                    out: Booking::Counted,
                },
                None => Step::Keep(Booking::Refused),
            }
        }
    }

    /// The gate word `place`'s key holds (the first slot of its probe that
    /// holds it), if any, and whether its probe has room for it otherwise.
    /// Under eviction, a key with no slot is given the word it would start
    /// from, and room.
    fn find(&self, place: Place, c: u64) -> (Option<u64>, bool) {
        let g = self.gate();
        let room = match self.table.find(place, c) {
            Found::Value(v) => return (Some(gate_word(v)), true),
            // A claim settles into its starting word.
            Found::Claimed => true,
            Found::Absent { room } => room,
        };
        match g.start_word(place.fingerprint(), c) {
            (w, true) => (Some(w), true),
            _ => (None, room || g.evicts()),
        }
    }

    fn remaining(&self, key: u64, now: u64) -> u64 {
        let l = &self.gate().layout;
        let c = l.window.div(now);
        remaining_from::<N>(l, self.find(self.locate(key), c), self.overflow(), c)
    }

    fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        let l = &self.gate().layout;
        if n > l.limit {
            return None;
        }
        let c = l.window.div(now);
        let place = self.locate(key);
        retry_after_from::<N, _>(l, self.find(place, c), self.overflow(), c, now, n, || {
            self.table.probe(place).map(|s| s.word())
        })
    }

    fn occupancy(&self, now: u64) -> Occupancy {
        let g = self.gate();
        let c = g.layout.window.div(now);
        let mut s = Occupancy {
            recycled: g.shared.recycled.load(Relaxed),
            overflowed: g.shared.overflowed.load(Relaxed),
            evicted: g.shared.evicted.load(Relaxed),
            remembered: g.shared.remembered.load(Relaxed),
            ..Occupancy::default()
        };
        for w in self.table.iter().filter_map(|s| s.value().map(gate_word)) {
            s.resident += 1;
            if g.recyclable(w, c) {
                s.recyclable += 1;
            }
        }
        s
    }
}

/// Loom models only: what the models observe beyond the public API.
#[cfg(leaparray_loom)]
#[doc(hidden)]
impl<const N: usize, const CAP: usize> KeyedGate<N, CAP> {
    /// `try_acquire`, and the window it booked into: `Ok(Some(w))` booked
    /// in `w`, `Ok(None)` refused, `Err(())` overflowed.
    pub fn loom_acquire(&self, key: u64, now: u64, n: u64) -> Result<Option<u64>, ()> {
        match self.inner.book(key, now, n) {
            Booking::In { at, .. } => Ok(Some(at)),
            Booking::Refused | Booking::Counted | Booking::Nothing => Ok(None),
            Booking::Overflowed => Err(()),
        }
    }

    /// The first slot of `key`'s probe.
    pub fn loom_home(&self, key: u64) -> usize {
        self.inner.locate(key).home()
    }

    /// The slot index holding `key`'s gate word or a claim of it, for
    /// every slot that does.
    pub fn loom_slots_of(&self, key: u64) -> std::vec::Vec<usize> {
        (0..CAP)
            .zip(self.inner.table.iter())
            .filter(|(_, s)| {
                !s.is_free() && s.fingerprint() == self.inner.locate(key).fingerprint()
            })
            .map(|(i, _)| i)
            .collect()
    }
}

// Review of issue 46: ledger runs that see the window each booking went
// into (late callers included).
#[cfg(all(test, not(leaparray_loom)))]
#[path = "shared_tests.rs"]
mod shared_tests;
