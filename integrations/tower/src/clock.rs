//! The layer's clock: microseconds since the layer was built, from
//! [quanta](https://docs.rs/quanta).
//!
//! Why quanta and not `std::time::Instant`: a request reads the clock once,
//! and `Instant::now()` is a `clock_gettime` call through the vDSO (about
//! 110 instructions per request in `bench.sh`'s server), where quanta
//! reads the CPU's time-stamp counter, as tower_governor's clock does:
//! about 27 instructions here, the raw difference from the layer's origin
//! scaled once and cut to µs (tower_governor's read, scaled, about 25).
//! Where the counter is not usable (no invariant TSC), quanta falls back
//! to the OS's monotonic clock by itself.
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
    /// The raw reading (counter ticks, or the OS clock's ns) when built.
    origin: u64,
}

impl LayerClock {
    pub(crate) fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        LayerClock { clock, origin }
    }
}

impl Clock for LayerClock {
    #[inline]
    fn now(&self) -> u64 {
        // Scaled once, from the raw difference (0 for a reading before the
        // origin: another core's counter behind this one's); u64 ns last
        // 584 years.
        self.clock.delta_as_nanos(self.origin, self.clock.raw()) / 1_000
    }
}
