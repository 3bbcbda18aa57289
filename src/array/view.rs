//! [`ReadOnlyArray`]: a [`LeapArray`] that can be read but not written.

use crate::array::window::Window;
use crate::array::word::{Wide, Width};
use crate::array::LeapArray;
use crate::error::SpanError;

/// A [`LeapArray`] that can only be read: every read method of
/// `LeapArray`, none that writes (`add`, `sub`, `update_max`). A type that
/// keeps an array whose cells encode something (as [`Metric`](crate::stats::Metric)
/// keeps the minimum RT as `MAX_COUNT - rt`) hands out this, so a caller can
/// read the raw cells but cannot break the encoding.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{Event, Metric};
///
/// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
/// m.add(100, Event::Exception, 1).unwrap();
/// let cells = m.array(); // &ReadOnlyArray<2, 8>
/// assert_eq!(cells.sum(100, Event::Exception.index()), 1);
/// ```
///
/// Writing through it does not compile:
///
/// ```compile_fail,E0599
/// # use core::num::NonZeroU64;
/// let m = leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap());
/// m.array().add(100, 6, 1); // the minimum-RT cell
/// ```
pub struct ReadOnlyArray<const N: usize, const C: usize = 1, W: Width = Wide>(
    pub(crate) LeapArray<N, C, W>,
);

impl<const N: usize, const C: usize, W: Width> ReadOnlyArray<N, C, W> {
    /// The window length in ticks ([`LeapArray::window`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let m = leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.array().window(), 500);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.0.window()
    }

    /// The sliding interval, `N * window` ticks ([`LeapArray::interval`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let m = leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.array().interval(), 1_000);
    /// ```
    #[must_use]
    pub const fn interval(&self) -> u64 {
        self.0.interval()
    }

    /// The start of the window containing `t` ([`LeapArray::window_start`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let m = leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.array().window_start(1_234), 1_000);
    /// ```
    #[must_use]
    pub const fn window_start(&self, t: u64) -> u64 {
        self.0.window_start(t)
    }

    /// The bucket index of the window containing `t`
    /// ([`LeapArray::window_index`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let m = leaparray::stats::Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(m.array().window_index(1_500), 1);
    /// ```
    #[must_use]
    pub const fn window_index(&self, t: u64) -> usize {
        self.0.window_index(t)
    }

    /// Total of `counter` over the live windows at `now` ([`LeapArray::sum`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Block, 1).unwrap();
    /// m.add(600, Event::Block, 2).unwrap();
    /// assert_eq!(m.array().sum(999, Event::Block.index()), 3);
    /// ```
    #[must_use]
    pub fn sum(&self, now: u64, counter: usize) -> u64 {
        self.0.sum(now, counter)
    }

    /// Totals of every counter over the live windows at `now`
    /// ([`LeapArray::sums`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(0, Event::Block, 1).unwrap();
    /// assert_eq!(m.array().sums(0)[Event::Block.index()], 1);
    /// ```
    #[must_use]
    pub fn sums(&self, now: u64) -> [u64; C] {
        self.0.sums(now)
    }

    /// The live windows at `now` that hold data, oldest first
    /// ([`LeapArray::windows`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(600, Event::Pass, 1).unwrap();
    /// let w = m.array().windows(700);
    /// assert_eq!((w.len(), w[0].start), (1, 500));
    /// ```
    #[must_use]
    pub fn windows(&self, now: u64) -> heapless::Vec<Window<C>, N> {
        self.0.windows(now)
    }

    /// The live windows at `now` whose start satisfies `predicate`, oldest
    /// first ([`LeapArray::windows_where`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 1).unwrap();
    /// m.add(600, Event::Pass, 1).unwrap();
    /// assert_eq!(m.array().windows_where(700, |start| start >= 500).len(), 1);
    /// ```
    #[must_use]
    pub fn windows_where(
        &self,
        now: u64,
        predicate: impl FnMut(u64) -> bool,
    ) -> heapless::Vec<Window<C>, N> {
        self.0.windows_where(now, predicate)
    }

    /// The window containing `t`, if its bucket still holds it
    /// ([`LeapArray::window_at`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 3).unwrap();
    /// assert_eq!(m.array().window_at(0).map(|w| w.counts[0]), Some(3));
    /// assert_eq!(m.array().window_at(500), None);
    /// ```
    #[must_use]
    pub fn window_at(&self, t: u64) -> Option<Window<C>> {
        self.0.window_at(t)
    }

    /// The window before `now`'s, if its bucket still holds it
    /// ([`LeapArray::previous`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 3).unwrap();
    /// assert_eq!(m.array().previous(600).map(|w| w.start), Some(0));
    /// ```
    #[must_use]
    pub fn previous(&self, now: u64) -> Option<Window<C>> {
        self.0.previous(now)
    }

    /// The oldest live window at `now` (the one the next roll-over reuses),
    /// if its bucket holds it ([`LeapArray::head`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 3).unwrap();
    /// assert_eq!(m.array().head(700).map(|w| w.start), Some(0));
    /// assert_eq!(m.array().head(1_600), None);
    /// ```
    #[must_use]
    pub fn head(&self, now: u64) -> Option<Window<C>> {
        self.0.head(now)
    }

    /// Total of `counter` over the windows of the last `span` ticks
    /// ([`LeapArray::sum_span`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::stats::{Event, Metric};
    /// let m = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// m.add(100, Event::Pass, 1).unwrap();
    /// m.add(600, Event::Pass, 2).unwrap();
    /// assert_eq!(m.array().sum_span(999, 500, Event::Pass.index()), Ok(2));
    /// ```
    pub fn sum_span(&self, now: u64, span: u64, counter: usize) -> Result<u64, SpanError> {
        self.0.sum_span(now, span, counter)
    }
}

/// Loom builds only: the array itself, so that `loom-tests` can read the
/// windows a bucket retired (`LeapArray::retired`) through
/// [`Metric::array`](crate::stats::Metric::array).
#[cfg(leaparray_loom)]
impl<const N: usize, const C: usize, W: Width> core::ops::Deref for ReadOnlyArray<N, C, W> {
    type Target = LeapArray<N, C, W>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<const N: usize, const C: usize, W: Width> core::fmt::Debug for ReadOnlyArray<N, C, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("ReadOnlyArray").field(&self.0).finish()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const C: usize, W: Width> defmt::Format for ReadOnlyArray<N, C, W> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ReadOnlyArray({})", self.0);
    }
}
