//! Property test: the array against a brute-force model of its documented
//! semantics (`tests/common/array_model.rs`, shared with the fuzz targets),
//! with time jumping forward and backward, late adds, bad counter indices,
//! huge counts and extreme times.
//!
//! The model compares window ids modulo 2^48 (2^24 for `Narrow`) exactly as
//! documented, but the generator still keeps every time within the width's
//! window range of every other (a jump that would leave it is skipped), so
//! these cases stay inside the contract; `fuzz/` covers the rest. With large
//! windows that still reaches time 0 and `u64::MAX` in one run.

use std::num::NonZeroU64;

use leaparray::array::{Narrow, Wide, Width};
use leaparray::{LeapArray, MAX_COUNT};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// Shared with `fuzz/`, which uses all of it.
#[allow(dead_code)]
#[path = "common/array_model.rs"]
mod array_model;
use array_model::{check, ArrayModel, Op};

const N: usize = 3;
/// Steps per case (fewer under Miri, which is slow).
const STEPS: usize = if cfg!(miri) { 20 } else { 120 };
const C: usize = 2;

#[derive(Debug, Clone)]
enum Step {
    /// Move the clock by this many ticks (negative: backwards).
    Shift(i64),
    /// Set the clock to an extreme or arbitrary value.
    Jump(u64),
    Add {
        counter: usize,
        n: u64,
    },
    /// An add at `clock - lag`: a late add from a lagging thread.
    LateAdd {
        lag: u64,
        counter: usize,
        n: u64,
    },
    Sub {
        counter: usize,
        n: u64,
    },
    Max {
        counter: usize,
        v: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let count = prop_oneof![
        4 => 0u64..5,
        1 => Just(MAX_COUNT),
        1 => Just(MAX_COUNT - 1),
        1 => Just(Narrow::MAX_COUNT),
        1 => Just(Narrow::MAX_COUNT + 1),
        1 => Just(u64::MAX),
    ];
    prop_oneof![
        6 => (-3_000i64..3_000).prop_map(Step::Shift),
        1 => prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()].prop_map(Step::Jump),
        8 => (0usize..C + 1, count.clone()).prop_map(|(counter, n)| Step::Add { counter, n }),
        3 => (0u64..5_000, 0usize..C, count.clone()).prop_map(|(lag, counter, n)| Step::LateAdd { lag, counter, n }),
        2 => (0usize..C + 1, count.clone()).prop_map(|(counter, n)| Step::Sub { counter, n }),
        2 => (0usize..C + 1, count).prop_map(|(counter, v)| Step::Max { counter, v }),
    ]
}

fn window_len() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..1_000, 1 => Just(1u64), 1 => Just(u64::MAX / 2), 1 => any::<u64>().prop_map(|w| w.max(1))]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 512 },
        // Miri runs isolated (no file system for the regression file).
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn matches_the_model(window in window_len(), start in any::<u64>(), probe in any::<u64>(), steps in prop::collection::vec(step(), 1..STEPS)) {
        let a = LeapArray::<N, C>::new(NonZeroU64::new(window).unwrap());
        run::<Wide>(&a, window, start, probe, steps)?;
    }

    /// The same with 32-bit words, within their narrower ranges.
    #[test]
    fn narrow_matches_the_model(window in window_len(), start in any::<u64>(), probe in any::<u64>(), steps in prop::collection::vec(step(), 1..STEPS)) {
        let a = LeapArray::<N, C, Narrow>::new_narrow(NonZeroU64::new(window).unwrap());
        run::<Narrow>(&a, window, start, probe, steps)?;
    }
}

/// Drives the array and the model with the same steps, keeping every time
/// within the width's window range, and compares every result and query.
fn run<W: Width>(
    a: &LeapArray<N, C, W>,
    window: u64,
    start: u64,
    probe: u64,
    steps: Vec<Step>,
) -> Result<(), TestCaseError> {
    let mut m = ArrayModel::<N, C>::new::<W>(window);
    let mut clock = start % (1 << 50);
    let (mut lo, mut hi) = (clock / window, clock / window);
    // Keeps every time within the width's window range of every other.
    let mut in_range = |t: u64| {
        let id = t / window;
        let (l, h) = (lo.min(id), hi.max(id));
        let ok = h - l < W::WINDOW_RANGE - 1;
        if ok {
            (lo, hi) = (l, h);
        }
        ok
    };
    for s in steps {
        match s {
            Step::Shift(d) => {
                let t = clock.saturating_add_signed(d);
                if in_range(t) {
                    clock = t;
                }
            }
            Step::Jump(t) => {
                if in_range(t) {
                    clock = t;
                }
            }
            Step::Add { counter, n } => {
                prop_assert_eq!(
                    a.add(clock, counter, n),
                    m.update(clock, counter, Op::Add(n)),
                    "add at {}",
                    clock
                );
            }
            Step::Sub { counter, n } => {
                prop_assert_eq!(
                    a.sub(clock, counter, n),
                    m.update(clock, counter, Op::Sub(n)),
                    "sub at {}",
                    clock
                );
            }
            Step::Max { counter, v } => {
                prop_assert_eq!(
                    a.update_max(clock, counter, v),
                    m.update(clock, counter, Op::Max(v)),
                    "max at {}",
                    clock
                );
            }
            Step::LateAdd { lag, counter, n } => {
                let t = clock.saturating_sub(lag);
                if !in_range(t) {
                    continue;
                }
                prop_assert_eq!(
                    a.add(t, counter, n),
                    m.update(t, counter, Op::Add(n)),
                    "late add at {}",
                    t
                );
            }
        }
        check(a, &m, clock, probe);
    }
    Ok(())
}
