//! Decisions per second against threads, 1, 2, 4, ... up to the machine's
//! cores: `cargo run --release -p leaparray-benches --bin scaling -- --quick`.
//!
//! Workloads (every structure sees about one decision per tick of its
//! clock, whatever the thread count; see `README.md` for the chart):
//! - `leaparray_add`: every thread adds to one shared `LeapArray<2>`;
//! - `shard_writer_add`: each thread adds through the `ShardWriter` of its
//!   own claimed shard of one `Sharded`;
//! - `gate_contended`: every thread decides on one `Gate<2>` (one word);
//! - `gate_per_thread`: each thread on a `Gate<2>` of its own;
//! - `keyed_1k` / `keyed_1m`: every thread on one `KeyedGate`, random keys
//!   from 1,000 / 1,000,000 (all resident);
//! - `governor_direct`, `governor_keyed_1k`, `governor_keyed_1m`: governor
//!   0.10's direct limiter and keyed limiter (its `DashMap` store), with its
//!   `FakeRelativeClock`, for comparison.
//!
//! Time: each thread keeps its own fake clock and advances it per decision
//! (`threads` ticks per decision on a shared structure, one on its own), so
//! no clock read is measured. Threads on a shared structure meet at a
//! shared high-water clock every 256 decisions (one load, and a
//! `fetch_max` when ahead), so that no thread drifts more than a batch
//! behind the others. governor reads its fake clock in every decision, as
//! in `benches/gate.rs` and `benches/keyed.rs`.
//!
//! Options: `--quick` (250 ms per point, 50 of them warm-up), `--duration-ms
//! MS` (per point, default 2,000 + a quarter of it as warm-up), `--threads
//! 1,2,8` (replaces the default list), `--out DIR` (default
//! `target/scaling`: `scaling.csv`, `scaling.png`). Four options are parsed
//! by hand: an argument parser crate would add a dependency to CI's build
//! for no gain.

use std::fmt::Write as _;
use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};
// The core's names, in one place.
use leaparray::gate::Shape;
use leaparray::keyed::Overflow;
use leaparray::shard::Sharded;
use leaparray::{Decision, Gate, KeyedGate, LeapArray};
use leaparray_benches::{keyed_governor, warm_gate, warm_governor, KeyedGovernor, Keys};
use plotters::prelude::*;

/// Decisions a thread makes between two looks at the phase flag (and, on
/// a shared structure, at the shared clock).
const BATCH: u64 = 256;
/// The most threads a point may have (one claimed shard each).
const MAX_THREADS: usize = 1024;
/// Window of the array, the shards and the gates, in ticks: a roll-over
/// every 4,096 decisions.
const WINDOW: NonZeroU64 = NonZeroU64::new(4_096).unwrap();
/// The gates' limit per interval of two windows: the largest one 64-bit
/// word holds with no prioritized requests, 4x the 8,192 decisions an
/// interval gets, so every decision is admitted.
const GATE_LIMIT: u64 = 32_767;
/// The keyed gates' (and governor's keyed) limit per key per interval.
const KEYED_LIMIT: u64 = 1_000;
/// Keyed windows: as `benches/keyed.rs`, 500 ticks of 256 decisions (1,000
/// keys: about 256 decisions per key per interval) or 4,096 (1,000,000
/// keys: about 4).
const KEYED_1K_WINDOW: NonZeroU64 = NonZeroU64::new(500 * 256).unwrap();
const KEYED_1M_WINDOW: NonZeroU64 = NonZeroU64::new(500 * 4_096).unwrap();
/// Slots of the keyed tables: load 0.24 and 0.48.
const CAP_1K: usize = 4_096;
const CAP_1M: usize = 1 << 21;

/// The keyed tables, `Overflow::Refuse` (so a key set is the keys a table
/// has room for, as in `benches/keyed.rs`), in `static`s: a table of 2^21
/// slots is 96 MiB, built by the compiler, on no stack.
static KEYED_1K: KeyedGate<2, CAP_1K> =
    KeyedGate::new(KEYED_1K_WINDOW, KEYED_LIMIT).with_overflow(Overflow::Refuse);
static KEYED_1M: KeyedGate<2, CAP_1M> =
    KeyedGate::new(KEYED_1M_WINDOW, KEYED_LIMIT).with_overflow(Overflow::Refuse);

