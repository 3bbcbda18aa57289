//! A sliding window counting traffic.
//!
//! Three seconds of simulated requests (ramp up, burst, quiet, burst) are
//! sent by four threads at once into a `static LeapArray` of ten 100 ms
//! windows. After every 100 ms the example prints the requests of that slice
//! and the sliding count over the last second, as the array reports it, and
//! checks it against what was sent.
//!
//! Run: `cargo run --example sliding_window`

use std::num::NonZeroU64;
use std::thread;

use leaparray::LeapArray;

/// Counter indices.
const OK: usize = 0;
const ERR: usize = 1;
const THREADS: u64 = 4;

/// Ten windows of 100 ms: the last second, in 100 ms steps. Time is in ms.
static REQUESTS: LeapArray<10, 2> = LeapArray::new(NonZeroU64::new(100).unwrap());

/// Requests sent in each 100 ms slice.
const TRAFFIC: [u64; 30] = [
    4, 8, 12, 20, 30, 40, 60, 90, 120, 120, // ramp up
    120, 60, 30, 10, 0, 0, 0, 0, 0, 0, // quiet down
    200, 200, 40, 8, 4, 0, 0, 0, 0, 4, // a burst, then quiet
];

fn bar(n: u64, per_char: u64) -> String {
    "#".repeat(n.div_ceil(per_char) as usize)
}

fn main() {
    println!("leaparray: 10 windows x 100 ms; {THREADS} threads send the traffic below.\n");
    println!("  time   | sent in slice       | sliding last 1 s (ok + err), from the array");
    println!("  -------+---------------------+---------------------------------------------");
    let mut exact = true;
    for (slice, &sent) in TRAFFIC.iter().enumerate() {
        let start = slice as u64 * 100;
        // Each thread sends its share, spread over the slice; every tenth
        // request fails.
        thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    for i in (t..sent).step_by(THREADS as usize) {
                        let now = start + i * 100 / sent.max(1);
                        let counter = if i % 10 == 9 { ERR } else { OK };
                        REQUESTS
                            .add(now, counter, 1)
                            .expect("in-order times never go stale");
                    }
                });
            }
        });
        let now = start + 99;
        let [ok, err] = REQUESTS.sums(now);
        let expected: u64 = TRAFFIC[slice.saturating_sub(9)..=slice].iter().sum();
        exact &= ok + err == expected;
        println!(
            "  {:>4.1} s | {:>4} {:<14} | {:>4} = {:>4} + {:>3} {}",
            (now + 1) as f64 / 1000.0,
            sent,
            bar(sent, 15),
            ok + err,
            ok,
            err,
            bar(ok + err, 40)
        );
    }

    let now = TRAFFIC.len() as u64 * 100 - 1;
    println!("\nLive windows at {now} ms (oldest first):");
    for w in REQUESTS.windows(now) {
        println!(
            "  [{:>4}, {:>4}) ms: ok {:>3}, err {:>2}",
            w.start,
            w.start + 100,
            w.counts[OK],
            w.counts[ERR]
        );
    }
    let busiest = REQUESTS
        .windows(now)
        .iter()
        .map(|w| w.counts[OK] + w.counts[ERR])
        .max();
    println!(
        "Busiest 100 ms of the last second: {} requests",
        busiest.unwrap_or(0)
    );
    println!(
        "Last 500 ms: {} ok",
        REQUESTS.sum_span(now, 500, OK).unwrap()
    );
    println!(
        "\nEvery sliding count equals what was sent: {}",
        if exact { "yes" } else { "NO" }
    );
    if !exact {
        std::process::exit(1);
    }
}
