//! [`StatisticNode`]: Sentinel's per-resource statistics, second- and
//! minute-level, updated together from one `now`.

use core::num::NonZeroU64;

use crate::error::AddError;
use crate::stats::event::Event;
use crate::stats::metric::Metric;
use crate::sync::{atomic_u64, const_fn_unless_loom, AtomicU64, Ordering};

/// Sentinel's `StatisticNode`: a second-level [`Metric`] (default 2 windows
/// of 500 ms), a minute-level one (60 windows of 1 s) and a concurrency
/// gauge. Every update takes **one** `now` and applies it to both metrics,
/// so they never disagree about the time (Sentinel reads the clock twice:
/// its issue #1039).
///
/// ```
/// use leaparray::stats::StatisticNode;
///
/// static NODE: StatisticNode = StatisticNode::millis(); // time in ms
/// NODE.add_pass(1_000, 3).unwrap();
/// NODE.add_block(1_100, 1).unwrap();
/// NODE.add_rt_and_success(1_200, 30, 3).unwrap();
/// assert_eq!(NODE.pass_qps(1_200), 3.0);
/// assert_eq!(NODE.total_request(1_200), 4);
/// assert_eq!(NODE.avg_rt(1_200), 10.0);
/// ```
pub struct StatisticNode<const SECOND: usize = 2, const MINUTE: usize = 60> {
    second: Metric<SECOND>,
    minute: Metric<MINUTE>,
    /// Requests in flight. Only `increase`/`decrease` change it. Every
    /// access is `Relaxed`: a gauge, through which nothing else is published
    /// (the decrement's CAS only keeps it from wrapping).
    concurrency: AtomicU64,
    ticks_per_second: u64,
}

impl StatisticNode<2, 60> {
    const_fn_unless_loom! {
        /// Sentinel's defaults with time in milliseconds: 2 windows of 500 ms
        /// and 60 windows of 1,000 ms.
        ///
        /// ```
        /// let n = leaparray::stats::StatisticNode::millis();
        /// assert_eq!((n.second().interval(), n.minute().interval()), (1_000, 60_000));
        /// ```
        #[must_use]
        pub fn millis() -> Self {
            const MS: NonZeroU64 = NonZeroU64::new(1_000).unwrap();
            const HALF: NonZeroU64 = NonZeroU64::new(500).unwrap();
            StatisticNode::new(HALF, MS, MS)
        }
    }
}

impl<const SECOND: usize, const MINUTE: usize> StatisticNode<SECOND, MINUTE> {
    const_fn_unless_loom! {
        /// A node whose second-level metric has `SECOND` windows of
        /// `second_window` ticks and minute-level metric `MINUTE` windows of
        /// `minute_window` ticks; `ticks_per_second` converts counts to
        /// rates.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// // Time in µs: 10 windows of 100 ms, 60 of 1 s.
        /// let nz = |v| NonZeroU64::new(v).unwrap();
        /// let n = leaparray::stats::StatisticNode::<10, 60>::new(nz(100_000), nz(1_000_000), nz(1_000_000));
        /// n.add_pass(0, 5).unwrap();
        /// assert_eq!(n.pass_qps(0), 5.0);
        /// ```
        #[must_use]
        pub fn new(second_window: NonZeroU64, minute_window: NonZeroU64, ticks_per_second: NonZeroU64) -> Self {
            StatisticNode {
                second: Metric::new(second_window),
                minute: Metric::new(minute_window),
                concurrency: atomic_u64(0),
                ticks_per_second: ticks_per_second.get(),
            }
        }
    }

    /// Moves every count of every window this node holds into `to` and
    /// empties them here ([`Metric::drain_into`]): the fold of an origin's
    /// node. The caller must be this node's only writer for the whole
    /// call.
    pub(crate) fn drain_into(&self, to: &Self, near: u64) {
        self.second.drain_into(&to.second, near);
        self.minute.drain_into(&to.minute, near);
    }

    /// The second-level metric.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::StatisticNode::millis().second().window(), 500);
    /// ```
    #[must_use]
    pub const fn second(&self) -> &Metric<SECOND> {
        &self.second
    }