/// The workloads, in the order of the table, the CSV and the chart.
const WORKLOADS: [Workload; 9] = [
    Workload::LeapArrayAdd,
    Workload::ShardWriterAdd,
    Workload::GateContended,
    Workload::GatePerThread,
    Workload::Keyed1k,
    Workload::Keyed1m,
    Workload::GovernorDirect,
    Workload::GovernorKeyed1k,
    Workload::GovernorKeyed1m,
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    LeapArrayAdd,
    ShardWriterAdd,
    GateContended,
    GatePerThread,
    Keyed1k,
    Keyed1m,
    GovernorDirect,
    GovernorKeyed1k,
    GovernorKeyed1m,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::LeapArrayAdd => "leaparray_add",
            Workload::ShardWriterAdd => "shard_writer_add",
            Workload::GateContended => "gate_contended",
            Workload::GatePerThread => "gate_per_thread",
            Workload::Keyed1k => "keyed_1k",
            Workload::Keyed1m => "keyed_1m",
            Workload::GovernorDirect => "governor_direct",
            Workload::GovernorKeyed1k => "governor_keyed_1k",
            Workload::GovernorKeyed1m => "governor_keyed_1m",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Workload::LeapArrayAdd => "LeapArray<2>::add, one shared array",
            Workload::ShardWriterAdd => "ShardWriter::add, each thread its own claimed shard",
            Workload::GateContended => "Gate<2>::try_acquire, one shared gate (one 64-bit word)",
            Workload::GatePerThread => "Gate<2>::try_acquire, a gate per thread",
            Workload::Keyed1k => "KeyedGate<2, 4096>, one table, random keys of 1,000",
            Workload::Keyed1m => "KeyedGate<2, 2^21>, one table, random keys of 1,000,000",
            Workload::GovernorDirect => "governor direct check(), one shared limiter",
            Workload::GovernorKeyed1k => "governor keyed check_key() (DashMap), keys of 1,000",
            Workload::GovernorKeyed1m => "governor keyed check_key() (DashMap), keys of 1,000,000",
        }
    }

    /// The chart's colour (`README.md` names them).
    fn colour(self) -> RGBColor {
        match self {
            Workload::LeapArrayAdd => RGBColor(31, 119, 180),
            Workload::ShardWriterAdd => RGBColor(44, 160, 44),
            Workload::GateContended => RGBColor(214, 39, 40),
            Workload::GatePerThread => RGBColor(255, 127, 14),
            Workload::Keyed1k => RGBColor(148, 103, 189),
            Workload::Keyed1m => RGBColor(140, 86, 75),
            Workload::GovernorDirect => RGBColor(214, 39, 40),
            Workload::GovernorKeyed1k => RGBColor(148, 103, 189),
            Workload::GovernorKeyed1m => RGBColor(140, 86, 75),
        }
    }

    fn is_governor(self) -> bool {
        matches!(
            self,
            Workload::GovernorDirect | Workload::GovernorKeyed1k | Workload::GovernorKeyed1m
        )
    }
}

/// Decisions one thread made while measuring, and how many were admitted.
#[derive(Clone, Copy, Default)]
struct Tally {
    ops: u64,
    admitted: u64,
}

const WARM: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// One thread's measurement: its tally from the moment it saw the phase
/// turn to `MEASURE` to the moment it saw `STOP`.
struct Lap<'a> {
    phase: &'a AtomicU8,
    tally: Tally,
    start: Option<Instant>,
}

impl<'a> Lap<'a> {
    fn new(phase: &'a AtomicU8) -> Self {
        Lap {
            phase,
            tally: Tally::default(),
            start: None,
        }
    }

    /// Ends a batch of `BATCH` decisions, `admitted` of them admitted;
    /// false once the point is over.
    #[inline]
    fn batch(&mut self, admitted: u64) -> bool {
        self.tally.ops += BATCH;
        self.tally.admitted += admitted;
        match self.phase.load(Ordering::Relaxed) {
            WARM => true,
            MEASURE => {
                if self.start.is_none() {
                    self.start = Some(Instant::now());
                    self.tally = Tally::default();
                }
                true
            }
            _ => false,
        }
    }

