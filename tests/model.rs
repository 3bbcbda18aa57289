//! Property test: the array against a brute-force model of its documented
//! semantics, with time jumping forward and backward, late adds, bad counter
//! indices, huge counts and extreme times.
//!
//! The model keeps full 64-bit window ids; the array stores them modulo
//! 2^48, which is exact while every time used is within 2^47 windows of every
//! other (4,000+ years of 1 ms windows). The generator keeps to that range:
//! a jump that would leave it is skipped. With large windows that still
//! reaches time 0 and `u64::MAX` in one run.

use std::num::NonZeroU64;

use leaparray::{AddError, LeapArray, Narrow, SpanError, Wide, Width, Window, MAX_COUNT};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const N: usize = 3;
/// Steps per case (fewer under Miri, which is slow).
const STEPS: usize = if cfg!(miri) { 40 } else { 120 };
const C: usize = 2;

/// The semantics, written the slow and obvious way: each bucket holds at
/// most one window (its full 64-bit id) and its counts.
#[derive(Debug)]
struct Model {
    window: u64,
    /// The largest count of the width under test.
    max: u64,
    buckets: [Option<(u64, [u64; C])>; N],
}

impl Model {
    fn new(window: u64, max: u64) -> Self {
        Model {
            window,
            max,
            buckets: [None; N],
        }
    }

    fn add(&mut self, now: u64, counter: usize, n: u64) -> Result<(), AddError> {
        let max = self.max;
        self.update(now, counter, |have| {
            let sum = have as u128 + n as u128;
            if sum > max as u128 {
                (max, true)
            } else {
                (sum as u64, false)
            }
        })
    }

    fn sub(&mut self, now: u64, counter: usize, n: u64) -> Result<(), AddError> {
        self.update(now, counter, |have| match have.checked_sub(n) {
            Some(v) => (v, false),
            None => (0, true),
        })
    }

    fn max(&mut self, now: u64, counter: usize, v: u64) -> Result<(), AddError> {
        let max = self.max;
        self.update(now, counter, |have| {
            if v > max {
                (max, true)
            } else {
                (have.max(v), false)
            }
        })
    }

    fn update(
        &mut self,
        now: u64,
        counter: usize,
        op: impl Fn(u64) -> (u64, bool),
    ) -> Result<(), AddError> {
        if counter >= C {
            return Err(AddError::NoSuchCounter);
        }
        let id = now / self.window;
        let slot = &mut self.buckets[(id % N as u64) as usize];
        match slot {
            Some((held, _)) if *held > id => return Err(AddError::Stale),
            Some((held, _)) if *held == id => {}
            _ => *slot = Some((id, [0; C])),
        }
        let counts = &mut slot.as_mut().unwrap().1;
        let (v, saturated) = op(counts[counter]);
        counts[counter] = v;
        if saturated {
            Err(AddError::Saturated)
        } else {
            Ok(())
        }
    }

    fn get(&self, id: u64) -> Option<Window<C>> {
        match self.buckets[(id % N as u64) as usize] {
            Some((held, counts)) if held == id => Some(Window {
                start: id * self.window,
                counts,
            }),
            _ => None,
        }
    }

    /// Live ids at `now`: `now/window - N < id <= now/window`, id >= 0.
    fn live(&self, now: u64, windows: u64) -> Vec<u64> {
        let cur = now / self.window;
        (0..windows)
            .rev()
            .filter_map(|back| cur.checked_sub(back))
            .collect()
    }

    fn windows(&self, now: u64) -> Vec<Window<C>> {
        self.live(now, N as u64)
            .into_iter()
            .filter_map(|id| self.get(id))
            .collect()
    }

    fn sum_over(&self, now: u64, windows: u64, counter: usize) -> u64 {
        self.live(now, windows)
            .into_iter()
            .filter_map(|id| self.get(id))
            .map(|w| w.counts[counter])
            .sum()
    }
}

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

fn check_queries<W: Width>(a: &LeapArray<N, C, W>, m: &Model, now: u64) {
    let expected = m.windows(now);
    assert_eq!(
        a.windows(now).as_slice(),
        expected.as_slice(),
        "windows at {now}"
    );
    for counter in 0..C {
        assert_eq!(
            a.sum(now, counter),
            m.sum_over(now, N as u64, counter),
            "sum at {now}"
        );
    }
    assert_eq!(a.sum(now, C), 0);
    let sums: [u64; C] = std::array::from_fn(|c| m.sum_over(now, N as u64, c));
    assert_eq!(a.sums(now), sums);
    assert_eq!(a.window_at(now), m.get(now / m.window));
    let cur = now / m.window;
    assert_eq!(a.previous(now), cur.checked_sub(1).and_then(|id| m.get(id)));
    assert_eq!(
        a.head(now),
        cur.checked_sub(N as u64 - 1).and_then(|id| m.get(id))
    );
    let only_newer = a.windows_where(now, |s| s >= m.window.saturating_mul(cur.saturating_sub(1)));
    let want: Vec<_> = expected
        .iter()
        .copied()
        .filter(|w| w.start >= m.window.saturating_mul(cur.saturating_sub(1)))
        .collect();
    assert_eq!(only_newer.as_slice(), want.as_slice());
    for k in 1..=N as u64 {
        match m.window.checked_mul(k) {
            Some(span) => assert_eq!(a.sum_span(now, span, 1), Ok(m.sum_over(now, k, 1))),
            None => assert!(a.sum_span(now, u64::MAX, 1).is_err()),
        }
    }
    if m.window > 1 {
        assert_eq!(
            a.sum_span(now, m.window + 1, 0),
            Err(SpanError::NotMultiple)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 512 },
        // Miri runs isolated (no file system for the regression file).
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn matches_the_model(window in window_len(), start in any::<u64>(), steps in prop::collection::vec(step(), 1..STEPS)) {
        let a = LeapArray::<N, C>::new(NonZeroU64::new(window).unwrap());
        run::<Wide>(&a, window, start, steps)?;
    }

    /// The same with 32-bit words, within their narrower ranges.
    #[test]
    fn narrow_matches_the_model(window in window_len(), start in any::<u64>(), steps in prop::collection::vec(step(), 1..STEPS)) {
        let a = LeapArray::<N, C, Narrow>::new_narrow(NonZeroU64::new(window).unwrap());
        run::<Narrow>(&a, window, start, steps)?;
    }
}

/// Drives the array and the model with the same steps, keeping every time
/// within the width's window range, and compares every result and query.
fn run<W: Width>(
    a: &LeapArray<N, C, W>,
    window: u64,
    start: u64,
    steps: Vec<Step>,
) -> Result<(), TestCaseError> {
    let mut m = Model::new(window, W::MAX_COUNT);
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
                    m.add(clock, counter, n),
                    "add at {}",
                    clock
                );
            }
            Step::Sub { counter, n } => {
                prop_assert_eq!(
                    a.sub(clock, counter, n),
                    m.sub(clock, counter, n),
                    "sub at {}",
                    clock
                );
            }
            Step::Max { counter, v } => {
                prop_assert_eq!(
                    a.update_max(clock, counter, v),
                    m.max(clock, counter, v),
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
                    m.add(t, counter, n),
                    "late add at {}",
                    t
                );
            }
        }
        check_queries(a, &m, clock);
    }
    Ok(())
}
