//! Against a real Redis: this harness starts its own `redis-server` on a
//! free loopback port (and kills it on drop, panics included), and launches
//! several worker processes (`leaparray-redis-fleet worker`), each with
//! several threads, sharing one limit. Each worker writes a ledger of its
//! admissions per Redis window; the test merges them.
//!
//! Tolerances (stated, and wide enough for a loaded 2-core machine):
//! no interval of `N` windows over the limit, ever; when demand exceeds
//! the limit, the mean load of the intervals in the middle of the run is
//! at least 80% of the limit.
mod common;
use common::{serial, Server};
use leaparray_redis::{Config, Decision, FaultPolicy, RedisGate};
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const N: u64 = 4;
const WORKER: &str = env!("CARGO_BIN_EXE_leaparray-redis-fleet");

/// The shortest `restart_grace` the default timings allow
/// (`Config::min_restart_grace`: max(heartbeat 50 ms, max_backoff 100 ms)
/// + 6 x timeout 50 ms): a short first-start fence.
const GRACE: Duration = Duration::from_millis(400);

/// Launches `processes` workers with `args`; returns them and their ledger paths.
fn launch(
    server: &Server,
    name: &str,
    processes: usize,
    args: &[&str],
) -> (Vec<Child>, Vec<std::path::PathBuf>) {
    let dir = std::env::temp_dir().join(format!("leaparray-redis-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut children = Vec::new();
    let mut paths = Vec::new();
    for p in 0..processes {
        let path = dir.join(format!("p{p}"));
        let _ = std::fs::remove_file(&path);
        let child = Command::new(WORKER)
            .arg("worker")
            .arg(format!("url={}", server.url()))
            .arg(format!("name={name}"))
            .arg(format!("ledger={}", path.display()))
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        children.push(child);
        paths.push(path);
    }
    (children, paths)
}

fn finish(children: Vec<Child>, paths: &[std::path::PathBuf]) -> BTreeMap<u64, u64> {
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a worker failed");
    }
    let mut merged = BTreeMap::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap();
        for l in text.lines() {
            let (w, n) = l.split_once(' ').unwrap();
            *merged.entry(w.parse::<u64>().unwrap()).or_insert(0u64) += n.parse::<u64>().unwrap();
        }
    }
    merged
}

/// Every interval of `N` windows that holds an admission: (first window, load).
fn loads(merged: &BTreeMap<u64, u64>) -> Vec<(u64, u64)> {
    let (lo, hi) = (
        *merged.keys().next().unwrap(),
        *merged.keys().last().unwrap(),
    );
    (lo.saturating_sub(N - 1)..=hi)
        .map(|s| {
            (
                s,
                (s..s + N)
                    .map(|w| merged.get(&w).copied().unwrap_or(0))
                    .sum(),
            )
        })
        .collect()
}

fn assert_never_over(merged: &BTreeMap<u64, u64>, limit: u64) {
    assert!(!merged.is_empty(), "nothing was admitted");
    let over: Vec<_> = loads(merged)
        .into_iter()
        .filter(|&(_, l)| l > limit)
        .collect();
    assert!(
        over.is_empty(),
        "intervals over the limit {limit}: {over:?}\nledger: {merged:?}"
    );
}

/// The mean load of the intervals in the middle of the run (an interval's
/// margin cut at each end) is at least 80% of the limit.
fn assert_close(merged: &BTreeMap<u64, u64>, limit: u64) {
    let l = loads(merged);
    let middle = &l[(2 * N) as usize..l.len() - (2 * N) as usize];
    let mean = middle.iter().map(|&(_, l)| l).sum::<u64>() as f64 / middle.len() as f64;
    assert!(
        mean >= 0.8 * limit as f64,
        "mean load {mean:.1} of {} intervals, limit {limit}: {merged:?}",
        middle.len()
    );
}

#[test]
fn exact_mode_fleet_never_over_and_close_to_the_limit() {
    let _g = serial();
    let server = Server::start();
    let (ch, paths) = launch(
        &server,
        "exact",
        3,
        &[
            "threads=3",
            "duration_ms=4000",
            "limit=60",
            "window_ms=250",
            "settle_ms=600",
        ],
    );
    let merged = finish(ch, &paths);
    assert_never_over(&merged, 60);
    assert_close(&merged, 60);
}

