//! [`Metric`]: Sentinel's `ArrayMetric` over `MetricBucket`s, with occupy
//! (borrowing future windows, `OccupiableBucketLeapArray`; the borrowed
//! passes are kept in `src/stats/borrow.rs`).

use core::marker::PhantomData;
use core::num::NonZeroU64;

use crate::array::view::ReadOnlyArray;
use crate::array::word::MAX_COUNT;
use crate::array::LeapArray;
use crate::error::AddError;
use crate::stats::borrow::{Borrowed, WaitingError};
use crate::stats::event::Event;
use crate::sync::const_fn_unless_loom;

/// Cells of the main array: the six events, then two per-window extremes.
const EVENTS: usize = Event::ALL.len();
/// The window's minimum RT, stored as `MAX_COUNT - rt` and kept with a
/// per-window maximum, so the cell's initial 0 means "no RT yet" and the
/// update is one exact CAS under the window's generation tag.
const MIN_RT: usize = EVENTS;
/// The window's peak concurrency (a per-window maximum).
const MAX_CONCURRENCY: usize = EVENTS + 1;
const CELLS: usize = EVENTS + 2;

/// Per-window statistics of one resource: the six [`Event`] counts, the
/// exact minimum response time and the peak concurrency of each window, and
/// passes borrowed from future windows.
///
/// Every update is one lock-free, exact operation on a
/// [`LeapArray`]; see [`guarantees`](crate::guarantees) for the contract.
/// Time is the caller's tick count; RT is in the same ticks.
///
/// Sentinel's `ArrayMetric` over `MetricBucket`s: the events `Pass, Block,
/// Exception, Success, Rt, OccupiedPass`, plus per window an exact minimum RT
/// and the peak concurrency, each one atomic update under the window's
/// generation tag (Sentinel's `minRt` is a racy check-then-set). Totals,
/// rates per second for any tick rate, [`previous_window_pass`](Self::previous_window_pass),
/// [`window_pass`](Self::window_pass), [`max_success`](Self::max_success),
/// and [`details`](Self::details): one record per live window for metric
/// logs.
///
/// **Occupy** (Sentinel's `OccupiableBucketLeapArray` / `tryOccupyNext`):
/// [`add_waiting`](Self::add_waiting) books passes for a window that has not
/// started (at most `N` windows ahead); when it starts, its pass count
/// already includes them; [`try_occupy_next`](Self::try_occupy_next) is
/// Sentinel's algorithm.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Event, Metric};
///
/// static M: Metric<2> = Metric::new(NonZeroU64::new(500).unwrap());
/// M.add(100, Event::Pass, 3).unwrap();
/// M.add_rt(120, 40).unwrap();
/// M.add_rt(130, 10).unwrap();
/// assert_eq!(M.pass(200), 3);
/// assert_eq!(M.success(200), 2);
/// assert_eq!(M.min_rt(200), Some(10));
/// assert_eq!(M.avg_rt(200), 25.0);
/// ```
pub struct Metric<const N: usize, A: Access = Writable> {
    /// Read-only outside this module: [`array`](Self::array) hands it out.
    counts: ReadOnlyArray<N, CELLS>,
    /// Passes borrowed for future windows.
    borrowed: Borrowed<N>,
    /// Whether the public writes exist (see [`Access`]).
    access: PhantomData<fn() -> A>,
}

/// Who may write a [`Metric`]: [`Writable`] (the default: every method) or
/// [`ReadOnly`] (the reads only). A [`Gate`](crate::Gate) of the bucket
/// shape hands out its statistics as `&Metric<N, ReadOnly>`, so no caller
/// can change the passes its admissions rest on. Sealed: only these two
/// exist.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Metric, ReadOnly};
/// use leaparray::Gate;
///
/// let g = Gate::<60>::new(NonZeroU64::new(1_000).unwrap(), 10_000);
/// let _ = g.try_acquire(0, 4);
/// let stats: &Metric<60, ReadOnly> = g.metric().unwrap();
/// assert_eq!(stats.pass(0), 4);
/// ```
///
/// Writing through a read-only metric does not compile:
///
/// ```compile_fail,E0599
/// # use core::num::NonZeroU64;
/// # use leaparray::stats::Event;
/// # use leaparray::Gate;
/// let g = Gate::<60>::new(NonZeroU64::new(1_000).unwrap(), 10_000);
/// g.metric().unwrap().sub(0, Event::Pass, 1); // would let the gate admit more
/// ```
pub trait Access: access::Sealed + Copy + Default + Eq + core::fmt::Debug + 'static {}

