//! Metric and StatisticNode: events, exact min RT and peak concurrency,
//! occupy (borrowing future windows), and Sentinel's occupy scenarios
//! (`OccupiableBucketLeapArrayTest`, `FutureBucketLeapArrayTest`) with
//! explicit times.

use std::num::NonZeroU64;
use std::sync::{Arc, Barrier};

use leaparray::stats::{Event, Metric, StatisticNode, WaitingError};
use leaparray::{AddError, MAX_COUNT};

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

const NOW: u64 = 1_700_000_000_123;

#[test]
fn every_event_counts_separately() {
    let m = Metric::<2>::new(nz(500));
    for (i, e) in Event::ALL.into_iter().enumerate() {
        m.add(100, e, i as u64 + 1).unwrap();
    }
    for (i, e) in Event::ALL.into_iter().enumerate() {
        assert_eq!(m.total(100, e), i as u64 + 1, "{e:?}");
    }
    assert_eq!(
        [
            m.pass(100),
            m.block(100),
            m.exception(100),
            m.success(100),
            m.rt(100),
            m.occupied_pass(100)
        ],
        [1, 2, 3, 4, 5, 6]
    );
    let d = m.details(100);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].counts, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn min_rt_is_per_window_and_slides() {
    let m = Metric::<2>::new(nz(500));
    assert_eq!(m.min_rt(0), None);
    m.add_rt(100, 50).unwrap();
    m.add_rt(200, 20).unwrap();
    m.add_rt(300, 80).unwrap();
    m.add_rt(600, 30).unwrap();
    assert_eq!(m.min_rt(700), Some(20));
    assert_eq!(m.min_rt(1_100), Some(30), "window [0, 500) slid out");
    assert_eq!(m.min_rt(1_600), None);
    // RT 0 is a real minimum; a huge RT is clamped, not lost.
    m.add_rt(2_000, 0).unwrap();
    assert_eq!(m.min_rt(2_000), Some(0));
    m.add_rt(3_000, u64::MAX).unwrap_err();
    assert_eq!(m.min_rt(3_000), Some(MAX_COUNT - 1));
}

#[test]
fn avg_rt_max_success_max_concurrency() {
    let m = Metric::<2>::new(nz(500));
    m.add_rt_and_success(100, 30, 3).unwrap();
    m.add_rt_and_success(600, 10, 5).unwrap();
    assert_eq!(m.avg_rt(700), 40.0 / 8.0);
    assert_eq!(m.max_success(700), 5);
    m.record_concurrency(100, 9).unwrap();
    m.record_concurrency(600, 4).unwrap();
    assert_eq!(m.max_concurrency(700), 9);
    assert_eq!(m.max_concurrency(1_100), 4);
}

#[test]
fn previous_and_window_pass_and_rates() {
    let m = Metric::<2>::new(nz(500));
    m.add(100, Event::Pass, 4).unwrap();
    m.add(100, Event::Block, 1).unwrap();
    m.add(600, Event::Pass, 6).unwrap();
    assert_eq!(m.previous_window_pass(700), 4);
    assert_eq!(m.previous_window_block(700), 1);
    assert_eq!(m.previous_window_pass(100), 0);
    assert_eq!(m.window_pass(0), 4);
    assert_eq!(m.window_pass(999), 6);
    assert_eq!(m.per_second(700, Event::Pass, 1_000), 10.0);
    // Ticks in µs: the same counts over a 1 ms interval are 1000x the rate.
    assert_eq!(m.per_second(700, Event::Pass, 1_000_000), 10_000.0);
}

#[test]
fn bad_input_is_refused_or_saturates() {
    let m = Metric::<2>::new(nz(500));
    m.add(1_000, Event::Pass, 1).unwrap();
    assert_eq!(m.add(0, Event::Pass, 1), Err(AddError::Stale));
    assert_eq!(m.add(2, Event::Pass, u64::MAX), Err(AddError::Stale));
    assert_eq!(m.add(1_000, Event::Rt, u64::MAX), Err(AddError::Saturated));
    assert_eq!(m.rt(1_000), MAX_COUNT);
    assert_eq!(
        m.record_concurrency(1_000, u64::MAX),
        Err(AddError::Saturated)
    );
    assert_eq!(m.max_concurrency(1_000), MAX_COUNT);
    // Borrowing: only windows after now's and at most N ahead.
    assert_eq!(
        m.add_waiting(1_000, 1_000, 1),
        Err(WaitingError::OutOfRange)
    );
    assert_eq!(m.add_waiting(1_000, 900, 1), Err(WaitingError::OutOfRange));
    assert_eq!(
        m.add_waiting(1_000, 2_500, 1),
        Err(WaitingError::OutOfRange)
    );
    assert_eq!(
        m.add_waiting(1_000, u64::MAX, 1),
        Err(WaitingError::OutOfRange)
    );
    m.add_waiting(1_000, 2_499, 1).unwrap(); // window 4: N = 2 windows ahead
    assert_eq!(m.waiting(1_000), 1);
    assert_eq!(
        m.sub(1_000, Event::Block, 1),
        Err(AddError::Saturated),
        "below zero"
    );
    assert_eq!(m.block(1_000), 0);
}

