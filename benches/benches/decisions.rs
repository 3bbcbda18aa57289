//! Instructions per keyed decision, counted by callgrind (repeatable where
//! timings on a shared machine are not): `bash benches/instructions.sh`.
//! Not criterion: a plain loop whose three burst functions the script
//! counts: the two tables' and the floor's (`floor_burst`: not leaparray,
//! `examples/xdp`'s plain single-writer table).
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

/// The floor (`examples/xdp/benches/path.rs`'s `floor_single_writer_table`,
/// not leaparray): a plain table of `(key, word)` owned by one thread, the
/// burst's homes found first, then per request a probe for its key, a
/// count and a window id in the word compared with the limit, a store.
/// No sliding window, no insertion, no demand, no prefetch (as the local
/// burst here gets `|_| ()`).
#[inline(never)]
fn floor_burst(t: &mut [[u64; 2]], now: u64, r: &[(u64, u64)], d: &mut [Decision]) -> usize {
    let mut homes = [0usize; BURST];
    for (h, &(key, _)) in homes.iter_mut().zip(r) {
        *h = floor_home(key);
    }
    let window = now / 50_000;
    for ((&h, &(key, n)), out) in homes.iter().zip(r).zip(d.iter_mut()) {
        let mut s = h;
        while t[s][0] != key {
            s = (s + 1) % CAP;
        }
        let w = t[s][1];
        let count = if w >> 32 == window {
            w & 0xffff_ffff
        } else {
            0
        };
        *out = if count + n <= 16 {
            t[s][1] = (window << 32) | (count + n);
            Decision::Pass
        } else {
            Decision::Block
        };
    }
    r.len().min(d.len())
}

/// The floor's home slot of `key` (the xdp floor's multiply-shift).
fn floor_home(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CAP.trailing_zeros())) as usize
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
    let mut floor = vec![[0u64; 2]; CAP];
    for &key in &keys {
        let mut s = floor_home(key);
        while floor[s][0] != key && floor[s][0] != 0 {
            s = (s + 1) % CAP;
        }
        floor[s] = [key, 0];
    }
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
        floor_burst(&mut floor, black_box(now), &requests, &mut out);
        refused += out.iter().filter(|d| **d != Decision::Pass).count();
    }
    println!(
        "{}: {} decisions per table, {refused} refused",
        if cold { "cold" } else { "hot" },
        BURSTS * BURST
    );
}
