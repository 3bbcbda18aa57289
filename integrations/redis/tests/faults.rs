//! The faults a real Redis has, against real `redis-server` processes: a
//! restart from an RDB snapshot older than the bookings, an AOF restart
//! (with a worker killed with it), a caller's clock one window ahead across
//! a restart, `FLUSHALL`, `kill -STOP`, a full `maxmemory`, an evicting
//! `maxmemory-policy`.
//!
//! Each fleet test runs 3 worker processes (`leaparray-redis-fleet worker
//! live=1`) of 3 threads against 100 per interval of 4 windows of 250 ms.
//! Every worker appends each admission to its own file as it is made (apart
//! from Redis, so a killed worker's admissions count); the test merges
//! them and asserts **0 intervals over the limit**, and that admissions
//! resumed after the fault. Each test prints one `fault-table` line
//! (fullest interval, intervals over) for the README's fault table.
mod common;
use common::{serial, Server};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const N: u64 = 4;
const LIMIT: u64 = 100;
const WINDOW_US: u64 = 250_000;
const WORKER: &str = env!("CARGO_BIN_EXE_leaparray-redis-fleet");

struct Fleet {
    name: String,
    workers: Vec<Option<Child>>,
    paths: Vec<PathBuf>,
}

fn launch(server: &Server, name: &str, mode: &[&str]) -> Fleet {
    let dir = std::env::temp_dir().join(format!("leaparray-faults-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut workers = Vec::new();
    let mut paths = Vec::new();
    for p in 0..3 {
        let path = dir.join(format!("p{p}"));
        let _ = std::fs::remove_file(&path);
        let child = Command::new(WORKER)
            .arg("worker")
            .arg(format!("url={}", server.url()))
            .arg(format!("name={name}"))
            .arg(format!("ledger={}", path.display()))
            .args([
                "live=1",
                "threads=3",
                "duration_ms=5000",
                "limit=100",
                "window_ms=250",
                "grace_ms=500",
                "settle_ms=600",
            ])
            .args(mode)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        workers.push(Some(child));
        paths.push(path);
    }
    Fleet {
        name: name.to_owned(),
        workers,
        paths,
    }
}

impl Fleet {
    /// Kills worker `p` (SIGKILL): its admissions so far are in its file.
    fn kill(&mut self, p: usize) {
        if let Some(mut c) = self.workers[p].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for the workers still alive and merges every file.
    fn finish(mut self) -> BTreeMap<u64, u64> {
        for c in self.workers.iter_mut().filter_map(Option::take) {
            assert!(
                c.wait_with_output().unwrap().status.success(),
                "a worker failed"
            );
        }
        let mut merged = BTreeMap::new();
        for p in &self.paths {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            for l in text.lines() {
                let (w, n) = l.split_once(' ').unwrap();
                *merged.entry(w.parse::<u64>().unwrap()).or_insert(0u64) +=
                    n.parse::<u64>().unwrap();
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

/// Waits until a window after `after` holds the whole limit in Redis (so
/// the intervals after it have no room: a fleet that forgets it passes the
/// limit). Returns that window.
fn full_window_after(server: &Server, name: &str, after: u64) -> u64 {
    let mut con = server.con();
    let t = Instant::now();
    loop {
        let cur = redis_now(&mut con) / WINDOW_US;
        let n: Option<u64> = redis::cmd("HGET")
            .arg(format!("{{{name}}}"))
            .arg(cur)
            .query(&mut con)
            .unwrap();
        if cur > after && n.unwrap_or(0) >= LIMIT {
            return cur;
        }
        if t.elapsed() > Duration::from_secs(3) {
            let all: BTreeMap<u64, u64> = redis::cmd("HGETALL")
                .arg(format!("{{{name}}}"))
                .query(&mut con)
                .unwrap();
            panic!("premise: no window after {after} took the whole limit (now {cur}): {all:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// (fullest interval of `N` windows, intervals over `limit`).
fn over(merged: &BTreeMap<u64, u64>, limit: u64) -> (u64, usize) {
    let (Some(&lo), Some(&hi)) = (merged.keys().next(), merged.keys().last()) else {
        return (0, 0);
    };
    let loads: Vec<u64> = (lo.saturating_sub(N - 1)..=hi)
        .map(|s| {
            (s..s + N)
                .map(|w| merged.get(&w).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    (
        loads.iter().copied().max().unwrap_or(0),
        loads.iter().filter(|&&l| l > limit).count(),
    )
}

/// Prints the test's `fault-table` line, then asserts 0 intervals over the
/// limit and (when `resumed_after` is given) admissions after that window.
fn judge(test: &str, merged: &BTreeMap<u64, u64>, limit: u64, resumed_after: Option<u64>) {
    let (fullest, n_over) = over(merged, limit);
    println!(
        "fault-table | {test} | fullest interval {fullest} of {limit} | intervals over: {n_over} |"
    );
    assert_eq!(
        n_over, 0,
        "{test}: {n_over} intervals over the limit {limit} (fullest {fullest}): {merged:?}"
    );
    if let Some(w) = resumed_after {
        let after: u64 = merged.range(w + N..).map(|(_, n)| n).sum();
        assert!(
            after >= limit,
            "{test}: admissions did not resume: {after} after window {}: {merged:?}",
            w + N
        );
    }
}

/// Redis restarts from a snapshot older than the fleet's latest bookings:
/// SAVE, a window after it takes the whole limit, kill -9, restart (which
/// loads dump.rdb: the epoch is the old one, the bookings since are gone).
fn rdb_restart(test: &str, mode: &[&str]) {
    let _g = serial();
    let mut server = Server::start_with(&["--dbfilename", "dump.rdb"]);
    let fleet = launch(&server, test, mode);
    std::thread::sleep(Duration::from_millis(1_500));
    let mut con = server.con();
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    let saved = redis_now(&mut con) / WINDOW_US;
    let full = full_window_after(&server, &fleet.name, saved);
    server.kill();
    server.restart();
    let merged = fleet.finish();
    judge(test, &merged, LIMIT, Some(full));
}

#[test]
fn rdb_snapshot_restart_exact() {
    rdb_restart("rdb-exact", &[]);
}

#[test]
fn rdb_snapshot_restart_lease() {
    rdb_restart("rdb-lease", &["mode=lease", "block=10"]);
}

/// An AOF restart (`appendfsync everysec`): Redis and one worker are
/// killed (-9) together right after a window took the whole limit; the
/// dead worker cannot write back, so its bookings must come from the AOF.
#[test]
fn aof_restart_with_a_worker_killed() {
    let _g = serial();
    let test = "aof";
    let mut server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "everysec"]);
    let mut fleet = launch(&server, test, &[]);
    std::thread::sleep(Duration::from_millis(1_500));
    let full = full_window_after(&server, test, 0);
    server.kill();
    fleet.kill(0);
    server.restart();
    let merged = fleet.finish();
    judge(test, &merged, LIMIT, Some(full));
}

/// `FLUSHALL` right after a window took the whole limit.
#[test]
fn flushall_mid_interval() {
    let _g = serial();
    let test = "flushall";
    let server = Server::start();
    let fleet = launch(&server, test, &["mode=lease", "block=10"]);
    std::thread::sleep(Duration::from_millis(1_500));
    let full = full_window_after(&server, test, 0);
    let _: () = redis::cmd("FLUSHALL").query(&mut server.con()).unwrap();
    let merged = fleet.finish();
    judge(test, &merged, LIMIT, Some(full));
}

/// `kill -STOP` for 600 ms (12 timeouts) right after a window took the
/// whole limit, then `kill -CONT`.
#[test]
fn sigstop_600_ms() {
    let _g = serial();
    let test = "sigstop";
    let server = Server::start();
    let fleet = launch(&server, test, &[]);
    std::thread::sleep(Duration::from_millis(1_500));
    let full = full_window_after(&server, test, 0);
    server.signal("-STOP");
    std::thread::sleep(Duration::from_millis(600));
    server.signal("-CONT");
    let merged = fleet.finish();
    judge(test, &merged, LIMIT, Some(full));
}