    fn finish(self) -> (Tally, Duration) {
        match self.start {
            Some(s) => (self.tally, s.elapsed()),
            None => (Tally::default(), Duration::ZERO),
        }
    }
}

/// A high-water clock the threads on one shared structure meet at.
struct SharedClock(CachePadded<AtomicU64>);

impl SharedClock {
    fn new(at: u64) -> Self {
        SharedClock(CachePadded::new(AtomicU64::new(at)))
    }

    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The later of `local` and the shared clock; moves the shared clock
    /// on if `local` is ahead.
    #[inline]
    fn sync(&self, local: u64) -> u64 {
        let shared = self.0.load(Ordering::Relaxed);
        if local > shared {
            self.0.fetch_max(local, Ordering::Relaxed);
            local
        } else {
            shared
        }
    }
}

/// One measured point.
struct Point {
    workload: Workload,
    threads: usize,
    /// Per thread: decisions per second.
    rates: Vec<f64>,
    admitted: u64,
    ops: u64,
    /// Cores the process used while measuring (its CPU time over the
    /// measured wall time), where the system says (Linux).
    cores_used: Option<f64>,
}

/// The process's CPU time, user and system (Linux: `/proc/self/stat`, in
/// clock ticks of `getconf CLK_TCK`, usually 10 ms).
fn cpu_time() -> Option<Duration> {
    static TICK: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let hz = (*TICK.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
    }))?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces), from the
    // third: utime and stime are the 14th and 15th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_whitespace().skip(11);
    let ticks: u64 = f.next()?.parse::<u64>().ok()? + f.next()?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / hz as f64))
}

impl Point {
    fn total(&self) -> f64 {
        self.rates.iter().sum()
    }

    fn per_thread(&self) -> f64 {
        self.total() / self.threads as f64
    }

    fn slowest(&self) -> f64 {
        self.rates.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Runs `body(thread, lap)` on `threads` threads started together: `warm`
/// of warm-up, then `measure` measured.
fn measure<F>(
    workload: Workload,
    threads: usize,
    warm: Duration,
    measure: Duration,
    body: F,
) -> Point
where
    F: Fn(usize, &mut Lap<'_>) + Sync,
{
    let phase = AtomicU8::new(WARM);
    let start = Barrier::new(threads + 1);
    let mut cores_used = None;
    let results: Vec<(Tally, Duration)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (phase, start, body) = (&phase, &start, &body);
                s.spawn(move || {
                    let mut lap = Lap::new(phase);
                    start.wait();
                    body(t, &mut lap);
                    lap.finish()
                })
            })
            .collect();
        start.wait();
        std::thread::sleep(warm);
        let cpu = cpu_time();
        let t0 = Instant::now();
        phase.store(MEASURE, Ordering::Relaxed);
        std::thread::sleep(measure);
        phase.store(STOP, Ordering::Relaxed);
        cores_used = cpu
            .zip(cpu_time())
            .map(|(a, b)| (b.saturating_sub(a)).as_secs_f64() / t0.elapsed().as_secs_f64());
        handles
            .into_iter()
            .map(|h| h.join().expect("a benchmark thread panicked"))
            .collect()
    });
    Point {
        workload,
        threads,
        rates: results
            .iter()
            .map(|(t, d)| {
                if d.is_zero() {
                    0.0
                } else {
                    t.ops as f64 / d.as_secs_f64()
                }
            })
            .collect(),
        admitted: results.iter().map(|(t, _)| t.admitted).sum(),
        ops: results.iter().map(|(t, _)| t.ops).sum(),
        cores_used,
    }
}

/// What outlives one point: the keyed tables and limiters (filled once)
/// and the clocks that keep their time going forward.
struct Fixtures {
    keyed_1k: &'static KeyedGate<2, CAP_1K>,
    keys_1k: Keys,
    clock_1k: u64,
    keyed_1m: &'static KeyedGate<2, CAP_1M>,
    keys_1m: Keys,
    clock_1m: u64,
    governor_1k: (KeyedGovernor, FakeRelativeClock),
    governor_1m: (KeyedGovernor, FakeRelativeClock),
}

