//! Hostile review of the one-word gate (`src/gate/packed/`, `src/gate/mod.rs`): adversarial
//! inputs against the brute-force model shared with the fuzz target
//! (`tests/common/gate_model.rs`): window lengths that are not powers of
//! two, 1 and huge ones, times near 0 and near `u64::MAX`, limits up to the
//! largest a slot holds, `n` of 0, above the limit and huge, times going
//! backwards, long jumps within 2^(T-1) windows, and `retry_after`
//! replayed (waiting exactly that long admits, one tick less does not);
//! aliased ids (idles of about 2^(T-1), 2^T, 2^T k windows) against the
//! limit in true windows; real threads against every sequential order.
//!
//! Reproducers (they failed on ff7cffb; fixed since): `record_after_borrowed_permits_slide_in_does_not_panic`,
//! `record_never_erases_admitted_permits` (run with `--release`; in debug
//! it panics in the same place), `shapes_follow_the_documented_formula`.

use std::num::NonZeroU64;

use leaparray::gate::{PriorityDecision, Shape};
use leaparray::AddError;
use leaparray::{Decision, Gate};
use proptest::prelude::*;

#[allow(dead_code)]
#[path = "common/gate_model.rs"]
mod gate_model;
use gate_model::GateModel;

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// A request: plain or prioritized, at `now`, for `n`.
#[derive(Clone, Copy, Debug)]
struct Req {
    now: u64,
    n: u64,
    prio: bool,
}

fn build<const N: usize>(window: u64, limit: u64, timeout: Option<u64>, wide: bool) -> Gate<N> {
    let mut g = Gate::<N>::new(nz(window), limit);
    if let Some(t) = timeout {
        g = g.with_occupy_timeout(t);
    }
    if wide {
        if let Some(w) = g.in_wide_word() {
            return w;
        }
        return Gate::<N>::new(nz(1), 0).in_buckets();
    }
    g
}

fn apply<const N: usize>(g: &Gate<N>, r: Req) -> PriorityDecision {
    if r.prio {
        g.try_acquire_prioritized(r.now, r.n)
    } else {
        g.try_acquire(r.now, r.n).into()
    }
}

fn apply_model<const N: usize>(m: &mut GateModel<N>, r: Req) -> PriorityDecision {
    if r.prio {
        m.try_acquire_prioritized(r.now, r.n)
    } else {
        m.try_acquire(r.now, r.n).into()
    }
}

/// Every decision, `retry_after`, `peek`, `count` against the model; and
/// every `Some(r)` of `retry_after` replayed on a fresh gate with the same
/// history: exactly at `now + r` the request passes, at `now + r - 1` (for
/// `r > 0`) it does not.
#[allow(clippy::too_many_arguments)] // one row of the model comparison: every input named
fn check<const N: usize>(
    window: u64,
    limit: u64,
    timeout: Option<u64>,
    wide: bool,
    start: u64,
    long: bool,
    steps: &[Step],
    replay: bool,
) -> Result<(), TestCaseError> {
    let g = build::<N>(window, limit, timeout, wide);
    if g.shape() == Shape::Buckets {
        return Ok(());
    }
    let mut m = GateModel::<N>::new(window, g.limit(), g.occupy_timeout());
    let limit = g.limit();
    let half = if long {
        match g.shape() {
            Shape::Word64 { id_bits } | Shape::Word128 { id_bits } => 1u64 << (id_bits - 1),
            _ => unreachable!(),
        }
    } else {
        0
    };
    let mut reqs: Vec<Req> = Vec::new();
    let mut now = start;
    for (i, &step) in steps.iter().enumerate() {
        let r = next_request(window, now, limit, half, m.newest, step);
        now = r.now;
        reqs.push(r);
        let ctx = format!(
            "N {N} window {window} limit {limit} timeout {} shape {:?} step {i} {r:?}",
            g.occupy_timeout(),
            g.shape()
        );
        let ra = g.retry_after(r.now, r.n);
        prop_assert_eq!(ra, m.retry_after(r.now, r.n), "retry_after: {}", ctx);
        if replay {
            if let Some(wait) = ra {
                // Replay the history on a fresh gate, then ask at now + wait.
                let at = r.now + wait;
                let h = build::<N>(window, limit, timeout, wide);
                for &p in &reqs[..i] {
                    let _ = apply(&h, p);
                }
                prop_assert_eq!(
                    h.try_acquire(at, r.n),
                    Decision::Pass,
                    "retry_after said {} but at {} refused: {}",
                    wait,
                    at,
                    ctx
                );
                if wait > 0 {
                    let h = build::<N>(window, limit, timeout, wide);
                    for &p in &reqs[..i] {
                        let _ = apply(&h, p);
                    }
                    prop_assert_eq!(
                        h.try_acquire(at - 1, r.n),
                        Decision::Block,
                        "retry_after said {} but one tick earlier passed: {}",
                        wait,
                        ctx
                    );
                }
            }
        }
        let got = apply(&g, r);
        let want = apply_model(&mut m, r);
        prop_assert_eq!(got, want, "decision: {}", ctx);
        prop_assert_eq!(g.peek(r.now), m.peek(r.now), "peek: {}", ctx);
        prop_assert_eq!(g.count(r.now), m.count(r.now), "count: {}", ctx);
        for (&id, _) in m.counts.iter() {
            prop_assert!(m.interval(id) <= limit, "over the limit: {}", ctx);
            prop_assert!(m.interval(id.saturating_add(N as u64 - 1)) <= limit);
        }
    }
    Ok(())
}

