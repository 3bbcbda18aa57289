//! The model of a `Metric<N>`: the main array (six events, the stored
//! minimum RT, the peak concurrency), the two borrowed arrays, and the
//! queries written out from their documentation. Shared by `tests/gate.rs`
//! and `fuzz/` (the `metric`, `node` and `gate` targets); needs the array
//! model as the crate's module `array`.

use leaparray::array::Wide;
use leaparray::stats::{Access, Event, Metric, MetricWindow, WaitingError};
use leaparray::{AddError, MAX_COUNT};

use crate::array::{ArrayModel, Op};

const CELLS: usize = 8;
const MIN_RT: usize = 6;
const MAX_CONCURRENCY: usize = 7;

/// A metric of `N` windows, the slow way.
#[derive(Debug, Clone)]
pub struct MetricModel<const N: usize> {
    /// The main array.
    pub counts: ArrayModel<N, CELLS>,
    /// Borrowed passes of window `k` live in `borrowed[(k / N) % 2]`.
    pub borrowed: [ArrayModel<N, 1>; 2],
    /// Whether anything was ever borrowed.
    pub ever_borrowed: bool,
}

impl<const N: usize> MetricModel<N> {
    /// An empty metric.
    pub fn new(window: u64) -> Self {
        MetricModel {
            counts: ArrayModel::new::<Wide>(window),
            borrowed: [
                ArrayModel::new::<Wide>(window),
                ArrayModel::new::<Wide>(window),
            ],
            ever_borrowed: false,
        }
    }

    /// Window length.
    pub fn window(&self) -> u64 {
        self.counts.window
    }

    fn half(&self, id: u64) -> &ArrayModel<N, 1> {
        &self.borrowed[(id / N as u64 % 2) as usize]
    }

    /// `Metric::add`.
    pub fn add(&mut self, now: u64, e: Event, n: u64) -> Result<(), AddError> {
        self.counts.update(now, e.index(), Op::Add(n))
    }

    /// `Metric::sub`.
    pub fn sub(&mut self, now: u64, e: Event, n: u64) -> Result<(), AddError> {
        self.counts.update(now, e.index(), Op::Sub(n))
    }

    /// `Metric::add_rt_and_success`: success, then RT, then the minimum
    /// (stored as `MAX_COUNT - rt`, kept with a maximum); stops at `Stale`;
    /// the first error is returned.
    pub fn add_rt_and_success(&mut self, now: u64, rt: u64, success: u64) -> Result<(), AddError> {
        let s = self.add(now, Event::Success, success);
        if s == Err(AddError::Stale) {
            return s;
        }
        let r = self.add(now, Event::Rt, rt);
        if r == Err(AddError::Stale) {
            return r;
        }
        let stored = MAX_COUNT - rt.min(MAX_COUNT - 1);
        let m = self.counts.update(now, MIN_RT, Op::Max(stored));
        s.and(r).and(m)
    }

    /// `Metric::record_concurrency`.
    pub fn record_concurrency(&mut self, now: u64, c: u64) -> Result<(), AddError> {
        self.counts.update(now, MAX_CONCURRENCY, Op::Max(c))
    }

    /// `Metric::add_waiting`: the window of `future` must be 1 to N
    /// windows after `now`'s.
    pub fn add_waiting(&mut self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.check_future(now, future)?;
        self.ever_borrowed = true;
        self.half_mut(future / self.window())
            .update(future, 0, Op::Add(n))
            .map_err(WaitingError::Add)
    }

    /// `Metric::sub_waiting`: as `add_waiting`, taking back.
    pub fn sub_waiting(&mut self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        self.check_future(now, future)?;
        self.half_mut(future / self.window())
            .update(future, 0, Op::Sub(n))
            .map_err(WaitingError::Add)
    }

    fn check_future(&self, now: u64, future: u64) -> Result<(), WaitingError> {
        let w = self.window();
        let (cur, id) = (now / w, future / w);
        if id <= cur || id - cur > N as u64 {
            return Err(WaitingError::OutOfRange);
        }
        Ok(())
    }

    fn half_mut(&mut self, id: u64) -> &mut ArrayModel<N, 1> {
        &mut self.borrowed[(id / N as u64 % 2) as usize]
    }

    /// Passes borrowed for window `id`.
    pub fn borrowed_in(&self, id: u64) -> u64 {
        if self.ever_borrowed {
            self.half(id).count(id, 0)
        } else {
            0
        }
    }

    /// Passes of window `id`, borrowed ones included.
    pub fn pass_in(&self, id: u64) -> u64 {
        self.counts.count(id, Event::Pass.index()) + self.borrowed_in(id)
    }

    /// Whether window `id`'s count, or its borrowed count, is gone.
    pub fn retired(&self, id: u64) -> bool {
        self.counts.retired(id) || (self.ever_borrowed && self.half(id).retired(id))
    }

    /// `event` over the live windows (passes: borrowed included).
    pub fn total(&self, now: u64, e: Event) -> u64 {
        let n = N as u64;
        if e == Event::Pass {
            self.counts
                .last(now, n)
                .into_iter()
                .map(|id| self.pass_in(id))
                .sum()
        } else {
            self.counts.sum_last(now, n, e.index())
        }
    }

