//! What a reader of a [`ClusterNode`](crate::stats::ClusterNode) gets:
//! a metric's [`Counts`] and an origin's [`OriginStats`].

use crate::stats::event::Event;
use crate::stats::origin::Origin;

/// One metric's counts at a time: the events over its live windows, the
/// least minimum RT and the highest peak concurrency of those windows.
///
/// ```
/// use leaparray::stats::{ClusterNode, Counts};
/// let cn = ClusterNode::<1>::millis();
/// cn.add_pass(None, 0, 3).unwrap();
/// assert_eq!(cn.others(0).second, Counts { pass: 3, ..Counts::default() });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counts {
    /// Passed requests.
    pub pass: u64,
    /// Blocked requests.
    pub block: u64,
    /// Completed requests.
    pub success: u64,
    /// Business exceptions.
    pub exception: u64,
    /// Response time, summed over completed requests (ticks).
    pub rt: u64,
    /// The least response time, if any completed.
    pub min_rt: Option<u64>,
    /// The highest per-window peak of requests in flight.
    pub max_concurrency: u64,
}

impl Counts {
    /// `metric`'s counts at `now`: each live window read once, whole
    /// ([`Metric::details`](crate::stats::Metric::details)).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{Counts, Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Block, 2).unwrap();
    /// m.add_rt_and_success(600, 9, 1).unwrap();
    /// let c = Counts::of(&m, 600);
    /// assert_eq!((c.block, c.success, c.rt, c.min_rt), (2, 1, 9, Some(9)));
    /// ```
    #[must_use]
    pub fn of<const N: usize, A: crate::stats::Access>(
        metric: &crate::stats::Metric<N, A>,
        now: u64,
    ) -> Counts {
        metric.details(now).iter().fold(Counts::default(), |c, w| {
            c.plus(Counts {
                pass: w.get(Event::Pass),
                block: w.get(Event::Block),
                success: w.get(Event::Success),
                exception: w.get(Event::Exception),
                rt: w.get(Event::Rt),
                min_rt: w.min_rt,
                max_concurrency: w.max_concurrency,
            })
        })
    }

    /// The counts of both: events added, the least minimum RT, the higher
    /// peak.
    ///
    /// ```
    /// use leaparray::stats::Counts;
    /// let a = Counts { pass: 1, min_rt: Some(5), ..Counts::default() };
    /// let b = Counts { pass: 2, min_rt: Some(3), max_concurrency: 4, ..Counts::default() };
    /// assert_eq!(a.plus(b), Counts { pass: 3, min_rt: Some(3), max_concurrency: 4, ..Counts::default() });
    /// ```
    #[must_use]
    pub fn plus(self, o: Counts) -> Counts {
        Counts {
            pass: self.pass.saturating_add(o.pass),
            block: self.block.saturating_add(o.block),
            success: self.success.saturating_add(o.success),
            exception: self.exception.saturating_add(o.exception),
            rt: self.rt.saturating_add(o.rt),
            min_rt: match (self.min_rt, o.min_rt) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            max_concurrency: self.max_concurrency.max(o.max_concurrency),
        }
    }
}

/// What one origin's node held when read ([`ClusterNode::origin`](crate::stats::ClusterNode::origin)), or
/// what other origins hold together ([`ClusterNode::others`](crate::stats::ClusterNode::others)).
///
/// ```
/// use leaparray::stats::{ClusterNode, Origin};
/// let cn = ClusterNode::<4>::millis();
/// cn.add_pass(Some(Origin::named("a")), 0, 1).unwrap();
/// let s = cn.origin(Origin::named("a"), 0).unwrap();
/// assert_eq!((s.origin, s.second.pass, s.minute.pass), (Some(Origin::named("a")), 1, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OriginStats {
    /// The origin; `None` for other origins.
    pub origin: Option<Origin>,
    /// Its second-level counts.
    pub second: Counts,
    /// Its minute-level counts.
    pub minute: Counts,
    /// Its entries in flight.
    pub concurrency: u64,
}
