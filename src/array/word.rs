//! Bit layouts of the two kinds of atomic word a bucket holds.
//!
//! Both are plain `u64` values (a [`Narrow`] word's values fit in 32 bits:
//! generation 8 | window 24, and generation 8 | sealed 1 | count 23); the
//! atomics that hold them live in [`crate::array::bucket`], and are read and written
//! as `u64` values through [`crate::sync::AtomicWord`]. Keeping the encodings here, as `const fn`s on `Copy`
//! newtypes, keeps the protocol code free of shifts and masks.
//!
//! ```text
//! Stamp (one per bucket)
//!  63            48 47                                              0
//! +----------------+-------------------------------------------------+
//! | generation: 16 | window id, low 48 bits                          |
//! +----------------+-------------------------------------------------+
//!   value 0 = EMPTY: the bucket has never held a window.
//!
//! Cell word (one per counter per bucket)
//!  63            48  47  46                                         0
//! +----------------+----+--------------------------------------------+
//! | generation: 16 | S  | count: 47                                  |
//! +----------------+----+--------------------------------------------+
//!   S = sealed: the window of this generation is being (or has been)
//!   retired; the count is final and no add may change it.
//! ```
//!
//! Generations count the roll-overs of one bucket, wrapping at 2^16 and
//! compared with wrapping arithmetic (signed difference). Window ids are
//! compared modulo 2^48, as a signed 48-bit difference, against a full
//! 64-bit window id computed from the caller's time.

use core::marker::PhantomData;

/// Largest count one counter of one window of a [`LeapArray`](crate::LeapArray)
/// (64-bit words) can hold: `2^47 - 1`.
///
/// An add that would go past it leaves the counter at this value and
/// returns [`AddError::Saturated`](crate::AddError::Saturated).
///
/// ```
/// assert_eq!(leaparray::MAX_COUNT, (1u64 << 47) - 1);
/// ```
pub const MAX_COUNT: u64 = <Wide as Width>::MAX_COUNT;

/// The word width of a [`LeapArray`](crate::LeapArray)'s buckets:
/// [`Wide`] (64-bit atomics, the default) or [`Narrow`] (32-bit atomics, for
/// targets that have no 64-bit ones). Sealed: only these two exist.
///
/// ```
/// use leaparray::array::{Narrow, Wide, Width};
/// assert_eq!(Wide::MAX_COUNT, (1 << 47) - 1);
/// assert_eq!(Narrow::MAX_COUNT, (1 << 23) - 1);
/// assert_eq!(Narrow::WINDOW_RANGE, 1 << 23);
/// ```
pub trait Width: sealed::Sealed + Copy + Default + Eq + core::fmt::Debug + 'static {
    /// Largest count of one counter in one window.
    ///
    /// ```
    /// use leaparray::array::{Narrow, Width};
    /// assert_eq!(Narrow::MAX_COUNT, 8_388_607);
    /// ```
    const MAX_COUNT: u64;
    /// Two times in use must be fewer than this many windows apart (half the
    /// stored id range), and so must every bucket's window and the times in
    /// use (see [`LeapArray::refresh`](crate::LeapArray::refresh)).
    ///
    /// ```
    /// use leaparray::array::{Wide, Width};
    /// assert_eq!(Wide::WINDOW_RANGE, 1 << 47);
    /// ```
    const WINDOW_RANGE: u64;
}

/// 64-bit bucket words: 16-bit generations, window ids modulo 2^48, counts
/// up to 2^47 - 1. The default.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::array::Wide;
/// use leaparray::LeapArray;
///
/// let a: LeapArray<2, 1, Wide> = LeapArray::new(NonZeroU64::new(10).unwrap());
/// a.add(0, 0, 1 << 40).unwrap();
/// assert_eq!(a.sum(0, 0), 1 << 40);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Wide;