fn window_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        Just(2),
        Just(3),
        Just(7),
        Just(500),
        Just(641),
        Just(1_000_000_007),
        (1u32..64).prop_map(|k| (1u64 << k) - 1),
        (1u32..64).prop_map(|k| 1u64 << k),
        (1u32..63).prop_map(|k| (1u64 << k) + 1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(u64::MAX / 3),
        Just(u64::MAX / 2 + 1),
        1u64..10_000,
        any::<u64>().prop_map(|v| v.max(1)),
    ]
}

/// Start times: 0, near `u64::MAX`, anywhere.
fn start_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        (0u64..1000).prop_map(|k| u64::MAX - k),
        any::<u64>(),
        (0u64..1000),
        (0u64..1000).prop_map(|k| (1u64 << 33) - 500 + k),
    ]
}

/// Steps in windows (may go backwards), a tick offset, a size class.
type Step = (i64, u64, u8, u64, bool);

fn steps_strategy() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (-4i64..6, any::<u64>(), 0u8..8, any::<u64>(), any::<bool>()),
        1..40,
    )
}

/// The next request after one at `now`: `k` windows on (or a long jump,
/// kept within `2^(T-1) - 1` windows of the gate's newest window
/// `newest` either way: the documented range of ids kept modulo `2^T`;
/// `half == 0`: no long jumps), at an offset in that window (edges often).
fn next_request(
    window: u64,
    now: u64,
    limit: u64,
    half: u64,
    newest: Option<u64>,
    step: Step,
) -> Req {
    let (k, off, class, raw, prio) = step;
    let c0 = now / window;
    let jump: i128 = if half == 0 {
        i128::from(k)
    } else {
        match (raw >> 56) % 8 {
            0 => i128::from(half - 1),
            1 => -i128::from(half - 1),
            2 => i128::from(raw % half),
            3 => -i128::from(raw % half),
            _ => i128::from(k),
        }
    };
    let mut c = i128::from(c0) + jump;
    if let (Some(w), true) = (newest, half > 0) {
        let w = i128::from(w);
        c = c.clamp(w - i128::from(half - 1), w + i128::from(half - 1));
    }
    let last = i128::from(u64::MAX / window);
    let c = c.clamp(0, last) as u64;
    let off = match off % 4 {
        0 => 0,
        1 => window - 1,
        _ => off % window,
    };
    let now = (c * window).saturating_add(off);
    let n = match class {
        0 => 0,
        1 => 1,
        2 => limit,
        3 => limit.saturating_add(1),
        4 => u64::MAX,
        5 => 1u64 << 63,
        _ => raw % (limit + 2),
    };
    Req { now, n, prio }
}

