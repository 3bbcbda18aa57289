//! Regression tests for the defects a hostile review of the restart and
//! fault handling of leaparray-redis found (the keeper after a request
//! error, `INFO` under ACL, pruning, the restart fence, a clock step back,
//! the counters hash's lifetime), one or two per defect. Each states the
//! behaviour it pins; the bounds they rely on are argued once, in
//! `src/restart.rs` ("How long a window matters").

mod common;
use common::{serial, Server};
use leaparray_redis::{Config, Decision, RedisGate};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn connected<const W: usize>(g: &RedisGate<W>) {
    let t = Instant::now();
    while !g.is_connected() {
        assert!(t.elapsed() < Duration::from_secs(10), "never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Highest load of an interval of `n` windows in `ledger`.
fn fullest(ledger: &BTreeMap<u64, u64>, n: u64) -> u64 {
    let mut best = 0;
    for &w in ledger.keys() {
        for s in w.saturating_sub(n - 1)..=w {
            let load: u64 = (s..s + n)
                .map(|x| ledger.get(&x).copied().unwrap_or(0))
                .sum();
            best = best.max(load);
        }
    }
    best
}

/// A request error (here `NOPERM`, from an ACL change: the decision is
/// refused and its connection dropped) leaves an idle process with an
/// empty pool; its keeper still beats (it makes a checked connection), so
/// after a Redis restart it writes its bookings back and a second process
/// asking for the limit after the fence is refused: no interval over the
/// limit.
#[test]
fn an_idle_process_keeps_its_heartbeat_after_a_request_error_dropped_its_connection() {
    let _g = serial();
    let mut server = Server::start_with(&["--user", "gate", "on", ">pw", "~*", "&*", "+@all"]);
    let url = format!("redis://gate:pw@127.0.0.1:{}/", server.port);
    let (name, limit, window) = ("idle", 10u64, Duration::from_millis(500));
    let p1 = RedisGate::<4>::open(Config::new(url.clone(), name, window, limit)).unwrap();
    connected(&p1);
    std::thread::sleep(Duration::from_millis(600)); // past the first fence
    let mut ledger = BTreeMap::new();
    for _ in 0..limit {
        let w = p1
            .try_acquire(1)
            .window()
            .expect("P1 books the whole limit");
        *ledger.entry(w).or_insert(0u64) += 1;
    }
    let mut admin = server.con();
    let acl = |args: &[&str], admin: &mut redis::Connection| {
        let _: () = redis::cmd("ACL").arg(args).query(admin).unwrap();
    };
    acl(&["SETUSER", "gate", "-evalsha", "-eval"], &mut admin);
    assert_eq!(
        p1.try_acquire(1),
        Decision::Refused,
        "NOPERM: a request error"
    );
    acl(&["SETUSER", "gate", "+@all"], &mut admin);
    let beats = p1.stats().keeper_round_trips;
    std::thread::sleep(Duration::from_millis(300));
    let beats = p1.stats().keeper_round_trips - beats;
    // Redis restarts empty (the ACL user comes from the command line).
    server.kill();
    server.restart();
    let p2 = RedisGate::<4>::open(Config::new(url, name, window, limit)).unwrap();
    connected(&p2);
    std::thread::sleep(Duration::from_millis(700)); // past the restart fence
    for _ in 0..limit {
        if let Some(w) = p2.try_acquire(1).window() {
            *ledger.entry(w).or_insert(0u64) += 1;
        }
    }
    let full = fullest(&ledger, 4);
    println!("keeper round trips in the 300 ms after the error: {beats}; fullest interval {full} of {limit}: {ledger:?}");
    assert!(beats > 0, "the keeper stopped beating after the error");
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: {ledger:?}"
    );
}