    /// The minute-level metric.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::StatisticNode::millis().minute().window(), 1_000);
    /// ```
    #[must_use]
    pub const fn minute(&self) -> &Metric<MINUTE> {
        &self.minute
    }

    /// Ticks per second, as given to the constructor.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::StatisticNode::millis().ticks_per_second(), 1_000);
    /// ```
    #[must_use]
    pub const fn ticks_per_second(&self) -> u64 {
        self.ticks_per_second
    }

    fn both(&self, now: u64, event: Event, n: u64) -> Result<(), AddError> {
        let s = self.second.add(now, event, n);
        let m = self.minute.add(now, event, n);
        s.and(m)
    }

    /// Records `n` passed requests in both metrics (both are attempted; the
    /// first error is returned).
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(0, 2).unwrap();
    /// assert_eq!(n.total_pass(0), 2);
    /// ```
    pub fn add_pass(&self, now: u64, n: u64) -> Result<(), AddError> {
        self.both(now, Event::Pass, n)
    }

    /// Records `n` blocked requests in both metrics.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_block(0, 2).unwrap();
    /// assert_eq!(n.block_request(0), 2);
    /// ```
    pub fn add_block(&self, now: u64, n: u64) -> Result<(), AddError> {
        self.both(now, Event::Block, n)
    }

    /// Records `n` business exceptions in both metrics.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_exception(0, 1).unwrap();
    /// assert_eq!(n.total_exception(0), 1);
    /// ```
    pub fn add_exception(&self, now: u64, n: u64) -> Result<(), AddError> {
        self.both(now, Event::Exception, n)
    }

    /// Records `success` completed requests taking `rt` ticks in all, in both
    /// metrics (Sentinel's `addRtAndSuccess`).
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_rt_and_success(0, 8, 2).unwrap();
    /// assert_eq!((n.total_success(0), n.avg_rt(0), n.min_rt(0)), (2, 4.0, Some(8)));
    /// ```
    pub fn add_rt_and_success(&self, now: u64, rt: u64, success: u64) -> Result<(), AddError> {
        let s = self.second.add_rt_and_success(now, rt, success);
        let m = self.minute.add_rt_and_success(now, rt, success);
        s.and(m)
    }

    /// One more request in flight: returns the new concurrency and records
    /// it as a candidate for both metrics' per-window peak.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// assert_eq!(n.increase_concurrency(0), 1);
    /// assert_eq!(n.increase_concurrency(0), 2);
    /// assert_eq!(n.decrease_concurrency(), 1);
    /// assert_eq!(n.second().max_concurrency(0), 2);
    /// ```
    pub fn increase_concurrency(&self, now: u64) -> u64 {
        let c = self
            .concurrency
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let _ = self.second.record_concurrency(now, c);
        let _ = self.minute.record_concurrency(now, c);
        c
    }

