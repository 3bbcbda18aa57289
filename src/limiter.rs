//! [`Limiter`]: the smallest surface a rate limiter built on this crate
//! needs, and the [`Decision`] its [`try_acquire`](Limiter::try_acquire)
//! returns.

use crate::error::AddError;

/// What a limiter decided. Ignoring it is an error: a [`Pass`](Self::Pass)
/// or [`Wait`](Self::Wait) has already booked its permits.
///
/// ```
/// use leaparray::Decision;
/// assert_ne!(Decision::Pass, Decision::Wait(3));
/// ```
#[must_use = "a Pass or Wait has already booked its permits"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Decision {
    /// Admitted now.
    Pass,
    /// Admitted in a future window: come back after this many ticks. The
    /// permit is already booked (Sentinel's `PriorityWaitException`).
    Wait(u64),
    /// Refused.
    Block,
}

/// A sliding-window limiter driven by the caller's clock: record, observe,
/// try to acquire. [`Gate`](crate::Gate) implements it; other crates
/// can implement it, or wrap one (it is implemented for references too).
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::{Decision, Gate, Limiter};
///
/// fn serve(l: &impl Limiter, now: u64) -> bool {
///     l.try_acquire(now, 1) == Decision::Pass
/// }
/// let gate = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 2);
/// assert!(serve(&gate, 0) && serve(&gate, 1));
/// assert!(!serve(&gate, 2));
/// assert_eq!((gate.count(2), gate.remaining(2)), (2, 0));
/// ```
pub trait Limiter {
    /// Records `n` admissions at `now` without checking the limit (for
    /// work admitted elsewhere that must still count).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{Decision, Gate, Limiter};
    ///
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// g.record(0, 4).unwrap();
    /// assert_eq!(Limiter::try_acquire(&g, 0, 2), Decision::Block); // 4 + 2 > 5
    /// ```
    fn record(&self, now: u64, n: u64) -> Result<(), AddError>;

    /// How many were admitted in the sliding interval ending at `now`;
    /// observes without consuming.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{Decision, Gate, Limiter};
    ///
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// let _ = g.try_acquire(100, 3);
    /// assert_eq!((g.count(400), g.count(1_000)), (3, 0));
    /// ```
    fn count(&self, now: u64) -> u64;

    /// The most that may be admitted in any interval.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{Decision, Gate, Limiter};
    ///
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// assert_eq!(Limiter::limit(&g), 5);
    /// ```
    fn limit(&self) -> u64;

    /// Admits `n` at `now` (all or nothing), or refuses.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{Decision, Gate, Limiter};
    ///
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// let l: &dyn Limiter = &g;
    /// assert_eq!(l.try_acquire(0, 5), Decision::Pass);
    /// assert_eq!(l.try_acquire(0, 1), Decision::Block);
    /// ```
    fn try_acquire(&self, now: u64, n: u64) -> Decision;

    /// How many more could be admitted at `now` (as of this read). The
    /// default is `limit - count(now)`; a limiter that also checks other
    /// intervals (as [`Gate`](crate::Gate) does) overrides it.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{Gate, Limiter};
    ///
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = g.try_acquire(600, 10); // a caller whose clock is ahead
    /// assert_eq!(g.remaining(400), 0); // (0, 500] fits, (500, 1000] does not
    /// ```
    fn remaining(&self, now: u64) -> u64 {
        self.limit().saturating_sub(self.count(now))
    }
}

impl<L: Limiter + ?Sized> Limiter for &L {
    fn record(&self, now: u64, n: u64) -> Result<(), AddError> {
        (**self).record(now, n)
    }
    fn count(&self, now: u64) -> u64 {
        (**self).count(now)
    }
    fn limit(&self) -> u64 {
        (**self).limit()
    }
    fn try_acquire(&self, now: u64, n: u64) -> Decision {
        (**self).try_acquire(now, n)
    }
}
