//! Per-key limits in fixed memory: [`KeyedGate`].
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
//! use leaparray::keyed::KeyedGate;
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
//! applies its [`Overflow`] policy: by default it refuses.
//!
//! # One slot per key: claims and settling
//!
//! A key's probe has several slots, and whether a slot is recyclable
//! depends on the caller's clock. So two threads inserting the same key
//! can disagree on which slot is the first free one:
//!
//! ```text
//!  Thread 1 (now = t)                    Thread 2 (now = t + 3 windows)
//!  -----------------------------------   -----------------------------------
//!  scan K's probe: slot 0 holds key X,
//!  live at t; slot 1 free
//!                                        scan K's probe: slot 0 holds X,
//!                                        idle for 2N windows at t + 3: take it
//!                                        swap slot 0: X -> K
//!  swap slot 1: free -> K
//!  K is in two slots: each admits up to the limit
//! ```
//!
//! So an insertion first writes a *claim*, and a claim becomes the key's
//! gate word only once it is *settled*: every other slot of the probe is
//! read, and
//! - if one holds the key's gate word, or an earlier claim of the key (in
//!   probe order), this claim is withdrawn (swapped back to free);
//! - a later claim of the key is withdrawn by this settler;
//! - otherwise the claim is swapped for an empty gate word.
//!
//! Withdrawing and settling swap from the exact claim (its token is unique:
//! a table-wide counter), so a claim settles at most once, and never after
//! it was withdrawn. Any thread that meets a claim settles it (the claiming
//! thread may be preempted, or be the code an interrupt handler
//! interrupted), so no thread ever waits for another.
//!
//! Why two claims of one key never both settle: say claims at probe
//! positions `i < j` both did. The settler of `j` read slot `i` and did not
//! see the claim there (it would have withdrawn `j`), so claim `i` was
//! written after that read, after claim `j` was written. The settler of `i`
//! then read slot `j` after claim `j` was written: it saw the claim (and
//! withdrew it, so `j` never settled) or its gate word (and withdrew `i`).
//! Either way one of them did not settle. A settled word and a later claim
//! are the same argument with the settled word in place of the claim. These
//! races are loom models (`loom-tests/tests/keyed.rs`).
//!
//! # Recycling never hands a key a fresh limit
//!
//! A recycled key's permits count in windows at least `2N` before the
//! recycler's window `r`. Before recycling, the recycler raises the
//! table's *high-water* window to `r` at least; a claim settles into an
//! empty word whose newest window is `max(caller, high water) - N`. A
//! caller earlier than that window is a late caller and books into it (as a
//! [`Gate`] books its late callers). So a key that comes back after it was
//! recycled counts its new permits in windows at least `r - N`, and no
//! interval of `N` windows holds both its old and its new permits.
//!
//! The recycler's swap releases the slot, and the settler read that slot
//! (it reads every slot of the probe) with acquire before reading the high
//! water: the high water it reads is at least `r`.
//!
//! # Exactness
//!
//! In every interval of `N` windows, each key has at most `limit` permits
//! counted, under any interleaving, with [`Overflow::Refuse`]: a permit is
//! counted in a window no earlier than its caller's own and no later than
//! the newest window any caller of the table had reached (as a [`Gate`]
//! counts late callers), and within the ranges of the gate's word (no
//! caller lagging the newest window by `2^(T-1)` windows or more; `T = 64 -
//! 1 - N b`, at least 32).
//!
//! While its probe has room, a key is decided exactly as a [`Gate`] of its
//! own (with no occupy timeout) would decide it, for callers whose window
//! is no more than `N` windows before the newest window any caller of the
//! table had reached. A caller further behind may be decided otherwise:
//! after its key was recycled by a caller `2N` windows or more ahead, it is
//! booked from the high water on, and may be admitted where its own gate,
//! still holding the old permits, would refuse (the permits count in
//! different windows, so no interval holds more than `limit`). The high
//! water only grows: one recycling caller with a far-future clock makes
//! every key inserted after it start `N` windows before that time (booked
//! there, as a [`Gate`]'s late callers are after a far-future caller:
//! stricter, never looser).
//!
//! [`Gate`]: crate::Gate

use core::fmt;
use core::num::NonZeroU64;

use crossbeam_utils::CachePadded;

use crate::decision::Decision;
use crate::divide::Divisor;
use crate::packed::{self, Fast, Layout, Outcome};
use crate::sync::{
    const_fn_unless_loom, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
    SlotWord,
};

/// Slots a key may live in: its home slot and the `PROBE - 1` after it
/// (or all `CAP` slots if there are fewer): 256 bytes, four 64-byte cache
/// lines' worth (five lines when the home slot does not start one).
pub const PROBE: usize = 16;

/// The top bit of a slot's word: set in every gate word.
pub(crate) const USED: u64 = 1 << 63;

