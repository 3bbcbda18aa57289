//! The receive loop's leaparray work on synthetic frames, per packet:
//! `cargo bench -p leaparray-xdp --bench path`.
//!
//! Frames are built by the example's own `write_frame` (60-172 bytes, one
//! flow each) and laid out 256 bytes apart in a 64 MiB buffer of 2^18
//! frames, flows drawn at random; a batch is 64 consecutive frames, as the
//! receive loop takes them off the ring. Time per frame (criterion's
//! elements/s) of:
//!
//! - `read_headers`: `Batch::push` only (parse the 5-tuple, hash it): what
//!   both loops of the example do, the baseline;
//! - `count_and_police`: `push`, then `Batch::process`: the batch's packets
//!   and bytes into a claimed shard (two `ShardWriter::add`s per batch) and
//!   one `KeyedGate` decision per frame in bursts (`try_acquire_burst`);
//! - `police_one_by_one`: the same decisions with one `try_acquire` per frame;
//! - `count_and_police_local`: `count_and_police` with the queue's own
//!   `LocalKeyedGate` (plain loads and stores) instead of the shared
//!   `KeyedGate`, each request's home slot prefetched 16 requests before
//!   its decision (`try_acquire_burst` with `_mm_prefetch`);
//! - `count_and_police_local_prefetch_while_reading`: the same, with each
//!   policed frame's home slot also prefetched as its headers are read
//!   (`Batch::push_prefetching`);
//! - `count_and_police_local_no_prefetch`: the same without the prefetch
//!   (`|_| ()`: what a caller without `unsafe` gets);
//! - `1m_flows/keys_only_local`, `1m_flows/keys_only_floor`: the local
//!   burst and the floor on the same batches' requests taken from an array,
//!   with no frames read: what the 64 MiB of frames the other rows stream
//!   through the caches add (`keys_only_floor` on x86-64 only);
//! - `1m_flows/floor_single_writer_table` (x86-64): `push`, then the same
//!   decisions in a plain table owned by one thread, with every home slot
//!   of the batch prefetched first: not leaparray, the floor (see `floor`).
//!
//! `1m_flows/*`: 1,000,000 flows, all resident in a `KeyedGate<2, 2^21>`
//! and in a `LocalKeyedGate<2, 2^21>` (32 MiB each, on transparent huge
//! pages: `on_huge_pages`) before measuring. `4k_flows/*`: 4,096 flows,
//! tables of 2^15 slots.
//! The clock advances 25 µs (1M flows) or 400 µs (4,096 flows) per batch,
//! so that each flow stays under its limit (16 per 100 ms) and nearly every
//! decision admits, as most of a real link's flows do (refusals are
//! printed).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use leaparray::Decision;
use leaparray_xdp::{
    flow_gate, prefetch, traffic, write_frame, Batch, FlowGate, LocalFlowGate, Policer, Traffic,
    Tuple, BATCH,
};

static TRAFFIC: Traffic = traffic();
static SMALL: FlowGate<{ 1 << 15 }> = flow_gate();

const SLOT: usize = 256;
const FRAMES: usize = 1 << 18;

/// xorshift64*: a fixed, cheap pseudo-random sequence.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// 2^18 frames of flows drawn from `0..flows`, and their lengths.
fn frames(flows: u32) -> (Vec<u8>, Vec<usize>) {
    let mut buf = vec![0u8; FRAMES * SLOT];
    let mut lens = Vec::with_capacity(FRAMES);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for k in 0..FRAMES {
        let flow = (rng.next() % u64::from(flows)) as u32;
        lens.push(write_frame(&mut buf[k * SLOT..(k + 1) * SLOT], flow));
    }
    (buf, lens)
}

