//! Loom models of a thread stalled while its bucket rolls over past half
//! the generation range.
//!
//! Generations are compared modulo 2^GEN_BITS, so a stalled thread holding
//! generation `g` must not read a live tag `g + r` as "older" for any `r`
//! within the documented limit (fewer than 2^GEN_BITS - 2 roll-overs). With
//! 8- or 16-bit generations that is hundreds or tens of thousands of steps;
//! `LoomTinyGen` (loom builds only) has 3-bit generations, so 5 roll-overs,
//! past half the range (4) and up to the limit, fit in a model.
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`
#![cfg(leaparray_loom)]

use leaparray::array::Window;
use leaparray::{LeapArray, LoomTinyGen};
use leaparray_loom_tests::{final_counts, ok, spawn, Seen, W};
use loom::sync::Arc;

/// Roll-overs made while the other thread is stalled: past half of the 8
/// generations, and the most the documented limit allows (2^3 - 3).
const ROLLS: u64 = 5;

type Tiny = LeapArray<1, 1, LoomTinyGen>;

/// Window 1 holds one add. A thread adds 1 in window `stalled` (1: the
/// window its bucket holds, so it stalls between its stamp load and its
/// cell CAS; 2: it rolls the bucket, so it stalls between its stamp load
/// and its seal) while another thread rolls the bucket `ROLLS` times past
/// it, one add per window. The stalled add counts in its own window (in its
/// final count) or is refused; every roller add is `Ok`; the newest window
/// holds exactly its one add: the stalled thread neither wiped it nor added
/// to it, and nothing spins. Both outcomes of the stalled add must occur.
fn stall_across_the_rolls(stalled: u64) {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let a = Arc::new(Tiny::new_tiny_gen(W));
        a.add(10, 0, 1).unwrap(); // window 1
        let (b, c) = (a.clone(), a.clone());
        let late = spawn(move || b.add(stalled * 10, 0, 1));
        let roller = spawn(move || {
            for k in stalled + 1..=stalled + ROLLS {
                assert_eq!(c.add(k * 10, 0, 1), Ok(()), "window {k} is the newest");
            }
        });
        let late = late.join().unwrap();
        roller.join().unwrap();
        for w in 1..=stalled {
            let setup = u64::from(w == 1);
            let own = if w == stalled { ok(late, 1) } else { 0 };
            assert_eq!(final_counts(&*a, w * 10), [setup + own], "window {w}");
        }
        let newest = (stalled + ROLLS) * 10;
        let want = Window {
            start: newest,
            counts: [1],
        };
        assert_eq!(a.window_at(newest), Some(want), "live window changed");
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}

/// An add stalled between its stamp load and its cell compare-and-swap
/// while another thread rolls the bucket 5 times: it counts in its own
/// window or is refused, and the live window keeps its count.
#[test]
fn stalled_add_across_half_the_generations() {
    stall_across_the_rolls(1);
}

/// A roller stalled between its stamp load and its seal while another
/// thread rolls the bucket 5 times: it never seals (wipes) the live window
/// and never spins; its add counts in its window or is refused.
#[test]
fn stalled_roller_across_half_the_generations() {
    stall_across_the_rolls(2);
}
