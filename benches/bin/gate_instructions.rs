//! Instructions per `Gate<2>::try_acquire` and per governor `check()`,
//! counted by callgrind (repeatable where timings on a shared machine are
//! not): `bash benches/gate_instructions.sh` builds it with cargo's
//! default release profile (16 codegen units, no LTO: what users build)
//! and with thin LTO, and prints the counts. Not criterion: one decision
//! per call of a function that is never inlined, so its inclusive count
//! is one decision plus the call.
//!
//! The workloads are `benches/gate.rs`'s: a `Gate<2>` of 1,000 per two
//! windows of 500 ticks, `now` advancing two ticks per call (250 calls per
//! window, so windows roll over as in use; every call admitted), against
//! governor 0.10's `check()` with a `FakeRelativeClock` and a quota it
//! never reaches; refused: a gate of 10 and a governor of 10 per second,
//! both used up. `gate_wide_*`: the same with a limit of 1,000,000 (one
//! 128-bit word). `cargo run --release -p leaparray-benches --bin
//! gate_instructions -- WORKLOAD` runs one of `gate_admit`,
//! `governor_admit`, `gate_refuse`, `governor_refuse`; `time` times the
//! four instead (nanoseconds per call, the median of 31 rounds of
//! 1,000,000 calls each, the four taking turns in every round, so the
//! ratios come from one run).

use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use leaparray::gate::Shape;
use leaparray::{Decision, Gate};

type Governor = RateLimiter<NotKeyed, InMemoryState, FakeRelativeClock, NoOpMiddleware<Nanos>>;

/// Decisions per run.
const CALLS: u64 = 1_000_000;
const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();

#[inline(never)]
fn gate_once(g: &Gate<2>, now: u64, n: u64) -> Decision {
    g.try_acquire(now, n)
}

#[inline(never)]
fn governor_once(g: &Governor) -> bool {
    g.check().is_ok()
}

fn main() {
    // `cargo bench` would pass `--bench`; the workload is the first other word.
    let workload = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_default();
    let mut admitted = 0u64;
    match workload.as_str() {
        "gate_admit" | "gate_refuse" | "gate_wide_admit" | "gate_wide_refuse" => {
            let refuse = workload.ends_with("refuse");
            let g = if workload.starts_with("gate_wide") {
                // Too large a limit for a 64-bit word (at most 1,023).
                let g = Gate::<2>::new(WINDOW, 1_000_000);
                assert!(matches!(g.shape(), Shape::Word128 { .. }));
                g
            } else {
                let g = Gate::<2>::new(WINDOW, if refuse { 10 } else { 1_000 });
                assert!(matches!(g.shape(), Shape::Word64 { .. }));
                g
            };
            if refuse {
                assert_eq!(g.try_acquire(0, g.limit()), Decision::Pass);
            }
            let mut now = 0u64;
            for _ in 0..CALLS {
                if !refuse {
                    now += 2;
                }
                let at = if refuse { 100 } else { now };
                admitted += u64::from(gate_once(&g, black_box(at), black_box(1)) == Decision::Pass);
            }
        }
        "governor_admit" | "governor_refuse" => {
            let refuse = workload == "governor_refuse";
            let quota = if refuse {
                Quota::per_second(NonZeroU32::new(10).unwrap())
            } else {
                Quota::per_second(NonZeroU32::MAX)
            };
            let g = RateLimiter::direct_with_clock(quota, FakeRelativeClock::default());
            if refuse {
                while g.check().is_ok() {}
            }
            for _ in 0..CALLS {
                admitted += u64::from(governor_once(black_box(&g)));
            }
        }
        "time" => {
            time();
            return;
        }
        other => {
            eprintln!("workload {other:?}: one of gate_admit, gate_wide_admit, governor_admit, gate_refuse, gate_wide_refuse, governor_refuse");
            std::process::exit(2);
        }
    }
    println!("{workload} {CALLS} {admitted}");
}

/// Nanoseconds per call of each workload: medians of rounds in which the
/// workloads take turns.
fn time() {
    const ROUNDS: usize = 31;
    let admit = Gate::<2>::new(WINDOW, 1_000);
    let refuse = Gate::<2>::new(WINDOW, 10);
    assert_eq!(refuse.try_acquire(0, 10), Decision::Pass);
    let gov_admit = RateLimiter::direct_with_clock(
        Quota::per_second(NonZeroU32::MAX),
        FakeRelativeClock::default(),
    );
    let gov_refuse = RateLimiter::direct_with_clock(
        Quota::per_second(NonZeroU32::new(10).unwrap()),
        FakeRelativeClock::default(),
    );
    while gov_refuse.check().is_ok() {}
    let mut now = 0u64;
    let mut ns: [Vec<f64>; 4] = Default::default();
    let mut passed = [0u64; 4];
    for _ in 0..ROUNDS {
        let t = std::time::Instant::now();
        for _ in 0..CALLS {
            now += 2;
            passed[0] +=
                u64::from(gate_once(&admit, black_box(now), black_box(1)) == Decision::Pass);
        }
        ns[0].push(t.elapsed().as_nanos() as f64 / CALLS as f64);
        let t = std::time::Instant::now();
        for _ in 0..CALLS {
            passed[1] += u64::from(governor_once(black_box(&gov_admit)));
        }
        ns[1].push(t.elapsed().as_nanos() as f64 / CALLS as f64);
        let t = std::time::Instant::now();
        for _ in 0..CALLS {
            passed[2] +=
                u64::from(gate_once(&refuse, black_box(100), black_box(1)) == Decision::Pass);
        }
        ns[2].push(t.elapsed().as_nanos() as f64 / CALLS as f64);
        let t = std::time::Instant::now();
        for _ in 0..CALLS {
            passed[3] += u64::from(governor_once(black_box(&gov_refuse)));
        }
        ns[3].push(t.elapsed().as_nanos() as f64 / CALLS as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[ROUNDS / 2]
    };
    let m: Vec<f64> = ns.iter_mut().map(median).collect();
    println!(
        "admitted: gate {:.2} ns, governor {:.2} ns, {:.2}x; refused: gate {:.2} ns, governor {:.2} ns, {:.2}x (passed {:?} of {} each)",
        m[0],
        m[1],
        m[0] / m[1],
        m[2],
        m[3],
        m[2] / m[3],
        passed,
        CALLS * ROUNDS as u64
    );
}