    /// Passes borrowed for the windows after `now`'s (up to N ahead) that
    /// have not started.
    pub fn waiting(&self, now: u64) -> u64 {
        let cur = now / self.window();
        (1..=N as u64)
            .filter_map(|k| cur.checked_add(k))
            .map(|id| self.borrowed_in(id))
            .sum()
    }

    /// One record per live window that holds data or borrowed passes.
    pub fn details(&self, now: u64) -> Vec<MetricWindow> {
        let mut out = Vec::new();
        for id in self.counts.last(now, N as u64) {
            let own = self.counts.get(id);
            let borrowed = self.borrowed_in(id);
            if own.is_none() && borrowed == 0 {
                continue;
            }
            let cells = own.map_or([0; CELLS], |w| w.counts);
            let mut counts = [0; 6];
            counts.copy_from_slice(&cells[..6]);
            counts[Event::Pass.index()] += borrowed;
            out.push(MetricWindow {
                start: id.saturating_mul(self.window()),
                counts,
                min_rt: (cells[MIN_RT] != 0).then(|| MAX_COUNT - cells[MIN_RT]),
                max_concurrency: cells[MAX_CONCURRENCY],
            });
        }
        out
    }

    /// Sentinel's `tryOccupyNext`, as its documentation says it: the wait
    /// until the first window start `f` (1 to N windows ahead, sooner than
    /// `timeout`) at which the passes still in the interval ending at `f`,
    /// plus everything borrowed, plus `n`, are at most `limit`; `timeout`
    /// if none (or if the borrowed passes already reach `limit`).
    pub fn try_occupy_next(&self, now: u64, n: u64, limit: u64, timeout: u64) -> u64 {
        let waiting = self.waiting(now);
        if waiting >= limit {
            return timeout;
        }
        let w = self.window();
        let cur = now / w;
        for step in 1..=N as u64 {
            let Some(start) = cur.checked_add(step).and_then(|f| f.checked_mul(w)) else {
                break;
            };
            let wait = start - now;
            if wait >= timeout {
                break;
            }
            // Windows of `now`'s interval that are still in `f`'s.
            let kept: u128 = (0..N as u64 - step)
                .filter_map(|back| cur.checked_sub(back))
                .map(|id| u128::from(self.pass_in(id)))
                .sum();
            if kept + u128::from(waiting) + u128::from(n) <= u128::from(limit) {
                return wait;
            }
        }
        timeout
    }
}

/// Checks every query of `m` at `now` against the model. `probe` is any
/// other time; `q` are arbitrary query parameters (`n`, `limit`,
/// `timeout`, ticks per second).
pub fn check<const N: usize, A: Access>(
    m: &Metric<N, A>,
    model: &MetricModel<N>,
    now: u64,
    probe: u64,
    q: [u64; 4],
) {
    let w = model.window();
    for e in Event::ALL {
        assert_eq!(m.total(now, e), model.total(now, e), "total({now}, {e:?})");
    }
    assert_eq!(m.pass(now), model.total(now, Event::Pass));
    assert_eq!(m.block(now), model.total(now, Event::Block));
    assert_eq!(m.exception(now), model.total(now, Event::Exception));
    assert_eq!(m.success(now), model.total(now, Event::Success));
    assert_eq!(m.rt(now), model.total(now, Event::Rt));
    assert_eq!(m.occupied_pass(now), model.total(now, Event::OccupiedPass));
    let details = model.details(now);
    assert_eq!(
        m.details(now).as_slice(),
        details.as_slice(),
        "details({now})"
    );
    assert_eq!(m.min_rt(now), details.iter().filter_map(|d| d.min_rt).min());
    let success = model.counts.sum_last(now, N as u64, Event::Success.index());
    let rt = model.counts.sum_last(now, N as u64, Event::Rt.index());
    let avg = if success == 0 {
        0.0
    } else {
        rt as f64 / success as f64
    };
    assert_eq!(m.avg_rt(now), avg);
    let max_success = details
        .iter()
        .map(|d| d.get(Event::Success))
        .max()
        .unwrap_or(0);
    assert_eq!(m.max_success(now), max_success);
    let max_conc = details.iter().map(|d| d.max_concurrency).max().unwrap_or(0);
    assert_eq!(m.max_concurrency(now), max_conc);
    let cur = now / w;
    let prev = cur.checked_sub(1);
    assert_eq!(
        m.previous_window_pass(now),
        prev.map_or(0, |id| model.pass_in(id))
    );
    assert_eq!(
        m.previous_window_block(now),
        prev.map_or(0, |id| model.counts.count(id, Event::Block.index()))
    );
    for t in [
        now,
        probe,
        now.saturating_add(w),
        now.saturating_add(w.saturating_mul(2)),
    ] {
        assert_eq!(m.window_pass(t), model.pass_in(t / w), "window_pass({t})");
    }
    assert_eq!(m.waiting(now), model.waiting(now), "waiting({now})");
    let tps = q[3];
    let per_second = model.total(now, Event::Pass) as f64 * tps as f64 / m.interval() as f64;
    assert_eq!(m.per_second(now, Event::Pass, tps), per_second);
    let [n, limit, timeout, _] = q;
    assert_eq!(
        m.try_occupy_next(now, n, limit, timeout),
        model.try_occupy_next(now, n, limit, timeout),
        "try_occupy_next({now}, {n}, {limit}, {timeout})"
    );
}