impl Fixtures {
    fn new() -> Result<Self, String> {
        let (keyed_1k, keyed_1m) = (&KEYED_1K, &KEYED_1M);
        let keys_1k = Keys::new(keyed_1k, 1_000, 16, 2);
        let keys_1m = Keys::new(keyed_1m, 1_000_000, 22, 1);
        warm_gate(keyed_1k, &keys_1k, 1);
        warm_gate(keyed_1m, &keys_1m, 1);
        let governor_1k = keyed_governor(KEYED_LIMIT);
        let governor_1m = keyed_governor(KEYED_LIMIT);
        warm_governor(&governor_1k.0, &keys_1k);
        warm_governor(&governor_1m.0, &keys_1m);
        Ok(Fixtures {
            keyed_1k,
            keys_1k,
            clock_1k: 2,
            keyed_1m,
            keys_1m,
            clock_1m: 2,
            governor_1k,
            governor_1m,
        })
    }
}

/// Counts a decision admitted.
#[inline(always)]
fn pass(d: Decision) -> u64 {
    u64::from(d == Decision::Pass)
}

/// A thread on a shared keyed table: random keys from `keys`, starting at
/// its own place in the sequence.
fn keyed_point<const CAP: usize>(
    w: Workload,
    threads: usize,
    (warm, run): (Duration, Duration),
    gate: &KeyedGate<2, CAP>,
    keys: &Keys,
    clock: &mut u64,
) -> Point {
    let shared = SharedClock::new(*clock);
    let (mask, stride) = (keys.mask(), keys.seq.len() / threads);
    let step = threads as u64;
    let p = measure(w, threads, warm, run, |t, lap| {
        let mut now = shared.now();
        let mut i = t * stride;
        loop {
            let mut admitted = 0;
            for _ in 0..BATCH {
                now += step;
                let key = keys.seq[i & mask];
                i += 1;
                admitted += pass(gate.try_acquire(black_box(key), now, 1));
            }
            if !lap.batch(admitted) {
                break;
            }
            now = shared.sync(now);
        }
        shared.sync(now);
    });
    *clock = shared.now() + 1;
    p
}

/// A thread on governor's keyed limiter: random keys from `keys`, its
/// fake clock advanced 1 µs every `per_us` of the thread's decisions.
fn governor_keyed_point(
    w: Workload,
    threads: usize,
    (warm, run): (Duration, Duration),
    (lim, clock): &(KeyedGovernor, FakeRelativeClock),
    keys: &Keys,
    per_us: u64,
) -> Point {
    let (mask, stride) = (keys.mask(), keys.seq.len() / threads);
    measure(w, threads, warm, run, |t, lap| {
        let mut i = t * stride;
        let mut batches = 0u64;
        loop {
            let mut admitted = 0;
            for _ in 0..BATCH {
                let key = keys.seq[i & mask];
                i += 1;
                admitted += u64::from(lim.check_key(black_box(&key)).is_ok());
            }
            batches += 1;
            if (batches * BATCH).is_multiple_of(per_us) {
                clock.advance(Duration::from_micros(1));
            }
            if !lap.batch(admitted) {
                break;
            }
        }
    })
}

fn contended_gate() -> Gate<2> {
    let g = Gate::<2>::new(WINDOW, GATE_LIMIT).with_occupy_timeout(0);
    assert!(
        matches!(g.shape(), Shape::Word64 { .. }),
        "the gate of limit {GATE_LIMIT} is meant to be one 64-bit word, it is {:?}",
        g.shape()
    );
    g
}

