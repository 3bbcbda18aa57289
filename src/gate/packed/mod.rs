//! The one-word gate: a window id and the pass counts of the windows that
//! matter, in one atomic word, decided with one compare-and-swap.
//!
//! # The word
//!
//! ```text
//!  high                                                                low
//!  | used | (0) | slot S-1 | ... | slot F | ... | slot 0 | newest id mod 2^T |
//!   1 bit          b bits           b bits        b bits       T bits
//! ```
//!
//! Slot `k` is for window `newest + F - k`: slots `F .. F + N` are the
//! `N` windows of the interval ending at the newest window, slots `0 ..
//! F` the `F` windows after it, which only borrowed permits (prioritized
//! requests told to [`Wait`](crate::gate::PriorityDecision::Wait)) can reach. Each slot
//! holds its window's passes, except the last, `S - 1` (the oldest
//! window's) when `N >= 2`: it holds the **total** of the interval
//! ending at the newest window (slots `F .. S`), so that a decision
//! reads the load it is judged by in one field; the oldest window's
//! passes are that total less the other live slots (`decode`). A
//! booking into the newest window adds `n` to its slot and to the total:
//! still one add to the word. Every slot is as wide as the word allows, `b = (W - 33) / (N +
//! F)` bits for a word of `W` bits (at most 48), so the layout depends on
//! the shape only and a decision's shifts are constants (`Fixed`); the
//! limit must fit in `b` bits, and no window of an admissible interval
//! holds more than the limit, so no slot overflows.
//! The top bit is set by every write: a word that is all zero has never
//! been used, and only such a word takes any caller's window as its newest
//! (a used word whose slots are all zero still has a newest window: older
//! windows that slid out of it may still share intervals with callers
//! older than it).
//!
//! # A decision
//!
//! Load the word; slide it to the caller's window `c` (the id moves to `c`,
//! the slots shift up by `c - newest` windows, and the ones that leave the
//! interval drop off); check every interval that contains the booking
//! window; compare-and-swap the new word in, or retry on failure with the
//! word the failed swap returned. A refusal writes nothing. Each admission
//! is one swap from the exact word it checked to the exact word it
//! booked, so the admissions form one sequence (the word's modification
//! order) in which each one saw every earlier one: the gate is
//! linearizable, with no rollback (so no false rejection) and with any
//! memory orderings (the proof uses only the atomicity of the swap, not
//! the order of accesses to other locations).
//!
//! The race this closes (Sentinel's check-then-act):
//!
//! ```text
//!  Thread 1                             Thread 2          (limit 10, 9 passed)
//!  -----------------------------------  ---------------------------------
//!  load w (9 passed); 9 + 1 <= 10
//!                                       load w (9 passed); 9 + 1 <= 10
//!  CAS w -> w + 1: succeeds
//!                                       CAS w -> w + 1: fails (w changed);
//!                                       retry with w + 1: 10 + 1 > 10, refuse
//! ```
//!
//! # The fast path
//!
//! A caller whose window is the word's newest decides from three fields,
//! without decoding (`decide_fast`, which `WordGate::acquire` and the
//! keyed tables try first): the id, the total, and the future slots. If
//! the total plus `n` is over the limit, it is refused (the interval
//! ending at the newest window contains the booking). If not, and the
//! future slots are zero, it books: every other interval containing the
//! newest window runs through future windows, so it holds zeros and a
//! part of the total. A caller for whom every window of the word slid out
//! (a key seen again after a while) books `n` into a word empty at its
//! window if `n` is within the limit. A caller a few windows (fewer than
//! `N`) after the newest of a word with no future windows (`F = 0`, as a
//! keyed table's) books into the word slid to its window: the one
//! interval it joins holds the counts that stay live. Otherwise (a late
//! caller, a word with future windows that moved on with counts still
//! live, borrowed permits in a future slot, a prioritized refusal) the
//! general decision runs. The window of `now` comes from the gate's hint when `now` falls
//! in the hinted window (`Gate::book_word`): a multiply instead of a
//! division. A gate's `try_acquire`, which wants no window back, needs
//! not even that: it tests `now` against the hinted window's start and
//! the word's newest window against that start
//! (`WordGate::acquire_started`), then decides as `decide_fast`'s first
//! case (`decide_newest`).
//!
//! # Late callers
//!
//! A caller whose window is older than the newest is booked into the newest
//! window: its permits count from the newest window on, no earlier than
//! its own, so every interval the gate checks still holds all of them. It
//! is refused only if the newest window's intervals are full.
//!
//! # Ids modulo 2^T
//!
//! The word keeps the newest id modulo `2^T`, and reads the caller's window
//! as `d = (c - newest) mod 2^T` windows ahead when `d < 2^(T-1)`, and as
//! `2^T - d` windows late otherwise. Every shape has `T >= 32`. Both
//! misreadings a modulus allows are stricter, never looser, as long as no
//! caller's window lags the newest by `2^(T-1)` windows or more:
//! - a caller `2^T k + d` windows ahead is read as `d` ahead: fewer windows
//!   slide out than should, so it may be refused, never admitted over the
//!   limit;
//! - after an idle of `2^T - l` windows (for `l < 2^(T-1)`), a caller is
//!   read as `l` windows late and booked into the stale newest window,
//!   whose counts have not slid out: the gate may refuse until the clock
//!   catches up with the stale id (at most `2^(T-1)` windows). A new gate
//!   is not affected: a never-used word takes any id.
//!
//! A caller whose clock lags the newest window by `2^(T-1)` windows or more
//! (a thread stalled that long between reading its clock and deciding) is
//! read as ahead, and its slide drops counts that are still live: beyond
//! that limit the gate can admit more than its limit.

use crate::gate::divide::Divisor;
use crate::sync::Ordering::{self, AcqRel, Acquire};
use core::ops::{Add, BitAnd, BitOr, Not, Shl, Shr, Sub};

/// The bits every shape keeps of the window id, at least.
pub(crate) const MIN_ID_BITS: u32 = 32;

/// The word's top bit, set by every write: marks a used word.
#[inline(always)]
fn used<B: Bits>() -> B {
    !(B::ONES >> 1)
}

/// An unsigned integer a gate word is made of (`u64` or `u128`).
pub(crate) trait Bits:
    Copy
    + Eq
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + Not<Output = Self>
    + Add<Output = Self>
    + Sub<Output = Self>
{
    const BITS: u32;
    const ZERO: Self;
    const ONES: Self;
    fn from_u64(v: u64) -> Self;
    /// The low 64 bits.
    fn low_u64(self) -> u64;
}

impl Bits for u64 {
    const BITS: u32 = 64;
    const ZERO: Self = 0;
    const ONES: Self = u64::MAX;
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline(always)]
    fn low_u64(self) -> u64 {
        self
    }
}

impl Bits for u128 {
    const BITS: u32 = 128;
    const ZERO: Self = 0;
    const ONES: Self = u128::MAX;
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        u128::from(v)
    }
    #[inline(always)]
    fn low_u64(self) -> u64 {
        self as u64
    }
}

/// The atomic that holds a gate word.
pub(crate) trait WordCell: Send + Sync {
    type Word: Bits;
    fn load(&self, o: Ordering) -> Self::Word;
    fn cas_weak(
        &self,
        cur: Self::Word,
        new: Self::Word,
        s: Ordering,
        f: Ordering,
    ) -> Result<Self::Word, Self::Word>;
}

impl WordCell for crate::sync::AtomicU64 {
    type Word = u64;
    #[inline(always)]
    fn load(&self, o: Ordering) -> u64 {
        crate::sync::AtomicU64::load(self, o)
    }
    #[inline(always)]
    fn cas_weak(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        self.compare_exchange_weak(cur, new, s, f)
    }
}