/// The largest limit a word of `wide` holds for this shape, if any.
fn max_limit<const N: usize>(window: u64, timeout: Option<u64>, wide: bool) -> Option<u64> {
    // Binary search on the slot width: a limit fits when the shape is a word.
    let shape_ok = |limit: u64| {
        let g = build::<N>(window, limit, timeout, wide);
        match g.shape() {
            Shape::Word64 { .. } => !wide,
            Shape::Word128 { .. } => wide,
            _ => false,
        }
    };
    if !shape_ok(0) {
        return None;
    }
    let mut lo = 0u64;
    let mut hi = leaparray::MAX_COUNT + 1;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if shape_ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

fn limit_for<const N: usize>(
    window: u64,
    timeout: Option<u64>,
    wide: bool,
    pick: u8,
    raw: u64,
) -> u64 {
    let max = max_limit::<N>(window, timeout, wide).unwrap_or(0);
    match pick % 4 {
        0 => max,
        1 => max.saturating_sub(1),
        2 => raw % 8,
        _ => raw % (max + 1),
    }
}

fn timeout_strategy() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        Just(None),
        Just(Some(0)),
        Just(Some(1)),
        any::<u64>().prop_map(Some),
        (0u64..2000).prop_map(Some),
        Just(Some(u64::MAX)),
    ]
}

#[allow(clippy::too_many_arguments)] // as `check`
fn run_all(
    window: u64,
    start: u64,
    timeout: Option<u64>,
    wide: bool,
    pick: u8,
    raw: u64,
    steps: &[Step],
    replay: bool,
    long: bool,
) -> Result<(), TestCaseError> {
    macro_rules! one {
        ($n:literal) => {{
            let timeout = timeout.map(|t| {
                if t > 2000 && window < 2000 {
                    t % (window * ($n + 1))
                } else {
                    t
                }
            });
            let limit = limit_for::<$n>(window, timeout, wide, pick, raw);
            check::<$n>(window, limit, timeout, wide, start, long, steps, replay)?;
        }};
    }
    one!(1);
    one!(2);
    one!(3);
    one!(4);
    one!(7);
    one!(16);
    one!(31);
    one!(60);
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 1 } else { 64 })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(miri, ignore = "16 gate shapes a case: minutes under Miri")]
    fn wide_inputs_match_the_model(
        window in window_strategy(),
        start in start_strategy(),
        timeout in timeout_strategy(),
        wide in any::<bool>(),
        pick in any::<u8>(),
        raw in any::<u64>(),
        steps in steps_strategy(),
    ) {
        run_all(window, start, timeout, wide, pick, raw, &steps, false, false)?;
        run_all(window, start, timeout, wide, pick, raw, &steps, false, true)?;
    }

    #[test]
    #[cfg_attr(miri, ignore = "16 gate shapes a case: minutes under Miri")]
    fn retry_after_replayed_is_exact(
        window in window_strategy(),
        start in start_strategy(),
        timeout in timeout_strategy(),
        wide in any::<bool>(),
        pick in any::<u8>(),
        raw in any::<u64>(),
        steps in prop::collection::vec(
            (-4i64..6, any::<u64>(), 0u8..8, any::<u64>(), any::<bool>()),
            1..12,
        ),
    ) {
        run_all(window, start, timeout, wide, pick, raw, &steps, true, true)?;
    }
}

