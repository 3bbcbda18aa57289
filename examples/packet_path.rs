//! Per-core shards on a packet path.
//!
//! Each thread stands for one run-to-completion core owning one receive
//! queue: it claims its own shard of a `Sharded` array and counts packets and
//! bytes with plain loads and stores (no atomic read-modify-write, no shared
//! cache line). The time is read once per batch of 64 packets, in µs, and
//! passed in. A reader thread merges the shards meanwhile. At the end the
//! example prints each thread's packet rate and checks that the merged
//! sliding-window totals equal exactly what the threads sent.
//!
//! Run: `cargo run --release --example packet_path` (a debug build works
//! too, slower).

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use leaparray::shard::Sharded;

const THREADS: usize = 2;
/// Packets per queue (fewer in a debug build, so that it still runs in seconds).
const PACKETS: u64 = if cfg!(debug_assertions) {
    2_000_000
} else {
    20_000_000
};
const BATCH: u64 = 64;
const PACKETS_C: usize = 0;
const BYTES_C: usize = 1;

/// Ten windows of one second, time in µs: the run fits in the interval, so
/// every packet is still counted at the end.
static TRAFFIC: Sharded<10, 2, THREADS> = Sharded::new(NonZeroU64::new(1_000_000).unwrap());

fn main() {
    let origin = Instant::now();
    let now_us = move || origin.elapsed().as_micros() as u64;
    let done = Arc::new(AtomicBool::new(false));

    let reader = {
        let done = done.clone();
        thread::spawn(move || {
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                let [p, b] = TRAFFIC.sums(now_us());
                // Holds because writers add a packet's bytes before the packet.
                assert!(b >= p * 64, "bytes below the minimum frame size");
                reads += 1;
            }
            reads
        })
    };

    let workers: Vec<_> = (0..THREADS)
        .map(|q| {
            let mut queue = TRAFFIC.claim(q).expect("one shard per queue");
            thread::spawn(move || {
                let start = Instant::now();
                let mut bytes = 0u64;
                let mut sent = 0u64;
                while sent < PACKETS {
                    // Bytes first, then the packet: the counters of a window
                    // are read one by one, not as one snapshot (GUARANTEES.md,
                    // section 2), and the reader reads packets before bytes,
                    // so in this order a reader that sees a packet also sees
                    // its bytes.
                    let now = now_us(); // once per batch
                    for i in 0..BATCH {
                        let len = 64 + (sent + i) % 1_437; // 64..=1500-byte frames
                        queue.add(now, BYTES_C, len).expect("in-order time");
                        queue.add(now, PACKETS_C, 1).expect("in-order time");
                        bytes += len;
                    }
                    sent += BATCH;
                }
                (sent, bytes, start.elapsed())
            })
        })
        .collect();

    let mut total = (0, 0);
    for (q, w) in workers.into_iter().enumerate() {
        let (packets, bytes, took) = w.join().unwrap();
        println!(
            "queue {q}: {packets} packets, {bytes} bytes in {took:.2?}: {:.0} Mpps",
            packets as f64 / took.as_secs_f64() / 1e6
        );
        total.0 += packets;
        total.1 += bytes;
    }
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();

    let now = now_us();
    let [p, b] = TRAFFIC.sums(now);
    println!(
        "merged sliding window at {now} µs: {p} packets, {b} bytes ({reads} concurrent reads)"
    );
    for w in TRAFFIC.windows(now) {
        println!(
            "  window [{} s, {} s): {:?}",
            w.start / 1_000_000,
            w.start / 1_000_000 + 1,
            w.counts
        );
    }
    let exact = (p, b) == total;
    println!("totals exact: {}", if exact { "yes" } else { "NO" });
    if !exact {
        std::process::exit(1);
    }
}