fn group<const CAP: usize>(
    c: &mut Criterion,
    name: &str,
    mut gate: &FlowGate<CAP>,
    owned: &mut LocalFlowGate<CAP>,
    flows: u32,
    step: u64,
    shard: usize,
) {
    let (buf, lens) = frames(flows);
    let mut writer = TRAFFIC.claim(shard).unwrap();
    let mut now = 1_000_000u64;
    // Every flow resident before measuring.
    {
        let mut b = Batch::default();
        let mut f = 0;
        while f < flows {
            b.clear();
            for _ in 0..BATCH {
                let mut fr = [0u8; SLOT];
                let len = write_frame(&mut fr, f % flows);
                b.push(&fr[..len]);
                f += 1;
            }
            let mut again = b.clone();
            black_box(b.process(&mut writer, &mut gate, now));
            black_box(again.process(&mut writer, owned, now));
        }
    }
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(BATCH as u64));
    let batch_at = |i: usize, b: &mut Batch| {
        b.clear();
        let first = (i * BATCH) % FRAMES;
        for k in first..first + BATCH {
            b.push(&buf[k * SLOT..k * SLOT + lens[k]]);
        }
    };
    let batch_prefetching = |i: usize, b: &mut Batch, gate: &LocalFlowGate<CAP>| {
        b.clear();
        let first = (i * BATCH) % FRAMES;
        for k in first..first + BATCH {
            b.push_prefetching(&buf[k * SLOT..k * SLOT + lens[k]], gate);
        }
    };
    let mut b = Batch::default();
    let mut i = 0usize;
    g.bench_function("read_headers", |bench| {
        bench.iter(|| {
            i += 1;
            batch_at(i, &mut b);
            black_box(&b);
        })
    });
    let mut refused = 0u64;
    let mut decided = 0u64;
    g.bench_function("count_and_police", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_at(i, &mut b);
            refused += b.process(&mut writer, &mut gate, black_box(now));
            decided += b.policed as u64;
        })
    });
    g.bench_function("police_one_by_one", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_at(i, &mut b);
            let _ = writer.add(now, 0, b.packets);
            let _ = writer.add(now, 1, b.bytes);
            for &(key, n) in &b.requests[..b.policed] {
                refused += u64::from(gate.try_acquire(key, black_box(now), n) != Decision::Pass);
                decided += 1;
            }
        })
    });
    let mut refused_local = 0u64;
    g.bench_function("count_and_police_local", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_at(i, &mut b);
            refused_local += b.process(&mut writer, owned, black_box(now));
        })
    });
    g.bench_function("count_and_police_local_prefetch_while_reading", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_prefetching(i, &mut b, owned);
            refused_local += b.process(&mut writer, owned, black_box(now));
        })
    });
    g.bench_function("count_and_police_local_no_prefetch", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_at(i, &mut b);
            refused_local += b.process(&mut writer, &mut NoPrefetch(owned), black_box(now));
        })
    });
    println!("{name}: local gate: {refused_local} refused");
    if flows > 4096 {
        // The same batches' requests, from an array: no frames.
        let keys: Vec<Vec<(u64, u64)>> = (0..FRAMES / BATCH)
            .map(|i| {
                batch_at(i, &mut b);
                b.requests[..b.policed].to_vec()
            })
            .collect();
        let mut out = [Decision::Block; BATCH];
        let mut j = 0usize;
        g.bench_function("keys_only_local", |bench| {
            bench.iter(|| {
                j += 1;
                now += step;
                let reqs = &keys[j % keys.len()];
                let k = owned.try_acquire_burst(black_box(now), reqs, &mut out, prefetch);
                refused_local += out[..k].iter().filter(|d| **d != Decision::Pass).count() as u64;
            })
        });
        floor(&mut g, &mut b, &batch_at, &keys, flows, step);
    }
    g.finish();
    println!("{name}: {refused} of {decided} decisions refused");
}

/// The owned table without a prefetch (`|_| ()`): what a caller without
/// `unsafe` gets, through the same `Batch::process`.
struct NoPrefetch<'a, const CAP: usize>(&'a mut LocalFlowGate<CAP>);

impl<const CAP: usize> Policer for NoPrefetch<'_, CAP> {
    #[inline(always)]
    fn police(&mut self, now: u64, requests: &[(u64, u64)], decisions: &mut [Decision]) -> usize {
        self.0.try_acquire_burst(now, requests, decisions, |_| ())
    }
    fn police_one(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.0.try_acquire(key, now, n)
    }
    fn resident(&self, now: u64) -> usize {
        self.0.occupancy(now).resident
    }
}

