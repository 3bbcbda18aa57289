//! Adaptive system protection on a simulated server: `cargo run --example adaptive`.
//!
//! A server of 50 workers, each request taking 80 to 120 ms of work (100
//! on average): 500 requests/s at most. The offered load rises from 200
//! to 1,000 requests/s over 60 s and stays there for 20 s; each ms brings
//! 50% to 150% of the rate's share (a fixed pseudo-random sequence). Time is a simulated clock
//! in ms (no sleeping: the run takes well under a second). Three runs:
//!
//! - no guard: every request queues;
//! - Sentinel's `checkBbr` as written (max success QPS of the last second x
//!   min RT of the last second / 1000, refuse when `c > 1 && c > that`),
//!   always on;
//! - `leaparray::system::AdaptiveRule` (defaults: the minute's windowed max
//!   and min, gain 150%).
//!
//! Per simulated second: the admitted load (a bar, and requests/s), the
//! peak requests in flight and the mean latency of the requests completed.
//! Then the measured properties, which the run asserts (it exits non-zero
//! if the guard lets concurrency or latency run away, or if its admitted
//! load swings by more than 10% from one second to the next).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::process::ExitCode;

use leaparray::stats::{ConcurrencyGuard, StatisticNode};
use leaparray::system::AdaptiveRule;

const WORKERS: usize = 50;
const SERVICE_MS: u64 = 100;
const CAPACITY_PER_S: u64 = WORKERS as u64 * 1_000 / SERVICE_MS;
/// Each request's work is drawn from `SERVICE_MS` +- this.
const SERVICE_JITTER_MS: u64 = 20;
const SECONDS: u64 = 80;
const RAMP_S: u64 = 60;
const SWING_PERCENT: u64 = 10;

/// A deterministic xorshift generator: the same run every time.
struct Rng(u64);

impl Rng {
    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + self.0 % (hi - lo + 1)
    }
}

/// Offered requests per second at second `s`.
fn offered(s: u64) -> u64 {
    200 + 800 * s.min(RAMP_S) / RAMP_S
}

#[derive(Clone, Copy, PartialEq)]
enum Policy {
    None,
    Sentinel,
    Guard,
}

#[derive(Default, Clone, Copy)]
struct Second {
    admitted: u64,
    peak_in_flight: u64,
    latency_sum: u64,
    completed: u64,
}

impl Second {
    fn mean_latency(&self) -> u64 {
        self.latency_sum.checked_div(self.completed).unwrap_or(0)
    }
}

/// Sentinel's `SystemRuleManager.checkBbr`, ms and per-second as it assumes.
fn sentinel_admits(node: &StatisticNode, now: u64) -> bool {
    let c = node.concurrency() as f64;
    let second = node.second();
    let windows_per_s = 1_000.0 / second.window() as f64;
    let max_success_qps = (second.max_success(now) as f64 * windows_per_s).max(1.0);
    let min_rt = second.min_rt(now).unwrap_or(5_000) as f64; // statisticMaxRt
    !(c > 1.0 && c > max_success_qps * min_rt / 1_000.0)
}

