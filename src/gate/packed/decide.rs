//! A decision on the word (the module's "A decision", "The fast path" and
//! "Late callers"): [`WordGate`], the general decision and its fast path.

use super::layout::{
    booking, decode, encode, is_plain, pack, slide, slot, start_of, total_slot, used, view,
    with_slot, Bits, Geometry, View, WordCell,
};
use super::read::{count_of, fits, load_of, peak, retry_after_of};
use crate::sync::Ordering::{AcqRel, Acquire};

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

/// Whether the interval total of the used word `w` has room for `n`
/// (`1 ..= limit`). The total slot is the highest, so `w` shifted down to
/// it is the total plus the used bit (the bits between are zero): the
/// used bit is added to the limit instead of masked off the word.
#[inline(always)]
pub(super) fn fits_total<B: Bits>(l: impl Geometry, w: B, n: u64) -> bool {
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

/// The first window after the newest (slot, ticks to wait) where
/// `n` fits and whose start is less than `timeout` after `now`.
pub(super) fn borrow<B: Bits, const N: usize>(
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