fn run_point(w: Workload, threads: usize, times: (Duration, Duration), fx: &mut Fixtures) -> Point {
    let (warm, run) = times;
    let step = threads as u64;
    match w {
        Workload::LeapArrayAdd => {
            let a = LeapArray::<2>::new(WINDOW);
            let shared = SharedClock::new(0);
            measure(w, threads, warm, run, |_, lap| {
                let mut now = shared.now();
                loop {
                    let mut admitted = 0;
                    for _ in 0..BATCH {
                        now += step;
                        admitted += u64::from(a.add(black_box(now), 0, 1).is_ok());
                    }
                    if !lap.batch(admitted) {
                        break;
                    }
                    now = shared.sync(now);
                }
            })
        }
        Workload::ShardWriterAdd => {
            let s = Box::new(Sharded::<2, 1, MAX_THREADS>::new(WINDOW));
            measure(w, threads, warm, run, |t, lap| {
                let mut writer = s.claim(t).expect("each thread claims its own shard");
                let mut now = 0u64;
                loop {
                    let mut admitted = 0;
                    for _ in 0..BATCH {
                        now += 1;
                        admitted += u64::from(writer.add(black_box(now), 0, 1).is_ok());
                    }
                    if !lap.batch(admitted) {
                        break;
                    }
                }
            })
        }
        Workload::GateContended => {
            let g = contended_gate();
            let shared = SharedClock::new(0);
            measure(w, threads, warm, run, |_, lap| {
                let mut now = shared.now();
                loop {
                    let mut admitted = 0;
                    for _ in 0..BATCH {
                        now += step;
                        admitted += pass(g.try_acquire(black_box(now), 1));
                    }
                    if !lap.batch(admitted) {
                        break;
                    }
                    now = shared.sync(now);
                }
            })
        }
        Workload::GatePerThread => {
            let gates: Vec<CachePadded<Gate<2>>> = (0..threads)
                .map(|_| CachePadded::new(contended_gate()))
                .collect();
            measure(w, threads, warm, run, |t, lap| {
                let g = &gates[t];
                let mut now = 0u64;
                loop {
                    let mut admitted = 0;
                    for _ in 0..BATCH {
                        now += 1;
                        admitted += pass(g.try_acquire(black_box(now), 1));
                    }
                    if !lap.batch(admitted) {
                        break;
                    }
                }
            })
        }
        Workload::Keyed1k => keyed_point(
            w,
            threads,
            times,
            fx.keyed_1k,
            &fx.keys_1k,
            &mut fx.clock_1k,
        ),
        Workload::Keyed1m => keyed_point(
            w,
            threads,
            times,
            fx.keyed_1m,
            &fx.keys_1m,
            &mut fx.clock_1m,
        ),
        Workload::GovernorDirect => {
            // Every call admitted: a burst of u32::MAX, refilled 4,295 per
            // µs, the clock advanced 1 µs per batch of each thread.
            let clock = FakeRelativeClock::default();
            let lim = RateLimiter::direct_with_clock(Quota::per_second(NonZeroU32::MAX), clock);
            measure(w, threads, warm, run, |_, lap| loop {
                let mut admitted = 0;
                for _ in 0..BATCH {
                    admitted += u64::from(black_box(&lim).check().is_ok());
                }
                lim.clock().advance(Duration::from_micros(1));
                if !lap.batch(admitted) {
                    break;
                }
            })
        }
        Workload::GovernorKeyed1k => {
            governor_keyed_point(w, threads, times, &fx.governor_1k, &fx.keys_1k, 256)
        }
        Workload::GovernorKeyed1m => {
            governor_keyed_point(w, threads, times, &fx.governor_1m, &fx.keys_1m, 4_096)
        }
    }
}

struct Options {
    threads: Vec<usize>,
    warm: Duration,
    run: Duration,
    out: PathBuf,
    quick: bool,
}

const USAGE: &str = "usage: scaling [--quick] [--duration-ms MS] [--threads 1,2,4] [--out DIR]";

fn options(cores: usize) -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut quick, mut ms, mut threads, mut out) = (false, None, None, None);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--quick" => quick = true,
            "--duration-ms" => {
                let v = value("--duration-ms")?;
                let n: u64 = v
                    .parse()
                    .map_err(|_| format!("--duration-ms {v}: not a number of milliseconds"))?;
                if n == 0 {
                    return Err("--duration-ms must be at least 1".into());
                }
                ms = Some(n);
            }
            "--threads" => {
                let v = value("--threads")?;
                let mut list = Vec::new();
                for part in v.split(',') {
                    let n: usize = part
                        .trim()
                        .parse()
                        .map_err(|_| format!("--threads {v}: {part:?} is not a thread count"))?;
                    if n == 0 || n > MAX_THREADS {
                        return Err(format!(
                            "--threads {v}: each count must be 1 to {MAX_THREADS}"
                        ));
                    }
                    list.push(n);
                }
                list.sort_unstable();
                list.dedup();
                threads = Some(list);
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--bench" => {} // `cargo bench` passes it to every target
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let threads = threads.unwrap_or_else(|| {
        let cores = cores.min(MAX_THREADS);
        let mut list: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
            .take_while(|&t| t <= cores)
            .collect();
        if list.last() != Some(&cores) {
            list.push(cores);
        }
        list
    });
    // --quick: 250 ms a point, so that 9 workloads x 8 thread counts (256
    // cores) take 18 s of measuring.
    let ms = ms.unwrap_or(if quick { 200 } else { 2_000 });
    Ok(Options {
        threads,
        warm: Duration::from_millis(ms.div_ceil(4)),
        run: Duration::from_millis(ms),
        out: out.unwrap_or_else(|| PathBuf::from("target/scaling")),
        quick,
    })
}

fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.1} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k", x / 1e3),
        x => format!("{x:.0} "),
    }
}

fn table(points: &[Point]) -> String {
    let mut s = String::new();
    s.push_str("| workload | threads | decisions/s | per thread | slowest thread | ns per decision per thread | admitted | refused | cores used |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for p in points {
        let _ = writeln!(
            s,
            "| {} | {} | {}/s | {}/s | {}/s | {:.2} | {} | {} | {} |",
            p.workload.name(),
            p.threads,
            si(p.total()),
            si(p.per_thread()),
            si(p.slowest()),
            1e9 / p.per_thread(),
            p.admitted,
            p.ops - p.admitted,
            p.cores_used.map_or("-".into(), |c| format!("{c:.2}"))
        );
    }
    s
}

fn csv(points: &[Point], run: Duration) -> String {
    let mut s = String::from(
        "workload,threads,decisions_per_s,per_thread_per_s,slowest_thread_per_s,ns_per_decision_per_thread,decisions,admitted,refused,duration_ms,cores_used\n",
    );
    for p in points {
        let _ = writeln!(
            s,
            "{},{},{:.0},{:.0},{:.0},{:.3},{},{},{},{},{}",
            p.workload.name(),
            p.threads,
            p.total(),
            p.per_thread(),
            p.slowest(),
            1e9 / p.per_thread(),
            p.ops,
            p.admitted,
            p.ops - p.admitted,
            run.as_millis(),
            p.cores_used.map_or(String::new(), |c| format!("{c:.3}"))
        );
    }
    s
}

/// The chart's text, in one font embedded in the binary so that the chart
/// looks the same on every machine (no system font lookup): DejaVu Sans cut
/// to ASCII and a few signs (`fonts/README.md` says how, and its licence).
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");
/// The family the chart's text asks plotters for (where `FONT` is
/// registered).
const FAMILY: &str = "sans-serif";
/// The commit the binary was built from, `unknown` outside git (`build.rs`).
const COMMIT: &str = env!("LEAPARRAY_COMMIT");

/// A power of ten as a tick label: `100 k`, `1 M`, `10 G`.
fn decade(x: f64) -> String {
    let (v, unit) = match x {
        x if x >= 1e9 => (x / 1e9, " G"),
        x if x >= 1e6 => (x / 1e6, " M"),
        x if x >= 1e3 => (x / 1e3, " k"),
        x => (x, ""),
    };
    format!("{v:.0}{unit}")
}

