//! [`LeapArray`] (the ring of buckets and its time arithmetic) and what
//! its methods take and give: the [`Window`]s it lists, the
//! [`ReadOnlyArray`] view, the [`SpanError`] of a span query, the counter
//! [`Width`]s. The array itself is also at the crate root.
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::array::{Narrow, Window};
//! use leaparray::LeapArray;
//!
//! // 32-bit counters, for targets with 32-bit atomics only.
//! static A: LeapArray<2, 1, Narrow> = LeapArray::new_narrow(NonZeroU64::new(500).unwrap());
//! A.add(100, 0, 3).unwrap();
//! assert_eq!(A.windows(100)[0], Window { start: 0, counts: [3] });
//! ```

pub(crate) mod bucket;
pub(crate) mod view;
pub(crate) mod window;
pub(crate) mod word;

use core::fmt;
use core::num::NonZeroU64;

use crate::array::bucket::{Bucket, CellOp, Retired, WriterCells};
pub use crate::array::view::ReadOnlyArray;
use crate::array::window::add_counts;
pub use crate::array::window::Window;
pub use crate::array::word::{Narrow, Wide, Width};
use crate::error::AddError;
pub use crate::error::SpanError;
use crate::sync::{array_of, const_fn_unless_loom};

/// Sentinel's sliding-window array: `N` buckets of `window` ticks, `C`
/// counters each, counting exactly and without a lock.
///
/// - Time is a `u64` tick count passed in by the caller (ms, µs, cycles:
///   anything monotonic). The array never reads a clock.
/// - The window id of a time `t` is `k = t / window`; it lives in bucket
///   `k % N` and starts at `k * window`.
/// - At query time `q` the **live** windows are the `N` most recent ones:
///   `q / window - N < k <= q / window`. Their total is the count over the
///   sliding interval of `N * window` ticks ending at `q`.
///
/// Every operation is lock-free, allocation-free and panic-free; see the
/// crate documentation for the exactness contract and [`crate::MAX_COUNT`]
/// for the count range.
///
/// `N == 0` or `C == 0` is a compile-time error:
///
/// ```compile_fail,E0080
/// use core::num::NonZeroU64;
/// let a = leaparray::LeapArray::<0>::new(NonZeroU64::new(1).unwrap());
/// ```
///
/// A zero window cannot be expressed: the constructors take a
/// [`NonZeroU64`], and a `static` built from `NonZeroU64::new(0).unwrap()`
/// fails at compile time.
///
/// ```compile_fail,E0080
/// use core::num::NonZeroU64;
/// static A: leaparray::LeapArray<2> = leaparray::LeapArray::new(NonZeroU64::new(0).unwrap());
/// ```
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::LeapArray;
///
/// // 2 buckets of 500 ms: Sentinel's per-second statistics.
/// static PASSED: LeapArray<2> = LeapArray::new(NonZeroU64::new(500).unwrap());
///
/// PASSED.add(100, 0, 20).unwrap(); // 20 requests in [0, 500)
/// PASSED.add(700, 0, 80).unwrap(); // 80 in [500, 1000)
/// assert_eq!(PASSED.sum(999, 0), 100); // the last second
/// assert_eq!(PASSED.sum(1_200, 0), 80); // [0, 500) has slid out
/// ```
pub struct LeapArray<const N: usize, const C: usize = 1, W: Width = Wide> {
    /// Window length in ticks; never 0.
    window: u64,
    /// Bucket `i` holds windows `k` with `k % N == i`.
    buckets: [Bucket<W, C>; N],
}

impl<const N: usize, const C: usize> LeapArray<N, C, Wide> {
    const_fn_unless_loom! {
        /// An empty array of `N` windows of `window` ticks each.
        ///
        /// `const`, so the array can live in a `static`.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use leaparray::LeapArray;
        ///
        /// const WINDOW: NonZeroU64 = NonZeroU64::new(1_000).unwrap();
        /// static PER_MINUTE: LeapArray<60, 2> = LeapArray::new(WINDOW);
        /// assert_eq!(PER_MINUTE.interval(), 60_000);
        /// assert_eq!(PER_MINUTE.sum(0, 0), 0);
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64) -> Self {
            Self::from_buckets(window, array_of!(N, Bucket::<Wide, C>::new()))
        }
    }
}

