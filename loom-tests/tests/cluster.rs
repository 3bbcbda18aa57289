//! Loom models of the cluster node's origins (`src/stats/cluster.rs`, the
//! node's state word in `src/stats/origin.rs`): an origin evicted while
//! another thread records into it, two first recorders of one origin, and
//! a reader racing a fold.
//!
//! Every model uses the real `ClusterNode` in its smallest shape,
//! `ClusterNode<1, 1, 1>`: one origin node, metrics of one window of 10
//! ticks (Sentinel's 2 and 60 windows only lengthen the loops a fold and a
//! reader run over the windows; the protocol under test is the node's
//! state word and the table slot, the same for every shape). The table's
//! slot is a value behind a loom mutex (`src/sync.rs`), the rest loom
//! atomics.
//!
//! Each model checks, in every schedule, that once both threads have
//! stopped the resident origin and "other" partition the totals (pass,
//! block) exactly, that an origin's node never holds more than that origin
//! recorded (no record attributed to the wrong origin), and states the
//! outcomes the race produces and that some schedule produced each.
//!
//! Bounds: every interleaving up to `LOOM_MAX_PREEMPTIONS` preemptions (5
//! in CI; 3 for `two_first_recorders_of_one_origin`, whose threads both
//! insert into the table), two racing threads, each one record or two
//! reads, all at time 0 (one window, which exists before the race).
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test cluster`
#![cfg(leaparray_loom)]

use leaparray::stats::{ClusterNode, Origin, OriginNode, StatisticNode};
use leaparray_loom_tests::{spawn, Seen, W};
use loom::sync::Arc;

type Tiny = ClusterNode<1, 1, 1>;

const A: Origin = Origin::from_hash(0x1111_0000_0000_0001);
const B: Origin = Origin::from_hash(0x2222_0000_0000_0002);
const X: Origin = Origin::from_hash(0x3333_0000_0000_0003);
const Y: Origin = Origin::from_hash(0x4444_0000_0000_0004);

fn node() -> StatisticNode<1, 1> {
    StatisticNode::new(W, W, W)
}

/// A node whose totals and "other" already hold window 0 (an exception
/// without origin): the models race records and folds, not the bucket
/// protocol's creation of a window (`tests/core.rs`).
fn tiny() -> Tiny {
    let cn = ClusterNode::with_nodes(node(), node(), [OriginNode::new(node())]);
    cn.add_exception(None, 0, 1).unwrap();
    cn
}

/// What a quiescent node holds: `(resident origin, its passes, its
/// blocks, other's passes, other's blocks)`, after checking that the
/// resident origin and "other" add up to the totals.
fn partition(cn: &Tiny) -> (Option<Origin>, u64, u64, u64, u64) {
    let resident: Vec<_> = cn.origins(0).collect();
    assert!(resident.len() <= 1, "one node: {resident:?}");
    let others = cn.others(0);
    let (o, p, b) = resident
        .first()
        .map_or((None, 0, 0), |s| (s.origin, s.second.pass, s.second.block));
    let t = cn.total();
    assert_eq!(
        (p + others.second.pass, b + others.second.block),
        (t.second().pass(0), t.second().block(0)),
        "second: {resident:?} + {others:?} != totals"
    );
    assert_eq!(
        (
            resident.first().map_or(0, |s| s.minute.pass) + others.minute.pass,
            resident.first().map_or(0, |s| s.minute.block) + others.minute.block,
        ),
        (t.minute().pass(0), t.minute().block(0)),
        "minute: {resident:?} + {others:?} != totals"
    );
    (o, p, b, others.second.pass, others.second.block)
}

/// The module's race table. A is resident (2 passes, node open, no pin).
/// Thread 1 records one more pass of A; thread 2 records a block of B,
/// which evicts A from the only slot and comes for its node: it takes it
/// (A unpinned: folded into "other"), or closes it (A pinned: B's block
/// goes to "other", A's last unpin folds). Thread 1 may also come late and
/// evict B in turn. In every schedule: the totals are 3 passes and 1
/// block, partitioned exactly; the resident origin's node holds only its
/// own records (A: passes, at most 3; B: its block, at most 1).
///
/// Bug it catches: `pin` takes an `open` node despite its pins (folds a
/// node a recorder is adding into: the add lands after the fold and is
/// counted as B's, or between the fold's read and its emptying and is
/// lost).
#[test]
fn an_origin_evicted_while_another_thread_records_into_it() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let cn = Arc::new(tiny());
        cn.add_pass(Some(A), 0, 2).unwrap();
        let (c1, c2) = (cn.clone(), cn.clone());
        let t1 = spawn(move || c1.add_pass(Some(A), 0, 1).unwrap());
        let t2 = spawn(move || c2.add_block(Some(B), 0, 1).unwrap());
        t1.join().unwrap();
        t2.join().unwrap();
        let (o, p, b, other_pass, other_block) = partition(&cn);
        assert_eq!(
            (cn.total().second().pass(0), cn.total().second().block(0)),
            (3, 1)
        );
        match o {
            Some(x) if x == A => assert!(b == 0 && p <= 3, "A's node: {p} passes, {b} blocks"),
            Some(x) if x == B => assert!(p == 0 && b <= 1, "B's node: {p} passes, {b} blocks"),
            Some(x) => panic!("unknown origin {x:?}"),
            None => assert!(p == 0 && b == 0),
        }
        record((o.map(|x| x == A), p, b, other_pass, other_block));
    });
    seen.assert_all(&[
        // A recorded first; B evicted it and took the folded node.
        (Some(false), 0, 1, 3, 0),
        // B met A's node pinned: its block went to "other"; A's last unpin
        // folded the node, which stays empty (done).
        (None, 0, 0, 3, 1),
        // A came back after B and evicted it in turn: A's third pass in
        // its new node, B's block folded into "other".
        (Some(true), 1, 0, 2, 1),
    ]);
}

