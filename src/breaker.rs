//! A circuit breaker: Sentinel 1.8's `DegradeRule` strategies (slow-request
//! ratio, error ratio, error count) with a half-open state that admits
//! exactly `k` probes, decided in one atomic word.
//!
//! ```
//! use leaparray::breaker::{CircuitBreaker, Config, Outcome, Ratio, State, Strategy};
//!
//! // Time in ms. Trip when more than half of the requests of the last
//! // second fail (at least 5 of them); stay open 10 s, then let 2 probes in.
//! static BREAKER: CircuitBreaker<2> = CircuitBreaker::new(
//!     Config::new(Strategy::ErrorRatio { max_ratio: Ratio::percent(50) }, 1_000, 10_000)
//!         .with_probes(2),
//! );
//!
//! for t in 0..5 {
//!     let permit = BREAKER.try_acquire(t).expect("closed: admitted");
//!     let _ = BREAKER.report(t + 1, permit, 1, Outcome::Error); // the 5th trips it
//! }
//! assert_eq!(BREAKER.state(), State::Open);
//! assert!(BREAKER.try_acquire(5_000).is_none());
//! let (a, b) = (BREAKER.try_acquire(10_005).unwrap(), BREAKER.try_acquire(10_006).unwrap());
//! assert!(BREAKER.try_acquire(10_007).is_none()); // exactly 2 probes
//! let _ = BREAKER.report(10_010, a, 3, Outcome::Success);
//! let _ = BREAKER.report(10_011, b, 4, Outcome::Success); // both good: closed
//! assert_eq!(BREAKER.state(), State::Closed);
//! ```
//!
//! # The state machine
//!
//! | state | [`try_acquire`](CircuitBreaker::try_acquire) | [`report`](CircuitBreaker::report) |
//! |---|---|---|
//! | [`State::Closed`] | admits (a plain permit) | a permit of the current closed period: adds the outcome to the window of the report's `now` (not counted if that window is already retired: see [`uncounted_reports`](CircuitBreaker::uncounted_reports)); trips to `Open` when the strategy's condition holds over the period's windows live at the newest window the statistics hold |
//! | [`State::Open`] | refuses until the recovery timeout has passed since the trip; then the first caller moves it to `HalfOpen` and is the first probe | nothing (stale permits are ignored) |
//! | [`State::HalfOpen`] | admits until `k` probes have been granted in this half-open period, then refuses; if all `k` were granted and none has been granted for the probe timeout (a probe never reported), the caller moves it back to `Open` | a probe of this period: a bad outcome reopens it at once; when all `k` probes have reported good, it closes |
//!
//! So **all `k` probes must be good to close, and any bad one reopens**
//! ("bad": slower than the RT threshold for the slow-request strategy, an
//! error for the error strategies). A reopened breaker waits the full
//! recovery timeout again, from the time of the report that reopened it.
//!
//! The trip condition, over the windows of the current closed period (at
//! most the last `N`, and none before the window in which it closed), with
//! `total` the reports counted there and `bad` the bad ones, needs
//! `total >= min_requests` and then:
//!
//! | [`Strategy`] | trips when |
//! |---|---|
//! | `SlowRequestRatio { max_rt, max_ratio }` (Sentinel's `DEGRADE_GRADE_RT`) | `bad / total > max_ratio`, or `max_ratio == 1` and every request was slow; a request is slow when `rt > max_rt` |
//! | `ErrorRatio { max_ratio }` (`DEGRADE_GRADE_EXCEPTION_RATIO`) | the same with errors (Sentinel never trips an error ratio of 1; here every request failing does, as for slow requests) |
//! | `ErrorCount { max_errors }` (`DEGRADE_GRADE_EXCEPTION_COUNT`) | `bad > max_errors` |
//!
//! Ratios are exact fractions ([`Ratio`]), compared in integers.
//!
//! # Permits
//!
//! [`try_acquire`](CircuitBreaker::try_acquire) hands out a [`Permit`]
//! that names the period it was granted in (the transition count, see
//! below) and whether it is a probe; [`report`](CircuitBreaker::report)
//! consumes it (it is neither `Clone` nor `Copy`, so each admission reports
//! at most once; it borrows its breaker, and a permit reported to another
//! breaker is ignored). A report counts only if its period is still the current
//! one: a plain permit's outcome counts in the statistics of the closed
//! period it was granted in, a probe's decides the half-open period it was
//! granted in, and a report from an earlier period changes nothing. (In
//! Sentinel any request completing while half-open decides the probe, even
//! one admitted before the trip.)
//!
//! # One word, one compare-and-swap per transition
//!
//! The state, the transition count, the probes granted and reported good,
//! and the time that matters in the state (when it closed, when it may
//! half-open, when the latest probe was granted) are one 128-bit atomic
//! word (`portable-atomic`'s `AtomicU128`, as a [`KeyedGate`] slot, with
//! the same targets and the same compile-time trap where it would be a
//! spin lock). Every change of the word is one compare-and-swap from the
//! word the caller decided on, so a decision is never made on one state and
//! applied to another. The races this closes:
//!
//! Two threads race for the last probe (`k = 1`):
//!
//! ```text
//!  Thread 1 (now = 10_000)               Thread 2 (now = 10_001)
//!  -----------------------------------   -----------------------------------
//!  load: Open, retry at 10_000
//!                                        load: Open, retry at 10_000
//!  CAS Open -> HalfOpen{granted 1}: ok
//!                                        CAS Open -> HalfOpen{granted 1}: fails
//!                                        reload: HalfOpen{granted 1} = k: refused
//! ```
//!
//! With a check, then a separate increment (a count beside the state, as
//! Sentinel's state and any probe counter would be), both would see room
//! and both would probe. A grant is the swap from the word that had room.
//!
//! The deadline and the state move together. In Sentinel the state is
//! swapped first and the retry time stored after it:
//!
//! ```text
//!  Thread 1 (trips at 5_000)             Thread 2 (now = 5_001)
//!  -----------------------------------   -----------------------------------
//!  CAS Closed -> Open
//!                                        read Open; read the retry time:
//!                                        still the one of the previous trip,
//!                                        long past: half-opens at once
//!  store retry time 15_000
//! ```
//!
//! Here the retry time is in the word the trip swaps in.
//!
//! A probe's report races the probe timeout:
//!
//! ```text
//!  Thread 1: the probe, good             Thread 2 (probe timeout passed)
//!  -----------------------------------   -----------------------------------
//!  load: HalfOpen #7{granted 1, good 0}
//!                                        load: HalfOpen #7{granted 1 = k}
//!                                        CAS -> Open #8, retry at now + R: ok
//!  CAS -> Closed #8: fails
//!  reload: Open #8: not period #7: stale
//! ```
//!
//! Either swap may win; the other sees a new period and does nothing. So
//! each half-open period ends exactly once, decided by its own probes or by
//! the timeout, never by both.
//!
//! A report from before the trip races the half-open probe:
//!
//! ```text
//!  Thread 1: plain permit of Closed #4   Thread 2
//!  -----------------------------------   -----------------------------------
//!                                        (the breaker trips: Open #5, then
//!                                        HalfOpen #6, probe granted)
//!  report Success: load HalfOpen #6;
//!  not period #4: stale, ignored
//!                                        probe reports Error: Open #7
//! ```
//!
//! (Sentinel: thread 1's success, completing while half-open, closes the
//! breaker, and the probe's error then finds it closed.)
//!
//! Two reports both see the trip condition:
//!
//! ```text
//!  Thread 1                              Thread 2
//!  -----------------------------------   -----------------------------------
//!  load Closed #4; add error
//!                                        load Closed #4; add error
//!  read windows: over the threshold      read windows: over the threshold
//!  CAS Closed #4 -> Open #5: ok
//!                                        CAS Closed #4 -> Open #5: fails
//! ```
//!
//! One transition, one callback. And no trip is missed: every report adds
//! its outcome, then reads the period's windows live at the newest window
//! the statistics hold (not only at its own `now`: a caller that read its
//! clock and stalled reports with an older `now` than others); the report
//! whose add comes last reads every add of the period still live, so if the
//! counts over those windows meet the condition after the last report, that
//! report trips the breaker (the array's adds and reads are `SeqCst`). The
//! bound: a report whose window is already retired (its `now` more than `N`
//! windows behind the newest) is not counted at all, and says so in
//! [`uncounted_reports`](CircuitBreaker::uncounted_reports).
//!
//! # Closed periods, and what is not one step
//!
//! The statistics are a [`LeapArray`]`<N, 2>` (every report, the bad ones)
//! that nothing resets: a closed period reads only the windows from the
//! one in which it closed (Sentinel resets its bucket instead). A recovery
//! timeout of at least one window ([`Config::recovery_timeout`], checked)
//! keeps the reports of earlier periods out of that window: they were made
//! at or before the trip, at least one recovery timeout before the close
//! (unless the deadline saturated at `u64::MAX`: a trip in the last
//! recovery timeout of time).
//!
//! A plain report reads the word, then adds to the windows. If the breaker
//! moves on in between (trips, half-opens and closes again while the
//! report is stalled), the add lands in the window of the report's own
//! `now`, and counts in the new period only if that `now` lies in or after
//! the window in which it closed. The close comes at least one recovery
//! timeout (at least one window) after the trip, so this needs a `now` in
//! a later window than the tripping report's `now`: a caller that read its
//! clock after the trip's, loaded the word before the trip's swap and
//! stalled through the whole open and half-open time. A stalled report
//! whose `now` is in the trip's window or earlier never counts in a later
//! period. One such add per stalled report at most.
//!
//! # Times
//!
//! Every `now` is the caller's clock in ticks; they need not arrive in
//! order, but the statistics follow the newest: a report whose `now` is
//! more than `N` windows behind the newest `now` any report used finds its
//! window retired and is not counted. So one report far ahead (a clock
//! step, a glitch) stops tripping until the real time catches up; every
//! report dropped so is counted in
//! [`uncounted_reports`](CircuitBreaker::uncounted_reports), so it is never
//! silent.
//!
//! # Transitions
//!
//! The word counts transitions (modulo 2^32): [`status`](CircuitBreaker::status)
//! reads it, and each transition's swap is made by exactly one caller,
//! which then calls the observer ([`with_observer`](CircuitBreaker::with_observer),
//! a plain `fn(Transition)`: no allocation, called from the thread or
//! handler that made the transition, so keep it short); `report` also
//! returns the [`Transition`] it made (`try_acquire` returns the permit: the
//! transitions it makes, open to half-open and half-open back to open on a
//! lost probe, are seen by the observer and in `status`). Two callers' observer calls may run in either order: the
//! transition number orders them. A permit from exactly 2^32 transitions
//! earlier would be taken for a current one.
//!
//! [`KeyedGate`]: crate::keyed::KeyedGate