/// 32-bit bucket words, for targets with 32-bit but no 64-bit atomics
/// (Cortex-M3/M4/M33, riscv32imac, Xtensa): lock-free there without masking
/// interrupts. 8-bit generations, window ids modulo 2^24, counts up to
/// 2^23 - 1 (8,388,607) per window. See [`LeapArray::new_narrow`](crate::LeapArray::new_narrow)
/// for the limits that follow.
///
/// `LeapArray<N, C, Narrow>` runs the same protocol with the same API, with
/// no interrupt masking and on multi-core chips too (where portable-atomic's
/// `unsafe-assume-single-core` is not an option). The price is range (see
/// section 5 of [`guarantees`](crate::guarantees)). The property test, the
/// stress test, the loom models (`loom-tests/tests/narrow.rs`) and the
/// firmware run it too.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::array::{Narrow, Width};
/// use leaparray::{AddError, LeapArray};
///
/// let a = LeapArray::<2, 1, Narrow>::new_narrow(NonZeroU64::new(10).unwrap());
/// assert_eq!(a.add(0, 0, Narrow::MAX_COUNT + 1), Err(AddError::Saturated));
/// assert_eq!(a.sum(0, 0), Narrow::MAX_COUNT);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Narrow;

impl Width for Wide {
    const MAX_COUNT: u64 = (1 << 47) - 1;
    const WINDOW_RANGE: u64 = 1 << 47;
}

impl Width for Narrow {
    const MAX_COUNT: u64 = (1 << 23) - 1;
    const WINDOW_RANGE: u64 = 1 << 23;
}

/// Loom builds only: 32-bit words with **3-bit generations**, so that a
/// model can roll a bucket past half the generation range (4 roll-overs)
/// and up to the limit (5) while a thread is stalled, in a few steps.
/// Window ids modulo 2^28, counts up to 2^27 - 1.
#[cfg(leaparray_loom)]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LoomTinyGen;

#[cfg(leaparray_loom)]
impl Width for LoomTinyGen {
    const MAX_COUNT: u64 = (1 << 27) - 1;
    const WINDOW_RANGE: u64 = 1 << 27;
}

pub(crate) mod sealed {
    use crate::sync::AtomicWord;

    /// The layout constants and atomic word of a width. Sealed: the layout
    /// is not part of the public API.
    pub trait Sealed {
        /// Bits of the generation tag in stamps and cells.
        const GEN_BITS: u32;
        /// Bits of the window id kept in a stamp: ids are compared modulo
        /// `2^WINDOW_BITS`.
        const WINDOW_BITS: u32;
        /// The atomic type of one bucket word.
        type Atomic: AtomicWord;
    }

    impl Sealed for super::Wide {
        const GEN_BITS: u32 = 16;
        const WINDOW_BITS: u32 = 48;
        type Atomic = crate::sync::AtomicU64;
    }

    impl Sealed for super::Narrow {
        const GEN_BITS: u32 = 8;
        const WINDOW_BITS: u32 = 24;
        type Atomic = crate::sync::AtomicU32;
    }

    #[cfg(leaparray_loom)]
    impl Sealed for super::LoomTinyGen {
        const GEN_BITS: u32 = 3;
        const WINDOW_BITS: u32 = 28;
        type Atomic = crate::sync::AtomicU32;
    }
}

/// Signed distance `a - b` between two generations of width `W` (wrapping).
pub(crate) const fn gen_diff<W: Width>(a: u16, b: u16) -> i64 {
    let bits = W::GEN_BITS;
    let d = (a.wrapping_sub(b) as u64) & ((1 << bits) - 1);
    ((d << (64 - bits)) as i64) >> (64 - bits)
}

/// The stamp word: which window a bucket holds, and its generation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Stamp<W>(pub(crate) u64, PhantomData<fn() -> W>);

impl<W: Width> Stamp<W> {
    const GEN_SHIFT: u32 = W::WINDOW_BITS;
    const WINDOW_MASK: u64 = (1 << W::WINDOW_BITS) - 1;
    const GEN_MASK: u64 = (1 << W::GEN_BITS) - 1;

    /// A bucket that has never held a window.
    pub(crate) const EMPTY: Stamp<W> = Stamp(0, PhantomData);

