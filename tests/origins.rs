//! A [`ClusterNode`]'s origins: Sentinel's `ClusterNodeTest` scenarios
//! (rewritten), and a property test against a model (a map of origins
//! that never evicts) and against the partition of the totals when the
//! table evicts.

use std::collections::{BTreeMap, HashSet};
use std::sync::Barrier;

use leaparray::stats::{ClusterNode, Counts, Origin};
use proptest::prelude::*;

/// Sentinel's `testGetOrCreateOriginNodeSingleThread`: two origins get
/// two nodes; asking for the first again gives the same node, no third.
#[test]
fn origins_get_one_node_each_single_thread() {
    let cn = Box::new(ClusterNode::<16>::millis());
    let (o1, o2) = (Origin::named("origin1"), Origin::named("origin2"));
    cn.add_pass(Some(o1), 0, 1).unwrap();
    assert_eq!(cn.origins(0).count(), 1);
    cn.add_pass(Some(o2), 0, 1).unwrap();
    assert_eq!(cn.origins(0).count(), 2);
    cn.add_pass(Some(o1), 0, 1).unwrap();
    assert_eq!(cn.origins(0).count(), 2);
    assert_eq!(cn.origin(o1, 0).unwrap().second.pass, 2);
    assert_eq!(cn.origin(o2, 0).unwrap().second.pass, 1);
    let names: HashSet<Origin> = cn.origins(0).filter_map(|o| o.origin).collect();
    assert_eq!(names, HashSet::from([o1, o2]));
}

