//! Per-key limits in fixed memory: [`KeyedGate`], shared by every thread
//! and interrupt handler, and [`LocalKeyedGate`], one owner's.
//!
//! A table of `CAP` slots, each 16 bytes: a key and that key's one-word
//! gate ([`gate`](crate::gate)'s 64-bit word, with no future windows) side
//! by side in one 128-bit atomic. Every decision, insertion and recycling
//! of a slot is one 128-bit compare-and-swap that also checks the key, so
//! "this slot is still this key's" and "book here" cannot come apart. No
//! lock and no allocation: usable in a `static`, on a packet path, and from
//! an interrupt or signal handler wherever the 128-bit atomic is lock-free
//! or masks interrupts (x86-64, AArch64, single-core chips: see
//! [`guarantees`](crate::guarantees), section 4; elsewhere
//! [`KeyedGate::new`] does not compile unless that is accepted by name).
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::KeyedGate;
//! use leaparray::Decision;
//!
//! // 2 windows of 500 ms: at most 100 per key per second, 4,096 key slots.
//! static PER_CLIENT: KeyedGate<2, 4096> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 100);
//!
//! let (alice, bob) = (0x0a00_0001, 0x0a00_0002); // e.g. IPv4 addresses
//! assert_eq!(PER_CLIENT.try_acquire(alice, 1_000, 100), Decision::Pass);
//! assert_eq!(PER_CLIENT.try_acquire(alice, 1_200, 1), Decision::Block);
//! assert_eq!(PER_CLIENT.try_acquire(bob, 1_200, 1), Decision::Pass);
//! assert_eq!(PER_CLIENT.retry_after(alice, 1_200, 1), Some(800));
//! ```
//!
//! # Two tables
//!
//! A packet path's receive queue polices its flows alone: under receive-side
//! scaling a flow's packets always land on the same queue, so a table per
//! queue limits each flow exactly, and nothing else ever writes it. A
//! [`LocalKeyedGate`] is that case. It holds the same 16-byte slots (a key
//! and its one-word gate) and follows the same rules (where a key lives,
//! one decision, recycling, the high water: the same code, in the slot
//! protocol's module), and decides every request exactly as a
//! [`KeyedGate`] with the same seed, capacity and overflow policy would
//! decide the same sequence of requests, except a caller `2^(T-1)` windows
//! or more (`T >= 32`) behind the newest window the table has decided in
//! (see "Exactness"). What it drops is what a shared table pays for
//! sharing:
//!
//! | | `KeyedGate` | `LocalKeyedGate` |
//! |---|---|---|
//! | callers | any thread or interrupt handler (`&self`) | its owner (`&mut self`) |
//! | a decision | a 128-bit compare-and-swap (a locked `cmpxchg16b` on x86-64) | a plain load and store |
//! | a new key | a claim, then settling it (the slot protocol) | one store |
//! | a lookup reads | the probe up to the key (all of it for a key with no slot) | the probe up to the key or the first free slot |
//! | a burst | reads 16 home slots ahead | hands each home slot's address to the caller's prefetch, 16 requests ahead |
//!
//! Without atomic read-modify-writes nothing orders one decision's cache
//! miss before the next one's, so a burst's misses overlap. The core
//! forbids `unsafe` and cannot issue a prefetch instruction itself;
//! [`LocalKeyedGate::try_acquire_burst`] takes the caller's (on x86-64
//! `_mm_prefetch`; `|_| ()` for none).
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::keyed::LocalKeyedGate;
//! use leaparray::Decision;
//!
//! // One per receive queue: 16 packets per flow per 100 ms (two 50 ms
//! // windows, time in µs), 4,096 flow slots.
//! let mut flows = LocalKeyedGate::<2, 4096>::new(NonZeroU64::new(50_000).unwrap(), 16);
//! let (a, b) = (0x5eed_0001, 0x5eed_0002); // 5-tuple hashes
//! for _ in 0..16 {
//!     assert_eq!(flows.try_acquire(a, 1_000, 1), Decision::Pass);
//! }
//! assert_eq!(flows.try_acquire(a, 1_000, 1), Decision::Block);
//! assert_eq!(flows.try_acquire(b, 1_000, 1), Decision::Pass);
//! assert_eq!(flows.retry_after(a, 1_000, 1), Some(99_000)); // at 100 ms window 0 slides out
//! ```
//!
//! A [`LocalKeyedGate`] is one owner's: it is `Send` (move it to its
//! queue's thread) and every decision takes `&mut self`, so the compiler
//! rules out a second writer.
//!
//! Both are built by value, `const`, for a `static`. With the `alloc`
//! feature each also comes on the heap, built slot by slot so that no
//! table passes through a stack whatever its size or the build profile,
//! with its capacity chosen at run time: [`HeapKeyedGate`] and
//! [`HeapLocalKeyedGate`] (or [`KeyedGate::boxed`] for a capacity fixed at
//! compile time). They decide exactly as the tables of the same capacity
//! built by value (one implementation; `tests/heap.rs` compares them).
//!
//! # Where a key lives
//!
//! A key's *home* is a slot picked by a seeded mix of the key; the key may
//! live in its home or any of the [`PROBE`] - 1 slots after it (wrapping):
//! its *probe*. A slot is
//!
//! | low 64 bits (the word) | state |
//! |---|---|
//! | `0` | free |
//! | top bit set | the key's gate word (the gate module's layout, `F = 0`) |
//! | otherwise | a *claim* of a free slot for the key, not settled yet: a token unique to that claim |
//!
//! A decision scans the key's probe in order and stops at the first slot
//! that holds the key (a gate word or a claim). It books in that slot with
//! one compare-and-swap of the whole slot, exactly as a [`Gate`] books in
//! its word (the same code: `packed::decide`). A failed swap rescans.
//!
//! A key that no slot holds takes the first slot of its probe that is free
//! or *recyclable*: a gate word whose newest window is at least `2N`
//! windows before the caller's (its key has been idle for two intervals:
//! none of its permits counts in any interval the caller can be checked
//! against, and `N` windows of grace for callers whose clocks lag). When
//! every slot of the probe holds a key that is not recyclable, the table
//! applies its [`Overflow`] policy: by default it evicts.
//!
//! # Overflow
//!
//! [`Overflow::Evict`] (the default) takes the slot of the key the probe
//! values least: its *demand* (requests admitted and refused, halved per
//! window) kept in 8 bits of its slot next to a 56-bit fingerprint of its
//! key. A flood of one-shot keys has a demand of 1 each and evicts itself
//! first; keys at their limit go last, and a key whose callers' clock lags
//! keeps its rank over a one-shot key of the same decayed demand. Before
//! its slot changes hands, the evicted key's counts are folded into the
//! table's *memory of evicted keys*: a count-min sketch per window with
//! conservative update (two 3-bit cells a key per window, `4 * CAP` words
//! in `N` planes, lazily expired: `src/keyed/memory.rs`). A key inserted
//! later, evicted before or not, starts from the memory's estimate of each
//! window that still counts, never below what it had booked there. Cells
//! shared with other keys only raise an estimate: under a heavy flood new
//! keys start from more than they booked and are refused sooner (fail
//! closed); a key evicted with more than 4 in a window may come back
//! charged a quarter, a half or all of its limit there (`memory.rs`: the
//! ladder of a cell's codes). `Overflow::Refuse` refuses a key
//! with no room; `Overflow::Admit` admits it uncounted.
//!
//! Under a flood of one-shot keys of up to 100 times the slots per window,
//! new clients within their limit keep almost all their requests with
//! `Evict` (and lose almost all with `Refuse`), also when the flood comes
//! packed into the start of each window or its keys ask for their whole
//! limit, and no key is admitted over its limit; further on the memory
//! saturates and newcomers are refused with the flood. The measured
//! curve, `Evict` against `Refuse`, is in `benches/README.md` ("Floods of
//! keys"), from `examples/flood.rs`; `tests/flood.rs` checks each flood.
//!
//! How a [`KeyedGate`] keeps one slot per key while threads race to insert
//! it (claims and settling) is argued once in the slot table's module
//! (`src/keyed/table/mod.rs`: [`Table`], which `leaparray-governor` builds on
//! too); why a recycled or evicted key never gets a fresh limit, in the
//! gate policy's (`src/keyed/slot.rs`).
//! A [`LocalKeyedGate`] has no race: it writes a new key's gate word in
//! one store. No slot of it is ever freed again, so every slot of the probe
//! before a key's slot was taken when the key was inserted and is still
//! taken: its lookup stops at the first free slot (a `KeyedGate`'s cannot:
//! a claim withdrawn by another thread frees its slot again).
//!
//! # Exactness
//!
//! In every interval of `N` windows, each key, evicted or not, has at most
//! `limit` permits counted, under any interleaving, with [`Overflow::Evict`]
//! and [`Overflow::Refuse`] (two keys sharing a fingerprint in one probe
//! share one limit; with eviction, the estimate an evicted key comes back
//! with is at least what it had booked in each window that still counts:
//! the slot protocol's module, "Eviction"): a permit is
//! counted in a window no earlier than its caller's own and no later than
//! the newest window any caller of the table had reached (as a [`Gate`]
//! counts late callers), and within the ranges of the gate's word (no
//! caller lagging the newest window by `2^(T-1)` windows or more; `T = 64 -
//! 1 - N b`, at least 32).
//!
//! While its probe has room and no key has been evicted, a key is decided
//! exactly as a [`Gate`] of its own (with no occupy timeout) would decide it, for callers whose window
//! is no more than `N` windows before the newest window any caller of the
//! table had reached. A caller further behind may be decided otherwise:
//! after its key was recycled by a caller `2N` windows or more ahead, it is
//! booked from the high water on, and may be admitted where its own gate,
//! still holding the old permits, would refuse (the permits count in
//! different windows, so no interval holds more than `limit`). The high
//! water only grows: one recycling caller with a far-future clock makes
//! every key inserted after it start `N` windows before that time (booked
//! there, as a [`Gate`]'s late callers are after a far-future caller:
//! stricter, never looser). A key's word idle `2^(T-1)` windows or more
//! (not recycled: its id, kept modulo `2^T`, then reads as ahead of every
//! caller) is read at that later window too: under [`Overflow::Evict`] its
//! eviction raises the high water there, and keys inserted after it get
//! `limit` permits, then are refused until the clock reaches that window
//! (at most `2^(T-1)` windows; stricter, never looser). A
//! [`LocalKeyedGate`], which keeps the newest window it decided in, takes
//! such a word no later than that newest window.
//!
//!
//! A [`LocalKeyedGate`] limits each key as a `KeyedGate` with
//! [`Overflow::Evict`] or [`Overflow::Refuse`] does, for any sequence of calls and any times,
//! callers however far behind included: a slot keeps its window id modulo
//! `2^T` (`T >= 32` bits), and would read a caller `2^(T-1)` windows or
//! more behind its newest window as ahead of it, slide its counts out and
//! admit beyond the limit (a `KeyedGate` does, outside the range stated
//! above). The local table keeps the newest window of any request it
//! decided for 1 to `limit` permits, and decides a caller that far behind
//! it as a caller in the oldest window its ids still read as behind (a
//! late caller: its permits count no earlier than its own window). So for
//! such callers, and only for them, its decisions, `remaining`,
//! `retry_after` and `occupancy` may differ from a `KeyedGate`'s. Once the
//! newest window moves on, such a caller's word reads as far ahead; under
//! [`Overflow::Evict`] an eviction of it folds its counts no later than
//! the newest window the table reached, and raises the high water no
//! further, so other keys are decided as before it came.
//!
//! `tests/local.rs` checks every decision, `remaining`, `retry_after` and
//! `occupancy` of a `LocalKeyedGate` against a `KeyedGate` of the same
//! seed, capacity and policy, and the limit against a ledger of admissions
//! per window, for random sequences (probes full, keys recycled, times
//! going back).
//!
//! [`Gate`]: crate::Gate

