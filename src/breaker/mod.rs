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
//! | [`State::Closed`] | admits (a plain permit) | a permit of the current closed period: adds the outcome to the window of the report's `now` (unless that window cannot count: see "Times"); trips to `Open` when the strategy's condition holds over the period's windows live at the newest window the statistics hold |
//! | [`State::Open`] | refuses a `now` before its deadline (the recovery timeout after the latest time the breaker had seen when it tripped or reopened, or after a lost probe's timeout if that was later: see "Times"); at the deadline or later, the first caller moves it to `HalfOpen` and is the first probe | no state (a stale permit's report only raises the latest time seen: see "Times") |
//! | [`State::HalfOpen`] | admits until `k` probes have been granted in this half-open period, then refuses; if all `k` were granted and none has been granted for the probe timeout (a probe never reported), the caller is refused and moves it back to `Open` | a probe of this period: a bad outcome reopens it at once; when all `k` probes have reported good, it closes |
//!
//! So **all `k` probes must be good to close, and any bad one reopens**
//! ("bad": slower than the RT threshold for the slow-request strategy, an
//! error for the error strategies). A reopened breaker waits the full
//! recovery timeout again. Every deadline (a trip's, a reopen's) counts
//! from the latest time the breaker has seen (a lost probe's reopen: from
//! when the probe became lost, if that is later; see "Times"), never from
//! an older `now` of a caller that stalled.
//!
//! The trip condition, over the windows of the current closed period (at
//! most the last `N`, and none before the window of its start), with
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
//! granted in, and a report from an earlier period changes no state and no
//! statistics: its `now` only raises the latest time the breaker has seen,
//! which later deadlines count from (see "Times"). (In
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
//! applied to another: exactly `k` probes, each period ended once (by its
//! probes or by the probe timeout, never both), one transition when two
//! reports both see the trip condition. No trip is missed: every report
//! adds its outcome, then reads the period's windows live at the newest
//! window the statistics hold, so the report whose read comes last reads
//! every add of the period still live. The statistics are a
//! [`LeapArray`]`<N, 2>` (every report, the bad ones) that nothing resets:
//! a closed period reads only the windows from the one of its start.
//! A plain report is not one step (it loads the word, then adds): a report
//! stalled in between counts in a later closed period only if the trip did
//! not see its `now` and that `now` lies in the window of the period's start or
//! later.
//!
//! The races this closes, each as a Thread 1 / Thread 2 table, and the
//! arguments: [`protocol`].
//!
//! # Times
//!
//! Every `now` is the caller's clock in ticks; they need not arrive in
//! order (a caller reads its clock, then stalls). The breaker keeps the
//! latest `now` of any report, of any period (a report from an earlier
//! period too), and the word's time: the start of the closed period, the
//! deadline of the open one, the latest probe grant of the half-open one.
//!
//! - **Deadlines.** A trip opens the breaker for the recovery timeout from
//!   the latest of: the tripping report's `now`, the latest `now` of any
//!   report, the closed period's start. A reopen by a bad probe from the
//!   latest of: its `now`, the latest `now` of any report, the latest probe
//!   grant. A reopen by a lost probe from the later of: the latest probe
//!   grant plus the probe timeout (when the probe became lost, at or before
//!   the `now` of the refused caller that finds it so), the latest `now` of
//!   any report; never from that caller's `now`. A report with an older
//!   `now` neither shortens the open time nor lets the next closed period
//!   start in a window that holds reports of the one before the trip.
//! - **A closed period's start** is the later of the closing probe
//!   report's `now` and the deadline of the open period before it (no
//!   `now` before that deadline half-opens the breaker). A probe grant's
//!   `now` does not move it: a probe granted to a caller whose clock leads
//!   leaves the reports of callers on time counted. The period counts by
//!   window: a report of the new period whose `now` is in a window before
//!   the window of the start (a clock that lags the closing report's or the
//!   deadline, or a `now` read before the close) is in no window of the
//!   period: it is counted in
//!   [`uncounted_reports`](CircuitBreaker::uncounted_reports). One before
//!   the start but in the start's window counts in the period.
//! - **Which reports count.** A plain report of the current closed period
//!   counts only if its window is the period's first window or later and
//!   one of the `N` windows ending at the newest window the statistics
//!   hold (by window id, not distance: with `N = 1` and windows of 10, a
//!   report at 9 after one at 10 is a window behind, and does not count).
//!   Every other report of the period is counted in
//!   [`uncounted_reports`](CircuitBreaker::uncounted_reports), always: no
//!   report is dropped silently. One exception: a window counts at most
//!   [`MAX_COUNT`](crate::MAX_COUNT) (2^47 - 1) reports; a report past
//!   that is held at the bound and not counted in `uncounted_reports`.
//!
//! One time far ahead (a clock step, a glitch), fewer than 2^47 windows
//! ahead of the real time (the range of window ids: [`guarantees`](crate::guarantees),
//! section 5), does this:
//!
//! - **a report at that time**, of any period (a report from an earlier
//!   period too): a trip or reopen after it opens the breaker until that
//!   time plus the recovery timeout (saturating: for a time near
//!   `u64::MAX`, until a `now` of `u64::MAX`). A plain report of the
//!   current closed period at that time, at least `N` windows ahead, also
//!   makes every report at the real time counted in `uncounted_reports`
//!   (none trips the breaker) until the real time's window is among the
//!   `N` windows ending at the window of that time. Fewer than `N` windows
//!   ahead it delays no counting: the reports at the real time still count
//!   (and can trip);
//! - **a close by a probe report at that time**: a trip or reopen after it
//!   opens the breaker until that time plus the recovery timeout (as after
//!   any report), and the closed period starts at that time: every report
//!   at the real time is counted in `uncounted_reports` and none trips the
//!   breaker until the real time reaches the window of that time;
//! - **a probe grant at that time**: a bad probe of that half-open period
//!   reopens the breaker until that time plus the recovery timeout, and a
//!   lost probe of that period is taken as bad only at a `now` of that
//!   time plus the probe timeout (saturating at `u64::MAX`): until then the
//!   breaker stays half-open and refuses every request; then it opens
//!   until that time plus the probe and the recovery timeouts (saturating).
//!   If that period closes, the grant moves neither the closed period's
//!   start nor any later deadline;
//! - **a refused `try_acquire` at that time**, while half-open with all `k`
//!   probes granted and that time at least the probe timeout after the
//!   latest grant: it takes the probes for lost, even probes reported good
//!   right after it. It ends the half-open period (their reports then
//!   change nothing) and opens the breaker as for any lost probe: until the
//!   latest grant plus the probe and recovery timeouts (or the latest
//!   `now` of any report plus the recovery timeout, if later), not until
//!   that time plus the recovery timeout.
//!
//! A time 2^47 windows or more ahead is outside that range: its window id
//! is taken modulo 2^48 windows, so reports at the real time may count
//! and trip after it instead of being uncounted, and that trip opens the
//! breaker until the far time plus the recovery timeout.
//!
//! # Transitions
//!
//! The word counts transitions (modulo 2^32): [`snapshot`](CircuitBreaker::snapshot)
//! reads it, and each transition's swap is made by exactly one caller,
//! which then calls the observer ([`with_observer`](CircuitBreaker::with_observer),
//! a plain `fn(Transition)`: no allocation, called from the thread or
//! handler that made the transition, so keep it short); `report` also
//! returns the [`Transition`] it made (`try_acquire` returns the permit: the
//! transitions it makes, open to half-open and half-open back to open on a
//! lost probe, are seen by the observer and in `snapshot`). Two callers' observer calls may run in either order: the
//! transition number orders them. A permit from exactly 2^32 transitions
//! earlier would be taken for a current one.
//!
//! [`KeyedGate`]: crate::keyed::KeyedGate

