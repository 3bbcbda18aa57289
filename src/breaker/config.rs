//! A breaker's configuration: [`Config`], its [`Strategy`] and [`Ratio`],
//! and [`BreakerError`], why a configuration is refused.

use core::fmt;

use super::word::MAX_PROBES;

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
    pub(super) const fn tripped_by(self, bad: u64, total: u64) -> bool {
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
///
/// # `u64::MAX` means never
///
/// These are valid, and each means "never" (the one place this is said):
///
/// | field | at `u64::MAX` |
/// |---|---|
/// | `min_requests` | never trips (the interval's total would have to reach `u64::MAX`, and each window counts at most [`MAX_COUNT`](crate::MAX_COUNT) = 2^47 - 1 reports: never for `N` below 2^17) |
/// | `Strategy::ErrorCount { max_errors }` | never trips |
/// | `Strategy::SlowRequestRatio { max_rt }` | no request is slow (an RT is never above `u64::MAX`): never trips |
/// | `recovery_timeout` | once tripped, stays open until a `now` of `u64::MAX` |
/// | `probe_timeout` | a lost probe (never reported) is taken as bad only at a `now` of `u64::MAX`: with all `k` probes granted and one lost, the breaker stays half-open and refuses every request until then |
///
/// A deadline saturates at `u64::MAX` (a recovery or probe timeout that
/// would end after it ends there), and `u64::MAX` is the only `now` that
/// reaches it. A permit dropped without a report is a lost probe: with a
/// probe timeout of `u64::MAX`, report every probe (a drop guard).
///
/// ```
/// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
/// let b = CircuitBreaker::<1>::new(
///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10)
///         .with_min_requests(1)
///         .with_probe_timeout(u64::MAX),
/// );
/// let _ = b.report(0, b.try_acquire(0).unwrap(), 1, Outcome::Error); // open until 10
/// drop(b.try_acquire(10).unwrap()); // the only probe, lost
/// assert!(b.try_acquire(u64::MAX - 1).is_none());
/// assert_eq!(b.state(), State::HalfOpen); // never reopens
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
    /// A half-open breaker that has granted all its probes opens again (a
    /// probe was lost: never reported) on the first
    /// [`try_acquire`](super::CircuitBreaker::try_acquire) whose `now` is
    /// this long after the latest grant's `now` (a grant with a clock far
    /// ahead postpones that: "Times" in the [module docs](super)), refusing
    /// it; open for the recovery timeout from the latest grant plus this
    /// timeout (or from a later time seen). Default: the recovery timeout.
    /// At least 1. A probe merely slower than this is taken as lost: its
    /// report then changes no state (its `now` only raises the latest time
    /// seen: "Permits" in the module docs), and the next half-open period
    /// grants `k` new probes while it may still be in flight. Set it above
    /// the slowest request.
    pub probe_timeout: u64,
}

impl Config {
    /// Whether this configuration makes a working breaker of `windows`
    /// windows (`CircuitBreaker::<N>::validate`).
    pub(super) const fn check(&self, windows: usize) -> Result<(), BreakerError> {
        let config = self;
        if config.stat_interval == 0 {
            return Err(BreakerError::ZeroInterval);
        }
        if !config.stat_interval.is_multiple_of(windows as u64) {
            return Err(BreakerError::IntervalNotMultiple { windows });
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
        let window = config.stat_interval / windows as u64;
        if config.recovery_timeout < window {
            return Err(BreakerError::RecoveryShorterThanWindow { window });
        }
        Ok(())
    }

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

/// Why [`CircuitBreaker::try_new`](super::CircuitBreaker::try_new) refused a
/// [`Config`] (and why [`CircuitBreaker::new`](super::CircuitBreaker::new)
/// panics with it: a compile error in a `static`).
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

impl BreakerError {
    /// The reason, as `CircuitBreaker::new` panics with it (a `const`
    /// panic takes a plain `&str`; [`Display`](fmt::Display) adds the
    /// numbers).
    pub(super) const fn reason(&self) -> &'static str {
        match self {
            BreakerError::ZeroInterval => {
                "invalid CircuitBreaker configuration: the statistics interval is zero"
            }
            BreakerError::IntervalNotMultiple { .. } => {
                "invalid CircuitBreaker configuration: the statistics interval is not a whole \
                 number of the breaker's N windows"
            }
            BreakerError::ZeroDenominator => {
                "invalid CircuitBreaker configuration: a ratio has a zero denominator"
            }
            BreakerError::RatioAboveOne => {
                "invalid CircuitBreaker configuration: a ratio is above 1"
            }
            BreakerError::ZeroMinRequests => {
                "invalid CircuitBreaker configuration: min_requests is zero"
            }
            BreakerError::ZeroRecoveryTimeout => {
                "invalid CircuitBreaker configuration: the recovery timeout is zero"
            }
            BreakerError::ZeroProbeTimeout => {
                "invalid CircuitBreaker configuration: the probe timeout is zero"
            }
            BreakerError::ProbesOutOfRange { .. } => {
                "invalid CircuitBreaker configuration: the number of probes is not between 1 and \
                 MAX_PROBES"
            }
            BreakerError::RecoveryShorterThanWindow { .. } => {
                "invalid CircuitBreaker configuration: the recovery timeout is shorter than one \
                 statistics window (stat_interval / N)"
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