/// The shape table of the `gate` module docs: with `b` the number of bits
/// of the limit and `F = min(ceil(timeout / window), N)`, `Word64` when
/// `(N + F) * b + 33 <= 64`, else `Word128` when `(N + F) * b + 33 <= 128`
/// (x86-64, AArch64), else `Buckets`.
#[test]
fn shapes_follow_the_documented_formula() {
    fn one<const N: usize>(bad: &mut Vec<String>) {
        for timeout in [0u64, 10, 11, 25, 1_000] {
            for limit in [0u64, 1, 2, 3, 7, 8, 255, 1_023, 32_767, (1 << 31) - 1] {
                let g = Gate::<N>::new(nz(10), limit).with_occupy_timeout(timeout);
                let f = timeout.div_ceil(10).min(N as u64);
                let b = u64::from(64 - limit.leading_zeros()).max(1);
                let bits = (N as u64 + f) * b + 33;
                let want = if bits <= 64 {
                    "Word64"
                } else if bits <= 128 {
                    "Word128"
                } else {
                    "Buckets"
                };
                let got = match g.shape() {
                    Shape::Word64 { .. } => "Word64",
                    Shape::Word128 { .. } => "Word128",
                    _ => "Buckets",
                };
                if got != want {
                    bad.push(format!(
                        "Gate<{N}> limit {limit} timeout {timeout}: {got}, the table says {want}"
                    ));
                }
            }
        }
    }
    let mut bad = Vec::new();
    one::<1>(&mut bad);
    one::<2>(&mut bad);
    one::<10>(&mut bad);
    one::<31>(&mut bad);
    one::<32>(&mut bad);
    one::<40>(&mut bad);
    one::<95>(&mut bad);
    one::<100>(&mut bad);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---- real threads: every outcome must be explained by some sequential
// order of the same calls (linearizability), checked by brute force over
// the interleavings against the model; the final state must match too.

/// All merges of two sequences of lengths `a` and `b` (true: thread 0).
fn merges(a: usize, b: usize) -> Vec<Vec<bool>> {
    if a == 0 {
        return vec![vec![false; b]];
    }
    if b == 0 {
        return vec![vec![true; a]];
    }
    let mut out = Vec::new();
    for mut m in merges(a - 1, b) {
        m.insert(0, true);
        out.push(m);
    }
    for mut m in merges(a, b - 1) {
        m.insert(0, false);
        out.push(m);
    }
    out
}

fn linearizable_round<const N: usize>(rng: &mut Rng) -> Result<(), String> {
    let window = [1u64, 3, 10][rng.below(3) as usize];
    let limit = 1 + rng.below(5);
    let timeout = [0u64, window, 2 * window, 3 * window][rng.below(4) as usize];
    let wide = rng.below(4) == 0;
    let g = build::<N>(window, limit, Some(timeout), wide);
    if g.shape() == Shape::Buckets {
        return Ok(());
    }
    let mut m = GateModel::<N>::new(window, limit, g.occupy_timeout());
    let base = 1_000 * window + rng.below(window);
    let req = |rng: &mut Rng| Req {
        now: (base + rng.below(5 * window)).saturating_sub(2 * window),
        n: [0, 1, 1, 1, 2, 3][rng.below(6) as usize],
        prio: rng.below(2) == 0,
    };
    let prefix: Vec<Req> = (0..rng.below(4)).map(|_| req(rng)).collect();
    for &r in &prefix {
        let (a, b) = (apply(&g, r), apply_model(&mut m, r));
        if a != b {
            return Err(format!("sequential prefix {r:?}: {a:?} vs {b:?}"));
        }
    }
    let ops: [Vec<Req>; 2] = [
        (0..3).map(|_| req(rng)).collect(),
        (0..3).map(|_| req(rng)).collect(),
    ];
    let barrier = std::sync::Barrier::new(2);
    let got: Vec<Vec<PriorityDecision>> = std::thread::scope(|s| {
        let hs: Vec<_> = ops
            .iter()
            .map(|o| {
                let (g, barrier) = (&g, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    o.iter().map(|&r| apply(g, r)).collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let probes: Vec<u64> = (0..8)
        .map(|k| (base + k * window).saturating_sub(3 * window))
        .collect();
    let observed: Vec<(u64, u64, Option<u64>)> = probes
        .iter()
        .map(|&p| (g.peek(p), g.count(p), g.retry_after(p, 1)))
        .collect();
    for order in merges(3, 3) {
        let mut mm = m.clone();
        let (mut i, mut j) = (0, 0);
        let mut ok = true;
        for &first in &order {
            let (r, want) = if first {
                i += 1;
                (ops[0][i - 1], got[0][i - 1])
            } else {
                j += 1;
                (ops[1][j - 1], got[1][j - 1])
            };
            if apply_model(&mut mm, r) != want {
                ok = false;
                break;
            }
        }
        if ok {
            let state: Vec<_> = probes
                .iter()
                .map(|&p| (mm.peek(p), mm.count(p), mm.retry_after(p, 1)))
                .collect();
            if state == observed {
                return Ok(());
            }
        }
    }
    Err(format!(
        "no sequential order explains it: N {N} window {window} limit {limit} timeout {timeout} wide {wide}\n prefix {prefix:?}\n ops {ops:?}\n got {got:?}\n state {observed:?}"
    ))
}

#[test]
fn threads_are_linearizable() {
    let rounds: u64 = std::env::var("REVIEW_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 3 } else { 2_000 });
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for k in 0..rounds {
        let r = match k % 3 {
            0 => linearizable_round::<1>(&mut rng),
            1 => linearizable_round::<2>(&mut rng),
            _ => linearizable_round::<3>(&mut rng),
        };
        if let Err(e) = r {
            panic!("round {k}: {e}");
        }
    }
}

/// Ids modulo `2^T`, "stricter, never looser": a single caller whose clock
/// only moves forward (no caller ever lags the newest window), with idles
/// of about `2^(T-1)`, `2^T` and `2^T k` windows (the aliases). Each
/// admitted permit is put in its true window (the caller's own for a
/// `Pass`, that of `now + t` for a `Wait(t)`): no `N` consecutive true
/// windows may hold more than the limit.
#[test]
fn aliased_ids_are_never_looser_than_the_limit() {
    fn one<const N: usize>(rng: &mut Rng) -> Result<(), String> {
        let window = [1u64, 2, 3][rng.below(3) as usize];
        let limit = 1 + rng.below(6);
        let timeout = [0u64, window, 2 * window][rng.below(3) as usize];
        let wide = rng.below(3) == 0;
        let g = build::<N>(window, limit, Some(timeout), wide);
        let t = match g.shape() {
            Shape::Word64 { id_bits } | Shape::Word128 { id_bits } => id_bits,
            _ => return Ok(()),
        };
        if t >= 62 {
            return Ok(()); // no room below u64::MAX to alias
        }
        let lap = 1u64 << t;
        let mut now = rng.below(lap);
        let mut truth: std::collections::BTreeMap<u64, u64> = Default::default();
        let mut log = Vec::new();
        for _ in 0..30 {
            let jump_windows = match rng.below(8) {
                0 => lap,
                1 => lap - 1 - rng.below(3),
                2 => lap + 1 + rng.below(3),
                3 => lap / 2 + rng.below(3),
                4 => lap / 2 - 1 - rng.below(3),
                5 => 2 * lap + rng.below(2 * N as u64),
                _ => rng.below(3),
            };
            let Some(next) = now.checked_add(jump_windows * window + rng.below(window)) else {
                break;
            };
            now = next;
            let n = 1 + rng.below(limit);
            let prio = rng.below(2) == 0;
            let d = apply(&g, Req { now, n, prio });
            log.push((now / window, n, prio, d));
            let at = match d {
                PriorityDecision::Pass => now / window,
                PriorityDecision::Wait(t) => (now + t) / window,
                PriorityDecision::Block => continue,
            };
            *truth.entry(at).or_default() += n;
            for (&w, _) in truth.range(at.saturating_sub(N as u64 - 1)..=at) {
                let sum: u64 = truth
                    .range(w..w.saturating_add(N as u64))
                    .map(|(_, c)| c)
                    .sum();
                if sum > limit {
                    return Err(format!(
                        "N {N} window {window} limit {limit} timeout {timeout} T {t}: windows {w}..{} hold {sum}\n{log:?}",
                        w + N as u64
                    ));
                }
            }
        }
        Ok(())
    }
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for k in 0..if cfg!(miri) { 4 } else { 3_000 } {
        let r = match k % 4 {
            0 => one::<1>(&mut rng),
            1 => one::<2>(&mut rng),
            2 => one::<3>(&mut rng),
            _ => one::<5>(&mut rng),
        };
        if let Err(e) = r {
            panic!("round {k}: {e}");
        }
    }
}

/// The state both `record` tests start from: `Gate<2>` with 10-bit slots
/// (`2^b - 1 = 1_023`), limit 10, window 10. Window 0 holds 1, window 1
/// holds 5, 5 are borrowed into window 2 (a `Wait`), and a `record` fills
/// the interval ending at window 1 to exactly 1_023 (returning `Ok`).
/// When window 2 comes, the interval ending at it holds 1_022 + 5 = 1_027
/// > 2^b - 1.
fn recorded_to_the_brim() -> Gate<2> {
    let g = Gate::<2>::new(nz(10), 10);
    assert_eq!(g.shape(), Shape::Word64 { id_bits: 33 }); // N + F = 3 slots of 10 bits
    assert_eq!(g.try_acquire(0, 1), Decision::Pass); // window 0: 1
    assert_eq!(g.try_acquire(10, 5), Decision::Pass); // window 1: 5
                                                      // 1 + 5 + 5 > 10: borrows window 2, where (1, 2] holds 5 + 5 <= 10.
    assert_eq!(g.try_acquire_prioritized(11, 5), PriorityDecision::Wait(9));
    // Interval (0, 1] = 1 + 5 + 1_017 = 1_023 = 2^b - 1 would fit, but
    // (1, 2] would hold 5 + 1_017 + 5 = 1_027 once the word slides: before
    // the fix this returned `Ok` and the slide overflowed the total slot.
    let _ = g.record(10, 1_017);
    g
}

/// The fix: a record saturates where an interval containing its window
/// (including those that borrowed permits join) would pass `2^b - 1`.
#[test]
fn a_record_saturates_where_borrowed_permits_would_overflow() {
    let g = Gate::<2>::new(nz(10), 10);
    assert_eq!(g.try_acquire(0, 1), Decision::Pass);
    assert_eq!(g.try_acquire(10, 5), Decision::Pass);
    assert_eq!(g.try_acquire_prioritized(11, 5), PriorityDecision::Wait(9));
    assert_eq!(g.record(10, 1_017), Err(AddError::Saturated));
    assert_eq!(g.count(10), 1 + 5 + 1_013);
    assert_eq!(g.count(20), 5 + 1_013 + 5, "(1, 2] at 2^b - 1 exactly");
    assert_eq!(g.record(20, 1), Err(AddError::Saturated));
    assert_eq!(g.count(20), 1_023);
}

/// GUARANTEES section 6: "No input makes any public function panic".
/// `WordGate::record` computes `slot_max - live_total` after sliding the
/// word to window 2, where the live total is 1_027 > 1_023: in a debug
/// build (overflow checks) `Gate::record` panics with "attempt to
/// subtract with overflow" (src/gate/packed/decide.rs, `WordGate::record`).
#[test]
fn record_after_borrowed_permits_slide_in_does_not_panic() {
    let g = recorded_to_the_brim();
    // A record of nothing in window 2: must not panic.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| g.record(20, 0)));
    assert!(r.is_ok(), "Gate::record(20, 0) panicked");
}

/// The same underflow without overflow checks (release): `room` wraps to
/// about 2^64, so `record` adds its `n` unchecked to the newest window's
/// 10-bit slot; 5 + 1_019 = 1_024 carries out of it, and the 5 permits the
/// gate lent to window 2 vanish from the word. At window 3 the gate then
/// admits 10 more: the interval (2, 3] holds 15 admitted permits (the 5
/// borrowed and these 10, the recorded ones not even counted), over the
/// limit of 10. (In a debug build the `record` panics instead.)
#[test]
fn record_never_erases_admitted_permits() {
    let g = recorded_to_the_brim();
    let _ = g.record(20, 1_019);
    // Window 2 holds the 5 permits the gate admitted (borrowed) at least.
    assert!(g.count(20) >= 5, "count(20) = {}", g.count(20));
    assert_eq!(
        g.try_acquire(30, 10),
        Decision::Block,
        "(2, 3] would hold the 5 borrowed permits and 10 more, limit 10"
    );
}
