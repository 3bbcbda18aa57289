//! Bit layouts of the two kinds of atomic word a bucket holds.
//!
//! Both are plain `u64` values; the atomics that hold them live in
//! [`crate::bucket`]. Keeping the encodings here, as `const fn`s on `Copy`
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
//! Cell (one per counter per bucket)
//!  63            48  47  46                                         0
//! +----------------+----+--------------------------------------------+
//! | generation: 16 | S  | count: 47                                  |
//! +----------------+----+--------------------------------------------+
//!   S = sealed: the window of this generation is being (or has been)
//!   retired; the count is final and no add may change it.
//! ```
//!
//! Generations count the roll-overs of one bucket, wrapping at 2^16 and
//! compared with wrapping arithmetic (`i16` difference). Window ids are
//! compared modulo 2^48, as a signed 48-bit difference, against a full
//! 64-bit window id computed from the caller's time.

/// Largest count one counter of one window can hold: `2^47 - 1`.
///
/// An add that would go past it leaves the counter at this value and
/// returns [`AddError::Saturated`](crate::AddError::Saturated).
///
/// ```
/// assert_eq!(leaparray::MAX_COUNT, (1u64 << 47) - 1);
/// ```
pub const MAX_COUNT: u64 = (1 << COUNT_BITS) - 1;

const COUNT_BITS: u32 = 47;
const GEN_SHIFT: u32 = 48;
const WINDOW_BITS: u32 = 48;
const WINDOW_MASK: u64 = (1 << WINDOW_BITS) - 1;
const SEALED: u64 = 1 << COUNT_BITS;

/// Signed distance `a - b` between two generations (wrapping).
pub(crate) const fn gen_diff(a: u16, b: u16) -> i16 {
    a.wrapping_sub(b) as i16
}

/// The stamp word: which window a bucket holds, and its generation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Stamp(pub(crate) u64);

impl Stamp {
    /// A bucket that has never held a window.
    pub(crate) const EMPTY: Stamp = Stamp(0);

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == Self::EMPTY.0
    }

    pub(crate) const fn generation(self) -> u16 {
        (self.0 >> GEN_SHIFT) as u16
    }

    /// `window - (window held)` as a signed 48-bit difference: `0` when the
    /// bucket holds `window`, positive when it holds an older window,
    /// negative when it holds a newer one. Meaningless for `EMPTY`.
    pub(crate) const fn window_diff(self, window: u64) -> i64 {
        let d = window.wrapping_sub(self.0) & WINDOW_MASK;
        // Sign-extend bit 47.
        ((d << (64 - WINDOW_BITS)) as i64) >> (64 - WINDOW_BITS)
    }

    /// Whether the bucket holds `window` (and is not empty).
    pub(crate) const fn holds(self, window: u64) -> bool {
        !self.is_empty() && self.window_diff(window) == 0
    }

    /// The stamp that follows `self` when the bucket moves to `window`:
    /// the next generation, skipping the one value that would read as
    /// `EMPTY`.
    pub(crate) const fn next(self, window: u64) -> Stamp {
        let low = window & WINDOW_MASK;
        let mut gen = self.generation().wrapping_add(1);
        if gen == 0 && low == 0 {
            gen = 1;
        }
        Stamp(((gen as u64) << GEN_SHIFT) | low)
    }
}

/// A counter word: generation tag, sealed flag and count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Cell(pub(crate) u64);

impl Cell {
    pub(crate) const fn new(gen: u16, sealed: bool, count: u64) -> Cell {
        let s = if sealed { SEALED } else { 0 };
        Cell(((gen as u64) << GEN_SHIFT) | s | (count & MAX_COUNT))
    }

    pub(crate) const fn generation(self) -> u16 {
        (self.0 >> GEN_SHIFT) as u16
    }

    pub(crate) const fn is_sealed(self) -> bool {
        self.0 & SEALED != 0
    }

    pub(crate) const fn count(self) -> u64 {
        self.0 & MAX_COUNT
    }

    /// `self` plus `n`, if `self` is an open cell of generation `gen` and
    /// the sum stays within `MAX_COUNT`: one add on the whole word (the tag
    /// and the sealed bit are above the count and do not change), so the
    /// single writer's store depends on its load through one instruction.
    #[inline]
    pub(crate) const fn plus(self, gen: u16, n: u64) -> Option<Cell> {
        // Tag == gen and not sealed, in one comparison of the top 17 bits.
        if self.0 >> COUNT_BITS != (gen as u64) << 1 || n > MAX_COUNT {
            return None;
        }
        // No carry can reach past bit 47: count < 2^47 and n < 2^47.
        let sum = self.0 + n;
        if sum & SEALED != 0 {
            None
        } else {
            Some(Cell(sum))
        }
    }

    /// The count this cell contributes to the window of generation `gen`:
    /// its count when tagged `gen`, else 0 (an older tag means nothing has
    /// been added in `gen` yet).
    pub(crate) const fn count_in(self, gen: u16) -> u64 {
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

    #[test]
    fn stamp_window_diff_is_signed_48_bit() {
        let s = Stamp::EMPTY.next(10);
        assert_eq!(s.window_diff(10), 0);
        assert_eq!(s.window_diff(12), 2);
        assert_eq!(s.window_diff(7), -3);
        // Ids beyond 48 bits compare by their low 48 bits.
        assert_eq!(s.window_diff(10 + (1 << 48)), 0);
        let far = Stamp::EMPTY.next(u64::MAX);
        assert_eq!(far.window_diff(u64::MAX), 0);
        assert_eq!(far.window_diff(u64::MAX - 5), -5);
        assert_eq!(far.window_diff(0), 1, "wraps like the 48-bit field");
    }

    #[test]
    fn next_stamp_never_reads_as_empty() {
        let s = Stamp(((u16::MAX as u64) << GEN_SHIFT) | 5);
        let n = s.next(1 << 48);
        assert!(!n.is_empty());
        assert_eq!(n.generation(), 1);
        assert!(n.holds(1 << 48));
        assert_eq!(Stamp::EMPTY.next(0).generation(), 1);
        assert!(!Stamp::EMPTY.holds(0));
    }

    #[test]
    fn cell_fields_round_trip() {
        let c = Cell::new(0xBEEF, true, MAX_COUNT);
        assert_eq!(c.generation(), 0xBEEF);
        assert!(c.is_sealed());
        assert_eq!(c.count(), MAX_COUNT);
        assert_eq!(c.count_in(0xBEEF), MAX_COUNT);
        assert_eq!(c.count_in(0xBEEE), 0);
        let c = Cell::new(3, false, 42);
        assert!(!c.is_sealed());
        assert_eq!(c.count(), 42);
        assert_eq!(gen_diff(0, u16::MAX), 1);
        assert_eq!(
            Cell::new(3, false, 40).plus(3, 2),
            Some(Cell::new(3, false, 42))
        );
        assert_eq!(Cell::new(3, false, 40).plus(4, 2), None, "other generation");
        assert_eq!(Cell::new(3, true, 40).plus(3, 2), None, "sealed");
        assert_eq!(
            Cell::new(3, false, MAX_COUNT).plus(3, 1),
            None,
            "would overflow"
        );
        assert_eq!(
            Cell::new(3, false, MAX_COUNT - 1).plus(3, 1),
            Some(Cell::new(3, false, MAX_COUNT))
        );
        assert_eq!(Cell::new(3, false, 0).plus(3, u64::MAX), None);
        assert_eq!(gen_diff(u16::MAX, 1), -2);
    }
}