use core::fmt;
use core::num::NonZeroU64;

use crate::array::LeapArray;
use crate::error::AddError;
use crate::sync::{
    atomic_u64, const_fn_unless_loom, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
    PortableAtomicU128,
};

/// Counter of the bad reports (slow, or errors) of a closed period. A
/// window is read in counter order, so `BAD` before `TOTAL`; a report adds
/// `TOTAL` first: a read that sees a report's bad outcome sees its request
/// too.
const BAD: usize = 0;
/// Counter of every report counted in a closed period.
const TOTAL: usize = 1;

/// The most probes a half-open breaker may admit: `2^15 - 1` (15 bits of
/// the state word each for probes granted and probes reported good).
///
/// ```
/// assert_eq!(leaparray::breaker::MAX_PROBES, 32_767);
/// ```
pub const MAX_PROBES: u16 = (1 << 15) - 1;

/// An exact fraction `numerator / denominator`: a threshold of the ratio
/// strategies.
///
/// ```
/// use leaparray::breaker::Ratio;
/// assert_eq!(Ratio::percent(20).reduced(), Ratio::new(1, 5));
/// assert_eq!((Ratio::new(3, 4).numerator(), Ratio::new(3, 4).denominator()), (3, 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ratio {
    num: u32,
    den: u32,
}