use core::fmt;
use core::num::NonZeroU64;

use crate::array::LeapArray;
use crate::sync::{
    atomic_u64, const_fn_unless_loom, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
    PortableAtomicU128,
};

mod config;
mod word;

pub use config::{BreakerError, Config, Ratio, Strategy};
use word::Word;
mod report;
mod state;
pub use state::{Outcome, Snapshot, State, Transition};
pub use word::MAX_PROBES;

#[doc = include_str!("protocol.md")]
pub mod protocol {}

/// Counter of the bad reports (slow, or errors) of a closed period. A
/// window is read in counter order, so `BAD` before `TOTAL`; a report adds
/// `TOTAL` first: a read that sees a report's bad outcome sees its request
/// too.
const BAD: usize = 0;
/// Counter of every report counted in a closed period.
const TOTAL: usize = 1;

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

/// A circuit breaker over `N` sliding windows of statistics (see the
/// [module docs](self) for the state machine and the protocol). No lock,
/// no allocation: usable in a `static` and from interrupt handlers (on the
/// targets where a [`KeyedGate`](crate::keyed::KeyedGate) is).
///
/// Memory: the 16-byte word, the `LeapArray<N, 2>` of statistics (`N`
/// windows of two counters), three `u64` atomics (the uncounted reports,
/// the latest `now` of any report, the deadline of the latest open
/// period that half-opened), the configuration, the window length and the
/// observer.
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
    /// Plain reports of a current closed period that were not counted:
    /// their window was before the period's first window, or not among the
    /// `N` windows ending at the newest window the statistics hold. Only
    /// ever incremented.
    uncounted: AtomicU64,
    /// The latest `now` any report used: with the word's time, what every
    /// deadline counts from. Only ever raised.
    latest: AtomicU64,
    /// The deadline of the open period the current half-open one came
    /// from: stored by the caller whose swap moved the word from `Open` to
    /// `HalfOpen`, before its probe permit is returned; read by the report
    /// that closes the period (its start is the later of that report's
    /// `now` and this). The word has no bits left for it.
    deadline: AtomicU64,
    config: Config,
    /// `stat_interval / N`.
    window: u64,
    observer: Option<fn(Transition)>,
}

