//! [`LocalKeyedGate`]: one owner's keyed table (`&mut self`), plain loads
//! and stores. Its slots follow the slot protocol (`slot.rs`) without
//! claims: the owner is the only writer. See the [module docs](super) for
//! how it compares with a [`KeyedGate`](super::KeyedGate).

use core::fmt;
use core::num::NonZeroU64;

use core::cell::Cell;

#[cfg(feature = "alloc")]
use alloc::boxed::Box;

use super::memory::{Memory, Shape, Words, MAX_PLANES, WORDS_PER_SLOT};
use super::slot::{
    at, bumped, demand_of, fold_into, fp_of, geometry, half_of, layout_of, locate, max_limit_of,
    probe_len, recyclable, remaining_from, retry_after_from, start, value_of, DEFAULT_SEED, USED,
};
#[cfg(feature = "alloc")]
use super::HEAP_LOCAL_TOO_LARGE;
use super::{KeyedError, Occupancy, Overflow, LOCAL_TOO_LARGE};
use crate::gate::decision::Decision;
use crate::gate::packed::{self, Fast, Layout};

/// How far ahead a burst prefetches: request `i + AHEAD`'s home slot as
/// request `i` is decided. A power of two (the ring of homes is indexed
/// `% AHEAD`). Chosen by measurement (`examples/xdp`'s benchmarks, 8 to
/// 64 ahead and a whole batch at once): a core tracks only so many
/// misses, and a prefetch beyond them waits or is lost.
const AHEAD: usize = 16;

/// An empty [`LocalCore`] over the slots `$slots` (all zero) and the
/// memory words `$words` (all zero), written where it is used: a macro,
/// not a function, so that a table built by value is not copied through
/// the arguments of a call (a debug build copies each one).
macro_rules! local_core {
    ($layout:expr, $shape:expr, $slots:expr, $words:expr $(,)?) => {
        LocalCore {
            slots: $slots,
            layout: $layout,
            seed: DEFAULT_SEED,
            overflow: Overflow::Evict,
            shape: $shape,
            memory: Memory {
                ids: [const { Cell::new(0) }; MAX_PLANES],
                words: $words,
            },
            high_water: 0,
            newest: 0,
            recycled: 0,
            overflowed: 0,
            evicted: 0,
            remembered: 0,
        }
    };
}

/// A [`KeyedGate`](super::KeyedGate) for one owner (say, one receive
/// queue): up to `CAP` keys at a time in `48 * CAP` bytes, `N` windows per
/// interval, keys are `u64` (hash a flow's 5-tuple or any key first).
/// Decisions take `&mut self` and are plain loads and stores. See the
/// [module docs](super).
///
/// The largest per-key limit is `2^(31/N) - 1` for the `N` you choose
/// (32,767 for `N = 2`, 7 for `N = 10`: the table in
/// [`KeyedGate`'s docs](super::KeyedGate#the-per-key-limit-ceiling),
/// whose test checks this type too; [`max_limit`](Self::max_limit)).
/// Windows and times as for a [`Gate`](crate::Gate).
///
/// Memory: `CAP * 16` bytes of slots, `CAP * 32` bytes of the memory of
/// evicted keys ([module docs](super), "Overflow") and 496 bytes on 64-bit
/// targets, built by value (`const`): a large table belongs in a `static`
/// behind the owner's lock, or on the heap ([`boxed`](Self::boxed), or a
/// [`HeapLocalKeyedGate`] of any capacity at run time, with the `alloc`
/// feature); a `let` puts it on the stack.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::LocalKeyedGate;
/// use leaparray::Decision;
/// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 3);
/// assert_eq!(t.try_acquire(7, 0, 3), Decision::Pass);
/// assert_eq!(t.try_acquire(7, 999, 1), Decision::Block);
/// assert_eq!(t.try_acquire(7, 1_000, 3), Decision::Pass); // window 0 slid out
/// assert_eq!(t.remaining(7, 1_000), 0);
/// assert_eq!(t.remaining(8, 1_000), 3);
/// ```
#[derive(Clone)]
pub struct LocalKeyedGate<const N: usize, const CAP: usize> {
    inner: LocalCore<N, [[u64; 2]; CAP], [[Cell<u64>; CAP]; WORDS_PER_SLOT]>,
}

/// What both single-owner tables are: the slots `S` (`[key, word]` each)
/// and the memory words `W`, in the table ([`LocalKeyedGate`]) or on the
/// heap ([`HeapLocalKeyedGate`]); every decision is this type's.
#[derive(Clone)]
pub(super) struct LocalCore<const N: usize, S, W> {
    /// `[key, word]`. Encoding: the word is 0 (free) or a gate word (top
    /// bit set; `packed`'s layout with `F = 0`). Invariants: a key's gate
    /// word is in at most one slot of its probe, and no free slot of the
    /// probe comes before it (slots are never freed: module docs).
    slots: S,
    layout: Layout,
    seed: u64,
    overflow: Overflow,
    /// How the memory of evicted keys is cut.
    shape: Shape,
    /// The memory of evicted keys (`memory.rs`, the same code as a
    /// `KeyedGate`'s over plain cells).
    memory: Memory<Cell<u64>, W>,
    /// The newest window any recycling had reached (0 if none): a key that
    /// comes back books no earlier than `N` windows before it.
    high_water: u64,
    /// The newest window any decision was made in (0 if none): callers
    /// further behind it than a slot's window ids reach are decided as
    /// callers at that bound (`window_of`).
    newest: u64,
    recycled: u64,
    overflowed: u64,
    evicted: u64,
    remembered: u64,
}