impl<const N: usize, const C: usize> LeapArray<N, C, Narrow> {
    const_fn_unless_loom! {
        /// An empty array of `N` windows of `window` ticks whose buckets are
        /// 32-bit atomic words ([`Narrow`]): genuinely lock-free on targets with
        /// 32-bit but no 64-bit atomics (Cortex-M3/M4/M33, riscv32imac, Xtensa),
        /// with no interrupt masking. `const` (except under loom). The API is
        /// the same as for [`LeapArray::new`]; the limits are narrower:
        ///
        /// - counts up to [`Narrow::MAX_COUNT`] = 8,388,607 per counter per
        ///   window (saturating, as always);
        /// - window ids are kept modulo 2^24: every time in use must be within
        ///   2^23 windows (8,388,608) of every other: 2.3 hours of 1 ms windows,
        ///   97 days of 1 s windows. This holds for **every bucket**: a bucket
        ///   whose index goes unused for 2^23 windows can be mistaken for a
        ///   current one. An add touches one bucket only; call
        ///   [`refresh`](LeapArray::refresh) at least every `2^23 - N` windows
        ///   when some indices may go unused that long;
        /// - generations wrap at 2^8: a thread stalled inside one `add` (between
        ///   reading its bucket's stamp and its compare-and-swap) while its
        ///   bucket rolls over fewer than 254 times is exact; at 254 or more (at
        ///   least `254 * N` windows) it may corrupt the window being retired
        ///   or the next one (see [`protocol`](crate::protocol), "Limits").
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use leaparray::array::Narrow;
        /// use leaparray::LeapArray;
        ///
        /// // 2 x 500 ms, time in ms, 32-bit words.
        /// static REQUESTS: LeapArray<2, 1, Narrow> = LeapArray::new_narrow(NonZeroU64::new(500).unwrap());
        /// REQUESTS.add(100, 0, 3).unwrap();
        /// REQUESTS.add(600, 0, 4).unwrap();
        /// assert_eq!(REQUESTS.sum(999, 0), 7);
        /// assert_eq!(core::mem::size_of::<LeapArray<2, 1, Narrow>>(), 8 + 2 * (4 + 4));
        /// ```
        #[must_use]
        pub fn new_narrow(window: NonZeroU64) -> Self {
            Self::from_buckets(window, array_of!(N, Bucket::<Narrow, C>::new()))
        }
    }
}

#[cfg(leaparray_loom)]
impl<const N: usize, const C: usize> LeapArray<N, C, crate::array::word::LoomTinyGen> {
    /// Loom builds only: an array whose generations wrap at 2^3, for models
    /// that stall a thread across half the generation range.
    #[doc(hidden)]
    #[must_use]
    pub fn new_tiny_gen(window: NonZeroU64) -> Self {
        Self::from_buckets(
            window,
            array_of!(N, Bucket::<crate::array::word::LoomTinyGen, C>::new()),
        )
    }
}

impl<const N: usize, const C: usize, W: Width> LeapArray<N, C, W> {
    const_fn_unless_loom! {
        /// Every constructor's last step: a zero-sized ring or a bucket
        /// without counters does not compile.
        fn from_buckets(window: NonZeroU64, buckets: [Bucket<W, C>; N]) -> Self {
            const {
                assert!(
                    N > 0 && C > 0,
                    "LeapArray<N, C> needs N >= 1 buckets and C >= 1 counters"
                )
            };
            LeapArray {
                window: window.get(),
                buckets,
            }
        }
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(a.window(), 500);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.window
    }

    /// The sliding interval, `N * window` ticks, saturating at `u64::MAX`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(a.interval(), 1_000);
    /// let huge = leaparray::LeapArray::<4>::new(NonZeroU64::new(u64::MAX / 2).unwrap());
    /// assert_eq!(huge.interval(), u64::MAX);
    /// ```
    #[must_use]
    pub const fn interval(&self) -> u64 {
        (N as u64).saturating_mul(self.window)
    }