impl<const N: usize> CircuitBreaker<N> {
    const_fn_unless_loom! {
        /// A closed breaker.
        ///
        /// # Panics
        ///
        /// If [`validate`](Self::validate) refuses `config`, with the reason:
        /// in a `static` or `const` that is a compile error; at run time a
        /// panic ([`try_new`](Self::try_new) returns the error instead).
        /// `N >= 1`, checked at compile time.
        ///
        /// ```
        /// use leaparray::breaker::{CircuitBreaker, Config, Strategy};
        /// static B: CircuitBreaker<2> =
        ///     CircuitBreaker::new(Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000));
        /// assert!(B.try_acquire(0).is_some());
        /// ```
        ///
        /// An invalid configuration in a `static` does not compile (1,000 ticks
        /// are not 3 windows):
        ///
        /// ```compile_fail,E0080
        /// use leaparray::breaker::{CircuitBreaker, Config, Strategy};
        /// static B: CircuitBreaker<3> =
        ///     CircuitBreaker::new(Config::new(Strategy::ErrorCount { max_errors: 1 }, 1_000, 1_000));
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
            if let Err(e) = Self::validate(&config) {
                panic!("{}", e.reason());
            }
            // `validate` refuses an interval that is 0 or not a whole
            // multiple of `N`: the window is at least 1.
            let nonzero = match NonZeroU64::new(config.stat_interval / N as u64) {
                Some(w) => w,
                None => panic!("unreachable: validate refuses a zero interval"),
            };
            CircuitBreaker {
                word: PortableAtomicU128::new(0),
                stats: LeapArray::new(nonzero),
                uncounted: atomic_u64(0),
                latest: atomic_u64(0),
                deadline: atomic_u64(0),
                config,
                window: nonzero.get(),
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
        Self::validate(&config)?;
        Ok(Self::new(config))
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
        config.check(N)
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

    /// How many reports of a current closed period were **not counted**:
    /// their window was before the period's first window (the window of
    /// its start), or not among the `N` windows ending at the newest window
    /// the statistics hold (by window id), before or right after their add
    /// or right after their read. One report far ahead (a clock step, a
    /// glitch), at least `N` and fewer than 2^47 windows ahead of the real
    /// time, makes every report at the real time uncounted until the real
    /// time's window is among the `N` ending at its window (a close far
    /// ahead: until the real time reaches the close's window), so no trip
    /// can happen meanwhile: a rising count here says so (a time 2^47
    /// windows or more ahead aliases: see "Times"). Times must stay
    /// within the `N` windows of the newest one. Not counted here: a report
    /// into a window already holding [`MAX_COUNT`](crate::MAX_COUNT)
    /// reports (held at that bound). See "Times" in the [module docs](self).
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, Strategy};
    /// let b = CircuitBreaker::<1>::new(Config::new(Strategy::ErrorCount { max_errors: 0 }, 10, 10));
    /// let _ = b.report(3_600_000, b.try_acquire(0).unwrap(), 1, Outcome::Success); // a clock glitch
    /// let _ = b.report(20, b.try_acquire(20).unwrap(), 1, Outcome::Error);
    /// assert_eq!(b.uncounted_reports(), 1); // the error at 20 was not counted
    /// // By window id: one window of 10, a report at 3,599,999 after one at
    /// // 3,600,000 is a window behind.
    /// let _ = b.report(3_599_999, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    /// assert_eq!(b.uncounted_reports(), 2);
    /// ```
    #[must_use]
    pub fn uncounted_reports(&self) -> u64 {
        self.uncounted.load(Relaxed)
    }

    /// The state word, decoded: a consistent [`Snapshot`] of one instant
    /// (one load).
    ///
    /// ```
    /// use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};
    /// let b = CircuitBreaker::<2>::new(
    ///     Config::new(Strategy::ErrorCount { max_errors: 0 }, 100, 50).with_min_requests(1),
    /// );
    /// let _ = b.report(9, b.try_acquire(0).unwrap(), 1, Outcome::Error);
    /// let s = b.snapshot();
    /// assert_eq!((s.state, s.transitions, s.time), (State::Open, 1, 59));
    /// ```
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let w = Word::unpack(self.word.load(Acquire));
        Snapshot {
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
                        // Open from when the probe became lost by the
                        // breaker's own times (the latest grant plus the
                        // probe timeout, at most this `now`), not from
                        // this caller's `now`: a refused caller's clock
                        // far ahead does not move the deadline to it.
                        self.reopened(w, w.time.saturating_add(self.config.probe_timeout))
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
                    if w.state == State::Open {
                        // Before the probe permit is returned: the report
                        // that closes this period needs this permit's good
                        // report, so its load of the word (Acquire) comes
                        // after that report's swap (Release), after this
                        // store. A later period's store comes after a
                        // later swap of the word, which fails the closing
                        // swap. A max, not a store: no open period's
                        // deadline is earlier than the one before, so a
                        // caller stalled here never lowers a later
                        // period's. So the close reads this period's
                        // deadline (the argument: `protocol`).
                        // ORDERING: Relaxed; the word's swaps carry it.
                        self.deadline.fetch_max(w.time, Relaxed);
                    }
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

    /// The word of the `Open` period that follows `w` (closed or half-open):
    /// open for the recovery timeout from the latest of `now` (the `now` of
    /// the report that trips or reopens it; for a lost probe, the latest
    /// grant plus the probe timeout), the word's time (the close or the
    /// latest probe grant) and the latest `now` of any report, never from
    /// an older `now` alone (a stalled caller's).
    fn reopened(&self, w: Word, now: u64) -> Word {
        // ORDERING: Relaxed; what this must see of other reports' `now`s
        // is ordered by the array's `SeqCst` adds and reads (see `report`).
        let latest = self.latest.load(Relaxed);
        let mut from = if now > w.time { now } else { w.time };
        if latest > from {
            from = latest;
        }
        w.next(
            State::Open,
            from.saturating_add(self.config.recovery_timeout),
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
}

impl<const N: usize> fmt::Debug for CircuitBreaker<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("windows", &N)
            .field("config", &self.config)
            .field("snapshot", &self.snapshot())
            .field("uncounted_reports", &self.uncounted_reports())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for CircuitBreaker<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "CircuitBreaker {{ windows: {=usize}, config: {}, snapshot: {} }}",
            N,
            self.config,
            self.snapshot()
        );
    }
}
