//! Hostile review of `LocalKeyedGate::try_acquire_burst`'s rolling
//! prefetch: a burst must decide exactly as `try_acquire` calls one by one,
//! in order, for every length around the ring of 16 homes, with decision
//! slices shorter and longer than the requests; it must hand the prefetch
//! each decided request's home slot address once, in request order, and
//! nothing for requests it does not decide; and raising `newest` once per
//! burst must leave the table as raising it per decision does (callers far
//! behind are decided the same afterwards).

use std::num::NonZeroU64;

use leaparray::keyed::{LocalKeyedGate, Overflow};
use leaparray::Decision;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

const LENS: [usize; 11] = [0, 1, 2, 15, 16, 17, 31, 32, 33, 64, 70];

/// A random fill of `len` decisions, to see that decisions past the
/// decided ones are left alone (a write there matches its slot's fill with
/// probability 1/2, and the rounds write many).
fn fill(rng: &mut Rng, len: usize) -> Vec<Decision> {
    (0..len)
        .map(|_| {
            if rng.below(2) == 0 {
                Decision::Pass
            } else {
                Decision::Block
            }
        })
        .collect()
}

/// The same answers from `a` and `b` for every key at `now`.
fn same_answers<const N: usize, const CAP: usize>(
    a: &LocalKeyedGate<N, CAP>,
    b: &LocalKeyedGate<N, CAP>,
    keys: &[u64],
    now: u64,
    limit: u64,
    what: &str,
) {
    assert_eq!(a.occupancy(now), b.occupancy(now), "{what}: stats at {now}");
    for &k in keys {
        assert_eq!(
            a.remaining(k, now),
            b.remaining(k, now),
            "{what}: remaining {k} at {now}"
        );
        for n in [1, limit.max(1)] {
            assert_eq!(
                a.retry_after(k, now, n),
                b.retry_after(k, now, n),
                "{what}: retry_after {k} {n} at {now}"
            );
        }
    }
}

/// Random bursts on one table, the same requests one by one on its twin.
#[allow(clippy::too_many_arguments)]
fn burst_is_single_calls<const N: usize, const CAP: usize>(
    seed: u64,
    window: u64,
    limit: u64,
    policy: Overflow,
    nkeys: u64,
    rounds: usize,
    lens: &[usize],
) {
    let mut rng = Rng(seed | 1);
    // Under Miri: few keys (every key's answers are compared each round).
    let nkeys = if cfg!(miri) { nkeys.min(12) } else { nkeys };
    let mut burst = LocalKeyedGate::<N, CAP>::new(nz(window), limit)
        .with_seed(rng.next())
        .with_overflow(policy);
    let mut single = burst.clone();
    let keys: Vec<u64> = (0..nkeys)
        .map(|i| match i {
            0 => 0,
            1 => u64::MAX,
            _ => rng.next(),
        })
        .collect();
    let max = LocalKeyedGate::<N, CAP>::max_limit();
    // Half the id range of the layout (T bits): far-behind callers.
    let half_ids = {
        let bits = 64 - (max.leading_zeros()) as u64; // b
        let t = 63 - bits * N as u64;
        1u64 << (t.min(64) - 1)
    };
    let mut clock: u64 = rng.below(1 << 20);
    for round in 0..rounds {
        // The clock: mostly forward, sometimes back, sometimes far behind
        // or far ahead (a window 2^(T-1) away), sometimes near u64::MAX.
        let w = match rng.below(16) {
            0 => clock.saturating_sub(rng.below(12)),
            1 => clock.saturating_sub(half_ids + rng.below(3)),
            2 => clock.saturating_add(half_ids - 1 + rng.below(3)),
            3 => u64::MAX / window - rng.below(3),
            _ => clock.saturating_add(rng.below(3)),
        };
        if rng.below(4) != 0 {
            clock = clock.max(w);
        }
        let now = w.saturating_mul(window).saturating_add(rng.below(window));
        let len = lens[rng.below(lens.len() as u64) as usize];
        let reqs: Vec<(u64, u64)> = (0..len)
            .map(|_| {
                let k = keys[rng.below(nkeys) as usize];
                let n = match rng.below(12) {
                    0 => 0,
                    1 => limit + 1,
                    2 => u64::MAX,
                    3 => limit,
                    _ => 1 + rng.below(2),
                };
                (k, n)
            })
            .collect();
        // Decisions shorter, as long, or longer than the requests.
        let dlen = match rng.below(5) {
            0 => len.saturating_sub(1 + rng.below(20) as usize),
            1 => len + 1 + rng.below(20) as usize,
            _ => len,
        };
        let untouched = fill(&mut rng, dlen);
        let mut got = untouched.clone();
        let mut seen: Vec<usize> = Vec::new();
        let want_addrs: Vec<usize> = reqs[..len.min(dlen)]
            .iter()
            .map(|&(k, _)| burst.home_addr(k) as usize)
            .collect();
        let decided = burst.try_acquire_burst(now, &reqs, &mut got, |p| seen.push(p as usize));
        let what = format!("N {N} CAP {CAP} round {round} len {len} dlen {dlen} now {now}");
        assert_eq!(decided, len.min(dlen), "{what}: count");
        assert_eq!(seen, want_addrs, "{what}: prefetch addresses");
        assert!(
            got[decided..] == untouched[decided..],
            "{what}: decisions past the decided ones written"
        );
        for (i, &(k, n)) in reqs[..decided].iter().enumerate() {
            assert_eq!(
                got[i],
                single.try_acquire(k, now, n),
                "{what}: request {i} key {k} n {n}"
            );
        }
        // The state each leaves: from this caller's time, from one far
        // behind it and one just behind (`newest` is read there).
        same_answers(&burst, &single, &keys, now, limit, &what);
        let behind = now.saturating_sub(half_ids.saturating_mul(window));
        same_answers(&burst, &single, &keys, behind, limit, &what);
        same_answers(
            &burst,
            &single,
            &keys,
            now.saturating_sub(window),
            limit,
            &what,
        );
    }
}