/// What a [`KeyedGate`] decides for a key that has no slot and no room in
/// its probe (every slot there holds a key that is not recyclable yet).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyedGate, Overflow};
/// use leaparray::Decision;
/// // One slot: the second key finds no room.
/// let t = KeyedGate::<2, 1>::new(NonZeroU64::new(500).unwrap(), 10);
/// assert_eq!(t.overflow(), Overflow::Refuse);
/// assert_eq!(t.try_acquire(1, 0, 1), Decision::Pass);
/// assert_eq!(t.try_acquire(2, 0, 1), Decision::Block);
/// let open = KeyedGate::<2, 1>::new(NonZeroU64::new(500).unwrap(), 10).with_overflow(Overflow::Admit);
/// assert_eq!(open.try_acquire(1, 0, 1), Decision::Pass);
/// assert_eq!(open.try_acquire(2, 0, 1), Decision::Pass);
/// assert_eq!(open.stats(0).overflowed, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Overflow {
    /// Refuse it (fail closed): no key is ever admitted beyond its own
    /// limit, and a flood of new keys gets nothing. The default.
    #[default]
    Refuse,
    /// Admit it without counting it anywhere (fail open): availability
    /// over limits. A key with no slot is not limited at all.
    Admit,
}

/// Why [`KeyedGate::try_new`] refused its parameters (and why a gate
/// built by [`KeyedGate::new`] with them refuses every request: see
/// [`KeyedGate::error`]).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyedError, KeyedGate};
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
        /// The largest limit a `KeyedGate<N, _>` takes.
        max: u64,
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
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for KeyedError {}

/// What a key has left just after a decision: see
/// [`KeyedGate::try_acquire_quota`]. The two numbers of an IETF
/// `RateLimit` field's member (`r` and `t`).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyedGate, Quota};
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
/// let (_, q) = T.try_acquire_quota(1, 100, 1);
/// assert_eq!(q, Quota { remaining: 2, reset: Some(900) }); // window 0 leaves at 1,000
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Quota {
    /// Permits the key could still take: what
    /// [`remaining`](KeyedGate::remaining) answers.
    pub remaining: u64,
    /// Ticks until the key's whole limit would pass: what
    /// [`retry_after`](KeyedGate::retry_after) answers for `limit`
    /// permits. `None`: not by `u64::MAX` (a `now` near the end of time),
    /// or never (a misconfigured table); `Some(0)` with a limit of 0.
    pub reset: Option<u64>,
}

/// What a dashboard shows of a [`KeyedGate`]: see [`KeyedGate::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Slots holding a key's gate word now (claims not yet settled are not
    /// counted).
    pub resident: usize,
    /// Of those, the ones recyclable at the time asked: their key has been
    /// idle for two intervals.
    pub recyclable: usize,
    /// Slots taken from an idle key for a new one, since the table was
    /// built.
    pub recycled: u64,
    /// Decisions made under the [`Overflow`] policy (no room for the key).
    pub overflowed: u64,
}

/// A [`Gate`](crate::Gate) per key, for up to `CAP` keys at a time, in
/// `16 * CAP` bytes fixed at compile time: `N` windows per interval, keys
/// are `u64` (hash other keys with `KeyHasher` or your own keyed hash).
/// See the [module docs](self) for where keys live, what happens when the
/// table is full, and the exactness guarantee.
///
/// Limits up to `2^b - 1` with `b = 31 / N` (32,767 for `N = 2`); windows
/// and times as for a `Gate`.
///
/// Memory: `CAP * 16` bytes of slots plus at most 400 bytes (the
/// table-wide counters on cache lines of their own). Built by value:
/// keep a large table in a `static` (a `let` puts it on the stack).
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::KeyedGate;
/// use leaparray::Decision;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
/// assert_eq!(T.try_acquire(7, 0, 3), Decision::Pass);
/// assert_eq!(T.try_acquire(7, 999, 1), Decision::Block);
/// assert_eq!(T.try_acquire(7, 1_000, 3), Decision::Pass); // window 0 slid out
/// assert_eq!(T.remaining(7, 1_000), 0);
/// assert_eq!(T.remaining(8, 1_000), 3);
/// ```
pub struct KeyedGate<const N: usize, const CAP: usize> {
    /// Encoding: the key in the high 64 bits, the word in the low 64: the
    /// word is 0 (free), a gate word (top bit set; `packed`'s layout with
    /// `F = 0`), or a claim's token (top bit clear, not 0). Invariant: at
    /// most one slot of a key's probe holds its gate word (module docs).
    slots: [SlotWord; CAP],
    layout: Layout,
    error: Option<KeyedError>,
    seed: u64,
    overflow: Overflow,
    /// Written by insertions, recycling and overflows only: on cache lines
    /// of their own, away from what every decision reads.
    shared: CachePadded<Shared>,
}

/// A [`KeyedGate`]'s table-wide counters.
struct Shared {
    /// The newest window any recycler had reached when it recycled (0 if
    /// none): a key that comes back books no earlier than `N` windows
    /// before it.
    high_water: AtomicU64,
    /// The last claim token handed out.
    tokens: AtomicU64,
    recycled: AtomicU64,
    overflowed: AtomicU64,
}

