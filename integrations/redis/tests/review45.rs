//! Hostile review of issue 45 (branch `rev45`): reproducers against real
//! `redis-server` / `redis-sentinel` on loopback, each pinning the fix of
//! the defect it showed, and probes that held; run one with
//! `cargo test -p leaparray-redis --test review45 <name> -- --nocapture`.
mod common;
use common::{serial, Proxy, Server};
use leaparray_redis::{Config, Decision, RedisGate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn redis_now(server: &Server) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.con()).unwrap();
    s * 1_000_000 + us
}

/// Admissions per window, counting `n` permits per decision.
#[derive(Default)]
struct Permits(std::collections::BTreeMap<u64, u64>);

impl Permits {
    fn note(&mut self, d: Decision, n: u64) {
        if let Some(w) = d.window() {
            *self.0.entry(w).or_insert(0) += n;
        }
    }
    fn worst(&self, n: u64) -> u64 {
        self.0
            .keys()
            .map(|&w| self.0.range(w..w + n).map(|(_, c)| c).sum())
            .max()
            .unwrap_or(0)
    }
}

/// A fleet with one process near Redis (B, direct) and one far (A, through
/// a proxy adding `each_way_ms` each way), each configured as the README
/// says for its own link: A's `timeout` is twice its measured round trip
/// and its `restart_grace` its least (`Config::min_restart_grace`); B
/// is configured by `near` (a valid configuration: `open` accepts it). A
/// admits the whole limit (one decision of 100) early in a window, Redis
/// restarts empty, both keep asking. Returns the fullest interval (4
/// windows of 250 ms, limit 100) and the ledger.
fn near_and_far_restart(each_way_ms: u64, near: impl FnOnce(Config) -> Config) -> (u64, Permits) {
    let mut server = Server::start();
    let proxy = Proxy::start(server.port);
    proxy.delay(each_way_ms);
    let c = Config::new(proxy.url(), "probe", Duration::from_millis(250), 100)
        .timeout(Duration::from_secs(2));
    let probe = RedisGate::<4>::open(c.clone().restart_grace(c.min_restart_grace())).unwrap();
    let rtt = probe.round_trip().expect("measured");
    drop(probe);
    let timeout = rtt * 2;
    let mut ca =
        Config::new(proxy.url(), "mixed", Duration::from_millis(250), 100).timeout(timeout);
    ca = ca.clone().restart_grace(ca.min_restart_grace());
    let a = RedisGate::<4>::open(ca.clone()).unwrap();
    let cb = near(Config::new(
        server.url(),
        "mixed",
        Duration::from_millis(250),
        100,
    ));
    let b_grace = cb.restart_grace;
    let b = RedisGate::<4>::open(cb).unwrap();
    println!(
        "review45 near/far: rtt {rtt:?}, A timeout {timeout:?} grace {:?}, B grace {b_grace:?}",
        ca.restart_grace
    );
    // Past the first start's fence (A's grace: A made the epoch), then
    // early in a window.
    std::thread::sleep(ca.restart_grace + Duration::from_millis(300));
    while redis_now(&server) % 250_000 > 30_000 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let ledger = Mutex::new(Permits::default());
    let d = a.try_acquire(100);
    assert!(d.is_admitted(), "premise: A admits the whole limit: {d:?}");
    let w = d.window().unwrap();
    ledger.lock().unwrap().note(d, 100);
    server.kill();
    server.restart();
    let t = Instant::now();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for g in [&a, &b] {
            let (stop, ledger) = (&stop, &ledger);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let d = g.try_acquire(1);
                    ledger.lock().unwrap().note(d, 1);
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        std::thread::sleep(Duration::from_millis(2_000));
        stop.store(true, Ordering::Relaxed);
    });
    let ledger = ledger.into_inner().unwrap();
    let worst = ledger.worst(4);
    println!(
        "review45 near/far restart: window {w}, fullest interval {worst} of 100 in {:?}: {:?}; A {:?}; B {:?}",
        t.elapsed(),
        ledger.0,
        a.stats(),
        b.stats()
    );
    (worst, ledger)
}

/// README ("Slow links", "Deployment: Everywhere, set"): `timeout >= 2 x`
/// each process's round trip and `restart_grace >=
/// Config::min_restart_grace()`. A far process (200 ms round trip, timeout
/// 2x, restart_grace at its documented minimum) and a near one with every
/// default (grace 500 ms): a restart of Redis stays within the limit (the
/// near process, first to reach Redis, fences for the far one's grace).
#[test]
fn a_far_process_writes_back_within_a_near_process_fence_defaults() {
    let _g = serial();
    let (worst, _) = near_and_far_restart(100, |c| c);
    assert!(worst <= 100, "fullest interval {worst} of 100");
}