// The heap tables exist with `alloc` only; docs.rs and CI check every link
// with every feature.
#![cfg_attr(not(feature = "alloc"), allow(rustdoc::broken_intra_doc_links))]

use core::fmt;

mod hash;
mod local;
mod memory;
mod shared;
mod slot;
mod table;

#[cfg(feature = "std")]
pub use hash::KeyHasher;
#[cfg(feature = "alloc")]
pub use local::HeapLocalKeyedGate;
pub use local::LocalKeyedGate;
#[cfg(feature = "alloc")]
pub use shared::HeapKeyedGate;
pub use shared::KeyedGate;
pub use table::{
    Event, Found, Place, Policy, Slot, Snapshot, Start, Step, Table, Value, ValueTooLarge,
};

/// Slots a key may live in: its home slot and the `PROBE - 1` after it
/// (or all `CAP` slots if there are fewer): 256 bytes, four 64-byte cache
/// lines' worth (five lines when the home slot does not start one).
pub const PROBE: usize = 16;

/// What a [`KeyedGate`] decides for a key that has no slot and no room in
/// its probe (every slot there holds a key that is not recyclable yet).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::Overflow;
/// use leaparray::KeyedGate;
/// use leaparray::Decision;
/// // One slot: the second key finds no room.
/// let w = NonZeroU64::new(500).unwrap();
/// let t = KeyedGate::<2, 1>::new(w, 10);
/// assert_eq!(t.overflow(), Overflow::Evict);
/// assert_eq!(t.try_acquire(1, 0, 10), Decision::Pass);
/// assert_eq!(t.try_acquire(2, 0, 1), Decision::Pass); // evicts key 1
/// assert_eq!(t.try_acquire(1, 0, 1), Decision::Block); // remembered: still at its limit
/// assert_eq!(t.occupancy(0).evicted, 2);
/// let closed = KeyedGate::<2, 1>::new(w, 10).with_overflow(Overflow::Refuse);
/// assert_eq!(closed.try_acquire(1, 0, 1), Decision::Pass);
/// assert_eq!(closed.try_acquire(2, 0, 1), Decision::Block);
/// let open = KeyedGate::<2, 1>::new(NonZeroU64::new(500).unwrap(), 10).with_overflow(Overflow::Admit);
/// assert_eq!(open.try_acquire(1, 0, 1), Decision::Pass);
/// assert_eq!(open.try_acquire(2, 0, 1), Decision::Pass);
/// assert_eq!(open.occupancy(0).overflowed, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Overflow {
    /// Evict the key its probe values least (by demand: requests admitted
    /// and refused, halved per window), remembering the evicted key's
    /// counts conservatively, and take its slot: no key, evicted or not,
    /// is admitted beyond its limit, and a flood of new keys evicts the
    /// flood first (module docs, "Overflow"). The default.
    #[default]
    Evict,
    /// Refuse it (fail closed): no key is ever admitted beyond its own
    /// limit, and a flood of new keys gets nothing.
    Refuse,
    /// Admit it without counting it anywhere (fail open): availability
    /// over limits. A key with no slot is not limited at all.
    Admit,
}