    /// The start of the window containing `t`: `t - t % window`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(a.window_start(1_234), 1_000);
    /// ```
    #[must_use]
    pub const fn window_start(&self, t: u64) -> u64 {
        t - t % self.window
    }

    /// The bucket index of the window containing `t`: `(t / window) % N`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(a.window_index(1_234), 0); // window 2
    /// assert_eq!(a.window_index(1_500), 1); // window 3
    /// ```
    #[must_use]
    pub const fn window_index(&self, t: u64) -> usize {
        ((t / self.window) % N as u64) as usize
    }

    #[inline]
    fn bucket(&self, id: u64) -> &Bucket<W, C> {
        // In range: `id % N < N` (and `N > 0` is checked at compile time).
        &self.buckets[(id % N as u64) as usize]
    }

    /// Adds `n` to `counter` of the window containing `now`, moving that
    /// window's bucket forward first if it holds an older window.
    ///
    /// `Ok(())` means the add is counted in its window and stays counted
    /// until the bucket moves on to a newer window. Errors:
    /// - [`AddError::Stale`]: the bucket already holds a newer window; nothing
    ///   was counted.
    /// - [`AddError::NoSuchCounter`]: `counter >= C`; nothing was counted.
    /// - [`AddError::Saturated`]: the count is now [`crate::MAX_COUNT`] and
    ///   the rest of `n` was dropped.
    ///
    /// One atomic load and one compare-and-swap when the window is current;
    /// never waits for another thread.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::{AddError, LeapArray};
    ///
    /// let a = LeapArray::<2, 2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(10, 0, 1).unwrap();
    /// a.add(20, 1, 5).unwrap();
    /// assert_eq!(a.sums(20), [1, 5]);
    /// assert_eq!(a.add(20, 2, 1), Err(AddError::NoSuchCounter));
    /// ```
    #[inline]
    pub fn add(&self, now: u64, counter: usize, n: u64) -> Result<(), AddError> {
        self.update(now, counter, CellOp::Add(n))
    }

    /// Subtracts `n` from `counter` of the window containing `now`, stopping
    /// at 0: the undo of an [`add`](Self::add) with the same `now` (a gate
    /// that books a permit first and checks second rolls back this way).
    ///
    /// The same rules as `add`: [`AddError::Stale`] if the window has been
    /// retired (the undo has nothing left to undo), [`AddError::Saturated`]
    /// if the count would go below 0 (it stays at 0).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(10, 0, 5).unwrap();
    /// a.sub(20, 0, 2).unwrap();
    /// assert_eq!(a.sum(30, 0), 3);
    /// ```
    #[inline]
    pub fn sub(&self, now: u64, counter: usize, n: u64) -> Result<(), AddError> {
        self.update(now, counter, CellOp::Sub(n))
    }

    /// Raises `counter` of the window containing `now` to at least `value`:
    /// a per-window maximum (for example the peak concurrency), exact under
    /// any interleaving. `value > MAX_COUNT` stores `MAX_COUNT` and returns
    /// [`AddError::Saturated`].
    ///
    /// A counter used this way holds a maximum, not a count: read it per
    /// window ([`windows`](Self::windows)), not with [`sum`](Self::sum).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.update_max(10, 0, 7).unwrap();
    /// a.update_max(20, 0, 3).unwrap();
    /// assert_eq!(a.window_at(30).unwrap().counts, [7]);
    /// ```
    #[inline]
    pub fn update_max(&self, now: u64, counter: usize, value: u64) -> Result<(), AddError> {
        self.update(now, counter, CellOp::Max(value))
    }