/// The same with A 100 ms away and B's grace at its documented minimum
/// with short timings (heartbeat and max_backoff 10 ms, timeout 20 ms:
/// 130 ms).
#[test]
fn a_far_process_writes_back_within_a_near_process_fence_minimal_grace() {
    let _g = serial();
    let (worst, _) = near_and_far_restart(50, |mut c| {
        c.heartbeat = Duration::from_millis(10);
        c.max_backoff = Duration::from_millis(10);
        let c = c.timeout(Duration::from_millis(20));
        let least = c.min_restart_grace();
        c.restart_grace(least)
    });
    assert!(worst <= 100, "fullest interval {worst} of 100");
}

/// TLS (feature `tls`): a server whose certificate has expired (signed by
/// the CA the gate trusts, names 127.0.0.1): `open` must say so
/// (`Error::Tls` naming the expiry), never a gate that refuses everything.
#[cfg(feature = "tls")]
#[test]
fn an_expired_server_certificate_is_error_tls_of_open() {
    use leaparray_redis::Error;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("leaparray-rev45-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, "rev45 CA");
    let ca = p.self_signed(&ca_key).unwrap();
    let leaf = |name: &str, expired: bool| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        if expired {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        (
            p.signed_by(&key, &ca, &ca_key).unwrap().pem(),
            key.serialize_pem(),
        )
    };
    let server = leaf("redis", true);
    let client = leaf("client", false);
    for (f, pem) in [
        ("ca.crt", ca.pem()),
        ("server.crt", server.0),
        ("server.key", server.1),
    ] {
        std::fs::write(dir.join(f), pem).unwrap();
    }
    let tls_port = common::free_port();
    let f = |n: &str| dir.join(n).display().to_string();
    let _s = Server::start_with(&[
        "--tls-port",
        &tls_port.to_string(),
        "--tls-cert-file",
        &f("server.crt"),
        "--tls-key-file",
        &f("server.key"),
        "--tls-ca-cert-file",
        &f("ca.crt"),
    ]);
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", tls_port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(10));
    }
    let cfg = Config::new(
        format!("rediss://127.0.0.1:{tls_port}/"),
        "expired",
        Duration::from_millis(250),
        100,
    )
    .timeout(Duration::from_millis(250))
    .restart_grace(Duration::from_secs(2))
    .tls_roots(ca.pem())
    .tls_client(client.0, client.1);
    let r = RedisGate::<4>::open(cfg);
    println!("review45 expired certificate: {r:?}");
    let _ = std::fs::remove_dir_all(&dir);
    match r {
        Err(Error::Tls(why)) => assert!(why.to_lowercase().contains("expired"), "{why}"),
        other => panic!("an expired certificate: {other:?}"),
    }
}