impl<const N: usize, const CAP: usize> fmt::Debug for KeyedGate<N, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedGate")
            .field("windows", &N)
            .field("capacity", &CAP)
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("overflow", &self.overflow)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// What [`KeyedGate::try_acquire`] did.
enum Booking {
    /// Booked: the window it booked into and the gate word it stored.
    In { at: u64, word: u64 },
    /// Refused by the key's gate (or a misconfigured table).
    Refused,
    /// No room for the key: the overflow policy decides.
    Overflowed,
    /// `n == 0`.
    Nothing,
}

#[cfg(feature = "defmt")]
impl<const N: usize, const CAP: usize> defmt::Format for KeyedGate<N, CAP> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "KeyedGate {{ windows: {=usize}, capacity: {=usize}, window: {=u64}, limit: {=u64}, overflow: {}, error: {} }}",
            N,
            CAP,
            self.window(),
            self.limit(),
            self.overflow,
            self.error
        );
    }
}

/// The seed [`KeyedGate::new`] mixes keys with.
pub(crate) const DEFAULT_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// The word of a slot.
#[inline(always)]
const fn word(slot: u128) -> u64 {
    slot as u64
}

/// The key of a slot.
#[inline(always)]
const fn key_of(slot: u128) -> u64 {
    (slot >> 64) as u64
}

/// The slot holding `key` and `word`.
#[inline(always)]
const fn slot(key: u64, word: u64) -> u128 {
    ((key as u128) << 64) | word as u128
}

/// A claim's word (a token), as opposed to a gate word or a free slot.
#[inline(always)]
const fn is_claim(w: u64) -> bool {
    w != 0 && w & USED == 0
}

/// MurmurHash3's 64-bit finalizer: every input bit moves every output bit.
#[inline(always)]
const fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

// The rules a slot follows, shared by `KeyedGate` and `OwnedKeyedGate`
// (`owned.rs`): one source for the word's layout, where a key lives, one
// decision, and when a slot may be recycled.

/// The layout of a slot's word for `N` windows of `window` ticks and
/// `limit`, or an unpacked layout and why the limit does not fit.
pub(crate) const fn layout_of<const N: usize>(
    window: NonZeroU64,
    limit: u64,
) -> (Layout, Option<KeyedError>) {
    let div = Divisor::new(window);
    let live = if N > u32::MAX as usize {
        u32::MAX
    } else {
        N as u32
    };
    match Layout::fit(64, live, div, limit, 0) {
        Some(layout) => (layout, None),
        None => (
            Layout::unpacked(live, div, limit, 0),
            Some(KeyedError::LimitTooLarge {
                max: max_limit_of::<N>(),
            }),
        ),
    }
}

/// The largest limit a slot's word takes for `N` windows.
pub(crate) const fn max_limit_of<const N: usize>() -> u64 {
    let live = if N > u32::MAX as usize {
        u32::MAX
    } else {
        N as u32
    };
    match Layout::fit(64, live, Divisor::new(NonZeroU64::MIN), 0, 0) {
        Some(l) => {
            if l.slot_max > crate::MAX_COUNT {
                crate::MAX_COUNT
            } else {
                l.slot_max
            }
        }
        None => 0,
    }
}

/// Slots in a probe of a table of `CAP` slots.
pub(crate) const fn probe_len(cap: usize) -> usize {
    if cap < PROBE {
        cap
    } else {
        PROBE
    }
}

/// Windows of grace for `N` windows: a slot is recyclable `N + GRACE`
/// windows after its newest window.
pub(crate) const fn grace<const N: usize>() -> u64 {
    N as u64
}

/// The slot where `key`'s probe starts in a table of `CAP` slots.
#[inline(always)]
pub(crate) fn home_of<const CAP: usize>(seed: u64, key: u64) -> usize {
    // Lemire's multiply-shift: uniform over 0..CAP, no division.
    ((u128::from(mix(key ^ seed)) * CAP as u128) >> 64) as usize
}

/// The `i`-th slot of the probe starting at `home`.
#[inline(always)]
pub(crate) fn at<const CAP: usize>(home: usize, i: usize) -> usize {
    let j = home + i;
    if j >= CAP {
        j - CAP
    } else {
        j
    }
}

/// One decision on the gate word `w` (`packed::decide`) for a caller in
/// window `c`: with constant shifts on 64-bit targets, from the layout
/// elsewhere (one copy of the code on microcontrollers, as `Gate` does).
/// No time: a keyed table never borrows a later window, the only use
/// `packed::decide` has for one.
#[inline(always)]
pub(crate) fn decide<const N: usize>(
    layout: &Layout,
    w: u64,
    c: u64,
    n: u64,
) -> Option<(u64, Outcome)> {
    #[cfg(target_pointer_width = "64")]
    let l = packed::Fixed::<u64, N, 0>::new(layout);
    #[cfg(not(target_pointer_width = "64"))]
    let l = layout;
    // A key decided again in its newest window, or seen again after its
    // windows slid out: no decoding of the other windows.
    match packed::decide_fast(l, w, c, n) {
        Fast::Book(new) => Some((new, Outcome::Booked(c))),
        Fast::Full => None,
        Fast::Other => packed::decide::<u64, N>(l, w, c, 0, n, false),
    }
}

