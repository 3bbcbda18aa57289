//! `system::AdaptiveRule`: Sentinel's `checkBbr` in the node's ticks, with
//! explicit times, against a direct model of the formula, and under threads.

use core::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

use leaparray::stats::StatisticNode;
use leaparray::system::{AdaptiveRule, DeliveryEstimate};
use leaparray::Decision;
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// A node in µs: 2 windows of 500 ms, 60 of 1 s.
fn micros() -> StatisticNode {
    StatisticNode::new(nz(500_000), nz(1_000_000), nz(1_000_000))
}

/// Sentinel's `maxSuccessQps * minRt / 1000` assumes ms: in µs a service
/// of 1,000/s at 5 ms holds 5 requests, not 5,000. With that bug the 6th
/// (and the 5,000th) would be admitted.
#[test]
fn units_micros_admit_the_product_not_a_thousand_times_it() {
    let node = micros();
    node.add_rt_and_success(10, 5_000, 1).unwrap();
    node.add_rt_and_success(10, 6_000 * 999, 999).unwrap();
    let g = AdaptiveRule::new().with_gain_percent(100);
    let now = 1_000_000;
    assert_eq!(g.limit(&node, now), Some(5));
    let held: Vec<_> = (0..5).map(|_| g.try_enter(&node, now).unwrap()).collect();
    assert!(g.try_enter(&node, now).is_none());
    assert_eq!(g.check(&node, now), Decision::Block);
    assert_eq!(node.concurrency(), 5, "the refusal leaves nothing counted");
    drop(held);
    assert_eq!(g.check(&node, now), Decision::Pass);
}

/// The same service in ms and in µs: the same limit.
#[test]
fn units_same_service_same_limit_in_ms_and_micros() {
    let ms = StatisticNode::millis();
    let us = micros();
    for (node, scale) in [(&ms, 1), (&us, 1_000)] {
        // Second 3: 2,400 completed, fastest 12 ms; second 4: 1,000, fastest 30 ms.
        node.add_rt_and_success(3_000 * scale, 12 * scale, 1)
            .unwrap();
        node.add_rt_and_success(3_100 * scale, 20 * scale * 2_399, 2_399)
            .unwrap();
        node.add_rt_and_success(4_000 * scale, 30 * scale * 1_000, 1_000)
            .unwrap();
    }
    let g = AdaptiveRule::new();
    // 2,400/s x 12 ms x 1.5 = 43.2.
    assert_eq!(g.limit(&ms, 5_000), Some(43));
    assert_eq!(g.limit(&us, 5_000_000), Some(43));
}

/// One slow second after busy ones moves neither the max success nor the
/// min RT: the limit holds (with the last second's max, Sentinel's, it
/// would fall to a tenth).
#[test]
fn windowed_one_slow_second_keeps_the_limit() {
    let node = StatisticNode::millis();
    let g = AdaptiveRule::new().with_gain_percent(100);
    for s in 0..10 {
        node.add_rt_and_success(s * 1_000, 10, 1).unwrap();
        node.add_rt_and_success(s * 1_000, 10 * 999, 999).unwrap();
    }
    assert_eq!(g.limit(&node, 10_000), Some(10)); // 1,000/s x 10 ms
    node.add_rt_and_success(10_000, 10, 1).unwrap(); // a slow second
    node.add_rt_and_success(10_000, 10 * 99, 99).unwrap();
    assert_eq!(g.limit(&node, 11_000), Some(10));
    assert_eq!(g.limit(&node, 11_999), Some(10));
    // Only when the busy seconds leave the minute does the limit fall.
    assert_eq!(g.limit(&node, 69_000), Some(1)); // 100/s x 10 ms = 1
}

/// The window being filled does not count towards the max: its partial
/// count would under-estimate the rate at every window start.
#[test]
fn windowed_current_window_left_out_of_the_max() {
    let node = StatisticNode::millis();
    let g = AdaptiveRule::new().with_gain_percent(100);
    node.add_rt_and_success(0, 20, 1).unwrap();
    node.add_rt_and_success(0, 20 * 499, 499).unwrap();
    node.add_rt_and_success(1_000, 20 * 900, 900).unwrap();
    assert_eq!(g.estimate(&node, 1_500).map(|e| e.max_success), Some(500));
    assert_eq!(g.estimate(&node, 2_000).map(|e| e.max_success), Some(900));
}

/// No completed window with a success yet: nothing to judge by, admitted.
#[test]
fn cold_start_admits_until_a_window_completes() {
    let node = StatisticNode::millis();
    let g = AdaptiveRule::new();
    let held: Vec<_> = (0..100).map(|_| g.try_enter(&node, 10).unwrap()).collect();
    assert_eq!(g.limit(&node, 10), None);
    node.add_rt_and_success(20, 10, 1).unwrap();
    assert_eq!(g.limit(&node, 999), None);
    // 1/s x 10 ms: the floor.
    assert_eq!(g.limit(&node, 1_000), Some(1));
    assert!(g.try_enter(&node, 1_000).is_none());
    drop(held);
}