/// Waits until the interval ending at Redis's current window holds the
/// whole limit with bookings in that window; returns the window.
fn full_window(server: &Server, name: &str) -> u64 {
    let mut con = server.con();
    let t = Instant::now();
    loop {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut con).unwrap();
        let cur = (s * 1_000_000 + us) / 250_000;
        let got: Vec<Option<u64>> = redis::cmd("HMGET")
            .arg(format!("{{{name}}}"))
            .arg((cur - 3..=cur).collect::<Vec<u64>>())
            .query(&mut con)
            .unwrap();
        let load: u64 = got.iter().map(|n| n.unwrap_or(0)).sum();
        if got[3].unwrap_or(0) > 0 && load >= 100 {
            return cur;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "premise: no full interval"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn del(con: &mut redis::Connection, keys: &[String]) {
    let _: i64 = redis::cmd("DEL").arg(keys).query(con).unwrap();
}

/// The limit's keys deleted on a live master (no restart), each alone, in
/// exact mode, and the counters hash and `{name}:run` in lease mode
/// (blocks of 10): seen at the next call that names them (README table:
/// the `FLUSHALL` row; an `allkeys-*` eviction of one key is the same),
/// 0 intervals over. One server, a limit per case, side by side: 2 gates
/// of 1 paced thread each (100 per 4 windows of 250 ms); once a limit's
/// interval is full its key is deleted, and its admissions are judged per
/// interval 1.2 s later (past the fence, 500 ms, to the end of the
/// interval that was full). Red with the script's `HGET {name} epoch`
/// comparison removed: the hash deleted alone gives 200 of 100.
#[test]
fn deleting_any_key_of_the_limit_on_a_live_master_keeps_the_limit() {
    let _g = serial();
    let server = Server::start();
    let cases = [
        ("", None),
        (":epoch", None),
        (":run", None),
        (":restored", None),
        ("", Some(10)),
        (":run", Some(10)),
    ];
    let worst: Vec<u64> = std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, &(key, lease))| {
                let server = &server;
                s.spawn(move || {
                    let name = format!("del{i}");
                    let gates: Vec<RedisGate<4>> = (0..2)
                        .map(|_| {
                            let mut c =
                                Config::new(server.url(), &name, Duration::from_millis(250), 100);
                            if let Some(b) = lease {
                                c = c.lease(b);
                            }
                            RedisGate::<4>::open(c).unwrap()
                        })
                        .collect();
                    std::thread::sleep(Duration::from_millis(600)); // the first start's fence
                    let ledger = Mutex::new(Permits::default());
                    let stop = AtomicBool::new(false);
                    std::thread::scope(|s| {
                        for g in &gates {
                            let (stop, ledger) = (&stop, &ledger);
                            s.spawn(move || {
                                while !stop.load(Ordering::Relaxed) {
                                    let d = g.try_acquire(1);
                                    ledger.lock().unwrap().note(d, 1);
                                    std::thread::sleep(Duration::from_millis(1));
                                }
                            });
                        }
                        let w = full_window(server, &name);
                        del(&mut server.con(), &[format!("{{{name}}}{key}")]);
                        std::thread::sleep(Duration::from_millis(1_200));
                        stop.store(true, Ordering::Relaxed);
                        println!("review45 {name}: {{{name}}}{key} deleted ({lease:?}) after window {w} filled the interval");
                    });
                    let l = ledger.into_inner().unwrap();
                    let worst = l.worst(4);
                    println!("review45 {name}: fullest interval {worst} of 100: {:?}", l.0);
                    worst
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for ((key, lease), worst) in cases.iter().zip(&worst) {
        assert!(
            *worst <= 100,
            "{{name}}{key} deleted ({lease:?}): fullest interval {worst}"
        );
    }
}

/// Two sentinels watching the same master (quorum 1, Sentinel's default
/// publish period of 2 s): how long after the one that ran `SENTINEL
/// FAILOVER` names the new master does the other still name the old one?
/// (Processes whose kept sentinel connection is the other one stay on the
/// old master meanwhile; README: "the process follows the master the
/// sentinels name within one heartbeat".)
#[test]
fn two_sentinels_disagree_for_how_long() {
    let _g = serial();
    let x = Server::start_with(&["--repl-diskless-sync", "no"]);
    let y = Server::start_with(&[
        "--repl-diskless-sync",
        "no",
        "--replicaof",
        "127.0.0.1",
        &x.port.to_string(),
    ]);
    let s1 = common::Sentinel::start(&x, "m");
    let s2 = common::Sentinel::start(&x, "m");
    for s in [&s1, &s2] {
        let _: () = redis::cmd("SENTINEL")
            .arg("DEBUG")
            .arg(&["publish-period", "2000"][..])
            .query(&mut s.con())
            .unwrap();
    }
    common::wait("S2 can promote Y", Duration::from_secs(20), || {
        s2.can_promote(&y)
    });
    common::wait(
        "the sentinels know each other",
        Duration::from_secs(20),
        || {
            let v: Vec<std::collections::HashMap<String, String>> = redis::cmd("SENTINEL")
                .arg("SENTINELS")
                .arg("m")
                .query(&mut s1.con())
                .unwrap();
            !v.is_empty()
        },
    );
    s2.failover();
    let t = Instant::now();
    let (mut s2_at, mut s1_at) = (None, None);
    while t.elapsed() < Duration::from_secs(15) && (s2_at.is_none() || s1_at.is_none()) {
        if s2_at.is_none() && s2.master() == y.port {
            s2_at = Some(t.elapsed());
        }
        if s1_at.is_none() && s1.master() == y.port {
            s1_at = Some(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    println!("review45 two sentinels: S2 (failover) names Y at {s2_at:?}, S1 at {s1_at:?}; X's role then: {}", common::replication(&x, "role"));
    // Within the default fence (500 ms) less a heartbeat and a backoff, a
    // process on S1 still moves before the fence that one on S2 started ends.
    let gap = s1_at.unwrap().saturating_sub(s2_at.unwrap());
    assert!(
        gap < Duration::from_millis(350),
        "the sentinels disagreed for {gap:?}"
    );
}

/// The warnings and errors the crate logs, kept for the tests to read.
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());
struct Capture;
impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            LOGGED
                .lock()
                .unwrap()
                .push(format!("{} {}", r.level(), r.args()));
        }
    }
    fn flush(&self) {}
}
fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
    });
}