    /// Moves every bucket that holds a window older than the interval
    /// ending at `now` to the live window of its index, with zero counts:
    /// what an add of 0 would do to each bucket in turn. Buckets that hold a
    /// live or newer window, or none, are left alone.
    ///
    /// Window ids are kept modulo 2^48 ([`Wide`]) or 2^24 ([`Narrow`]), and
    /// a bucket is only moved when a time of its index is used. A bucket left
    /// idle for half that range or more (2^23 windows for `Narrow`: 2.3 hours
    /// of 1 ms windows) can be mistaken for a current window, or make adds
    /// at the newest time `Stale`. An add of 0 refreshes one bucket only;
    /// `refresh` refreshes them all. Call it at least once every
    /// `Width::WINDOW_RANGE - N` windows (for example from a periodic task)
    /// when some bucket indices may go unused that long; then every bucket
    /// is always within range.
    ///
    /// Lock-free and never blocks; when every bucket is current it is one
    /// load per bucket.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::array::Narrow;
    /// use leaparray::LeapArray;
    ///
    /// let a = LeapArray::<2, 1, Narrow>::new_narrow(NonZeroU64::new(1).unwrap());
    /// a.add(1, 0, 5).unwrap(); // window 1, bucket 1; then only even times
    /// for t in (1..=4).map(|j| j << 22) {
    ///     a.refresh(t); // every 2^22 windows
    /// }
    /// // 2^24 + 1 has the same id as window 1 modulo 2^24: still not confused.
    /// assert_eq!(a.window_at((1 << 24) + 1), None);
    /// ```
    pub fn refresh(&self, now: u64) {
        for id in self.live(now) {
            self.bucket(id).refresh_to(id);
        }
    }

    /// The cells of window `id`'s bucket, whatever window it holds.
    pub(crate) fn cells_of(&self, id: u64) -> &[W::Atomic; C] {
        self.bucket(id).cells()
    }