/// Every method of [`Metric`], writes included (the default).
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Event, Metric, Writable};
///
/// let m: Metric<2, Writable> = Metric::new(NonZeroU64::new(500).unwrap());
/// m.add(0, Event::Pass, 1).unwrap();
/// assert_eq!(m.pass(0), 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Writable;

/// The reads of [`Metric`] only: what [`Gate::metric`](crate::Gate::metric)
/// hands out.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Metric, ReadOnly};
/// use leaparray::Gate;
///
/// let g = Gate::<60>::new(NonZeroU64::new(1_000).unwrap(), 1_000);
/// let _ = g.try_acquire(0, 1_000);
/// let _ = g.try_acquire(0, 1);
/// let m: &Metric<60, ReadOnly> = g.metric().unwrap();
/// assert_eq!((m.pass(0), m.block(0)), (1_000, 1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadOnly;

impl Access for Writable {}
impl Access for ReadOnly {}

mod access {
    pub trait Sealed {}
    impl Sealed for super::Writable {}
    impl Sealed for super::ReadOnly {}
}

/// One window of a [`Metric`], as a metric log line wants it.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Event, Metric};
///
/// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
/// m.add(100, Event::Block, 2).unwrap();
/// let d = m.details(100)[0];
/// assert_eq!((d.start, d.get(Event::Block), d.min_rt), (0, 2, None));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MetricWindow {
    /// The window's start time.
    pub start: u64,
    /// Each event's count, indexed by [`Event::index`]. `Pass` includes the
    /// passes borrowed for this window.
    pub counts: [u64; EVENTS],
    /// The smallest RT recorded in the window, if any.
    pub min_rt: Option<u64>,
    /// The peak concurrency recorded in the window.
    pub max_concurrency: u64,
}

impl MetricWindow {
    /// The count of `event`.
    ///
    /// ```
    /// # use leaparray::stats::{Event, MetricWindow};
    /// let d = MetricWindow { start: 0, counts: [1, 2, 3, 4, 5, 6], min_rt: None, max_concurrency: 0 };
    /// assert_eq!(d.get(Event::Success), 4);
    /// ```
    #[must_use]
    pub const fn get(&self, event: Event) -> u64 {
        self.counts[event.index()]
    }
}

fn min_rt_of(stored: u64) -> Option<u64> {
    (stored != 0).then(|| MAX_COUNT - stored)
}

impl<const N: usize, A: Access> Metric<N, A> {
    const_fn_unless_loom! {
        /// An empty metric of either access (a gate keeps a read-only one).
        pub(crate) fn empty(window: NonZeroU64) -> Self {
            Metric {
                counts: ReadOnlyArray(LeapArray::new(window)),
                borrowed: Borrowed::new(window),
                access: PhantomData,
            }
        }
    }

    /// `add` for the crate's own writers (the gate's read-only metric).
    #[inline]
    pub(crate) fn add_event(&self, now: u64, event: Event, n: u64) -> Result<(), AddError> {
        self.counts.0.add(now, event.index(), n)
    }

    /// `sub` for the crate's own writers.
    #[inline]
    pub(crate) fn sub_event(&self, now: u64, event: Event, n: u64) -> Result<(), AddError> {
        self.counts.0.sub(now, event.index(), n)
    }

    /// `add_waiting` for the crate's own writers.
    pub(crate) fn lend(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.borrowed.add(now, future, n)
    }

    /// `sub_waiting` for the crate's own writers.
    pub(crate) fn unlend(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.borrowed.sub(now, future, n)
    }