/// A misconfiguration that Redis (or Sentinel) answers clearly is an
/// error of `open` that names it (GUIDE: "never a value that silently
/// refuses everything"). Returns (open's result as text, what the logs
/// said about the limit within 1.5 s if it opened).
fn misconfigured(url: String, name: &str) -> (String, Vec<String>) {
    capture_logs();
    let r = RedisGate::<4>::open(Config::new(url, name, Duration::from_millis(250), 100));
    let what = match &r {
        Ok(g) => {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(1_500) {
                let _ = g.try_acquire(1);
                std::thread::sleep(Duration::from_millis(5));
            }
            format!("Ok(gate), connected {}, {:?}", g.is_connected(), g.stats())
        }
        Err(e) => format!("Err({e})"),
    };
    let logs = LOGGED
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(&format!("leaparray-redis {name}:")))
        .cloned()
        .collect();
    (what, logs)
}

/// What `open`'s error names, per test below.
const NAMED: [&str; 3] = ["password", "master's name", "database index"];

/// A wrong password: Redis answers `WRONGPASS` on every connection.
#[test]
fn a_wrong_password_is_named() {
    let _g = serial();
    let server = Server::start_with(&["--requirepass", "right"]);
    let (what, logs) = misconfigured(
        format!("redis://:wrong@127.0.0.1:{}/", server.port),
        "limit-a",
    );
    println!("review45 wrong password: {what}; logs: {logs:#?}");
    // `open` names it (GUIDE: never a value that silently refuses
    // everything).
    assert!(
        what.starts_with("Err(leaparray-redis: invalid configuration:"),
        "a wrong password: {what}; logs: {logs:#?}"
    );
    assert!(
        what.contains(NAMED[0]),
        "a wrong password: {what}; logs: {logs:#?}"
    );
}

/// A master name the sentinel does not know (a typo in the URL):
/// Sentinel answers a null.
#[test]
fn an_unknown_sentinel_master_name_is_named() {
    let _g = serial();
    let x = Server::start();
    let s = common::Sentinel::start(&x, "m");
    let (what, logs) = misconfigured(
        format!("redis+sentinel://127.0.0.1:{}/typo", s.port),
        "limit-b",
    );
    println!("review45 unknown master name: {what}; logs: {logs:#?}");
    // `open` names it (GUIDE: never a value that silently refuses
    // everything).
    assert!(
        what.starts_with("Err(leaparray-redis: invalid configuration:"),
        "an unknown master name: {what}; logs: {logs:#?}"
    );
    assert!(
        what.contains(NAMED[1]),
        "an unknown master name: {what}; logs: {logs:#?}"
    );
}

/// A database index the server does not have (`SELECT 99` fails).
#[test]
fn a_database_out_of_range_is_named() {
    let _g = serial();
    let server = Server::start();
    let (what, logs) = misconfigured(format!("redis://127.0.0.1:{}/99", server.port), "limit-c");
    println!("review45 db 99: {what}; logs: {logs:#?}");
    // `open` names it (GUIDE: never a value that silently refuses
    // everything).
    assert!(
        what.starts_with("Err(leaparray-redis: invalid configuration:"),
        "db 99: {what}; logs: {logs:#?}"
    );
    assert!(what.contains(NAMED[2]), "db 99: {what}; logs: {logs:#?}");
}

/// The password rotated on a running Redis (`CONFIG SET requirepass`,
/// the old connections killed): the keeper's reconnections are refused,
/// and its log names the password, not the network.
#[test]
fn a_password_changed_at_run_time_is_named_in_the_log() {
    let _g = serial();
    capture_logs();
    let server = Server::start_with(&["--requirepass", "before"]);
    let name = "limit-d";
    let gate = RedisGate::<4>::open(Config::new(
        format!("redis://:before@127.0.0.1:{}/", server.port),
        name,
        Duration::from_millis(250),
        100,
    ))
    .unwrap();
    assert!(gate.is_connected());
    let mut admin = redis::Client::open(format!("redis://:before@127.0.0.1:{}/", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "after"][..])
        .query(&mut admin)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal"][..])
        .query(&mut admin)
        .unwrap();
    let said =
        |l: &String| l.contains(&format!("leaparray-redis {name}:")) && l.contains("password");
    let t = Instant::now();
    while !LOGGED.lock().unwrap().iter().any(said) {
        let _ = gate.try_acquire(1);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "not named: {:#?}",
            LOGGED.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!gate.is_connected());
    println!(
        "review45 password rotated: {:?}",
        LOGGED.lock().unwrap().iter().find(|l| said(l))
    );
}
