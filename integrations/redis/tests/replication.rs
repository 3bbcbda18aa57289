//! Replication without Sentinel or Cluster, against real `redis-server`
//! processes (a master and its replica, roles swapped with `REPLICAOF`
//! as an operator or an orchestrator does): a replica never passes the
//! restart check, and a failback to the same redis-server process (its
//! `run_id` unchanged) whose data lost bookings is a restart (a new
//! epoch, the fence, every process writes back).
mod common;
use common::{replication, serial, Ledger, Server};
use leaparray_redis::{Config, Decision, RedisGate};
use std::time::{Duration, Instant};

/// Short timings, `restart_grace` at its least (`Config::min_restart_grace`).
fn quick(mut c: Config) -> Config {
    c.heartbeat = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(10);
    let c = c.timeout(Duration::from_millis(50));
    let least = c.min_restart_grace(); // max(10, 10) + 6 x 50 = 310 ms
    c.restart_grace(least)
}

fn wait(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "premise: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn replicaof(server: &Server, master: Option<&Server>) {
    let mut cmd = redis::cmd("REPLICAOF");
    match master {
        Some(m) => cmd.arg("127.0.0.1").arg(m.port),
        None => cmd.arg("NO").arg("ONE"),
    };
    let _: () = cmd.query(&mut server.con()).unwrap();
}

/// A master `x` (full syncs through disk: no diskless delay) and its
/// replica `y`, linked.
fn pair() -> (Server, Server) {
    let x = Server::start_with(&["--repl-diskless-sync", "no"]);
    let y = Server::start_with(&[
        "--repl-diskless-sync",
        "no",
        "--replicaof",
        "127.0.0.1",
        &x.port.to_string(),
    ]);
    wait("y replicates x", || {
        replication(&y, "master_link_status") == "up"
    });
    (x, y)
}

fn redis_now(server: &Server) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.con()).unwrap();
    s * 1_000_000 + us
}

/// A master made its epoch (it is recorded as its maker), then was
/// demoted: its data (taken from its new master) still names it as the
/// maker. A process that connects to it then is never connected, and one
/// that was connected goes offline: nothing is booked on a replica.
#[test]
fn a_replica_never_passes_the_check() {
    let _g = serial();
    let (x, y) = pair();
    let cfg = quick(Config::new(x.url(), "replica", Duration::from_secs(1), 10));
    let a = RedisGate::<2>::open(cfg.clone()).unwrap();
    assert!(a.is_connected(), "premise: a master passes");
    wait("the epoch reached y", || {
        redis::cmd("EXISTS")
            .arg("{replica}:epoch")
            .query::<bool>(&mut y.con())
            .unwrap()
    });
    replicaof(&y, None);
    replicaof(&x, Some(&y));
    wait("x replicates y", || {
        replication(&x, "master_link_status") == "up"
    });
    let b = RedisGate::<2>::open(cfg).unwrap();
    let t = Instant::now();
    let mut decisions = Vec::new();
    while t.elapsed() < Duration::from_millis(300) {
        decisions.push(b.try_acquire(1));
        assert!(
            !b.is_connected(),
            "a process opened on a replica passed the check"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let t = Instant::now();
    while a.is_connected() {
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "a process connected before the demotion stays connected to the replica (its checks pass)"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    decisions.push(a.try_acquire(1));
    assert!(
        decisions.iter().all(|d| *d == Decision::Unavailable),
        "{decisions:?}"
    );
}

/// X books 1, its replica Y is promoted (it holds that 1), X books 99 more
/// (still a master: two masters, as in a planned failover before the old
/// master is reconfigured), X is made Y's replica (its data replaced by
/// Y's: the 99 are lost, the epoch and its maker's record, X, stay), then
/// X is promoted again: the same redis-server process. Its `run_id` alone
/// would vouch for the data; its replication id, new at the promotion,
/// does not: a new epoch, the fence, the process writes its 100 back, and
/// a new process after the fence is refused in the same interval.
#[test]
fn a_failback_to_the_same_process_is_a_restart() {
    let _g = serial();
    let (x, y) = pair();
    let (w, limit) = (2_000_000u64, 100u64);
    let cfg = quick(Config::new(
        x.url(),
        "failback",
        Duration::from_micros(w),
        limit,
    ));
    let a = RedisGate::<2>::open(cfg.clone()).unwrap();
    assert!(a.is_connected());
    // Past the first start's fence; then start in the first 300 ms of a
    // window, so that the whole test stays within the interval of that
    // window and the next.
    std::thread::sleep(Duration::from_millis(400));
    while redis_now(&x) % w > 300_000 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut ledger = Ledger::default();
    ledger.note(a.try_acquire(1));
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(1000)
        .query(&mut x.con())
        .unwrap();
    replicaof(&y, None);
    for _ in 1..limit {
        ledger.note(a.try_acquire(1));
    }
    assert_eq!(
        ledger.0.values().sum::<u64>(),
        limit,
        "premise: the limit booked at x"
    );
    let first = *ledger.0.keys().next().unwrap();
    replicaof(&x, Some(&y));
    wait("x replicates y", || {
        replication(&x, "master_link_status") == "up"
    });
    replicaof(&x, None);
    replicaof(&y, Some(&x));
    wait("a reconnects", || a.is_connected());
    let b = RedisGate::<2>::open(cfg).unwrap();
    wait("b connects", || b.is_connected());
    std::thread::sleep(Duration::from_millis(400)); // past any fence
    for _ in 0..limit {
        ledger.note(a.try_acquire(1));
        ledger.note(b.try_acquire(1));
    }
    assert!(
        redis_now(&x) / w <= first + 1,
        "premise: still within the interval of window {first}"
    );
    let worst = ledger.worst(2);
    println!(
        "failback to the same process: fullest interval {worst} of {limit}: {:?}",
        ledger.0
    );
    assert!(worst <= limit, "over the limit: {:?}", ledger.0);
}

/// A replica that takes writes (`replica-read-only no`, writes kept
/// locally, never replicated): the check's writes would succeed there, so
/// only the role refuses it. A process opened on it is never connected
/// and admits nothing.
#[test]
fn a_writable_replica_never_passes_the_check() {
    let _g = serial();
    let x = Server::start_with(&["--repl-diskless-sync", "no"]);
    let y = Server::start_with(&[
        "--replica-read-only",
        "no",
        "--replicaof",
        "127.0.0.1",
        &x.port.to_string(),
    ]);
    wait("y replicates x", || {
        replication(&y, "master_link_status") == "up"
    });
    let g = RedisGate::<2>::open(quick(Config::new(
        y.url(),
        "writable",
        Duration::from_secs(1),
        10,
    )))
    .unwrap();
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(300) {
        assert!(
            !g.is_connected(),
            "a process opened on a writable replica passed the check"
        );
        assert_eq!(g.try_acquire(1), Decision::Unavailable);
        std::thread::sleep(Duration::from_millis(10));
    }
}
