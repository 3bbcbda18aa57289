//! The gate for shapes no atomic word holds (many windows, large limits):
//! a [`Metric`] of buckets, booking first and checking second.
//!
//! # Exact admission
//!
//! A decision adds its `n` permits to the newest window, then reads the
//! load of every interval of `N` windows that contains that window (the
//! intervals ending `0 ..= N - 1` windows later: later windows may hold
//! passes borrowed for them), and if any exceeds the limit takes its own
//! booking back and refuses. Of the admitted requests in any interval, the
//! one whose booking came last read every other's booking (its reads
//! follow its booking, which follows theirs) and saw that interval within
//! the limit.
//!
//! Booking and reading touch different buckets, so two admissions form
//! the store-buffer pattern:
//!
//! ```text
//!  Thread 1                        Thread 2            (limit 10, 9 passed)
//!  ------------------------------  ------------------------------
//!  book 1 in window 4 (bucket 0)   book 1 in window 5 (bucket 1)
//!  read bucket 1: misses T2's      read bucket 0: misses T1's
//!  10 <= 10: keep                  10 <= 10: keep      -> 11 in (4, 5)
//! ```
//!
//! Acquire/release orderings allow both reads to miss both bookings; the
//! bucket protocol's operations are all `SeqCst`, one total order in which
//! at least one read sees the other's booking (see "Orderings" in
//! [`protocol`](crate::protocol)). Loom models `SeqCst` accesses as
//! acquire/release, so under loom a `SeqCst` fence stands for that order:
//! the loom models of this gate check the protocol given that order, not
//! the order itself.
//!
//! The price is **false rejections under contention**: between a booking
//! and its rollback, others count it. A request is refused although it
//! would have fit only if, while it read the load, other requests'
//! bookings that they then took back pushed the load over the limit.
//!
//! # Late callers
//!
//! A caller whose window is older than the newest window any bucket holds
//! books into that newest window. If a caller moves the gate past it
//! during the decision (a window of the checked intervals retires), the
//! decision starts over with the new newest window, up to
//! [`ATTEMPTS`] times; after that it refuses.

use core::num::NonZeroU64;

use crate::stats::borrow::Lent;
use crate::stats::event::Event;
use crate::stats::metric::{Metric, ReadOnly};
use crate::sync::{const_fn_unless_loom, loom_sc_order};

/// How many times a decision starts over when other callers keep moving
/// the newest window during it.
pub(crate) const ATTEMPTS: u32 = 4;

/// A gate of `N` buckets (passes, blocks, occupied passes, borrowed passes).
pub(crate) struct BucketGate<const N: usize> {
    metric: Metric<N, ReadOnly>,
}

impl<const N: usize> BucketGate<N> {
    const_fn_unless_loom! {
        pub(crate) fn new(window: NonZeroU64) -> Self {
            BucketGate {
                metric: Metric::empty(window),
            }
        }
    }

    pub(crate) const fn metric(&self) -> &Metric<N, ReadOnly> {
        &self.metric
    }

    /// Books `n` (`1 ..= limit`) at `now` into the newest window, keeping
    /// it if every interval containing it is then within `limit`; the
    /// window booked.
    pub(crate) fn admit(&self, limit: u64, now: u64, n: u64) -> Option<u64> {
        let window = self.metric.window();
        let own = now / window;
        for _ in 0..ATTEMPTS {
            let id = self.metric.counts().newest_from(own);
            // Inside window `id`: its start, or `now` when it is ours.
            let at = if id == own {
                now
            } else {
                id.saturating_mul(window)
            };
            match peak_load(&self.metric, id) {
                // Already full: refuse without booking (nothing to undo).
                Some(load) if load.saturating_add(n) > limit => return None,
                Some(_) => {}
                None => continue,
            }
            if self.metric.add_event(at, Event::Pass, n).is_err() {
                // Stale: a newer window took the bucket; start over.
                // Saturated: far over any limit below MAX_COUNT, and
                // nothing to undo that would not remove others' passes.
                if self.metric.counts().newest_from(id) > id {
                    continue;
                }
                return None;
            }
            // Of two callers that each book then read the other's bucket,
            // at least one reads the other's booking: the bookings and the
            // reads are SeqCst operations, all in one total order (module
            // docs); under loom this stands for that order.
            loom_sc_order();
            match peak_load(&self.metric, id) {
                Some(load) if load <= limit => return Some(id),
                Some(_) => {
                    let _ = self.metric.sub_event(at, Event::Pass, n);
                    return None;
                }
                // Retired since: our booking went with it; start over.
                None => {
                    let _ = self.metric.sub_event(at, Event::Pass, n);
                }
            }
        }
        None
    }

    /// Takes back `n` booked into window `id` (nothing if it retired).
    pub(crate) fn cancel(&self, id: u64, n: u64) {
        let _ = self
            .metric
            .sub_event(id.saturating_mul(self.metric.window()), Event::Pass, n);
    }

    /// Sentinel's `tryOccupyNext` after a refusal: borrows the future
    /// window it names if that starts less than `timeout` after `now` and
    /// its intervals stay within `limit`; the wait.
    pub(crate) fn borrow(&self, limit: u64, timeout: u64, now: u64, n: u64) -> Option<u64> {
        let wait = self.metric.try_occupy_next(now, n, limit, timeout);
        if wait >= timeout {
            return None;
        }
        let future = now + wait;
        self.metric.lend(now, future, n).ok()?;
        // Book, then read: as in `admit`.
        loom_sc_order();
        if peak_load(&self.metric, future / self.metric.window()).is_some_and(|l| l <= limit) {
            let _ = self.metric.add_event(now, Event::OccupiedPass, n);
            return Some(wait);
        }
        // Others booked first: take ours back.
        let _ = self.metric.unlend(now, future, n);
        None
    }

    /// Records a refusal.
    pub(crate) fn block(&self, now: u64, n: u64) {
        let _ = self.metric.add_event(now, Event::Block, n);
    }

    /// The fullest interval a booking at `now` would join (`None`: one of
    /// its windows is retired).
    pub(crate) fn load(&self, now: u64) -> Option<u64> {
        let own = now / self.metric.window();
        peak_load(&self.metric, self.metric.counts().newest_from(own))
    }

    /// Ticks from `now` until `n` (`1 ..= limit`) would be admitted if
    /// nothing else arrived; `None` if that window would start after
    /// `u64::MAX`.
    pub(crate) fn retry_after(&self, limit: u64, now: u64, n: u64) -> Option<u64> {
        let window = self.metric.window();
        let id = self.metric.counts().newest_from(now / window);
        // After N windows of the newest's and the borrowed ones, nothing
        // is left to slide out.
        for j in 0..=2 * N as u64 + 1 {
            let at = id.checked_add(j)?;
            let room = peak_load(&self.metric, at).is_some_and(|l| l.saturating_add(n) <= limit);
            if room || j == 2 * N as u64 + 1 {
                return if j == 0 {
                    Some(0)
                } else {
                    Some(at.checked_mul(window)?.saturating_sub(now))
                };
            }
        }
        None
    }
}

/// The admission rule: the largest pass count (borrowed included) of any
/// interval that contains window `id`, the intervals ending at windows
/// `id ..= id + N - 1`. Reads each of the `2N - 1` windows once. `None` if
/// one of those windows has been retired: its count is gone, so the
/// intervals cannot be checked.
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