impl<const N: usize, const CAP: usize> fmt::Debug for LocalKeyedGate<N, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKeyedGate")
            .field("windows", &N)
            .field("capacity", &CAP)
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("overflow", &self.inner.overflow)
            .field("recycled", &self.inner.recycled)
            .field("overflowed", &self.inner.overflowed)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const CAP: usize> defmt::Format for LocalKeyedGate<N, CAP> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "LocalKeyedGate {{ windows: {=usize}, capacity: {=usize}, window: {=u64}, limit: {=u64}, overflow: {} }}",
            N,
            CAP,
            self.window(),
            self.limit(),
            self.overflow()
        );
    }
}

/// Where a lookup of a key ended.
enum Found {
    /// The key's gate word is in this slot.
    At(usize),
    /// The key has no slot; a new one may take this slot (free, or its key
    /// recyclable).
    Room(usize),
    /// The key has no slot, and its probe no room.
    Full,
}

impl<const N: usize, const CAP: usize> LocalKeyedGate<N, CAP> {
    /// A table of `CAP` keys, each admitted at most `limit` permits per
    /// interval of `N` windows of `window` ticks; [`Overflow::Evict`] when
    /// a key finds no room.
    ///
    /// `1 <= N <= 31` and `CAP >= 1`, checked at compile time.
    ///
    /// # Panics
    ///
    /// If `limit` does not fit a slot's word (above
    /// [`max_limit`](Self::max_limit)), with the reason, e.g.
    /// "LocalKeyedGate::new: the limit does not fit a key slot's word; for
    /// N = 2 the largest is 32,767". In a `const` that panic is a compile
    /// error; [`try_new`](Self::try_new) returns the error instead.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let t = LocalKeyedGate::<2, 8>::new(NonZeroU64::new(500).unwrap(), 100);
    /// assert_eq!((t.limit(), t.window()), (100, 500));
    /// ```
    ///
    /// A limit that does not fit, in a `const`, does not compile:
    ///
    /// ```compile_fail,E0080
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let t = const { LocalKeyedGate::<2, 8>::new(NonZeroU64::new(500).unwrap(), 32_768) };
    /// ```
    #[must_use]
    pub const fn new(window: NonZeroU64, limit: u64) -> Self {
        const {
            assert!(
                N > 0 && N <= 31 && CAP > 0,
                "LocalKeyedGate<N, CAP> needs 1 <= N <= 31 and CAP >= 1"
            );
        };
        let layout = match layout_of::<N>(window, limit) {
            Ok(layout) => layout,
            Err(_) => panic!("{}", LOCAL_TOO_LARGE[N - 1]),
        };
        LocalKeyedGate {
            inner: local_core!(
                layout,
                Shape::of(N, CAP, limit),
                [[0; 2]; CAP],
                [const { [const { Cell::new(0) }; CAP] }; WORDS_PER_SLOT],
            ),
        }
    }

    /// [`new`](Self::new), or the reason the parameters do not fit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(LocalKeyedGate::<2, 8>::try_new(w, 32_767).is_ok());
    /// assert!(LocalKeyedGate::<2, 8>::try_new(w, 32_768).is_err());
    /// ```
    pub fn try_new(window: NonZeroU64, limit: u64) -> Result<Self, KeyedError> {
        match layout_of::<N>(window, limit) {
            Ok(_) => Ok(Self::new(window, limit)),
            Err(e) => Err(e),
        }
    }

    /// The largest limit a `LocalKeyedGate<N, _>` takes (as a
    /// [`KeyedGate`](super::KeyedGate)'s): `2^(31/N) - 1`.
    ///
    /// ```
    /// use leaparray::keyed::LocalKeyedGate;
    /// assert_eq!(LocalKeyedGate::<2, 1>::max_limit(), 32_767);
    /// ```
    #[must_use]
    pub const fn max_limit() -> u64 {
        max_limit_of::<N>()
    }

    /// The same table (it must be empty: the seed decides where keys live)
    /// with keys mixed with `seed`. Keys an attacker chooses should be
    /// hashed with a secret key first: the mix is not a keyed hash.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10).with_seed(0x5eed);
    /// assert_eq!(t.try_acquire(1, 0, 1), leaparray::Decision::Pass);
    /// ```
    #[must_use]
    pub const fn with_seed(self, seed: u64) -> Self {
        LocalKeyedGate {
            inner: LocalCore { seed, ..self.inner },
        }
    }

    /// The same table with `policy` for keys that find no room.
    /// Keys it evicted before keep their estimates: a changed policy
    /// never lets an evicted key start fresh.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::Overflow;
    /// use leaparray::keyed::LocalKeyedGate;
    /// use leaparray::Decision;
    /// // One slot: the second key finds no room.
    /// let mut t = LocalKeyedGate::<2, 1>::new(NonZeroU64::new(500).unwrap(), 10)
    ///     .with_overflow(Overflow::Admit);
    /// assert_eq!(t.try_acquire(1, 0, 1), Decision::Pass);
    /// assert_eq!(t.try_acquire(2, 0, 1), Decision::Pass); // not limited, not counted
    /// assert_eq!(t.occupancy(0).overflowed, 1);
    /// ```
    #[must_use]
    pub const fn with_overflow(self, policy: Overflow) -> Self {
        LocalKeyedGate {
            inner: LocalCore {
                overflow: policy,
                ..self.inner
            },
        }
    }