/// Why [`KeyedGate::try_new`] or [`LocalKeyedGate::try_new`] refused its
/// parameters (the reason their `new` panics with: a compile error in a
/// `static`).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::KeyedError;
/// use leaparray::KeyedGate;
/// let w = NonZeroU64::new(500).unwrap();
/// let e = KeyedGate::<2, 16>::try_new(w, 1 << 20).unwrap_err();
/// assert_eq!(e, KeyedError::LimitTooLarge { max: 32_767 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum KeyedError {
    /// The limit does not fit a slot's gate word: `max` is the largest that
    /// does for this `N` (`2^b - 1` with `b = 31 / N` bits per window).
    LimitTooLarge {
        /// The largest limit a `KeyedGate<N, _>` or `LocalKeyedGate<N, _>`
        /// takes.
        max: u64,
    },
    /// A table on the heap was asked for no slots (a fixed capacity of 0
    /// does not compile).
    ZeroCapacity,
    /// A table on the heap of `capacity` slots (48 bytes each) could not be
    /// allocated: more bytes than an allocation can hold, or the allocator
    /// refused.
    OutOfMemory {
        /// The capacity asked for.
        capacity: usize,
    },
}

impl fmt::Display for KeyedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedError::LimitTooLarge { max } => {
                write!(
                    f,
                    "the limit does not fit a key slot's word (at most {max})"
                )
            }
            KeyedError::ZeroCapacity => write!(f, "a keyed table needs at least one slot"),
            KeyedError::OutOfMemory { capacity } => write!(
                f,
                "a keyed table of {capacity} slots (48 bytes each) could not be allocated"
            ),
        }
    }
}