/// The chart's drawing errors, as text.
fn drawn<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// The chart: a title (what is measured, the cores, the commit, how);
/// left, decisions per second of all threads; right, per thread; both
/// against threads, log-log, ticks at each thread count measured and at
/// each power of ten; below, a legend naming each series. leaparray's
/// workloads are thick lines with filled dots, governor's thin lines with
/// hollow dots in the colour of the leaparray workload it compares with.
fn chart(
    points: &[Point],
    threads: &[usize],
    (title, subtitle): (&str, &str),
    path: &std::path::Path,
) -> Result<(), String> {
    plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
        .map_err(|_| "the embedded font is not a font it can read".to_string())?;
    let root = BitMapBackend::new(path, (1400, 880)).into_drawing_area();
    drawn(root.fill(&WHITE))?;
    let (head, rest) = root.split_vertically(80);
    let (plots, legend) = rest.split_vertically(600);
    drawn(head.draw(&Text::new(title, (24, 14), (FAMILY, 26))))?;
    drawn(head.draw(&Text::new(subtitle, (24, 50), (FAMILY, 17))))?;
    let max_t = *threads.last().unwrap_or(&1) as f64;
    let x_range = 0.8..max_t * 1.25;
    let x_ticks: Vec<f64> = threads.iter().map(|&t| t as f64).collect();
    for (panel, per_thread) in plots.split_evenly((1, 2)).iter().zip([false, true]) {
        let y = |p: &Point| {
            if per_thread {
                p.per_thread()
            } else {
                p.total()
            }
        };
        let ys = points.iter().map(y).filter(|v| *v > 0.0);
        let lo = ys.clone().fold(f64::INFINITY, f64::min);
        let hi = ys.fold(0.0, f64::max);
        if !(lo.is_finite() && hi > 0.0) {
            continue;
        }
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
        let decades: Vec<f64> = std::iter::successors(Some(lo), |d| Some(d * 10.0))
            .take_while(|d| *d <= hi * 1.001)
            .collect();
        let caption = if per_thread {
            "per thread (all threads' decisions / threads)"
        } else {
            "all threads together"
        };
        let mut c = drawn(
            ChartBuilder::on(panel)
                .caption(caption, (FAMILY, 19))
                .margin(12)
                .margin_right(30)
                .x_label_area_size(56)
                .y_label_area_size(96)
                .build_cartesian_2d(
                    x_range.clone().log_scale().with_key_points(x_ticks.clone()),
                    (lo..hi).log_scale().with_key_points(decades),
                ),
        )?;
        drawn(
            c.configure_mesh()
                .x_desc("threads (log scale)")
                .y_desc("decisions per second (log scale)")
                .x_label_formatter(&|t| format!("{t:.0}"))
                .y_label_formatter(&|d| decade(*d))
                .label_style((FAMILY, 16))
                .axis_desc_style((FAMILY, 17))
                .bold_line_style(RGBColor(215, 215, 215))
                .draw(),
        )?;
        for w in WORKLOADS {
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.workload == w && y(p) > 0.0)
                .map(|p| (p.threads as f64, y(p)))
                .collect();
            let (stroke, dot) = series_style(w);
            drawn(c.draw_series(LineSeries::new(line.iter().copied(), stroke)))?;
            drawn(c.draw_series(line.iter().map(|&p| Circle::new(p, 5, dot))))?;
        }
    }
    // The legend: leaparray's workloads on the left, governor's on the
    // right, each as its line and dot, its name and what it measures.
    let columns = [
        ("leaparray: thick lines, filled dots", false),
        (
            "governor 0.10, for comparison: thin lines, hollow dots",
            true,
        ),
    ];
    for (col, (header, governor)) in columns.into_iter().enumerate() {
        let x = 40 + col as i32 * 700;
        drawn(legend.draw(&Text::new(header, (x, 8), (FAMILY, 17))))?;
        let rows = WORKLOADS.iter().filter(|w| w.is_governor() == governor);
        for (row, &w) in rows.enumerate() {
            let y = 40 + row as i32 * 25;
            let (stroke, dot) = series_style(w);
            drawn(legend.draw(&PathElement::new([(x, y), (x + 40, y)], stroke)))?;
            drawn(legend.draw(&Circle::new((x + 20, y), 5, dot)))?;
            let label = format!("{}: {}", w.name(), w.what());
            drawn(legend.draw(&Text::new(label, (x + 52, y - 9), (FAMILY, 16))))?;
        }
    }
    drawn(root.present())
}

/// A workload's line and dot on the chart and in its legend.
fn series_style(w: Workload) -> (ShapeStyle, ShapeStyle) {
    let colour = w.colour();
    if w.is_governor() {
        (colour.stroke_width(1), colour.stroke_width(2))
    } else {
        (colour.stroke_width(3), colour.filled())
    }
}