fn rounds(n: usize) -> usize {
    if cfg!(miri) {
        (n / 200).max(1)
    } else {
        n
    }
}

#[test]
fn a_burst_decides_as_single_calls_at_every_length() {
    // Tables of 4,096 slots (196 KB each, by value) need a larger stack than
    // a test thread's.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(bursts_at_every_length)
        .unwrap()
        .join()
        .unwrap();
}

fn bursts_at_every_length() {
    let lens: Vec<usize> = if cfg!(miri) {
        vec![0, 1, 16, 17]
    } else {
        let mut l = LENS.to_vec();
        l.push(1000);
        l
    };
    for seed in 0..if cfg!(miri) { 1 } else { 3 } {
        let s = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(seed + 1);
        let policies: &[Overflow] = if cfg!(miri) {
            &[Overflow::Evict]
        } else {
            &[Overflow::Evict, Overflow::Refuse, Overflow::Admit]
        };
        for &policy in policies {
            // Tables full of keys (probes full, recycling, overflow) and
            // tables with room; windows of 1 tick and large.
            burst_is_single_calls::<2, 1>(s, 10, 3, policy, 5, rounds(200), &lens);
            burst_is_single_calls::<2, 2>(s, 1, 2, policy, 7, rounds(200), &lens);
            burst_is_single_calls::<1, 3>(s, 100, 4, policy, 9, rounds(200), &lens);
            burst_is_single_calls::<3, 17>(s, 7, 5, policy, 40, rounds(200), &lens);
            burst_is_single_calls::<2, 17>(s, 1 << 40, 16, policy, 12, rounds(200), &lens);
            burst_is_single_calls::<31, 17>(s, 3, 1, policy, 30, rounds(100), &lens);
            burst_is_single_calls::<2, 64>(s, 50, 16, policy, 300, rounds(100), &lens);
            if !cfg!(miri) {
                burst_is_single_calls::<2, 4096>(s, 50_000, 16, policy, 3000, rounds(40), &lens);
            }
        }
    }
}

/// A limit of 0: every request for permits is refused, takes no slot and
/// raises nothing.
#[test]
fn a_burst_of_refused_requests_decides_as_single_calls() {
    let lens = [0, 1, 16, 17, 33];
    burst_is_single_calls::<2, 17>(7, 10, 0, Overflow::Refuse, 20, rounds(100), &lens);
    burst_is_single_calls::<2, 17>(9, 10, 0, Overflow::Admit, 20, rounds(100), &lens);
}

