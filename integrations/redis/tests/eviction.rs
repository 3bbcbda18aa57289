//! Any `maxmemory-policy`, set at run time (`CONFIG SET`), with Redis at
//! `maxmemory` and another writer filling it, against a real
//! `redis-server`.
//!
//! The fleet test runs 3 worker processes (`leaparray-redis-fleet worker
//! live=1 evicting=warn`) of 2 threads against 100 per interval of 4
//! windows of 250 ms, while the test's own writer fills Redis (values of
//! 1 KiB, half with a TTL, half rewriting 512 keys without one) and switches the policy every 1.5 s:
//! `volatile-lru`, `volatile-ttl`, `allkeys-lru`, `allkeys-random`. Every
//! worker appends each admission to its own file as it is made; the test
//! merges them and asserts **0 intervals over the limit**. It prints one
//! `eviction-table` line: fullest interval, intervals over, availability
//! (admissions / the most the limit allows over the run's windows, demand
//! above the limit throughout), and per policy the keys Redis evicted and
//! the epochs the limit went through (a new one each time its keys were
//! evicted).
mod common;
use common::{serial, Server};
use leaparray_redis::{Config, RedisGate};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const N: u64 = 4;
const LIMIT: u64 = 100;
const WORKER: &str = env!("CARGO_BIN_EXE_leaparray-redis-fleet");

