//! Clocks for callers that want one. The arrays never read a clock: every
//! operation takes `now` as a `u64` argument, in any tick unit. These are
//! conveniences for producing `now`: the [`Clock`] trait and [`ManualClock`]
//! (no_std, usable in a `static`, advanced by hand or by a SysTick handler);
//! with the `std` feature, `MonotonicClock` and `CoarseClock`.
//!
//! Read the time **once per batch** and pass it to every operation of the
//! batch: a `std::time::Instant::now()` (a system call or a vDSO read of
//! the time counter) can cost more than the `add` it times
//! (`benches/README.md` gives both); a `CoarseClock` read is
//! one relaxed load.

use crate::sync::{atomic_u64, AtomicU64, Ordering};

/// A source of `now` in ticks.
///
/// ```
/// use leaparray::clock::{Clock, ManualClock};
///
/// fn stamp(c: &impl Clock) -> u64 {
///     c.now()
/// }
/// let c = ManualClock::new(7);
/// assert_eq!(stamp(&c), 7);
/// ```
pub trait Clock {
    /// The current time in ticks. Monotonic for every clock in this module.
    ///
    /// ```
    /// use leaparray::clock::{Clock, ManualClock};
    /// let c = ManualClock::new(5);
    /// c.advance(2);
    /// assert_eq!(c.now(), 7);
    /// ```
    fn now(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> u64 {
        (**self).now()
    }
}

/// A clock moved by hand: for tests and simulations, and for firmware that
/// counts its own ticks (a SysTick handler calls [`ManualClock::advance`]).
/// It can live in a `static`.
///
/// ```
/// use leaparray::clock::{Clock, ManualClock};
///
/// static TICKS: ManualClock = ManualClock::new(0);
/// TICKS.advance(5);
/// assert_eq!(TICKS.now(), 5);
/// TICKS.set(100);
/// assert_eq!(TICKS.now(), 100);
/// ```
#[derive(Debug)]
pub struct ManualClock {
    /// The current tick count. Every access is `Relaxed`: the value is the
    /// whole message.
    ticks: AtomicU64,
}

impl ManualClock {
    crate::sync::const_fn_unless_loom! {
        /// A clock showing `start`.
        ///
        /// ```
        /// # use leaparray::clock::{Clock, ManualClock};
        /// assert_eq!(ManualClock::new(3).now(), 3);
        /// ```
        #[must_use]
        pub fn new(start: u64) -> Self {
            ManualClock { ticks: atomic_u64(start) }
        }
    }

    /// Moves the clock to `t` (it is the caller's job to keep it monotonic).
    ///
    /// ```
    /// # use leaparray::clock::{Clock, ManualClock};
    /// let c = ManualClock::new(0);
    /// c.set(9);
    /// assert_eq!(c.now(), 9);
    /// ```
    pub fn set(&self, t: u64) {
        self.ticks.store(t, Ordering::Relaxed);
    }

    /// Advances the clock by `by` ticks (saturating at `u64::MAX`) and
    /// returns the new time.
    ///
    /// ```
    /// # use leaparray::clock::{Clock, ManualClock};
    /// let c = ManualClock::new(u64::MAX - 1);
    /// assert_eq!(c.advance(5), u64::MAX);
    /// ```
    pub fn advance(&self, by: u64) -> u64 {
        let add = |t: u64| Some(t.saturating_add(by));
        // One atomic step, so concurrent advances all count.
        let prev = self
            .ticks
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, add);
        prev.map_or(u64::MAX, |t| t.saturating_add(by))
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for ManualClock {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ManualClock {{ now: {=u64} }}", self.now());
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }
}

#[cfg(all(feature = "std", not(leaparray_loom)))]
mod std_clocks {
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use super::Clock;
    use crate::sync::{AtomicBool, AtomicU64, Ordering};

    /// The unit of a clock's ticks.
    ///
    /// ```
    /// use leaparray::clock::Unit;
    /// assert_eq!(Unit::Micros.per_second(), 1_000_000);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Unit {
        /// Milliseconds.
        Millis,
        /// Microseconds.
        Micros,
        /// Nanoseconds.
        Nanos,
    }

    impl Unit {
        /// Ticks per second, for rates (`StatisticNode::new`'s last argument).
        ///
        /// ```
        /// assert_eq!(leaparray::clock::Unit::Millis.per_second(), 1_000);
        /// ```
        #[must_use]
        pub const fn per_second(self) -> u64 {
            match self {
                Unit::Millis => 1_000,
                Unit::Micros => 1_000_000,
                Unit::Nanos => 1_000_000_000,
            }
        }

        fn of(self, d: Duration) -> u64 {
            let v = match self {
                Unit::Millis => d.as_millis(),
                Unit::Micros => d.as_micros(),
                Unit::Nanos => d.as_nanos(),
            };
            u64::try_from(v).unwrap_or(u64::MAX)
        }
    }