    /// The per-key limit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::LocalKeyedGate;
    /// assert_eq!(LocalKeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).limit(), 5);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.inner.limit()
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::LocalKeyedGate;
    /// assert_eq!(LocalKeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).window(), 9);
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
    /// use leaparray::keyed::LocalKeyedGate;
    /// let t = LocalKeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5);
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
    /// # use leaparray::keyed::LocalKeyedGate;
    /// assert_eq!(LocalKeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).capacity(), 4);
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
    /// use leaparray::keyed::LocalKeyedGate;
    /// use leaparray::Decision;
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(t.try_acquire(1, 0, 2), Decision::Pass);
    /// assert_eq!(t.try_acquire(1, 0, 1), Decision::Block);
    /// assert_eq!(t.try_acquire(2, 0, 2), Decision::Pass); // its own limit
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    #[inline]
    pub fn try_acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.inner.try_acquire(key, now, n)
    }

    /// [`try_acquire`](Self::try_acquire) for a burst of requests (`(key,
    /// n)` pairs) at one `now`, each decided as if alone, in order: the
    /// decision for `requests[i]` goes to `decisions[i]`. Returns how many
    /// were decided (the shorter of the two slices).
    ///
    /// It calls `prefetch` with the address of each request's home slot
    /// 16 requests before deciding it (the first 16 before the first
    /// decision), so that when the table is larger than the caches the
    /// misses overlap with the decisions before them. The core forbids
    /// `unsafe` and cannot prefetch itself: pass your target's prefetch
    /// (x86-64: `_mm_prefetch::<_MM_HINT_T0>`), or `|_| ()`. The address
    /// is only a hint; nothing reads through it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// use leaparray::Decision::{Block, Pass};
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 2);
    /// let mut out = [Block; 4];
    /// let reqs = [(1, 1), (2, 2), (1, 1), (1, 1)];
    /// #[cfg(target_arch = "x86_64")]
    /// let hint = |p: *const u8| {
    ///     use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    ///     // SAFETY: a prefetch is a hint: it reads nothing and cannot fault.
    ///     unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    /// };
    /// #[cfg(not(target_arch = "x86_64"))]
    /// let hint = |_: *const u8| ();
    /// assert_eq!(t.try_acquire_burst(0, &reqs, &mut out, hint), 4);
    /// assert_eq!(out, [Pass, Pass, Pass, Block]);
    /// ```
    #[must_use = "the decisions are in `decisions`; a Pass has booked its permits"]
    #[inline]
    pub fn try_acquire_burst(
        &mut self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
        prefetch: impl FnMut(*const u8),
    ) -> usize {
        self.inner
            .try_acquire_burst(now, requests, decisions, prefetch)
    }

    /// The address of the slot where `key`'s probe starts (where a lookup
    /// of `key` reads first), for a prefetch instruction: issued a while
    /// before `key`'s decision (say, while the previous batch of requests
    /// is decided), it takes the cache miss out of the decision. Nothing
    /// reads through the pointer; the core forbids `unsafe` and cannot
    /// prefetch itself.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 2);
    /// let p = t.home_addr(7) as usize;
    /// let start = core::ptr::from_ref(&t) as usize;
    /// assert!(p >= start && p + 16 <= start + core::mem::size_of_val(&t));
    /// ```
    #[must_use]
    #[inline]
    pub fn home_addr(&self, key: u64) -> *const u8 {
        self.inner.home_addr(key)
    }

    /// Permits `key` could still take at `now`: `limit` minus the fullest
    /// interval a booking would join (`limit` for a key with no slot; 0 if
    /// it has no room and the policy refuses). Books nothing.
    ///
    /// Under [`Overflow::Evict`], for a key with no slot and no room (its
    /// insertion evicts), the answer is read before that eviction folds
    /// its victim into the memory; in a small table the victim's cells may
    /// be the key's, so the key may start from more: `remaining` is then
    /// at least what it can take (an upper bound).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10);
    /// assert_eq!(t.remaining(1, 0), 10);
    /// let _ = t.try_acquire(1, 0, 4);
    /// assert_eq!(t.remaining(1, 600), 6); // window 0 still counts at 600
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
    /// use leaparray::keyed::LocalKeyedGate;
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = t.try_acquire(1, 100, 10);
    /// assert_eq!(t.retry_after(1, 700, 1), Some(300)); // at 1,000 window 0 slides out
    /// assert_eq!(t.retry_after(2, 700, 1), Some(0));
    /// assert_eq!(t.retry_after(1, 700, 11), None);
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
    /// use leaparray::keyed::LocalKeyedGate;
    /// let mut t = LocalKeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = t.try_acquire(1, 0, 1);
    /// let _ = t.try_acquire(2, 0, 1);
    /// let s = t.occupancy(0);
    /// assert_eq!((s.resident, s.recyclable, s.recycled, s.overflowed), (2, 0, 0, 0));
    /// assert_eq!(t.occupancy(2_000).recyclable, 2); // idle for two intervals
    /// ```
    #[must_use]
    pub fn occupancy(&self, now: u64) -> Occupancy {
        self.inner.occupancy(now)
    }
}

