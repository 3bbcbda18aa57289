//! The flow gate: Sentinel's `DefaultController`, with exact admission.
//!
//! # Exact admission
//!
//! Sentinel checks, then acts ("contention may exist here, but it's okay"):
//!
//! ```text
//!  Thread 1                           Thread 2            (limit 10, 9 passed)
//!  ---------------------------------  ---------------------------------
//!  pass() = 9; 9 + 1 <= 10: admit
//!                                     pass() = 9; 9 + 1 <= 10: admit
//!  addPass(1)                         addPass(1)          -> 11 passed
//! ```
//!
//! A [`Gate`] books first and checks second: it adds the `n` permits to the
//! window of `now`, then reads the load of every interval of `N` windows that
//! contains that window (the intervals ending `0 ..= N - 1` windows later:
//! later windows may already hold passes from callers whose clocks run
//! ahead, and passes borrowed for them), and if any exceeds the limit it
//! takes its own booking back and refuses. Of the admitted requests in any
//! interval, the one whose booking came last read every other's booking (its
//! reads follow its booking, which follows theirs) and saw that interval
//! within the limit: so at most `limit` permits are ever admitted in an
//! interval, with any number of threads (or interrupt handlers) and clocks
//! that disagree (`loom-tests/tests/gate.rs` checks it, and the firmware in
//! `examples/firmware` checks it against a SysTick handler on real Cortex-M
//! code under QEMU). For that, a call must read every window of those
//! intervals: if one has already been retired (another caller's clock is
//! `N` windows past it, so its count is gone), the call is refused.
//!
//! Booking and reading touch different buckets, so two admissions form the
//! store-buffer pattern: each writes its bucket, then reads the other's.
//! Acquire/release orderings allow both reads to miss both writes (and
//! both admissions to overshoot); the bucket protocol's operations are therefore all
//! `SeqCst`, one total order in which that cannot happen (free on x86-64
//! and AArch64; see "Orderings" in [`protocol`](crate::protocol)).
//!
//! The price is **false rejections under contention**: between a booking and
//! its rollback, others count it. A request is refused although it would have
//! fit only if, while it read the load, other requests' bookings that they then
//! took back pushed the load over the limit; so only when the load is within
//! the sum of the other concurrent requests' sizes of the limit, and never
//! when one thread calls at a time. Sentinel's overshoot under concurrency (its issues #1620,
//! #3091 and #585) cannot happen.
//!
//! Blocked requests are recorded as [`Event::Block`]; passes are recorded by
//! their booking. Borrowed passes (prioritized requests that must wait) are
//! booked for their future window and recorded as [`Event::OccupiedPass`] in
//! the window of `now`.
//!
//! # Decisions
//!
//! [`Gate::try_acquire`] answers [`Decision::Pass`] or [`Decision::Block`],
//! all or nothing. [`Gate::try_acquire_prioritized`] may also borrow a future
//! window and answer [`Decision::Wait`] with the permit already booked; the
//! occupy timeout defaults to one window
//! ([`with_occupy_timeout`](Gate::with_occupy_timeout)). The [`Limiter`]
//! trait is the smallest surface a downstream rate limiter needs (`record`,
//! `count`, `limit`, `try_acquire`, `remaining`), implemented by `Gate` and
//! by references to any limiter.
//!
//! # Spans that cut a window
//!
//! A sliding window of `N` windows bounds every span made of whole windows.
//! A 1-second span that starts in the middle of a window can hold more
//! (Sentinel issue #2859): in `cargo run --example boundary`, 115 for
//! 2 x 500 ms, 103 for 10 x 100 ms, against 160 for a fixed window. Use more,
//! shorter windows where that matters.

use core::num::NonZeroU64;

use crate::borrow::Lent;
use crate::error::AddError;
use crate::event::Event;
use crate::limiter::Limiter;
use crate::metric::{Metric, ReadOnly};
use crate::sync::{const_fn_unless_loom, loom_sc_order};
use crate::word::MAX_COUNT;

/// The result of [`Gate::try_acquire`]; defined with [`Limiter`] (also at
/// the crate root), re-exported here.
pub use crate::limiter::Decision;

/// At most `limit` permits per sliding interval of `N` windows, decided
/// exactly under any concurrency.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::gate::{Decision, Gate};
///
/// // 100 per second: two windows of 500 ms, time in ms.
/// static GATE: Gate<2> = Gate::new(NonZeroU64::new(500).unwrap(), 100);
///
/// assert_eq!(GATE.try_acquire(0, 80), Decision::Pass);
/// assert_eq!(GATE.try_acquire(600, 30), Decision::Block); // 110 > 100
/// assert_eq!(GATE.try_acquire(600, 20), Decision::Pass);
/// assert_eq!(GATE.try_acquire(1_000, 80), Decision::Pass); // the 80 slid out
/// ```
pub struct Gate<const N: usize> {
    metric: Metric<N, ReadOnly>,
    limit: u64,
    occupy_timeout: u64,
}