/// Sentinel's `testGetOrCreateOriginNodeMultiThread`: 10 threads, 3
/// origins, 20 tasks, 10 rounds: 3 nodes, one per origin.
#[test]
fn origins_get_one_node_each_multi_thread() {
    let origins = ["origin1", "origin2", "origin3"].map(Origin::named);
    // One round under Miri (ten threads there take minutes a round).
    for _ in 0..if cfg!(miri) { 1 } else { 10 } {
        let cn = Box::new(ClusterNode::<16>::millis());
        let start = Barrier::new(10);
        std::thread::scope(|s| {
            for t in 0..10 {
                let (cn, start) = (&cn, &start);
                s.spawn(move || {
                    start.wait();
                    // Tasks t and t + 10 of 20, task i for origin i % 3.
                    for task in [t, t + 10] {
                        cn.add_pass(Some(origins[task % 3]), 0, 1).unwrap();
                    }
                });
            }
        });
        assert_eq!(cn.origins(0).count(), 3);
        let names: HashSet<Origin> = cn.origins(0).filter_map(|o| o.origin).collect();
        assert_eq!(names, HashSet::from(origins));
        // Every pass in its origin's node or, if it met the node being
        // taken by its origin's first recorder, in "other": 20 in all.
        let passes: u64 = cn.origins(0).map(|o| o.second.pass).sum();
        assert_eq!(passes + cn.others(0).second.pass, 20);
        assert_eq!(cn.total().second().pass(0), 20);
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Pass(u8, u64),
    Block(u8, u64),
    Exception(u8, u64),
    Rt(u8, u64, u64),
    Entry(u8, u64),
    Advance(u64),
}

fn origin_of(i: u8) -> Option<Origin> {
    // Origin 0 is "no origin".
    (i != 0).then(|| Origin::named(&format!("app{i}")))
}

fn ops(origins: u8) -> impl Strategy<Value = Vec<Op>> {
    let o = 0..origins;
    prop::collection::vec(
        prop_oneof![
            (o.clone(), 1..5u64).prop_map(|(i, n)| Op::Pass(i, n)),
            (o.clone(), 1..5u64).prop_map(|(i, n)| Op::Block(i, n)),
            (o.clone(), 1..3u64).prop_map(|(i, n)| Op::Exception(i, n)),
            (o.clone(), 0..50u64, 1..3u64).prop_map(|(i, rt, n)| Op::Rt(i, rt, n)),
            (o, 0..40u64).prop_map(|(i, rt)| Op::Entry(i, rt)),
            (0..400u64).prop_map(Op::Advance),
        ],
        // Under Miri a few ops a case (each check reads every node).
        1..if cfg!(miri) { 12 } else { 80 },
    )
}

/// Runs `ops` on `cn`, calling `check` after each with the time.
fn run<const CAP: usize>(cn: &ClusterNode<CAP>, ops: &[Op], mut check: impl FnMut(&Op, u64)) {
    let mut now = 1_000;
    for op in ops {
        match *op {
            Op::Pass(i, n) => cn.add_pass(origin_of(i), now, n).unwrap(),
            Op::Block(i, n) => cn.add_block(origin_of(i), now, n).unwrap(),
            Op::Exception(i, n) => cn.add_exception(origin_of(i), now, n).unwrap(),
            Op::Rt(i, rt, n) => cn.add_rt_and_success(origin_of(i), now, rt, n).unwrap(),
            Op::Entry(i, rt) => cn.enter(origin_of(i), now, 1).exit(now + rt, false),
            Op::Advance(d) => now += d,
        }
        if let Op::Entry(_, rt) = *op {
            now += rt;
        }
        check(op, now);
    }
}

/// The model's counts of one origin: every record, per window of 500 ms.
#[derive(Default)]
struct Model(BTreeMap<(Option<Origin>, u64), Counts>);

impl Model {
    fn record(&mut self, op: &Op, now: u64) {
        let (i, at, c) = match *op {
            Op::Pass(i, n) => (
                i,
                now,
                Counts {
                    pass: n,
                    ..Counts::default()
                },
            ),
            Op::Block(i, n) => (
                i,
                now,
                Counts {
                    block: n,
                    ..Counts::default()
                },
            ),
            Op::Exception(i, n) => (
                i,
                now,
                Counts {
                    exception: n,
                    ..Counts::default()
                },
            ),
            Op::Rt(i, rt, n) => (
                i,
                now,
                Counts {
                    success: n,
                    rt,
                    min_rt: Some(rt),
                    ..Counts::default()
                },
            ),
            Op::Entry(i, rt) => {
                // The pass at the start, the completion at the end.
                let start = now - rt;
                let pass = Counts {
                    pass: 1,
                    max_concurrency: 1,
                    ..Counts::default()
                };
                let e = self.0.entry((origin_of(i), start / 500)).or_default();
                *e = e.plus(pass);
                let done = Counts {
                    success: 1,
                    rt,
                    min_rt: Some(rt),
                    ..Counts::default()
                };
                (i, now, done)
            }
            Op::Advance(_) => return,
        };
        let e = self.0.entry((origin_of(i), at / 500)).or_default();
        *e = e.plus(c);
    }

    /// An origin's second-level counts at `now` (2 windows of 500 ms).
    fn second(&self, origin: Option<Origin>, now: u64) -> Counts {
        let w = now / 500;
        (w.saturating_sub(1)..=w)
            .filter_map(|id| self.0.get(&(origin, id)))
            .fold(Counts::default(), |a, &b| a.plus(b))
    }
}

proptest! {
    // No failure file under Miri (its isolation has no current directory).
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 256 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// Six origins (and none) in 16 slots (one probe): the table never evicts, so each
    /// origin's node is the model's map entry, "other" holds exactly the
    /// records without an origin, and they add up to the totals.
    #[test]
    fn each_origin_counts_as_a_map_of_origins(ops in ops(7)) {
        let cn = Box::new(ClusterNode::<16>::millis());
        let mut model = Model::default();
        let mut failed = None;
        run(&cn, &ops, |op, now| {
            model.record(op, now);
            if failed.is_some() {
                return;
            }
            for i in 1..7 {
                let want = model.second(origin_of(i), now);
                let got = cn.origin(origin_of(i).unwrap(), now).map_or(Counts::default(), |s| s.second);
                if got != want {
                    failed = Some(format!("origin {i} at {now} after {op:?}: {got:?} != {want:?}"));
                }
            }
            let other = model.second(None, now);
            if cn.others(now).second != other {
                failed = Some(format!("other at {now}: {:?} != {other:?}", cn.others(now)));
            }
        });
        prop_assert!(failed.is_none(), "{}", failed.unwrap());
    }

    /// Twenty origins in 4 slots: evictions and folds all the time, and
    /// after every record the resident origins and "other" partition the
    /// totals, event by event, at the second and the minute level.
    #[test]
    fn origins_and_other_add_up_to_the_totals_under_eviction(ops in ops(21)) {
        let cn = Box::new(ClusterNode::<4>::millis());
        let mut failed = None;
        run(&cn, &ops, |op, now| {
            let others = cn.others(now);
            let (second, minute) = cn
                .origins(now)
                .fold((others.second, others.minute), |(s, m), o| (s.plus(o.second), m.plus(o.minute)));
            // Peaks are per node, not additive.
            let events = |c: Counts| Counts { max_concurrency: 0, ..c };
            let totals = (Counts::of(cn.total().second(), now), Counts::of(cn.total().minute(), now));
            if failed.is_none()
                && ((events(second), events(minute)) != (events(totals.0), events(totals.1))
                    || cn.origins(now).count() > 4)
            {
                failed = Some(format!("at {now} after {op:?}: {second:?} {minute:?} != {totals:?}"));
            }
        });
        prop_assert!(failed.is_none(), "{}", failed.unwrap());
    }
}