/// `len` values of `make()`, written straight into a heap slice: no value
/// of the table passes through a stack, whatever its size and the build
/// profile. An allocation that cannot be made is an error, not an abort.
#[cfg(feature = "alloc")]
fn boxed_slice<T>(
    len: usize,
    capacity: usize,
    make: impl FnMut() -> T,
) -> Result<alloc::boxed::Box<[T]>, KeyedError> {
    let mut v = alloc::vec::Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| KeyedError::OutOfMemory { capacity })?;
    v.extend(core::iter::repeat_with(make).take(len));
    Ok(v.into_boxed_slice())
}

#[cfg(feature = "std")]
impl std::error::Error for KeyedError {}

/// What every keyed table tells about itself, whichever kind it is (in a
/// `static` or on the heap, shared or one owner's): for exports and
/// dashboards ([`Exposition::keyed`](crate::export::Exposition::keyed)
/// takes any of them).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyedTable, LocalKeyedGate};
/// use leaparray::KeyedGate;
/// fn fill(t: &impl KeyedTable, now: u64) -> f64 {
///     t.occupancy(now).resident as f64 / t.capacity() as f64
/// }
/// let w = NonZeroU64::new(500).unwrap();
/// let shared = KeyedGate::<2, 64>::new(w, 10);
/// let _ = shared.try_acquire(1, 0, 1);
/// let local = LocalKeyedGate::<2, 64>::new(w, 10);
/// assert_eq!((fill(&shared, 0), fill(&local, 0)), (1.0 / 64.0, 0.0));
/// ```
pub trait KeyedTable {
    /// The per-key limit.
    fn limit(&self) -> u64;
    /// The number of key slots.
    fn capacity(&self) -> usize;
    /// The slots in use at `now` and the table's counters (a scan of every
    /// slot).
    fn occupancy(&self, now: u64) -> Occupancy;
}