// ---- Sentinel's FutureBucketLeapArrayTest and OccupiableBucketLeapArrayTest,
// ---- 10 windows of 200 ms (interval 2 s), explicit times.

type Occupiable = Metric<10>;
const W: u64 = 200;

#[test]
fn future_metric_leap_array() {
    // A borrowed window is never a live one while it has not started.
    let m = Occupiable::new(nz(W));
    for i in 0..10 {
        let t = NOW + i * W;
        m.add_waiting(t - W, t, 1).unwrap();
        assert_eq!(m.waiting(t), 0, "a started window is not waiting");
    }
}

#[test]
fn occupiable_new_window() {
    let m = Occupiable::new(nz(W));
    m.add(NOW, Event::Pass, 1).unwrap();
    assert_eq!(m.window_pass(NOW), 1);
    m.add_waiting(NOW, NOW + W, 1).unwrap();
    assert_eq!(m.waiting(NOW), 1);
    assert_eq!(
        m.window_pass(NOW),
        1,
        "borrowing does not touch the current window"
    );
}

#[test]
fn occupiable_window_in_one_interval() {
    let m = Occupiable::new(nz(W));
    m.add(NOW, Event::Pass, 1).unwrap();
    m.add_waiting(NOW, NOW + W, 2).unwrap();
    assert_eq!(m.waiting(NOW), 2);
    assert_eq!(m.window_pass(NOW), 1);
    let later = NOW + W;
    let d = m.details(later);
    assert_eq!(d.len(), 2);
    assert_eq!(d.iter().map(|w| w.get(Event::Pass)).sum::<u64>(), 3);
    assert_eq!(m.pass(later), 3);
}

