//! Clocks: the manual clock everywhere, the std clocks with `--features std`.

use std::sync::Arc;

use leaparray::clock::{Clock, ManualClock};

#[test]
fn manual_clock_is_shared_and_saturates() {
    let c = Arc::new(ManualClock::new(10));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || {
                for _ in 0..1_000 {
                    c.advance(1);
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(c.now(), 10 + 4_000, "every advance counts");
    c.set(u64::MAX - 2);
    assert_eq!(c.advance(10), u64::MAX);
    assert_eq!(c.now(), u64::MAX);
    let by_ref: &dyn Clock = &*c;
    assert_eq!(by_ref.now(), u64::MAX);
}

#[test]
fn manual_clock_drives_an_array() {
    use std::num::NonZeroU64;
    let clock = ManualClock::new(0);
    let a = leaparray::LeapArray::<2>::new(NonZeroU64::new(10).unwrap());
    for _ in 0..25 {
        a.add(clock.now(), 0, 1).unwrap();
        clock.advance(1);
    }
    assert_eq!(
        a.sum(clock.now(), 0),
        15,
        "windows [10, 20) and [20, 30) are live at 25"
    );
}

#[cfg(all(feature = "std", not(miri)))]
mod std_clocks {
    use std::time::Duration;

    use leaparray::clock::{Clock, CoarseClock, MonotonicClock, Unit};

    #[test]
    fn monotonic_clock_counts_in_its_unit() {
        let ms = MonotonicClock::new(Unit::Millis);
        let ns = MonotonicClock::new(Unit::Nanos);
        std::thread::sleep(Duration::from_millis(15));
        let (a, b) = (ms.now(), ns.now());
        assert!(a >= 15, "{a} ms");
        assert!(b >= 15_000_000, "{b} ns");
        assert!(ms.now() >= a, "monotonic");
        assert_eq!(Unit::Nanos.per_second(), 1_000_000_000);
    }

    #[test]
    fn coarse_clock_advances_then_stops() {
        let c = CoarseClock::start(Duration::from_millis(1), Unit::Millis).unwrap();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(30));
        let b = c.now();
        assert!(b >= a + 10, "advanced only from {a} to {b}");
        let frozen = CoarseClock::start(Duration::from_millis(1), Unit::Micros).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let before = frozen.now();
        drop(frozen); // stops and joins the ticker
        c.stop();
        assert!(before > 0);
    }
}