    /// One request fewer in flight: returns the new concurrency. Never goes
    /// below 0 (a decrease without an increase is ignored).
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// assert_eq!(n.decrease_concurrency(), 0);
    /// ```
    pub fn decrease_concurrency(&self) -> u64 {
        let r = self
            .concurrency
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1));
        r.map_or(0, |c| c - 1)
    }

    /// Requests in flight now.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.increase_concurrency(0);
    /// assert_eq!(n.concurrency(), 1);
    /// ```
    #[must_use]
    pub fn concurrency(&self) -> u64 {
        self.concurrency.load(Ordering::Relaxed)
    }

    /// Increases the concurrency and returns a guard that decreases it when
    /// dropped.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// {
    ///     let _g = n.enter(0);
    ///     assert_eq!(n.concurrency(), 1);
    /// }
    /// assert_eq!(n.concurrency(), 0);
    /// ```
    #[must_use = "the concurrency drops again when the guard is dropped"]
    pub fn enter(&self, now: u64) -> ConcurrencyGuard<'_, SECOND, MINUTE> {
        self.increase_concurrency(now);
        ConcurrencyGuard { node: self }
    }

    fn qps(&self, now: u64, event: Event) -> f64 {
        self.second.per_second(now, event, self.ticks_per_second)
    }

    /// Passes per second over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(0, 4).unwrap();
    /// assert_eq!(n.pass_qps(999), 4.0);
    /// ```
    #[must_use]
    pub fn pass_qps(&self, now: u64) -> f64 {
        self.qps(now, Event::Pass)
    }

    /// Blocks per second over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_block(0, 4).unwrap();
    /// assert_eq!(n.block_qps(0), 4.0);
    /// ```
    #[must_use]
    pub fn block_qps(&self, now: u64) -> f64 {
        self.qps(now, Event::Block)
    }

    /// Successes per second over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_rt_and_success(0, 1, 4).unwrap();
    /// assert_eq!(n.success_qps(0), 4.0);
    /// ```
    #[must_use]
    pub fn success_qps(&self, now: u64) -> f64 {
        self.qps(now, Event::Success)
    }

    /// Exceptions per second over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_exception(0, 4).unwrap();
    /// assert_eq!(n.exception_qps(0), 4.0);
    /// ```
    #[must_use]
    pub fn exception_qps(&self, now: u64) -> f64 {
        self.qps(now, Event::Exception)
    }

    /// Occupied (borrowing) passes per second over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_occupied_pass(0, 2).unwrap();
    /// assert_eq!(n.occupied_pass_qps(0), 2.0);
    /// ```
    #[must_use]
    pub fn occupied_pass_qps(&self, now: u64) -> f64 {
        self.qps(now, Event::OccupiedPass)
    }

    /// Passes plus blocks per second.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(0, 1).unwrap();
    /// n.add_block(0, 2).unwrap();
    /// assert_eq!(n.total_qps(0), 3.0);
    /// ```
    #[must_use]
    pub fn total_qps(&self, now: u64) -> f64 {
        self.pass_qps(now) + self.block_qps(now)
    }

    /// Average RT (ticks) over the second-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_rt_and_success(0, 10, 4).unwrap();
    /// assert_eq!(n.avg_rt(0), 2.5);
    /// ```
    #[must_use]
    pub fn avg_rt(&self, now: u64) -> f64 {
        self.second.avg_rt(now)
    }

    /// Minimum RT (ticks) over the second-level interval, if any.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// assert_eq!(n.min_rt(0), None);
    /// ```
    #[must_use]
    pub fn min_rt(&self, now: u64) -> Option<u64> {
        self.second.min_rt(now)
    }

    /// Passes plus blocks over the minute-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(0, 1).unwrap();
    /// n.add_block(30_000, 1).unwrap();
    /// assert_eq!(n.total_request(59_999), 2);
    /// ```
    #[must_use]
    pub fn total_request(&self, now: u64) -> u64 {
        self.total_pass(now).saturating_add(self.block_request(now))
    }

    /// Passes over the minute-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(0, 1).unwrap();
    /// assert_eq!(n.total_pass(59_999), 1);
    /// assert_eq!(n.total_pass(60_000), 0);
    /// ```
    #[must_use]
    pub fn total_pass(&self, now: u64) -> u64 {
        self.minute.pass(now)
    }

    /// Successes over the minute-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_rt_and_success(0, 1, 2).unwrap();
    /// assert_eq!(n.total_success(0), 2);
    /// ```
    #[must_use]
    pub fn total_success(&self, now: u64) -> u64 {
        self.minute.success(now)
    }

    /// Exceptions over the minute-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_exception(0, 2).unwrap();
    /// assert_eq!(n.total_exception(0), 2);
    /// ```
    #[must_use]
    pub fn total_exception(&self, now: u64) -> u64 {
        self.minute.exception(now)
    }

    /// Blocks over the minute-level interval.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_block(0, 2).unwrap();
    /// assert_eq!(n.block_request(0), 2);
    /// ```
    #[must_use]
    pub fn block_request(&self, now: u64) -> u64 {
        self.minute.block(now)
    }

    fn per_minute_window(&self, count: u64) -> f64 {
        count as f64 * self.ticks_per_second as f64 / self.minute.window() as f64
    }

    /// Passes per second in the minute-level window before `now`'s.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(500, 7).unwrap();
    /// assert_eq!(n.previous_pass_qps(1_500), 7.0);
    /// ```
    #[must_use]
    pub fn previous_pass_qps(&self, now: u64) -> f64 {
        self.per_minute_window(self.minute.previous_window_pass(now))
    }

    /// Blocks per second in the minute-level window before `now`'s.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_block(500, 7).unwrap();
    /// assert_eq!(n.previous_block_qps(1_500), 7.0);
    /// ```
    #[must_use]
    pub fn previous_block_qps(&self, now: u64) -> f64 {
        self.per_minute_window(self.minute.previous_window_block(now))
    }

    /// Books `n` passes for the second-level window of `future` (Sentinel's
    /// `addWaitingRequest`); see [`Metric::add_waiting`].
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_waiting_request(0, 500, 2).unwrap();
    /// assert_eq!(n.waiting(0), 2);
    /// ```
    pub fn add_waiting_request(
        &self,
        now: u64,
        future: u64,
        n: u64,
    ) -> Result<(), crate::stats::borrow::WaitingError> {
        self.second.add_waiting(now, future, n)
    }

    /// Records `n` occupied passes now: `OccupiedPass` in both metrics and
    /// `Pass` in the minute-level one (as Sentinel's `addOccupiedPass`; the
    /// second-level pass arrives with the borrowed window).
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_occupied_pass(0, 2).unwrap();
    /// assert_eq!((n.occupied_pass_qps(0), n.total_pass(0), n.pass_qps(0)), (2.0, 2, 0.0));
    /// ```
    pub fn add_occupied_pass(&self, now: u64, n: u64) -> Result<(), AddError> {
        let o = self.both(now, Event::OccupiedPass, n);
        let p = self.minute.add(now, Event::Pass, n);
        o.and(p)
    }

    /// Passes booked for second-level windows that have not started.
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// assert_eq!(n.waiting(0), 0);
    /// ```
    #[must_use]
    pub fn waiting(&self, now: u64) -> u64 {
        self.second.waiting(now)
    }

    /// Sentinel's `StatisticNode.tryOccupyNext` on the second-level metric:
    /// ticks to wait for room for `n` under `limit` per interval, or
    /// `timeout` if there is none in time. See [`Metric::try_occupy_next`].
    ///
    /// ```
    /// let n = leaparray::stats::StatisticNode::millis();
    /// n.add_pass(100, 10).unwrap();
    /// assert_eq!(n.try_occupy_next(700, 5, 10, 500), 300);
    /// ```
    #[must_use]
    pub fn try_occupy_next(&self, now: u64, n: u64, limit: u64, timeout: u64) -> u64 {
        self.second.try_occupy_next(now, n, limit, timeout)
    }
}

