//! The events a [`Metric`](crate::stats::Metric) counts (Sentinel's `MetricEvent`).

/// An event counted per window by a [`Metric`](crate::stats::Metric).
///
/// ```
/// use leaparray::stats::Event;
/// assert_eq!(Event::ALL.len(), 6);
/// assert_eq!(Event::Rt.index(), 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// A request passed.
    Pass,
    /// A request was blocked.
    Block,
    /// A request ended with a business exception.
    Exception,
    /// A request completed.
    Success,
    /// Response time, accumulated in ticks (the sum over completed requests).
    Rt,
    /// A request passed by borrowing a future window (Sentinel's occupy).
    OccupiedPass,
}

impl Event {
    /// Every event, in index order.
    ///
    /// ```
    /// use leaparray::stats::Event;
    /// assert!(Event::ALL.iter().enumerate().all(|(i, e)| e.index() == i));
    /// ```
    pub const ALL: [Event; 6] = [
        Event::Pass,
        Event::Block,
        Event::Exception,
        Event::Success,
        Event::Rt,
        Event::OccupiedPass,
    ];

    /// The event's position in [`Event::ALL`] and in
    /// [`MetricWindow::counts`](crate::stats::MetricWindow::counts).
    ///
    /// ```
    /// assert_eq!(leaparray::stats::Event::Pass.index(), 0);
    /// ```
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}
