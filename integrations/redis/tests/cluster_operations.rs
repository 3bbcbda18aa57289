//! Cluster operations a hostile review tried against the gate, each with
//! what it pins: draining a master's last slot (Redis 7 turns the master
//! into the new owner's replica) is fenced for at most `restart_grace` and
//! never admits over the limit (the README's documented cost); an owner
//! restarted with the same node id and no data is a restart; a coordinated
//! `CLUSTER FAILOVER` stays within the limit. Every test starts its own
//! cluster with the harness of `tests/common` (free loopback ports, every
//! redis-server killed on drop, also on panic).
mod common;
use common::{connected, get_readonly, role, serial, wait, Cluster, Ledger};
use leaparray_redis::{Config, Decision, RedisGate};
use std::time::{Duration, Instant};

const LIMIT: u64 = 100;
/// `Config`'s default `restart_grace`.
const GRACE: Duration = Duration::from_millis(500);

/// Sequence (limit 100 per 4 x 250 ms, paced 1 per 20 ms: half the limit):
/// 1. X owns the limit's slot and no other (its other slots are handed to
///    N, empty: the state of a node being drained, `redis-cli --cluster
///    reshard` slot by slot before `del-node`).
/// 2. The limit's slot migrates X -> N the normal way (IMPORTING,
///    MIGRATING, MIGRATE of every key, SETSLOT NODE on every master).
/// 3. Redis 7 (`cluster-allow-replica-migration yes`, the default): a
///    master left without slots by `SETSLOT NODE` turns into a replica of
///    the new owner in the same step. So X answers `MOVED` only as a
///    replica: no vouch, and N makes a new epoch: the fence refuses every
///    request for `restart_grace` though nothing was lost.
///
/// The docs list the fence's costs (a process that did not see the old
/// owner's `MOVED`, an idle limit's expired counters); this one, the
/// routine last step of draining a node, is not stated.
#[test]
fn draining_the_last_slot_of_a_master_is_fenced_for_one_grace_at_most() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "rev2b";
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let n = cluster.other_master(slot);
    let third = (0..3).find(|&i| i != x && i != n).unwrap();
    // X's other (empty) slots go to N.
    let n_id = cluster.id(n);
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    let mut mine = Vec::new();
    for range in slots {
        let redis::Value::Array(r) = range else {
            continue;
        };
        let lo: u16 = redis::from_redis_value(&r[0]).unwrap();
        let hi: u16 = redis::from_redis_value(&r[1]).unwrap();
        let redis::Value::Array(m) = &r[2] else {
            continue;
        };
        let port: u16 = redis::from_redis_value(&m[1]).unwrap();
        if port == cluster.nodes[x].port {
            mine.extend((lo..=hi).filter(|&s| s != slot));
        }
    }
    for node in [n, x, third] {
        let mut p = redis::pipe();
        for &s in &mine {
            p.cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(s)
                .arg("NODE")
                .arg(&n_id)
                .ignore();
        }
        let _: () = p.query(&mut cluster.nodes[node].con()).unwrap();
    }
    // As `reshard` leaves it: its first `SETSLOT ... NODE` on the importing
    // node bumps that node's config epoch above the source's.
    let _: String = redis::cmd("CLUSTER")
        .arg("BUMPEPOCH")
        .query(&mut cluster.nodes[n].con())
        .unwrap();
    wait(
        "cluster not ok after the drain",
        Duration::from_secs(10),
        || cluster.ready(),
    );
    assert_eq!(cluster.owner(slot), x, "premise: X keeps the limit's slot");
    let window = Duration::from_millis(250);
    let gate =
        RedisGate::<4>::open(Config::new(cluster.nodes[x].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let mut ledger = Ledger::default();
    // Past the first start's fence.
    wait("never admitted at X", Duration::from_secs(10), || {
        ledger.note(gate.try_acquire(1))
    });
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(500) {
        let _ = ledger.note(gate.try_acquire(1));
        std::thread::sleep(Duration::from_millis(20));
    }
    // The migration as `redis-cli --cluster reshard` does it; X may already
    // have turned into N's replica (N's bumped epoch reached it by gossip)
    // when its own `SETSLOT ... NODE` comes: that one may fail.
    let epoch_key = format!("{{{name}}}:epoch");
    let epoch_before: String = redis::cmd("GET")
        .arg(&epoch_key)
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    cluster.begin_migration(slot, x, n);
    cluster.move_keys(slot, x, n);
    cluster.setslot(n, slot, &["NODE", &n_id]);
    let _: redis::RedisResult<()> = redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg("NODE")
        .arg(&n_id)
        .query(&mut cluster.nodes[x].con());
    cluster.setslot(third, slot, &["NODE", &n_id]);
    let moved = Instant::now();
    let (mut refused, mut unavailable, mut admitted) = (0u64, 0u64, 0u64);
    // When the first and the latest refusal came (after the migration).
    let mut refusals: Option<(Duration, Duration)> = None;
    while moved.elapsed() < Duration::from_millis(1_500) {
        match gate.try_acquire(1) {
            Decision::Refused => {
                refused += 1;
                let at = moved.elapsed();
                refusals = Some(refusals.map_or((at, at), |(first, _)| (first, at)));
            }
            Decision::Unavailable => unavailable += 1,
            d => {
                ledger.note(d);
                admitted += 1
            }
        }
        std::thread::sleep(Duration::from_millis(20));
        if std::env::var("REV2_DEBUG").is_ok() {
            let st: Vec<String> = [x, n, third]
                .iter()
                .map(|&i| {
                    let ci: String = redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query(&mut cluster.nodes[i].con())
                        .unwrap();
                    let f = |k: &str| {
                        ci.lines()
                            .find_map(|l| l.strip_prefix(k))
                            .unwrap_or("")
                            .trim()
                            .to_owned()
                    };
                    format!(
                        "{}:{}/{}",
                        cluster.nodes[i].port,
                        f("cluster_state:"),
                        f("cluster_size:")
                    )
                })
                .collect();
            eprintln!("DBG {:?} {st:?}", moved.elapsed());
        }
    }
    let x_role = role(&cluster, x);
    // The test's own reads at N work while N answers CLUSTERDOWN (set
    // after the gate's decisions: it lets scripts run while down).
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("cluster-allow-reads-when-down")
        .arg("yes")
        .query(&mut cluster.nodes[n].con())
        .unwrap();
    // N may answer CLUSTERDOWN for a while (see above): read when it serves.
    let mut epoch_after: Option<String> = None;
    wait(
        "N never served the slot",
        Duration::from_secs(10),
        || match redis::cmd("GET")
            .arg(&epoch_key)
            .query(&mut cluster.nodes[n].con())
        {
            Ok(e) => {
                epoch_after = e;
                true
            }
            Err(_) => false,
        },
    );
    let epoch_kept = epoch_after.as_deref() == Some(epoch_before.as_str());
    println!(
        "last slot of a master drained | X is now {x_role} | epoch kept: {epoch_kept} | after the migration: admitted {admitted}, refused {refused} (first, latest: {refusals:?}), unavailable {unavailable} (paced at half the limit; unavailable: N answers CLUSTERDOWN for a while in some runs, Redis's own doing) | worst interval {}",
        ledger.worst(4)
    );
    assert!(ledger.worst(4) <= LIMIT);
    // The documented cost: X answered `MOVED` as N's replica, so N made a
    // new epoch (if this changes, so must the README's list of when the
    // fence applies) ...
    assert_eq!(x_role, "slave", "premise: X turned into N's replica");
    assert!(
        !epoch_kept,
        "N kept the epoch: update the README's fence list"
    );
    // ... and refused only while the fence lived: the requests are paced
    // at half the limit, so every refusal is the fence's, and the fence
    // (`PX restart_grace`) starts before the first of them. 250 ms of
    // slack for a decision measured late on a loaded machine.
    if let Some((first, latest)) = refusals {
        assert!(
            latest - first <= GRACE + Duration::from_millis(250),
            "refused from {first:?} to {latest:?} after the migration: longer than one restart_grace ({GRACE:?})"
        );
    }
}

#[test]
fn an_owner_restarted_with_the_same_id_and_no_data_is_a_restart() {
    let _g = serial();
    let mut cluster = Cluster::start(3, 0);
    let name = "rev2c";
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let x_id = cluster.id(x);
    let window = Duration::from_millis(500);
    let gate =
        RedisGate::<16>::open(Config::new(cluster.nodes[x].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let mut ledger = Ledger::default();
    wait("never admitted at X", Duration::from_secs(10), || {
        ledger.note(gate.try_acquire(1))
    });
    let t_fill = Instant::now();
    let mut before = 1u64;
    while before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: limit not taken at X"
        );
        if ledger.note(gate.try_acquire(1)) {
            before += 1;
        }
    }
    cluster.nodes[x].signal("-KILL");
    let _ = cluster.nodes[x].child.take().map(|mut c| c.wait());
    cluster.nodes[x].restart();
    assert_eq!(cluster.id(x), x_id, "premise: same node id");
    let mut after = 0u64;
    let mut decisions = 0u64;
    while t_fill.elapsed() < Duration::from_secs(6) {
        decisions += 1;
        if ledger.note(gate.try_acquire(1)) {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let worst = ledger.worst(16);
    println!("owner restarted, same id, no data | before {before} | after {after} of {decisions} | worst interval {worst}");
    assert_eq!(cluster.owner(slot), x, "premise: X serves the slot again");
    assert!(gate.is_connected(), "the process never came back");
    assert!(worst <= LIMIT, "one interval admitted {worst} > {LIMIT}");
}

/// X owns the slot, Y is its replica; the process takes the limit at X,
/// then a coordinated `CLUSTER FAILOVER` on Y (X pauses its clients until
/// Y has caught up). The process keeps asking until 7 s into a 16 x 500 ms
/// interval: the ledger's worst interval stays within the limit, and the
/// process is connected (to Y) at the end.
#[test]
fn coordinated_failover_stays_within_the_limit() {
    let name = "rev2d";
    let _g = serial();
    let cluster = Cluster::start(3, 1);
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let y = cluster.replica_of(x);
    let window = Duration::from_millis(500);
    let gate =
        RedisGate::<16>::open(Config::new(cluster.nodes[x].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let mut ledger = Ledger::default();
    wait("never admitted at X", Duration::from_secs(10), || {
        ledger.note(gate.try_acquire(1))
    });
    let run_key = format!("{{{name}}}:run");
    let x_id = cluster.id(x);
    wait("Y never got the epoch", Duration::from_secs(5), || {
        get_readonly(&cluster, y, &run_key).is_some_and(|r| r.contains(&x_id))
    });
    let t_fill = Instant::now();
    let mut before = 1u64;
    while before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: limit not taken at X"
        );
        if ledger.note(gate.try_acquire(1)) {
            before += 1;
        }
    }
    let port = cluster.nodes[y].port;
    let cmd = "CLUSTER FAILOVER\r\n";
    let sent = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut con = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        con.write_all(cmd.as_bytes()).unwrap();
        let mut reply = [0u8; 5];
        con.read_exact(&mut reply).unwrap();
        String::from_utf8_lossy(&reply).into_owned()
    });
    assert_eq!(
        sent.join().unwrap(),
        "+OK\r\n",
        "premise: failover accepted"
    );
    let mut after = 0u64;
    let (mut refused, mut unavailable) = (0u64, 0u64);
    let mut first_admission: Option<Duration> = None;
    while t_fill.elapsed() < Duration::from_secs(7) {
        match gate.try_acquire(1) {
            Decision::Refused => refused += 1,
            Decision::Unavailable => unavailable += 1,
            d => {
                ledger.note(d);
                after += 1;
                first_admission.get_or_insert(t_fill.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let owner = cluster.owner(slot);
    let worst = ledger.worst(16);
    println!("coordinated CLUSTER FAILOVER | owner now {} | before {before} | after {after} (first {first_admission:?} after the fill), refused {refused}, unavailable {unavailable} | worst interval {worst}",
        if owner == y { "Y" } else { "X" });
    assert_eq!(owner, y, "premise: Y took over");
    assert!(gate.is_connected(), "the process never reconnected");
    assert!(worst <= LIMIT, "one interval admitted {worst} > {LIMIT}");
}

/// A plain migration (the source keeps other slots, so it answers `MOVED`
/// as a master) keeps the epoch: no fence, no refusal. One process with a
/// timeout of 1 s, so that a loaded machine cannot make it miss the
/// source's `MOVED` or its role (what `cluster::slot_migrated_mid_interval_stays_exact`
/// tolerates, as documented, with the default 50 ms).
#[test]
fn a_plain_migration_keeps_the_epoch() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "rev2f";
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let n = cluster.other_master(slot);
    let mut cfg = Config::new(
        cluster.nodes[x].url(),
        name,
        Duration::from_millis(250),
        LIMIT,
    )
    .timeout(Duration::from_millis(400));
    cfg.restart_grace = cfg.min_restart_grace(); // 100 + 6 x 400 ms
    let gate = RedisGate::<4>::open(cfg).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let mut ledger = Ledger::default();
    wait("never admitted at X", Duration::from_secs(10), || {
        ledger.note(gate.try_acquire(1))
    });
    let epoch_key = format!("{{{name}}}:epoch");
    let before: String = redis::cmd("GET")
        .arg(&epoch_key)
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    cluster.migrate(slot, x, n);
    assert_eq!(cluster.owner(slot), n, "premise: migrated");
    let (mut admitted, mut refused, mut unavailable) = (0u64, 0u64, 0u64);
    for _ in 0..25 {
        match gate.try_acquire(1) {
            Decision::Refused => refused += 1,
            Decision::Unavailable => unavailable += 1,
            d => {
                ledger.note(d);
                admitted += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let after: Option<String> = redis::cmd("GET")
        .arg(&epoch_key)
        .query(&mut cluster.nodes[n].con())
        .unwrap();
    println!("plain migration | epoch kept: {} | admitted {admitted}, refused {refused}, unavailable {unavailable} | worst interval {}",
        after.as_deref() == Some(before.as_str()), ledger.worst(4));
    assert_eq!(
        after.as_deref(),
        Some(before.as_str()),
        "a plain migration made a new epoch"
    );
    assert_eq!((refused, unavailable), (0, 0));
    assert!(ledger.worst(4) <= LIMIT);
}