    /// Moves every count of every window this metric's buckets hold (ids
    /// read as the ones nearest `near`) into `to` (the same window in
    /// `to`: events added, minimum RT and peak concurrency as candidates),
    /// and empties them here. Borrowed passes are not moved (a metric
    /// drained this way never lends).
    ///
    /// The caller must be this metric's only writer for the whole call
    /// (an origin node's fold, `stats/cluster.rs`): each window is emptied
    /// by its single writer's stores. A concurrent reader may see a window
    /// in both metrics, or in neither, until the call returns.
    pub(crate) fn drain_into(&self, to: &Metric<N, Writable>, near: u64) {
        let window = self.window();
        for id in self.counts.0.held(near) {
            let Some(w) = self.counts.0.read_window(id) else {
                continue;
            };
            let t = id.saturating_mul(window);
            for e in Event::ALL {
                let c = w.counts[e.index()];
                if c > 0 {
                    // `Stale`: `to` holds a newer window at that index, so
                    // this one is retired there (and in its resource's
                    // totals, which every record also reaches).
                    let _ = to.counts.0.add(t, e.index(), c);
                }
            }
            for extreme in [MIN_RT, MAX_CONCURRENCY] {
                if w.counts[extreme] > 0 {
                    let _ = to.counts.0.update_max(t, extreme, w.counts[extreme]);
                }
            }
            if let Ok(cells) = self.counts.0.enter_single_writer(id) {
                // Only the cells that count something: a cell at 0 for the
                // window is already what an empty window holds for it.
                for (cell, _) in cells
                    .cells
                    .iter()
                    .zip(cells.counts)
                    .filter(|(_, c)| *c != 0)
                {
                    // ORDERING: the only writer; released again by the
                    // fold's store of its node's state (`stats/origin.rs`).
                    cell.store(cells.tag, crate::sync::Ordering::Release);
                }
            }
        }
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap()).window(), 500);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.counts.0.window()
    }

    /// The sliding interval, `N * window` ticks (saturating).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap()).interval(), 1_000);
    /// ```
    #[must_use]
    pub const fn interval(&self) -> u64 {
        self.counts.0.interval()
    }

    /// The underlying array of event counts, read-only (cells `0..6` are
    /// the events by [`Event::index`]; cell 6 holds `MAX_COUNT - min RT`,
    /// cell 7 the peak concurrency). Borrowed passes are not in it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Exception, 1).unwrap();
    /// assert_eq!(m.array().sum(0, Event::Exception.index()), 1);
    /// ```
    #[must_use]
    pub const fn array(&self) -> &ReadOnlyArray<N, 8> {
        &self.counts
    }

    /// The event counts, for the gate's admission rule.
    pub(crate) const fn counts(&self) -> &LeapArray<N, CELLS> {
        &self.counts.0
    }

    /// The passes borrowed for future windows.
    pub(crate) const fn borrowed(&self) -> &Borrowed<N> {
        &self.borrowed
    }

    /// Pass of window `id`: its own count plus what was borrowed for it.
    fn pass_in(&self, id: u64) -> u64 {
        let own = self.counts.0.count_or_zero(id, Event::Pass.index());
        let lent = self.borrowed.lent().map_or(0, |l| l.count_in(id));
        own.saturating_add(lent)
    }

    /// Total of `event` over the live windows at `now`. `Pass` includes the
    /// passes borrowed for windows that have started.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Pass, 1).unwrap();
    /// m.add(600, Event::Pass, 2).unwrap();
    /// assert_eq!(m.total(700, Event::Pass), 3);
    /// ```
    #[must_use]
    pub fn total(&self, now: u64, event: Event) -> u64 {
        let own = self.counts.0.sum(now, event.index());
        if event == Event::Pass {
            let lent = self.borrowed.lent();
            own.saturating_add(lent.map_or(0, |l| l.over(self.counts.0.live(now))))
        } else {
            own
        }
    }

    /// Passes over the live windows (borrowed passes included once their
    /// window has started).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Pass, 1).unwrap();
    /// assert_eq!(m.pass(0), 1);
    /// ```
    #[must_use]
    pub fn pass(&self, now: u64) -> u64 {
        self.total(now, Event::Pass)
    }

    /// Blocked requests over the live windows.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Block, 1).unwrap();
    /// assert_eq!(m.block(0), 1);
    /// ```
    #[must_use]
    pub fn block(&self, now: u64) -> u64 {
        self.total(now, Event::Block)
    }

    /// Exceptions over the live windows.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Exception, 1).unwrap();
    /// assert_eq!(m.exception(0), 1);
    /// ```
    #[must_use]
    pub fn exception(&self, now: u64) -> u64 {
        self.total(now, Event::Exception)
    }

    /// Completed requests over the live windows.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_rt(0, 5).unwrap();
    /// assert_eq!(m.success(0), 1);
    /// ```
    #[must_use]
    pub fn success(&self, now: u64) -> u64 {
        self.total(now, Event::Success)
    }

    /// Sum of response times over the live windows, in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_rt(0, 5).unwrap();
    /// assert_eq!(m.rt(0), 5);
    /// ```
    #[must_use]
    pub fn rt(&self, now: u64) -> u64 {
        self.total(now, Event::Rt)
    }

    /// Occupied (borrowing) passes over the live windows.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::OccupiedPass, 1).unwrap();
    /// assert_eq!(m.occupied_pass(0), 1);
    /// ```
    #[must_use]
    pub fn occupied_pass(&self, now: u64) -> u64 {
        self.total(now, Event::OccupiedPass)
    }

    /// The smallest RT recorded in the live windows, or `None` if none was.
    /// (Sentinel reports its `statisticMaxRt` there; `min_rt(now).unwrap_or(max)`
    /// does the same.) Exact: each window's minimum is one atomic update.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.min_rt(0), None);
    /// m.add_rt(0, 9).unwrap();
    /// m.add_rt(600, 4).unwrap();
    /// assert_eq!(m.min_rt(700), Some(4));
    /// ```
    #[must_use]
    pub fn min_rt(&self, now: u64) -> Option<u64> {
        self.details(now).iter().filter_map(|d| d.min_rt).min()
    }

    /// Average RT over the live windows: `rt / success`, `0.0` without
    /// successes (as Sentinel).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.avg_rt(0), 0.0);
    /// m.add_rt_and_success(0, 9, 2).unwrap();
    /// assert_eq!(m.avg_rt(0), 4.5);
    /// ```
    #[must_use]
    pub fn avg_rt(&self, now: u64) -> f64 {
        let s = self.counts.0.sums(now);
        let success = s[Event::Success.index()];
        if success == 0 {
            0.0
        } else {
            s[Event::Rt.index()] as f64 / success as f64
        }
    }

    /// The largest per-window success count among the live windows (0 if
    /// none; Sentinel's `maxSuccess` reports at least 1).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_rt_and_success(0, 1, 3).unwrap();
    /// m.add_rt_and_success(600, 1, 5).unwrap();
    /// assert_eq!(m.max_success(700), 5);
    /// ```
    #[must_use]
    pub fn max_success(&self, now: u64) -> u64 {
        self.details(now)
            .iter()
            .map(|d| d.get(Event::Success))
            .max()
            .unwrap_or(0)
    }

    /// The peak concurrency recorded among the live windows.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.record_concurrency(0, 3).unwrap();
    /// assert_eq!(m.max_concurrency(0), 3);
    /// ```
    #[must_use]
    pub fn max_concurrency(&self, now: u64) -> u64 {
        self.details(now)
            .iter()
            .map(|d| d.max_concurrency)
            .max()
            .unwrap_or(0)
    }

    /// Passes of the window before `now`'s (borrowed included), 0 if its
    /// bucket no longer holds it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 3).unwrap();
    /// assert_eq!(m.previous_window_pass(600), 3);
    /// ```
    #[must_use]
    pub fn previous_window_pass(&self, now: u64) -> u64 {
        (now / self.window())
            .checked_sub(1)
            .map_or(0, |id| self.pass_in(id))
    }

    /// Blocks of the window before `now`'s, 0 if its bucket no longer holds it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Block, 2).unwrap();
    /// assert_eq!(m.previous_window_block(600), 2);
    /// ```
    #[must_use]
    pub fn previous_window_block(&self, now: u64) -> u64 {
        self.counts
            .0
            .previous(now)
            .map_or(0, |w| w.counts[Event::Block.index()])
    }

    /// Passes of the window containing `t` (borrowed included), 0 if its
    /// bucket no longer holds it (Sentinel's `getWindowPass`).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 3).unwrap();
    /// assert_eq!(m.window_pass(499), 3);
    /// assert_eq!(m.window_pass(500), 0);
    /// ```
    #[must_use]
    pub fn window_pass(&self, t: u64) -> u64 {
        self.pass_in(t / self.window())
    }

    /// `event` per second over the live windows, given the tick rate:
    /// `total * ticks_per_second / interval`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// // Two 500 ms windows, time in ms.
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 30).unwrap();
    /// assert_eq!(m.per_second(100, Event::Pass, 1_000), 30.0);
    /// ```
    #[must_use]
    pub fn per_second(&self, now: u64, event: Event, ticks_per_second: u64) -> f64 {
        self.total(now, event) as f64 * ticks_per_second as f64 / self.interval() as f64
    }

    /// One record per live window that holds data, oldest first: every
    /// event count (borrowed passes included), the minimum RT and the peak
    /// concurrency. For metric logs.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 1).unwrap();
    /// m.add_rt(600, 3).unwrap();
    /// let d = m.details(700);
    /// assert_eq!(d.len(), 2);
    /// assert_eq!((d[0].get(Event::Pass), d[1].min_rt), (1, Some(3)));
    /// ```
    #[must_use]
    pub fn details(&self, now: u64) -> heapless::Vec<MetricWindow, N> {
        let mut out = heapless::Vec::new();
        let lent = self.borrowed.lent();
        for id in self.counts.0.live(now) {
            let own = self.counts.0.read_window(id);
            let borrowed = lent.map_or(0, |l| l.count_in(id));
            if own.is_none() && borrowed == 0 {
                continue;
            }
            let cells = own.map_or([0; CELLS], |w| w.counts);
            let mut counts = [0; EVENTS];
            counts.copy_from_slice(&cells[..EVENTS]);
            counts[Event::Pass.index()] = counts[Event::Pass.index()].saturating_add(borrowed);
            // At most N live ids: never over capacity.
            let _ = out.push(MetricWindow {
                start: id.saturating_mul(self.window()),
                counts,
                min_rt: min_rt_of(cells[MIN_RT]),
                max_concurrency: cells[MAX_CONCURRENCY],
            });
        }
        out
    }

    /// Passes booked for windows that have not started yet at `now`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_waiting(0, 500, 1).unwrap();
    /// m.add_waiting(0, 1_000, 2).unwrap();
    /// assert_eq!(m.waiting(0), 3);
    /// assert_eq!(m.waiting(500), 2);
    /// ```
    #[must_use]
    pub fn waiting(&self, now: u64) -> u64 {
        self.borrowed.waiting(now)
    }

    /// Sentinel's `tryOccupyNext`: how long a request for `n` permits must
    /// wait for a future window in which, counting everything already
    /// passed and borrowed, at most `limit` would pass in the interval.
    /// Returns `timeout` when no window within `timeout` ticks has room (or
    /// borrowing already reached `limit`). Books nothing.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 7).unwrap(); // window [0, 500)
    /// m.add(600, Event::Pass, 3).unwrap(); // window [500, 1000)
    /// // limit 10: full now; at 1000 the 7 of [0, 500) slide out.
    /// assert_eq!(m.try_occupy_next(700, 5, 10, 500), 300);
    /// assert_eq!(m.try_occupy_next(700, 8, 10, 500), 500); // no room in time
    /// ```
    #[must_use]
    pub fn try_occupy_next(&self, now: u64, n: u64, limit: u64, timeout: u64) -> u64 {
        self.borrowed
            .try_occupy_next(&self.counts.0, now, n, limit, timeout)
    }
}

