//! Reproducers of a hostile review of the restart / fault handling of
//! leaparray-redis (run_id epochs, write-back, fence, classification).
//! Each `review_*` test asserts the behaviour the README promises; the
//! `control_*` tests run the same scenario without the trigger and pass,
//! showing the scenario discriminates. See /work/notes/redis-review.md.

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

fn redis_now(con: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    s * 1_000_000 + us
}

fn hgetall(con: &mut redis::Connection, name: &str) -> BTreeMap<u64, i64> {
    redis::cmd("HGETALL")
        .arg(format!("{{{name}}}"))
        .query(con)
        .unwrap()
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

// ---------------------------------------------------------------------------
// Finding 1: one "request" error (any error classified Failure::Request,
// here NOPERM from an ACL change) drops the process's only pooled
// connection without taking it offline; the keeper then finds the pool
// empty on every heartbeat and `continue`s: no heartbeat ever again while
// the process is idle. A Redis restart is then never written back by it.
// ---------------------------------------------------------------------------

const USER: [&str; 7] = ["--user", "gate", "on", ">pw", "~*", "&*", "+@all"];

fn idle_process_across_a_restart(request_error: bool) -> (u64, BTreeMap<u64, u64>, u64) {
    let mut server = Server::start_with(&USER);
    let url = format!("redis://gate:pw@127.0.0.1:{}/", server.port);
    let (name, limit, window) = ("idle", 10u64, Duration::from_millis(500));
    let p1 = RedisGate::<4>::open(Config::new(url.clone(), name, window, limit)).unwrap();
    connected(&p1);
    std::thread::sleep(Duration::from_millis(600)); // past the first fence
    let mut ledger = BTreeMap::new();
    for _ in 0..limit {
        let d = p1.try_acquire(1);
        let w = d.window().expect("P1 books the whole limit");
        *ledger.entry(w).or_insert(0u64) += 1;
    }
    let mut admin = server.con();
    if request_error {
        let _: () = redis::cmd("ACL")
            .arg(&["SETUSER", "gate", "-evalsha", "-eval"])
            .query(&mut admin)
            .unwrap();
        assert_eq!(
            p1.try_acquire(1),
            Decision::Refused,
            "NOPERM: a request error"
        );
        let _: () = redis::cmd("ACL")
            .arg(&["SETUSER", "gate", "+@all"])
            .query(&mut admin)
            .unwrap();
    }
    let beats = p1.stats().keeper_round_trips;
    std::thread::sleep(Duration::from_millis(300));
    let beats_in_300ms = p1.stats().keeper_round_trips - beats;
    // Redis restarts (empty; the ACL user comes from the command line).
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
    (fullest(&ledger, 4), ledger, beats_in_300ms)
}

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_idle_process_after_a_request_error_writes_nothing_back_after_a_restart() {
    let _g = serial();
    let (full, ledger, beats) = idle_process_across_a_restart(true);
    println!("review finding 1: keeper round trips in 300 ms after the error: {beats}; fullest interval {full} of 10: {ledger:?}");
    assert!(
        full <= 10,
        "fullest interval {full} of 10 (keeper beats in 300 ms: {beats}): {ledger:?}"
    );
}

#[test]
fn control_idle_process_without_a_request_error_writes_back() {
    let _g = serial();
    let (full, ledger, beats) = idle_process_across_a_restart(false);
    println!("control 1: keeper round trips in 300 ms: {beats}; fullest interval {full} of 10: {ledger:?}");
    assert!(full <= 10, "fullest interval {full} of 10: {ledger:?}");
}

// ---------------------------------------------------------------------------
// Finding 2: the fresh-connection check reads `INFO server` / `INFO memory`
// inside the script. INFO is in ACL category @dangerous; an application
// user with the common `+@all -@dangerous` gets "ERR The user executing the
// script can't run this command" on every fresh connection. `open` returns
// Ok, nothing is logged, and the gate is never connected: every decision
// is `Unavailable` forever, although the booking itself needs no INFO.
// ---------------------------------------------------------------------------

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_an_acl_user_without_dangerous_gets_an_error_or_a_working_gate() {
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
    let cfg = Config::new(url.clone(), "acl", Duration::from_millis(500), 10);
    // The same user can run a script that books (HINCRBY in a hash): only
    // INFO is denied.
    let mut app = redis::Client::open(url).unwrap().get_connection().unwrap();
    let booked: i64 = redis::cmd("EVAL")
        .arg("redis.call('TIME'); return redis.call('HINCRBY', KEYS[1], 'w', 1)")
        .arg(1)
        .arg("{probe}")
        .query(&mut app)
        .unwrap();
    assert_eq!(booked, 1);
    match RedisGate::<4>::open(cfg) {
        Err(e) => println!("review finding 2: open refused: {e}"),
        Ok(gate) => {
            let t = Instant::now();
            while !gate.is_connected() && t.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let d = gate.try_acquire(1);
            println!(
                "review finding 2: open Ok, connected after 2 s: {}, decision {d:?}, stats {:?}",
                gate.is_connected(),
                gate.stats()
            );
            assert!(
                gate.is_connected(),
                "open returned Ok for a user that cannot run INFO, and the gate never connects (every decision {d:?})"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Finding 3: a booking prunes the hash relative to the *caller's* window
// (`id < cur - 2N or id > cur + 2N`). One `try_acquire_at` caller whose time
// is far from Redis's (any time below MAX_CALLER_TIME_US is accepted) deletes
// the fields of the current Redis windows as soon as the hash holds more
// than 4N fields: every `try_acquire` caller gets a fresh limit
// mid-interval.
// ---------------------------------------------------------------------------

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_a_caller_far_from_redis_time_does_not_erase_the_fleets_bookings() {
    let _g = serial();
    let server = Server::start();
    let (name, limit, window) = ("prune", 10u64, Duration::from_secs(1));
    let mut c = Config::new(server.url(), name, window, limit);
    c.heartbeat = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(10);
    let c = c.restart_grace(Duration::from_millis(70));
    let a = RedisGate::<4>::open(c.clone()).unwrap();
    let b = RedisGate::<4>::open(c).unwrap();
    connected(&a);
    connected(&b);
    std::thread::sleep(Duration::from_millis(100));
    let mut admin = server.con();
    // Stay inside one window of Redis time.
    while redis_now(&mut admin) % 1_000_000 > 300_000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut ledger = BTreeMap::new();
    let d = a.try_acquire(limit);
    let w = d.window().expect("A takes the whole limit");
    *ledger.entry(w).or_insert(0u64) += limit;
    assert_eq!(a.try_acquire(1), Decision::Refused, "the limit is used up");
    // B: 16 bookings at caller times in 1970 (windows 1..=16).
    for k in 1..=16u64 {
        assert!(b.try_acquire_at(k * 1_000_000, 1).is_admitted());
    }
    let left = hgetall(&mut admin, name);
    let again = a.try_acquire(limit);
    if let Some(w2) = again.window() {
        *ledger.entry(w2).or_insert(0u64) += limit;
    }
    let full = fullest(&ledger, 4);
    println!("review finding 3: Redis window {w}: hash after B's bookings {left:?}; A again: {again:?}; fullest interval of Redis windows {full} of {limit}");
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: A's window {w} was erased by B's pruning: {left:?}"
    );
}

// ---------------------------------------------------------------------------
// Finding 4: the fence is `min(restart_grace, interval)`, but `open` checks
// `restart_grace >= heartbeat + max_backoff + timeout` on the unclamped
// value. With an interval shorter than that sum, a live process's
// write-back arrives after the fence. For Redis-clock callers a fence of a
// whole interval is enough, but not for a caller ahead of Redis (within the
// documented skew bound of N - 1 windows): its window is still inside
// intervals after the fence.
// ---------------------------------------------------------------------------

fn late_live_caller_ahead(p1_heartbeat: Duration) -> (u64, u64, u64) {
    let server = Server::start();
    let (name, limit, window) = ("clamp", 10u64, Duration::from_millis(100)); // interval 400 ms
    let mut c = Config::new(server.url(), name, window, limit);
    c.heartbeat = p1_heartbeat;
    c.max_backoff = Duration::from_millis(100);
    let c = c
        .timeout(Duration::from_millis(50))
        .restart_grace(Duration::from_millis(1_000)); // >= heartbeat + 150 ms: open accepts
    let p1 = RedisGate::<4>::open(c.clone()).expect("open accepts the configuration");
    let p2 = RedisGate::<4>::open(c).unwrap();
    connected(&p1);
    connected(&p2);
    std::thread::sleep(Duration::from_millis(500)); // past the first fence (400 ms)
    let mut admin = server.con();
    // Right after P1's heartbeat, so its next one is a heartbeat away.
    let beats = p1.stats().keeper_round_trips;
    while p1.stats().keeper_round_trips == beats {
        std::thread::sleep(Duration::from_micros(200));
    }
    // P1's clock runs 2.5 windows ahead of Redis's (bound: N - 1 = 3).
    let now = redis_now(&mut admin);
    let d1 = p1.try_acquire_at(now + 250_000, limit);
    let w1 = d1.window().expect("P1 books the whole limit");
    // Redis restarts (FLUSHALL: empty, the connections survive).
    let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
    // P2 (Redis's clock) books as soon as the fence (400 ms) lets it, for
    // 470 ms: before the hash's TTL (N + 1 windows after P1's write-back)
    // can end (finding 6 is that TTL).
    let t = Instant::now();
    let w2 = loop {
        if let Some(w) = p2.try_acquire(limit).window() {
            break w;
        }
        if t.elapsed() > Duration::from_millis(470) {
            break 0;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut ledger = BTreeMap::new();
    *ledger.entry(w1).or_insert(0u64) += limit;
    if w2 > 0 {
        *ledger.entry(w2).or_insert(0u64) += limit;
    }
    (fullest(&ledger, 4), w1, w2)
}

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_the_fence_waits_for_a_live_process_whose_heartbeat_open_accepted() {
    let _g = serial();
    let (full, w1, w2) = late_live_caller_ahead(Duration::from_millis(800));
    println!("review finding 4: P1 (ahead 2.5 windows) booked 10 in {w1}, P2 booked 10 in {w2} (distance {}): fullest interval {full} of 10", w2.saturating_sub(w1));
    assert!(
        full <= 10,
        "fullest interval {full} of 10: P1 {w1}, P2 {w2}"
    );
}

#[test]
#[ignore = "assumes a first fence of one interval (400 ms); the fence is capped at 2N - 1 windows: superseded by tests/restart_regressions.rs"]
fn control_a_live_process_with_a_short_heartbeat_writes_back_in_time() {
    let _g = serial();
    let (full, w1, w2) = late_live_caller_ahead(Duration::from_millis(20));
    println!(
        "control 4: P1 booked 10 in {w1}, P2 booked 10 in {w2}: fullest interval {full} of 10"
    );
    assert!(
        full <= 10,
        "fullest interval {full} of 10: P1 {w1}, P2 {w2}"
    );
}

// ---------------------------------------------------------------------------
// Finding 5 (README claim without its bound): "a step back [of Redis's
// clock] re-opens windows already booked, which is then counted in them
// (never fresh room)". The script reads the time through one function
// (`clock`: TIME, or the caller's); a caller's time stepping back stands in
// for TIME stepping back. A step back of N windows or more gives fresh room.
// ---------------------------------------------------------------------------

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_a_clock_step_back_gives_no_fresh_room() {
    let _g = serial();
    let server = Server::start();
    let mut c = Config::new(server.url(), "step", Duration::from_millis(100), 10);
    c.heartbeat = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(10);
    let gate = RedisGate::<4>::open(c.restart_grace(Duration::from_millis(70))).unwrap();
    connected(&gate);
    std::thread::sleep(Duration::from_millis(100));
    let t = redis_now(&mut server.con());
    assert!(gate.try_acquire_at(t, 10).is_admitted());
    // The clock steps back by k windows.
    let mut fresh = Vec::new();
    for k in [1u64, 3, 4, 7] {
        let d = gate.try_acquire_at(t - k * 100_000, 10);
        fresh.push((k, d.is_admitted()));
    }
    println!(
        "review finding 5: step back of k windows (N = 4) -> fresh room of 10 admitted: {fresh:?}"
    );
    assert!(
        fresh.iter().all(|&(_, admitted)| !admitted),
        "a step back gave fresh room: {fresh:?}"
    );
}

// ---------------------------------------------------------------------------
// Finding 6 (no restart needed): the hash expires N + 1 windows of Redis
// time after its last booking. A window named by a caller ahead of Redis by
// d windows (d <= N - 1, within the documented skew bound) is still inside
// intervals of Redis-clock callers until Redis window c + d + N - 1; from
// c + N + 1 on the hash is gone and they book a fresh limit.
// ---------------------------------------------------------------------------

#[test]
#[ignore = "superseded by its regression test in tests/restart_regressions.rs (this file goes once all six are fixed)"]
fn review_a_window_named_ahead_outlives_the_hash_ttl() {
    let _g = serial();
    let server = Server::start();
    let (name, limit) = ("ttl", 10u64);
    let mut c = Config::new(server.url(), name, Duration::from_millis(100), limit);
    c.heartbeat = Duration::from_millis(10);
    c.max_backoff = Duration::from_millis(10);
    let c = c.restart_grace(Duration::from_millis(70));
    let ahead = RedisGate::<4>::open(c.clone()).unwrap();
    let fleet = RedisGate::<4>::open(c).unwrap();
    connected(&ahead);
    connected(&fleet);
    std::thread::sleep(Duration::from_millis(100));
    let mut admin = server.con();
    // Early in a Redis window c.
    let now = loop {
        let now = redis_now(&mut admin);
        if now % 100_000 < 20_000 {
            break now;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // The caller's clock runs 2.2 windows (220 ms) ahead: less than N - 1 = 3.
    let w1 = ahead
        .try_acquire_at(now + 220_000, limit)
        .window()
        .expect("the caller ahead books the whole limit");
    let t = Instant::now();
    let mut refused = 0;
    let w2 = loop {
        if let Some(w) = fleet.try_acquire(limit).window() {
            break w;
        }
        refused += 1;
        if t.elapsed() > Duration::from_secs(1) {
            break 0;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut ledger = BTreeMap::new();
    *ledger.entry(w1).or_insert(0u64) += limit;
    if w2 > 0 {
        *ledger.entry(w2).or_insert(0u64) += limit;
    }
    let full = fullest(&ledger, 4);
    println!("review finding 6: Redis window {}, caller ahead booked 10 in {w1}; a Redis-clock caller refused {refused} times, then booked 10 in {w2} after {:?}: fullest interval {full} of {limit}", now / 100_000, t.elapsed());
    assert!(
        full <= limit,
        "fullest interval {full} of {limit}: {w1} forgotten when the hash expired"
    );
}