impl<const N: usize> Gate<N> {
    const_fn_unless_loom! {
        /// A gate admitting at most `limit` permits per interval of `N`
        /// windows of `window` ticks. Prioritized requests may wait up to one
        /// window for a future one (Sentinel's default occupy timeout of
        /// 500 ms with 500 ms windows); see
        /// [`with_occupy_timeout`](Self::with_occupy_timeout).
        ///
        /// A limit above [`MAX_COUNT`] (2^47 - 1) acts as `MAX_COUNT`: no
        /// window can count more, and a booking that saturated could not be
        /// taken back exactly (a refused request would leave a partial pass
        /// behind).
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// let g = leaparray::gate::Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100);
        /// assert_eq!((g.limit(), g.occupy_timeout()), (100, 500));
        /// let huge = leaparray::gate::Gate::<2>::new(NonZeroU64::new(500).unwrap(), u64::MAX);
        /// assert_eq!(huge.limit(), leaparray::MAX_COUNT);
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64, limit: u64) -> Self {
            Gate {
                metric: Metric::empty(window),
                limit: if limit > MAX_COUNT { MAX_COUNT } else { limit },
                occupy_timeout: window.get(),
            }
        }
    }

    const_fn_unless_loom! {
        /// The same gate with prioritized requests waiting less than `ticks`
        /// for a future window (0: never).
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// let g = leaparray::gate::Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100)
        ///     .with_occupy_timeout(200);
        /// assert_eq!(g.occupy_timeout(), 200);
        /// ```
        #[must_use]
        pub fn with_occupy_timeout(self, ticks: u64) -> Self {
            let Gate { metric, limit, .. } = self;
            Gate {
                metric,
                limit,
                occupy_timeout: ticks,
            }
        }
    }

    /// The most permits admitted per interval.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::gate::Gate::<2>::new(NonZeroU64::new(1).unwrap(), 7).limit(), 7);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// How long a prioritized request may be told to wait, exclusive.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::gate::Gate::<2>::new(NonZeroU64::new(9).unwrap(), 7).occupy_timeout(), 9);
    /// ```
    #[must_use]
    pub const fn occupy_timeout(&self) -> u64 {
        self.occupy_timeout
    }

    /// The statistics the gate keeps (passes, blocks, occupied passes,
    /// borrowed passes), for logs and dashboards.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Event, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 1);
    /// assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    /// assert_eq!(g.try_acquire(0, 1), Decision::Block);
    /// assert_eq!((g.metric().pass(0), g.metric().block(0)), (1, 1));
    /// ```
    #[must_use]
    pub const fn metric(&self) -> &Metric<N, ReadOnly> {
        &self.metric
    }

    /// Admits `n` permits at `now` if the interval ending at `now` then
    /// holds at most `limit` (all or nothing): [`Decision::Pass`] or
    /// [`Decision::Block`]. `n == 0` always passes and books nothing. A
    /// `now` whose window has been retired (a clock far behind) is refused.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::gate::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3);
    /// assert_eq!(g.try_acquire(0, 2), Decision::Pass);
    /// assert_eq!(g.try_acquire(0, 2), Decision::Block);
    /// assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire(&self, now: u64, n: u64) -> Decision {
        if self.admit(now, n) {
            Decision::Pass
        } else {
            self.block(now, n)
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), but when the interval is
    /// full, borrows room in a future window (Sentinel's prioritized
    /// requests, `tryOccupyNext`): [`Decision::Wait`] with the ticks until
    /// that window starts, if that is less than the occupy timeout and the
    /// future interval then stays within the limit. The borrowed permits
    /// are booked in the future window (its passes include them when it
    /// starts) and recorded as [`Event::OccupiedPass`] now.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::gate::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// assert_eq!(g.try_acquire(100, 7), Decision::Pass); // window [0, 500)
    /// assert_eq!(g.try_acquire(600, 3), Decision::Pass); // full
    /// assert_eq!(g.try_acquire_prioritized(700, 5), Decision::Wait(300));
    /// assert_eq!(g.metric().pass(1_000), 3 + 5); // the 7 slid out
    /// ```
    #[must_use = "a Pass or Wait has already booked its permits"]
    pub fn try_acquire_prioritized(&self, now: u64, n: u64) -> Decision {
        if self.admit(now, n) {
            return Decision::Pass;
        }
        if n <= self.limit {
            let wait = self
                .metric
                .try_occupy_next(now, n, self.limit, self.occupy_timeout);
            if wait < self.occupy_timeout {
                let future = now + wait;
                if self.metric.lend(now, future, n).is_ok() {
                    // Book, then read: as in `admit`.
                    loom_sc_order();
                    if peak_load(&self.metric, future / self.metric.window())
                        .is_some_and(|load| load <= self.limit)
                    {
                        let _ = self.metric.add_event(now, Event::OccupiedPass, n);
                        return Decision::Wait(wait);
                    }
                    // Others booked first: take ours back.
                    let _ = self.metric.unlend(now, future, n);
                }
            }
        }
        self.block(now, n)
    }

    /// Books `n` passes at `now`, then keeps them if the load is within the
    /// limit, else takes them back.
    fn admit(&self, now: u64, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        if n > self.limit {
            return false;
        }
        let id = now / self.metric.window();
        if peak_load(&self.metric, id).is_none_or(|load| load.saturating_add(n) > self.limit) {
            // Already full: refuse without booking (nothing to roll back).
            return false;
        }
        if self.metric.add_event(now, Event::Pass, n).is_err() {
            // Stale: the window of `now` is retired. Saturated: the count is
            // at MAX_COUNT, far over any limit below it; nothing to undo
            // that would not remove others' passes.
            return false;
        }
        // Of two callers that each book then read the other's bucket, at
        // least one reads the other's booking: the bookings and the reads are
        // SeqCst operations, all in one total order (`crate::protocol`,
        // "Orderings"); under loom this stands for that order.
        loom_sc_order();
        if peak_load(&self.metric, id).is_some_and(|load| load <= self.limit) {
            return true;
        }
        // Stale here means the window has been retired since: nothing left
        // to undo.
        let _ = self.metric.sub_event(now, Event::Pass, n);
        false
    }

    fn block(&self, now: u64, n: u64) -> Decision {
        let _ = self.metric.add_event(now, Event::Block, n);
        Decision::Block
    }
}