/// `floor_single_writer_table`: not leaparray, the floor of any per-flow
/// state with these flows on this machine. A table of 2^21 slots of 16
/// bytes (key, word), 32 MiB on huge pages like the gate, owned by this one
/// thread; every flow inserted first (all 1,000,000, not only the frames'
/// 230,000). Per batch: every frame's home slot prefetched (for this short
/// loop, all 64 at once is faster than the owned gate's rolling 16), then
/// per frame a probe for its key, a stand-in for the
/// window arithmetic (a count and a window id in the word, compared to a
/// limit) and a plain store: no atomic read-modify-write, no lock. What a
/// policer with one table per queue and one writer could reach at best.
#[cfg(target_arch = "x86_64")]
fn floor(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    b: &mut Batch,
    batch_at: &impl Fn(usize, &mut Batch),
    keys: &[Vec<(u64, u64)>],
    flows: u32,
    step: u64,
) {
    const SLOTS: usize = 1 << 21;
    let mut table = vec![[0u64; 2]; 0];
    table.reserve_exact(SLOTS + (1 << 18));
    // SAFETY: advice on memory this process owns, before it is touched.
    unsafe {
        let p = table.as_mut_ptr() as usize;
        let huge = 2 << 20;
        let a = (p + huge - 1) & !(huge - 1);
        libc::madvise(a as *mut libc::c_void, SLOTS * 16, libc::MADV_HUGEPAGE);
    }
    table.resize(SLOTS, [0, 0]);
    let home = |key: u64| (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 43) as usize;
    // Every flow, as the gates hold them (not only those of the frames).
    for i in 0..flows {
        let key = Tuple::of_flow(i).key();
        let mut s = home(key);
        while table[s][0] != key && table[s][0] != 0 {
            s = (s + 1) % SLOTS;
        }
        table[s] = [key, 0];
    }
    let mut i = 0usize;
    let mut now = 1u64 << 20;
    let mut refused = 0u64;
    let mut decide = |table: &mut Vec<[u64; 2]>, reqs: &[(u64, u64)], now: u64| {
        let mut homes = [0usize; BATCH];
        for (h, &(key, _)) in homes.iter_mut().zip(reqs) {
            *h = home(key);
            prefetch(core::ptr::from_ref(&table[*h]).cast());
        }
        let window = black_box(now) / 100_000;
        for (&h, &(key, n)) in homes.iter().zip(reqs) {
            let mut s = h;
            while table[s][0] != key {
                s = (s + 1) % SLOTS;
            }
            let w = table[s][1];
            let count = if w >> 32 == window {
                w & 0xffff_ffff
            } else {
                0
            };
            if count + n <= 16 {
                table[s][1] = (window << 32) | (count + n);
            } else {
                refused += 1;
            }
        }
    };
    g.bench_function("floor_single_writer_table", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            batch_at(i, b);
            decide(&mut table, &b.requests[..b.policed], now);
        })
    });
    g.bench_function("keys_only_floor", |bench| {
        bench.iter(|| {
            i += 1;
            now += step;
            decide(&mut table, &keys[i % keys.len()], now);
        })
    });
    black_box(&table);
    println!("floor_single_writer_table: {refused} refused");
}

#[cfg(not(target_arch = "x86_64"))]
fn floor(
    _: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    _: &mut Batch,
    _: &impl Fn(usize, &mut Batch),
    _: &[Vec<(u64, u64)>],
    _: u32,
    _: u64,
) {
}

fn benches(c: &mut Criterion) {
    // The buffer of frames comes round every 4,096 batches: each flow of
    // it must stay under 16 per 100 ms, so the clock advances 25 µs per
    // batch with 1M flows (a flow is in it about once), 400 µs with 4,096
    // (64 times).
    // On huge pages, as the example's (a `static` of that size would be
    // file-backed `.data`, 4 KiB pages).
    let big: &FlowGate<{ 1 << 21 }> = leaparray_xdp::leak_gate();
    let mut big_owned = leaparray_xdp::boxed_local_gate::<{ 1 << 21 }>();
    group(c, "1m_flows", big, &mut big_owned, 1_000_000, 25, 0);
    let mut small_owned = leaparray_xdp::boxed_local_gate::<{ 1 << 15 }>();
    group(c, "4k_flows", &SMALL, &mut small_owned, 4096, 400, 1);
}

criterion_group! {
    name = path;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = benches
}
criterion_main!(path);