    pub(crate) const fn of(v: u64) -> Self {
        Stamp(v, PhantomData)
    }

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == Self::EMPTY.0
    }

    pub(crate) const fn generation(self) -> u16 {
        ((self.0 >> Self::GEN_SHIFT) & Self::GEN_MASK) as u16
    }

    /// `window - (window held)` as a signed difference of `WINDOW_BITS`
    /// bits: `0` when the bucket holds `window`, positive when it holds an
    /// older window, negative when it holds a newer one. Meaningless for
    /// `EMPTY`.
    pub(crate) const fn window_diff(self, window: u64) -> i64 {
        let d = window.wrapping_sub(self.0) & Self::WINDOW_MASK;
        let unused = 64 - W::WINDOW_BITS;
        ((d << unused) as i64) >> unused
    }

    /// Whether the bucket holds `window` (and is not empty).
    pub(crate) const fn holds(self, window: u64) -> bool {
        !self.is_empty() && self.window_diff(window) == 0
    }

    /// The stamp that follows `self` when the bucket moves to `window`:
    /// the next generation, skipping the one value that would read as
    /// `EMPTY`.
    pub(crate) const fn next(self, window: u64) -> Self {
        let low = window & Self::WINDOW_MASK;
        let mut gen = (self.generation() as u64 + 1) & Self::GEN_MASK;
        if gen == 0 && low == 0 {
            gen = 1;
        }
        Stamp((gen << Self::GEN_SHIFT) | low, PhantomData)
    }
}

/// A counter word: generation tag, sealed flag and count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct CellWord<W>(pub(crate) u64, PhantomData<fn() -> W>);

impl<W: Width> CellWord<W> {
    /// A word is `GEN_BITS + WINDOW_BITS` wide; a cell spends one bit on
    /// the seal, so its count has `WINDOW_BITS - 1`.
    const COUNT_BITS: u32 = W::WINDOW_BITS - 1;
    const GEN_SHIFT: u32 = Self::COUNT_BITS + 1;
    const SEALED: u64 = 1 << Self::COUNT_BITS;
    const GEN_MASK: u64 = (1 << W::GEN_BITS) - 1;

    pub(crate) const fn of(v: u64) -> Self {
        CellWord(v, PhantomData)
    }

    pub(crate) const fn new(gen: u16, sealed: bool, count: u64) -> Self {
        let s = if sealed { Self::SEALED } else { 0 };
        let g = (gen as u64) & Self::GEN_MASK;
        CellWord(
            (g << Self::GEN_SHIFT) | s | (count & W::MAX_COUNT),
            PhantomData,
        )
    }

    pub(crate) const fn generation(self) -> u16 {
        ((self.0 >> Self::GEN_SHIFT) & Self::GEN_MASK) as u16
    }

    pub(crate) const fn is_sealed(self) -> bool {
        self.0 & Self::SEALED != 0
    }

    pub(crate) const fn count(self) -> u64 {
        self.0 & W::MAX_COUNT
    }

    /// Whether this cell is sealed and tagged with the generation a bucket
    /// had just before `gen`: `gen - 1`, or `gen - 2` when `gen` is 1 (the
    /// roll-over from the last generation to 1 skips 0 when 0 would make the
    /// stamp read as `EMPTY`, see [`Stamp::next`]). While a bucket's stamp
    /// has generation `gen`, that is the only older tag its cells can carry;
    /// any other is a generation that has come round again.
    pub(crate) const fn is_sealed_predecessor_of(self, gen: u16) -> bool {
        if !self.is_sealed() {
            return false;
        }
        let d = gen_diff::<W>(self.generation(), gen);
        d == -1 || (d == -2 && gen == 1)
    }