    /// `std::time::Instant`, as ticks of `unit` since the clock was made.
    /// A read can cost more than an `add`: read it once per batch.
    ///
    /// ```
    /// use leaparray::clock::{Clock, MonotonicClock, Unit};
    /// let c = MonotonicClock::new(Unit::Micros);
    /// let a = c.now();
    /// assert!(c.now() >= a);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct MonotonicClock {
        origin: Instant,
        unit: Unit,
    }

    impl MonotonicClock {
        /// A clock at 0 now, counting in `unit`.
        ///
        /// ```
        /// use leaparray::clock::{Clock, MonotonicClock, Unit};
        /// assert!(MonotonicClock::new(Unit::Millis).now() < 1_000);
        /// ```
        #[must_use]
        pub fn new(unit: Unit) -> Self {
            MonotonicClock {
                origin: Instant::now(),
                unit,
            }
        }

        /// The unit of its ticks.
        ///
        /// ```
        /// use leaparray::clock::{MonotonicClock, Unit};
        /// assert_eq!(MonotonicClock::new(Unit::Nanos).unit(), Unit::Nanos);
        /// ```
        #[must_use]
        pub const fn unit(&self) -> Unit {
            self.unit
        }
    }

    impl Clock for MonotonicClock {
        fn now(&self) -> u64 {
            self.unit.of(self.origin.elapsed())
        }
    }

    /// A cached clock: a background thread stores the time into an atomic
    /// once per `resolution`, and a read is one relaxed load (Sentinel's
    /// `TimeUtil`). The thread sleeps between updates, so its cost is one
    /// wake-up per `resolution` whether or not anyone reads: with 1 ms that
    /// is 1,000 short wake-ups a second; pick the coarsest resolution the
    /// windows allow (a window of 500 ms needs no better than a few ms).
    /// The thread stops when the clock is dropped or [`stop`](Self::stop)ped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray::clock::{Clock, CoarseClock, Unit};
    ///
    /// let c = CoarseClock::start(Duration::from_millis(1), Unit::Millis)?;
    /// let a = c.now();
    /// std::thread::sleep(Duration::from_millis(20));
    /// assert!(c.now() > a);
    /// c.stop();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[derive(Debug)]
    pub struct CoarseClock {
        shared: Arc<Shared>,
        /// `None` once stopped.
        ticker: Option<JoinHandle<()>>,
    }

    #[derive(Debug)]
    struct Shared {
        /// Ticks since the start, stored by the ticker. `Relaxed`: the value
        /// is the whole message.
        ticks: AtomicU64,
        /// Set by `halt`. `Relaxed`: the ticker polls it once per tick, and
        /// `unpark` wakes it and `join` waits for it.
        stop: AtomicBool,
    }

    impl CoarseClock {
        /// Starts the background thread, updating every `resolution` (at
        /// least 1 µs), in ticks of `unit` since now.
        ///
        /// # Errors
        ///
        /// The error of [`std::thread::Builder::spawn`] if the thread cannot
        /// be started: there is then no clock (it would never advance).
        ///
        /// ```
        /// use std::time::Duration;
        /// use leaparray::clock::{Clock, CoarseClock, Unit};
        /// let c = CoarseClock::start(Duration::from_millis(5), Unit::Millis)?;
        /// assert!(c.now() < 1_000);
        /// # Ok::<(), std::io::Error>(())
        /// ```
        pub fn start(resolution: Duration, unit: Unit) -> std::io::Result<Self> {
            let resolution = resolution.max(Duration::from_micros(1));
            let shared = Arc::new(Shared {
                ticks: AtomicU64::new(0),
                stop: AtomicBool::new(false),
            });
            let origin = Instant::now();
            let s = shared.clone();
            let ticker = std::thread::Builder::new()
                .name("leaparray-coarse-clock".into())
                .spawn(move || {
                    while !s.stop.load(Ordering::Relaxed) {
                        s.ticks.store(unit.of(origin.elapsed()), Ordering::Relaxed);
                        std::thread::park_timeout(resolution);
                    }
                })?;
            Ok(CoarseClock {
                shared,
                ticker: Some(ticker),
            })
        }

        /// Stops the background thread and waits for it to end. The clock
        /// then keeps showing its last time.
        ///
        /// ```
        /// use std::time::Duration;
        /// use leaparray::clock::{CoarseClock, Unit};
        /// CoarseClock::start(Duration::from_millis(1), Unit::Millis)?.stop();
        /// # Ok::<(), std::io::Error>(())
        /// ```
        pub fn stop(mut self) {
            self.halt();
        }

        fn halt(&mut self) {
            self.shared.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.ticker.take() {
                t.thread().unpark();
                let _ = t.join();
            }
        }
    }

    impl Drop for CoarseClock {
        fn drop(&mut self) {
            self.halt();
        }
    }

    impl Clock for CoarseClock {
        fn now(&self) -> u64 {
            self.shared.ticks.load(Ordering::Relaxed)
        }
    }
}

#[cfg(all(feature = "std", not(leaparray_loom)))]
pub use std_clocks::{CoarseClock, MonotonicClock, Unit};