/// Decreases its node's concurrency when dropped. From
/// [`StatisticNode::enter`].
///
/// ```
/// let n = leaparray::stats::StatisticNode::millis();
/// let g = n.enter(0);
/// drop(g);
/// assert_eq!(n.concurrency(), 0);
/// ```
#[must_use = "the concurrency drops again when the guard is dropped"]
pub struct ConcurrencyGuard<'a, const SECOND: usize = 2, const MINUTE: usize = 60> {
    node: &'a StatisticNode<SECOND, MINUTE>,
}

impl<const SECOND: usize, const MINUTE: usize> Drop for ConcurrencyGuard<'_, SECOND, MINUTE> {
    fn drop(&mut self) {
        self.node.decrease_concurrency();
    }
}

impl<const SECOND: usize, const MINUTE: usize> core::fmt::Debug
    for ConcurrencyGuard<'_, SECOND, MINUTE>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ConcurrencyGuard").finish_non_exhaustive()
    }
}

impl<const SECOND: usize, const MINUTE: usize> core::fmt::Debug for StatisticNode<SECOND, MINUTE> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StatisticNode")
            .field("second", &self.second)
            .field("minute", &self.minute)
            .field("concurrency", &self.concurrency())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const SECOND: usize, const MINUTE: usize> defmt::Format for StatisticNode<SECOND, MINUTE> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "StatisticNode {{ second: {}, minute: {}, concurrency: {=u64} }}",
            self.second,
            self.minute,
            self.concurrency()
        );
    }
}

#[cfg(feature = "defmt")]
impl<const SECOND: usize, const MINUTE: usize> defmt::Format
    for ConcurrencyGuard<'_, SECOND, MINUTE>
{
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ConcurrencyGuard");
    }
}
