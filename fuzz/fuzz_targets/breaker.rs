//! `CircuitBreaker<2>` with any configuration (valid or not), a clock that
//! moves forward by any amount (to `u64::MAX`), each call's time up to 4
//! windows behind it (a caller that read the clock and stalled), requests
//! whose permits are reported with any RT and outcome, reported out of
//! order, or lost.
//!
//! - Always: no panic (overflow checks on); a configuration that
//!   `validate` refuses is refused by `try_new` with the same error, and
//!   one it accepts builds a breaker.
//! - While every time in use is within 2^46 windows of the first (the
//!   statistics' window ids are exact, `GUARANTEES.md` section 5) and at
//!   least one recovery timeout before `u64::MAX` (no deadline saturated): every
//!   decision, report, transition, snapshot, count and uncounted report is
//!   that of
//!   `BreakerModel` (`../tests/common/breaker_model.rs`, shared with the
//!   proptest in `tests/breaker.rs`), and a half-open breaker has granted
//!   at most `k` probes and taken no more good reports than it granted.
#![no_main]

use arbitrary::Arbitrary;
use leaparray::breaker::{CircuitBreaker, Config, Outcome, Permit, Ratio, State, Strategy};
use leaparray_fuzz::breaker::{BreakerModel, ModelPermit};
use leaparray_fuzz::input::Count;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Rule {
    Slow { max_rt: Count, num: u32, den: u32 },
    ErrorRatio { num: u32, den: u32 },
    ErrorCount { max_errors: Count },
}

#[derive(Arbitrary, Debug)]
struct Input {
    rule: Rule,
    stat_interval: Count,
    min_requests: Count,
    recovery_timeout: Count,
    probes: u16,
    probe_timeout: Count,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Acquire {
        dt: Count,
        lag: u8,
    },
    Report {
        pick: u8,
        dt: Count,
        lag: u8,
        rt: Count,
        error: bool,
    },
    Lose {
        pick: u8,
    },
}

fuzz_target!(|input: Input| {
    let strategy = match input.rule {
        Rule::Slow { max_rt, num, den } => Strategy::SlowRequestRatio {
            max_rt: max_rt.value(),
            max_ratio: Ratio::new(num, den),
        },
        Rule::ErrorRatio { num, den } => Strategy::ErrorRatio {
            max_ratio: Ratio::new(num, den),
        },
        Rule::ErrorCount { max_errors } => Strategy::ErrorCount {
            max_errors: max_errors.value(),
        },
    };
    let config = Config::new(
        strategy,
        input.stat_interval.value(),
        input.recovery_timeout.value(),
    )
    .with_min_requests(input.min_requests.value())
    .with_probes(input.probes)
    .with_probe_timeout(input.probe_timeout.value());
    // A refused configuration: `try_new` returns `validate`'s error (`new`
    // would panic with it: `tests/breaker.rs`).
    let b = match CircuitBreaker::<2>::try_new(config) {
        Ok(b) => b,
        Err(e) => {
            assert_eq!(CircuitBreaker::<2>::validate(&config), Err(e));
            return;
        }
    };
    assert_eq!(CircuitBreaker::<2>::validate(&config), Ok(()));
    let mut now = 0u64;
    let mut m = BreakerModel::<2>::new(config);
    let mut held: Vec<(Permit<_>, ModelPermit)> = Vec::new();
    let window = b.window();
    // The times the model is compared at: window ids exact, and no
    // deadline saturated at `u64::MAX` (a trip in the last recovery
    // timeout of time opens until `u64::MAX`, so the breaker may half-open
    // and close again in the very window of the trip, whose earlier
    // reports it then counts: `GUARANTEES.md`, section 5).
    let compared =
        |now: u64| now / window < 1 << 46 && now.checked_add(config.recovery_timeout).is_some();
    // This call's time: `lag` 64ths of 4 windows behind the clock.
    let behind = |now: u64, lag: u8| now.saturating_sub(window.saturating_mul(u64::from(lag)) / 16);
    // The latest time any call used: `counts` is compared there (the
    // model keeps no retired window, so no older time).
    let mut hi = 0u64;
    for op in input.ops {
        match op {
            Op::Acquire { dt, lag } => {
                now = now.saturating_add(dt.value());
                let t = behind(now, lag);
                hi = hi.max(t);
                let got = b.try_acquire(t);
                let (want, _) = m.try_acquire(t);
                if compared(now) {
                    assert_eq!(got.as_ref().map(Permit::is_probe), want.map(|p| p.probe));
                }
                if let (Some(g), Some(w)) = (got, want) {
                    held.push((g, w));
                }
            }
            Op::Report {
                pick,
                dt,
                lag,
                rt,
                error,
            } if !held.is_empty() => {
                now = now.saturating_add(dt.value());
                let t = behind(now, lag);
                hi = hi.max(t);
                let (p, mp) = held.swap_remove(usize::from(pick) % held.len());
                let outcome = if error {
                    Outcome::Error
                } else {
                    Outcome::Success
                };
                let got = b.report(t, p, rt.value(), outcome);
                let want = m.report(t, mp, rt.value(), outcome);
                if compared(now) {
                    assert_eq!(got, want);
                }
            }
            Op::Lose { pick } if !held.is_empty() => {
                drop(held.swap_remove(usize::from(pick) % held.len()));
            }
            _ => {}
        }
        let s = b.snapshot();
        if s.state == State::HalfOpen {
            assert!(s.probes_good <= s.probes_granted && s.probes_granted <= config.probes);
        }
        if compared(now) {
            assert_eq!(
                (
                    s.state,
                    s.transitions,
                    s.time,
                    s.probes_granted,
                    s.probes_good
                ),
                (m.state, m.transitions, m.time, m.granted, m.good)
            );
            assert_eq!(b.counts(hi), m.counts(hi));
            assert_eq!(b.uncounted_reports(), m.uncounted);
        } else {
            return; // out of the compared range: only "no panic" from here
        }
    }
});
