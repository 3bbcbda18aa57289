//! The layer's clock: microseconds since the layer was built, from
//! [quanta](https://docs.rs/quanta).
//!
//! Why quanta and not `std::time::Instant`: a request reads the clock once,
//! and `Instant::now()` is a `clock_gettime` call through the vDSO (about
//! 110 instructions per request in `bench.sh`'s server), where quanta
//! reads the CPU's time-stamp counter and scales it, as tower_governor's
//! clock does (about 40 with the conversion to µs since the layer was
//! built; tower_governor's read, without a conversion, about 25). Where the counter is not usable (no
//! invariant TSC), quanta falls back to the OS's monotonic clock by itself.
//! Readings on different cores may differ by the counter's skew: the gates
//! take a reading older than one they already saw as a late caller, counted
//! in the newest window, so a skew never admits more than a limit.

use leaparray::clock::Clock;

/// Microseconds since the layer was built: the time of every decision and
/// of [`Admission::now`](crate::Admission::now). `Clone` (every clone reads
/// the same time base).
///
/// ```
/// use std::time::Duration;
/// use leaparray::clock::Clock;
/// use leaparray_tower::RateLimitLayer;
/// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(1)).build().unwrap();
/// let clock = layer.clock();
/// let (a, b) = (clock.now(), clock.now());
/// assert!(a <= b && b < 60_000_000);
/// ```
#[derive(Debug, Clone)]
pub struct LayerClock {
    clock: quanta::Clock,
    origin: quanta::Instant,
}

impl LayerClock {
    pub(crate) fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.now();
        LayerClock { clock, origin }
    }
}

impl Clock for LayerClock {
    fn now(&self) -> u64 {
        let since = self.clock.now().saturating_duration_since(self.origin);
        // u64 µs: 584,000 years.
        u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
    }
}
