//! Review probes of the keyed hot paths: a burst of
//! `LocalKeyedGate::try_acquire_burst` decides exactly as one-at-a-time
//! `try_acquire` on a twin table, for lengths 0..=3*AHEAD, `n` at and
//! around the limit and near `u64::MAX`, colliding keys, windows moving by
//! 0, 1, a few, and far; and every caller of the fast path blocks an `n`
//! far above the limit on a word moved on by one window.

use std::num::NonZeroU64;

use leaparray::keyed::LocalKeyedGate;
use leaparray::Decision;

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

fn walk<const N: usize, const CAP: usize>(seed: u64, limit: u64, rounds: usize) -> usize {
    let window = 100;
    let mut burst = LocalKeyedGate::<N, CAP>::new(NonZeroU64::new(window).unwrap(), limit);
    let mut single = LocalKeyedGate::<N, CAP>::new(NonZeroU64::new(window).unwrap(), limit);
    let mut rng = Rng(seed);
    let mut now = 0u64;
    let mut checked = 0;
    for round in 0..rounds {
        now += match rng.below(6) {
            0 => 0,
            1 => rng.below(window),
            2 => window,
            3 => window * (1 + rng.below(N as u64 + 1)),
            4 => window * (1 + rng.below(1 << 20)),
            _ => rng.below(3 * window),
        };
        let len = rng.below(3 * 16 + 1) as usize;
        let keys = 1 + rng.below(CAP as u64 / 2 + 2);
        let reqs: Vec<(u64, u64)> = (0..len)
            .map(|_| {
                let k = rng.below(keys);
                let n = match rng.below(9) {
                    0 => 0,
                    1 => limit,
                    2 => limit + 1,
                    3 => u64::MAX,
                    4 => 1 << 63,
                    5 => u64::MAX - rng.below(limit + 1),
                    _ => 1 + rng.below(limit),
                };
                (k, n)
            })
            .collect();
        let mut got = vec![Decision::Block; len];
        assert_eq!(burst.try_acquire_burst(now, &reqs, &mut got, |_| ()), len);
        for (i, &(k, n)) in reqs.iter().enumerate() {
            let want = single.try_acquire(k, now, n);
            assert_eq!(
                got[i], want,
                "N {N} CAP {CAP} limit {limit} seed {seed} round {round} i {i} key {k} n {n} now {now}"
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn burst_decides_as_one_at_a_time_across_shapes() {
    let mut total = 0;
    // Under Miri (which interprets) one seed and a thirtieth of the rounds.
    let (seeds, scale) = if cfg!(miri) { (1u64, 30) } else { (6, 1) };
    for seed in 1..=seeds {
        for limit in [1u64, 2, 3, 10, 1000] {
            total += walk::<2, 16>(seed, limit, 300 / scale);
            total += walk::<2, 64>(seed, limit, 300 / scale);
            total += walk::<3, 32>(seed, limit, 300 / scale);
            total += walk::<4, 64>(seed, limit.min(127), 200 / scale);
            total += walk::<8, 16>(seed, limit.min(7), 200 / scale);
        }
    }
    assert!(total > if cfg!(miri) { 300 } else { 100_000 }, "{total}");
}

/// `decide_fast_ahead`'s moved-word branch (`live + n`, unsaturated) from
/// every public caller: a key with live counts, one window on, asked for
/// `n` far above the limit (near `u64::MAX`, where `live + n` would wrap
/// to a small sum), must be blocked and book nothing.
#[test]
fn huge_n_on_a_moved_word_is_blocked_by_every_caller() {
    use leaparray::{Gate, KeyedGate};
    let w = NonZeroU64::new(100).unwrap();
    for n in [
        u64::MAX,
        u64::MAX - 1,
        u64::MAX - 3,
        1 << 63,
        (1 << 63) - 1,
        11,
    ] {
        for pre in [1u64, 3, 10] {
            let g = Gate::<2>::new(w, 10);
            assert_eq!(g.try_acquire(50, pre), Decision::Pass);
            assert_eq!(
                g.try_acquire(150, n),
                Decision::Block,
                "Gate n {n} pre {pre}"
            );
            assert_eq!(
                g.try_acquire(150, 10 - pre),
                Decision::Pass,
                "Gate n {n} pre {pre}"
            );

            let k = KeyedGate::<2, 64>::new(w, 10);
            assert_eq!(k.try_acquire(7, 50, pre), Decision::Pass);
            assert_eq!(
                k.try_acquire(7, 150, n),
                Decision::Block,
                "KeyedGate n {n} pre {pre}"
            );
            assert_eq!(
                k.try_acquire(7, 150, 10 - pre),
                Decision::Pass,
                "KeyedGate n {n}"
            );

            let mut l = LocalKeyedGate::<2, 64>::new(w, 10);
            assert_eq!(l.try_acquire(7, 50, pre), Decision::Pass);
            assert_eq!(
                l.try_acquire(7, 150, n),
                Decision::Block,
                "Local n {n} pre {pre}"
            );
            let mut out = [Decision::Pass; 1];
            assert_eq!(l.try_acquire_burst(150, &[(7, n)], &mut out, |_| ()), 1);
            assert_eq!(out[0], Decision::Block, "Local burst n {n} pre {pre}");
            assert_eq!(
                l.try_acquire(7, 150, 10 - pre),
                Decision::Pass,
                "Local n {n}"
            );
        }
    }
}