fn launch(server: &Server, name: &str, ms: u64) -> (Vec<Child>, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("leaparray-eviction-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut workers = Vec::new();
    let mut paths = Vec::new();
    for p in 0..3 {
        let path = dir.join(format!("{name}-{p}"));
        let _ = std::fs::remove_file(&path);
        workers.push(
            Command::new(WORKER)
                .arg("worker")
                .arg(format!("url={}", server.url()))
                .arg(format!("name={name}"))
                .arg(format!("ledger={}", path.display()))
                .arg(format!("duration_ms={ms}"))
                .args([
                    "live=1",
                    "threads=2",
                    "limit=100",
                    "window_ms=250",
                    "grace_ms=500",
                    "settle_ms=600",
                    "evicting=warn",
                ])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        paths.push(path);
    }
    (workers, paths)
}

fn merge(workers: Vec<Child>, paths: &[PathBuf]) -> BTreeMap<u64, u64> {
    for c in workers {
        assert!(
            c.wait_with_output().unwrap().status.success(),
            "a worker failed"
        );
    }
    let mut merged = BTreeMap::new();
    for p in paths {
        for l in std::fs::read_to_string(p).unwrap_or_default().lines() {
            let (w, n) = l.split_once(' ').unwrap();
            *merged.entry(w.parse::<u64>().unwrap()).or_insert(0u64) += n.parse::<u64>().unwrap();
        }
    }
    merged
}

fn info_u64(con: &mut redis::Connection, section: &str, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
}

fn config_set(con: &mut redis::Connection, key: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(key)
        .arg(value)
        .query(con)
        .unwrap();
}

#[test]
fn any_eviction_policy_set_at_run_time_keeps_the_limit() {
    let _g = serial();
    let test = "evict";
    let server = Server::start();
    let (workers, paths) = launch(&server, test, 7_500);
    std::thread::sleep(Duration::from_millis(1_200));
    let mut con = server.con();
    let used = info_u64(&mut con, "memory", "used_memory");
    config_set(&mut con, "maxmemory", &(used + (2 << 20)).to_string());
    // The other writer: 1 KiB values, every other one a new key with a TTL
    // (so that volatile-* policies have keys to evict besides the limit's),
    // as fast as one connection goes in pipelines of 20.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let mut con = server.con();
        std::thread::spawn(move || {
            let value = vec![b'x'; 1024];
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut p = redis::pipe();
                for _ in 0..20 {
                    i += 1;
                    if i.is_multiple_of(2) {
                        p.cmd("SET")
                            .arg(format!("other:{i}"))
                            .arg(&value)
                            .arg("EX")
                            .arg(600);
                    } else {
                        // 512 keys without a TTL, rewritten: 0.5 MiB.
                        p.cmd("SET").arg(format!("plain:{}", i % 1024)).arg(&value);
                    }
                    p.ignore();
                }
                // OOM (nothing a volatile-* policy may evict) is expected.
                let _: redis::RedisResult<()> = p.query(&mut con);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let mut rows = Vec::new();
    for policy in [
        "volatile-lru",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-random",
    ] {
        config_set(&mut con, "maxmemory-policy", policy);
        let evicted = info_u64(&mut con, "stats", "evicted_keys");
        let mut epochs = BTreeSet::new();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1_500) {
            let e: Option<String> = redis::cmd("GET")
                .arg(format!("{{{test}}}:epoch"))
                .query(&mut con)
                .unwrap();
            epochs.extend(e);
            std::thread::sleep(Duration::from_millis(5));
        }
        let evicted = info_u64(&mut con, "stats", "evicted_keys") - evicted;
        rows.push((policy, evicted, epochs.len()));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    config_set(&mut con, "maxmemory-policy", "noeviction");
    config_set(&mut con, "maxmemory", "0");
    let merged = merge(workers, &paths);

    let first = *merged.keys().next().expect("no admission");
    let last = *merged.keys().last().unwrap();
    let loads: Vec<u64> = (first.saturating_sub(N - 1)..=last)
        .map(|s| {
            (s..s + N)
                .map(|w| merged.get(&w).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let fullest = loads.iter().copied().max().unwrap_or(0);
    let n_over = loads.iter().filter(|&&l| l > LIMIT).count();
    let admitted: u64 = merged.values().sum();
    let windows = last + 1 - first;
    let availability = admitted as f64 / (LIMIT as f64 * windows as f64 / N as f64);
    let per_policy: Vec<String> = rows
        .iter()
        .map(|(p, ev, ep)| format!("{p}: {ev} keys evicted, {ep} epochs"))
        .collect();
    println!(
        "eviction-table | fullest interval {fullest} of {LIMIT} | intervals over: {n_over} | availability {availability:.2} ({admitted} admitted in {windows} windows) | {} |",
        per_policy.join(", ")
    );
    for (policy, evicted, _) in &rows {
        assert!(
            *evicted > 0,
            "premise: nothing evicted under {policy}: {rows:?}"
        );
    }
    assert_eq!(
        n_over, 0,
        "{n_over} intervals over the limit (fullest {fullest}): {rows:?} {merged:?}"
    );
}

/// Under `OnEviction::Refuse` (the default), a policy switched at run
/// time to one that can evict the limit's keys takes a connected process
/// offline within a few heartbeats (every check reads the policy), and one
/// that cannot (`volatile-*`: no key of a limit has a TTL) brings it back.
#[test]
fn refuse_applies_to_a_policy_set_at_run_time() {
    let _g = serial();
    let server = Server::start();
    let mut c = Config::new(server.url(), "refuse", Duration::from_millis(250), 10);
    c.heartbeat = Duration::from_millis(20);
    let gate = RedisGate::<4>::open(c).unwrap();
    assert!(gate.is_connected());
    let mut con = server.con();
    let wait = |want: bool, why: &str| {
        let t = Instant::now();
        while gate.is_connected() != want {
            assert!(t.elapsed() < Duration::from_secs(2), "{why}");
            std::thread::sleep(Duration::from_millis(5));
        }
        t.elapsed()
    };
    config_set(&mut con, "maxmemory-policy", "allkeys-lru");
    let off = wait(false, "allkeys-lru set at run time: still connected");
    config_set(&mut con, "maxmemory-policy", "volatile-lru");
    let on = wait(true, "volatile-lru: never connected again");
    println!("eviction | allkeys-lru: offline after {off:?}; volatile-lru: connected after {on:?}");
}