    /// The single writer enters window `id`: its bucket's cells and their
    /// counts (`Bucket::enter_single_writer`).
    #[inline]
    pub(crate) fn enter_single_writer(&self, id: u64) -> Result<WriterCells<'_, W, C>, AddError> {
        self.bucket(id).enter_single_writer(id)
    }

    #[inline]
    fn update(&self, now: u64, counter: usize, op: CellOp) -> Result<(), AddError> {
        if counter >= C {
            return Err(AddError::NoSuchCounter);
        }
        let id = now / self.window;
        let bucket = self.bucket(id);
        let gen = bucket.advance_to(id)?;
        bucket.update(gen, counter, op)
    }

    /// The newest window any bucket holds, or `id` if none is newer.
    pub(crate) fn newest_from(&self, id: u64) -> u64 {
        self.buckets
            .iter()
            .filter_map(|b| b.held_near(id))
            .fold(id, u64::max)
    }

    /// The window each bucket holds (none for an empty bucket), read as
    /// the one nearest `near` (`Bucket::held_near`).
    pub(crate) fn held(&self, near: u64) -> impl Iterator<Item = u64> + '_ {
        self.buckets.iter().filter_map(move |b| b.held_near(near))
    }

    /// Window ids live at `now`, oldest first.
    pub(crate) fn live(&self, now: u64) -> core::ops::RangeInclusive<u64> {
        let current = now / self.window;
        let oldest = current.saturating_sub(N as u64 - 1);
        oldest..=current
    }

    /// The window `id` if its bucket holds it (for the whole read).
    pub(crate) fn read_window(&self, id: u64) -> Option<Window<C>> {
        let mut counts = [0; C];
        if self.bucket(id).read(id, 0, &mut counts) {
            Some(Window {
                start: id.saturating_mul(self.window),
                counts,
            })
        } else {
            None
        }
    }

    /// Total of `counter` over the live windows at `now` (the sliding
    /// interval ending at `now`). `0` when `counter >= C`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(0, 0, 1).unwrap();
    /// a.add(600, 0, 2).unwrap();
    /// assert_eq!(a.sum(999, 0), 3);
    /// assert_eq!(a.sum(1_000, 0), 2); // [0, 500) is no longer live
    /// assert_eq!(a.sum(1_500, 0), 0);
    /// ```
    #[must_use]
    pub fn sum(&self, now: u64, counter: usize) -> u64 {
        if counter >= C {
            return 0;
        }
        self.sum_ids(self.live(now), counter)
    }

    /// The count of `counter` (`< C`) in window `id`: 0 if its bucket does
    /// not hold it (never created, or retired).
    pub(crate) fn count_or_zero(&self, id: u64, counter: usize) -> u64 {
        self.count_or_retired(id, counter).unwrap_or(0)
    }

    /// The count of `counter` (`< C`) in window `id`: 0 if it was never
    /// created, `Err` if its bucket has moved on to a newer window.
    pub(crate) fn count_or_retired(&self, id: u64, counter: usize) -> Result<u64, Retired> {
        self.bucket(id).count_or_retired(id, counter)
    }

    /// Total of `counter` (`< C`) over the windows `ids`, a run of
    /// consecutive ids: the bucket index steps along with the id instead of
    /// being recomputed as `id % N`.
    pub(crate) fn sum_ids(&self, ids: core::ops::RangeInclusive<u64>, counter: usize) -> u64 {
        let mut total = 0u64;
        let mut slot = (*ids.start() % N as u64) as usize;
        for id in ids {
            let count = self.buckets[slot].count_or_retired(id, counter);
            total = total.saturating_add(count.unwrap_or(0));
            slot = if slot + 1 == N { 0 } else { slot + 1 };
        }
        total
    }

    /// Totals of every counter over the live windows at `now`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2, 3>::new(NonZeroU64::new(500).unwrap());
    /// a.add(0, 2, 7).unwrap();
    /// a.add(600, 2, 1).unwrap();
    /// assert_eq!(a.sums(700), [0, 0, 8]);
    /// ```
    #[must_use]
    pub fn sums(&self, now: u64) -> [u64; C] {
        let mut totals = [0u64; C];
        for id in self.live(now) {
            if let Some(w) = self.read_window(id) {
                add_counts(&mut totals, w.counts);
            }
        }
        totals
    }

    /// The live windows at `now` that hold data, oldest first.
    ///
    /// A window whose bucket does not hold it (never written, or already
    /// replaced by a newer window) is left out, as in Sentinel's `list()`.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::array::Window;
    /// use leaparray::LeapArray;
    ///
    /// let a = LeapArray::<3>::new(NonZeroU64::new(100).unwrap());
    /// a.add(50, 0, 1).unwrap();
    /// a.add(250, 0, 2).unwrap();
    /// let w = a.windows(260);
    /// assert_eq!(
    ///     w.as_slice(),
    ///     &[Window { start: 0, counts: [1] }, Window { start: 200, counts: [2] }]
    /// );
    /// ```
    #[must_use]
    pub fn windows(&self, now: u64) -> heapless::Vec<Window<C>, N> {
        self.windows_where(now, |_| true)
    }

    /// The live windows at `now` whose start satisfies `predicate`, oldest
    /// first (Sentinel-Go's `ValuesConditional`).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<4>::new(NonZeroU64::new(100).unwrap());
    /// for t in [0, 100, 200, 300] {
    ///     a.add(t, 0, 1).unwrap();
    /// }
    /// let recent = a.windows_where(399, |start| start >= 200);
    /// assert_eq!(recent.len(), 2);
    /// assert_eq!(recent[0].start, 200);
    /// ```
    #[must_use]
    pub fn windows_where(
        &self,
        now: u64,
        mut predicate: impl FnMut(u64) -> bool,
    ) -> heapless::Vec<Window<C>, N> {
        let mut out = heapless::Vec::new();
        for id in self.live(now) {
            if !predicate(id.saturating_mul(self.window)) {
                continue;
            }
            if let Some(w) = self.read_window(id) {
                // At most N live ids, so this never overflows the capacity.
                let _ = out.push(w);
            }
        }
        out
    }

    /// The window containing `t`, if its bucket still holds it (Sentinel's
    /// `getWindowValue`).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(100, 0, 4).unwrap();
    /// assert_eq!(a.window_at(499).map(|w| w.counts), Some([4]));
    /// assert_eq!(a.window_at(500), None); // never written
    /// a.add(1_100, 0, 1).unwrap(); // window 2 replaces window 0
    /// assert_eq!(a.window_at(100), None);
    /// ```
    #[must_use]
    pub fn window_at(&self, t: u64) -> Option<Window<C>> {
        self.read_window(t / self.window)
    }

    /// The window just before the one containing `now`, if its bucket still
    /// holds it (Sentinel's `getPreviousWindow`). `None` at time 0's window.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(200, 0, 3).unwrap();
    /// assert_eq!(a.previous(700).map(|w| (w.start, w.counts)), Some((0, [3])));
    /// assert_eq!(a.previous(1_000), None); // window 1 was never written
    /// ```
    #[must_use]
    pub fn previous(&self, now: u64) -> Option<Window<C>> {
        let current = now / self.window;
        current.checked_sub(1).and_then(|id| self.read_window(id))
    }

    /// The oldest live window at `now`, `N - 1` windows before the current
    /// one, if its bucket holds it (Sentinel's `getValidHead`: the bucket
    /// that the next roll-over will reuse).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(500).unwrap());
    /// a.add(100, 0, 1).unwrap();
    /// a.add(600, 0, 2).unwrap();
    /// assert_eq!(a.head(700).map(|w| w.start), Some(0));
    /// assert_eq!(a.head(1_100).map(|w| w.start), Some(500));
    /// assert_eq!(a.head(1_600), None); // window 2 was never written
    /// ```
    #[must_use]
    pub fn head(&self, now: u64) -> Option<Window<C>> {
        let current = now / self.window;
        current
            .checked_sub(N as u64 - 1)
            .and_then(|id| self.read_window(id))
    }

    /// Total of `counter` over the most recent `span` ticks ending at `now`
    /// (Sentinel-Go's `SlidingWindowMetric`): the last `span / window`
    /// windows. `span` must be a non-zero whole number of windows and at most
    /// the interval.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// // A minute of 1 s windows, queried for the last 10 s.
    /// let a = leaparray::LeapArray::<60>::new(NonZeroU64::new(1_000).unwrap());
    /// a.add(5_000, 0, 1).unwrap();
    /// a.add(55_000, 0, 2).unwrap();
    /// assert_eq!(a.sum_span(59_999, 10_000, 0), Ok(2));
    /// assert_eq!(a.sum_span(59_999, 60_000, 0), Ok(3));
    /// ```
    pub fn sum_span(&self, now: u64, span: u64, counter: usize) -> Result<u64, SpanError> {
        if span == 0 {
            return Err(SpanError::Zero);
        }
        if !span.is_multiple_of(self.window) {
            return Err(SpanError::NotMultiple);
        }
        let windows = span / self.window;
        if windows > N as u64 {
            return Err(SpanError::TooLong);
        }
        if counter >= C {
            return Err(SpanError::NoSuchCounter);
        }
        let current = now / self.window;
        let oldest = current.saturating_sub(windows - 1);
        Ok(self.sum_ids(oldest..=current, counter))
    }
}

#[cfg(leaparray_loom)]
impl<const N: usize, const C: usize, W: Width> LeapArray<N, C, W> {
    /// Loom builds only: every window retired from the bucket of `t`'s
    /// window, as `(start, final counts)`, oldest first. Lets the models
    /// check that a retired window holds exactly the adds that returned `Ok`.
    #[doc(hidden)]
    pub fn retired(&self, t: u64) -> std::vec::Vec<(u64, [u64; C])> {
        let mut v = self.bucket(t / self.window).retired();
        for r in &mut v {
            r.0 = r.0.saturating_mul(self.window);
        }
        v
    }
}

impl<const N: usize, const C: usize, W: Width> fmt::Debug for LeapArray<N, C, W> {
    /// The shape only: the counts change under concurrent use, read them
    /// with [`LeapArray::windows`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeapArray")
            .field("buckets", &N)
            .field("counters", &C)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const C: usize, W: Width> defmt::Format for LeapArray<N, C, W> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "LeapArray {{ buckets: {=usize}, counters: {=usize}, window: {=u64} }}",
            N,
            C,
            self.window()
        );
    }
}