impl<const N: usize, const CAP: usize> LocalKeyedGate<N, CAP> {
    /// A table of `CAP` keys built on the heap, slot by slot: the same
    /// table as [`new`](Self::new) makes, as a [`HeapLocalKeyedGate`],
    /// which never passes through a stack. `CAP >= 1` and `1 <= N <= 31`,
    /// checked at compile time.
    ///
    /// # Panics
    ///
    /// As [`new`](Self::new) for a limit that does not fit, and if the
    /// allocation fails; [`try_boxed`](Self::try_boxed) returns either.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::LocalKeyedGate;
    /// use leaparray::Decision;
    /// # if cfg!(miri) { return; } // 48 MiB: hours under Miri (tests/heap.rs runs small tables there)
    /// // 2^20 flows from a thread with a 64 KiB stack.
    /// let mut t = std::thread::Builder::new()
    ///     .stack_size(64 << 10)
    ///     .spawn(|| LocalKeyedGate::<2, { 1 << 20 }>::boxed(NonZeroU64::new(500).unwrap(), 10))
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
    /// let t = leaparray::keyed::LocalKeyedGate::<2, 0>::boxed(NonZeroU64::new(500).unwrap(), 1);
    /// ```
    #[cfg(feature = "alloc")]
    #[must_use]
    pub fn boxed(window: NonZeroU64, limit: u64) -> HeapLocalKeyedGate<N> {
        match Self::try_boxed(window, limit) {
            Ok(t) => t,
            Err(KeyedError::LimitTooLarge { .. }) => panic!("{}", LOCAL_TOO_LARGE[N - 1]),
            Err(e) => panic!("LocalKeyedGate::boxed: {e}"),
        }
    }

    /// [`boxed`](Self::boxed), or why it cannot be built.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{KeyedError, LocalKeyedGate};
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(LocalKeyedGate::<2, 1024>::try_boxed(w, 32_767).is_ok());
    /// let e = LocalKeyedGate::<2, 1024>::try_boxed(w, 32_768).unwrap_err();
    /// assert_eq!(e, KeyedError::LimitTooLarge { max: 32_767 });
    /// ```
    #[cfg(feature = "alloc")]
    pub fn try_boxed(window: NonZeroU64, limit: u64) -> Result<HeapLocalKeyedGate<N>, KeyedError> {
        const { assert!(CAP > 0, "LocalKeyedGate<N, CAP>::boxed needs CAP >= 1") };
        HeapLocalKeyedGate::try_new(CAP, window, limit)
    }
}

/// A heap table's slots, `[key, word]` each.
#[cfg(feature = "alloc")]
type HeapSlots = Box<[[u64; 2]]>;
/// A heap table's memory words.
#[cfg(feature = "alloc")]
type HeapWords = Box<[Cell<u64>]>;

/// A [`LocalKeyedGate`] whose slots and memory are on the heap, built slot
/// by slot (no value of it passes through a stack, in any build profile),
/// its capacity chosen at run time. It decides exactly as a
/// `LocalKeyedGate<N, CAP>` of the same capacity, seed and policy (the same
/// code). Any capacity of at least 1; a power of two makes a probe's wrap a
/// mask. Behind the `alloc` feature.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::HeapLocalKeyedGate;
/// use leaparray::Decision;
/// let flows = 1 << 16; // e.g. from the command line
/// let mut t = HeapLocalKeyedGate::<2>::new(flows, NonZeroU64::new(500).unwrap(), 3);
/// assert_eq!(t.try_acquire(7, 0, 3), Decision::Pass);
/// assert_eq!(t.try_acquire(7, 999, 1), Decision::Block);
/// assert_eq!(t.try_acquire(7, 1_000, 3), Decision::Pass); // window 0 slid out
/// ```
#[cfg(feature = "alloc")]
#[derive(Clone)]
pub struct HeapLocalKeyedGate<const N: usize> {
    inner: LocalCore<N, HeapSlots, HeapWords>,
}

#[cfg(feature = "alloc")]
impl<const N: usize> fmt::Debug for HeapLocalKeyedGate<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapLocalKeyedGate")
            .field("windows", &N)
            .field("capacity", &self.capacity())
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("overflow", &self.inner.overflow)
            .field("recycled", &self.inner.recycled)
            .field("overflowed", &self.inner.overflowed)
            .finish_non_exhaustive()
    }
}

#[cfg(all(feature = "alloc", feature = "defmt"))]
impl<const N: usize> defmt::Format for HeapLocalKeyedGate<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "HeapLocalKeyedGate {{ windows: {=usize}, capacity: {=usize}, window: {=u64}, limit: {=u64}, overflow: {} }}",
            N,
            self.capacity(),
            self.window(),
            self.limit(),
            self.overflow()
        );
    }
}

#[cfg(feature = "alloc")]
impl<const N: usize> HeapLocalKeyedGate<N> {
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
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let t = HeapLocalKeyedGate::<2>::new(4096, NonZeroU64::new(500).unwrap(), 100);
    /// assert_eq!((t.capacity(), t.limit(), t.window()), (4096, 100, 500));
    /// ```
    #[must_use]
    pub fn new(capacity: usize, window: NonZeroU64, limit: u64) -> Self {
        match Self::try_new(capacity, window, limit) {
            Ok(t) => t,
            Err(KeyedError::LimitTooLarge { .. }) => panic!("{}", HEAP_LOCAL_TOO_LARGE[N - 1]),
            Err(e) => panic!("HeapLocalKeyedGate::new: {e}"),
        }
    }

