//! `leaparray-redis-fleet`: several processes sharing one limit on Redis.
//!
//! * `fleet run url=redis://127.0.0.1:6379/ [processes=3 threads=2 seconds=5 mode=exact|lease block=25 limit=100 window_ms=250]`:
//!   launches the processes (this binary, `worker`), then prints admissions
//!   per second per process and in total, and the fullest interval.
//! * `fleet bench url=... [processes=4 threads=4 seconds=5 mode=... block=...]`:
//!   the same, with per-decision latencies: p50, p99, decisions per second,
//!   round trips per decision, shortfall.
//! * `fleet worker url=... name=... ledger=PATH ...`: one process (what
//!   `run`, `bench` and the tests launch); writes `window count` lines to
//!   `PATH` (at the end; with `live=1`, one line per admission as it is
//!   made, so a killed worker's admissions are there too), latencies to
//!   `PATH.lat` with `lat=1`, and a summary line.
//!
//! Intervals are 4 windows (`RedisGate<4>`).
use leaparray_redis::{Config, RedisGate};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const N: usize = 4;

type Args = HashMap<String, String>;

fn arg<T: std::str::FromStr>(a: &Args, k: &str, default: T) -> T {
    match a.get(k) {
        Some(v) => v
            .parse()
            .unwrap_or_else(|_| fail(&format!("bad value for {k}: {v}"))),
        None => default,
    }
}

fn fail(why: &str) -> ! {
    eprintln!("leaparray-redis-fleet: {why}");
    std::process::exit(2)
}

fn main() {
    let mut it = std::env::args().skip(1);
    let cmd = it.next().unwrap_or_default();
    let args: Args = it
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| fail(&format!("expected key=value, got {kv}")));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    match cmd.as_str() {
        "worker" => worker(&args),
        "run" => fleet(&args, false),
        "bench" => fleet(&args, true),
        _ => fail("usage: leaparray-redis-fleet run|bench|worker url=redis://127.0.0.1:6379/ [key=value ...]"),
    }
}

fn config(a: &Args) -> Config {
    let url: String = arg(a, "url", "redis://127.0.0.1:6379/".to_owned());
    let name: String = arg(a, "name", "fleet".to_owned());
    let window = Duration::from_millis(arg(a, "window_ms", 250));
    let mut c = Config::new(url, name, window, arg(a, "limit", 100))
        .restart_grace(Duration::from_millis(arg(a, "grace_ms", 500)))
        .timeout(Duration::from_millis(arg(a, "timeout_ms", 50)));
    if arg::<String>(a, "mode", "exact".into()) == "lease" {
        c = c.lease(arg(a, "block", 5));
    }
    if arg::<String>(a, "evicting", "refuse".into()) == "warn" {
        c = c.on_evicting(leaparray_redis::OnEviction::Warn);
    }
    c
}

