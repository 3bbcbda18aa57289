//! The word's layout (the module's "The word"): the integer types and
//! atomic cells a word is made of, where each field sits for a shape
//! ([`Layout`], or [`Fixed`] when the shape is a constant), and reading,
//! sliding and rewriting the fields.

use crate::gate::divide::Divisor;
use crate::sync::Ordering;
use core::ops::{Add, BitAnd, BitOr, Not, Shl, Shr, Sub};

/// The bits every shape keeps of the window id, at least.
pub(crate) const MIN_ID_BITS: u32 = 32;

/// The word's top bit, set by every write: marks a used word.
#[inline(always)]
pub(super) fn used<B: Bits>() -> B {
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
pub(super) const MAX_SLOT_BITS: u32 = 48;

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
pub(super) const fn future_windows(live: u32, window: u64, timeout: u64) -> u32 {
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
pub(super) struct View<B> {
    pub(super) newest: u64,
    /// Slot `k` at bits `k * b`.
    pub(super) slots: B,
    /// The word that holds `newest` and `slots` (so a booking is one add).
    pub(super) base: B,
}

/// The word `w` as seen from window `c`.
#[inline(always)]
pub(super) fn view<B: Bits>(l: impl Geometry, w: B, c: u64) -> View<B> {
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
pub(super) fn view_moved<B: Bits>(l: impl Geometry, w: B, c: u64, d: u64) -> View<B> {
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
pub(super) fn start_of(l: impl Geometry, newest: u64, ahead: u64) -> Option<u64> {
    newest.checked_add(ahead)?.checked_mul(l.window().get())
}

/// `slots` after the newest window moved `d` windows on.
#[inline(always)]
pub(super) fn slide<B: Bits>(l: impl Geometry, slots: B, d: u64) -> B {
    if d >= u64::from(l.slots()) {
        return B::ZERO;
    }
    let all = l.slots() * l.slot_bits();
    shl(slots, d as u32 * l.slot_bits()) & !shl(B::ONES, all)
}

/// The word for `newest` and the counts `slots`.
#[inline(always)]
pub(super) fn pack<B: Bits>(l: impl Geometry, newest: u64, slots: B) -> B {
    (encode(l, slots) << l.id_bits()) | B::from_u64(newest & l.id_mask()) | used::<B>()
}

/// The slot whose field holds the interval total instead of its count
/// (the oldest live window's; with `N = 1` the only live slot, whose count
/// is the total).
#[inline(always)]
pub(super) fn total_slot(l: impl Geometry) -> u32 {
    l.slots() - 1
}

/// The passes of the interval ending at the newest window, in counts
/// `slots`.
#[inline(always)]
pub(super) fn live_total<B: Bits>(l: impl Geometry, slots: B) -> u64 {
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
pub(super) fn decode<B: Bits>(l: impl Geometry, fields: B) -> B {
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
pub(super) fn encode<B: Bits>(l: impl Geometry, slots: B) -> B {
    if l.live() < 2 {
        return slots;
    }
    let total = live_total(l, slots).min(l.slot_max());
    with_slot(l, slots, total_slot(l), total)
}

/// `x << k`, 0 when `k` is the width or more.
#[inline(always)]
pub(super) fn shl<B: Bits>(x: B, k: u32) -> B {
    if k >= B::BITS {
        B::ZERO
    } else {
        x << k
    }
}

/// The count in slot `k` (0 past the last slot).
#[inline(always)]
pub(super) fn slot<B: Bits>(l: impl Geometry, slots: B, k: u32) -> u64 {
    let at = k * l.slot_bits();
    if at >= B::BITS {
        0
    } else {
        (slots >> at).low_u64() & l.slot_max()
    }
}

#[inline(always)]
pub(super) fn with_slot<B: Bits>(l: impl Geometry, slots: B, k: u32, count: u64) -> B {
    let at = k * l.slot_bits();
    (slots & !(B::from_u64(l.slot_max()) << at)) | (B::from_u64(count) << at)
}

/// Whether `w` is a used word whose future windows hold nothing: then
/// every interval containing the newest window holds at most its total
/// (the intervals through the future windows add only zeros to a part of
/// it).
#[inline(always)]
pub(super) fn is_plain<B: Bits>(l: impl Geometry, w: B) -> bool {
    // The low `F * b` bits: the future fields.
    let future = !shl(B::ONES, l.future() * l.slot_bits());
    w & ((future << l.id_bits()) | used::<B>()) == used::<B>()
}

/// `n` in slot `slot`, in place in a word: what a booking adds (to the
/// interval total too, for a live slot).
#[inline(always)]
pub(super) fn booking<G: Geometry, B: Bits>(l: G, slot: u32, n: u64) -> B {
    let field = shl(B::from_u64(n), l.id_bits() + slot * l.slot_bits());
    if l.live() >= 2 && slot >= l.future() {
        field + shl(B::from_u64(n), l.id_bits() + total_slot(l) * l.slot_bits())
    } else {
        field
    }
}