/// The admission rule: the largest pass count (borrowed included) of any
/// interval that contains window `id`, the intervals ending at windows
/// `id ..= id + N - 1`. An admission into window `id` must keep all of them
/// within the limit (windows after `id` can hold passes from callers whose
/// clocks are ahead, or borrowed ones). Reads each of the `2N - 1` windows
/// once. `None` if one of those windows has been retired (a caller's clock is
/// already past it): its count is gone, so the intervals cannot be checked,
/// and the admission must be refused.
fn peak_load<const N: usize>(metric: &Metric<N, ReadOnly>, id: u64) -> Option<u64> {
    let n = N as u64;
    let lent = metric.borrowed().lent();
    let mut ring = [0u64; N];
    let (mut sum, mut peak) = (0u64, 0u64);
    for k in id.saturating_sub(n - 1)..=id.saturating_add(n - 1) {
        let slot = &mut ring[(k % n) as usize];
        let p = exact_pass_in(metric, lent, k)?;
        // Window k enters the running interval (k - N, k]; k - N leaves.
        sum = sum.saturating_sub(*slot).saturating_add(p);
        *slot = p;
        if k >= id {
            peak = peak.max(sum);
        }
    }
    Some(peak)
}

/// Pass of window `id` (with what was `lent` to it), or `None` if its bucket,
/// or its borrowed bucket, has moved on to a newer window.
fn exact_pass_in<const N: usize>(
    metric: &Metric<N, ReadOnly>,
    lent: Option<Lent<'_, N>>,
    id: u64,
) -> Option<u64> {
    let own = metric
        .counts()
        .count_or_retired(id, Event::Pass.index())
        .ok()?;
    let lent = match lent {
        Some(lent) => lent.exact_count_in(id)?,
        None => 0,
    };
    Some(own.saturating_add(lent))
}

impl<const N: usize> Limiter for Gate<N> {
    fn record(&self, now: u64, n: u64) -> Result<(), AddError> {
        self.metric.add_event(now, Event::Pass, n)
    }

    fn count(&self, now: u64) -> u64 {
        self.metric.pass(now)
    }

    fn limit(&self) -> u64 {
        self.limit
    }

    fn try_acquire(&self, now: u64, n: u64) -> Decision {
        Gate::try_acquire(self, now, n)
    }

    /// What an admission at `now` could still book: the limit less the
    /// fullest interval that contains the window of `now` (the rule
    /// `try_acquire` applies), 0 if one of those windows is retired.
    fn remaining(&self, now: u64) -> u64 {
        peak_load(&self.metric, now / self.metric.window())
            .map_or(0, |load| self.limit.saturating_sub(load))
    }
}

impl<const N: usize> core::fmt::Debug for Gate<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Gate")
            .field("buckets", &N)
            .field("window", &self.metric.window())
            .field("limit", &self.limit)
            .field("occupy_timeout", &self.occupy_timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for Gate<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Gate {{ buckets: {=usize}, window: {=u64}, limit: {=u64}, occupy_timeout: {=u64} }}",
            N,
            self.metric.window(),
            self.limit,
            self.occupy_timeout
        );
    }
}
