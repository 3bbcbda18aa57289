//! Review 49: a loom model the cluster node's models leave out: an entry
//! in flight (its pin held across its exit's RT) while another origin
//! evicts its origin and records twice, so the node is closed, folded at
//! the entry's last unpin, and retaken. Checks at quiescence every event
//! (pass, block, success, RT, min RT) partitioned, and nothing in flight.
//!
//! It holds (52 s at 3 preemptions). Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --test review49 -- --ignored`
#![cfg(leaparray_loom)]

use leaparray::stats::{ClusterNode, Counts, Origin, OriginNode, StatisticNode};
use leaparray_loom_tests::{spawn, Seen, W};
use loom::sync::Arc;

const A: Origin = Origin::from_hash(0x1111_0000_0000_0001);
const B: Origin = Origin::from_hash(0x2222_0000_0000_0002);

fn node() -> StatisticNode<1, 1> {
    StatisticNode::new(W, W, W)
}

#[test]
#[ignore = "review 49: this held (no defect found); kept out of CI's loom run: run with -- --ignored"]
fn an_entry_in_flight_while_its_origin_is_evicted_and_retaken() {
    let seen = Seen::new();
    let record = seen.recorder();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.max_branches = 100_000;
    model.check(move || {
        let cn = Arc::new(ClusterNode::with_nodes(
            node(),
            node(),
            [OriginNode::new(node())],
        ));
        cn.add_exception(None, 0, 1).unwrap();
        cn.add_pass(Some(A), 0, 1).unwrap();
        let (c1, c2) = (cn.clone(), cn.clone());
        let t1 = spawn(move || c1.enter(Some(A), 0, 1).exit(5, false));
        let t2 = spawn(move || {
            c2.add_block(Some(B), 0, 1).unwrap();
            c2.add_pass(Some(B), 0, 1).unwrap();
        });
        t1.join().unwrap();
        t2.join().unwrap();
        let others = cn.others(0);
        let parts = cn.origins(0).fold(others.second, |c, o| c.plus(o.second));
        let ev = |c: Counts| (c.pass, c.block, c.success, c.exception, c.rt, c.min_rt);
        let total = Counts::of(cn.total().second(), 0);
        assert_eq!(ev(parts), ev(total), "{parts:?} != {total:?}");
        assert_eq!(
            (total.pass, total.block, total.success, total.min_rt),
            (3, 1, 1, Some(5))
        );
        assert_eq!(cn.total().concurrency(), 0);
        assert_eq!(others.concurrency, 0);
        assert!(cn.origins(0).all(|o| o.concurrency == 0));
        let resident: Vec<_> = cn
            .origins(0)
            .map(|o| (o.origin == Some(A), o.second.pass))
            .collect();
        record(resident);
    });
    // Nothing resident (B's records met the pinned node), B resident, or A
    // back after B (its entry evicted B in turn).
    seen.assert_all(&[vec![], vec![(false, 1)], vec![(true, 1)]]);
}