impl Ratio {
    /// A ratio of 1: only all-bad periods trip a ratio strategy.
    ///
    /// ```
    /// assert_eq!(leaparray::breaker::Ratio::ONE, leaparray::breaker::Ratio::new(7, 7).reduced());
    /// ```
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    /// `numerator / denominator`. Checked when a breaker is built: a zero
    /// denominator or a ratio above 1 is a [`BreakerError`].
    ///
    /// ```
    /// let r = leaparray::breaker::Ratio::new(1, 3);
    /// assert_eq!((r.numerator(), r.denominator()), (1, 3));
    /// ```
    #[must_use]
    pub const fn new(numerator: u32, denominator: u32) -> Self {
        Ratio {
            num: numerator,
            den: denominator,
        }
    }

    /// `percent / 100`.
    ///
    /// ```
    /// assert_eq!(leaparray::breaker::Ratio::percent(50), leaparray::breaker::Ratio::new(50, 100));
    /// ```
    #[must_use]
    pub const fn percent(percent: u32) -> Self {
        Ratio::new(percent, 100)
    }

    /// The numerator.
    ///
    /// ```
    /// assert_eq!(leaparray::breaker::Ratio::new(2, 9).numerator(), 2);
    /// ```
    #[must_use]
    pub const fn numerator(self) -> u32 {
        self.num
    }

    /// The denominator.
    ///
    /// ```
    /// assert_eq!(leaparray::breaker::Ratio::new(2, 9).denominator(), 9);
    /// ```
    #[must_use]
    pub const fn denominator(self) -> u32 {
        self.den
    }

    /// The same ratio in lowest terms (a zero denominator stays as it is).
    ///
    /// ```
    /// assert_eq!(leaparray::breaker::Ratio::new(6, 8).reduced(), leaparray::breaker::Ratio::new(3, 4));
    /// ```
    #[must_use]
    pub const fn reduced(self) -> Self {
        let (mut a, mut b) = (self.num, self.den);
        while b != 0 {
            let r = a % b;
            a = b;
            b = r;
        }
        if a == 0 {
            return self;
        }
        Ratio::new(self.num / a, self.den / a)
    }

    /// Whether `bad / total` trips a ratio strategy with this threshold.
    const fn tripped_by(self, bad: u64, total: u64) -> bool {
        if total == 0 {
            return false;
        }
        let over = (bad as u128) * (self.den as u128) > (self.num as u128) * (total as u128);
        over || (self.num == self.den && bad >= total)
    }
}

/// What trips a breaker (Sentinel 1.8's `DegradeRule` grades).
///
/// ```
/// use leaparray::breaker::{Ratio, Strategy};
/// // Sentinel: grade RT, count 10 (ms), slowRatioThreshold 0.5.
/// let s = Strategy::SlowRequestRatio { max_rt: 10, max_ratio: Ratio::percent(50) };
/// assert_ne!(s, Strategy::ErrorCount { max_errors: 3 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Strategy {
    /// Trips when more than `max_ratio` of the requests are slow (all of
    /// them, for a ratio of 1): a request is slow when its RT is above
    /// `max_rt` ticks.
    SlowRequestRatio {
        /// The RT threshold, in ticks: slower is slow.
        max_rt: u64,
        /// The largest ratio of slow requests that does not trip.
        max_ratio: Ratio,
    },
    /// Trips when more than `max_ratio` of the requests are errors (all of
    /// them, for a ratio of 1).
    ErrorRatio {
        /// The largest ratio of errors that does not trip.
        max_ratio: Ratio,
    },
    /// Trips when more than `max_errors` requests are errors.
    ErrorCount {
        /// The most errors that do not trip.
        max_errors: u64,
    },
}

/// A breaker's parameters; times are in the caller's ticks (the same as
/// every `now`). Build with [`Config::new`] and the `with_` methods.
///
/// ```
/// use leaparray::breaker::{Config, Strategy};
/// let c = Config::new(Strategy::ErrorCount { max_errors: 3 }, 1_000, 5_000);
/// assert_eq!((c.min_requests, c.probes, c.probe_timeout), (5, 1, 5_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// What trips the breaker.
    pub strategy: Strategy,
    /// The statistics interval (Sentinel's `statIntervalMs`): `N` windows
    /// of `stat_interval / N` ticks, so a whole multiple of `N`.
    pub stat_interval: u64,
    /// Fewer reports than this in the interval never trip (Sentinel's
    /// `minRequestAmount`, default 5). At least 1.
    pub min_requests: u64,
    /// How long the breaker stays open (Sentinel's `timeWindow`), in ticks.
    /// At least one statistics window (`stat_interval / N`) and at least 1.
    pub recovery_timeout: u64,
    /// `k`: the probes a half-open breaker admits, all of which must be
    /// good to close it (default 1, as Sentinel). 1 to [`MAX_PROBES`].
    pub probes: u16,
    /// A half-open breaker that has granted all its probes and granted none
    /// for this long (a probe was lost: never reported) opens again on the
    /// next [`try_acquire`](CircuitBreaker::try_acquire). Default: the
    /// recovery timeout. At least 1. A probe merely slower than this is
    /// taken as lost: its report then changes nothing, and the next
    /// half-open period grants `k` new probes while it may still be in
    /// flight. Set it above the slowest request.
    pub probe_timeout: u64,
}

impl Config {
    /// A configuration with Sentinel's defaults for the rest: at least 5
    /// requests, 1 probe, a probe timeout equal to the recovery timeout.
    ///
    /// ```
    /// use leaparray::breaker::{Config, Ratio, Strategy};
    /// let c = Config::new(Strategy::ErrorRatio { max_ratio: Ratio::percent(20) }, 20_000, 10_000);
    /// assert_eq!((c.stat_interval, c.recovery_timeout), (20_000, 10_000));
    /// ```
    #[must_use]
    pub const fn new(strategy: Strategy, stat_interval: u64, recovery_timeout: u64) -> Self {
        Config {
            strategy,
            stat_interval,
            min_requests: 5,
            recovery_timeout,
            probes: 1,
            probe_timeout: recovery_timeout,
        }
    }

