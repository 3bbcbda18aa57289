//! On Redis Cluster, against real `redis-server --cluster-enabled yes`
//! processes (3 masters; one replica each for the failover test) on free
//! loopback ports, killed on drop (also when a test panics).
//!
//! Each test runs a fleet of two gates in this process (one in exact mode,
//! one in lease mode, on the same limit), 2 threads each, and keeps a
//! ledger of every admission by window, apart from Redis.
//!
//! * Paced phases ask for 5 permits per thread per window, in the middle
//!   of each window (local wall clock, which is Redis's on this host): 20
//!   per window, 80 of 100 per interval, so every request fits: a refusal
//!   there is a silent refusal (a fence or a double count that should not
//!   be), not the limit.
//! * Saturating phases ask as fast as they can: an interval of windows
//!   that all lie in the phase holds the limit (exact) or the limit less
//!   the lease's unused permits (at most 2 blocks).
mod common;
use common::{serial, Cluster};
use leaparray_redis::{Config, Decision, RedisGate};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LIMIT: u64 = 100;
const BLOCK: u64 = 5;
/// `Config`'s default `restart_grace`.
const GRACE: Duration = Duration::from_millis(500);

/// Every decision of a run: when, by which gate, what.
#[derive(Default)]
struct Log {
    decisions: Mutex<Vec<(Instant, usize, Decision)>>,
}

impl Log {
    fn push(&self, gate: usize, d: Decision) {
        self.decisions
            .lock()
            .unwrap()
            .push((Instant::now(), gate, d));
    }

    /// Admissions per window, over decisions made in `[from, to)`.
    fn windows(&self, from: Instant, to: Instant) -> BTreeMap<u64, u64> {
        let mut m = BTreeMap::new();
        for (t, _, d) in self.decisions.lock().unwrap().iter() {
            if *t >= from && *t < to {
                if let Some(w) = d.window() {
                    *m.entry(w).or_insert(0) += 1;
                }
            }
        }
        m
    }

    fn count(&self, from: Instant, to: Instant, f: impl Fn(&Decision) -> bool) -> usize {
        self.decisions
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _, d)| *t >= from && *t < to && f(d))
            .count()
    }

    /// From the first to the latest decision in `from..to` that `f` picks.
    fn span(&self, from: Instant, to: Instant, f: impl Fn(&Decision) -> bool) -> Option<Duration> {
        let d = self.decisions.lock().unwrap();
        let mut at = d
            .iter()
            .filter(|(t, _, x)| *t >= from && *t < to && f(x))
            .map(|(t, _, _)| *t);
        let first = at.next()?;
        Some(at.last().map_or(Duration::ZERO, |l| l - first))
    }

    fn first_admission_after(&self, t0: Instant) -> Option<Instant> {
        self.decisions
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _, d)| *t >= t0 && d.is_admitted())
            .map(|(t, _, _)| *t)
            .min()
    }
}