#[cfg(all(
    not(leaparray_loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
impl WordCell for crate::sync::AtomicU128 {
    type Word = u128;
    #[inline(always)]
    fn load(&self, o: Ordering) -> u128 {
        crate::sync::AtomicU128::load(self, o)
    }
    #[inline(always)]
    fn cas_weak(&self, cur: u128, new: u128, s: Ordering, f: Ordering) -> Result<u128, u128> {
        self.compare_exchange_weak(cur, new, s, f)
    }
}

#[cfg(not(all(
    not(leaparray_loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
impl WordCell for crate::sync::AtomicU128 {
    type Word = u128;
    fn load(&self, _: Ordering) -> u128 {
        match *self {}
    }
    fn cas_weak(&self, _: u128, _: u128, _: Ordering, _: Ordering) -> Result<u128, u128> {
        match *self {}
    }
}

/// Where the fields of a gate word are, and what the gate needs to decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `T`: bits of the window id (at most 64).
    pub(crate) id_bits: u32,
    /// `b`: bits of one slot.
    pub(crate) slot_bits: u32,
    /// `N`: windows per interval.
    pub(crate) live: u32,
    /// `F`: windows after the newest that can hold borrowed permits.
    pub(crate) future: u32,
    /// Permits per interval (fits in `slot_bits`).
    pub(crate) limit: u64,
    /// Longest wait a prioritized request may be given, exclusive.
    pub(crate) timeout: u64,
    /// The window length.
    pub(crate) window: Divisor,
    /// `2^T - 1`.
    pub(crate) id_mask: u64,
    /// `2^b - 1`: the largest count a slot holds.
    pub(crate) slot_max: u64,
    /// The limit plus the used bit as seen from the total slot: what a
    /// word shifted down to its total may reach (`fits_total`).
    pub(crate) total_limit: u64,
}

impl Layout {
    /// The layout of a word of `word_bits` bits for this gate, if its ids
    /// get at least [`MIN_ID_BITS`] bits next to the slots and the used
    /// bit.
    pub(crate) const fn fit(
        word_bits: u32,
        live: u32,
        window: Divisor,
        limit: u64,
        timeout: u64,
    ) -> Option<Layout> {
        let future = future_windows(live, window.get(), timeout);
        // In u64: `live` may be as large as `u32::MAX`.
        let slots = live as u64 + future as u64;
        // Every slot as wide as the word allows (so that a shape's layout
        // depends on `N` and `F` only, and its shifts are constants), if
        // the limit fits.
        let slot_bits = (word_bits as u64 - MIN_ID_BITS as u64 - 1) / slots;
        let needed = 64 - limit.leading_zeros() as u64;
        if slot_bits == 0 || slot_bits < needed {
            return None;
        }
        // Counts never exceed MAX_COUNT (47 bits).
        let slot_bits = if slot_bits > MAX_SLOT_BITS as u64 {
            MAX_SLOT_BITS
        } else {
            slot_bits as u32
        };
        let id_bits = word_bits - 1 - slots as u32 * slot_bits;
        let id_bits = if id_bits > 64 { 64 } else { id_bits };
        // At most 63: `T >= 32` in 64 bits; in 128, `T = 64` or no bits
        // lie between the total slot and the used bit.
        let above = word_bits - 1 - (id_bits + (slots as u32 - 1) * slot_bits);
        Some(Layout {
            total_limit: limit + (1 << above),
            id_bits,
            slot_bits,
            live,
            future,
            limit,
            timeout,
            window,
            id_mask: u64::MAX >> (64 - id_bits),
            slot_max: u64::MAX >> (64 - slot_bits),
        })
    }

    /// The parameters of a gate no word holds (the bucket shape's).
    pub(crate) const fn unpacked(live: u32, window: Divisor, limit: u64, timeout: u64) -> Layout {
        Layout {
            id_bits: 64,
            slot_bits: 64,
            live,
            future: 0,
            limit,
            timeout,
            window,
            id_mask: u64::MAX,
            slot_max: u64::MAX,
            total_limit: limit,
        }
    }
}

/// The widest slot (counts never exceed `MAX_COUNT`, 47 bits).
const MAX_SLOT_BITS: u32 = 48;

/// Where a word's fields are: read from a [`Layout`] at run time, or
/// [`Fixed`] for a shape known at compile time (then every shift and mask
/// is a constant). Both give the same numbers for the same shape.
pub(crate) trait Geometry: Copy {
    /// `T`.
    fn id_bits(&self) -> u32;
    /// `b`.
    fn slot_bits(&self) -> u32;
    /// `N`.
    fn live(&self) -> u32;
    /// `F`.
    fn future(&self) -> u32;
    /// `2^T - 1`.
    fn id_mask(&self) -> u64;
    /// `2^b - 1`.
    fn slot_max(&self) -> u64;
    /// The rest of the gate's parameters.
    fn layout(&self) -> &Layout;
    #[inline(always)]
    fn slots(&self) -> u32 {
        self.live() + self.future()
    }
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.layout().limit
    }
    #[inline(always)]
    fn timeout(&self) -> u64 {
        self.layout().timeout
    }
    #[inline(always)]
    fn window(&self) -> Divisor {
        self.layout().window
    }
}

impl Geometry for &Layout {
    #[inline(always)]
    fn id_bits(&self) -> u32 {
        self.id_bits
    }
    #[inline(always)]
    fn slot_bits(&self) -> u32 {
        self.slot_bits
    }
    #[inline(always)]
    fn live(&self) -> u32 {
        self.live
    }
    #[inline(always)]
    fn future(&self) -> u32 {
        self.future
    }
    #[inline(always)]
    fn id_mask(&self) -> u64 {
        self.id_mask
    }
    #[inline(always)]
    fn slot_max(&self) -> u64 {
        self.slot_max
    }
    #[inline(always)]
    fn layout(&self) -> &Layout {
        self
    }
}

/// The geometry of a word of `B` with `N` live and `F` future windows, as
/// constants (the numbers `Layout::fit` computes for that shape). Used on
/// 64-bit targets only (see `Gate::book`).
#[cfg(target_pointer_width = "64")]
#[derive(Clone, Copy)]
pub(crate) struct Fixed<'a, B, const N: usize, const F: u32> {
    layout: &'a Layout,
    word: core::marker::PhantomData<B>,
}

#[cfg(target_pointer_width = "64")]
impl<'a, B: Bits, const N: usize, const F: u32> Fixed<'a, B, N, F> {
    const SLOTS: u32 = N as u32 + F;
    const SLOT_BITS: u32 = {
        let b = (B::BITS - MIN_ID_BITS - 1) / Self::SLOTS;
        if b > MAX_SLOT_BITS {
            MAX_SLOT_BITS
        } else {
            b
        }
    };
    const ID_BITS: u32 = {
        let t = B::BITS - 1 - Self::SLOTS * Self::SLOT_BITS;
        if t > 64 {
            64
        } else {
            t
        }
    };

    /// The constant geometry of `layout`, which must have this shape.
    #[inline(always)]
    pub(crate) fn new(layout: &'a Layout) -> Self {
        debug_assert_eq!(
            (layout.id_bits, layout.slot_bits, layout.live, layout.future),
            (Self::ID_BITS, Self::SLOT_BITS, N as u32, F)
        );
        Fixed {
            layout,
            word: core::marker::PhantomData,
        }
    }
}