fn main() {
    let started = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let opts = match options(cores) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("scaling: {e}");
            std::process::exit(2);
        }
    };
    let list = opts
        .threads
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",");
    println!(
        "leaparray scaling: decisions per second against threads ({cores} cores; commit {COMMIT}; threads {list}; \
         {} ms per point after {} ms of warm-up{})",
        opts.run.as_millis(),
        opts.warm.as_millis(),
        if opts.quick { ", --quick" } else { "" }
    );
    // The machine's load when the run starts (Linux): a shared machine's
    // other work takes cores from the threads measured.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    if let Some(load) = &load {
        println!("load average when started: {load}");
    }
    println!(
        "time: each thread's own fake clock, advanced per decision (no clock read measured); \
         threads on one structure meet at a shared high-water clock every {BATCH} decisions; \
         governor reads its FakeRelativeClock in each decision"
    );
    println!(
        "mix: limits far above the load (gates {GATE_LIMIT} per 8,192 decisions, keyed \
         {KEYED_LIMIT} per key per interval): every decision is meant to be admitted, \
         refusals are counted below"
    );
    let mut fx = match Fixtures::new() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("scaling: {e}");
            std::process::exit(1);
        }
    };
    let mut points = Vec::new();
    for w in WORKLOADS {
        for &t in &opts.threads {
            let p = run_point(w, t, (opts.warm, opts.run), &mut fx);
            eprintln!(
                "{:<18} {:>4} threads: {}/s, {}/s per thread",
                w.name(),
                t,
                si(p.total()),
                si(p.per_thread())
            );
            if p.admitted == 0 {
                eprintln!(
                    "scaling: {} at {t} threads admitted nothing ({} decisions): \
                     the workload is broken",
                    w.name(),
                    p.ops
                );
                std::process::exit(1);
            }
            points.push(p);
        }
    }
    println!();
    for w in WORKLOADS {
        println!("- `{}`: {}", w.name(), w.what());
    }
    println!();
    print!("{}", table(&points));
    if let Err(e) = std::fs::create_dir_all(&opts.out) {
        eprintln!("scaling: cannot create {}: {e}", opts.out.display());
        std::process::exit(1);
    }
    let csv_path = opts.out.join("scaling.csv");
    if let Err(e) = std::fs::write(&csv_path, csv(&points, opts.run)) {
        eprintln!("scaling: cannot write {}: {e}", csv_path.display());
        std::process::exit(1);
    }
    let png_path = opts.out.join("scaling.png");
    let title =
        format!("leaparray: decisions per second against threads, {cores} cores, commit {COMMIT}");
    let subtitle = format!(
        "nine workloads; {} profile; {} ms per point after {} ms of warm-up{}{}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        opts.run.as_millis(),
        opts.warm.as_millis(),
        if opts.quick { " (--quick)" } else { "" },
        load.as_ref().map_or(String::new(), |l| format!(
            "; load average {l} when started"
        ))
    );
    if let Err(e) = chart(&points, &opts.threads, (&title, &subtitle), &png_path) {
        eprintln!("scaling: cannot draw {}: {e}", png_path.display());
        std::process::exit(1);
    }
    let refused = points.iter().filter(|p| p.ops > p.admitted).count();
    // Points whose threads did not all run at once (the process used
    // under 90% of a core per thread): their rates show the machine's
    // other load, not contention.
    let starved = points
        .iter()
        .filter(|p| p.cores_used.is_some_and(|c| c < 0.9 * p.threads as f64))
        .count();
    let ratio = |w: Workload| {
        let at = |t: usize| {
            points
                .iter()
                .find(|p| p.workload == w && p.threads == t)
                .map(Point::per_thread)
        };
        let (first, last) = (opts.threads[0], *opts.threads.last().unwrap_or(&1));
        match (at(first), at(last)) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.2}x", b / a),
            _ => "-".into(),
        }
    };
    println!();
    println!(
        "scaling: OK, {} points in {:.1} s; per-thread rate at {} threads vs {}: gate_contended {}, \
         gate_per_thread {}, leaparray_add {}, shard_writer_add {}; {refused} points with refusals; \
         {starved} points whose threads got under 0.9 of a core each; {} and {}",
        points.len(),
        started.elapsed().as_secs_f64(),
        opts.threads.last().unwrap_or(&1),
        opts.threads[0],
        ratio(Workload::GateContended),
        ratio(Workload::GatePerThread),
        ratio(Workload::LeapArrayAdd),
        ratio(Workload::ShardWriterAdd),
        csv_path.display(),
        png_path.display()
    );
}
