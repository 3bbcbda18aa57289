//! Errors returned by [`LeapArray`](crate::LeapArray). At the root because
//! arrays, shards, statistics and the breaker all return them.

use core::fmt;

/// Why an [`add`](crate::LeapArray::add) did not count (or did not count all).
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::{AddError, LeapArray};
///
/// let a = LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
/// assert_eq!(a.add(0, 1, 1), Err(AddError::NoSuchCounter));
/// a.add(1_000, 0, 1).unwrap(); // window 2 moves slot 0 past window 0
/// assert_eq!(a.add(0, 0, 1), Err(AddError::Stale));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AddError {
    /// The window of `now` has been retired: its slot already holds a newer
    /// window (the caller's clock is behind, or another thread's is far
    /// ahead). Nothing was counted, and nothing any reader can see changed.
    Stale,
    /// The counter index is not below the array's `C`. Nothing was counted.
    NoSuchCounter,
    /// The count reached [`MAX_COUNT`](crate::MAX_COUNT) (or, for
    /// [`sub`](crate::LeapArray::sub), 0): it now holds exactly that bound
    /// (it never wraps), so part of `n` was not counted.
    Saturated,
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddError::Stale => {
                "the window of this time has been retired (its slot holds a newer window)"
            }
            AddError::NoSuchCounter => "counter index out of range",
            AddError::Saturated => "count saturated at MAX_COUNT (or at 0 for sub)",
        })
    }
}

/// Why a [`sum_span`](crate::LeapArray::sum_span) was refused.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::array::SpanError;
/// use leaparray::LeapArray;
///
/// let a = LeapArray::<4>::new(NonZeroU64::new(250).unwrap());
/// assert_eq!(a.sum_span(0, 300, 0), Err(SpanError::NotMultiple));
/// assert_eq!(a.sum_span(0, 1_250, 0), Err(SpanError::TooLong));
/// assert_eq!(a.sum_span(0, 0, 0), Err(SpanError::Zero));
/// assert_eq!(a.sum_span(0, 500, 1), Err(SpanError::NoSuchCounter));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SpanError {
    /// The span is zero ticks long.
    Zero,
    /// The span is not a whole number of windows.
    NotMultiple,
    /// The span is longer than the interval (`N` windows).
    TooLong,
    /// The counter index is not below the array's `C`.
    NoSuchCounter,
}

impl fmt::Display for SpanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpanError::Zero => "span is zero",
            SpanError::NotMultiple => "span is not a whole number of windows",
            SpanError::TooLong => "span is longer than the array's interval",
            SpanError::NoSuchCounter => "counter index out of range",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for AddError {}

#[cfg(feature = "std")]
impl std::error::Error for SpanError {}