    /// The count this cell contributes to the window of generation `gen`:
    /// its count when tagged `gen`, else 0 (an older tag means nothing has
    /// been added in `gen` yet).
    pub(crate) const fn count_for(self, gen: u16) -> u64 {
        if self.generation() == gen {
            self.count()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = Stamp<Wide>;
    type C = CellWord<Wide>;

    #[test]
    fn stamp_window_diff_is_signed_48_bit() {
        let s = S::EMPTY.next(10);
        assert_eq!(s.window_diff(10), 0);
        assert_eq!(s.window_diff(12), 2);
        assert_eq!(s.window_diff(7), -3);
        // Ids beyond 48 bits compare by their low 48 bits.
        assert_eq!(s.window_diff(10 + (1 << 48)), 0);
        let far = S::EMPTY.next(u64::MAX);
        assert_eq!(far.window_diff(u64::MAX), 0);
        assert_eq!(far.window_diff(u64::MAX - 5), -5);
        assert_eq!(far.window_diff(0), 1, "wraps like the 48-bit field");
    }

    #[test]
    fn next_stamp_never_reads_as_empty() {
        let s = S::of(((u16::MAX as u64) << 48) | 5);
        let n = s.next(1 << 48);
        assert!(!n.is_empty());
        assert_eq!(n.generation(), 1);
        assert!(n.holds(1 << 48));
        assert_eq!(S::EMPTY.next(0).generation(), 1);
        assert!(!S::EMPTY.holds(0));
    }

    #[test]
    fn cell_fields_round_trip() {
        let c = C::new(0xBEEF, true, MAX_COUNT);
        assert_eq!(c.generation(), 0xBEEF);
        assert!(c.is_sealed());
        assert_eq!(c.count(), MAX_COUNT);
        assert_eq!(c.count_for(0xBEEF), MAX_COUNT);
        assert_eq!(c.count_for(0xBEEE), 0);
        let c = C::new(3, false, 42);
        assert!(!c.is_sealed());
        assert_eq!(c.count(), 42);
        assert_eq!(gen_diff::<Wide>(0, u16::MAX), 1);
        // The single writer's store: an open tag or-ed with a count.
        for (gen, count) in [(3, 0), (3, 40), (u16::MAX, MAX_COUNT), (1, 1 << 46)] {
            assert_eq!(C::new(gen, false, 0).0 | count, C::new(gen, false, count).0);
        }
        assert_eq!(gen_diff::<Wide>(u16::MAX, 1), -2);
    }
}

#[cfg(test)]
mod narrow_tests {
    use super::*;

    #[test]
    fn narrow_layout() {
        type S = Stamp<Narrow>;
        type C = CellWord<Narrow>;
        let s = S::EMPTY.next(10);
        assert!(s.0 < 1 << 32);
        assert_eq!(
            (s.generation(), s.window_diff(10), s.window_diff(13)),
            (1, 0, 3)
        );
        assert_eq!(s.window_diff(10 + (1 << 24)), 0, "ids compare modulo 2^24");
        assert_eq!(s.window_diff(9), -1);
        let top = S::of((255 << 24) | 7);
        assert_eq!(top.generation(), 255);
        let n = top.next(1 << 24);
        assert!(
            !n.is_empty() && n.generation() == 1,
            "skips the empty stamp"
        );
        let c = C::new(255, true, Narrow::MAX_COUNT);
        assert!(c.0 < 1 << 32);
        assert_eq!(
            (c.generation(), c.is_sealed(), c.count()),
            (255, true, Narrow::MAX_COUNT)
        );
        assert_eq!(gen_diff::<Narrow>(0, 255), 1);
        assert_eq!(gen_diff::<Narrow>(255, 1), -2);
        assert_eq!(gen_diff::<Narrow>(3, 3), 0);
    }

    #[test]
    fn only_the_sealed_previous_generation_is_a_predecessor() {
        type C = CellWord<Narrow>;
        assert!(C::new(6, true, 0).is_sealed_predecessor_of(7));
        assert!(!C::new(6, false, 0).is_sealed_predecessor_of(7), "open");
        assert!(!C::new(5, true, 0).is_sealed_predecessor_of(7));
        assert!(C::new(255, true, 0).is_sealed_predecessor_of(0));
        assert!(C::new(0, true, 0).is_sealed_predecessor_of(1));
        assert!(
            C::new(255, true, 0).is_sealed_predecessor_of(1),
            "255 -> 1 skips the generation 0 that would read as EMPTY"
        );
        assert!(!C::new(254, true, 0).is_sealed_predecessor_of(0));
        // Half the range away reads as older in a signed comparison; it is
        // not the predecessor.
        assert!(!C::new(7 + 128, true, 0).is_sealed_predecessor_of(7));
        assert!(!C::new(7 + 129, true, 0).is_sealed_predecessor_of(7));
        assert!(!CellWord::<Wide>::new(7 + 32_768, true, 0).is_sealed_predecessor_of(7));
    }
}
