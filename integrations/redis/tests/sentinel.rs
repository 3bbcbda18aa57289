//! Redis Sentinel, against real `redis-server` processes: a master X, its
//! replica Y and one sentinel (quorum 1; its periods shortened with
//! `SENTINEL DEBUG`, see `common::Sentinel`), on loopback ports.
//!
//! Each test runs 3 worker processes (`leaparray-redis-fleet worker
//! live=1`) of 2 threads, given the `redis+sentinel://` URL, against 100 per
//! interval of 4 windows of 250 ms. Every worker appends each admission
//! to its own file as it is made; the test merges them and asserts **0
//! intervals over the limit**, and that admissions resumed after the
//! fault. Each prints one `sentinel-table` line: the fullest interval,
//! the intervals over, the availability (admissions / the most the limit
//! allows over the windows of the run, demand being above the limit
//! throughout) and the longest run of windows without an admission.
mod common;
use common::{replication, serial, Sentinel, Server};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const N: u64 = 4;
const LIMIT: u64 = 100;
const WINDOW_US: u64 = 250_000;
const WORKER: &str = env!("CARGO_BIN_EXE_leaparray-redis-fleet");

/// X, its replica Y (linked), and a sentinel that can promote Y.
fn setup() -> (Server, Server, Sentinel) {
    let x = Server::start_with(&["--repl-diskless-sync", "no"]);
    let y = Server::start_with(&[
        "--repl-diskless-sync",
        "no",
        "--replicaof",
        "127.0.0.1",
        &x.port.to_string(),
    ]);
    let s = Sentinel::start(&x, "m");
    wait("Sentinel can promote Y", || s.can_promote(&y));
    (x, y, s)
}

/// A premise, up to 60 s: a replica's full resync after a failover (an
/// RDB written to disk and loaded) can take tens of seconds on a loaded
/// host; what the tests judge does not depend on how long it took.
fn wait(what: &str, f: impl FnMut() -> bool) {
    common::wait(what, Duration::from_secs(60), f);
}

