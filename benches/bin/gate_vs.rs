//! `Gate<2>::try_acquire` against governor 0.10's `check()` (fake clock)
//! and a one-word reference gate, timed in one process and one thread:
//! rounds in which every contestant runs `CALLS` decisions in turn, the
//! median of each over the rounds, and the ratios of those medians.
//! `cargo run --release -p leaparray-benches --bin gate_vs` (cargo's
//! default release profile), and with `--profile bench-thin` (thin LTO,
//! one codegen unit); `-- --rounds 11` for a shorter run.
//!
//! Admitted: windows of 500 ticks, `now` advancing one tick per call (the
//! window moves every 500 calls, as a clock does), `n = 1` (opaque to the
//! compiler), limits of 1,000,000 per two windows (never reached; every
//! decision is checked to pass). governor runs with a `FakeRelativeClock`
//! that does not move and a quota it never reaches. Refused: a limit of
//! 10 used up, `now` fixed; governor 10 per second, used up.
//!
//! Each contestant is timed twice: its decision inlined into the timing
//! loop (as a caller's loop compiles it: the `inline` rows) and through a
//! function that is never inlined (one call per decision, as
//! `gate_instructions` counts it: the `call` rows).

use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};
use std::time::Instant;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use leaparray::{Decision, Gate};
use leaparray_benches::reference::RefGate;

type Governor = RateLimiter<NotKeyed, InMemoryState, FakeRelativeClock, NoOpMiddleware<Nanos>>;

const CALLS: u64 = 1_000_000;
const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();
const LIMIT: u64 = 1_000_000;

#[inline(never)]
fn gate_call(g: &Gate<2>, now: u64, n: u64) -> Decision {
    g.try_acquire(now, n)
}

#[inline(never)]
fn ref_call(g: &RefGate, now: u64, n: u64) -> bool {
    g.try_acquire(now, n)
}

#[inline(never)]
fn governor_call(g: &Governor) -> bool {
    g.check().is_ok()
}

/// One contestant: a name and a run of `CALLS` decisions returning how
/// many passed.
type Run<'a> = (&'static str, Box<dyn FnMut() -> u64 + 'a>);

