//! Loom models of claimed shards: a reader racing a single writer's
//! roll-over (no mixed window, nothing lost), and the claim protocol.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`
#![cfg(leaparray_loom)]

use leaparray::shard::{ClaimError, Sharded, SharedAddError};
use leaparray_loom_tests::{spawn, Seen, W};
use loom::sync::atomic::AtomicUsize;
use loom::sync::atomic::Ordering::SeqCst;
use loom::sync::Arc;

/// A `'static` array for one model run (the writer handle borrows it and
/// moves into a thread).
fn leak<const N: usize, const C: usize, const S: usize>() -> &'static Sharded<N, C, S> {
    Box::leak(Box::new(Sharded::new(W)))
}

/// The single writer rolls its bucket from window 0 to window 2 (plain
/// stores: stamp, then every cell reset) and adds two counters, while a
/// reader merges: window 0 is read whole or not at all, window 2 only ever
/// shows its own counts, and nothing the writer counted is lost.
#[test]
fn reader_racing_single_writer_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let s = leak::<2, 2, 1>();
        let mut w = s.claim(0).unwrap();
        w.add(0, 0, 1).unwrap();
        w.add(0, 1, 2).unwrap();
        let writer = spawn(move || {
            w.add(20, 0, 10).unwrap();
            w.add(20, 1, 20).unwrap();
        });
        let reader = spawn(move || {
            let old: Vec<[u64; 2]> = s.windows(5).iter().map(|w| w.counts).collect();
            let new: Vec<[u64; 2]> = s.windows(25).iter().map(|w| w.counts).collect();
            (old, new)
        });
        writer.join().unwrap();
        let (old, new) = reader.join().unwrap();
        for c in &old {
            assert_eq!(*c, [1, 2], "window 0 mixed or lost counts");
        }
        for c in &new {
            assert!(
                [0, 10].contains(&c[0]) && [0, 20].contains(&c[1]),
                "window 2 mixed: {c:?}"
            );
        }
        assert_eq!(s.sums(25), [10, 20], "nothing counted is lost");
        record((old.len(), new.first().copied()));
    });
    seen.assert_all(&[(1, None), (0, Some([10, 20])), (0, Some([0, 0]))]);
}

/// Two threads claim the same shard: never two owners at once, and every
/// owner's adds count.
#[test]
fn two_claims_one_winner() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let s = leak::<2, 1, 1>();
        // How many threads hold a writer of shard 0 right now.
        let owners = Arc::new(AtomicUsize::new(0));
        let claim = |owners: Arc<AtomicUsize>| {
            move || match s.claim(0) {
                Ok(mut w) => {
                    assert_eq!(owners.fetch_add(1, SeqCst), 0, "two owners at once");
                    w.add(1, 0, 1).unwrap();
                    owners.fetch_sub(1, SeqCst);
                    true
                }
                Err(e) => {
                    assert_eq!(e, ClaimError::Claimed);
                    false
                }
            }
        };
        let a = spawn(claim(owners.clone()));
        let b = spawn(claim(owners));
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        // A winner that already dropped its handle lets the other in too.
        assert!(a || b);
        assert_eq!(
            s.sum(1, 0),
            u64::from(a) + u64::from(b),
            "an owner's add lost"
        );
        record(a && b);
    });
    // Both orders happened: one refused while the other held the shard,
    // and both owning it one after the other.
    seen.assert_all(&[false, true]);
}

/// A claim races a shared add on a one-shard array: the claim fails only
/// while the add is in flight, the add skips the shard only while it is
/// claimed, and afterwards the shard can always be claimed again (a queue
/// writer that restarts gets its shard back). Every add that returned `Ok`
/// is counted exactly once.
#[test]
fn claim_racing_a_shared_add() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let s = leak::<2, 1, 1>();
        let owner = spawn(move || match s.claim(0) {
            Ok(mut w) => {
                w.add(5, 0, 1).unwrap();
                true
            }
            Err(e) => {
                assert_eq!(e, ClaimError::Shared);
                false
            }
        });
        let shared = spawn(move || s.add(0, 5, 0, 10));
        let claimed = owner.join().unwrap();
        let shared = shared.join().unwrap();
        assert!(matches!(shared, Ok(()) | Err(SharedAddError::NoFreeShard)));
        // Claim, release, shared add, claim again: always `Ok`.
        let mut again = s.claim(0).expect("a free shard can be claimed again");
        again.add(5, 0, 100).unwrap();
        let want = u64::from(claimed) + if shared.is_ok() { 10 } else { 0 } + 100;
        assert_eq!(s.sum(5, 0), want);
        record((claimed, shared.is_ok()));
    });
    seen.assert_all(&[(true, false), (false, true), (true, true)]);
}

/// Review of cf6e8dd: two writers take turns on one shard with nothing but
/// the claim protocol between them (no other shared variable that could
/// order them, unlike `two_claims_one_winner`'s owner count): the second
/// writer reads its running count from the cells when it enters window 0,
/// so it must see the first writer's store through Drop (release) -> claim
/// (acquire). Both adds count, in either order.
#[test]
fn writers_taking_turns_keep_each_others_counts() {
    loom::model(move || {
        let s = leak::<2, 1, 1>();
        let turn = move |n: u64| {
            move || loop {
                match s.claim(0) {
                    Ok(mut w) => {
                        w.add(1, 0, n).unwrap();
                        return;
                    }
                    Err(e) => {
                        assert_eq!(e, ClaimError::Claimed);
                        loom::thread::yield_now();
                    }
                }
            }
        };
        let a = spawn(turn(1));
        let b = spawn(turn(2));
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(
            s.sum(1, 0),
            3,
            "a writer's count lost across a change of writer"
        );
    });
}
