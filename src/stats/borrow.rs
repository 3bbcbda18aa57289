//! Borrowing future windows: the passes that prioritized requests booked for
//! windows that have not started yet (Sentinel's `FutureBucketLeapArray`,
//! which its `OccupiableBucketLeapArray` adds into a window's pass once the
//! window starts). [`Metric`](crate::stats::Metric) keeps one [`Borrowed`] beside
//! its counts; its `add_waiting`, `sub_waiting`, `waiting` and
//! `try_occupy_next` are the methods here.

use core::num::NonZeroU64;
use core::ops::RangeInclusive;

use crate::array::LeapArray;
use crate::error::AddError;
use crate::stats::event::Event;
use crate::sync::{atomic_u64, const_fn_unless_loom, AtomicU64, Ordering};

/// Why an [`add_waiting`](crate::stats::Metric::add_waiting) or
/// [`sub_waiting`](crate::stats::Metric::sub_waiting) did not count.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Metric, WaitingError};
/// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
/// assert_eq!(m.add_waiting(100, 1_500, 1), Err(WaitingError::OutOfRange));
/// m.add_waiting(100, 600, 1).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WaitingError {
    /// The window of `future` does not start after the window of `now`
    /// and at most `N` windows after it. Nothing was counted.
    OutOfRange,
    /// The count itself: see [`AddError`].
    Add(AddError),
}

impl From<AddError> for WaitingError {
    fn from(e: AddError) -> Self {
        WaitingError::Add(e)
    }
}

impl core::fmt::Display for WaitingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WaitingError::OutOfRange => {
                f.write_str("the future window must start after now's and at most N windows ahead")
            }
            WaitingError::Add(e) => core::fmt::Display::fmt(e, f),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WaitingError {}

/// The cell of the counts array holding passes.
const PASS: usize = Event::Pass.index();

/// Passes borrowed for future windows. Window `k` is kept in
/// `laps[(k / N) % 2]`, so the `2N` consecutive windows around `now` (the
/// live ones and the ones that may be borrowed) never share a bucket: a
/// borrow never retires a live window's borrowed count.
pub(crate) struct Borrowed<const N: usize> {
    laps: [LeapArray<N, 1>; 2],
    /// 0 until the first borrow, then 1 for good: lets readers skip the
    /// borrowed arrays of a metric that never borrowed.
    ever: AtomicU64,
}

/// The borrowed passes of a metric that has borrowed: what
/// [`Borrowed::lent`] returns, read once per operation.
#[derive(Clone, Copy)]
pub(crate) struct Lent<'a, const N: usize>(&'a [LeapArray<N, 1>; 2]);

/// Which of the two arrays keeps window `id`: the parity of its lap of `N`
/// windows.
const fn lap<const N: usize>(id: u64) -> usize {
    (id / N as u64 % 2) as usize
}

impl<const N: usize> Borrowed<N> {
    const_fn_unless_loom! {
        /// Nothing borrowed, in windows of `window` ticks.
        pub(crate) fn new(window: NonZeroU64) -> Self {
            Borrowed {
                laps: [LeapArray::new(window), LeapArray::new(window)],
                ever: atomic_u64(0),
            }
        }
    }