/// (fullest interval of `n` windows, intervals over `LIMIT`).
fn over(merged: &BTreeMap<u64, u64>, n: u64) -> (u64, usize) {
    let (Some(&lo), Some(&hi)) = (merged.keys().next(), merged.keys().last()) else {
        return (0, 0);
    };
    let loads: Vec<u64> = (lo.saturating_sub(n - 1)..=hi)
        .map(|s| {
            (s..s + n)
                .map(|w| merged.get(&w).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    (
        loads.iter().copied().max().unwrap_or(0),
        loads.iter().filter(|&&l| l > LIMIT).count(),
    )
}

fn wall_us() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

fn connected<const W: usize>(g: &RedisGate<W>, why: &str) {
    let t = Instant::now();
    while !g.is_connected() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{why}: never connected"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs 2 threads per gate until `stop`: paced (5 per window, in the
/// middle of each local window of `window`) while `paced` is set, else as
/// fast as they can.
fn drive<'scope, 'env, const W: usize>(
    gates: &'env [RedisGate<W>],
    window: Duration,
    log: &'env Log,
    paced: &'env AtomicBool,
    stop: &'env AtomicBool,
    s: &'scope std::thread::Scope<'scope, 'env>,
) {
    let w_us = u64::try_from(window.as_micros()).unwrap();
    for (i, g) in gates.iter().enumerate() {
        for _ in 0..2 {
            s.spawn(move || {
                let mut asked = (u64::MAX, 0u64); // (window, asked in it)
                while !stop.load(Relaxed) {
                    if !paced.load(Relaxed) {
                        log.push(i, g.try_acquire(1));
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    let now = wall_us();
                    let (win, at) = (now / w_us, now % w_us);
                    if asked.0 != win {
                        asked = (win, 0);
                    }
                    // 5 requests at 20%, 30%, ... 60% of the window.
                    let due = w_us / 5 + asked.1 * w_us / 10;
                    if asked.1 < 5 && at >= due && at < w_us * 4 / 5 {
                        asked.1 += 1;
                        log.push(i, g.try_acquire(1));
                    } else {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            });
        }
    }
}

/// Sets `stop` when dropped: a failed assertion inside `thread::scope`
/// stops the driving threads instead of waiting for them forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

fn gates<const W: usize>(url: &str, name: &str, window: Duration) -> Vec<RedisGate<W>> {
    let cfg = Config::new(url, name, window, LIMIT);
    vec![
        RedisGate::<W>::open(cfg.clone()).unwrap(),
        RedisGate::<W>::open(cfg.lease(BLOCK)).unwrap(),
    ]
}

/// `Config::new` given a node that does not serve the limit's slot (or a
/// node that is down, with that node as a seed): the gates find the owner; paced, every request is admitted; saturated, the
/// interval holds the limit, never more.
#[test]
fn decisions_through_a_non_owner_node_are_exact() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "api";
    let slot = cluster.slot(name);
    let other = cluster.other_master(slot);
    let window = Duration::from_millis(250);
    let gates = gates::<4>(&cluster.nodes[other].url(), name, window);
    for g in &gates {
        connected(g, "through a non-owner");
    }
    // A URL whose node is down, and a seed that is up: the seed is used.
    let down = format!("redis://127.0.0.1:{}/", common::free_port());
    let seeded = RedisGate::<4>::open(
        Config::new(down, name, window, LIMIT).seeds([cluster.nodes[other].url()]),
    )
    .unwrap();
    connected(&seeded, "through a seed");
    drop(seeded);
    std::thread::sleep(Duration::from_millis(600)); // past the first fence
    let (log, paced, stop) = (
        Log::default(),
        AtomicBool::new(true),
        AtomicBool::new(false),
    );
    let t0 = Instant::now();
    let mut t1 = t0;
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        drive(&gates, window, &log, &paced, &stop, s);
        std::thread::sleep(Duration::from_millis(1_000));
        t1 = Instant::now();
        paced.store(false, Relaxed);
        std::thread::sleep(Duration::from_millis(1_600));
        stop.store(true, Relaxed);
    });
    let end = Instant::now();
    let not_admitted = log.count(t0, t1, |d| !d.is_admitted());
    assert_eq!(not_admitted, 0, "paced requests not admitted");
    check_saturated(&log, t1, end, 4, "non-owner");
    let all = log.windows(t0, end);
    let (fullest, n_over) = over(&all, 4);
    println!("cluster | non-owner URL | fullest interval {fullest} of {LIMIT} | over: {n_over}");
    assert_eq!(n_over, 0, "{all:?}");
}

/// The first interval of `n` windows that lies wholly in the saturated
/// phase `[from, to)` holds the limit (less at most 2 lease blocks).
fn check_saturated(log: &Log, from: Instant, to: Instant, n: u64, test: &str) {
    let sat = log.windows(from, to);
    let all = log.windows(from - Duration::from_secs(30), to);
    let first = *sat
        .keys()
        .next()
        .expect("admissions in the saturated phase")
        + 1;
    let load: u64 = (first..first + n)
        .map(|w| all.get(&w).copied().unwrap_or(0))
        .sum();
    assert!(
        sat.keys().last().copied().unwrap_or(0) > first + n,
        "{test}: premise: the saturated phase spans an interval: {sat:?}"
    );
    assert!(
        load <= LIMIT && load + 2 * BLOCK >= LIMIT,
        "{test}: the interval of windows {first}..{} admitted {load} of {LIMIT}: {all:?}",
        first + n
    );
}

/// The limit's slot migrates from its owner to another master in the
/// middle of a paced interval (the gates were given the owner's URL), then
/// back during a second paced phase: no interval over, the interval after
/// each migration admits its limit, and no request refused (no double
/// count: the data moved whole) unless a process reached the new owner
/// without a vouch for the old one (the documented fence after a timeout:
/// its role read after `MOVED` timed out, or it reached the new owner
/// only after its vouch expired, which a loaded machine can do with the
/// 50 ms timeout): then the new owner made a new epoch, the refusals span
/// one `restart_grace` at most, and the interval never passes the limit.
#[test]
fn slot_migrated_mid_interval_stays_exact() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "mig";
    let slot = cluster.slot(name);
    let owner = cluster.owner(slot);
    let other = cluster.other_master(slot);
    let window = Duration::from_millis(250);
    let gates = gates::<4>(&cluster.nodes[owner].url(), name, window);
    for g in &gates {
        connected(g, "through the owner");
    }
    std::thread::sleep(Duration::from_millis(600)); // past the first fence
    let (log, paced, stop) = (
        Log::default(),
        AtomicBool::new(true),
        AtomicBool::new(false),
    );
    let epoch = |node: usize| -> Option<String> {
        redis::cmd("GET")
            .arg(format!("{{{name}}}:epoch"))
            .query(&mut cluster.nodes[node].con())
            .unwrap()
    };
    // Per migration: whether the new owner made a new epoch (the fence).
    let mut fenced = Vec::new();
    let t0 = Instant::now();
    let mut marks = Vec::new();
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        drive(&gates, window, &log, &paced, &stop, s);
        for (from, to) in [(owner, other), (other, owner)] {
            std::thread::sleep(Duration::from_millis(700));
            let before = epoch(from);
            let m = Instant::now();
            cluster.migrate(slot, from, to);
            assert_eq!(cluster.owner(slot), to, "premise: migrated");
            let took = m.elapsed();
            std::thread::sleep(Duration::from_millis(700));
            fenced.push(epoch(to) != before);
            let sat = Instant::now();
            paced.store(false, Relaxed);
            std::thread::sleep(Duration::from_millis(1_600));
            let end = Instant::now();
            paced.store(true, Relaxed);
            std::thread::sleep(Duration::from_millis(1_100)); // the saturated interval ends
            marks.push((m, took, sat, end));
        }
        stop.store(true, Relaxed);
    });
    let stop_t = Instant::now();
    for (k, &(m, took, sat, end)) in marks.iter().enumerate() {
        let start = if k == 0 {
            t0
        } else {
            marks[k - 1].3 + Duration::from_millis(1_100)
        };
        let refused = log.count(start, sat, |d| *d == Decision::Refused);
        let unavailable = log.count(start, sat, |d| *d == Decision::Unavailable);
        // A decision waits at most `timeout` (50 ms) per attempt for the
        // slot to settle, then its fault policy decides: faults are allowed
        // while the slot moves, and for two timeouts after.
        let settled = m + took + Duration::from_millis(100);
        let outside = log.count(start, m, |d| *d == Decision::Unavailable)
            + log.count(settled, sat, |d| *d == Decision::Unavailable);
        let first = log.first_admission_after(m + took);
        let span = log.span(start, sat, |d| *d == Decision::Refused);
        println!(
            "cluster | migration {k} | took {took:?} | new epoch (fence): {} | paced: refused {refused} (first to latest: {span:?}), unavailable {unavailable} ({outside} outside the migration) | first admission {:?} after it ended",
            fenced[k],
            first.map(|f| f - (m + took))
        );
        if fenced[k] {
            // 250 ms of slack for a decision logged late on a loaded machine.
            assert!(
                span.unwrap_or_default() <= GRACE + Duration::from_millis(250),
                "migration {k}: refused for {span:?}, longer than one restart_grace"
            );
        } else {
            assert_eq!(refused, 0, "migration {k}: paced requests refused");
        }
        let when: Vec<(usize, i128)> = log
            .decisions
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _, d)| *t >= start && *t < sat && *d == Decision::Unavailable)
            .map(|(t, g, _)| {
                (
                    *g,
                    (*t - start).as_millis() as i128 - (m - start).as_millis() as i128,
                )
            })
            .collect();
        assert_eq!(outside, 0, "{when:?} (ms after the migration began)");
        assert_eq!(
            outside, 0,
            "migration {k}: paced requests unavailable outside the migration"
        );
        if !fenced[k] {
            // After a fence every process wrote its bookings back on top
            // of the migrated counters (counted twice: refused more, as
            // documented), which shifts the saturated phase's pattern.
            check_saturated(&log, sat, end, 4, &format!("migration {k}"));
        }
    }
    let all = log.windows(t0, stop_t);
    let (fullest, n_over) = over(&all, 4);
    println!("cluster | migration | fullest interval {fullest} of {LIMIT} | over: {n_over}");
    assert_eq!(n_over, 0, "{all:?}");
}