#[test]
fn lease_mode_fleet_never_over_and_close_to_the_limit() {
    let _g = serial();
    let server = Server::start();
    let (ch, paths) = launch(
        &server,
        "lease",
        3,
        &[
            "threads=3",
            "duration_ms=4000",
            "limit=400",
            "window_ms=250",
            "mode=lease",
            "block=20",
            "settle_ms=600",
        ],
    );
    let merged = finish(ch, &paths);
    assert_never_over(&merged, 400);
    assert_close(&merged, 400);
}

/// Kills Redis right after a window took the whole limit (so the intervals
/// after the restart overlap it: without the write-back they pass the
/// limit), restarts it empty 200 ms later, and checks the merged ledger.
fn restart_mid_run(mode: &[&str], limit: u64) {
    let _g = serial();
    let mut server = Server::start();
    let window_us = 500_000;
    let mut args = vec![
        "threads=2",
        "duration_ms=8000",
        "window_ms=500",
        "grace_ms=500",
    ];
    let limit_arg = format!("limit={limit}");
    args.push(&limit_arg);
    args.extend_from_slice(mode);
    let (ch, paths) = launch(&server, "restart", 3, &args);
    std::thread::sleep(Duration::from_millis(1_500));
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let t = Instant::now();
    loop {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut con).unwrap();
        let cur = (s * 1_000_000 + us) / window_us;
        let n: Option<u64> = redis::cmd("HGET")
            .arg("{restart}")
            .arg(cur)
            .query(&mut con)
            .unwrap();
        if n.unwrap_or(0) >= limit || t.elapsed() > Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill();
    std::thread::sleep(Duration::from_millis(200));
    server.restart();
    let back = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
        / window_us;
    let merged = finish(ch, &paths);
    assert_never_over(&merged, limit);
    let before: u64 = merged.range(..back).map(|(_, n)| n).sum();
    let after: u64 = merged.range(back + 2..).map(|(_, n)| n).sum();
    assert!(
        before > 0 && after >= limit,
        "decisions did not resume by themselves: {before} before, {after} after: {merged:?}"
    );
}

#[test]
fn exact_mode_survives_a_redis_restart() {
    restart_mid_run(&[], 60);
}

#[test]
fn lease_mode_survives_a_redis_restart() {
    restart_mid_run(&["mode=lease", "block=10"], 200);
}