    /// The borrowed passes, or `None` if nothing was ever borrowed (then
    /// every borrowed count is 0 and readers skip them).
    pub(crate) fn lent(&self) -> Option<Lent<'_, N>> {
        // In the same total order as the bucket protocol: a borrower sets it
        // before booking, so a reader that reads 0 here precedes that booking
        // and the borrower's own check (after its booking) sees the reader's.
        // ORDERING: SeqCst, pairs with the SeqCst store in `add`.
        (self.ever.load(Ordering::SeqCst) != 0).then_some(Lent(&self.laps))
    }

    /// The array that books window `future` from `now`'s: `future` must
    /// start after `now`'s window and at most `N` windows after it.
    fn future_lap(&self, now: u64, future: u64) -> Result<&LeapArray<N, 1>, WaitingError> {
        let window = self.laps[0].window();
        let (current, id) = (now / window, future / window);
        if id <= current || id - current > N as u64 {
            return Err(WaitingError::OutOfRange);
        }
        Ok(&self.laps[lap::<N>(id)])
    }

    /// Books `n` passes for the window of `future` (`Metric::add_waiting`).
    pub(crate) fn add(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        let lap = self.future_lap(now, future)?;
        // ORDERING: SeqCst, see `lent`: set before the booking.
        self.ever.store(1, Ordering::SeqCst);
        Ok(lap.add(future, 0, n)?)
    }

    /// Takes back `n` passes booked by [`add`](Self::add) for the window of
    /// `future`, stopping at 0 (`Metric::sub_waiting`).
    pub(crate) fn sub(&self, now: u64, future: u64, n: u64) -> Result<(), WaitingError> {
        Ok(self.future_lap(now, future)?.sub(future, 0, n)?)
    }

    /// Passes booked for windows that have not started yet at `now`
    /// (`Metric::waiting`).
    pub(crate) fn waiting(&self, now: u64) -> u64 {
        let current = now / self.laps[0].window();
        self.lent().map_or(0, |lent| lent.after(current))
    }

    /// Sentinel's `tryOccupyNext` over `counts`, whose cell [`PASS`] holds
    /// the passes (`Metric::try_occupy_next`): the ticks until the first
    /// future window in which `n` more passes keep the interval within
    /// `limit`, or `timeout` if none starts within `timeout`.
    pub(crate) fn try_occupy_next<const C: usize>(
        &self,
        counts: &LeapArray<N, C>,
        now: u64,
        n: u64,
        limit: u64,
        timeout: u64,
    ) -> u64 {
        // One read of the flag for the whole computation.
        let lent = self.lent();
        let window = counts.window();
        let current = now / window;
        let borrowed = lent.map_or(0, |l| l.after(current));
        if borrowed >= limit {
            return timeout;
        }
        let lent_over = |ids| lent.map_or(0, |l| l.over(ids));
        let mut pass = counts
            .sum(now, PASS)
            .saturating_add(lent_over(counts.live(now)));
        for step in 1..=N as u64 {
            // Window `current + step` starts in `wait` ticks; the window
            // `current + step - N` slides out of the interval then.
            let Some(start) = current
                .checked_add(step)
                .and_then(|id| id.checked_mul(window))
            else {
                break;
            };
            let wait = start - now;
            if wait >= timeout {
                break;
            }
            let leaving = (current + step).checked_sub(N as u64).map_or(0, |id| {
                let own = counts.count_or_zero(id, PASS);
                own.saturating_add(lent.map_or(0, |l| l.count_in(id)))
            });
            // In u128: a saturated sum would admit a request far over the
            // limit (`n` near `u64::MAX`).
            let after = u128::from(pass) + u128::from(borrowed) + u128::from(n);
            if after.saturating_sub(u128::from(leaving)) <= u128::from(limit) {
                return wait;
            }
            pass = pass.saturating_sub(leaving);
        }
        timeout
    }
}

impl<'a, const N: usize> Lent<'a, N> {
    /// Passes borrowed for window `id` (0 if its bucket has moved on).
    pub(crate) fn count_in(self, id: u64) -> u64 {
        self.0[lap::<N>(id)].count_or_zero(id, 0)
    }

    /// Passes borrowed for window `id`, or `None` if its bucket has moved on
    /// to a newer window (the count is gone).
    pub(crate) fn exact_count_in(self, id: u64) -> Option<u64> {
        self.0[lap::<N>(id)].count_or_retired(id, 0).ok()
    }

    /// Passes borrowed for the `N` windows after window `current`.
    fn after(self, current: u64) -> u64 {
        // The last window of time has no future (a saturating range would
        // count `current` itself).
        current
            .checked_add(1)
            .map_or(0, |next| self.over(next..=current.saturating_add(N as u64)))
    }

    /// Passes borrowed for the windows `ids` (saturating).
    pub(crate) fn over(self, ids: RangeInclusive<u64>) -> u64 {
        ids.map(|id| self.count_in(id)).fold(0, u64::saturating_add)
    }
}