/// The writes: only a [`Writable`] metric (the default) has them.
impl<const N: usize> Metric<N, Writable> {
    const_fn_unless_loom! {
        /// An empty metric of `N` windows of `window` ticks (`const`, so it
        /// can live in a `static`).
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// let m = leaparray::stats::Metric::<60>::new(NonZeroU64::new(1_000).unwrap());
        /// assert_eq!(m.interval(), 60_000);
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64) -> Self {
            Self::empty(window)
        }
    }

    /// Adds `n` to `event` in the window of `now`. Errors as
    /// [`LeapArray::add`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Pass, 2).unwrap();
    /// assert_eq!(m.total(0, Event::Pass), 2);
    /// ```
    #[inline]
    pub fn add(&self, now: u64, event: Event, n: u64) -> Result<(), AddError> {
        self.add_event(now, event, n)
    }

    /// Removes `n` from `event` in the window of `now` (stopping at 0): the
    /// undo of an [`add`](Self::add) with the same `now`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Pass, 2).unwrap();
    /// m.sub(0, Event::Pass, 1).unwrap();
    /// assert_eq!(m.pass(0), 1);
    /// ```
    #[inline]
    pub fn sub(&self, now: u64, event: Event, n: u64) -> Result<(), AddError> {
        self.sub_event(now, event, n)
    }

    /// Records one completed request that took `rt` ticks: `Success + 1`,
    /// `Rt + rt` and the window's minimum RT (Sentinel's
    /// `addRtAndSuccess(rt, 1)`).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_rt(0, 7).unwrap();
    /// assert_eq!((m.success(0), m.rt(0), m.min_rt(0)), (1, 7, Some(7)));
    /// ```
    pub fn add_rt(&self, now: u64, rt: u64) -> Result<(), AddError> {
        self.add_rt_and_success(now, rt, 1)
    }

    /// Records `success` completed requests whose response times add up to
    /// `rt` ticks, and `rt` as a candidate for the window's minimum RT
    /// (Sentinel's `addRtAndSuccess`).
    ///
    /// The three updates are each exact but not one atomic step. They are
    /// made in that order and stop at `Stale`: if the window is retired
    /// between them, a prefix may have counted in it (the call reports
    /// `Stale`). `Saturated` does not stop the others; the first error is
    /// returned.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_rt_and_success(0, 30, 3).unwrap();
    /// assert_eq!(m.avg_rt(0), 10.0);
    /// ```
    pub fn add_rt_and_success(&self, now: u64, rt: u64, success: u64) -> Result<(), AddError> {
        let stop = |r: &Result<(), AddError>| *r == Err(AddError::Stale);
        let s = self.counts.0.add(now, Event::Success.index(), success);
        if stop(&s) {
            return s;
        }
        let r = self.counts.0.add(now, Event::Rt.index(), rt);
        if stop(&r) {
            return r;
        }
        let m = self
            .counts
            .0
            .update_max(now, MIN_RT, MAX_COUNT - rt.min(MAX_COUNT - 1));
        s.and(r).and(m)
    }

    /// Records `concurrency` as a candidate for the window's peak.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.record_concurrency(0, 4).unwrap();
    /// m.record_concurrency(1, 2).unwrap();
    /// assert_eq!(m.max_concurrency(1), 4);
    /// ```
    pub fn record_concurrency(&self, now: u64, concurrency: u64) -> Result<(), AddError> {
        self.counts.0.update_max(now, MAX_CONCURRENCY, concurrency)
    }

    /// Books `n` passes for the future window containing `future`, which must
    /// start after `now`'s window and at most `N` windows after it
    /// ([`WaitingError::OutOfRange`] otherwise). When that window starts,
    /// its pass count already includes them.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Metric, WaitingError};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_waiting(100, 600, 2).unwrap();
    /// assert_eq!(m.waiting(100), 2);
    /// assert_eq!(m.pass(100), 0);
    /// assert_eq!(m.pass(600), 2); // the borrowed window has started
    /// assert_eq!(m.add_waiting(100, 1_500, 1), Err(WaitingError::OutOfRange));
    /// ```
    pub fn add_waiting(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.lend(now, future, n)
    }

    /// Takes back `n` passes booked with [`add_waiting`](Self::add_waiting)
    /// for the window of `future` (stopping at 0).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::Metric;
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add_waiting(100, 600, 2).unwrap();
    /// m.sub_waiting(100, 600, 2).unwrap();
    /// assert_eq!(m.waiting(100), 0);
    /// ```
    pub fn sub_waiting(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.unlend(now, future, n)
    }
}

impl<const N: usize, A: Access> core::fmt::Debug for Metric<N, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Metric")
            .field("buckets", &N)
            .field("window", &self.window())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, A: Access> defmt::Format for Metric<N, A> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Metric {{ buckets: {=usize}, window: {=u64} }}",
            N,
            self.window()
        );
    }
}
