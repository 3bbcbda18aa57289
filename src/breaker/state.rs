//! What a breaker reports: its [`State`], a call's [`Outcome`], a
//! [`Transition`] between states, a [`Snapshot`] of its word.

/// A breaker's state.
///
/// ```
/// use leaparray::breaker::State;
/// assert_ne!(State::Closed, State::Open);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum State {
    /// Requests pass; outcomes are counted.
    Closed,
    /// Requests are refused until the recovery timeout has passed.
    Open,
    /// Up to `k` probes pass; their outcomes decide.
    HalfOpen,
}

/// How a request ended.
///
/// ```
/// use leaparray::breaker::Outcome;
/// assert_ne!(Outcome::Success, Outcome::Error);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// It succeeded (it may still be slow).
    Success,
    /// It failed (Sentinel: an exception traced on the entry).
    Error,
}

/// One change of a breaker's state, as its observer and the caller that
/// made it see it.
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy, Transition};
/// let b = CircuitBreaker::<2>::new(
///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1),
/// );
/// let p = b.try_acquire(0).unwrap();
/// let t = b.report(7, p, 1, Outcome::Error).unwrap();
/// assert_eq!(t, Transition { from: State::Closed, to: State::Open, at: 7, number: 1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transition {
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// The `now` of the call that made it.
    pub at: u64,
    /// The breaker's transition count after it, modulo 2^32 (1 for the
    /// first): the order of transitions, whichever observer call runs
    /// first.
    pub number: u32,
}

/// Everything the breaker's state word holds, read in one load by
/// [`CircuitBreaker::snapshot`](super::CircuitBreaker::snapshot): the state, the transition count, the time
/// that matters in the state and the probes of a half-open period, all of
/// one instant (not the statistics: see [`CircuitBreaker::counts`](super::CircuitBreaker::counts)).
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, State, Strategy};
/// let b = CircuitBreaker::<2>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50));
/// let s = b.snapshot();
/// assert_eq!((s.state, s.transitions, s.time, s.probes_granted), (State::Closed, 0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Snapshot {
    /// The state.
    pub state: State,
    /// Transitions so far, modulo 2^32.
    pub transitions: u32,
    /// `Closed`: the start of its statistics (the closing probe report's
    /// `now`, or the deadline of the open period before it if that was
    /// later; 0 for a new breaker); `Open`: when it may half-open (the
    /// recovery timeout after the latest time the breaker had seen, or
    /// after a lost probe's timeout if that was later, saturating at
    /// `u64::MAX`); `HalfOpen`: when its latest probe was
    /// granted.
    pub time: u64,
    /// `HalfOpen`: probes granted in this period (0 otherwise).
    pub probes_granted: u16,
    /// `HalfOpen`: probes of this period reported good (0 otherwise).
    pub probes_good: u16,
}