fn worker(a: &Args) {
    let gate = RedisGate::<N>::open(config(a)).unwrap_or_else(|e| fail(&e.to_string()));
    let threads: usize = arg(a, "threads", 2);
    let run = Duration::from_millis(arg(a, "duration_ms", 3_000));
    let pace = Duration::from_micros(arg(a, "pace_us", 200));
    let record_latency = arg::<u8>(a, "lat", 0) == 1;
    let ledger: String = arg(a, "ledger", String::new());
    // `live=1`: each admission is appended as it is made (O_APPEND, one
    // short write per line), so a killed worker's admissions count.
    let live = (arg::<u8>(a, "live", 0) == 1 && !ledger.is_empty()).then(|| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&ledger)
            .unwrap_or_else(|e| fail(&format!("{ledger}: {e}")))
    });
    let connected = Instant::now();
    while !gate.is_connected() && connected.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Past the fence of a first start (`settle_ms=0` to decide through it).
    std::thread::sleep(Duration::from_millis(arg(a, "settle_ms", 0)));
    let windows = Mutex::new(BTreeMap::<u64, u64>::new());
    let latencies = Mutex::new(Vec::<u32>::new());
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = BTreeMap::<u64, u64>::new();
                let mut lat = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let d = gate.try_acquire(1);
                    if record_latency {
                        lat.push(u32::try_from(t.elapsed().as_nanos()).unwrap_or(u32::MAX));
                    }
                    match d.window() {
                        Some(w) => {
                            if let Some(mut f) = live.as_ref() {
                                f.write_all(format!("{w} 1\n").as_bytes())
                                    .unwrap_or_else(|e| fail(&format!("ledger: {e}")));
                            }
                            *mine.entry(w).or_insert(0) += 1;
                        }
                        None => std::thread::sleep(pace),
                    }
                }
                let mut all = windows.lock().unwrap();
                for (w, n) in mine {
                    *all.entry(w).or_insert(0) += n;
                }
                latencies.lock().unwrap().extend(lat);
            });
        }
        while start.elapsed() < run {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed();
    let stats = gate.stats();
    drop(gate); // returns the live lease
    if !ledger.is_empty() && live.is_none() {
        let mut f =
            std::fs::File::create(&ledger).unwrap_or_else(|e| fail(&format!("{ledger}: {e}")));
        for (w, n) in windows.lock().unwrap().iter() {
            writeln!(f, "{w} {n}").unwrap();
        }
        if record_latency {
            let mut f =
                std::io::BufWriter::new(std::fs::File::create(format!("{ledger}.lat")).unwrap());
            for l in latencies.lock().unwrap().iter() {
                writeln!(f, "{l}").unwrap();
            }
        }
    }
    println!(
        "summary decisions={} admitted={} round_trips={} keeper_round_trips={} seconds={:.3}",
        stats.decisions,
        stats.admitted,
        stats.round_trips,
        stats.keeper_round_trips,
        elapsed.as_secs_f64()
    );
}

