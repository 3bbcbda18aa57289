//! [`Decision`]: what a gate, a set of gates or a keyed table decided.

/// Whether a request was admitted: the answer of every `try_acquire`
/// ([`Gate`](crate::Gate), [`GateSet`](crate::GateSet),
/// [`KeyedGate`](crate::KeyedGate)). Ignoring it is an error: a
/// [`Pass`](Self::Pass) has already booked its permits. (A prioritized
/// request, which may also be told to wait, gets a
/// [`gate::PriorityDecision`](crate::gate::PriorityDecision).)
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::{Decision, Gate};
/// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 1);
/// assert_eq!(g.try_acquire(0, 1), Decision::Pass);
/// assert_eq!(g.try_acquire(0, 1), Decision::Block);
/// assert!(Decision::Pass.is_pass());
/// ```
#[must_use = "a Pass has already booked its permits"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Decision {
    /// Admitted now: the permits are booked.
    Pass,
    /// Refused: nothing is booked.
    Block,
}

impl Decision {
    /// Whether the request was admitted.
    ///
    /// ```
    /// use leaparray::Decision;
    /// assert!(Decision::Pass.is_pass() && !Decision::Block.is_pass());
    /// ```
    #[must_use]
    pub const fn is_pass(self) -> bool {
        matches!(self, Decision::Pass)
    }
}