#[cfg(target_pointer_width = "64")]
impl<B: Bits, const N: usize, const F: u32> Geometry for Fixed<'_, B, N, F> {
    #[inline(always)]
    fn id_bits(&self) -> u32 {
        Self::ID_BITS
    }
    #[inline(always)]
    fn slot_bits(&self) -> u32 {
        Self::SLOT_BITS
    }
    #[inline(always)]
    fn live(&self) -> u32 {
        N as u32
    }
    #[inline(always)]
    fn future(&self) -> u32 {
        F
    }
    #[inline(always)]
    fn id_mask(&self) -> u64 {
        u64::MAX >> (64 - Self::ID_BITS)
    }
    #[inline(always)]
    fn slot_max(&self) -> u64 {
        u64::MAX >> (64 - Self::SLOT_BITS)
    }
    #[inline(always)]
    fn layout(&self) -> &Layout {
        self.layout
    }
}

/// Windows after the newest that a prioritized request can borrow: those
/// starting less than `timeout` after some time in the newest window, at
/// most `N` (Sentinel's `tryOccupyNext` looks no further).
const fn future_windows(live: u32, window: u64, timeout: u64) -> u32 {
    let w = timeout.div_ceil(window);
    if w > live as u64 {
        live
    } else {
        w as u32
    }
}

/// The word as a caller at window `c` sees it: the newest window (full id)
/// and the slots, already slid to `c` if `c` is ahead.
#[derive(Clone, Copy, Debug)]
struct View<B> {
    newest: u64,
    /// Slot `k` at bits `k * b`.
    slots: B,
    /// The word that holds `newest` and `slots` (so a booking is one add).
    base: B,
}

/// A gate in one atomic word of type `A`.
pub(crate) struct WordGate<A> {
    /// Encoding: the module's diagram; all zero when new.
    /// Invariant: every interval of `N` windows it describes holds at most
    /// `limit` passes (booked only by a swap from a word whose check it
    /// passed), except for passes added by `record`.
    word: A,
}

/// What a decision on the word concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Booked into this window.
    Booked(u64),
    /// Borrowed a future window; the caller waits this many ticks.
    Borrowed { wait: u64 },
    /// Refused; nothing written.
    Refused,
}

/// What a caller wants back from a decision: the whole [`Outcome`], or
/// (`try_acquire`) only whether it passed, a [`Decision`]. A decision
/// returns it from every path, so that its out-of-line paths are tail
/// calls that return the caller's type as it is, and the inline path
/// saves no registers and converts nothing.
///
/// [`Decision`]: crate::Decision
pub(crate) trait Answer: Copy {
    /// Whether the caller needs the window a booking went into (an
    /// [`Outcome`] does; a [`Decision`] does not, which lets
    /// `Gate::book_word` skip finding it).
    ///
    /// [`Decision`]: crate::Decision
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    const WINDOW: bool;
    /// Booked `n` into window `c`.
    fn booked(c: u64) -> Self;
    /// Refused.
    fn refused() -> Self;
    /// Whatever the decision concluded.
    fn of(o: Outcome) -> Self;
}

impl Answer for Outcome {
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    const WINDOW: bool = true;
    #[inline(always)]
    fn booked(c: u64) -> Self {
        Outcome::Booked(c)
    }
    #[inline(always)]
    fn refused() -> Self {
        Outcome::Refused
    }
    #[inline(always)]
    fn of(o: Outcome) -> Self {
        o
    }
}

/// A non-prioritized decision: only a booking passes (such a decision
/// never borrows).
impl Answer for crate::Decision {
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    const WINDOW: bool = false;
    #[inline(always)]
    fn booked(_: u64) -> Self {
        crate::Decision::Pass
    }
    #[inline(always)]
    fn refused() -> Self {
        crate::Decision::Block
    }
    #[inline(always)]
    fn of(o: Outcome) -> Self {
        match o {
            Outcome::Booked(_) => crate::Decision::Pass,
            Outcome::Borrowed { .. } | Outcome::Refused => crate::Decision::Block,
        }
    }
}

impl<A: WordCell> WordGate<A> {
    /// An empty gate.
    pub(crate) const fn new(word: A) -> Self {
        WordGate { word }
    }

    /// Admits `n` at `now`, whose window is `c`, into the newest window,
    /// or (if `prioritized`) borrows a later one, or refuses (always if
    /// `n` is over the limit). `n` is at least 1, and at most the limit or
    /// (in a 64-bit word) below 2^63.
    ///
    /// The common cases inline (the module's "The fast path",
    /// `decide_fast`): the word is used, its newest window is `c`, and no
    /// future window holds borrowed permits, so the interval total
    /// decides; or every window slid out by `c`. It calls nothing, so it
    /// saves no registers; every other case (a window that moved on with
    /// counts still live, a late caller, a borrowing, a lost race) is
    /// [`acquire_from`], which starts over from the word this one read.
    ///
    /// [`acquire_from`]: Self::acquire_from
    #[inline(always)]
    pub(crate) fn acquire<const N: usize, R: Answer>(
        &self,
        l: impl Geometry,
        c: u64,
        now: u64,
        n: u64,
        prioritized: bool,
    ) -> R {
        debug_assert!(n >= 1 && (n <= l.limit() || (A::Word::BITS == 64 && n < 1 << 63)));
        let cur = self.word.load(Acquire);
        match decide_fast(l, cur, c, n) {
            Fast::Full if !prioritized => return R::refused(),
            // ORDERING: as in `acquire_from`.
            Fast::Book(new) if self.word.cas_weak(cur, new, AcqRel, Acquire).is_ok() => {
                return R::booked(c);
            }
            _ => {}
        }
        self.acquire_from::<N, R>(now, n, l, cur, prioritized)
    }

    /// [`acquire`](Self::acquire) for a caller (not prioritized, wanting
    /// no window back: `R::WINDOW` is false) whose `now` is in the window
    /// `c` that starts at `s` and ends by `u64::MAX`, without `c`: the word's
    /// newest window `b` is `c` modulo `2^T` exactly when `s - b * window`
    /// is 0 modulo `2^(T + k)`, `m` (`2^(T + k) - 1`, with `T + k <= 64`,
    /// for a window of `2^k` times an odd number). Proof: `s = c * window`,
    /// so `s - b * window = 2^k * odd * (c - b)`, a multiple of `2^(T + k)`
    /// exactly when `c - b` is a multiple of `2^T` (the odd factor is
    /// invertible modulo `2^T`); and the word's bits above its id add
    /// multiples of `2^T * window` to `b * window`, so the whole low word
    /// serves for `b`.
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    #[inline(always)]
    pub(crate) fn acquire_started<const N: usize, R: Answer>(
        &self,
        l: impl Geometry,
        s: u64,
        m: u64,
        now: u64,
        n: u64,
    ) -> R {
        debug_assert!(!R::WINDOW && n >= 1 && n <= l.limit());
        let cur = self.word.load(Acquire);
        if s.wrapping_sub(cur.low_u64().wrapping_mul(l.window().get())) & m == 0 {
            match decide_newest(l, cur, n) {
                Fast::Full => return R::refused(),
                // ORDERING: as in `acquire_from`. (`R` ignores the window.)
                Fast::Book(new) if self.word.cas_weak(cur, new, AcqRel, Acquire).is_ok() => {
                    return R::booked(0);
                }
                _ => {}
            }
        }
        self.acquire_from::<N, R>(now, n, l, cur, false)
    }