fn fleet(a: &Args, bench: bool) {
    let processes: usize = arg(a, "processes", if bench { 4 } else { 3 });
    let threads: usize = arg(a, "threads", if bench { 4 } else { 2 });
    let seconds: u64 = arg(a, "seconds", 5);
    let c = config(a);
    let name = format!("fleet-{}", std::process::id());
    let dir = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..processes)
        .map(|p| {
            let mut cmd = Command::new(&exe);
            cmd.arg("worker");
            for (k, v) in a {
                if !["processes", "seconds", "name", "ledger", "lat"].contains(&k.as_str()) {
                    cmd.arg(format!("{k}={v}"));
                }
            }
            cmd.arg(format!("name={name}"))
                .arg(format!("threads={threads}"))
                .arg(format!("duration_ms={}", seconds * 1000))
                .arg(format!("ledger={}", dir.join(format!("p{p}")).display()))
                .arg(format!("lat={}", u8::from(bench)))
                .stdout(Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    let mut summaries = Vec::new();
    for ch in children {
        let out = ch.wait_with_output().unwrap();
        summaries.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    let ledgers: Vec<BTreeMap<u64, u64>> = (0..processes)
        .map(|p| read_ledger(&dir.join(format!("p{p}"))))
        .collect();
    let window_ms = c.window.as_millis() as u64;
    let per_second = |l: &BTreeMap<u64, u64>| {
        let mut m = BTreeMap::new();
        for (w, n) in l {
            *m.entry(w * window_ms / 1000).or_insert(0) += n;
        }
        m
    };
    let tables: Vec<_> = ledgers.iter().map(per_second).collect();
    let seconds_seen: std::collections::BTreeSet<u64> =
        tables.iter().flat_map(|t| t.keys().copied()).collect();
    print!("{:>12}", "second");
    for p in 0..processes {
        print!("{:>8}", format!("p{p}"));
    }
    println!("{:>8}", "total");
    for s in &seconds_seen {
        print!("{:>12}", s % 1_000_000);
        let mut total = 0;
        for t in &tables {
            let v = t.get(s).copied().unwrap_or(0);
            total += v;
            print!("{v:>8}");
        }
        println!("{total:>8}");
    }
    let mut merged = BTreeMap::new();
    for l in &ledgers {
        for (w, n) in l {
            *merged.entry(*w).or_insert(0u64) += n;
        }
    }
    let (fullest, over) = intervals(&merged, c.limit);
    println!(
        "limit {} per {} ms ({} windows of {} ms): fullest interval {}, intervals over the limit: {}",
        c.limit,
        window_ms * N as u64,
        N,
        window_ms,
        fullest,
        over
    );
    let mut decisions = 0u64;
    let mut trips = 0u64;
    let mut admitted = 0u64;
    let mut secs = 0f64;
    for s in &summaries {
        let get = |k: &str| -> f64 {
            s.split_whitespace()
                .find_map(|kv| {
                    kv.strip_prefix(&format!("{k}="))
                        .map(|v| v.parse().unwrap_or(0.0))
                })
                .unwrap_or(0.0)
        };
        decisions += get("decisions") as u64;
        admitted += get("admitted") as u64;
        trips += (get("round_trips") + get("keeper_round_trips")) as u64;
        secs = secs.max(get("seconds"));
    }
    println!(
        "decisions {decisions} ({:.0}/s), admitted {admitted}, Redis round trips per decision {:.4}, per admission {:.4}",
        decisions as f64 / secs,
        trips as f64 / decisions.max(1) as f64,
        trips as f64 / admitted.max(1) as f64
    );
    if bench {
        let mut lat: Vec<u32> = Vec::new();
        for p in 0..processes {
            let text = std::fs::read_to_string(dir.join(format!("p{p}.lat"))).unwrap_or_default();
            lat.extend(text.lines().filter_map(|l| l.parse::<u32>().ok()));
        }
        lat.sort_unstable();
        let q = |f: f64| {
            lat.get(((lat.len() as f64 - 1.0) * f) as usize)
                .copied()
                .unwrap_or(0) as f64
                / 1000.0
        };
        println!(
            "latency per decision: p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs",
            q(0.5),
            q(0.99),
            q(0.999)
        );
        // Shortfall: full intervals (4 consecutive windows, aligned) in the
        // middle of the run, against the limit.
        let ids: Vec<u64> = merged.keys().copied().collect();
        if let (Some(&lo), Some(&hi)) = (ids.first(), ids.last()) {
            let (lo, hi) = (lo + 2 * N as u64, hi.saturating_sub(2 * N as u64));
            let mut worst = 0u64;
            let mut sum_short = 0u64;
            let mut count = 0u64;
            let mut w = lo;
            while w + N as u64 <= hi {
                let load: u64 = (w..w + N as u64)
                    .map(|i| merged.get(&i).copied().unwrap_or(0))
                    .sum();
                let short = c.limit.saturating_sub(load);
                worst = worst.max(short);
                sum_short += short;
                count += 1;
                w += 1;
            }
            println!(
                "shortfall below the limit per interval (every interval in the middle of the run): mean {:.1}, worst {}",
                sum_short as f64 / count.max(1) as f64,
                worst
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if over > 0 {
        std::process::exit(1);
    }
}

fn read_ledger(path: &std::path::Path) -> BTreeMap<u64, u64> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (w, n) = l.split_once(' ')?;
            Some((w.parse().ok()?, n.parse().ok()?))
        })
        .collect()
}

/// The fullest interval of `N` consecutive windows, and how many are over `limit`.
fn intervals(merged: &BTreeMap<u64, u64>, limit: u64) -> (u64, usize) {
    let (Some(&lo), Some(&hi)) = (merged.keys().next(), merged.keys().last()) else {
        return (0, 0);
    };
    let mut fullest = 0;
    let mut over = 0;
    for start in lo.saturating_sub(N as u64 - 1)..=hi {
        let load: u64 = (start..start + N as u64)
            .map(|i| merged.get(&i).copied().unwrap_or(0))
            .sum();
        fullest = fullest.max(load);
        over += usize::from(load > limit);
    }
    (fullest, over)
}