fn run(policy: Policy) -> Vec<Second> {
    let node: StatisticNode = StatisticNode::millis();
    let guard = AdaptiveRule::new();
    let mut out = vec![Second::default(); SECONDS as usize];
    // Waiting and in service: (arrival ms, the in-flight guard).
    let mut queue: VecDeque<(u64, ConcurrencyGuard<'_>)> = VecDeque::new();
    // In service: (done ms, arrival ms, index into `guards`).
    let mut serving: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut guards: Vec<Option<ConcurrencyGuard<'_>>> = Vec::new();
    let mut owed = 0; // arrivals in thousandths
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for now in 0..SECONDS * 1_000 {
        let s = &mut out[(now / 1_000) as usize];
        // Completions.
        while serving
            .peek()
            .is_some_and(|Reverse((done, _, _))| *done <= now)
        {
            let Reverse((_, arrived, i)) = serving.pop().unwrap();
            let g = guards[i].take();
            let rt = now - arrived;
            node.add_rt_and_success(now, rt, 1).unwrap();
            s.latency_sum += rt;
            s.completed += 1;
            drop(g);
        }
        // Arrivals: the offered rate, each ms drawn from 50% to 150% of it.
        owed += offered(now / 1_000) * rng.between(50, 150) / 100;
        while owed >= 1_000 {
            owed -= 1_000;
            let admitted = match policy {
                Policy::None => Some(node.enter(now)),
                Policy::Sentinel => sentinel_admits(&node, now).then(|| node.enter(now)),
                Policy::Guard => guard.try_enter(&node, now),
            };
            match admitted {
                Some(g) => {
                    node.add_pass(now, 1).unwrap();
                    s.admitted += 1;
                    queue.push_back((now, g));
                }
                None => node.add_block(now, 1).unwrap(),
            }
        }
        // Free workers take the oldest waiting requests.
        while serving.len() < WORKERS {
            let Some((arrived, g)) = queue.pop_front() else {
                break;
            };
            let work = rng.between(
                SERVICE_MS - SERVICE_JITTER_MS,
                SERVICE_MS + SERVICE_JITTER_MS,
            );
            serving.push(Reverse((now + work, arrived, guards.len())));
            guards.push(Some(g));
        }
        s.peak_in_flight = s.peak_in_flight.max(node.concurrency());
    }
    out
}

/// Seconds (after the first) whose admitted load differs from the second
/// before by more than `SWING_PERCENT`.
fn swings(run: &[Second]) -> usize {
    run.windows(2)
        .filter(|w| w[1].admitted.abs_diff(w[0].admitted) * 100 > w[0].admitted * SWING_PERCENT)
        .count()
}

fn chart(name: &str, run: &[Second]) {
    println!("\n{name}");
    println!("  s  offered  admitted/s (# = 25/s)            in flight   latency ms");
    for (s, r) in run.iter().enumerate() {
        let bar = "#".repeat((r.admitted / 25) as usize);
        println!(
            "{s:>3} {:>8} {:>8} {bar:<40} {:>9} {:>10}",
            offered(s as u64),
            r.admitted,
            r.peak_in_flight,
            r.mean_latency()
        );
    }
}

fn main() -> ExitCode {
    let none = run(Policy::None);
    let sentinel = run(Policy::Sentinel);
    let guarded = run(Policy::Guard);
    chart("no guard", &none);
    chart("Sentinel's checkBbr, always on", &sentinel);
    chart("AdaptiveRule (leaparray::system)", &guarded);

    let peak = |r: &[Second]| r.iter().map(|s| s.peak_in_flight).max().unwrap_or(0);
    let worst_latency = |r: &[Second]| r.iter().map(Second::mean_latency).max().unwrap_or(0);
    let tail = &guarded[(RAMP_S as usize)..];
    let tail_min = tail.iter().map(|s| s.admitted).min().unwrap_or(0);
    let tail_max = tail.iter().map(|s| s.admitted).max().unwrap_or(0);
    let limit = WORKERS as u64 * u64::from(AdaptiveRule::new().gain_percent()) / 100;

    println!("\ncapacity {CAPACITY_PER_S}/s; {SECONDS} simulated seconds");
    for (name, r) in [
        ("no guard", &none),
        ("Sentinel", &sentinel),
        ("AdaptiveRule", &guarded),
    ] {
        println!(
            "{name:<12} peak in flight {:>7}, worst mean latency {:>6} ms, admitted {:>7}, seconds swinging > {SWING_PERCENT}%: {}",
            peak(r),
            worst_latency(r),
            r.iter().map(|s| s.admitted).sum::<u64>(),
            swings(r)
        );
    }
    println!(
        "AdaptiveRule, last {} s: admitted {tail_min}..={tail_max}/s",
        SECONDS - RAMP_S
    );
    // The seconds whose offered load the server could carry: what each refused.
    let under = |r: &[Second]| -> (u64, u64) {
        r.iter()
            .enumerate()
            .filter(|(s, _)| offered(*s as u64) < CAPACITY_PER_S)
            .fold((0, 0), |(a, o), (s, r)| {
                (a + r.admitted, o + offered(s as u64))
            })
    };
    for (name, r) in [
        ("no guard", &none),
        ("Sentinel", &sentinel),
        ("AdaptiveRule", &guarded),
    ] {
        let (a, o) = under(r);
        println!(
            "{name:<12} below capacity: admitted {a} of about {o} offered ({:.1}% refused)",
            100.0 * (o - a.min(o)) as f64 / o as f64
        );
    }

    let mut ok = true;
    let mut expect = |what: &str, holds: bool| {
        println!("{} {what}", if holds { "ok  " } else { "FAIL" });
        ok &= holds;
    };
    expect(
        &format!("AdaptiveRule: no second swings by more than {SWING_PERCENT}%"),
        swings(&guarded) == 0,
    );
    expect(
        &format!("AdaptiveRule: at most {limit} in flight (50 workers x gain)"),
        peak(&guarded) <= limit,
    );
    expect(
        "AdaptiveRule: mean latency at most 1.5 x the service time",
        worst_latency(&guarded) * 2 <= SERVICE_MS * 3,
    );
    expect(
        "AdaptiveRule: saturated, admits within 3% of capacity every second",
        tail_min * 100 >= CAPACITY_PER_S * 97 && tail_max * 100 <= CAPACITY_PER_S * 103,
    );
    expect(
        "no guard: concurrency runs away (over 100 x the guarded peak)",
        peak(&none) > 100 * peak(&guarded),
    );
    if ok {
        println!("ADAPTIVE OK");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
