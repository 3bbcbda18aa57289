//! `Sharded<3, 2, 3>` against a model of three arrays: claims, releases
//! and re-claims of shards (a second claim, a claim of a shard shared adds
//! have used, an index out of range), single-writer adds through the
//! claimed handles, shared adds with any hint, at times anywhere. Every
//! result, and the merged sums and windows, must match.
#![no_main]

use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::array::{Wide, Window};
use leaparray::shard::{ClaimError, ShardWriter, Sharded, SharedAddError};
use leaparray_fuzz::array::{ArrayModel, Op};
use leaparray_fuzz::input::{Count, Counter, Move, Time, WindowLen};
use libfuzzer_sys::fuzz_target;

const N: usize = 3;
const C: usize = 2;
const S: usize = 3;

#[derive(Arbitrary, Debug)]
struct Input {
    window: WindowLen,
    start: Time,
    steps: Vec<(Move, Step)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Claim(u8),
    Release(u8),
    /// An add through the writer of shard `i % S`, if it is held.
    Write(u8, Counter, Count),
    Shared(usize, Counter, Count),
    /// A shared add at `now - lag`.
    LateShared(u32, usize, Counter, Count),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Free: shared adds may use it, a claim takes it (no shared add is
    /// ever in flight during a claim in this single-threaded harness).
    Fresh,
    Claimed,
}

fuzz_target!(|input: Input| {
    let window = input.window.ticks();
    let s = Sharded::<N, C, S>::new(NonZeroU64::new(window).expect("never 0"));
    assert_eq!((s.shards(), s.window()), (S, window));
    assert_eq!(s.interval(), (N as u64).saturating_mul(window));
    let mut arrays: [ArrayModel<N, C>; S] =
        core::array::from_fn(|_| ArrayModel::new::<Wide>(window));
    let mut states = [State::Fresh; S];
    let mut writers: [Option<ShardWriter<'_, N, C>>; S] = [None, None, None];
    let mut clock = input.start.ticks();
    for (mv, step) in &input.steps {
        clock = mv.apply(clock, window);
        let now = clock;
        match *step {
            Step::Claim(i) => {
                let i = usize::from(i) % (S + 1);
                let want = match states.get(i) {
                    None => Err(ClaimError::NoSuchShard),
                    Some(State::Claimed) => Err(ClaimError::Claimed),
                    Some(State::Fresh) => Ok(i),
                };
                let got = s.claim(i);
                assert_eq!(got.as_ref().map(ShardWriter::index).map_err(|e| *e), want);
                if let Ok(w) = got {
                    states[i] = State::Claimed;
                    writers[i] = Some(w);
                }
            }
            Step::Release(i) => {
                let i = usize::from(i) % S;
                if let Some(w) = writers[i].take() {
                    if i.is_multiple_of(2) {
                        w.release();
                    } else {
                        drop(w);
                    }
                    states[i] = State::Fresh;
                }
            }
            Step::Write(i, c, n) => {
                let i = usize::from(i) % S;
                if let Some(w) = &mut writers[i] {
                    let c = c.index(C);
                    let got = w.add(now, c, n.value());
                    assert_eq!(
                        got,
                        arrays[i].update(now, c, Op::Add(n.value())),
                        "write {i} at {now}"
                    );
                }
            }
            Step::Shared(hint, c, n) | Step::LateShared(_, hint, c, n) => {
                let t = match *step {
                    Step::LateShared(lag, ..) => now.saturating_sub(u64::from(lag)),
                    _ => now,
                };
                let c = c.index(C);
                // The shard `hint % S`, or the next one not claimed.
                let target = (0..S)
                    .map(|k| (hint % S + k) % S)
                    .find(|&j| states[j] != State::Claimed);
                let want = match target {
                    None => Err(SharedAddError::NoFreeShard),
                    Some(j) => arrays[j]
                        .update(t, c, Op::Add(n.value()))
                        .map_err(SharedAddError::Add),
                };
                assert_eq!(s.add(hint, t, c, n.value()), want, "shared add at {t}");
            }
        }
        // Merged reads.
        for c in 0..C {
            let want: u64 = arrays.iter().map(|a| a.sum_last(now, N as u64, c)).sum();
            assert_eq!(s.sum(now, c), want, "sum({now}, {c})");
        }
        assert_eq!(s.sum(now, C), 0);
        let sums: [u64; C] =
            core::array::from_fn(|c| arrays.iter().map(|a| a.sum_last(now, N as u64, c)).sum());
        assert_eq!(s.sums(now), sums);
        let mut merged: Vec<Window<C>> = Vec::new();
        for id in arrays[0].last(now, N as u64) {
            let held: Vec<Window<C>> = arrays.iter().filter_map(|a| a.get(id)).collect();
            if let Some(first) = held.first() {
                let counts = core::array::from_fn(|c| held.iter().map(|w| w.counts[c]).sum());
                merged.push(Window {
                    start: first.start,
                    counts,
                });
            }
        }
        assert_eq!(
            s.windows(now).as_slice(),
            merged.as_slice(),
            "windows({now})"
        );
    }
});