/// A shared reference to a table is one too.
impl<T: KeyedTable + ?Sized> KeyedTable for &T {
    fn limit(&self) -> u64 {
        (**self).limit()
    }
    fn capacity(&self) -> usize {
        (**self).capacity()
    }
    fn occupancy(&self, now: u64) -> Occupancy {
        (**self).occupancy(now)
    }
}

/// Each table's inherent methods, as a [`KeyedTable`].
macro_rules! keyed_table {
    ($([$($gen:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($gen)*> KeyedTable for $ty {
            fn limit(&self) -> u64 {
                <$ty>::limit(self)
            }
            fn capacity(&self) -> usize {
                <$ty>::capacity(self)
            }
            fn occupancy(&self, now: u64) -> Occupancy {
                <$ty>::occupancy(self, now)
            }
        }
    )*};
}
keyed_table!(
    [const N: usize, const CAP: usize] KeyedGate<N, CAP>,
    [const N: usize, const CAP: usize] LocalKeyedGate<N, CAP>,
);
#[cfg(feature = "alloc")]
keyed_table!(
    [const N: usize] HeapKeyedGate<N>,
    [const N: usize] HeapLocalKeyedGate<N>,
);

/// What a key has left just after a decision, and when that resets: see
/// [`KeyedGate::try_acquire_headroom`]. The two numbers of an IETF
/// `RateLimit` field's member (`r` and `t`).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::Headroom;
/// use leaparray::KeyedGate;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
/// let (_, h) = T.try_acquire_headroom(1, 100, 1);
/// assert_eq!(h, Headroom { remaining: 2, reset: Some(900) }); // window 0 leaves at 1,000
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Headroom {
    /// Permits the key could still take: what
    /// [`remaining`](KeyedGate::remaining) answers.
    pub remaining: u64,
    /// Ticks until the key's whole limit would pass: what
    /// [`retry_after`](KeyedGate::retry_after) answers for `limit`
    /// permits. `None`: not by `u64::MAX` (a `now` near the end of time);
    /// `Some(0)` with a limit of 0.
    pub reset: Option<u64>,
}

/// How a keyed table's slots are occupied, what a dashboard shows: see
/// [`KeyedGate::occupancy`] and [`LocalKeyedGate::occupancy`].
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::Occupancy;
/// use leaparray::KeyedGate;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
/// let _ = T.try_acquire(1, 0, 1);
/// let s = T.occupancy(0);
/// assert_eq!(s, Occupancy { resident: 1, recyclable: 0, recycled: 0, overflowed: 0, evicted: 0, remembered: 0 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Occupancy {
    /// Slots holding a key's gate word now (claims not yet settled are not
    /// counted).
    pub resident: usize,
    /// Of those, the ones recyclable at the time asked: their key has been
    /// idle for two intervals.
    pub recyclable: usize,
    /// Slots taken from an idle key for a new one, since the table was
    /// built.
    pub recycled: u64,
    /// Decisions made under the [`Overflow`] policy with no slot taken
    /// (no room for the key, and no eviction).
    pub overflowed: u64,
    /// Keys evicted ([`Overflow::Evict`]) since the table was built.
    pub evicted: u64,
    /// Keys inserted since the table was built with counts estimated from
    /// the memory of evicted keys: keys that came back after an eviction
    /// (or shared cells with one).
    pub remembered: u64,
}

/// The panic message of `new` for a limit that does not fit, per `N`
/// (index `N - 1`), naming the table type and the largest limit for that
/// `N`. A `const fn` can panic with a `&str` but cannot format one, so each
/// message is written out (`tests`: each names `max_limit()`).
macro_rules! too_large {
    ($ty:literal) => {
        too_large!(@ $ty;
            "1" "2,147,483,647", "2" "32,767", "3" "1,023", "4" "127", "5" "63",
            "6" "31", "7" "15", "8" "7", "9" "7", "10" "7", "11" "3", "12" "3",
            "13" "3", "14" "3", "15" "3", "16" "1", "17" "1", "18" "1", "19" "1",
            "20" "1", "21" "1", "22" "1", "23" "1", "24" "1", "25" "1", "26" "1",
            "27" "1", "28" "1", "29" "1", "30" "1", "31" "1")
    };
    (@ $ty:literal; $($n:literal $max:literal),*) => {
        [$(concat!(
            $ty,
            "::new: the limit does not fit a key slot's word; for N = ",
            $n,
            " the largest is ",
            $max
        )),*]
    };
}

/// `KeyedGate::new`'s panic for a limit that does not fit, per `N - 1`.
const SHARED_TOO_LARGE: [&str; 31] = too_large!("KeyedGate");
/// `LocalKeyedGate::new`'s panic for a limit that does not fit, per `N - 1`.
const LOCAL_TOO_LARGE: [&str; 31] = too_large!("LocalKeyedGate");
/// `HeapKeyedGate::new`'s panic for a limit that does not fit, per `N - 1`.
#[cfg(feature = "alloc")]
const HEAP_TOO_LARGE: [&str; 31] = too_large!("HeapKeyedGate");
/// `HeapLocalKeyedGate::new`'s panic for a limit that does not fit, per `N - 1`.
#[cfg(feature = "alloc")]
const HEAP_LOCAL_TOO_LARGE: [&str; 31] = too_large!("HeapLocalKeyedGate");

#[cfg(test)]
mod tests {
    extern crate std;
    use std::format;

    use super::{KeyedGate, LOCAL_TOO_LARGE, SHARED_TOO_LARGE};

    /// Each message names the largest limit `max_limit()` gives for its
    /// `N`, with thousands separators.
    #[test]
    fn too_large_messages_name_max_limit() {
        fn check<const N: usize>() {
            let max = KeyedGate::<N, 1>::max_limit();
            let mut digits = format!("{max}");
            let mut grouped = std::string::String::new();
            while digits.len() > 3 {
                let tail = digits.split_off(digits.len() - 3);
                grouped = format!(",{tail}{grouped}");
            }
            let grouped = format!("{digits}{grouped}");
            let end = format!("for N = {N} the largest is {grouped}");
            assert!(
                SHARED_TOO_LARGE[N - 1].ends_with(&end),
                "{}",
                SHARED_TOO_LARGE[N - 1]
            );
            assert!(SHARED_TOO_LARGE[N - 1].starts_with("KeyedGate::new: "));
            assert!(
                LOCAL_TOO_LARGE[N - 1].ends_with(&end),
                "{}",
                LOCAL_TOO_LARGE[N - 1]
            );
            assert!(LOCAL_TOO_LARGE[N - 1].starts_with("LocalKeyedGate::new: "));
        }
        macro_rules! each {
            ($($n:literal)*) => { $(check::<$n>();)* };
        }
        each!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    }
}