    /// The same, tripping only from `n` reports in the interval.
    ///
    /// ```
    /// # use leaparray::breaker::{Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10).with_min_requests(1);
    /// assert_eq!(c.min_requests, 1);
    /// ```
    #[must_use]
    pub const fn with_min_requests(self, n: u64) -> Self {
        Config {
            min_requests: n,
            ..self
        }
    }

    /// The same with `k` probes.
    ///
    /// ```
    /// # use leaparray::breaker::{Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10).with_probes(3);
    /// assert_eq!(c.probes, 3);
    /// ```
    #[must_use]
    pub const fn with_probes(self, k: u16) -> Self {
        Config { probes: k, ..self }
    }

    /// The same with another probe timeout.
    ///
    /// ```
    /// # use leaparray::breaker::{Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10).with_probe_timeout(3);
    /// assert_eq!(c.probe_timeout, 3);
    /// ```
    #[must_use]
    pub const fn with_probe_timeout(self, ticks: u64) -> Self {
        Config {
            probe_timeout: ticks,
            ..self
        }
    }
}

/// Why [`CircuitBreaker::try_new`] refused a [`Config`] (and why a breaker
/// built by [`CircuitBreaker::new`] with it refuses every request: see
/// [`CircuitBreaker::error`]).
///
/// ```
/// use leaparray::breaker::{BreakerError, CircuitBreaker, Config, Ratio, Strategy};
/// let c = Config::new(Strategy::ErrorRatio { max_ratio: Ratio::new(3, 2) }, 1_000, 1_000);
/// assert_eq!(CircuitBreaker::<2>::try_new(c).unwrap_err(), BreakerError::RatioAboveOne);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BreakerError {
    /// `stat_interval` is 0.
    ZeroInterval,
    /// `stat_interval` is not a whole number of the breaker's `N` windows.
    IntervalNotMultiple {
        /// `N`.
        windows: usize,
    },
    /// A ratio with a zero denominator.
    ZeroDenominator,
    /// A ratio above 1.
    RatioAboveOne,
    /// `min_requests` is 0.
    ZeroMinRequests,
    /// `recovery_timeout` is 0.
    ZeroRecoveryTimeout,
    /// `probe_timeout` is 0.
    ZeroProbeTimeout,
    /// `probes` is 0 or above [`MAX_PROBES`].
    ProbesOutOfRange {
        /// [`MAX_PROBES`].
        max: u16,
    },
    /// `recovery_timeout` is shorter than one statistics window
    /// (`stat_interval / N`): the window in which the breaker closes again
    /// could still hold reports from before it tripped. Use more windows
    /// (a larger `N`) or a longer timeout.
    RecoveryShorterThanWindow {
        /// `stat_interval / N`, the shortest recovery timeout.
        window: u64,
    },
}

impl fmt::Display for BreakerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::ZeroInterval => f.write_str("the statistics interval is zero"),
            BreakerError::IntervalNotMultiple { windows } => write!(
                f,
                "the statistics interval is not a whole number of {windows} windows"
            ),
            BreakerError::ZeroDenominator => f.write_str("a ratio has a zero denominator"),
            BreakerError::RatioAboveOne => f.write_str("a ratio is above 1"),
            BreakerError::ZeroMinRequests => f.write_str("min_requests is zero"),
            BreakerError::ZeroRecoveryTimeout => f.write_str("the recovery timeout is zero"),
            BreakerError::ZeroProbeTimeout => f.write_str("the probe timeout is zero"),
            BreakerError::ProbesOutOfRange { max } => {
                write!(f, "the number of probes is not between 1 and {max}")
            }
            BreakerError::RecoveryShorterThanWindow { window } => write!(
                f,
                "the recovery timeout is shorter than one statistics window ({window})"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BreakerError {}

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

/// A breaker's word, decoded: see [`CircuitBreaker::status`].
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, State, Strategy};
/// let b = CircuitBreaker::<2>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50));
/// let s = b.status();
/// assert_eq!((s.state, s.transitions, s.time, s.probes_granted), (State::Closed, 0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Status {
    /// The state.
    pub state: State,
    /// Transitions so far, modulo 2^32.
    pub transitions: u32,
    /// `Closed`: when it closed (the closing report's `now`, or the latest
    /// probe grant if that was later; 0 for a new breaker), the start of
    /// its statistics; `Open`: when it may half-open; `HalfOpen`: when its
    /// latest probe was granted.
    pub time: u64,
    /// `HalfOpen`: probes granted in this period (0 otherwise).
    pub probes_granted: u16,
    /// `HalfOpen`: probes of this period reported good (0 otherwise).
    pub probes_good: u16,
}

/// The right to make one request, from [`CircuitBreaker::try_acquire`];
/// hand it back with the request's outcome to
/// [`report`](CircuitBreaker::report). Not `Clone`: one report per
/// admission (a probe reported twice would count twice). It borrows the
/// breaker that granted it, and [`report`](CircuitBreaker::report) on any
/// other breaker ignores it (compared by address, `core::ptr::eq`), so a
/// permit counts only where it was granted.
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy};
/// let cfg = Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1);
/// let (a, b) = (CircuitBreaker::<2>::new(cfg), CircuitBreaker::<2>::new(cfg));
/// let p = a.try_acquire(0).unwrap();
/// assert!(!p.is_probe());
/// assert_eq!(b.report(1, p, 1, Outcome::Error), None); // not b's: ignored
/// assert_eq!(b.counts(1), (0, 0));
/// ```
#[must_use = "report the request's outcome with this permit"]
pub struct Permit<'a, const N: usize> {
    breaker: &'a CircuitBreaker<N>,
    period: u32,
    probe: bool,
}