#[test]
fn occupiable_multi_thread_update_empty_window() {
    const THREADS: u64 = 16;
    let m = Arc::new(Occupiable::new(nz(W)));
    let start = Arc::new(Barrier::new(THREADS as usize));
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (m, start) = (m.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                m.add(NOW, Event::Pass, 1).unwrap();
                m.add_waiting(NOW, NOW + W, 1).unwrap();
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(m.window_pass(NOW), THREADS);
    assert_eq!(m.waiting(NOW), THREADS);
    let d = m.details(NOW + W);
    assert_eq!(d.len(), 2);
    assert_eq!(
        d.iter().map(|w| w.get(Event::Pass)).sum::<u64>(),
        2 * THREADS
    );
}

#[test]
fn occupiable_window_after_one_interval() {
    let m = Occupiable::new(nz(W));
    let t0 = NOW;
    for i in 0..10 {
        m.add(t0 + i * W, Event::Pass, 1).unwrap();
        m.add_waiting(t0 + i * W, t0 + (i + 1) * W, 1).unwrap();
    }
    // Sentinel reads at the aligned start + 2 s, where its inclusive edge
    // still lists window 0: windows 0..=9, 10 passes + 9 borrowed = 19. The
    // live windows here are the half-open (q - N, q]: windows 1..=10, 9
    // passes + 10 borrowed: the same 10 windows' worth and the same 19.
    let q = t0 - t0 % W + 10 * W;
    let d = m.details(q);
    assert_eq!(d.len(), 10);
    assert_eq!(d.iter().map(|w| w.get(Event::Pass)).sum::<u64>(), 19);
    assert_eq!(m.pass(q), 19);
    // Sentinel issue #685: waiting as of the starting time.
    assert_eq!(m.waiting(t0), 10);
}

// ---- StatisticNode

#[test]
fn node_updates_both_levels_from_one_now() {
    let n = StatisticNode::millis();
    n.add_pass(NOW, 2).unwrap();
    n.add_block(NOW, 1).unwrap();
    n.add_exception(NOW, 1).unwrap();
    n.add_rt_and_success(NOW, 12, 2).unwrap();
    assert_eq!(n.second().pass(NOW), 2);
    assert_eq!(n.minute().pass(NOW), 2);
    assert_eq!(n.pass_qps(NOW), 2.0);
    assert_eq!(n.block_qps(NOW), 1.0);
    assert_eq!(n.exception_qps(NOW), 1.0);
    assert_eq!(n.success_qps(NOW), 2.0);
    assert_eq!(n.total_qps(NOW), 3.0);
    assert_eq!(n.avg_rt(NOW), 6.0);
    assert_eq!(n.min_rt(NOW), Some(12));
    assert_eq!(
        (
            n.total_request(NOW),
            n.total_pass(NOW),
            n.total_success(NOW),
            n.total_exception(NOW),
            n.block_request(NOW)
        ),
        (3, 2, 2, 1, 1)
    );
    // Two seconds later the second level has slid, the minute level has not.
    let later = NOW + 2_000;
    assert_eq!(n.pass_qps(later), 0.0);
    assert_eq!(n.total_pass(later), 2);
}

#[test]
fn node_previous_qps_and_occupy() {
    let n = StatisticNode::millis();
    let t = NOW - NOW % 1_000;
    n.add_pass(t + 10, 5).unwrap();
    n.add_block(t + 20, 2).unwrap();
    assert_eq!(n.previous_pass_qps(t + 1_000), 5.0);
    assert_eq!(n.previous_block_qps(t + 1_000), 2.0);
    // Occupy: borrowed for the next 500 ms window, recorded now.
    // Limit 5, all used in [t, t + 500): room only when that window slides
    // out at t + 1000, 900 ticks away: beyond a 500 timeout, within 1000.
    assert_eq!(
        n.try_occupy_next(t + 100, 1, 5, 500),
        500,
        "timeout: no room in time"
    );
    assert_eq!(n.try_occupy_next(t + 100, 1, 5, 1_000), 900);
    let wait = n.try_occupy_next(t + 100, 1, 6, 500);
    assert_eq!(wait, 400, "room in the next window");
    n.add_waiting_request(t + 100, t + 500, 1).unwrap();
    n.add_occupied_pass(t + 100, 1).unwrap();
    assert_eq!(n.waiting(t + 100), 1);
    assert_eq!(n.occupied_pass_qps(t + 100), 1.0);
    assert_eq!(
        n.second().pass(t + 500),
        6,
        "borrowed pass arrives with its window"
    );
}

#[test]
fn node_concurrency_gauge_and_guard() {
    let n = StatisticNode::millis();
    assert_eq!(n.decrease_concurrency(), 0, "never below zero");
    let g1 = n.enter(NOW);
    let g2 = n.enter(NOW);
    assert_eq!(n.concurrency(), 2);
    drop(g1);
    assert_eq!(n.concurrency(), 1);
    drop(g2);
    assert_eq!(n.concurrency(), 0);
    assert_eq!(n.second().max_concurrency(NOW), 2);
    assert_eq!(n.minute().max_concurrency(NOW), 2);
    assert!(format!("{n:?}").contains("concurrency: 0"));
}

#[test]
fn node_in_microseconds() {
    let n = StatisticNode::<10, 60>::new(nz(100_000), nz(1_000_000), nz(1_000_000));
    n.add_pass(0, 50).unwrap();
    n.add_pass(950_000, 50).unwrap();
    assert_eq!(n.pass_qps(950_000), 100.0);
    assert_eq!(n.pass_qps(1_000_000), 50.0);
}

/// Sentinel's `ClusterMetricTest.testTryOccupyNext`, the numbers that carry
/// over: 5 windows over 25 ms, 4 passes and 1 block, 160 passes per second.
/// (Its `tryOccupyNext` numbers belong to the cluster server's QPS-based
/// `canOccupy`, a different algorithm from `StatisticNode.tryOccupyNext`,
/// which `Metric::try_occupy_next` ports; they do not apply.)
#[test]
fn cluster_metric_numbers() {
    let m = Metric::<5>::new(nz(5));
    let t = NOW;
    for n in [1, 2, 1] {
        m.add(t, Event::Pass, n).unwrap();
    }
    m.add(t, Event::Block, 1).unwrap();
    assert_eq!(m.pass(t), 4);
    assert_eq!(m.block(t), 1);
    assert_eq!(m.per_second(t, Event::Pass, 1_000), 160.0);
}

/// Found by `fuzz/` (target `metric`): with `now` in the last window of
/// time, `waiting` counted that window's own borrowed passes as future ones.
#[test]
fn waiting_in_the_last_window_of_time() {
    let m = Metric::<3>::new(nz(1));
    m.add_waiting(u64::MAX - 1, u64::MAX, 5).unwrap();
    assert_eq!(m.waiting(u64::MAX - 1), 5, "not started yet");
    assert_eq!(m.waiting(u64::MAX), 0, "started: no longer waiting");
    assert_eq!(m.pass(u64::MAX), 5, "counted as a pass of its window");
}

/// Found by `fuzz/` (target `metric`): a request for nearly `u64::MAX`
/// permits made the saturated sum look like it fit under a limit of
/// `u64::MAX` in the very next window.
#[test]
fn try_occupy_next_does_not_saturate_into_a_wait() {
    let m = Metric::<3>::new(nz(1));
    m.add(0, Event::Pass, 100).unwrap();
    // Window 0's 100 passes leave the interval only at window 3.
    assert_eq!(m.try_occupy_next(0, u64::MAX - 50, u64::MAX, 10), 3);
    assert_eq!(m.try_occupy_next(0, u64::MAX, u64::MAX, 10), 3);
    assert_eq!(m.try_occupy_next(0, u64::MAX, u64::MAX - 1, 10), 10);
}
