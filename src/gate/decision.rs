//! [`Decision`]: what a gate, a set of gates or a keyed table decided;
//! [`PriorityDecision`]: what a gate decided for a prioritized request.

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

/// What [`Gate::try_acquire_prioritized`](crate::Gate::try_acquire_prioritized) decided: a [`Decision`], or a
/// wait for a future window whose permits are already booked. Ignoring it
/// is an error: a [`Pass`](Self::Pass) or [`Wait`](Self::Wait) has
/// already booked its permits.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::gate::PriorityDecision;
/// use leaparray::{Decision, Gate};
/// let g = Gate::<1>::new(NonZeroU64::new(500).unwrap(), 1);
/// assert_eq!(g.try_acquire_prioritized(100, 1), PriorityDecision::Pass);
/// assert_eq!(g.try_acquire_prioritized(100, 1), PriorityDecision::Wait(400));
/// assert_eq!(PriorityDecision::from(Decision::Block), PriorityDecision::Block);
/// ```
#[must_use = "a Pass or Wait has already booked its permits"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PriorityDecision {
    /// Admitted now.
    Pass,
    /// Admitted in a future window: come back after this many ticks. The
    /// permits are already booked there (Sentinel's
    /// `PriorityWaitException`).
    Wait(u64),
    /// Refused: nothing is booked.
    Block,
}

impl From<Decision> for PriorityDecision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Pass => PriorityDecision::Pass,
            Decision::Block => PriorityDecision::Block,
        }
    }
}