/// Whether the gate word `w` is recyclable by a caller in window `c`: its
/// newest window is `N + GRACE` windows or more before `c`.
pub(crate) fn recyclable<const N: usize>(layout: &Layout, w: u64, c: u64) -> bool {
    matches!(packed::ahead_of(layout, w, c), Some(d) if d >= N as u64 + grace::<N>())
}

/// `remaining` from what a lookup at window `c` found: the key's gate
/// word, if any, and whether its probe has room for it otherwise.
pub(crate) fn remaining_from<const N: usize>(
    l: &Layout,
    found: (Option<u64>, bool),
    overflow: Overflow,
    c: u64,
) -> u64 {
    match found {
        (Some(w), _) => l.limit.saturating_sub(packed::load_of::<u64, N>(l, w, c)),
        (None, true) => l.limit,
        (None, false) => match overflow {
            Overflow::Refuse => 0,
            Overflow::Admit => l.limit,
        },
    }
}

/// `retry_after(n)` (`1 <= n <= limit`) from what a lookup at window `c`
/// found (as [`remaining_from`]); `probe` gives the words of the key's
/// probe, read only for a key with no slot and no room.
pub(crate) fn retry_after_from<const N: usize, I: Iterator<Item = u64>>(
    l: &Layout,
    found: (Option<u64>, bool),
    overflow: Overflow,
    c: u64,
    now: u64,
    n: u64,
    probe: impl FnOnce() -> I,
) -> Option<u64> {
    match found {
        (Some(w), _) => packed::retry_after_of::<u64, N>(l, w, now, n),
        (None, true) => Some(0),
        (None, false) => match overflow {
            Overflow::Admit => Some(0),
            // Every slot of the probe holds a gate word: the first to
            // become recyclable.
            Overflow::Refuse => probe()
                .filter_map(|w| {
                    let newest = packed::newest_of(l, w, c);
                    let free = newest.checked_add(N as u64 + grace::<N>())?;
                    free.checked_mul(l.window.get())
                })
                .min()
                .map(|t| t.saturating_sub(now)),
        },
    }
}

impl<const N: usize, const CAP: usize> KeyedGate<N, CAP> {
    /// Slots in a probe.
    const PROBE: usize = probe_len(CAP);

    /// Windows of grace: a slot is recyclable `N + GRACE` windows after its
    /// newest window.
    const GRACE: u64 = grace::<N>();

