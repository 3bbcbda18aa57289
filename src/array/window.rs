//! The value a reader gets for one window.

/// One live window as a reader saw it: its start time and its counts.
///
/// Every count belongs to this window: a read never mixes counts of a window
/// with those of the window that replaces it in its slot.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::array::Window;
/// use leaparray::LeapArray;
///
/// let a = LeapArray::<2, 2>::new(NonZeroU64::new(500).unwrap());
/// a.add(700, 1, 3).unwrap();
/// assert_eq!(a.window_at(700), Some(Window { start: 500, counts: [0, 3] }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Window<const C: usize> {
    /// The window's start time, in the caller's ticks: `id * window`.
    pub start: u64,
    /// The count of each counter in this window.
    pub counts: [u64; C],
}

/// `totals[i] += counts[i]` for every counter, saturating at `u64::MAX`:
/// how sums over windows and over shards merge.
pub(crate) fn add_counts<const C: usize>(totals: &mut [u64; C], counts: [u64; C]) {
    for (t, c) in totals.iter_mut().zip(counts) {
        *t = t.saturating_add(c);
    }
}