    /// [`new`](Self::new), or why it cannot be built: no capacity, a limit
    /// that does not fit, or an allocation that failed.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapLocalKeyedGate, KeyedError};
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(HeapLocalKeyedGate::<2>::try_new(100, w, 32_767).is_ok());
    /// assert_eq!(HeapLocalKeyedGate::<2>::try_new(0, w, 10).unwrap_err(), KeyedError::ZeroCapacity);
    /// assert_eq!(
    ///     HeapLocalKeyedGate::<2>::try_new(usize::MAX / 4, w, 10).unwrap_err(),
    ///     KeyedError::OutOfMemory { capacity: usize::MAX / 4 }
    /// );
    /// ```
    pub fn try_new(capacity: usize, window: NonZeroU64, limit: u64) -> Result<Self, KeyedError> {
        const { assert!(N > 0 && N <= 31, "HeapLocalKeyedGate<N> needs 1 <= N <= 31") };
        if capacity == 0 {
            return Err(KeyedError::ZeroCapacity);
        }
        let layout = layout_of::<N>(window, limit)?;
        let words = capacity
            .checked_mul(WORDS_PER_SLOT)
            .ok_or(KeyedError::OutOfMemory { capacity })?;
        Ok(HeapLocalKeyedGate {
            inner: local_core!(
                layout,
                Shape::of(N, capacity, limit),
                super::boxed_slice(capacity, capacity, || [0; 2])?,
                super::boxed_slice(words, capacity, || Cell::new(0))?,
            ),
        })
    }

    /// The largest limit a `HeapLocalKeyedGate<N>` takes, as a
    /// [`LocalKeyedGate`]'s.
    ///
    /// ```
    /// assert_eq!(leaparray::keyed::HeapLocalKeyedGate::<2>::max_limit(), 32_767);
    /// ```
    #[must_use]
    pub const fn max_limit() -> u64 {
        max_limit_of::<N>()
    }

    /// The same table (it must be empty) with keys mixed with `seed`, as
    /// [`LocalKeyedGate::with_seed`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 1).with_seed(9);
    /// assert_eq!(t.remaining(1, 0), 1);
    /// ```
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.inner.seed = seed;
        self
    }

    /// The same table with `policy` for keys that find no room, as
    /// [`LocalKeyedGate::with_overflow`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapLocalKeyedGate, Overflow};
    /// let t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 1)
    ///     .with_overflow(Overflow::Admit);
    /// assert_eq!(t.overflow(), Overflow::Admit);
    /// ```
    #[must_use]
    pub fn with_overflow(mut self, policy: Overflow) -> Self {
        self.inner.overflow = policy;
        self
    }

    /// The number of key slots.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapLocalKeyedGate;
    /// assert_eq!(HeapLocalKeyedGate::<2>::new(100, NonZeroU64::new(9).unwrap(), 5).capacity(), 100);
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.slots.len()
    }

    /// The per-key limit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapLocalKeyedGate;
    /// assert_eq!(HeapLocalKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5).limit(), 5);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.inner.limit()
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::HeapLocalKeyedGate;
    /// assert_eq!(HeapLocalKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5).window(), 9);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.inner.window()
    }

    /// What the table does when a key finds no room.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{HeapLocalKeyedGate, Overflow};
    /// let t = HeapLocalKeyedGate::<2>::new(4, NonZeroU64::new(9).unwrap(), 5);
    /// assert_eq!(t.overflow(), Overflow::Evict);
    /// ```
    #[must_use]
    pub const fn overflow(&self) -> Overflow {
        self.inner.overflow()
    }

    /// As [`LocalKeyedGate::try_acquire`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// use leaparray::Decision;
    /// let mut t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(t.try_acquire(1, 0, 2), Decision::Pass);
    /// assert_eq!(t.try_acquire(1, 0, 1), Decision::Block);
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    #[inline]
    pub fn try_acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.inner.try_acquire(key, now, n)
    }

    /// As [`LocalKeyedGate::try_acquire_burst`]: `prefetch` gets each
    /// request's home slot address 16 requests before its decision.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// use leaparray::Decision::{Block, Pass};
    /// let mut t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 2);
    /// let mut out = [Block; 4];
    /// let reqs = [(1, 1), (2, 2), (1, 1), (1, 1)];
    /// assert_eq!(t.try_acquire_burst(0, &reqs, &mut out, |_| ()), 4);
    /// assert_eq!(out, [Pass, Pass, Pass, Block]);
    /// ```
    #[must_use = "the decisions are in `decisions`; a Pass has booked its permits"]
    #[inline]
    pub fn try_acquire_burst(
        &mut self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
        prefetch: impl FnMut(*const u8),
    ) -> usize {
        self.inner
            .try_acquire_burst(now, requests, decisions, prefetch)
    }

    /// As [`LocalKeyedGate::home_addr`]: where `key`'s probe starts, for a
    /// prefetch.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 2);
    /// assert!(!t.home_addr(7).is_null());
    /// ```
    #[must_use]
    #[inline]
    pub fn home_addr(&self, key: u64) -> *const u8 {
        self.inner.home_addr(key)
    }

    /// As [`LocalKeyedGate::remaining`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let mut t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 2);
    /// assert_eq!((t.remaining(1, 0), t.remaining(2, 0)), (1, 3));
    /// ```
    #[must_use]
    pub fn remaining(&self, key: u64, now: u64) -> u64 {
        self.inner.remaining(key, now)
    }

    /// As [`LocalKeyedGate::retry_after`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let mut t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 3);
    /// assert_eq!(t.retry_after(1, 200, 1), Some(800));
    /// ```
    #[must_use]
    pub fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        self.inner.retry_after(key, now, n)
    }

    /// As [`LocalKeyedGate::occupancy`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::HeapLocalKeyedGate;
    /// let mut t = HeapLocalKeyedGate::<2>::new(64, NonZeroU64::new(500).unwrap(), 3);
    /// let _ = t.try_acquire(1, 0, 1);
    /// assert_eq!(t.occupancy(0).resident, 1);
    /// ```
    #[must_use]
    pub fn occupancy(&self, now: u64) -> Occupancy {
        self.inner.occupancy(now)
    }
}

