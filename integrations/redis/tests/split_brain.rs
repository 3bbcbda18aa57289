//! Split brain, bounded by `min-replicas-to-write`: a master X (with
//! `min-replicas-to-write 1`, `min-replicas-max-lag 1`) loses its replica
//! Y to a silent partition (the test's proxy on the replication link holds
//! every byte: connections stay open, nothing passes), Y is promoted, and
//! the endpoint the first process uses (another proxy, standing for a DNS
//! name) moves to Y while that process's open connections stay on X.
//!
//! * X takes writes for at most `min-replicas-max-lag` + 2 s after the
//!   partition (its replica's acknowledgements, sent every second, stop;
//!   Redis counts lag in whole seconds and refreshes its count of good
//!   replicas every second), then answers `NOREPLICAS`.
//! * `NOREPLICAS` makes the process reconnect (like `READONLY`): through the
//!   moved endpoint, to Y, where it writes its bookings back.
//! * Every interval that starts after that bound holds at most the
//!   limit; before it, up to twice (X's and Y's), as the README states.
//!
//! One `split-brain-table` line gives the measured figures.
mod common;
use common::{replication, serial, wait, Ledger, Proxy, Server};
use leaparray_redis::{Config, RedisGate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WINDOW_MS: u64 = 250;
const N: u64 = 4;
const LIMIT: u64 = 100;
/// `min-replicas-max-lag`, s.
const MAX_LAG: u64 = 1;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// Two threads on `gate` until `stop`, every admission in `ledger`.
fn hammer<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    gate: &'s RedisGate<4>,
    ledger: &'s Mutex<Ledger>,
    stop: &'s AtomicBool,
) {
    for _ in 0..2 {
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let d = gate.try_acquire(1);
                ledger.lock().unwrap().note(d);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
    }
}

#[test]
fn min_replicas_to_write_bounds_a_deposed_master_and_noreplicas_moves_the_process() {
    let _g = serial();
    let lag = MAX_LAG.to_string();
    let x = Server::start_with(&[
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        &lag,
    ]);
    let link = Proxy::start(x.port);
    let y = Server::start_with(&["--replicaof", "127.0.0.1", &link.port.to_string()]);
    wait("Y replicates X", Duration::from_secs(10), || {
        replication(&y, "master_link_status") == "up"
            && replication(&x, "min_slaves_good_slaves") == "1"
    });
    let endpoint = Proxy::start(x.port);
    let cfg = |url: String| Config::new(url, "split", Duration::from_millis(WINDOW_MS), LIMIT);
    let a = RedisGate::<4>::open(cfg(endpoint.url())).unwrap();
    assert!(a.is_connected(), "premise: A connected to X");
    let (ledger_a, ledger_b) = (Mutex::new(Ledger::default()), Mutex::new(Ledger::default()));
    let (stop_a, stop_b) = (AtomicBool::new(false), AtomicBool::new(false));
    let mut b = None;
    let mut partition_us = 0;
    let mut stopped_us = 0;
    std::thread::scope(|s| {
        hammer(s, &a, &ledger_a, &stop_a);
        std::thread::sleep(Duration::from_millis(1_500));
        // The partition: Y hears nothing from X, nor X from Y.
        partition_us = now_us();
        link.blackhole();
        let _: () = redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query(&mut y.con())
            .unwrap();
        endpoint.retarget(y.port);
        // The test's own write on X every 20 ms: when X stops taking writes.
        let x_stopped = s.spawn(|| {
            let mut con = x.con();
            loop {
                let r: redis::RedisResult<()> =
                    redis::cmd("SET").arg("probe").arg(1).query(&mut con);
                match r {
                    Err(e) if e.code() == Some("NOREPLICAS") => return now_us(),
                    _ if now_us() > partition_us + 10_000_000 => return 0,
                    _ => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        b = Some(RedisGate::<4>::open(cfg(y.url())).unwrap());
        hammer(s, b.as_ref().unwrap(), &ledger_b, &stop_b);
        std::thread::sleep(Duration::from_millis((MAX_LAG + 2) * 1_000 + 2_500));
        stop_a.store(true, Ordering::Relaxed);
        stop_b.store(true, Ordering::Relaxed);
        stopped_us = x_stopped.join().unwrap();
    });
    let window_us = WINDOW_MS * 1_000;
    let first_window = partition_us / window_us;
    // The bound: no write on X past `min-replicas-max-lag` + 2 s.
    let bound_window = (partition_us + (MAX_LAG + 2) * 1_000_000).div_ceil(window_us);
    let on_x = common::counts(&mut x.con(), "split");
    let last_on_x = on_x.keys().copied().max().unwrap_or(0);
    let (ledger_a, ledger_b) = (
        ledger_a.into_inner().unwrap(),
        ledger_b.into_inner().unwrap(),
    );
    let mut ledger = Ledger::default();
    for (w, c) in ledger_a.0.iter().chain(ledger_b.0.iter()) {
        *ledger.0.entry(*w).or_insert(0) += c;
    }
    let worst_after = ledger
        .0
        .keys()
        .filter(|&&w| w >= bound_window)
        .map(|&w| ledger.0.range(w..w + N).map(|(_, c)| c).sum::<u64>())
        .max()
        .unwrap_or(0);
    let a_after: u64 = ledger_a.0.range(bound_window..).map(|(_, c)| c).sum();
    let b_after: u64 = ledger_b.0.range(bound_window..).map(|(_, c)| c).sum();
    println!(
        "split-brain-table | min-replicas-max-lag {MAX_LAG} s | X refused writes {} ms after the partition; its last booked window {:+} ms after the partition (bound {} ms) | worst interval {} (limit {LIMIT}) | after the bound: worst {worst_after}, A admitted {a_after}, B {b_after} | A: {:?}, connected {} |",
        (stopped_us.saturating_sub(partition_us)) / 1_000,
        (last_on_x as i64 - first_window as i64) * WINDOW_MS as i64,
        (MAX_LAG + 2) * 1_000,
        ledger.worst(N),
        a.stats(),
        a.is_connected(),
    );
    assert!(
        ledger.worst(N) <= 2 * LIMIT,
        "two masters at most: {}",
        ledger.worst(N)
    );
    assert!(
        worst_after <= LIMIT,
        "over the limit after the bound: {worst_after}"
    );
    assert!(stopped_us > 0, "premise: X never answered NOREPLICAS");
    assert!(
        stopped_us <= partition_us + (MAX_LAG + 2) * 1_000_000,
        "X took writes {} ms after the partition",
        (stopped_us - partition_us) / 1_000
    );
    assert!(
        last_on_x < bound_window,
        "X booked in window {last_on_x}, past the bound's {bound_window}"
    );
    // A left X on NOREPLICAS and books on Y through the moved endpoint.
    assert!(
        a_after > 0 && a.is_connected(),
        "A stayed on the deposed master: {:?}",
        a.stats()
    );
}