/// The largest number of `times` (µs) in a span of one second starting at
/// one of `starts`.
fn worst_second(times: &[u64], starts: impl Iterator<Item = u64>) -> usize {
    starts
        .map(|a| {
            times
                .iter()
                .filter(|&&t| t >= a && t < a + 1_000_000)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn connected<const W: usize>(g: &RedisGate<W>) {
    let t = Instant::now();
    while !g.is_connected() {
        assert!(t.elapsed() < Duration::from_secs(10), "never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The seed's traffic, 20, 80, 80, 20 per half second against 100 per
/// second, at the caller's (injected) time: deterministic.
#[test]
fn boundary_traffic_fixed_window_160_leaparray_redis_100() {
    let _g = serial();
    let server = Server::start();
    let t0: u64 = 1_700_000_000_000_000; // a whole second, µs
    let mut requests = Vec::new();
    for (k, count) in [20u64, 80, 80, 20].into_iter().enumerate() {
        for i in 0..count {
            requests.push(t0 + k as u64 * 500_000 + i * (500_000 / count));
        }
    }
    // envoyproxy/ratelimit's fixed window: INCRBY + EXPIRE on the second's key.
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut fixed = Vec::new();
    for &t in &requests {
        let key = format!("fixed:{}", t / 1_000_000);
        let (n, _): (u64, bool) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .expire(&key, 2)
            .query(&mut con)
            .unwrap();
        if n <= 100 {
            fixed.push(t);
        }
    }
    let gate = RedisGate::<2>::open(
        Config::new(server.url(), "boundary", Duration::from_millis(500), 100)
            .restart_grace(GRACE)
            .timeout(Duration::from_millis(50)),
    )
    .unwrap();
    connected(&gate);
    std::thread::sleep(GRACE * 2); // past the first start's fence
    let mut sliding = Vec::new();
    for &t in &requests {
        if let Decision::Admitted { window } = gate.try_acquire_at(t, 1) {
            assert_eq!(window, t / 500_000);
            sliding.push(t);
        }
    }
    // Spans of whole half seconds (the traffic's own grain), then any span
    // (one that cuts a window: 115, as the core's `boundary` example says).
    let halves = || (0..4).map(|k| t0 - 500_000 + k * 500_000);
    assert_eq!((fixed.len(), worst_second(&fixed, halves())), (200, 160));
    assert_eq!(
        (sliding.len(), worst_second(&sliding, halves())),
        (140, 100)
    );
    assert_eq!(worst_second(&fixed, fixed.iter().copied()), 160);
    assert_eq!(worst_second(&sliding, sliding.iter().copied()), 115);
}

/// The crate's `no_run` examples, run: open, decide, lease, the fault policy.
#[test]
fn the_documented_calls_work_against_redis() {
    let _g = serial();
    let server = Server::start();
    let grace = GRACE;
    let gate = RedisGate::<2>::open(
        Config::new(server.url(), "b", Duration::from_millis(500), 10)
            .restart_grace(grace)
            .timeout(Duration::from_millis(50)),
    )
    .unwrap();
    connected(&gate);
    std::thread::sleep(GRACE * 2);
    assert_eq!(
        gate.try_acquire_at(1_000_000, 1),
        Decision::Admitted { window: 2 }
    );
    assert!(gate.try_acquire(1).is_admitted());
    assert_eq!(gate.stats().round_trips, 2);

    let config = Config::new(server.url(), "api", Duration::from_millis(250), 1_000)
        .lease(50)
        .on_fault(FaultPolicy::Local { share: 100 })
        .restart_grace(grace)
        .timeout(Duration::from_millis(50));
    let leased = RedisGate::<4>::open(config).unwrap();
    connected(&leased);
    std::thread::sleep(GRACE * 2);
    let before = leased.stats().round_trips;
    let mut admitted = 0;
    for _ in 0..40 {
        admitted += u32::from(leased.try_acquire(1).is_admitted());
    }
    // 40 decisions from one block, unless a window ended in between.
    assert_eq!(admitted, 40);
    assert!(
        leased.stats().round_trips - before <= 2,
        "{:?}",
        leased.stats()
    );

    // A request that can never fit is refused without refusing small ones.
    assert_eq!(leased.try_acquire(2_000), Decision::Refused);
    assert!(leased.try_acquire(11).is_admitted()); // more than the block has left

    // Redis away: the local share admits, then refuses.
    drop(server);
    let t = Instant::now();
    while leased.is_connected() || matches!(leased.try_acquire(0), Decision::Admitted { .. }) {
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(5));
    }
    let local = (0..200)
        .filter(|_| matches!(leased.try_acquire(1), Decision::AdmittedLocally { .. }))
        .count();
    assert!((1..=100).contains(&local), "{local}");
}

fn booked(url: &str, name: &str) -> u64 {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    common::counts(&mut con, name).values().sum::<i64>() as u64
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The local share's admissions reach Redis when it is back: flushed after
/// a pause (same epoch), written back with the ledger after a restart.
#[test]
fn local_admissions_are_written_to_redis_when_it_is_back() {
    let _g = serial();
    let mut server = Server::start();
    let config = Config::new(server.url(), "local", Duration::from_secs(2), 1_000)
        .on_fault(FaultPolicy::Local { share: 5 })
        .restart_grace(GRACE)
        .timeout(Duration::from_millis(50));
    let gate = RedisGate::<4>::open(config).unwrap();
    connected(&gate);
    std::thread::sleep(GRACE * 2);
    assert!(matches!(gate.try_acquire(2), Decision::Admitted { .. }));

    // Redis stops answering (CLIENT PAUSE): timeouts, then the local share.
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(400)
        .arg("ALL")
        .query(&mut con)
        .unwrap();
    wait_until("a decision refused by the pause", || {
        !matches!(gate.try_acquire(0), Decision::Admitted { .. })
    });
    assert!(matches!(
        gate.try_acquire(3),
        Decision::AdmittedLocally { .. }
    ));
    wait_until("reconnected", || gate.is_connected());
    wait_until("the local admissions flushed", || {
        booked(&server.url(), "local") == 5
    });

    // Redis restarts empty: the ledger (now 5) is written back.
    server.kill();
    wait_until("disconnected", || {
        let _ = gate.try_acquire(0);
        !gate.is_connected()
    });
    assert!(matches!(
        gate.try_acquire(2),
        Decision::AdmittedLocally { .. }
    ));
    server.restart();
    wait_until("reconnected", || gate.is_connected());
    wait_until("the ledger written back", || {
        booked(&server.url(), "local") == 7
    });
}