/// Two threads record the first passes of origin A at once: each finds
/// A absent, evicts Y from the only slot or finds the other's claim of A;
/// the first to settle A writes the node's position and takes the node;
/// the other pins it, or, meeting it being taken, records into "other".
/// The node was used before (X's, folded at X's last exit): its window
/// exists, so the race is the table's and the node's state word, not the
/// bucket protocol's creation of a window (`tests/core.rs`). In every
/// schedule: 4 passes in all (X, Y, two of A) partitioned exactly, A
/// resident with at most its own 2, nothing in flight.
///
/// Bug it catches: the take of a node as a load and a store instead of
/// one compare-and-swap (`OriginNode::pin`: both first recorders take the
/// node and open it with one pin each; one unpins to 0 while the other
/// still records, and a count is lost or lands twice).
#[test]
fn two_first_recorders_of_one_origin() {
    let seen = Seen::new();
    let record = seen.recorder();
    // Both threads run the table's insertion (an eviction, a claim and its
    // settling) before the node's protocol: at 4 preemptions and more this
    // model takes minutes.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let cn = Arc::new(tiny());
        // X takes the node; Y evicts X (a pin in flight: the node closes,
        // Y's pass goes to "other"); X's exit folds the node: done.
        let x = cn.enter(Some(X), 0, 1);
        cn.add_pass(Some(Y), 0, 1).unwrap();
        drop(x);
        assert_eq!(cn.origins(0).count(), 0);
        let (c1, c2) = (cn.clone(), cn.clone());
        let t1 = spawn(move || c1.add_pass(Some(A), 0, 1).unwrap());
        let t2 = spawn(move || c2.add_pass(Some(A), 0, 1).unwrap());
        t1.join().unwrap();
        t2.join().unwrap();
        let (o, p, _, other_pass, _) = partition(&cn);
        assert_eq!(cn.total().second().pass(0), 4);
        assert_eq!(o, Some(A), "A is resident");
        assert!(p <= 2, "A's node: {p}");
        assert_eq!((cn.total().concurrency(), cn.others(0).concurrency), (0, 0));
        record((p, other_pass));
    });
    // Both in A's node, or one first record in "other" (it met the node
    // being taken, or the slot before its position was written).
    seen.assert_all(&[(2, 2), (1, 3)]);
}

/// A reader of `origin(A)` and `origin(B)` races thread 1's block of B,
/// which evicts A (2 passes, node open, no pin), folds A's node into
/// "other" and opens it for B. A snapshot is read between two reads of
/// the node's state that must both find it open for the origin read: the
/// reader sees A whole (2 passes, origin A) or not at all, B whole (1
/// block, origin B) or not at all: never an emptied A, nor A's counts
/// under B's name or B's under A's.
///
/// Bug it catches: the reader skips its second read of the node's state
/// (`ClusterNode::read`): it reports A's node emptied mid-fold, or B's
/// counts as A's.
#[test]
fn a_read_during_a_fold_never_mixes_two_origins() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let cn = Arc::new(tiny());
        cn.add_pass(Some(A), 0, 2).unwrap();
        let (c1, c2) = (cn.clone(), cn.clone());
        let t1 = spawn(move || c1.add_block(Some(B), 0, 1).unwrap());
        let reader = spawn(move || {
            let a = c2.origin(A, 0);
            let b = c2.origin(B, 0);
            (a, b)
        });
        t1.join().unwrap();
        let (a, b) = reader.join().unwrap();
        if let Some(a) = a {
            assert_eq!(
                (a.origin, a.second.pass, a.second.block, a.minute.pass),
                (Some(A), 2, 0, 2),
                "A read mid-fold: {a:?}"
            );
        }
        if let Some(b) = b {
            // B's node opens before its block lands in it (the second-level
            // metric first, then the minute).
            assert!(
                b.origin == Some(B)
                    && b.second.pass == 0
                    && b.minute.pass == 0
                    && b.minute.block <= 1
                    && b.second.block <= 1,
                "B read mid-fold: {b:?}"
            );
        }
        let (o, _, blocks, other_pass, _) = partition(&cn);
        assert_eq!((o, blocks, other_pass), (Some(B), 1, 2));
        record((a.is_some(), b.is_some()));
    });
    // Before the eviction; between (A gone, B not yet open); after.
    seen.assert_all(&[(true, false), (false, false), (false, true)]);
}