impl<const N: usize> fmt::Debug for Permit<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("breaker", &(self.breaker as *const CircuitBreaker<N>))
            .field("period", &self.period)
            .field("probe", &self.probe)
            .finish()
    }
}

/// Equal: the same breaker (by address), period and kind.
impl<const N: usize> PartialEq for Permit<'_, N> {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.breaker, other.breaker)
            && self.period == other.period
            && self.probe == other.probe
    }
}

impl<const N: usize> Eq for Permit<'_, N> {}

impl<const N: usize> core::hash::Hash for Permit<'_, N> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        core::ptr::hash(self.breaker, state);
        self.period.hash(state);
        self.probe.hash(state);
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for Permit<'_, N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Permit {{ period: {=u32}, probe: {=bool} }}",
            self.period,
            self.probe
        );
    }
}

impl<const N: usize> Permit<'_, N> {
    /// Whether it is a half-open probe.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy};
    /// let b = CircuitBreaker::<2>::new(
    ///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1),
    /// );
    /// let _ = b.report(1, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    /// assert!(b.try_acquire(51).unwrap().is_probe());
    /// ```
    #[must_use]
    pub const fn is_probe(&self) -> bool {
        self.probe
    }
}

/// The state word, decoded. Encoding (`u128`): bits 0..64 `time`, 64..96
/// `seq` (the transition count, wrapping), 96..98 the state (0 closed, 1
/// open, 2 half-open), 98..113 `granted`, 113..128 `good`. All zero: closed
/// since 0, no transition yet.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Word {
    state: State,
    seq: u32,
    time: u64,
    granted: u16,
    good: u16,
}

impl Word {
    const fn pack(self) -> u128 {
        let tag: u128 = match self.state {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
        };
        (self.time as u128)
            | ((self.seq as u128) << 64)
            | (tag << 96)
            | (((self.granted & MAX_PROBES) as u128) << 98)
            | (((self.good & MAX_PROBES) as u128) << 113)
    }

    const fn unpack(v: u128) -> Self {
        Word {
            time: v as u64,
            seq: (v >> 64) as u32,
            state: match (v >> 96) & 3 {
                0 => State::Closed,
                2 => State::HalfOpen,
                // 3 is never written.
                _ => State::Open,
            },
            granted: ((v >> 98) as u16) & MAX_PROBES,
            good: ((v >> 113) as u16) & MAX_PROBES,
        }
    }

    /// The first word of a new period in `state` at `time`.
    const fn next(self, state: State, time: u64) -> Self {
        Word {
            state,
            seq: self.seq.wrapping_add(1),
            time,
            granted: 0,
            good: 0,
        }
    }
}

/// A circuit breaker over `N` sliding windows of statistics (see the
/// [module docs](self) for the state machine and the protocol). No lock,
/// no allocation: usable in a `static` and from interrupt handlers (on the
/// targets where a [`KeyedGate`](crate::keyed::KeyedGate) is).
///
/// Memory: the 16-byte word, the `LeapArray<N, 2>` of statistics (`N`
/// windows of two counters), the configuration.
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Ratio, Strategy};
/// // Sentinel's slow-request rule: RT above 10 ms is slow; trip when all
/// // of at least 3 requests in 5 s are slow; open for 5 s.
/// static B: CircuitBreaker<1> = CircuitBreaker::new(
///     Config::new(Strategy::SlowRequestRatio { max_rt: 10, max_ratio: Ratio::ONE }, 5_000, 5_000)
///         .with_min_requests(3),
/// );
/// for t in [0, 20, 40] {
///     let p = B.try_acquire(t).unwrap();
///     let _ = B.report(t + 20, p, 20, Outcome::Success);
/// }
/// assert!(B.try_acquire(60).is_none());
/// assert!(B.try_acquire(5_060).unwrap().is_probe());
/// ```
pub struct CircuitBreaker<const N: usize> {
    /// The state word: see `Word` for the encoding. Invariants: `good <=
    /// granted <= probes` while half-open, both 0 otherwise; every change
    /// is one compare-and-swap from the word its caller decided on.
    word: PortableAtomicU128,
    /// Every report of a closed period: counters `BAD` and `TOTAL`.
    stats: LeapArray<N, 2>,
    /// Plain reports of a current closed period that were not counted
    /// because their window was already retired (a `now` more than `N`
    /// windows behind the newest report's). Only ever incremented.
    uncounted: AtomicU64,
    config: Config,
    /// `stat_interval / N` (1 for a misconfigured breaker).
    window: u64,
    error: Option<BreakerError>,
    observer: Option<fn(Transition)>,
}

impl<const N: usize> CircuitBreaker<N> {
    const_fn_unless_loom! {
        /// A closed breaker. A configuration that [`validate`](Self::validate)
        /// refuses builds a breaker that refuses every request and says why
        /// in [`error`](Self::error); [`try_new`](Self::try_new) returns the
        /// error instead. `N >= 1`, checked at compile time.
        ///
        /// ```
        /// use leaparray::breaker::{BreakerError, CircuitBreaker, Config, Strategy};
        /// let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000);
        /// assert_eq!(CircuitBreaker::<2>::new(c).error(), None);
        /// let bad = CircuitBreaker::<3>::new(c); // 1,000 is not 3 windows
        /// assert_eq!(bad.error(), Some(BreakerError::IntervalNotMultiple { windows: 3 }));
        /// assert!(bad.try_acquire(0).is_none());
        /// ```
        #[must_use]
        pub fn new(config: Config) -> Self {
            const {
                assert!(N > 0, "CircuitBreaker<N> needs N >= 1");
                assert!(
                    crate::sync::PORTABLE_U128_INTERRUPT_SAFE,
                    "leaparray: on this target a CircuitBreaker's word (portable-atomic's \
                     AtomicU128) is a global spin lock, and a handler that uses the breaker while \
                     the code it interrupted holds the lock deadlocks. On a single-core chip \
                     enable portable-atomic's `unsafe-assume-single-core` (or `critical-section` \
                     where there is no CAS); if no interrupt or signal handler ever uses it, \
                     enable leaparray's `portable-atomic-fallback-not-interrupt-safe` feature."
                );
            };
            let error = match Self::validate(&config) {
                Ok(()) => None,
                Err(e) => Some(e),
            };
            let window = match error {
                None => config.stat_interval / N as u64,
                Some(_) => 1,
            };
            let nonzero = match NonZeroU64::new(window) {
                Some(w) => w,
                None => NonZeroU64::MIN,
            };
            CircuitBreaker {
                word: PortableAtomicU128::new(0),
                stats: LeapArray::new(nonzero),
                uncounted: atomic_u64(0),
                config,
                window: nonzero.get(),
                error,
                observer: None,
            }
        }
    }