    /// [`acquire`](Self::acquire) for every case, starting from a word
    /// `cur` read from the cell (maybe stale: the swap then fails and the
    /// loop goes on with the word it returned).
    #[cold]
    #[inline(never)]
    ///
    /// `now` and `n` come first, where the caller's own caller passes them
    /// (`Gate::try_acquire`), so that the call needs no moves.
    fn acquire_from<const N: usize, R: Answer>(
        &self,
        now: u64,
        n: u64,
        l: impl Geometry,
        cur: A::Word,
        prioritized: bool,
    ) -> R {
        R::of(self.decide_from::<N>(now, n, l, cur, prioritized))
    }

    /// `acquire_from`'s decision (one copy whatever the caller wants back).
    #[inline(never)]
    fn decide_from<const N: usize>(
        &self,
        now: u64,
        n: u64,
        l: impl Geometry,
        mut cur: A::Word,
        prioritized: bool,
    ) -> Outcome {
        // Divided again rather than passed: six arguments leave the call
        // from `acquire` a jump.
        let c = l.window().div(now);
        loop {
            let Some((new, outcome)) = decide::<_, N>(l, cur, c, now, n, prioritized) else {
                return Outcome::Refused;
            };
            // ORDERING: exactness needs only the swap's atomicity (module
            // docs); Acquire/Release make each admission happen after the
            // ones it counted, for callers that publish data with them.
            match self.word.cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return outcome,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Adds `n` to the newest window without a check against the limit,
    /// saturating so that no interval containing it passes `2^b - 1`;
    /// `false` if it saturated.
    pub(crate) fn record<const N: usize>(&self, l: impl Geometry, now: u64, n: u64) -> bool {
        let c = l.window().div(now);
        let mut cur = self.word.load(Acquire);
        loop {
            let v = view(l, cur, c);
            // Every interval that contains the newest window must stay
            // within `2^b - 1`: the one ending there (the total slot holds
            // it) and the ones ending at later windows, which permits
            // borrowed into the future slots join. When the word slides to
            // a later window, its total slot holds one of them; a bound on
            // the first alone let a record fill it, and the borrowed
            // permits then overflowed the total on the slide
            // (`tests/gate_adversarial.rs`). Saturating: a word from
            // before that bound may already be over it.
            let room = l
                .slot_max()
                .saturating_sub(peak::<_, N>(l, v.slots, l.future()));
            let added = n.min(room);
            let have = slot(l, v.slots, l.future());
            let new = pack(l, v.newest, with_slot(l, v.slots, l.future(), have + added));
            match self.word.cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return added == n,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Takes back `n` booked into full window id `window`, if the word
    /// still holds that window (a window that slid out took its passes
    /// with it).
    pub(crate) fn cancel(&self, l: impl Geometry, window: u64, n: u64) {
        let mask = l.id_mask();
        let mut cur = self.word.load(Acquire);
        loop {
            let held = cur.low_u64() & mask;
            let ahead = window.wrapping_sub(held) & mask;
            let behind = held.wrapping_sub(window) & mask;
            let k = if ahead <= u64::from(l.future()) {
                l.future() - ahead as u32
            } else if behind < u64::from(l.live()) {
                l.future() + behind as u32
            } else {
                return;
            };
            if cur == A::Word::ZERO {
                return;
            }
            let counts = decode(l, cur >> l.id_bits());
            let have = slot(l, counts, k);
            let new_counts = encode(l, with_slot(l, counts, k, have.saturating_sub(n)));
            let new = (new_counts << l.id_bits()) | (cur & A::Word::from_u64(mask));
            match self.word.cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// The fullest interval a booking at `now` would join.
    pub(crate) fn load<const N: usize>(&self, l: impl Geometry, now: u64) -> u64 {
        load_of::<_, N>(l, self.word.load(Acquire), l.window().div(now))
    }

    /// Passes in the interval of `N` windows ending at the window of `now`.
    pub(crate) fn count(&self, l: impl Geometry, now: u64) -> u64 {
        count_of(l, self.word.load(Acquire), l.window().div(now))
    }

    /// Ticks from `now` until `n` (`1 ..= limit`) would be admitted if
    /// nothing else arrived.
    /// `None` if that window would start after `u64::MAX`.
    pub(crate) fn retry_after<const N: usize>(
        &self,
        l: impl Geometry,
        now: u64,
        n: u64,
    ) -> Option<u64> {
        retry_after_of::<_, N>(l, self.word.load(Acquire), now, n)
    }
}

/// One decision on the word `cur` for `n` (at least 1) at `now` (in window
/// `c`): the word to swap in and what it means, or `None` (refused).
#[inline(always)]
pub(crate) fn decide<B: Bits, const N: usize>(
    l: impl Geometry,
    cur: B,
    c: u64,
    now: u64,
    n: u64,
    prioritized: bool,
) -> Option<(B, Outcome)> {
    let v = view(l, cur, c);
    let (slot, outcome) = if fits::<_, N>(l, v.slots, l.future(), n) {
        (l.future(), Outcome::Booked(v.newest))
    } else {
        let (slot, wait) = prioritized
            .then(|| borrow::<_, N>(l, v, now, n))
            .flatten()?;
        (slot, Outcome::Borrowed { wait })
    };
    // No carry: the slot's count plus `n` is within the limit.
    Some((v.base + booking::<_, B>(l, slot, n), outcome))
}

/// [`decide_fast`]'s answer when the caller's window is the newest of
/// `w` (modulo `2^T`), for a caller that has tested that itself
/// (`WordGate::acquire_started`); `n` as in `decide_fast`.
#[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
#[inline(always)]
pub(crate) fn decide_newest<B: Bits>(l: impl Geometry, w: B, n: u64) -> Fast<B> {
    if !fits_total(l, w, n) {
        Fast::Full
    } else if is_plain(l, w) {
        Fast::Book(w + booking::<_, B>(l, l.future(), n))
    } else {
        Fast::Other
    }
}

/// What the fast path ("The fast path" in the module docs) makes of a
/// word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast<B> {
    /// The word to store: `n` booked into window `c`, the newest.
    Book(B),
    /// An interval that contains window `c` is full: refused, unless the
    /// caller may borrow a later window.
    Full,
    /// The general decision must run: `c` is a window after the newest
    /// that some counts are still live for, or a late caller's, or a
    /// future window holds borrowed permits.
    Other,
}

/// The fast path of [`decide`] on the word `w` for `n` (at least 1; at
/// most the limit, or below 2^63 in a 64-bit word) in window `c`, in its
/// two common cases; where it answers `Book` or `Full`, `decide` (not
/// prioritized) answers the same:
/// - `c` is the newest window (a key decided again within its window):
///   the interval ending at `c` is the fullest the booking joins (every
///   later one runs through future windows, empty when the word is
///   plain), so its total decides;
/// - every window of `w` slid out by `c` (a key of a large table seen
///   again after a while; also a never-used word, for a `c` that reads as
///   that far ahead of its id 0): every interval is empty, so `n` fits if
///   it is within the limit, into a word empty at `c` (what `view` makes
///   of it);
/// - `c` is `0 < d < N` windows after the newest of a used word with no
///   future windows (`F = 0`; a key back within its interval): the one
///   interval the booking joins ends at `c` and holds the counts of the
///   windows that stay live.
#[inline(always)]
pub(crate) fn decide_fast<B: Bits>(l: impl Geometry, w: B, c: u64, n: u64) -> Fast<B> {
    decide_fast_ahead(l, w, c, n).0
}

/// [`decide_fast`], and, when it books into a used word `w`, how many
/// windows `c` is after `w`'s newest ([`ahead_of`]'s answer: 0 when `c` is
/// the newest, at least `S` when every window slid out). Beside a
/// `Fast::Full` or `Fast::Other` the count means nothing.
#[inline(always)]
pub(crate) fn decide_fast_ahead<B: Bits>(l: impl Geometry, w: B, c: u64, n: u64) -> (Fast<B>, u64) {
    // `fits_total` and the moved-on path's `live + n` need `n < 2^63` not
    // to overflow.
    debug_assert!(n < 1 << 63);
    // `c` is the newest window mod 2^T: the low `T` bits of `c` and `w`
    // agree (`T >= 32`, so the shift is below 64; one instruction fewer
    // than masking the difference).
    if (c ^ w.low_u64()) << (64 - l.id_bits()) == 0 {
        // The newest window is the caller's (or the word is unused and
        // `c` is 0 modulo 2^T: its total reads 0, and it is not plain).
        let fast = if !fits_total(l, w, n) {
            Fast::Full
        } else if is_plain(l, w) {
            Fast::Book(w + booking::<_, B>(l, l.future(), n))
        } else {
            Fast::Other
        };
        (fast, 0)
    } else {
        let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
        if d >= u64::from(l.slots()) && d <= l.id_mask() >> 1 {
            if n <= l.limit() {
                let empty = B::from_u64(c & l.id_mask()) | used::<B>();
                (Fast::Book(empty + booking::<_, B>(l, l.future(), n)), d)
            } else {
                (Fast::Full, d)
            }
        } else if l.future() == 0 && d < u64::from(l.slots()) && is_plain(l, w) {
            // Moved on by `0 < d < N` windows, no future windows (a keyed
            // table's word, a gate's without borrowing): what `view_moved`
            // and `fits` make of it, without decoding. The counts of
            // windows `c - d - k`, `k < N - d`, stay live (slots `k`, below
            // the total's), slid to slots `k + d`; the total's field
            // becomes their sum. The booking joins that one interval (no
            // window after `c`).
            // (`0 < d < S`, as the id test above found `d != 0`: with two
            // slots `d` is 1, a constant.)
            let d = if l.slots() == 2 { 1 } else { d };
            let d32 = d as u32;
            let fields = w >> l.id_bits();
            let mut live = 0;
            // (A constant count of steps over the slots below the total's,
            // where `Fixed` unrolls it.)
            let mut k = 0;
            while k < total_slot(l) {
                if k + d32 < l.slots() {
                    live += slot(l, fields, k);
                }
                k += 1;
            }
            // No overflow: `live` is below `2^53` (at most 31 fields of at
            // most 48 bits), `n` below `2^63` (as for `fits_total`).
            if live + n > l.limit() {
                (Fast::Full, d)
            } else {
                let slots = with_slot(
                    l,
                    slide(l, fields, d),
                    total_slot(l),
                    live.min(l.slot_max()),
                );
                let base = (slots << l.id_bits()) | B::from_u64(c & l.id_mask()) | used::<B>();
                (Fast::Book(base + booking::<_, B>(l, 0, n)), d)
            }
        } else {
            (Fast::Other, d)
        }
    }
}

/// What a caller in window `c` could still take from word `w`: `limit`
/// less [`load_of`], read from the interval total without decoding the
/// word when `c` is its newest window and it is plain (the interval
/// ending at `c` is then the fullest, as in [`decide_fast`]); the word a
/// booking just stored, in the keyed tables.
#[inline(always)]
pub(crate) fn left_of<B: Bits, const N: usize>(l: impl Geometry, w: B, c: u64) -> u64 {
    if c.wrapping_sub(w.low_u64()) & l.id_mask() == 0 && is_plain(l, w) {
        let at = l.id_bits() + total_slot(l) * l.slot_bits();
        // The shifted word is the used bit's share of `total_limit` plus
        // the total (see `fits_total`).
        l.layout().total_limit.saturating_sub((w >> at).low_u64())
    } else {
        l.limit().saturating_sub(load_of::<B, N>(l, w, c))
    }
}

/// [`retry_after_of`] for the whole limit, on a plain word whose newest
/// window `newest` holds a booking (the word a keyed table's booking just
/// stored): the limit fits once that window has slid out of every slot,
/// and not before.
#[inline(always)]
pub(crate) fn reset_of(l: impl Geometry, newest: u64, now: u64) -> Option<u64> {
    start_of(l, newest, u64::from(l.slots())).map(|t| t.saturating_sub(now))
}

/// The fullest interval a booking in window `c` would join, in word `w`.
pub(crate) fn load_of<B: Bits, const N: usize>(l: impl Geometry, w: B, c: u64) -> u64 {
    peak::<_, N>(l, view(l, w, c).slots, l.future())
}

/// Passes in the interval of `N` windows ending at window `c`, in word `w`.
pub(crate) fn count_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> u64 {
    let v = view(l, w, c);
    let late = v.newest.saturating_sub(c);
    let first = u64::from(l.future()).saturating_add(late);
    let mut total = 0;
    let mut k = first;
    while k < first + u64::from(l.live()) && k < u64::from(l.slots()) {
        total += slot(l, v.slots, k as u32);
        k += 1;
    }
    total
}

/// Ticks from `now` until `n` (`1 ..= limit`) would be admitted by word
/// `w` if nothing else arrived; `None` if that window would start after
/// `u64::MAX`.
pub(crate) fn retry_after_of<B: Bits, const N: usize>(
    l: impl Geometry,
    w: B,
    now: u64,
    n: u64,
) -> Option<u64> {
    let v = view(l, w, l.window().div(now));
    // After `S` windows every slot has slid out, and `n <= limit` fits.
    let mut j = 0;
    while j < u64::from(l.slots()) && !fits::<_, N>(l, slide(l, v.slots, j), l.future(), n) {
        j += 1;
    }
    if j == 0 {
        return Some(0);
    }
    // Positive: the newest window is the caller's own or a later one.
    Some(start_of(l, v.newest, j)? - now)
}

/// Windows from the newest window of the used word `w` to window `c`, if
/// `c` is that window or a later one (read modulo `2^T`, as a decision
/// reads it); `None` if `c` is earlier (a late caller) or `w` was never
/// used.
pub(crate) fn ahead_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> Option<u64> {
    let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
    (w != B::ZERO && d <= l.id_mask() >> 1).then_some(d)
}

/// The newest window of the used word `w`, read from window `c` (its
/// full id, as a decision reads it modulo `2^T`).
pub(crate) fn newest_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> u64 {
    match ahead_of(l, w, c) {
        Some(d) => c.saturating_sub(d),
        None => view(l, w, c).newest,
    }
}

/// The count the used word `w` (no future windows) holds for its window
/// `newest - k` (`k < N`).
pub(crate) fn count_at<B: Bits>(l: impl Geometry, w: B, k: u32) -> u64 {
    slot(l, decode(l, w >> l.id_bits()), k)
}

/// A used word (no future windows) whose newest window is `newest`, with
/// `count(k)` in its window `newest - k` for each `k < N`; the counts'
/// sum at most the limit.
pub(crate) fn word_with<B: Bits>(l: impl Geometry, newest: u64, count: impl Fn(u32) -> u64) -> B {
    let mut slots = B::ZERO;
    let mut k = 0;
    while k < l.slots() {
        slots = with_slot(l, slots, k, count(k).min(l.slot_max()));
        k += 1;
    }
    pack(l, newest, slots)
}

/// A used word whose newest window is `newest` and whose slots are empty.
pub(crate) fn empty_at<B: Bits>(l: impl Geometry, newest: u64) -> B {
    pack(l, newest, B::ZERO)
}

/// The word `w` as seen from window `c`.
#[inline(always)]
fn view<B: Bits>(l: impl Geometry, w: B, c: u64) -> View<B> {
    let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
    if d == 0 {
        // The newest window is the caller's: the common case, inline.
        View {
            newest: c,
            slots: decode(l, w >> l.id_bits()),
            base: w | used::<B>(),
        }
    } else if d >= u64::from(l.slots()) && d <= l.id_mask() >> 1 {
        // Every window slid out (a key of a large table, idle since its
        // last decision; a gate's first call after a pause), or the word
        // was never used: empty at `c`, inline. What `view_moved` gives
        // (`slide` to zero, and zero fields encode to zero).
        View {
            newest: c,
            slots: B::ZERO,
            base: B::from_u64(c & l.id_mask()) | used::<B>(),
        }
    } else {
        view_moved(l, w, c, d)
    }
}

/// `view` when the caller's window is `d` (mod 2^T) windows after the
/// newest: once per window per caller moving the word on, or a late
/// caller.
#[inline(never)]
fn view_moved<B: Bits>(l: impl Geometry, w: B, c: u64, d: u64) -> View<B> {
    let slots = decode(l, w >> l.id_bits());
    if w == B::ZERO {
        // Never used: any id will do.
        View {
            newest: c,
            slots,
            base: pack(l, c, slots),
        }
    } else if d <= l.id_mask() >> 1 {
        let slots = slide(l, slots, d);
        View {
            newest: c,
            slots,
            base: pack(l, c, slots),
        }
    } else {
        // Late by 2^T - d windows: the word stays as it is.
        View {
            newest: c.saturating_add((l.id_mask() - d) + 1),
            slots,
            base: w,
        }
    }
}

/// The start of window `newest + ahead`, if it starts at all (by
/// `u64::MAX`).
#[inline]
fn start_of(l: impl Geometry, newest: u64, ahead: u64) -> Option<u64> {
    newest.checked_add(ahead)?.checked_mul(l.window().get())
}

/// `slots` after the newest window moved `d` windows on.
#[inline(always)]
fn slide<B: Bits>(l: impl Geometry, slots: B, d: u64) -> B {
    if d >= u64::from(l.slots()) {
        return B::ZERO;
    }
    let all = l.slots() * l.slot_bits();
    shl(slots, d as u32 * l.slot_bits()) & !shl(B::ONES, all)
}

/// The word for `newest` and the counts `slots`.
#[inline(always)]
fn pack<B: Bits>(l: impl Geometry, newest: u64, slots: B) -> B {
    (encode(l, slots) << l.id_bits()) | B::from_u64(newest & l.id_mask()) | used::<B>()
}

/// The slot whose field holds the interval total instead of its count
/// (the oldest live window's; with `N = 1` the only live slot, whose count
/// is the total).
#[inline(always)]
fn total_slot(l: impl Geometry) -> u32 {
    l.slots() - 1
}

/// The passes of the interval ending at the newest window, in counts
/// `slots`.
#[inline(always)]
fn live_total<B: Bits>(l: impl Geometry, slots: B) -> u64 {
    let mut total = 0;
    let mut k = l.future();
    while k < l.slots() {
        total += slot(l, slots, k);
        k += 1;
    }
    total
}

/// The per-window counts of a word's fields (the word shifted down by
/// `T`): the total slot's field less the other live counts.
#[inline(always)]
fn decode<B: Bits>(l: impl Geometry, fields: B) -> B {
    if l.live() < 2 {
        return fields;
    }
    let last = total_slot(l);
    let mut others = 0;
    let mut k = l.future();
    while k < last {
        others += slot(l, fields, k);
        k += 1;
    }
    // Exact unless a `record` saturated the total (then the oldest
    // window's count is what the total leaves).
    with_slot(
        l,
        fields,
        last,
        slot(l, fields, last).saturating_sub(others),
    )
}

/// A word's fields for the per-window counts `slots`: the total slot
/// holds the interval total (at most `2^b - 1`).
#[inline(always)]
fn encode<B: Bits>(l: impl Geometry, slots: B) -> B {
    if l.live() < 2 {
        return slots;
    }
    let total = live_total(l, slots).min(l.slot_max());
    with_slot(l, slots, total_slot(l), total)
}

/// Whether the interval total of the used word `w` has room for `n`
/// (`1 ..= limit`). The total slot is the highest, so `w` shifted down to
/// it is the total plus the used bit (the bits between are zero): the
/// used bit is added to the limit instead of masked off the word.
#[inline(always)]
fn fits_total<B: Bits>(l: impl Geometry, w: B, n: u64) -> bool {
    let at = l.id_bits() + total_slot(l) * l.slot_bits();
    debug_assert_eq!(
        l.layout().total_limit,
        l.limit() + (used::<B>() >> at).low_u64()
    );
    // No truncation: at most 64 bits are above `at` (see `Layout::fit`),
    // so the shifted word is the used bit (at most 2^63) plus a total
    // below 2^48. No overflow: in 64 bits it is below 2^32 and `n < 2^63`;
    // in 128, `n <= limit < 2^48` (`acquire`'s precondition).
    (w >> at).low_u64() + n <= l.layout().total_limit
}

/// Whether `w` is a used word whose future windows hold nothing: then
/// every interval containing the newest window holds at most its total
/// (the intervals through the future windows add only zeros to a part of
/// it).
#[inline(always)]
fn is_plain<B: Bits>(l: impl Geometry, w: B) -> bool {
    // The low `F * b` bits: the future fields.
    let future = !shl(B::ONES, l.future() * l.slot_bits());
    w & ((future << l.id_bits()) | used::<B>()) == used::<B>()
}

/// `n` in slot `slot`, in place in a word: what a booking adds (to the
/// interval total too, for a live slot).
#[inline(always)]
fn booking<G: Geometry, B: Bits>(l: G, slot: u32, n: u64) -> B {
    let field = shl(B::from_u64(n), l.id_bits() + slot * l.slot_bits());
    if l.live() >= 2 && slot >= l.future() {
        field + shl(B::from_u64(n), l.id_bits() + total_slot(l) * l.slot_bits())
    } else {
        field
    }
}

/// `x << k`, 0 when `k` is the width or more.
#[inline(always)]
fn shl<B: Bits>(x: B, k: u32) -> B {
    if k >= B::BITS {
        B::ZERO
    } else {
        x << k
    }
}

/// The count in slot `k` (0 past the last slot).
#[inline(always)]
fn slot<B: Bits>(l: impl Geometry, slots: B, k: u32) -> u64 {
    let at = k * l.slot_bits();
    if at >= B::BITS {
        0
    } else {
        (slots >> at).low_u64() & l.slot_max()
    }
}

#[inline(always)]
fn with_slot<B: Bits>(l: impl Geometry, slots: B, k: u32, count: u64) -> B {
    let at = k * l.slot_bits();
    (slots & !(B::from_u64(l.slot_max()) << at)) | (B::from_u64(count) << at)
}

/// The fullest interval of `N` windows that contains slot `s`'s window, of
/// those the word describes: the intervals ending at that window and at
/// each later one the word holds (slots `s, s - 1, .. 0`, at most `N`);
/// later intervals hold a subset of these.
///
/// `s <= F`, so every slot read is below `F + N`: no shift reaches the
/// word's width.
#[inline(always)]
fn peak<B: Bits, const N: usize>(l: impl Geometry, slots: B, s: u32) -> u64 {
    debug_assert!(s <= l.future());
    let n = N as u32;
    let at = |k: u32| (slots >> (k * l.slot_bits())).low_u64() & l.slot_max();
    // The interval ending at slot `s`: slots s .. s + N.
    let mut sum = 0;
    for i in 0..n {
        sum += at(s + i);
    }
    let mut peak = sum;
    // Move the end one window later at a time: slot e enters, slot e + N
    // leaves.
    for j in 1..n.min(s + 1) {
        let e = s - j;
        sum = sum + at(e) - at(e + n);
        peak = peak.max(sum);
    }
    peak
}

/// Whether `n` more in slot `s` keeps every interval within the limit.
#[inline(always)]
fn fits<B: Bits, const N: usize>(l: impl Geometry, slots: B, s: u32, n: u64) -> bool {
    peak::<B, N>(l, slots, s).saturating_add(n) <= l.limit()
}

/// The first window after the newest (slot, ticks to wait) where
/// `n` fits and whose start is less than `timeout` after `now`.
fn borrow<B: Bits, const N: usize>(
    l: impl Geometry,
    v: View<B>,
    now: u64,
    n: u64,
) -> Option<(u32, u64)> {
    let mut ahead = 1;
    while ahead <= l.future() {
        // A window that would start after `u64::MAX` never starts.
        let start = start_of(l, v.newest, u64::from(ahead))?;
        // Positive: the newest window is the caller's own or a later one.
        let wait = start - now;
        if wait >= l.timeout() {
            return None;
        }
        let s = l.future() - ahead;
        if fits::<B, N>(l, v.slots, s, n) {
            return Some((s, wait));
        }
        ahead += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::num::NonZeroU64;

    /// xorshift64*: the tests' fixed pseudo-random sequence.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    fn layout(live: u32, window: u64, limit: u64, timeout: u64) -> Layout {
        let w = Divisor::new(NonZeroU64::new(window).unwrap());
        Layout::fit(64, live, w, limit, timeout).unwrap()
    }

    #[test]
    fn slots_take_every_bit_the_shape_leaves() {
        // 64 bits: 1 used bit, at least 32 id bits, (N + F) slots of b.
        let l = layout(2, 500, 1_000, 500);
        assert_eq!((l.slot_bits, l.future, l.id_bits), (10, 1, 33));
        let l = layout(2, 500, 1_000, 0);
        assert_eq!((l.slot_bits, l.future, l.id_bits), (15, 0, 33));
        let l = layout(2, 500, 7, 0);
        assert_eq!(
            (l.slot_bits, l.id_bits),
            (15, 33),
            "the same for any limit that fits"
        );
        let w = Divisor::new(NonZeroU64::new(500).unwrap());
        assert!(
            Layout::fit(64, 2, w, 1 << 10, 500).is_none(),
            "11 bits > 31 / 3"
        );
        let l = Layout::fit(128, 2, w, 1 << 10, 500).unwrap();
        assert_eq!((l.slot_bits, l.id_bits), (31, 34));
        let l = Layout::fit(128, 1, w, 1, 0).unwrap();
        assert_eq!(
            (l.slot_bits, l.id_bits),
            (48, 64),
            "slots no wider than counts"
        );
    }

    /// `Fixed` gives the numbers `Layout::fit` computes.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn fixed_geometry_is_the_layout() {
        fn same<B: Bits, const N: usize, const F: u32>(word_bits: u32) {
            let w = Divisor::new(NonZeroU64::new(10).unwrap());
            let l = Layout::fit(word_bits, N as u32, w, 1, u64::from(F) * 10).unwrap();
            let f = Fixed::<B, N, F>::new(&l);
            assert_eq!(
                (
                    f.id_bits(),
                    f.slot_bits(),
                    f.id_mask(),
                    f.slot_max(),
                    f.slots()
                ),
                (l.id_bits, l.slot_bits, l.id_mask, l.slot_max, N as u32 + F)
            );
        }
        same::<u64, 1, 0>(64);
        same::<u64, 2, 1>(64);
        same::<u64, 10, 1>(64);
        same::<u64, 31, 0>(64);
        same::<u128, 1, 0>(128);
        same::<u128, 2, 1>(128);
        same::<u128, 60, 1>(128);
    }

    #[test]
    fn the_last_slot_holds_the_interval_total() {
        // N = 3, F = 1: slot 0 borrowed, slots 1..4 the interval.
        let l = layout(3, 500, 100, 500);
        assert_eq!((l.future, l.slot_bits), (1, 7));
        let counts = 4u64 | (5 << 7) | (6 << 14) | (7 << 21);
        let fields = encode(&l, counts);
        assert_eq!(slot(&l, fields, 3), 5 + 6 + 7, "the total, not the 7");
        assert_eq!(decode(&l, fields), counts);
        let w = pack(&l, 9, counts);
        // (The view's slots keep the used bit above them.)
        let slots = |w: u64| view(&l, w, 9).slots & ((1 << 28) - 1);
        assert_eq!(slots(w), counts);
        // A booking into the newest window: its slot and the total.
        let booked = w + booking::<_, u64>(&l, 1, 2);
        assert_eq!(slots(booked), counts + (2 << 7));
        assert!(fits_total(&l, booked, 100 - 20) && !fits_total(&l, booked, 100 - 19));
        // N = 1: the only live slot is its own total.
        let l = layout(1, 500, 100, 0);
        assert_eq!(encode(&l, 42u64), 42);
    }

    /// `view` before its inline branch for words whose windows all slid
    /// out: the newest window's case inline, every other to `view_moved`.
    fn view_before<B: Bits>(l: impl Geometry, w: B, c: u64) -> View<B> {
        let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
        if d == 0 {
            View {
                newest: c,
                slots: decode(l, w >> l.id_bits()),
                base: w | used::<B>(),
            }
        } else {
            view_moved(l, w, c, d)
        }
    }

    /// `view` gives what it gave before the inline branch, for never-used
    /// words, packed words, raw words (with and without the used bit) and
    /// callers at every distance around the slots' reach and the id's
    /// half range and wrap, in every 64-bit shape with `N <= 4`, `F <= 2`
    /// (by `Layout` and by `Fixed`), and in 128-bit shapes.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "plain integer arithmetic on word values in safe code: nothing for Miri to check that the native run does not (`--include-ignored` runs a small case)"
    )]
    fn view_is_what_it_was_before_the_inline_branch() {
        fn same<B: Bits + core::fmt::Debug>(l: impl Geometry, w: B, c: u64) {
            let (a, b) = (view(l, w, c), view_before(l, w, c));
            assert!(
                a.newest == b.newest && a.slots == b.slots && a.base == b.base,
                "w {w:?} c {c}: {a:?} against {b:?}"
            );
        }
        fn words_and_callers<B: Bits + core::fmt::Debug>(
            l: impl Geometry,
            rng: &mut Rng,
            rounds: usize,
            mut check: impl FnMut(B, u64),
        ) {
            let mask = l.id_mask();
            let half = mask >> 1;
            let s = u64::from(l.slots());
            let far = [
                1,
                s.saturating_sub(1),
                s,
                s + 1,
                half - 1,
                half,
                half + 1,
                half + 2,
                mask - s,
                mask - 1,
                mask,
                mask.wrapping_add(1),
                mask.wrapping_add(s),
            ];
            for r in 0..rounds {
                // Ids near 0, near the wrap, and anywhere.
                let id = match r % 3 {
                    0 => rng.next() % 4,
                    1 => mask - rng.next() % 4,
                    _ => rng.next(),
                };
                // Counts within the limit per interval, or any fields.
                let mut counts = B::ZERO;
                for k in 0..l.slots() {
                    let v = rng.next() % (l.limit() + 1) / u64::from(l.live());
                    counts = with_slot(l, counts, k, v);
                }
                let raw = (B::from_u64(rng.next()) << (64 % B::BITS)) | B::from_u64(rng.next());
                let words = [
                    B::ZERO,
                    pack(l, id, counts),
                    pack(l, id, B::ZERO),
                    raw | used::<B>(),
                    raw & !used::<B>(),
                    B::ONES,
                ];
                for w in words {
                    let newest = w.low_u64() & mask;
                    let base = if r % 2 == 0 { newest } else { id };
                    for d in 0..s + 3 {
                        check(w, base.wrapping_add(d));
                        check(w, base.wrapping_sub(d));
                    }
                    for d in far {
                        check(w, base.wrapping_add(d));
                        check(w, base.wrapping_sub(d));
                    }
                    check(w, rng.next());
                    check(w, u64::MAX - rng.next() % 4);
                }
            }
        }
        let rounds = if cfg!(miri) { 2 } else { 300 };
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (windows, limits): (&[u64], &[u64]) = if cfg!(miri) {
            (&[7], &[3])
        } else {
            (&[1, 7, 500, u64::MAX], &[0, 1, 3])
        };
        for &window in windows {
            let w = Divisor::new(NonZeroU64::new(window).unwrap());
            for n in 1u32..=4 {
                for f in 0u64..=2 {
                    let timeout = f.saturating_mul(window);
                    for &limit in limits {
                        let Some(l) = Layout::fit(64, n, w, limit, timeout) else {
                            continue;
                        };
                        words_and_callers::<u64>(&l, &mut rng, rounds, |x, c| same(&l, x, c));
                        #[cfg(target_pointer_width = "64")]
                        {
                            macro_rules! fixed {
                                ($(($nn:literal, $ff:literal)),*) => {$(
                                    if (l.live, l.future) == ($nn, $ff) {
                                        let g = Fixed::<u64, $nn, $ff>::new(&l);
                                        words_and_callers::<u64>(g, &mut rng, rounds, |x, c| same(g, x, c));
                                    }
                                )*};
                            }
                            fixed!(
                                (1, 0),
                                (1, 1),
                                (2, 0),
                                (2, 1),
                                (2, 2),
                                (3, 0),
                                (3, 1),
                                (3, 2),
                                (4, 0),
                                (4, 1),
                                (4, 2)
                            );
                        }
                        if let Some(l) = Layout::fit(128, n, w, limit, timeout) {
                            words_and_callers::<u128>(&l, &mut rng, rounds.div_ceil(4), |x, c| {
                                same(&l, x, c)
                            });
                        }
                    }
                }
            }
        }
    }

    /// Where `decide_fast` answers, the general decision answers the same,
    /// on words a gate can reach: random walks of decisions (prioritized
    /// ones borrowing future windows too) from a never-used word, each
    /// word checked for callers at every distance around the slots' reach
    /// and the id's half range and wrap, and for `n` of 1, about half the
    /// limit, the limit, and (in a 64-bit word) over it; every 64-bit
    /// shape with `N <= 4`, `F <= 2`, by `Layout` and by `Fixed`.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "plain integer arithmetic on word values in safe code: nothing for Miri to check that the native run does not (`--include-ignored` runs a small case)"
    )]
    fn the_fast_path_answers_as_the_general_decision() {
        fn walk<const N: usize>(l: impl Geometry, rng: &mut Rng, steps: usize) -> usize {
            let (mask, s) = (l.id_mask(), u64::from(l.slots()));
            let half = mask >> 1;
            let window = l.window().get();
            let mut checked = 0;
            let mut check = |w: u64, c: u64| {
                assert_eq!(
                    left_of::<u64, N>(l, w, c),
                    l.limit().saturating_sub(load_of::<u64, N>(l, w, c)),
                    "w {w:#x} c {c}"
                );
                for n in [1, l.limit() / 2 + 1, l.limit(), l.limit() + 1] {
                    let general = decide::<u64, N>(l, w, c, c.saturating_mul(window), n, false);
                    let (fast, ahead) = decide_fast_ahead(l, w, c, n);
                    assert_eq!(fast, decide_fast(l, w, c, n));
                    match fast {
                        Fast::Book(new) => {
                            assert_eq!(
                                general,
                                Some((new, Outcome::Booked(c))),
                                "w {w:#x} c {c} n {n}"
                            );
                            if w != 0 {
                                assert_eq!(Some(ahead), ahead_of(l, w, c), "w {w:#x} c {c}");
                            }
                            checked += 1;
                        }
                        Fast::Full => {
                            assert_eq!(general, None, "w {w:#x} c {c} n {n}");
                            checked += 1;
                        }
                        Fast::Other => {}
                    }
                }
            };
            for start in [0, mask - 2, rng.next() % (1 << 40)] {
                let (mut w, mut c) = (0u64, start);
                for _ in 0..steps {
                    let newest = w.low_u64() & mask;
                    for d in (0..s + 3).chain([half - 1, half, half + 1, mask]) {
                        check(w, newest.wrapping_add(d));
                        check(w, newest.wrapping_sub(d));
                    }
                    check(w, c);
                    // The next decision of the walk.
                    c = c.wrapping_add(match rng.next() % 8 {
                        0..=3 => 0,
                        4 | 5 => 1,
                        6 => rng.next() % (s + 2),
                        _ => s + rng.next() % 3,
                    });
                    let n = 1 + rng.next() % l.limit();
                    let prioritized = rng.next().is_multiple_of(3);
                    let now = c.saturating_mul(window) + rng.next() % window;
                    if let Some((new, _)) = decide::<u64, N>(l, w, c, now, n, prioritized) {
                        w = new;
                    }
                }
            }
            checked
        }
        // Under Miri (minutes otherwise), a few steps of one window and limit.
        let (steps, windows, limits): (usize, &[u64], &[u64]) = if cfg!(miri) {
            (1, &[7], &[3])
        } else {
            (400, &[1, 7, 500], &[1, 3, 7, 100])
        };
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for &window in windows {
            let wd = Divisor::new(NonZeroU64::new(window).unwrap());
            for f in 0u64..=2 {
                for &limit in limits {
                    macro_rules! shapes {
                        ($($nn:literal),*) => {$(
                            if let Some(l) = Layout::fit(64, $nn, wd, limit, f * window) {
                                checked += walk::<$nn>(&l, &mut rng, steps);
                                #[cfg(target_pointer_width = "64")]
                                {
                                    macro_rules! fixed {
                                        ($ff:literal) => {
                                            if l.future == $ff {
                                                let g = Fixed::<u64, $nn, $ff>::new(&l);
                                                checked += walk::<$nn>(g, &mut rng, steps);
                                            }
                                        };
                                    }
                                    fixed!(0);
                                    fixed!(1);
                                    fixed!(2);
                                }
                            }
                        )*};
                    }
                    shapes!(1, 2, 3, 4);
                }
            }
        }
        assert!(checked > steps, "only {checked} fast answers checked");
    }

    #[test]
    fn peak_covers_the_borrowed_windows() {
        let l = layout(2, 500, 10, 500);
        // slot 0: window newest + 1 (borrowed 4), slot 1: newest (3),
        // slot 2: newest - 1 (6).
        let slots = 4u64 | (3 << 10) | (6 << 20);
        assert_eq!(peak::<_, 2>(&l, slots, 1), 9, "max(3 + 6, 4 + 3)");
        assert_eq!(
            peak::<_, 2>(&l, slots, 0),
            7,
            "the borrowed window's interval"
        );
        assert_eq!(slide(&l, slots, 1), (4 << 10) | (3 << 20));
        assert_eq!(slide(&l, slots, 3), 0);
    }
}
