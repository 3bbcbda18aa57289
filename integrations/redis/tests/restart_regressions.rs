//! Regression tests for the defects a hostile review of the restart and
//! fault handling of leaparray-redis found (the keeper after a request
//! error, `INFO` under ACL, pruning, the restart fence, a clock step back,
//! the counters hash's lifetime), one or two per defect. Each states the
//! behaviour it pins; the bounds they rely on are argued once, in
//! `src/restart.rs` ("How long a window matters").

mod common;
use common::{serial, Server};
use leaparray_redis::{Config, Decision, Error, RedisGate};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn connected<const W: usize>(g: &RedisGate<W>) {
    let t = Instant::now();
    while !g.is_connected() {
        assert!(t.elapsed() < Duration::from_secs(10), "never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn redis_now(con: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    s * 1_000_000 + us
}

fn hgetall(con: &mut redis::Connection, name: &str) -> BTreeMap<u64, i64> {
    common::counts(con, name)
}

/// Short timings, `restart_grace` at its least (`Config::min_restart_grace`),
/// so a test waits little for the fence.
fn quick(mut c: Config) -> Config {
    c.heartbeat = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(10);
    let c = c.timeout(Duration::from_millis(50));
    let least = c.min_restart_grace(); // max(10, 10) + 6 x 50 = 310 ms
    c.restart_grace(least)
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

/// `try_acquire(n)` until admitted or `give_up` passes: the window booked.
fn first_admission<const W: usize>(g: &RedisGate<W>, n: u64, give_up: Duration) -> Option<u64> {
    let t = Instant::now();
    loop {
        if let Some(w) = g.try_acquire(n).window() {
            return Some(w);
        }
        if t.elapsed() > give_up {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
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

/// The ACL the README documents for a limit's user.
const DOCUMENTED_ACL: &str =
    "+evalsha +script|load +time +info +get +set +exists +hmget +hget +hset +hincrby +hlen +hkeys +hdel +del +sadd";

/// A user without `INFO` (the common `+@all -@dangerous` profile: `INFO`
/// is `@dangerous`) cannot make the new-connection check: `open` returns
/// `Error::Permission` naming `INFO`, not a gate that never connects.
#[test]
fn open_names_info_for_a_user_that_cannot_run_it() {
    let _g = serial();
    let server = Server::start_with(&[
        "--user",
        "app",
        "on",
        ">pw",
        "~*",
        "&*",
        "+@all",
        "-@dangerous",
    ]);
    let url = format!("redis://app:pw@127.0.0.1:{}/", server.port);
    // Premise: the same user can run a script that books; only INFO is denied.
    let mut app = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let booked: i64 = redis::cmd("EVAL")
        .arg("redis.call('TIME'); return redis.call('HINCRBY', KEYS[1], 'w', 1)")
        .arg(1)
        .arg("{probe}")
        .query(&mut app)
        .unwrap();
    assert_eq!(booked, 1);
    match RedisGate::<4>::open(Config::new(url, "acl", Duration::from_millis(500), 10)) {
        Err(Error::Permission(what)) => {
            println!("open: {}", Error::Permission(what.clone()));
            assert!(what.contains("INFO"), "the error names INFO: {what}");
        }
        Err(e) => panic!("another error: {e}"),
        Ok(gate) => panic!(
            "open returned Ok for a user that cannot run INFO (connected: {})",
            gate.is_connected()
        ),
    }
}

/// The README's ACL (the commands the script and `redis::Script` run, on
/// the limit's keys only) is enough for every path: `open`, exact and lease
/// bookings, a lease given back, pruning (more than 4N fields), a
/// `FLUSHALL` (a new epoch, `INFO` inside a booking, a write-back): each is
/// admitted and Redis's `ACL LOG` holds no denial. The README states that
/// ACL.
#[test]
fn the_documented_acl_is_enough_to_open_book_and_restart() {
    assert!(
        include_str!("../README.md").contains(DOCUMENTED_ACL),
        "the README states the ACL this test grants"
    );
    let _g = serial();
    let mut args = vec!["--user", "lim", "on", ">pw", "resetkeys", "~{acl}*"];
    args.extend(DOCUMENTED_ACL.split(' '));
    let server = Server::start_with(&args);
    let url = format!("redis://lim:pw@127.0.0.1:{}/", server.port);
    let c = quick(Config::new(url, "acl", Duration::from_millis(100), 100));
    let exact = RedisGate::<4>::open(c.clone()).expect("the documented ACL opens");
    let leased = RedisGate::<4>::open(c.lease(10)).unwrap();
    connected(&exact);
    connected(&leased);
    assert!(first_admission(&exact, 1, Duration::from_secs(2)).is_some());
    assert!(first_admission(&leased, 1, Duration::from_secs(2)).is_some());
    // Caller times 1..=17 s: more than 4N fields, the last booking prunes.
    for k in 1..=17u64 {
        assert!(exact.try_acquire_at(k * 1_000_000, 1).is_admitted());
    }
    // The lease's window ends: the keeper gives its 9 unused permits back.
    std::thread::sleep(Duration::from_millis(250));
    let mut admin = server.con();
    let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
    assert!(
        first_admission(&exact, 1, Duration::from_secs(2)).is_some(),
        "admitted again after a new epoch"
    );
    let denied: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(denied.is_empty(), "ACL denials: {denied:?}");
    assert!(exact.is_connected() && leased.is_connected());
}

/// A caller whose time is far from Redis's (here 1970) books many windows;
/// the hash is pruned (its old fields deleted) but the fields of Redis's
/// current windows stay: the fleet's `try_acquire` callers keep their
/// counts, no interval over the limit.
#[test]
fn a_caller_far_from_redis_time_does_not_prune_the_fleets_current_windows() {
    let _g = serial();
    let server = Server::start();
    let (name, limit) = ("prune", 10u64);
    let c = quick(Config::new(
        server.url(),
        name,
        Duration::from_secs(1),
        limit,
    ));
    let a = RedisGate::<4>::open(c.clone()).unwrap();
    let b = RedisGate::<4>::open(c).unwrap();
    connected(&a);
    connected(&b);
    std::thread::sleep(Duration::from_millis(400));
    let mut admin = server.con();
    // Stay inside one window of Redis time.
    while redis_now(&mut admin) % 1_000_000 > 300_000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut ledger = BTreeMap::new();
    let w = a
        .try_acquire(limit)
        .window()
        .expect("A takes the whole limit");
    *ledger.entry(w).or_insert(0u64) += limit;
    assert_eq!(a.try_acquire(1), Decision::Refused, "the limit is used up");
    // B: 16 bookings at caller times in 1970 (windows 1..=16): more than
    // 4N fields, so the last booking prunes.
    for k in 1..=16u64 {
        assert!(b.try_acquire_at(k * 1_000_000, 1).is_admitted());
    }
    let left = hgetall(&mut admin, name);
    let again = a.try_acquire(limit);
    if let Some(w2) = again.window() {
        *ledger.entry(w2).or_insert(0u64) += limit;
    }
    let full = fullest(&ledger, 4);
    println!("Redis window {w}: hash after B's bookings {left:?}; A again: {again:?}; fullest interval {full} of {limit}");
    assert!(
        !left.contains_key(&1),
        "pruning still deletes fields far from both the caller's window and Redis's: {left:?}"
    );
    assert_eq!(
        left.get(&w),
        Some(&10),
        "Redis's current window kept: {left:?}"
    );
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: {left:?}"
    );
}

/// A live process whose clock runs 2.5 windows ahead of Redis (within the
/// skew bound) books the limit right after its heartbeat (800 ms, longer
/// than the interval of 400 ms; `open` accepts it with a grace of 1.1 s);
/// Redis loses everything (`FLUSHALL`). A second process asking for the
/// limit is admitted only in a window no interval shares with the first's:
/// the fence outlasts what `open` accepted.
#[test]
fn the_fence_outlasts_a_live_process_whose_heartbeat_open_accepted() {
    let _g = serial();
    let server = Server::start();
    let (name, limit) = ("clamp", 10u64);
    let mut c = Config::new(server.url(), name, Duration::from_millis(100), limit);
    c.heartbeat = Duration::from_millis(800);
    c.max_backoff = Duration::from_millis(100);
    let c = c
        .timeout(Duration::from_millis(50))
        .restart_grace(Duration::from_millis(1_100)); // max(800, 100) + 6 x 50
    let p1 = RedisGate::<4>::open(c.clone()).expect("open accepts the configuration");
    let p2 = RedisGate::<4>::open(c).unwrap();
    connected(&p1);
    connected(&p2);
    std::thread::sleep(Duration::from_millis(1_300)); // past the first fence
    let mut admin = server.con();
    // Right after P1's heartbeat, so its next one is 800 ms away.
    let beats = p1.stats().keeper_round_trips;
    while p1.stats().keeper_round_trips == beats {
        std::thread::sleep(Duration::from_micros(200));
    }
    let now = redis_now(&mut admin);
    let w1 = p1
        .try_acquire_at(now + 250_000, limit)
        .window()
        .expect("P1 books the whole limit");
    let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
    let w2 = first_admission(&p2, limit, Duration::from_secs(3)).expect("P2 books in the end");
    let mut ledger = BTreeMap::new();
    *ledger.entry(w1).or_insert(0u64) += limit;
    *ledger.entry(w2).or_insert(0u64) += limit;
    let full = fullest(&ledger, 4);
    println!("P1 (2.5 windows ahead) booked 10 in {w1}, P2 10 in {w2}: fullest interval {full} of {limit}");
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: P1 {w1}, P2 {w2}"
    );
}

/// A process whose clock runs 2.5 windows ahead of Redis books the limit
/// and dies; Redis loses everything. With `restart_grace` at its cap
/// (2N - 1 windows), a second process is admitted only after every
/// interval holding the dead process's window: the restart is exact for
/// it too (README: "Redis restarted").
#[test]
fn a_grace_at_its_cap_covers_a_dead_process_booking_named_ahead() {
    let _g = serial();
    let server = Server::start();
    let (name, limit) = ("dead", 10u64);
    let c = quick(Config::new(
        server.url(),
        name,
        Duration::from_millis(100),
        limit,
    ))
    .restart_grace(Duration::from_secs(10)); // capped at 700 ms
    let p1 = RedisGate::<4>::open(c.clone()).unwrap();
    let p2 = RedisGate::<4>::open(c).unwrap();
    connected(&p1);
    connected(&p2);
    std::thread::sleep(Duration::from_millis(800)); // past the first fence
    let mut admin = server.con();
    let now = redis_now(&mut admin);
    let w1 = p1
        .try_acquire_at(now + 250_000, limit)
        .window()
        .expect("P1 books the whole limit");
    drop(p1);
    let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
    let w2 = first_admission(&p2, limit, Duration::from_secs(3)).expect("P2 books in the end");
    let mut ledger = BTreeMap::new();
    *ledger.entry(w1).or_insert(0u64) += limit;
    *ledger.entry(w2).or_insert(0u64) += limit;
    let full = fullest(&ledger, 4);
    println!("dead P1 booked 10 in {w1} (Redis window {}), P2 10 in {w2}: fullest interval {full} of {limit}", now / 100_000);
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: P1 {w1}, P2 {w2}"
    );
}

/// The README's bound for a clock step back (the script reads Redis's
/// `TIME` and a caller's time through one function, so a caller's time
/// stepping back stands for Redis's): after the limit is booked in window
/// `t`, a step back of 1 to `N - 1` windows gives no fresh room; a step of
/// `N` windows gives the limit again (the bound is tight).
#[test]
fn a_clock_step_back_of_fewer_than_n_windows_gives_no_fresh_room() {
    let _g = serial();
    let server = Server::start();
    let gate = RedisGate::<4>::open(quick(Config::new(
        server.url(),
        "step",
        Duration::from_millis(100),
        10,
    )))
    .unwrap();
    connected(&gate);
    std::thread::sleep(Duration::from_millis(400));
    let t = redis_now(&mut server.con());
    assert!(gate.try_acquire_at(t, 10).is_admitted());
    let steps: Vec<(u64, bool)> = (1..=4u64)
        .map(|k| (k, gate.try_acquire_at(t - k * 100_000, 10).is_admitted()))
        .collect();
    println!("step back of k windows (N = 4) -> the limit admitted again: {steps:?}");
    assert_eq!(steps, [(1, false), (2, false), (3, false), (4, true)]);
}

/// The counters hash outlives every window a caller within the skew bound
/// names: a caller 2.2 windows ahead of Redis books the limit early in
/// Redis window `c` (into `c + 2`); a Redis-clock caller asking for the
/// limit is admitted only in a window no interval shares with `c + 2`
/// (before the fix the hash expired N + 1 windows after the booking and it
/// was admitted in `c + 5`).
#[test]
fn a_window_named_ahead_outlives_the_counters_hash() {
    let _g = serial();
    let server = Server::start();
    let (name, limit) = ("ttl", 10u64);
    let c = quick(Config::new(
        server.url(),
        name,
        Duration::from_millis(100),
        limit,
    ));
    let ahead = RedisGate::<4>::open(c.clone()).unwrap();
    let fleet = RedisGate::<4>::open(c).unwrap();
    connected(&ahead);
    connected(&fleet);
    std::thread::sleep(Duration::from_millis(400));
    let mut admin = server.con();
    // Early in a Redis window c.
    let now = loop {
        let now = redis_now(&mut admin);
        if now % 100_000 < 20_000 {
            break now;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // 2.2 windows (220 ms) ahead: less than N - 1 = 3.
    let w1 = ahead
        .try_acquire_at(now + 220_000, limit)
        .window()
        .expect("the caller ahead books the whole limit");
    let t = Instant::now();
    let w2 = first_admission(&fleet, limit, Duration::from_secs(2)).expect("admitted in the end");
    let mut ledger = BTreeMap::new();
    *ledger.entry(w1).or_insert(0u64) += limit;
    *ledger.entry(w2).or_insert(0u64) += limit;
    let full = fullest(&ledger, 4);
    println!("Redis window {}, the caller ahead booked 10 in {w1}; a Redis-clock caller booked 10 in {w2} after {:?}: fullest interval {full} of {limit}", now / 100_000, t.elapsed());
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: {w1} forgotten"
    );
}
