//! Review 49: a stress of a `ClusterNode<2>` (9 origins and none, 4 threads,
//! records, entries held across other records, exits and drops): after
//! the threads stop the origins and "other" partition the totals (every
//! event and min RT, both levels) and nothing is in flight. It held (200
//! rounds); kept out of `cargo test`: run with
//! `cargo test --release --test review49_stress -- --ignored`.
use leaparray::stats::{ClusterNode, Counts, Origin};
use std::sync::Barrier;

#[test]
#[ignore = "review 49: this held (no defect found)"]
fn stress_partition() {
    for round in 0..200u64 {
        let cn = Box::new(ClusterNode::<2>::millis());
        let start = Barrier::new(4);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (cn, start) = (&cn, &start);
                s.spawn(move || {
                    let mut x = round * 7919 + t * 104729 + 1;
                    let mut held = Vec::new();
                    start.wait();
                    for _ in 0..2000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let o = (x % 9) as u8;
                        let origin = (o != 0).then(|| Origin::named(&format!("o{o}")));
                        let now = 100 + (x >> 20) % 50;
                        match (x >> 8) % 5 {
                            0 => cn.add_pass(origin, now, 1).unwrap(),
                            1 => cn.add_block(origin, now, 1).unwrap(),
                            2 => cn
                                .add_rt_and_success(origin, now, (x >> 30) % 40, 1)
                                .unwrap(),
                            3 => held.push(cn.enter(origin, now, 1)),
                            _ => {
                                if let Some(e) = held.pop() {
                                    if x & 1 == 0 {
                                        e.exit(now, x & 2 == 0)
                                    } else {
                                        drop(e)
                                    }
                                }
                            }
                        }
                    }
                    for e in held {
                        e.exit(160, false);
                    }
                });
            }
        });
        let now = 170;
        let others = cn.others(now);
        let (sec, min) = cn
            .origins(now)
            .fold((others.second, others.minute), |(s, m), o| {
                (s.plus(o.second), m.plus(o.minute))
            });
        let ev = |c: Counts| (c.pass, c.block, c.success, c.exception, c.rt, c.min_rt);
        assert_eq!(
            ev(sec),
            ev(Counts::of(cn.total().second(), now)),
            "round {round}"
        );
        assert_eq!(
            ev(min),
            ev(Counts::of(cn.total().minute(), now)),
            "round {round}"
        );
        assert_eq!(cn.total().concurrency(), 0);
        assert_eq!(
            others.concurrency + cn.origins(now).map(|o| o.concurrency).sum::<u64>(),
            0,
            "round {round}"
        );
    }
}
