//! `LeapArray<3, 2>` (64-bit words) and `LeapArray<3, 2, Narrow>` against the
//! model: arbitrary window lengths, times anywhere (backwards, far
//! forwards, `0`, `u64::MAX`), late adds, counts up to `u64::MAX`, counter
//! indices out of range. Every result and every query must match.
#![no_main]

use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::array::{Narrow, Wide, Width};
use leaparray::LeapArray;
use leaparray_fuzz::array::{check, ArrayModel, Op};
use leaparray_fuzz::input::{Count, Counter, Move, Time, WindowLen};
use libfuzzer_sys::fuzz_target;

const N: usize = 3;
const C: usize = 2;

#[derive(Arbitrary, Debug)]
struct Input {
    window: WindowLen,
    narrow: bool,
    start: Time,
    probe: Time,
    steps: Vec<(Move, Step)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Add(Counter, Count),
    Sub(Counter, Count),
    Max(Counter, Count),
    /// An add at `clock - lag`: a thread whose clock is behind.
    Late(u32, Counter, Count),
}

fn run<W: Width>(a: &LeapArray<N, C, W>, input: &Input) {
    let window = input.window.ticks();
    let mut m = ArrayModel::<N, C>::new::<W>(window);
    let mut clock = input.start.ticks();
    let probe = input.probe.ticks();
    for (mv, step) in &input.steps {
        clock = mv.apply(clock, window);
        let (t, counter, op) = match *step {
            Step::Add(c, n) => (clock, c, Op::Add(n.value())),
            Step::Sub(c, n) => (clock, c, Op::Sub(n.value())),
            Step::Max(c, n) => (clock, c, Op::Max(n.value())),
            Step::Late(lag, c, n) => (clock.saturating_sub(u64::from(lag)), c, Op::Add(n.value())),
        };
        let counter = counter.index(C);
        let got = match op {
            Op::Add(n) => a.add(t, counter, n),
            Op::Sub(n) => a.sub(t, counter, n),
            Op::Max(v) => a.update_max(t, counter, v),
        };
        assert_eq!(
            got,
            m.update(t, counter, op),
            "{op:?} at {t}, counter {counter}"
        );
        check(a, &m, clock, probe);
    }
}

fuzz_target!(|input: Input| {
    let window = NonZeroU64::new(input.window.ticks()).expect("never 0");
    if input.narrow {
        run::<Narrow>(&LeapArray::<N, C, Narrow>::new_narrow(window), &input);
    } else {
        run::<Wide>(&LeapArray::<N, C>::new(window), &input);
    }
});