/// Sentinel's `currentThread > 1`: the floor admits whatever the estimate.
#[test]
fn floor_admits_below_it() {
    let node = StatisticNode::millis();
    node.add_rt_and_success(0, 1, 1).unwrap();
    let g = AdaptiveRule::new().with_floor(3);
    let a = g.try_enter(&node, 1_000).unwrap();
    let b = g.try_enter(&node, 1_000).unwrap();
    let c = g.try_enter(&node, 1_000).unwrap();
    assert!(g.try_enter(&node, 1_000).is_none());
    drop((a, b, c));
}

/// Threads racing through `try_enter` never hold more than the limit at
/// once (each counts itself before deciding).
#[test]
fn threads_never_hold_more_than_the_limit() {
    let node = StatisticNode::millis();
    node.add_rt_and_success(0, 4, 1).unwrap();
    node.add_rt_and_success(0, 4 * 999, 999).unwrap(); // 1,000/s x 4 ms
    let g = AdaptiveRule::new().with_gain_percent(100);
    let limit = g.limit(&node, 1_000).unwrap();
    assert_eq!(limit, 4);
    let held = AtomicU64::new(0);
    let peak = AtomicU64::new(0);
    let admitted = AtomicU64::new(0);
    let rounds = if cfg!(miri) { 20 } else { 20_000 };
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                for _ in 0..rounds {
                    if let Some(guard) = g.try_enter(&node, 1_000) {
                        let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        admitted.fetch_add(1, Ordering::Relaxed);
                        for _ in 0..50 {
                            std::hint::spin_loop();
                        }
                        held.fetch_sub(1, Ordering::SeqCst);
                        drop(guard);
                    }
                }
            });
        }
    });
    assert!(peak.load(Ordering::SeqCst) <= limit);
    assert!(admitted.load(Ordering::Relaxed) > 0);
    assert_eq!(node.concurrency(), 0);
}

#[derive(Debug, Clone)]
enum Op {
    /// Advance the clock this many ms.
    Wait(u64),
    /// One completion of this RT.
    Complete(u64),
    /// Try to enter (the guard is held).
    Enter,
    /// Drop the oldest held guard.
    Exit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..2_500).prop_map(Op::Wait),
        (1u64..200).prop_map(Op::Complete),
        Just(Op::Enter),
        Just(Op::Exit),
    ]
}

/// The formula written out directly: successes and min RT per whole
/// second of the last minute, the max over completed seconds, the limit
/// by division, rounded down.
fn model_limit(done: &[(u64, u64)], now: u64, gain: u64, floor: u64) -> Option<u64> {
    let current = now / 1_000;
    let live = |t: u64| t / 1_000 + 60 > current;
    let mut per_second = std::collections::BTreeMap::new();
    for &(t, _) in done
        .iter()
        .filter(|&&(t, _)| live(t) && t / 1_000 < current)
    {
        *per_second.entry(t / 1_000).or_insert(0u64) += 1;
    }
    let max = per_second.values().copied().max()?;
    let min_rt = done
        .iter()
        .filter(|&&(t, _)| live(t))
        .map(|&(_, rt)| rt)
        .min()?;
    let limit = (max as u128 * min_rt as u128 * gain as u128 / 100_000) as u64;
    Some(limit.max(floor))
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Every decision and limit equals the model's, for any history.
    #[test]
    fn model_decision_matches_the_formula(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 12 } else { 120 }),
        gain in 0u32..400,
        floor in 0u64..4,
    ) {
        let node = StatisticNode::millis();
        let g = AdaptiveRule::new().with_gain_percent(gain).with_floor(floor);
        let mut now = 0;
        let mut done = Vec::new();
        let mut held = std::collections::VecDeque::new();
        for op in ops {
            match op {
                Op::Wait(d) => now += d,
                Op::Complete(rt) => {
                    node.add_rt_and_success(now, rt, 1).unwrap();
                    done.push((now, rt));
                }
                Op::Exit => drop(held.pop_front()),
                Op::Enter => {
                    let limit = model_limit(&done, now, u64::from(gain), floor);
                    prop_assert_eq!(g.limit(&node, now), limit);
                    let in_flight = held.len() as u64 + 1;
                    let admit = limit.is_none_or(|l| in_flight <= l);
                    let expected = if admit { Decision::Pass } else { Decision::Block };
                    prop_assert_eq!(g.check(&node, now), expected);
                    // The same decision against the limit computed first.
                    match AdaptiveRule::enter_within(&node, now, g.limit(&node, now)) {
                        Some(guard) => {
                            prop_assert!(admit);
                            drop(guard);
                        }
                        None => prop_assert!(!admit),
                    }
                    match g.try_enter(&node, now) {
                        Some(guard) => {
                            prop_assert!(admit);
                            held.push_back(guard);
                        }
                        None => prop_assert!(!admit),
                    }
                    prop_assert_eq!(node.concurrency(), held.len() as u64);
                }
            }
        }
    }
}

#[test]
fn estimate_is_debug_and_eq() {
    let e = DeliveryEstimate {
        max_success: 1,
        window: 2,
        min_rt: 3,
    };
    assert_eq!(e, e.clone());
    assert!(format!("{e:?}").contains("min_rt: 3"));
    assert_eq!(AdaptiveRule::default(), AdaptiveRule::new());
}
