//! A gate's shape ([`Shape`]: one word of 64 or 128 bits, or buckets) and
//! why a configuration has none ([`GateError`]).

/// Why [`Gate::try_new`](crate::Gate::try_new) refused its parameters.
///
/// ```
/// use leaparray::gate::GateError;
/// let e = GateError::LimitTooLarge { max: leaparray::MAX_COUNT };
/// assert_eq!(e.to_string(), "the limit is above 140737488355327, the most a count holds");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum GateError {
    /// The limit is above [`MAX_COUNT`](crate::MAX_COUNT), the most a count holds.
    LimitTooLarge {
        /// The largest limit a gate takes: [`MAX_COUNT`](crate::MAX_COUNT).
        max: u64,
    },
}

impl core::fmt::Display for GateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GateError::LimitTooLarge { max } => {
                write!(f, "the limit is above {max}, the most a count holds")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for GateError {}

/// How a [`Gate`](crate::Gate) holds its state ([`Gate::shape`](crate::Gate::shape)); the module docs say
/// which shapes get which.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::gate::Shape;
/// use leaparray::Gate;
/// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100);
/// assert_eq!(g.shape(), Shape::Word64 { id_bits: 33 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Shape {
    /// One `AtomicU64` keeping window ids modulo `2^id_bits`.
    Word64 {
        /// Bits of the window id kept (at least 32).
        id_bits: u32,
    },
    /// One `AtomicU128` keeping window ids modulo `2^id_bits`.
    Word128 {
        /// Bits of the window id kept (at least 32, at most 64).
        id_bits: u32,
    },
    /// `N` buckets of a [`Metric`](crate::stats::Metric).
    Buckets,
}
