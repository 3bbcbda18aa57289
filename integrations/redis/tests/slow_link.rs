//! A slow link to a real `redis-server`: the test's own TCP proxy on
//! loopback delays every byte by 50 ms each way (a round trip of 100 ms).
//!
//! * With the default timeout (50 ms) a link that turns slow at run time
//!   loses every decision: each one is counted (`Stats::faulted`,
//!   `Stats::timeouts`) and logged (at most once per interval), and
//!   `open` on the slow link refuses (`Error::SlowLink`).
//! * With the documented setting (`timeout` at least 2 x the round trip,
//!   here 250 ms), 3 gates of 2 threads keep their decisions: availability
//!   (decisions Redis decided / decisions) >= 0.99, printed on one
//!   `slow-link-table` line.
mod common;
use common::{serial, Proxy, Server};
use leaparray_redis::{Config, Decision, Error, RedisGate};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// The warnings and errors the crate logs, kept for the tests to read.
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let line = format!("{} {}", r.level(), r.args());
            println!("log: {line}");
            LOGGED.lock().unwrap().push(line);
        }
    }
    fn flush(&self) {}
}

fn capture_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
    });
}

fn logged(name: &str, what: &str) -> Vec<String> {
    LOGGED
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(&format!("leaparray-redis {name}:")) && l.contains(what))
        .cloned()
        .collect()
}

/// The default timeout (50 ms) on a link that turns slow at run time (50
/// ms each way): every decision is lost, and each is counted and logged.
#[test]
fn a_link_slower_than_the_timeout_is_counted_and_logged() {
    let _g = serial();
    capture_logs();
    let server = Server::start();
    let proxy = Proxy::start(server.port);
    let cfg = Config::new(proxy.url(), "slow", Duration::from_millis(250), 100);
    let gate = RedisGate::<4>::open(cfg.clone()).unwrap();
    assert!(
        gate.is_connected(),
        "premise: connected before the link slows"
    );
    proxy.delay(50);
    let unavailable = AtomicU64::new(0);
    let decisions = AtomicU64::new(0);
    let t = Instant::now();
    let run = Duration::from_millis(2_100);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while t.elapsed() < run {
                    decisions.fetch_add(1, Ordering::Relaxed);
                    if gate.try_acquire(1) == Decision::Unavailable {
                        unavailable.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
    });
    let elapsed = t.elapsed();
    // The keeper's next report (it reports at most once per interval).
    std::thread::sleep(Duration::from_millis(1_100));
    let stats = gate.stats();
    let reports = logged("slow", "decided by the fault policy");
    let unavailable = unavailable.into_inner();
    println!(
        "slow-link-table | default timeout 50 ms, 50 ms each way | {} decisions, {unavailable} unavailable | stats: faulted {}, timeouts {} | {} reports in {elapsed:?} + 1.1 s |",
        decisions.into_inner(),
        stats.faulted,
        stats.timeouts,
        reports.len()
    );
    assert!(unavailable > 0, "premise: decisions were lost");
    assert_eq!(stats.faulted, unavailable, "every lost decision is counted");
    assert!(stats.timeouts > 0, "the timeouts are counted: {stats:?}");
    assert!(!reports.is_empty(), "the loss was not logged");
    // At most once per interval (1 s): 3.2 s of run and wait.
    assert!(reports.len() <= 4, "{reports:#?}");

    // `open` on the slow link measures it and refuses.
    match RedisGate::<4>::open(cfg) {
        Err(Error::SlowLink {
            round_trip,
            timeout,
        }) => {
            println!("slow-link-table | open: SlowLink, round trip {round_trip:?}, timeout {timeout:?} |");
            assert!(round_trip >= Duration::from_millis(100), "{round_trip:?}");
        }
        other => panic!("open on a link slower than the timeout: {other:?}"),
    }
}

/// The documented setting: `timeout` at least 2 x the round trip (100 ms
/// here: 250 ms). 3 gates of 2 threads, exact mode, for 3 s: at least 99 %
/// of the decisions are Redis's.
#[test]
fn the_documented_timeout_keeps_decisions_on_a_slow_link() {
    let _g = serial();
    capture_logs();
    let server = Server::start();
    let proxy = Proxy::start(server.port);
    proxy.delay(50);
    let timeout = Duration::from_millis(250);
    let gates: Vec<RedisGate<4>> = (0..3)
        .map(|_| {
            let c = Config::new(proxy.url(), "documented", Duration::from_millis(250), 100)
                .timeout(timeout);
            RedisGate::<4>::open(c.clone().restart_grace(c.min_restart_grace())).unwrap()
        })
        .collect();
    let t = Instant::now();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for g in &gates {
            for _ in 0..2 {
                let stop = &stop;
                s.spawn(move || {
                    // Paced, as callers are: the share of decisions is then
                    // a share of time (a reconnection costs the decisions
                    // of its duration), not of a spinning caller's refusals.
                    while !stop.load(Ordering::Relaxed) {
                        let _ = g.try_acquire(1);
                        std::thread::sleep(Duration::from_millis(2));
                    }
                });
            }
        }
        std::thread::sleep(Duration::from_millis(3_000));
        stop.store(true, Ordering::Relaxed);
    });
    let (mut decisions, mut faulted, mut timeouts, mut admitted) = (0, 0, 0, 0);
    for g in &gates {
        let s = g.stats();
        decisions += s.decisions;
        faulted += s.faulted;
        timeouts += s.timeouts;
        admitted += s.admitted;
    }
    let availability = (decisions - faulted) as f64 / decisions as f64;
    println!(
        "slow-link-table | timeout {timeout:?}, 50 ms each way | availability {availability:.3} ({faulted} of {decisions} decisions lost, {timeouts} timeouts, {admitted} admitted) in {:?} | round trip {:?} |",
        t.elapsed(),
        gates[0].round_trip()
    );
    assert!(decisions > 50, "premise: {decisions} decisions");
    assert!(availability >= 0.99, "availability {availability}");
}
