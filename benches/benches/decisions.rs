//! Instructions per keyed decision, counted by callgrind (repeatable where
//! timings on a shared machine are not): `bash benches/instructions.sh`.
//! Not criterion: a plain loop whose two burst functions the script
//! counts.
//!
//! Bursts of 64 requests (`n` = 1) on a `LocalKeyedGate<2, 2^15>` and a
//! `KeyedGate<2, 2^15>` (limit 16 per two windows of 50,000 ticks), in two
//! regimes:
//! - `hot`: 4,096 keys, the clock 400 ticks on per burst: a key comes back
//!   about twice a window (about half its decisions in its newest window,
//!   half moving it on by one);
//! - `cold`: 15,000 keys (the 1,000,000-flow packet path's load factor,
//!   0.46), 2,000 ticks per burst: a key comes back after all its windows
//!   slid out, as in `examples/xdp`'s `1m_flows` benchmark.
//!
//! Every decision admits (printed): the counts are those of admissions.

use core::num::NonZeroU64;
use std::hint::black_box;

use leaparray::keyed::LocalKeyedGate;
use leaparray::Decision;
use leaparray::KeyedGate;

const CAP: usize = 1 << 15;
const BURST: usize = 64;
const BURSTS: usize = 20_000;

#[inline(never)]
fn local_burst(
    g: &mut LocalKeyedGate<2, CAP>,
    now: u64,
    r: &[(u64, u64)],
    d: &mut [Decision],
) -> usize {
    g.try_acquire_burst(now, r, d, |_| ())
}

#[inline(never)]
fn shared_burst(g: &KeyedGate<2, CAP>, now: u64, r: &[(u64, u64)], d: &mut [Decision]) -> usize {
    g.try_acquire_burst(now, r, d)
}

fn main() {
    // `cargo bench` passes `--bench`; the regime is the first other word.
    let cold = std::env::args().skip(1).any(|a| a == "cold");
    let (keys, step) = if cold { (15_000, 2_000) } else { (4_096, 400) };
    let window = NonZeroU64::new(50_000).expect("not zero");
    let mut owned = Box::new(LocalKeyedGate::<2, CAP>::new(window, 16));
    let shared = Box::new(KeyedGate::<2, CAP>::new(window, 16));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let keys: Vec<u64> = (0..keys)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        })
        .collect();
    let mut now = 1_000_000u64;
    let mut requests = [(0u64, 1u64); BURST];
    let mut out = [Decision::Block; BURST];
    let mut refused = 0;
    for i in 0..BURSTS {
        now += step;
        for (k, r) in requests.iter_mut().enumerate() {
            r.0 = keys[(i * BURST + k * 7_919) % keys.len()];
        }
        local_burst(&mut owned, black_box(now), &requests, &mut out);
        refused += out.iter().filter(|d| **d != Decision::Pass).count();
        shared_burst(&shared, black_box(now), &requests, &mut out);
        refused += out.iter().filter(|d| **d != Decision::Pass).count();
    }
    println!(
        "{}: {} decisions per table, {refused} refused",
        if cold { "cold" } else { "hot" },
        BURSTS * BURST
    );
}