impl<const N: usize, S: AsRef<[[u64; 2]]> + AsMut<[[u64; 2]]>, W: Words<Cell<u64>>>
    LocalCore<N, S, W>
{
    /// Slots in the table.
    #[inline(always)]
    fn cap(&self) -> usize {
        self.slots.as_ref().len()
    }

    /// Slots in a probe.
    #[inline(always)]
    fn probe(&self) -> usize {
        probe_len(self.cap())
    }

    const fn limit(&self) -> u64 {
        self.layout.limit
    }

    const fn window(&self) -> u64 {
        self.layout.window.get()
    }

    const fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// The window a caller at `now` is decided in: its own, or, if that is
    /// `2^(T-1)` windows or more behind the newest window any decision was
    /// made in, the oldest window a slot's id (`T` bits, modulo `2^T`)
    /// still reads as behind it. Further back, a slot whose newest window
    /// is that newest one would read the caller as ahead of it, slide its
    /// counts out and admit beyond the limit ([module docs](super), "Exactness").
    #[inline(always)]
    fn window_of(&self, now: u64) -> u64 {
        let reach = self.layout.id_mask >> 1;
        self.layout
            .window
            .div(now)
            .max(self.newest.saturating_sub(reach))
    }

    /// The `i`-th slot of the probe starting at `home` (`home < CAP`, `i <
    /// PROBE`): `slot.rs`'s `at`, a mask when `CAP` is a power of two (so
    /// the index needs no bounds check either).
    #[inline(always)]
    fn at(&self, home: usize, i: usize) -> usize {
        let cap = self.cap();
        if cap & (cap - 1) == 0 {
            (home + i) & (cap - 1)
        } else {
            at(cap, home, i)
        }
    }

    /// Where the lookup of `key` from its home slot `home` ends, for a
    /// caller in window `c`.
    #[inline(always)]
    fn find(&self, fp: u64, home: usize, c: u64) -> Found {
        // The home slot first, apart: where nearly every key of a table
        // with room lives.
        match self.slots.as_ref()[home] {
            [_, 0] => return Found::Room(home),
            [k, _] if fp_of(k) == fp => return Found::At(home),
            _ => {}
        }
        self.find_past_home(fp, home, c)
    }

    /// [`find`](Self::find) when the home slot holds another key.
    fn find_past_home(&self, fp: u64, home: usize, c: u64) -> Found {
        let mut room = None;
        for i in 0..self.probe() {
            let at = self.at(home, i);
            let [k, w] = self.slots.as_ref()[at];
            if w == 0 {
                // No key lives past a free slot (module docs).
                return Found::Room(room.unwrap_or(at));
            }
            if fp_of(k) == fp {
                return Found::At(at);
            }
            if room.is_none() && recyclable::<N>(&self.layout, w, c) {
                room = Some(at);
            }
        }
        match room {
            Some(at) => Found::Room(at),
            None => Found::Full,
        }
    }

    // Inline where it is called (the decision on the key's home slot);
    // an insertion is a function of its own (`insert`).
    #[inline(always)]
    fn try_acquire(&mut self, key: u64, now: u64, n: u64) -> Decision {
        let (home, fp) = locate(self.cap(), self.seed, key);
        let c = self.window_of(now);
        if self.books(n) {
            self.newest = self.newest.max(c);
        }
        self.acquire_from(fp, home, c, n)
    }

    #[inline]
    fn try_acquire_burst(
        &mut self,
        now: u64,
        requests: &[(u64, u64)],
        decisions: &mut [Decision],
        mut prefetch: impl FnMut(*const u8),
    ) -> usize {
        let len = requests.len().min(decisions.len());
        let (requests, decisions) = (&requests[..len], &mut decisions[..len]);
        // The same for every request of the burst: its decisions raise
        // `newest` to `c` at most, and only `window_of` reads `newest`.
        let c = self.window_of(now);
        let seed = self.seed;
        // A rolling prefetch: request `i + AHEAD`'s home slot is handed to
        // the prefetch as request `i` is decided, so that about `AHEAD`
        // misses are in flight at any time (a whole batch at once would ask
        // for more lines than a core tracks, and the rest wait).
        let mut homes = [(0usize, 0u64); AHEAD];
        for (i, &(key, _)) in requests.iter().take(AHEAD).enumerate() {
            homes[i] = locate(self.cap(), seed, key);
            prefetch(self.slot_addr(homes[i].0));
        }
        let mut booking = false;
        // The requests that have a request `AHEAD` places after them (each
        // hands that one's home to the prefetch, with no test), then the
        // last `AHEAD` (none to hand on).
        let split = len.saturating_sub(AHEAD);
        let (now_reqs, tail_reqs) = requests.split_at(split);
        let (now_out, tail_out) = decisions.split_at_mut(split);
        for ((i, &(_, n)), out) in now_reqs.iter().enumerate().zip(now_out) {
            let next = locate(self.cap(), seed, requests[i + AHEAD].0);
            prefetch(self.slot_addr(next.0));
            let (h, fp) = core::mem::replace(&mut homes[i % AHEAD], next);
            *out = self.acquire_noting(fp, h, c, n, &mut booking);
        }
        for ((i, &(_, n)), out) in tail_reqs.iter().enumerate().zip(tail_out) {
            let (h, fp) = homes[(split + i) % AHEAD];
            *out = self.acquire_noting(fp, h, c, n, &mut booking);
        }
        if booking {
            self.newest = self.newest.max(c);
        }
        len
    }

    /// The address of slot `home` (`home < CAP`), for the prefetch.
    #[inline(always)]
    fn slot_addr(&self, home: usize) -> *const u8 {
        core::ptr::from_ref(&self.slots.as_ref()[self.at(home, 0)]).cast()
    }

    /// Whether a request for `n` permits is decided on its key's slot
    /// (`1 <= n <= limit`), in one test: for `n == 0`, `n - 1` wraps to
    /// `u64::MAX`, above any limit ([`max_limit`](Self::max_limit) is below
    /// `2^31`).
    #[inline(always)]
    fn books(&self, n: u64) -> bool {
        n.wrapping_sub(1) < self.layout.limit
    }

    #[inline]
    fn home_addr(&self, key: u64) -> *const u8 {
        self.slot_addr(locate(self.cap(), self.seed, key).0)
    }

    /// [`try_acquire`](Self::try_acquire), given the key's home slot and
    /// the window `c` of `now` (`window_of`), except raising `newest`.
    #[inline(always)]
    fn acquire_from(&mut self, fp: u64, home: usize, c: u64, n: u64) -> Decision {
        self.acquire_noting(fp, home, c, n, &mut false)
    }

    /// [`acquire_from`](Self::acquire_from), setting `booking` if it
    /// decided on the key's slot ([`books`](Self::books)).
    #[inline(always)]
    fn acquire_noting(
        &mut self,
        fp: u64,
        home: usize,
        c: u64,
        n: u64,
        booking: &mut bool,
    ) -> Decision {
        if self.books(n) {
            *booking = true;
            self.book(fp, home, c, n)
        } else if n == 0 {
            Decision::Pass
        } else {
            // Never admitted: no slot for it either.
            Decision::Block
        }
    }

    /// [`acquire_from`](Self::acquire_from) for `1 <= n <= limit`.
    #[inline(always)]
    fn book(&mut self, fp: u64, home: usize, c: u64, n: u64) -> Decision {
        // The home slot first, apart (`find`'s first test, inline): where
        // nearly every key of a table with room lives.
        let home = self.at(home, 0);
        let [half, w] = self.slots.as_ref()[home];
        let (at, half, w) = if w != 0 && fp_of(half) == fp {
            (home, half, w)
        } else {
            let at = match self.find_past_home(fp, home, c) {
                Found::At(at) => at,
                found => match self.insert(fp, home, c, found) {
                    Ok(at) => at,
                    Err(overflowed) => return overflowed,
                },
            };
            let [half, w] = self.slots.as_ref()[at];
            (at, half, w)
        };
        match self.decide_slot(half, w, c, n) {
            Some(slot) => {
                self.slots.as_mut()[at] = slot;
                Decision::Pass
            }
            None => {
                if self.evicts() {
                    // A refusal counts in the key's demand.
                    let demand = (demand_of(half) + n).min(255);
                    self.slots.as_mut()[at][0] = (half & !0xff) | demand;
                }
                Decision::Block
            }
        }
    }

    /// [`book`](Self::book) for a key with no slot (`found` is not
    /// `Found::At`): inserts it (recycling a slot, or evicting under
    /// [`Overflow::Evict`]) and gives its slot, or the overflow policy's
    /// decision. Out of line: the decisions of resident keys keep their
    /// registers.
    #[inline(never)]
    fn insert(&mut self, fp: u64, home: usize, c: u64, found: Found) -> Result<usize, Decision> {
        Ok(match found {
            Found::At(at) => at,
            Found::Room(at) => {
                if self.slots.as_ref()[at][1] != 0 {
                    self.high_water = self.high_water.max(c);
                    self.recycled += 1;
                }
                self.slots.as_mut()[at] = [half_of(fp), self.start_word(fp, c)];
                at
            }
            Found::Full if self.evicts() => {
                // The slot protocol's eviction (`slot.rs`): the least
                // valued key of the probe goes, folded into the memory
                // first, with the high water raised to its newest window.
                let l = &self.layout;
                let mut victim = (home, u64::MAX);
                for i in 0..self.probe() {
                    let at = self.at(home, i);
                    let [k, w] = self.slots.as_ref()[at];
                    let v = value_of(geometry::<N>(l), (u128::from(k) << 64) | u128::from(w), c);
                    if v < victim.1 {
                        victim = (at, v);
                    }
                }
                let at = victim.0;
                let [k, w] = self.slots.as_ref()[at];
                // No word's newest window is past the newest window this
                // table has reached (`reached`): a word that reads later is
                // `2^(T-1)` windows or more behind `c` (its id misread as
                // ahead). It goes no further than `reached`, its counts
                // folded as if booked there: later than they were, so a
                // comeback (starting at the high water, at least
                // `reached`) still counts them in every interval that
                // holds them, and the high water never leaves the windows
                // callers really reached (module docs, "Exactness").
                let reached = c.max(self.newest).max(self.high_water);
                let newest = packed::newest_of(l, w, c).min(reached);
                self.high_water = self.high_water.max(c.max(newest));
                fold_into::<_, _, N>(l, &self.memory, &self.shape, fp_of(k), w, newest);
                self.evicted += 1;
                self.slots.as_mut()[at] = [half_of(fp), self.start_word(fp, c)];
                at
            }
            Found::Full => {
                self.overflowed += 1;
                return Err(match self.overflow {
                    Overflow::Refuse | Overflow::Evict => Decision::Block,
                    Overflow::Admit => Decision::Pass,
                });
            }
        })
    }

    /// One decision for `n` (`1 <= n <= limit`) by a caller in window `c`
    /// on a slot holding the key half `half` and the gate word `w`: the
    /// slot to store (the word `decide` books and the half `bumped`
    /// gives, `slot.rs`), or `None` if refused. Where the fast path books,
    /// it says how many windows the word moved on, which the demand
    /// counter halves by, so that is not found twice.
    #[inline(always)]
    fn decide_slot(&self, half: u64, w: u64, c: u64, n: u64) -> Option<[u64; 2]> {
        debug_assert!(w & USED != 0 && n >= 1 && n <= self.layout.limit);
        #[cfg(target_pointer_width = "64")]
        let l = packed::Fixed::<u64, N, 0>::new(&self.layout);
        #[cfg(not(target_pointer_width = "64"))]
        let l = &self.layout;
        match packed::decide_fast_ahead(l, w, c, n) {
            (Fast::Book(new), d) => {
                // `bumped` with `ahead_of`'s `d` (`w` is used); `d == 0`
                // apart, where the fast path's same-window case gives it as
                // a constant and no shift is made.
                let demand = if d == 0 {
                    demand_of(half)
                } else {
                    demand_of(half) >> d.min(8)
                };
                Some([(half & !0xff) | (demand + n).min(255), new])
            }
            (Fast::Full, _) => None,
            (Fast::Other, _) => packed::decide::<u64, N>(l, w, c, 0, n, false)
                .map(|(new, _)| [bumped(&self.layout, half, w, c, n), new]),
        }
    }

    /// Whether a key with no room evicts: the policy is
    /// [`Overflow::Evict`] and the memory can hold what it evicts.
    #[inline(always)]
    fn evicts(&self) -> bool {
        matches!(self.overflow, Overflow::Evict) && self.shape.remembers()
    }

    /// The word a key with fingerprint `fp` inserted by a caller in window
    /// `c` starts from (as a `KeyedGate`'s settler gives it: `slot.rs`'s
    /// [`start`]), counting an estimate as remembered.
    fn start_word(&mut self, fp: u64, c: u64) -> u64 {
        let (w, remembered) = self.estimated(fp, c);
        self.remembered += u64::from(remembered);
        w
    }

    /// The word a key with fingerprint `fp` would start from, and whether
    /// the memory estimated it (whatever the policy is now: it may have
    /// evicted under an earlier one).
    fn estimated(&self, fp: u64, c: u64) -> (u64, bool) {
        start::<_, _, N>(
            &self.layout,
            &self.memory,
            &self.shape,
            fp,
            c,
            self.high_water,
        )
    }

    /// The gate word `key` holds, if any, and whether its probe has room
    /// for it otherwise, for a caller in window `c`. Under eviction, a key
    /// with no slot is given the word it would start from, and room.
    fn lookup(&self, key: u64, c: u64) -> (Option<u64>, bool) {
        let (home, fp) = locate(self.cap(), self.seed, key);
        let found = match self.find(fp, home, c) {
            Found::At(at) => return (Some(self.slots.as_ref()[at][1]), true),
            Found::Room(_) => true,
            Found::Full => self.evicts(),
        };
        match self.estimated(fp, c) {
            (w, true) => (Some(w), true),
            _ => (None, found),
        }
    }

    fn remaining(&self, key: u64, now: u64) -> u64 {
        let c = self.window_of(now);
        remaining_from::<N>(&self.layout, self.lookup(key, c), self.overflow, c)
    }

    fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        let l = &self.layout;
        if n > l.limit {
            return None;
        }
        let c = self.window_of(now);
        let found = self.lookup(key, c);
        if let (Some(w), _) = found {
            if c > l.window.div(now) {
                // Decided as at the start of window `c` until the caller's
                // own clock passes it.
                let start = c * l.window.get();
                return packed::retry_after_of::<u64, N>(l, w, start, n).map(|t| {
                    if t == 0 {
                        0
                    } else {
                        t + (start - now)
                    }
                });
            }
        }
        retry_after_from::<N, _>(l, found, self.overflow, c, now, n, || {
            let home = locate(self.cap(), self.seed, key).0;
            (0..self.probe()).map(move |i| self.slots.as_ref()[self.at(home, i)][1])
        })
    }

    fn occupancy(&self, now: u64) -> Occupancy {
        let c = self.window_of(now);
        let mut s = Occupancy {
            recycled: self.recycled,
            overflowed: self.overflowed,
            evicted: self.evicted,
            remembered: self.remembered,
            ..Occupancy::default()
        };
        for &[_, w] in self.slots.as_ref() {
            if w & USED != 0 {
                s.resident += 1;
                if recyclable::<N>(&self.layout, w, c) {
                    s.recyclable += 1;
                }
            }
        }
        s
    }
}