/// The owner of the limit's slot (the gates were given its URL, and no
/// other) is killed with `kill -9` after a window took the whole limit
/// there while its replica was cut off (so the replica lacks that window's
/// bookings); the replica takes over. The promoted replica is a restart:
/// a new epoch, the fence, the live gates write their bookings back: no
/// interval over the limit, admissions resume after the interval.
/// Intervals are 8 windows of 500 ms (4 s), longer than the failover, so a
/// forgotten booking would be visible.
#[test]
fn failover_of_the_owner_mid_run() {
    let _g = serial();
    let mut cluster = Cluster::start(3, 1);
    let name = "fo";
    let slot = cluster.slot(name);
    let owner = cluster.owner(slot);
    let replica = cluster.replica_of(owner);
    let window = Duration::from_millis(500);
    let gates = gates::<8>(&cluster.nodes[owner].url(), name, window);
    for g in &gates {
        connected(g, "through the owner");
    }
    // Premise: the replica holds the epoch (so what it lacks is bookings).
    let epoch = |node: usize| -> Option<String> {
        let mut c = cluster.nodes[node].con();
        let _: () = redis::cmd("READONLY").query(&mut c).unwrap();
        redis::cmd("GET")
            .arg(format!("{{{name}}}:epoch"))
            .query(&mut c)
            .unwrap()
    };
    let t = Instant::now();
    while epoch(owner).is_none() || epoch(replica) != epoch(owner) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "premise: the epoch never reached the replica"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Cut the replica off: what the owner books from now on is its alone.
    cluster.nodes[replica].signal("-STOP");
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut cluster.nodes[owner].con())
        .unwrap();
    let (log, paced, stop) = (
        Log::default(),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let t0 = Instant::now();
    let mut killed = t0;
    let mut reconnected = None;
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        drive(&gates, window, &log, &paced, &stop, s);
        // The first fence ends; a window takes the whole limit.
        while log.count(t0, Instant::now(), |d| d.is_admitted()) < LIMIT as usize {
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "premise: the limit was never taken"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        cluster.nodes[owner].kill();
        killed = Instant::now();
        cluster.nodes[replica].signal("-CONT");
        while !gates.iter().all(|g| g.is_connected())
            || killed.elapsed() < Duration::from_millis(50)
        {
            assert!(
                killed.elapsed() < Duration::from_secs(15),
                "never reconnected"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        reconnected = Some(killed.elapsed());
        // Past the interval of the lost window, and one more.
        while t0.elapsed() < Duration::from_millis(6_500) {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Relaxed);
    });
    let end = Instant::now();
    assert_eq!(
        cluster.owner(slot),
        replica,
        "premise: the replica took over"
    );
    let first = log.first_admission_after(killed).map(|t| t - killed);
    let all = log.windows(t0, end);
    let (fullest, n_over) = over(&all, 8);
    println!(
        "cluster | failover (kill -9) | reconnected after {reconnected:?} | first admission after {first:?} | fullest interval {fullest} of {LIMIT} | over: {n_over}"
    );
    assert_eq!(n_over, 0, "{all:?}");
    // The limit was taken in window `lost` (and perhaps the next): from
    // `lost + 8` on, a new interval.
    let lost = *log.windows(t0, killed).keys().next().unwrap();
    let after: u64 = all.range(lost + 8..).map(|(_, n)| n).sum();
    assert!(
        after + 2 * BLOCK >= LIMIT,
        "admissions did not resume after the interval: {after}: {all:?}"
    );
}