/// `SENTINEL FAILOVER` until Sentinel names `to`. Sentinel aborts a
/// failover whose promotion outlasts its failover-timeout (2 s here, which
/// a loaded host can exceed), and then names no one new: such a failover
/// is asked for again, up to 60 s in all.
fn fail_over_to(s: &Sentinel, to: &Server, what: &str) {
    let t = Instant::now();
    s.failover();
    loop {
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(10) {
            if s.master() == to.port {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(t.elapsed() < Duration::from_secs(60), "premise: {what}");
        println!("{what}: not after 10 s; SENTINEL FAILOVER again");
        s.failover();
    }
}

fn now_window() -> u64 {
    let us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    us / WINDOW_US
}

struct Fleet {
    workers: Vec<Option<Child>>,
    paths: Vec<PathBuf>,
}

/// `processes` workers on `url` for `ms`, each its own ledger file
/// `<test>-<tag><p>`.
fn launch(url: &str, test: &str, tag: &str, processes: usize, ms: u64) -> Fleet {
    let dir = std::env::temp_dir().join(format!("leaparray-sentinel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut workers = Vec::new();
    let mut paths = Vec::new();
    for p in 0..processes {
        let path = dir.join(format!("{test}-{tag}{p}"));
        let _ = std::fs::remove_file(&path);
        let child = Command::new(WORKER)
            .arg("worker")
            .arg(format!("url={url}"))
            .arg(format!("name={test}"))
            .arg(format!("ledger={}", path.display()))
            .arg(format!("duration_ms={ms}"))
            .args([
                "live=1",
                "threads=2",
                "limit=100",
                "window_ms=250",
                "grace_ms=500",
                "settle_ms=600",
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        workers.push(Some(child));
        paths.push(path);
    }
    Fleet { workers, paths }
}

impl Fleet {
    /// Waits for the workers and merges every file with `others`'.
    fn finish(self, others: Vec<Fleet>) -> BTreeMap<u64, u64> {
        let mut merged = BTreeMap::new();
        let mut all = vec![self];
        all.extend(others);
        for f in &mut all {
            for c in f.workers.iter_mut().filter_map(Option::take) {
                assert!(
                    c.wait_with_output().unwrap().status.success(),
                    "a worker failed"
                );
            }
            for p in &f.paths {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                for l in text.lines() {
                    let (w, n) = l.split_once(' ').unwrap();
                    *merged.entry(w.parse::<u64>().unwrap()).or_insert(0u64) +=
                        n.parse::<u64>().unwrap();
                }
            }
        }
        merged
    }
}

/// Redis's clock, µs.
fn redis_now(con: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    s * 1_000_000 + us
}

/// Waits until the interval ending at the current window holds the whole
/// limit at `server`, with bookings in that window; returns the window.
fn full_window(server: &Server, name: &str) -> u64 {
    let mut con = server.con();
    let t = Instant::now();
    loop {
        let cur = redis_now(&mut con) / WINDOW_US;
        let got: Vec<Option<u64>> = redis::cmd("HMGET")
            .arg(format!("{{{name}}}"))
            .arg((cur + 1 - N..=cur).collect::<Vec<u64>>())
            .query(&mut con)
            .unwrap();
        let load: u64 = got.iter().map(|n| n.unwrap_or(0)).sum();
        if got[N as usize - 1].unwrap_or(0) > 0 && load >= LIMIT {
            return cur;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "premise: no interval took the whole limit"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Prints the test's `sentinel-table` line, then asserts 0 intervals over
/// the limit and a full limit admitted after window `resumed_after`'s
/// interval.
fn judge(test: &str, merged: &BTreeMap<u64, u64>, resumed_after: u64) {
    // The run: from its first admission to the end of its last admission's
    // interval or, if later, the window before the workers' end (demand is
    // above the limit throughout: a whole run admits the limit per
    // interval, availability 1).
    let first = *merged.keys().next().expect("no admission");
    let last = (*merged.keys().last().unwrap() + N - 1).max(now_window() - 2);
    let loads: Vec<u64> = (first.saturating_sub(N - 1)..=last)
        .map(|s| {
            (s..s + N)
                .map(|w| merged.get(&w).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let fullest = loads.iter().copied().max().unwrap_or(0);
    let n_over = loads.iter().filter(|&&l| l > LIMIT).count();
    let admitted: u64 = merged.range(first..=last).map(|(_, n)| n).sum();
    let windows = last + 1 - first;
    let availability = admitted as f64 / (LIMIT as f64 * windows as f64 / N as f64);
    let mut gap = 0;
    let mut run = 0;
    for w in first..=last {
        if merged.get(&w).copied().unwrap_or(0) == 0 {
            run += 1;
            gap = gap.max(run);
        } else {
            run = 0;
        }
    }
    println!(
        "sentinel-table | {test} | fullest interval {fullest} of {LIMIT} | intervals over: {n_over} | availability {availability:.2} ({admitted} admitted in {windows} windows) | longest gap {} ms |",
        gap * WINDOW_US / 1000
    );
    assert_eq!(
        n_over, 0,
        "{test}: {n_over} intervals over the limit (fullest {fullest}): {merged:?}"
    );
    let after: u64 = merged.range(resumed_after + N..).map(|(_, n)| n).sum();
    assert!(
        after >= LIMIT,
        "{test}: admissions did not resume: {after} after window {}: {merged:?}",
        resumed_after + N
    );
}

/// The master is killed (-9) right after a window took the whole limit,
/// its replica cut off before that window (`kill -STOP`, `CLIENT KILL TYPE
/// replica`): Sentinel promotes a replica that lacks the window; the
/// fleet finds it through Sentinel and writes the window back.
#[test]
fn kill_9_of_the_master() {
    let _g = serial();
    let test = "kill9";
    let (mut x, y, s) = setup();
    let fleet = launch(&s.url(), test, "p", 3, 7_000);
    std::thread::sleep(Duration::from_millis(1_500));
    y.signal("-STOP");
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut x.con())
        .unwrap();
    let full = full_window(&x, test);
    x.kill();
    y.signal("-CONT");
    let killed = now_window();
    wait("Sentinel names Y", || s.master() == y.port);
    println!(
        "Sentinel named Y {} ms after the kill",
        (now_window() - killed) * WINDOW_US / 1000
    );
    let merged = fleet.finish(vec![]);
    judge(test, &merged, full);
}

/// `SENTINEL FAILOVER`; once Sentinel names Y (X still a master, for 4
/// publish periods), a fourth process starts and books at Y: the three on
/// X must move there too (they ask Sentinel at every heartbeat), else two
/// masters each hold a limit.
#[test]
fn planned_failover_with_a_process_starting_during_the_switch() {
    let _g = serial();
    let test = "planned";
    let (x, y, s) = setup();
    let fleet = launch(&s.url(), test, "p", 3, 6_000);
    std::thread::sleep(Duration::from_millis(1_500));
    let full = full_window(&x, test);
    fail_over_to(&s, &y, "Sentinel names Y");
    assert_eq!(
        replication(&x, "role"),
        "master",
        "premise: X is still a master"
    );
    let late = launch(&s.url(), test, "late", 1, 3_000);
    std::thread::sleep(Duration::from_millis(1_000));
    println!(
        "X's role 1 s after the late process started: {}",
        replication(&x, "role")
    );
    let merged = fleet.finish(vec![late]);
    judge(test, &merged, full);
}

/// `SENTINEL FAILOVER` to Y, then (once Sentinel has turned X into Y's
/// replica) back to X: the same redis-server process, master again.
#[test]
fn failback_to_the_same_process() {
    let _g = serial();
    let test = "failback";
    let (x, y, s) = setup();
    let fleet = launch(&s.url(), test, "p", 3, 8_000);
    std::thread::sleep(Duration::from_millis(1_500));
    fail_over_to(&s, &y, "Sentinel names Y");
    wait("Sentinel can promote X", || s.can_promote(&x));
    let full = full_window(&y, test);
    fail_over_to(&s, &x, "Sentinel names X");
    let merged = fleet.finish(vec![]);
    judge(test, &merged, full);
}

/// The master is killed (-9); once Sentinel names Y, the old master is
/// restarted empty (a master by its own configuration until Sentinel
/// turns it into a replica) and a fourth process starts while it is.
#[test]
fn old_master_restarted_empty_while_a_process_starts() {
    let _g = serial();
    let test = "restarted";
    let (mut x, y, s) = setup();
    let fleet = launch(&s.url(), test, "p", 3, 6_500);
    std::thread::sleep(Duration::from_millis(1_500));
    let full = full_window(&x, test);
    x.kill();
    wait("Sentinel names Y", || s.master() == y.port);
    x.restart();
    assert_eq!(
        replication(&x, "role"),
        "master",
        "premise: X restarted a master"
    );
    let late = launch(&s.url(), test, "late", 1, 3_000);
    std::thread::sleep(Duration::from_millis(1_000));
    println!(
        "X's role 1 s after the late process started: {}",
        replication(&x, "role")
    );
    let merged = fleet.finish(vec![late]);
    judge(test, &merged, full);
}