/// The ring of homes: in a burst of distinct keys longer than 16, request
/// `i` is decided for its own key (a table where each key is alone gives
/// each its own limit: a wrong home would find another key's slot or a
/// fresh one elsewhere).
#[test]
fn each_request_uses_its_own_home() {
    let lim = 2;
    let lens: &[usize] = if cfg!(miri) {
        &[15, 16, 17, 33]
    } else {
        &[15, 16, 17, 31, 32, 33, 64, 70, 1000]
    };
    for &len in lens {
        let mut t = LocalKeyedGate::<2, 4096>::new(nz(100), lim);
        // Key i asks for i % 3 permits: a home of another request would
        // book a different count into the wrong key.
        let reqs: Vec<(u64, u64)> = (0..len as u64).map(|i| (i * 7919 + 1, i % 3)).collect();
        // Block: a decision left unwritten is not the Pass every one must be.
        let mut out = vec![Decision::Block; len];
        assert_eq!(t.try_acquire_burst(5, &reqs, &mut out, |_| ()), len);
        assert!(out.iter().all(|d| *d == Decision::Pass), "len {len}");
        for &(k, n) in &reqs {
            assert_eq!(t.remaining(k, 5), lim - n, "len {len} key {k}");
        }
        // Twice the same keys, reversed: every one now has lim - n left.
        let rev: Vec<(u64, u64)> = reqs.iter().rev().map(|&(k, _)| (k, 1)).collect();
        let want: Vec<Decision> = rev
            .iter()
            .map(|&(k, _)| {
                let n = reqs.iter().find(|r| r.0 == k).unwrap().1;
                if n < lim {
                    Decision::Pass
                } else {
                    Decision::Block
                }
            })
            .collect();
        // Each slot starts as the opposite of its answer: one left
        // unwritten is seen.
        let mut out2: Vec<Decision> = want
            .iter()
            .map(|&d| {
                if d == Decision::Pass {
                    Decision::Block
                } else {
                    Decision::Pass
                }
            })
            .collect();
        assert_eq!(t.try_acquire_burst(5, &rev, &mut out2, |_| ()), len);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(out2[i], *w, "len {len} request {i}");
        }
    }
}

/// The window id bits `T` of a `LocalKeyedGate<N, _>`'s slot word: 63
/// less `N` slots of `b = 31 / N` bits.
fn id_bits<const N: usize>() -> u32 {
    let b = 64 - LocalKeyedGate::<N, 1>::max_limit().leading_zeros();
    63 - b * N as u32
}

/// Requests that book nothing (`n == 0`, `n > limit`), alone or in a
/// burst, far ahead of the table's newest window, must not move the
/// window later callers are decided in: the module docs keep "the newest
/// window of any request it decided for 1 to `limit` permits". A table
/// that took their window as its newest decides a caller in its own,
/// full window as one `2^(T-1)` windows behind, slides the key's count out
/// and admits it (a `KeyedGate` of the same seed refuses).
fn no_booking_far_ahead_moves_nothing<const N: usize, const CAP: usize>() {
    use leaparray::KeyedGate;
    let (window, limit) = (10u64, LocalKeyedGate::<N, CAP>::max_limit().min(3));
    let ahead = (1u64 << (id_bits::<N>() - 1)) + 40;
    let w0 = 1_000u64;
    let (k, other) = (7u64, 8u64);
    for how in 0..6 {
        let mut t = LocalKeyedGate::<N, CAP>::new(nz(window), limit);
        let shared = KeyedGate::<N, CAP>::new(nz(window), limit);
        assert_eq!(t.try_acquire(k, w0 * window, limit), Decision::Pass);
        assert_eq!(shared.try_acquire(k, w0 * window, limit), Decision::Pass);
        let far = (w0 + ahead) * window;
        let n = [0, limit + 1, u64::MAX][how % 3];
        let (mine, theirs) = if how < 3 {
            (
                t.try_acquire(other, far, n),
                shared.try_acquire(other, far, n),
            )
        } else {
            let reqs = [(other, n), (k, n), (other, 0)];
            let (mut a, mut b) = ([Decision::Block; 3], [Decision::Block; 3]);
            assert_eq!(t.try_acquire_burst(far, &reqs, &mut a, |_| ()), 3);
            assert_eq!(shared.try_acquire_burst(far, &reqs, &mut b), 3);
            (a[0], b[0])
        };
        assert_eq!(mine, theirs, "N {N} CAP {CAP} how {how}");
        let at = w0 * window + 5;
        assert_eq!(
            t.remaining(k, at),
            shared.remaining(k, at),
            "N {N} CAP {CAP} how {how}: remaining"
        );
        assert_eq!(
            t.retry_after(k, at, 1),
            shared.retry_after(k, at, 1),
            "N {N} CAP {CAP} how {how}: retry_after"
        );
        assert_eq!(
            t.try_acquire(k, at, 1),
            Decision::Block,
            "N {N} CAP {CAP} how {how}: the key's interval is full"
        );
        assert_eq!(shared.try_acquire(k, at, 1), Decision::Block);
    }
}

#[test]
fn requests_that_book_nothing_far_ahead_move_nothing() {
    no_booking_far_ahead_moves_nothing::<1, 1>();
    no_booking_far_ahead_moves_nothing::<2, 1>();
    no_booking_far_ahead_moves_nothing::<2, 17>();
    no_booking_far_ahead_moves_nothing::<3, 3>();
    no_booking_far_ahead_moves_nothing::<31, 2>();
}
