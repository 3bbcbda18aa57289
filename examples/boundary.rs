//! The boundary problem every Sentinel article starts from.
//!
//! Limit: 100 requests per second. Traffic over two seconds: 20 requests in
//! the first half second, 80 in the second, 80 in the third, 20 in the
//! fourth, each batch spread evenly over its half second. The same requests
//! go through a fixed-window counter (a count per calendar second) and
//! through `leaparray::Gate<2>` (a sliding window of two 500 ms
//! windows, Sentinel's default). The chart shows what each admitted per
//! 100 ms. In a 1-second span made of whole 500 ms windows the fixed window
//! lets 160 through, the gate 100. A footnote measures every 1-second span
//! at 1 ms resolution too: there a 2-window sliding window can exceed the
//! limit (Sentinel issue #2859), and more windows shrink the excess.
//!
//! Run: `cargo run --example boundary`

use std::num::NonZeroU64;

use leaparray::{Decision, Gate};

const LIMIT: u64 = 100;
const BAR_MS: u64 = 100;
const BARS: usize = 20;

/// Requests per half second.
const TRAFFIC: [u64; 4] = [20, 80, 80, 20];

/// The textbook fixed window: a counter per calendar second.
struct FixedWindow {
    second: u64,
    count: u64,
}

impl FixedWindow {
    fn try_acquire(&mut self, now_ms: u64) -> bool {
        if now_ms / 1_000 != self.second {
            self.second = now_ms / 1_000;
            self.count = 0;
        }
        if self.count < LIMIT {
            self.count += 1;
            true
        } else {
            false
        }
    }
}

/// Arrival times in ms: each half second's batch spread evenly over it.
fn arrivals() -> Vec<u64> {
    let mut times = Vec::new();
    for (half, &n) in TRAFFIC.iter().enumerate() {
        for i in 0..n {
            times.push(half as u64 * 500 + i * 500 / n);
        }
    }
    times
}

/// The largest number of admitted requests in any span of `span` ms whose
/// start is a multiple of `step` ms.
fn max_in_span(admitted: &[u64], span: u64, step: u64) -> u64 {
    (0..=2_000)
        .step_by(step as usize)
        .map(|s| admitted.iter().filter(|&&t| t >= s && t < s + span).count() as u64)
        .max()
        .unwrap_or(0)
}

fn bar(n: u64) -> String {
    format!("{:<20}", "#".repeat(n.div_ceil(2) as usize))
}

fn main() {
    let times = arrivals();
    let mut fixed = FixedWindow {
        second: 0,
        count: 0,
    };
    let gate = Gate::<2>::new(NonZeroU64::new(500).unwrap(), LIMIT);
    // The same gate with ten 100 ms windows, for the finer comparison below.
    let fine = Gate::<10>::new(NonZeroU64::new(100).unwrap(), LIMIT);

    let (mut by_fixed, mut by_gate, mut by_fine) = (Vec::new(), Vec::new(), Vec::new());
    let mut counted_exactly = true;
    for half in 0..TRAFFIC.len() as u64 {
        for &t in times.iter().filter(|&&t| t / 500 == half) {
            if fixed.try_acquire(t) {
                by_fixed.push(t);
            }
            if gate.try_acquire(t, 1) == Decision::Pass {
                by_gate.push(t);
            }
            if fine.try_acquire(t, 1) == Decision::Pass {
                by_fine.push(t);
            }
        }
        // The gate's own count of the second ending with this half equals
        // what it admitted in it.
        let admitted = by_gate
            .iter()
            .filter(|&&t| t / 500 + 1 >= half && t / 500 <= half)
            .count() as u64;
        counted_exactly &= gate.count(half * 500) == admitted;
    }

    println!("Limit {LIMIT} requests per second. Traffic per half second: {TRAFFIC:?}.\n");
    println!("  time (ms)  | sent | fixed 1 s window          | gate, 2 x 500 ms sliding");
    println!("  -----------+------+--------------------------+--------------------------");
    let in_bar = |v: &[u64], b: u64| v.iter().filter(|&&t| t / BAR_MS == b).count() as u64;
    for b in 0..BARS as u64 {
        let (sent, f, g) = (in_bar(&times, b), in_bar(&by_fixed, b), in_bar(&by_gate, b));
        println!(
            "  {:>4}-{:<5} | {:>4} | {:>3} {} | {:>3} {}",
            b * BAR_MS,
            (b + 1) * BAR_MS,
            sent,
            f,
            bar(f),
            g,
            bar(g)
        );
    }
    println!("  (one # per 2 requests)\n");

    let fixed_max = max_in_span(&by_fixed, 1_000, 500);
    let gate_max = max_in_span(&by_gate, 1_000, 500);
    println!(
        "Admitted in total: fixed {}, gate {} (of {} sent); the gate's own counts match: {}",
        by_fixed.len(),
        by_gate.len(),
        times.len(),
        if counted_exactly { "yes" } else { "NO" }
    );
    println!("Largest count admitted in any 1-second span of whole 500 ms windows:");
    println!("  fixed window: {fixed_max}");
    println!("  gate:         {gate_max}");

    // Honest footnote: a sliding window of 2 buckets bounds the spans made of
    // whole buckets. A span that cuts a bucket in half can hold more
    // (Sentinel issue #2859); more buckets shrink the excess.
    let cut_gate = max_in_span(&by_gate, 1_000, 1);
    let cut_fine = max_in_span(&by_fine, 1_000, 1);
    println!("\nAny 1-second span, at 1 ms resolution (spans may cut a window):");
    println!("  gate, 2 x 500 ms:  {cut_gate}");
    println!("  gate, 10 x 100 ms: {cut_fine}");
    println!("  fixed window:      {}", max_in_span(&by_fixed, 1_000, 1));

    let ok = fixed_max == 160 && gate_max == LIMIT && counted_exactly;
    println!(
        "\n{}",
        if ok {
            "As expected: fixed 160, gate 100."
        } else {
            "UNEXPECTED RESULT"
        }
    );
    if !ok {
        std::process::exit(1);
    }
}