    const_fn_unless_loom! {
        /// A table of `CAP` keys, each admitted at most `limit` permits per
        /// interval of `N` windows of `window` ticks; [`Overflow::Refuse`]
        /// when a key finds no room.
        ///
        /// A limit that does not fit a slot builds a table that refuses
        /// every request for permits (`n >= 1`) and says why in
        /// [`error`](Self::error);
        /// [`try_new`](Self::try_new) returns the error instead. `1 <= N <=
        /// 31` (a slot's word has 31 bits for `N` windows' counts) and `CAP
        /// >= 1`, checked at compile time.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::keyed::{KeyedError, KeyedGate};
        /// let t = KeyedGate::<2, 8>::new(NonZeroU64::new(500).unwrap(), 100);
        /// assert_eq!((t.limit(), t.window(), t.error()), (100, 500, None));
        /// let bad = KeyedGate::<2, 8>::new(NonZeroU64::new(500).unwrap(), 1 << 20);
        /// assert_eq!(bad.error(), Some(KeyedError::LimitTooLarge { max: 32_767 }));
        /// assert_eq!(bad.try_acquire(1, 0, 1), leaparray::Decision::Block);
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64, limit: u64) -> Self {
            const {
                assert!(
                    N > 0 && N <= 31 && CAP > 0,
                    "KeyedGate<N, CAP> needs 1 <= N <= 31 and CAP >= 1"
                );
                assert!(
                    crate::sync::SLOT_INTERRUPT_SAFE,
                    "leaparray: on this target a KeyedGate slot (portable-atomic's AtomicU128) \
                     is a global spin lock, and a handler that uses the table while the code it \
                     interrupted holds the lock deadlocks. On a single-core chip enable \
                     portable-atomic's `unsafe-assume-single-core` (or `critical-section` where \
                     there is no CAS); if no interrupt or signal handler ever uses the table, \
                     enable leaparray's `portable-atomic-fallback-not-interrupt-safe` feature."
                );
            };
            let (layout, error) = layout_of::<N>(window, limit);
            KeyedGate {
                slots: crate::sync::array_of!(CAP, SlotWord::new(0)),
                layout,
                error,
                seed: DEFAULT_SEED,
                overflow: Overflow::Refuse,
                shared: CachePadded::new(Shared {
                    high_water: crate::sync::atomic_u64(0),
                    tokens: crate::sync::atomic_u64(0),
                    recycled: crate::sync::atomic_u64(0),
                    overflowed: crate::sync::atomic_u64(0),
                }),
            }
        }
    }

    /// [`new`](Self::new), or the reason the parameters do not fit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::KeyedGate;
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(KeyedGate::<2, 8>::try_new(w, 32_767).is_ok());
    /// assert!(KeyedGate::<2, 8>::try_new(w, 32_768).is_err());
    /// ```
    pub fn try_new(window: NonZeroU64, limit: u64) -> Result<Self, KeyedError> {
        let t = Self::new(window, limit);
        match t.error {
            Some(e) => Err(e),
            None => Ok(t),
        }
    }

    /// The largest limit a `KeyedGate<N, _>` takes: `2^b - 1`, `b = 31 / N`
    /// bits (capped at 47).
    ///
    /// ```
    /// use leaparray::keyed::KeyedGate;
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
        /// use leaparray::keyed::KeyedGate;
        /// static T: KeyedGate<2, 64> =
        ///     KeyedGate::new(NonZeroU64::new(500).unwrap(), 10).with_seed(0x5eed);
        /// assert_eq!(T.try_acquire(1, 0, 1), leaparray::Decision::Pass);
        /// ```
        #[must_use]
        pub fn with_seed(self, seed: u64) -> Self {
            KeyedGate { seed, ..self }
        }
    }

    const_fn_unless_loom! {
        /// The same table with `policy` for keys that find no room.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::keyed::{KeyedGate, Overflow};
        /// let t = KeyedGate::<2, 64>::new(NonZeroU64::new(500).unwrap(), 10)
        ///     .with_overflow(Overflow::Admit);
        /// assert_eq!(t.overflow(), Overflow::Admit);
        /// ```
        #[must_use]
        pub fn with_overflow(self, policy: Overflow) -> Self {
            KeyedGate { overflow: policy, ..self }
        }
    }

    /// The per-key limit.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).limit(), 5);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.layout.limit
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).window(), 9);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.layout.window.get()
    }

    /// The overflow policy.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{KeyedGate, Overflow};
    /// let t = KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5);
    /// assert_eq!(t.overflow(), Overflow::Refuse);
    /// ```
    #[must_use]
    pub const fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// Why this table refuses every request, if it does (a limit that does
    /// not fit; see [`new`](Self::new)).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).error(), None);
    /// ```
    #[must_use]
    pub const fn error(&self) -> Option<KeyedError> {
        self.error
    }

    /// Slots in the table: the most keys it holds at once.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::keyed::KeyedGate;
    /// assert_eq!(KeyedGate::<2, 4>::new(NonZeroU64::new(9).unwrap(), 5).capacity(), 4);
    /// ```
    #[must_use]
    pub const fn capacity(&self) -> usize {
        CAP
    }

    /// The slot where `key`'s probe starts.
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        home_of::<CAP>(self.seed, key)
    }

    /// The `i`-th slot of the probe starting at `home`.
    #[inline(always)]
    fn at(home: usize, i: usize) -> usize {
        at::<CAP>(home, i)
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
    /// use leaparray::keyed::KeyedGate;
    /// use leaparray::Decision;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(T.try_acquire(1, 0, 2), Decision::Pass);
    /// assert_eq!(T.try_acquire(1, 0, 1), Decision::Block);
    /// assert_eq!(T.try_acquire(2, 0, 2), Decision::Pass); // its own limit
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision {
        self.decision(self.book(key, now, n))
    }

    /// [`try_acquire`](Self::try_acquire), and what `key` has left: the
    /// decision, and the [`Quota`] that [`remaining`](Self::remaining) and
    /// [`retry_after`](Self::retry_after) (for `limit` permits) answer at
    /// `now` just after it if nothing else arrives in between. After a
    /// booking both are read from the word the booking stored, with no
    /// second look at the table: the key's quota as of its booking (other
    /// threads' later bookings are not in it, as they would not be in a
    /// look made just then). A late caller's booking goes into the key's
    /// newest window, and its `reset` counts from there. Otherwise they
    /// are a second look.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::{KeyedGate, Quota};
    /// use leaparray::Decision::{Block, Pass};
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 3);
    /// let q = |remaining, reset| Quota { remaining, reset: Some(reset) };
    /// assert_eq!(T.try_acquire_quota(1, 0, 2), (Pass, q(1, 1_000)));
    /// assert_eq!(T.try_acquire_quota(1, 600, 2), (Block, q(1, 400)));
    /// assert_eq!(T.try_acquire_quota(1, 1_000, 2), (Pass, q(1, 1_000))); // window 0 slid out
    /// assert_eq!(T.try_acquire_quota(1, 900, 1), (Pass, q(0, 1_100))); // late: into window 2
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire_quota(&self, key: u64, now: u64, n: u64) -> (Decision, Quota) {
        let l = &self.layout;
        let c = l.window.div(now);
        let b = self.book_from(key, self.home(key), None, c, n);
        let quota = match b {
            // `at`, the window booked, is the word's newest (a keyed table
            // never books a later one) and holds the booking.
            Booking::In { at, word } => Quota {
                remaining: packed::left_of::<u64, N>(l, word, c),
                reset: packed::reset_of(l, at, now),
            },
            _ => Quota {
                remaining: self.remaining(key, now),
                reset: self.retry_after(key, now, l.limit),
            },
        };
        (self.decision(b), quota)
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
    /// use leaparray::keyed::KeyedGate;
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
        const AHEAD: usize = 16;
        let len = requests.len().min(decisions.len());
        // One window for the whole burst: one division, not one a request.
        let c = self.layout.window.div(now);
        for (reqs, outs) in requests[..len]
            .chunks(AHEAD)
            .zip(decisions[..len].chunks_mut(AHEAD))
        {
            let mut homes = [0usize; AHEAD];
            let mut firsts = [0u128; AHEAD];
            for (i, &(key, _)) in reqs.iter().enumerate() {
                homes[i] = self.home(key);
                firsts[i] = self.slots[homes[i]].load(Acquire);
            }
            for (i, (&(key, n), out)) in reqs.iter().zip(outs.iter_mut()).enumerate() {
                *out = self.decision(self.book_from(key, homes[i], Some(firsts[i]), c, n));
            }
        }
        len
    }

    /// The decision a booking means, under the overflow policy.
    #[inline(always)]
    fn decision(&self, b: Booking) -> Decision {
        match b {
            Booking::In { .. } | Booking::Nothing => Decision::Pass,
            Booking::Refused => Decision::Block,
            Booking::Overflowed => match self.overflow {
                Overflow::Refuse => Decision::Block,
                Overflow::Admit => Decision::Pass,
            },
        }
    }

    /// The decision, and the window it booked into.
    #[inline]
    fn book(&self, key: u64, now: u64, n: u64) -> Booking {
        let c = self.layout.window.div(now);
        self.book_from(key, self.home(key), None, c, n)
    }

    /// [`book`](Self::book), given the key's home and maybe the value of
    /// its home slot read earlier. A stale value costs a failed swap when
    /// it leads to a booking; a refusal or an overflow it led to is decided
    /// again from a fresh read, so every decision of a burst is made on the
    /// table as the requests before it left it.
    #[inline(always)]
    fn book_from(&self, key: u64, home: usize, first: Option<u128>, c: u64, n: u64) -> Booking {
        let b = match self.book_scan(key, home, first, c, n) {
            Booking::Refused | Booking::Overflowed if first.is_some() => {
                self.book_scan(key, home, None, c, n)
            }
            b => b,
        };
        if let Booking::Overflowed = b {
            self.shared.overflowed.fetch_add(1, Relaxed);
        }
        b
    }

    /// [`book_from`](Self::book_from), taking `first` at its word.
    #[inline(always)]
    fn book_scan(&self, key: u64, home: usize, mut first: Option<u128>, c: u64, n: u64) -> Booking {
        if n == 0 {
            return Booking::Nothing;
        }
        let l = &self.layout;
        if self.error.is_some() || n > l.limit {
            // Never admitted: no slot for it either.
            return Booking::Refused;
        }
        'scan: loop {
            // Whether this pass's read of the home slot is `first`.
            let early = first.is_some();
            // The first slot a new key may take, and a claim of another key
            // in the way (settled before overflowing, so a table with room
            // never overflows for a claim in flight).
            let mut room = None;
            let mut claim = None;
            for i in 0..Self::PROBE {
                let at = Self::at(home, i);
                let mut s = match first.take() {
                    Some(s) => s,
                    None => self.slots[at].load(Acquire),
                };
                let w = word(s);
                if w == 0 {
                    if room.is_none() {
                        room = Some((at, s));
                    }
                    continue;
                }
                if key_of(s) == key {
                    if is_claim(w) {
                        self.settle(key, i, s, c);
                        continue 'scan;
                    }
                    // The key's gate word: decide as its gate.
                    loop {
                        let w = word(s);
                        let Some((new, outcome)) = self.decide(w, c, n) else {
                            return Booking::Refused;
                        };
                        // ORDERING: Release publishes the booking as a
                        // gate's swap does; a failed swap rereads.
                        match self.slots[at].compare_exchange(s, slot(key, new), AcqRel, Acquire) {
                            Ok(_) => {
                                // No prioritized request borrows here.
                                let at = match outcome {
                                    Outcome::Booked(w) => w,
                                    Outcome::Borrowed { .. } | Outcome::Refused => c,
                                };
                                return Booking::In { at, word: new };
                            }
                            Err(actual) => s = actual,
                        }
                        if key_of(s) != key || word(s) & USED == 0 {
                            // Recycled, or withdrawn: look again.
                            continue 'scan;
                        }
                    }
                }
                if is_claim(w) {
                    if claim.is_none() {
                        claim = Some((i, s));
                    }
                } else if room.is_none() && self.recyclable(w, c) {
                    room = Some((at, s));
                }
            }
            if let Some((at, s)) = room {
                let recycling = word(s) != 0;
                if recycling && early && at == home && self.slots[at].load(Acquire) != s {
                    // The home slot's value came from before a burst's
                    // earlier requests, and they changed it: look again
                    // rather than raise the high water for nothing.
                    continue 'scan;
                }
                if recycling {
                    // ORDERING: before the swap that evicts, so a settler
                    // that reads the evicted slot reads this too (module
                    // docs, "Recycling").
                    self.shared.high_water.fetch_max(c, AcqRel);
                }
                let mine = slot(key, self.token());
                if self.slots[at]
                    .compare_exchange(s, mine, AcqRel, Acquire)
                    .is_ok()
                {
                    if recycling {
                        self.shared.recycled.fetch_add(1, Relaxed);
                    }
                    let i = (at + CAP - home) % CAP;
                    self.settle(key, i, mine, c);
                }
                continue 'scan;
            }
            if let Some((i_other, s)) = claim {
                // Another key's claim: settle it, then look again.
                let other = key_of(s);
                let at = Self::at(home, i_other);
                let j = (at + CAP - self.home(other)) % CAP;
                self.settle(other, j, s, c);
                continue 'scan;
            }
            return Booking::Overflowed;
        }
    }

    /// [`decide`] with this table's layout.
    #[inline(always)]
    fn decide(&self, w: u64, c: u64, n: u64) -> Option<(u64, Outcome)> {
        decide::<N>(&self.layout, w, c, n)
    }

    /// A claim token no claim had: nonzero, top bit clear.
    fn token(&self) -> u64 {
        self.shared.tokens.fetch_add(1, Relaxed) % (USED - 1) + 1
    }

    /// Whether the gate word `w` is recyclable by a caller in window `c`:
    /// its newest window is `N + GRACE` windows or more before `c`.
    fn recyclable(&self, w: u64, c: u64) -> bool {
        recyclable::<N>(&self.layout, w, c)
    }

    /// Settles the claim `mine` of `key` at position `i` of its probe
    /// (module docs): withdraws it if the probe holds the key's gate word
    /// or an earlier claim of it, withdraws later claims of it, and
    /// otherwise swaps it for an empty gate word. Whoever meets a claim may
    /// call this; all but one of the swaps from `mine` fail.
    fn settle(&self, key: u64, i: usize, mine: u128, c: u64) {
        let home = self.home(key);
        let at = Self::at(home, i);
        for j in 0..Self::PROBE {
            if j == i {
                continue;
            }
            let other = Self::at(home, j);
            let mut s = self.slots[other].load(Acquire);
            loop {
                let w = word(s);
                if key_of(s) != key || w == 0 {
                    break;
                }
                if w & USED != 0 || j < i {
                    // The key's gate word, or an earlier claim: this one
                    // goes (a failed swap: it had already gone, or settled
                    // by someone who saw none of this).
                    let _ = self.slots[at].compare_exchange(mine, 0, AcqRel, Acquire);
                    return;
                }
                // A later claim of the key goes.
                match self.slots[other].compare_exchange(s, 0, AcqRel, Acquire) {
                    Ok(_) => break,
                    Err(actual) => s = actual,
                }
            }
        }
        let from = c
            .max(self.shared.high_water.load(Acquire))
            .saturating_sub(Self::GRACE);
        let empty = packed::empty_at::<u64>(&self.layout, from);
        let _ = self.slots[at].compare_exchange(mine, slot(key, empty), AcqRel, Acquire);
    }

    /// The gate word `key` holds (the first slot of its probe that holds
    /// it), if any, and whether its probe has room for it otherwise.
    fn find(&self, key: u64, c: u64) -> (Option<u64>, bool) {
        let home = self.home(key);
        let mut room = false;
        for i in 0..Self::PROBE {
            let s = self.slots[Self::at(home, i)].load(Acquire);
            let w = word(s);
            if w != 0 && key_of(s) == key {
                // A claim settles into an empty word.
                return (if is_claim(w) { None } else { Some(w) }, true);
            }
            room |= w == 0 || is_claim(w) || self.recyclable(w, c);
        }
        (None, room)
    }

    /// Permits `key` could still take at `now`: `limit` minus the fullest
    /// interval a booking would join (`limit` for a key with no slot; 0 if
    /// it has no room and the policy refuses). Books nothing. Like
    /// [`retry_after`](Self::retry_after), it assumes nothing else arrives:
    /// a claim of another key in flight counts as room.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// assert_eq!(T.remaining(1, 0), 10);
    /// let _ = T.try_acquire(1, 0, 4);
    /// assert_eq!(T.remaining(1, 600), 6); // window 0 still counts at 600
    /// ```
    #[must_use]
    pub fn remaining(&self, key: u64, now: u64) -> u64 {
        if self.error.is_some() {
            return 0;
        }
        let c = self.layout.window.div(now);
        remaining_from::<N>(&self.layout, self.find(key, c), self.overflow, c)
    }

    /// Exact ticks from `now` until `n` permits for `key` would be
    /// admitted if nothing else arrived: `Some(0)` if now; `None` if never
    /// (`n > limit`, or a table that refuses everything). A key with no
    /// room waits until the first slot of its probe becomes recyclable.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = T.try_acquire(1, 100, 10);
    /// assert_eq!(T.retry_after(1, 700, 1), Some(300)); // at 1,000 window 0 slides out
    /// assert_eq!(T.retry_after(2, 700, 1), Some(0));
    /// assert_eq!(T.retry_after(1, 700, 11), None);
    /// ```
    #[must_use]
    pub fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        let l = &self.layout;
        if self.error.is_some() || n > l.limit {
            return None;
        }
        let c = l.window.div(now);
        retry_after_from::<N, _>(l, self.find(key, c), self.overflow, c, now, n, || {
            let home = self.home(key);
            (0..Self::PROBE).map(move |i| word(self.slots[Self::at(home, i)].load(Acquire)))
        })
    }

    /// What a dashboard shows: keys resident and recyclable at `now` (a
    /// scan of every slot: `O(CAP)`), slots recycled and overflow decisions
    /// since the table was built.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::keyed::KeyedGate;
    /// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = T.try_acquire(1, 0, 1);
    /// let _ = T.try_acquire(2, 0, 1);
    /// let s = T.stats(0);
    /// assert_eq!((s.resident, s.recyclable, s.recycled, s.overflowed), (2, 0, 0, 0));
    /// assert_eq!(T.stats(2_000).recyclable, 2); // idle for two intervals
    /// ```
    #[must_use]
    pub fn stats(&self, now: u64) -> Stats {
        let c = self.layout.window.div(now);
        let mut s = Stats {
            recycled: self.shared.recycled.load(Relaxed),
            overflowed: self.shared.overflowed.load(Relaxed),
            ..Stats::default()
        };
        for cell in &self.slots {
            let w = word(cell.load(Acquire));
            if w & USED != 0 {
                s.resident += 1;
                if self.recyclable(w, c) {
                    s.recyclable += 1;
                }
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
        match self.book(key, now, n) {
            Booking::In { at, .. } => Ok(Some(at)),
            Booking::Refused | Booking::Nothing => Ok(None),
            Booking::Overflowed => Err(()),
        }
    }

    /// The first slot of `key`'s probe.
    pub fn loom_home(&self, key: u64) -> usize {
        self.home(key)
    }

    /// The slot index holding `key`'s gate word or a claim of it, for
    /// every slot that does.
    pub fn loom_slots_of(&self, key: u64) -> std::vec::Vec<usize> {
        (0..CAP)
            .filter(|&i| {
                let s = self.slots[i].load(Acquire);
                word(s) != 0 && key_of(s) == key
            })
            .collect()
    }
}

/// Keys of any hashable type as the `u64` keys of a [`KeyedGate`], with a
/// random secret key (std's `RandomState`, SipHash 1-3): a client cannot
/// choose keys that land in one probe. Two keys share a slot only if their
/// 64-bit hashes collide.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{KeyHasher, KeyedGate};
/// use leaparray::Decision;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 1);
/// let keys = KeyHasher::new();
/// assert_eq!(T.try_acquire(keys.key("api-token-1"), 0, 1), Decision::Pass);
/// assert_eq!(T.try_acquire(keys.key("api-token-1"), 0, 1), Decision::Block);
/// assert_eq!(T.try_acquire(keys.key("api-token-2"), 0, 1), Decision::Pass);
/// ```
#[cfg(feature = "std")]
#[derive(Debug, Clone, Default)]
pub struct KeyHasher(std::collections::hash_map::RandomState);

#[cfg(feature = "std")]
impl KeyHasher {
    /// A hasher with a fresh random key.
    ///
    /// ```
    /// let a = leaparray::keyed::KeyHasher::new();
    /// assert_eq!(a.key(&42u32), a.key(&42u32));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        KeyHasher(std::collections::hash_map::RandomState::new())
    }

    /// The `u64` key of `key`.
    ///
    /// ```
    /// let a = leaparray::keyed::KeyHasher::new();
    /// assert_ne!(a.key("10.0.0.1"), a.key("10.0.0.2"));
    /// ```
    #[must_use]
    pub fn key<K: core::hash::Hash + ?Sized>(&self, key: &K) -> u64 {
        use core::hash::BuildHasher;
        self.0.hash_one(key)
    }
}