/// `CALLS` decisions of `decide`, `now` advancing one tick per call from
/// where the last run stopped (or fixed if `step` is 0).
#[inline(always)]
fn drive(now: &mut u64, step: u64, mut decide: impl FnMut(u64) -> bool) -> u64 {
    let mut passed = 0;
    for _ in 0..CALLS {
        *now += step;
        passed += u64::from(decide(black_box(*now)));
    }
    passed
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut rounds = 31usize;
    while let Some(a) = args.next() {
        if a == "--rounds" {
            rounds = args.next().and_then(|r| r.parse().ok()).unwrap_or(rounds);
        }
    }
    // The reference slides, refuses over its limit and books late callers
    // into its newest window.
    let r = RefGate::new(WINDOW, 10);
    assert!(r.try_acquire(0, 6) && r.try_acquire(600, 4) && !r.try_acquire(900, 1));
    assert!(r.try_acquire(1_000, 6) && !r.try_acquire(400, 1) && r.try_acquire(2_000, 10));
    // Admitted: a limit of 1,000,000 (one 128-bit word: a 64-bit word's
    // three slots of a `Gate<2>` hold at most 1,023) and of 1,000 (one
    // 64-bit word); refused: the same two shapes used up.
    let gates: Vec<Gate<2>> = [LIMIT, 1_000, LIMIT, 1_000, LIMIT, 1_000, LIMIT, 1_000]
        .iter()
        .map(|&l| Gate::<2>::new(WINDOW, l))
        .collect();
    for g in &gates[4..] {
        assert_eq!(g.try_acquire(0, g.limit()), Decision::Pass);
    }
    let refs = [0; 4].map(|_| RefGate::new(WINDOW, LIMIT));
    assert!(refs[2].try_acquire(0, LIMIT) && refs[3].try_acquire(0, LIMIT));
    let quota = Quota::per_second(NonZeroU32::MAX);
    let ten = Quota::per_second(NonZeroU32::new(10).unwrap());
    let govs: Vec<Governor> = [quota, quota, ten, ten]
        .map(|q| RateLimiter::direct_with_clock(q, FakeRelativeClock::default()))
        .into_iter()
        .collect();
    for g in &govs[2..] {
        while g.check().is_ok() {}
    }
    println!(
        "Gate<2>: limit {LIMIT} {:?}, limit 1000 {:?}",
        gates[0].shape(),
        gates[1].shape()
    );

    let one = || black_box(1u64);
    let mut clocks = [0u64; 6];
    let [c0, c1, c2, c3, c4, c5] = &mut clocks;
    let [ga, gb, gc, gd, ge, gf, gg, gh] = &gates[..] else {
        unreachable!()
    };
    let [ra, rb, rc, rd] = &refs;
    let [va, vb, vc, vd] = &govs[..] else {
        unreachable!()
    };
    let pass = |d: Decision| d == Decision::Pass;
    // Per row: the 128-bit gate, the 64-bit gate, the reference, governor.
    let mut runs: Vec<Run> = vec![
        (
            "admit inline",
            Box::new(|| drive(c0, 1, |t| pass(ga.try_acquire(t, one())))),
        ),
        (
            "admit inline",
            Box::new(|| drive(c1, 1, |t| pass(gb.try_acquire(t, one())))),
        ),
        (
            "admit inline",
            Box::new(|| drive(c2, 1, |t| ra.try_acquire(t, one()))),
        ),
        (
            "admit inline",
            Box::new(|| drive(&mut 0, 0, |_| va.check().is_ok())),
        ),
        (
            "admit call",
            Box::new(|| drive(c3, 1, |t| pass(gate_call(gc, t, one())))),
        ),
        (
            "admit call",
            Box::new(|| drive(c4, 1, |t| pass(gate_call(gd, t, one())))),
        ),
        (
            "admit call",
            Box::new(|| drive(c5, 1, |t| ref_call(rb, t, one()))),
        ),
        (
            "admit call",
            Box::new(|| drive(&mut 0, 0, |_| governor_call(black_box(vb)))),
        ),
        (
            "refuse inline",
            Box::new(|| drive(&mut 100, 0, |t| pass(ge.try_acquire(t, one())))),
        ),
        (
            "refuse inline",
            Box::new(|| drive(&mut 100, 0, |t| pass(gf.try_acquire(t, one())))),
        ),
        (
            "refuse inline",
            Box::new(|| drive(&mut 100, 0, |t| rc.try_acquire(t, one()))),
        ),
        (
            "refuse inline",
            Box::new(|| drive(&mut 0, 0, |_| vc.check().is_ok())),
        ),
        (
            "refuse call",
            Box::new(|| drive(&mut 100, 0, |t| pass(gate_call(gg, t, one())))),
        ),
        (
            "refuse call",
            Box::new(|| drive(&mut 100, 0, |t| pass(gate_call(gh, t, one())))),
        ),
        (
            "refuse call",
            Box::new(|| drive(&mut 100, 0, |t| ref_call(rd, t, one()))),
        ),
        (
            "refuse call",
            Box::new(|| drive(&mut 0, 0, |_| governor_call(black_box(vd)))),
        ),
    ];
    let mut ns = vec![Vec::with_capacity(rounds); runs.len()];
    for _ in 0..rounds {
        for (i, (name, run)) in runs.iter_mut().enumerate() {
            let t = Instant::now();
            let passed = run();
            ns[i].push(t.elapsed().as_nanos() as f64 / CALLS as f64);
            let want = if name.starts_with("admit") { CALLS } else { 0 };
            assert_eq!(passed, want, "{name}: {passed} of {CALLS} passed");
        }
    }
    let med: Vec<f64> = ns
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    println!(
        "{rounds} rounds of {CALLS} calls each, medians (ns per decision); commit {}",
        env!("LEAPARRAY_COMMIT")
    );
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ns/decision",
        "gate128",
        "gate64",
        "reference",
        "governor",
        "128/gov",
        "64/gov",
        "128/ref",
        "64/ref"
    );
    for row in med.chunks(4).zip(runs.chunks(4)) {
        let ([w, g, r, v], [(what, _), ..]) = row else {
            unreachable!()
        };
        println!(
            "{what:<14} {w:>9.2} {g:>9.2} {r:>9.2} {v:>9.2} {:>8.2}x {:>8.2}x {:>8.2}x {:>8.2}x",
            w / v,
            g / v,
            w / r,
            g / r
        );
    }
}