    const_fn_unless_loom! {
        /// The same breaker with an observer, called once per transition by
        /// the caller that made it (from its thread or handler: keep it
        /// short).
        ///
        /// ```
        /// use core::sync::atomic::{AtomicU32, Ordering};
        /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy, Transition};
        /// static LAST: AtomicU32 = AtomicU32::new(0);
        /// fn log(t: Transition) {
        ///     LAST.store(t.number, Ordering::Relaxed); // or defmt::info!("{}", t)
        /// }
        /// static B: CircuitBreaker<2> = CircuitBreaker::new(
        ///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1),
        /// )
        /// .with_observer(log);
        /// let _ = B.report(3, B.try_acquire(0).unwrap(), 1, Outcome::Error);
        /// assert_eq!(LAST.load(Ordering::Relaxed), 1);
        /// ```
        #[must_use]
        pub fn with_observer(self, observer: fn(Transition)) -> Self {
            CircuitBreaker {
                observer: Some(observer),
                ..self
            }
        }
    }

    /// [`new`](Self::new), or the reason the configuration is refused.
    ///
    /// ```
    /// use leaparray::breaker::{BreakerError, CircuitBreaker, Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000);
    /// assert!(CircuitBreaker::<2>::try_new(c).is_ok());
    /// let e = CircuitBreaker::<2>::try_new(c.with_probes(0)).unwrap_err();
    /// assert_eq!(e, BreakerError::ProbesOutOfRange { max: 32_767 });
    /// ```
    pub fn try_new(config: Config) -> Result<Self, BreakerError> {
        let b = Self::new(config);
        match b.error {
            Some(e) => Err(e),
            None => Ok(b),
        }
    }

    /// Whether `config` makes a working `CircuitBreaker<N>`: usable in a
    /// `const` to turn a bad configuration into a compile error.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Ratio, Strategy};
    /// const CFG: Config = Config::new(Strategy::ErrorRatio { max_ratio: Ratio::percent(20) }, 1_000, 5_000);
    /// const _: () = assert!(CircuitBreaker::<2>::validate(&CFG).is_ok());
    /// ```
    ///
    /// ```compile_fail,E0080
    /// use leaparray::breaker::{CircuitBreaker, Config, Ratio, Strategy};
    /// const CFG: Config = Config::new(Strategy::ErrorRatio { max_ratio: Ratio::percent(120) }, 1_000, 5_000);
    /// const _: () = assert!(CircuitBreaker::<2>::validate(&CFG).is_ok());
    /// ```
    pub const fn validate(config: &Config) -> Result<(), BreakerError> {
        if config.stat_interval == 0 {
            return Err(BreakerError::ZeroInterval);
        }
        if !config.stat_interval.is_multiple_of(N as u64) {
            return Err(BreakerError::IntervalNotMultiple { windows: N });
        }
        match config.strategy {
            Strategy::SlowRequestRatio { max_ratio, .. } | Strategy::ErrorRatio { max_ratio } => {
                if max_ratio.den == 0 {
                    return Err(BreakerError::ZeroDenominator);
                }
                if max_ratio.num > max_ratio.den {
                    return Err(BreakerError::RatioAboveOne);
                }
            }
            Strategy::ErrorCount { .. } => {}
        }
        if config.min_requests == 0 {
            return Err(BreakerError::ZeroMinRequests);
        }
        if config.recovery_timeout == 0 {
            return Err(BreakerError::ZeroRecoveryTimeout);
        }
        if config.probe_timeout == 0 {
            return Err(BreakerError::ZeroProbeTimeout);
        }
        if config.probes == 0 || config.probes > MAX_PROBES {
            return Err(BreakerError::ProbesOutOfRange { max: MAX_PROBES });
        }
        let window = config.stat_interval / N as u64;
        if config.recovery_timeout < window {
            return Err(BreakerError::RecoveryShorterThanWindow { window });
        }
        Ok(())
    }

    /// Why the configuration was refused, if it was (the breaker then
    /// refuses every request and ignores every report).
    ///
    /// ```
    /// use leaparray::breaker::{BreakerError, CircuitBreaker, Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 0, 1_000);
    /// assert_eq!(CircuitBreaker::<2>::new(c).error(), Some(BreakerError::ZeroInterval));
    /// ```
    #[must_use]
    pub const fn error(&self) -> Option<BreakerError> {
        self.error
    }

    /// The configuration.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000);
    /// assert_eq!(CircuitBreaker::<2>::new(c).config(), &c);
    /// ```
    #[must_use]
    pub const fn config(&self) -> &Config {
        &self.config
    }

    /// The length of one statistics window: `stat_interval / N`.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Strategy};
    /// let c = Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000);
    /// assert_eq!(CircuitBreaker::<4>::new(c).window(), 250);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.window
    }

    /// How many reports of a current closed period were **not counted**
    /// because their `now` lies in a window the statistics had already
    /// retired: more than `N` windows behind the newest `now` any report
    /// used. One report with a `now` far ahead (a clock step, a glitch)
    /// makes every report at the real time uncounted until the real time
    /// catches up, so no trip can happen meanwhile: a rising count here
    /// says so. Times must stay within the `N` windows of the newest one.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy};
    /// let b = CircuitBreaker::<1>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10));
    /// let _ = b.report(3_600_000, b.try_acquire(0).unwrap(), 1, Outcome::Success); // a clock glitch
    /// let _ = b.report(20, b.try_acquire(20).unwrap(), 1, Outcome::Error);
    /// assert_eq!(b.uncounted_reports(), 1); // the error at 20 was not counted
    /// ```
    #[must_use]
    pub fn uncounted_reports(&self) -> u64 {
        self.uncounted.load(Relaxed)
    }

    /// The state word, decoded (one load).
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
    /// let b = CircuitBreaker::<2>::new(
    ///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1),
    /// );
    /// let _ = b.report(9, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    /// let s = b.status();
    /// assert_eq!((s.state, s.transitions, s.time), (State::Open, 1, 59));
    /// ```
    #[must_use]
    pub fn status(&self) -> Status {
        let w = Word::unpack(self.word.load(Acquire));
        Status {
            state: w.state,
            transitions: w.seq,
            time: w.time,
            probes_granted: w.granted,
            probes_good: w.good,
        }
    }

    /// The state (one load).
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, State, Strategy};
    /// let b = CircuitBreaker::<2>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50));
    /// assert_eq!(b.state(), State::Closed);
    /// ```
    #[must_use]
    pub fn state(&self) -> State {
        Word::unpack(self.word.load(Acquire)).state
    }

    /// The reports counted in the current closed period at `now`, as
    /// `(total, bad)`: what the trip condition reads (the windows live at
    /// `now` from the one in which the breaker closed). `(0, 0)` unless
    /// closed.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy};
    /// let b = CircuitBreaker::<2>::new(Config::new(Strategy::ErrorCount { max_errors: 5 }, 100, 50));
    /// let _ = b.report(10, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    /// let _ = b.report(60, b.try_acquire(0).unwrap(), 1, Outcome::Success);
    /// assert_eq!(b.counts(60), (2, 1));
    /// assert_eq!(b.counts(110), (1, 0)); // [0, 50) slid out
    /// ```
    #[must_use]
    pub fn counts(&self, now: u64) -> (u64, u64) {
        let w = Word::unpack(self.word.load(Acquire));
        if w.state != State::Closed {
            return (0, 0);
        }
        self.counts_since(now, w.time)
    }

    /// Admits a request at `now`, or refuses it (`None`). Closed: one load.
    /// Open past its recovery timeout, or half-open with probes left: one
    /// compare-and-swap (retried only when another caller changed the word).
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Strategy};
    /// let b = CircuitBreaker::<2>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50));
    /// let p = b.try_acquire(0).expect("a new breaker is closed");
    /// let _ = b.report(1, p, 1, leaparray::breaker::Outcome::Success);
    /// ```
    #[must_use = "a refused request must not be made; an admitted one must be reported"]
    pub fn try_acquire(&self, now: u64) -> Option<Permit<'_, N>> {
        if self.error.is_some() {
            return None;
        }
        let k = self.config.probes;
        let mut cur = self.word.load(Acquire);
        loop {
            let w = Word::unpack(cur);
            let next = match w.state {
                State::Closed => {
                    return Some(Permit {
                        breaker: self,
                        period: w.seq,
                        probe: false,
                    })
                }
                State::Open => {
                    if now < w.time {
                        return None;
                    }
                    Word {
                        granted: 1,
                        ..w.next(State::HalfOpen, now)
                    }
                }
                State::HalfOpen => {
                    if w.granted < k {
                        Word {
                            granted: w.granted + 1,
                            time: if now > w.time { now } else { w.time },
                            ..w
                        }
                    } else if now >= w.time.saturating_add(self.config.probe_timeout) {
                        self.reopened(w, now)
                    } else {
                        return None;
                    }
                }
            };
            // ORDERING: AcqRel orders this swap after the one it read and
            // before the next (the word is the whole protocol; the windows
            // have their own ordering).
            match self
                .word
                .compare_exchange(cur, next.pack(), AcqRel, Acquire)
            {
                Ok(_) => {
                    self.announce(w, next, now);
                    return (next.state == State::HalfOpen).then_some(Permit {
                        breaker: self,
                        period: next.seq,
                        probe: true,
                    });
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Reports how the request of `permit` ended at `now`, with its
    /// response time `rt` in ticks; returns the transition it made, if
    /// any. A report from an earlier period (see "Permits" in the module
    /// docs), or on a permit another breaker granted, changes nothing.
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
    /// let b = CircuitBreaker::<2>::new(
    ///     Config::new(Strategy::ErrorCount { max_errors: 1 }, 100, 50).with_min_requests(1),
    /// );
    /// let (p, q) = (b.try_acquire(0).unwrap(), b.try_acquire(0).unwrap());
    /// assert_eq!(b.report(5, p, 5, Outcome::Error), None); // 1 error: not more than 1
    /// assert_eq!(b.report(6, q, 6, Outcome::Error).map(|t| t.to), Some(State::Open));
    /// ```
    pub fn report(
        &self,
        now: u64,
        permit: Permit<'_, N>,
        rt: u64,
        outcome: Outcome,
    ) -> Option<Transition> {
        if self.error.is_some() || !core::ptr::eq(permit.breaker, self) {
            return None;
        }
        let bad = match self.config.strategy {
            Strategy::SlowRequestRatio { max_rt, .. } => rt > max_rt,
            Strategy::ErrorRatio { .. } | Strategy::ErrorCount { .. } => outcome == Outcome::Error,
        };
        if permit.probe {
            self.report_probe(now, permit.period, bad)
        } else {
            self.report_plain(now, permit.period, bad)
        }
    }

    /// A plain permit's report: count it in its closed period, then trip
    /// if the period's windows meet the condition.
    fn report_plain(&self, now: u64, period: u32, bad: bool) -> Option<Transition> {
        let cur = self.word.load(Acquire);
        let w = Word::unpack(cur);
        if w.state != State::Closed || w.seq != period {
            return None;
        }
        // TOTAL before BAD, read in the other order (see `BAD`): a
        // concurrent reader may miss this bad outcome (this report's own
        // read sees it) but never counts it without its request. A `Stale`
        // add (the report's window already retired) is not counted, and
        // counted in `uncounted`; `Saturated` keeps the count at its bound.
        if self.stats.add(now, TOTAL, 1) == Err(AddError::Stale) {
            // ORDERING: a statistic on its own, ordered with nothing.
            self.uncounted.fetch_add(1, Relaxed);
            return None;
        }
        if bad {
            let _ = self.stats.add(now, BAD, 1);
        }
        // Read the windows live at the newest window the array holds, not
        // only at this report's `now`: a report whose `now` is older than
        // another's (a stalled caller) still reads every add of the period
        // that is live (see "No trip is missed").
        let own = now / self.window;
        let newest = self.stats.newest_from(own);
        let at = if newest > own {
            newest.saturating_mul(self.window)
        } else {
            now
        };
        let (total, bad) = self.counts_since(at, w.time);
        if !self.trips(total, bad) {
            return None;
        }
        let next = self.reopened(w, now);
        // The word of a closed period changes only by a transition: if the
        // swap fails, another caller ended the period (tripped it) first.
        match self
            .word
            .compare_exchange(cur, next.pack(), AcqRel, Acquire)
        {
            Ok(_) => self.announce(w, next, now),
            Err(_) => None,
        }
    }

    /// A probe's report: counts towards closing its half-open period, or
    /// reopens it.
    fn report_probe(&self, now: u64, period: u32, bad: bool) -> Option<Transition> {
        let mut cur = self.word.load(Acquire);
        loop {
            let w = Word::unpack(cur);
            // `good < granted`: a permit of this period that has not
            // reported yet can exist (each reports once; see `Permit`).
            if w.state != State::HalfOpen || w.seq != period || w.good >= w.granted {
                return None;
            }
            let next = if bad {
                self.reopened(w, now)
            } else if w.good + 1 >= self.config.probes {
                // The closed period starts no earlier than the latest
                // grant (a probe reporting with an older `now` must not
                // reach back to the windows from before the trip).
                w.next(State::Closed, if now > w.time { now } else { w.time })
            } else {
                Word {
                    good: w.good + 1,
                    ..w
                }
            };
            match self
                .word
                .compare_exchange(cur, next.pack(), AcqRel, Acquire)
            {
                Ok(_) => return self.announce(w, next, now),
                Err(actual) => cur = actual,
            }
        }
    }

    /// The word of the `Open` period that follows `w` at `now`.
    const fn reopened(&self, w: Word, now: u64) -> Word {
        w.next(
            State::Open,
            now.saturating_add(self.config.recovery_timeout),
        )
    }

    /// After a successful swap from `w` to `next` at `now`: the transition
    /// (if the state changed), reported to the observer.
    fn announce(&self, w: Word, next: Word, now: u64) -> Option<Transition> {
        if next.seq == w.seq {
            return None;
        }
        let t = Transition {
            from: w.state,
            to: next.state,
            at: now,
            number: next.seq,
        };
        if let Some(f) = self.observer {
            f(t);
        }
        Some(t)
    }

    /// `(total, bad)` over the windows live at `now` that start no earlier
    /// than the window of `since`.
    fn counts_since(&self, now: u64, since: u64) -> (u64, u64) {
        let live = self.stats.live(now);
        let first = (*live.start()).max(since / self.window);
        let (mut total, mut bad) = (0u64, 0u64);
        // Each window read whole (`BAD`, then `TOTAL`, under one stamp);
        // a window retired meanwhile is left out, as in `windows_where`.
        for id in first..=*live.end() {
            if let Some(w) = self.stats.read_window(id) {
                total = total.saturating_add(w.counts[TOTAL]);
                bad = bad.saturating_add(w.counts[BAD]);
            }
        }
        (total, bad)
    }

    /// Whether `(total, bad)` meets the trip condition.
    const fn trips(&self, total: u64, bad: u64) -> bool {
        if total < self.config.min_requests {
            return false;
        }
        match self.config.strategy {
            Strategy::SlowRequestRatio { max_ratio, .. } | Strategy::ErrorRatio { max_ratio } => {
                max_ratio.tripped_by(bad, total)
            }
            Strategy::ErrorCount { max_errors } => bad > max_errors,
        }
    }
}

impl<const N: usize> fmt::Debug for CircuitBreaker<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("windows", &N)
            .field("config", &self.config)
            .field("status", &self.status())
            .field("error", &self.error)
            .field("uncounted_reports", &self.uncounted_reports())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for CircuitBreaker<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "CircuitBreaker {{ windows: {=usize}, config: {}, status: {}, error: {} }}",
            N,
            self.config,
            self.status(),
            self.error
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_round_trips_at_its_extremes() {
        for w in [
            Word {
                state: State::HalfOpen,
                seq: u32::MAX,
                time: u64::MAX,
                granted: MAX_PROBES,
                good: MAX_PROBES,
            },
            Word {
                state: State::Open,
                seq: 1,
                time: 0,
                granted: 0,
                good: 0,
            },
            Word {
                state: State::Closed,
                seq: 0,
                time: 1,
                granted: 0,
                good: 0,
            },
        ] {
            assert!(Word::unpack(w.pack()) == w);
        }
        assert!(Word::unpack(0).state == State::Closed);
    }

    #[test]
    fn ratios_compare_exactly() {
        let r = Ratio::new(1, 3);
        assert!(!r.tripped_by(1, 3));
        assert!(r.tripped_by(2, 5));
        assert!(!r.tripped_by(0, 0));
        assert!(Ratio::ONE.tripped_by(4, 4));
        assert!(!Ratio::ONE.tripped_by(3, 4));
        let huge = Ratio::new(u32::MAX - 1, u32::MAX);
        let (num, den) = (u64::from(u32::MAX - 1), u64::from(u32::MAX));
        assert!(!huge.tripped_by(num, den));
        assert!(!huge.tripped_by(num << 31, den << 31));
        assert!(huge.tripped_by(u64::MAX - 1, u64::MAX));
    }
}
