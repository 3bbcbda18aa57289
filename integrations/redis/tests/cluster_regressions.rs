//! Regressions from a hostile review of the Redis Cluster support, each
//! red before its fix: a promoted replica of a migration target, and an
//! owner restarted from its data with a new node id, are restarts (not
//! migrations); a keeper with an empty pool stays online through
//! `TRYAGAIN`; `MOVED` with an empty host (`unknown-endpoint`) is
//! followed to the answering node's host; a migration to a former replica
//! of the source is not fenced; a master failed over and then reset into
//! an empty master vouches for nothing. Each test starts its own cluster (free loopback ports,
//! killed on drop, also on panic) with the harness of `tests/common`.
mod common;
use common::{connected, get_readonly, role, serial, wait, Cluster, Ledger};
use leaparray_redis::{Config, Decision, RedisGate};
use std::time::{Duration, Instant};

const LIMIT: u64 = 100;

fn bus_port(c: &Cluster, node: usize) -> String {
    let e = &c.nodes[node].extra;
    let i = e.iter().position(|a| a == "--cluster-port").unwrap();
    e[i + 1].clone()
}

/// A slot migrates from B to A (the data whole: A's replica RA receives
/// the migrated keys, `{name}:run` naming B). RA is then cut off before it
/// receives the adoption (`SET {name}:run <A>`, the first write at A) and
/// the bookings that follow; A takes the whole limit, dies; RA is promoted.
/// RA's copy says "made by B", B is another node and B's replid is in
/// neither of RA's replids: `migrated()` says "came by MIGRATE", the epoch
/// stays, no write-back: the bookings made at A are forgotten.
#[test]
fn a_promoted_replica_of_a_migration_target_is_a_restart() {
    let _g = serial();
    let mut cluster = Cluster::start(3, 1);
    let name = "rv1";
    let slot = cluster.slot(name);
    let b = cluster.owner(slot);
    let a = cluster.other_master(slot);
    let ra = cluster.replica_of(a);
    // Intervals of 16 x 500 ms = 8 s: longer than the failover.
    let window = Duration::from_millis(500);
    let gate =
        RedisGate::<16>::open(Config::new(cluster.nodes[b].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through B", Duration::from_secs(5));
    // Past the first fence: one booking at B (so the hash exists too).
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted at B"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut admitted_before = 1u64;
    // Migrate B -> A, all keys, but hold the final SETSLOT NODE: B answers
    // ASK, the gate waits (it does not reach A yet).
    cluster.begin_migration(slot, b, a);
    let keys = cluster.move_keys(slot, b, a);
    // Premise: RA has every migrated key (among them `{name}:run`, which
    // names B: only B wrote it). RA cannot GET them (its master does not
    // serve the slot yet): count them.
    let run_key = format!("{{{name}}}:run");
    assert!(keys.contains(&run_key), "premise: {keys:?}");
    let t = Instant::now();
    loop {
        let n: usize = redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(slot)
            .query(&mut cluster.nodes[ra].con())
            .unwrap();
        if n == keys.len() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "premise: RA never got the keys: {n}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Cut RA off: what A writes from now on is A's alone.
    cluster.nodes[ra].signal("-STOP");
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut cluster.nodes[a].con())
        .unwrap();
    // End the migration: the gate follows MOVED to A, adopts the epoch.
    cluster.end_migration(slot, b, a, &[ra]);
    let a_id = cluster.id(a);
    // The limit is taken at A.
    let t_fill = Instant::now();
    while admitted_before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: the limit was never taken at A ({admitted_before})"
        );
        if gate.try_acquire(1).is_admitted() {
            admitted_before += 1;
        }
    }
    let at_a = get_readonly(&cluster, a, &run_key).unwrap();
    assert!(at_a.contains(&a_id), "premise: A adopted the epoch: {at_a}");
    // A dies; RA (without the adoption nor the bookings) takes over.
    cluster.nodes[a].kill();
    let killed = Instant::now();
    cluster.nodes[ra].signal("-CONT");
    let mut after = 0u64;
    let mut decisions = 0u64;
    // Stay inside the interval of the bookings at A (8 s from t_fill).
    while t_fill.elapsed() < Duration::from_millis(7_000) {
        decisions += 1;
        if gate.try_acquire(1).is_admitted() {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(cluster.owner(slot), ra, "premise: RA took over");
    println!(
        "review | migration then failover | before {admitted_before} | after {after} of {decisions} decisions, {:?} after the kill | within one interval of {} ms",
        killed.elapsed(),
        16 * 500
    );
    assert!(
        admitted_before + after <= LIMIT,
        "one interval admitted {admitted_before} at A + {after} at RA > {LIMIT}"
    );
}

/// The keeper finds the pool empty while up (a `MOVED` heartbeat dropped
/// the connection) while the slot migrates (the owner answers `TRYAGAIN`):
/// its `reach` fails with `TRYAGAIN` and it calls `broken()`: the process
/// goes offline, every decision goes straight to the fault policy until the
/// migration ends, contrary to "a new connection that fails with
/// ASK/TRYAGAIN does not take the process offline".
#[test]
fn a_keeper_with_an_empty_pool_stays_online_through_tryagain() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "rv2";
    let slot = cluster.slot(name);
    let b = cluster.owner(slot);
    let a = cluster.other_master(slot);
    let c = (0..3).find(|&i| i != a && i != b).unwrap();
    let window = Duration::from_millis(250);
    let mut cfg = Config::new(cluster.nodes[b].url(), name, window, LIMIT)
        .restart_grace(Duration::from_secs(2));
    cfg.heartbeat = Duration::from_millis(1_000);
    let gate = RedisGate::<4>::open(cfg).unwrap();
    connected(&gate, "through B", Duration::from_secs(5));
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // B -> A while idle: the keeper's heartbeat gets MOVED, drops its
    // pooled connection (the pool is empty, the process stays up).
    cluster.migrate(slot, b, a);
    // Wait until the gate's connection to B is gone (its heartbeat got
    // MOVED): the pool is empty, the next heartbeat is ~1 s away.
    let evals = |node: usize| -> usize {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut cluster.nodes[node].con())
            .unwrap();
        list.lines().filter(|l| l.contains("cmd=eval")).count()
    };
    let t = Instant::now();
    while evals(b) > 0 {
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "premise: the MOVED heartbeat never came"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(evals(a), 0, "premise: no connection to A yet");
    assert!(gate.is_connected(), "premise: up after the MOVED heartbeat");
    // A -> C starts: one key moved, the others not: A answers TRYAGAIN.
    cluster.begin_migration(slot, a, c);
    let _: () = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(cluster.nodes[c].port)
        .arg(format!("{{{name}}}:epoch"))
        .arg(0)
        .arg(5000)
        .query(&mut cluster.nodes[a].con())
        .unwrap();
    // Over the next heartbeats: offline?
    let t = Instant::now();
    let mut offline = 0;
    let mut unavailable_fast = 0;
    while t.elapsed() < Duration::from_millis(1_500) {
        if !gate.is_connected() {
            offline += 1;
            let d0 = Instant::now();
            if gate.try_acquire(1) == Decision::Unavailable
                && d0.elapsed() < Duration::from_millis(5)
            {
                unavailable_fast += 1; // no retry within the timeout
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("review | keeper, TRYAGAIN, empty pool | offline samples {offline} | Unavailable without a retry: {unavailable_fast}");
    assert_eq!(offline, 0, "the process went offline during a migration");
}

/// The owner restarts from its persisted data (an RDB saved after the
/// first booking) but without its `nodes.conf` (a new node id): it claims
/// the slot whose keys it holds ("I have keys for unassigned slot"). Its
/// node id differs from the recorded one and its replication id is new
/// (a master does not keep it across a restart): `migrated()` says "came
/// by MIGRATE", the epoch stays, nobody writes back: the bookings made
/// after the snapshot are forgotten.
#[test]
fn an_owner_restarted_with_a_new_node_id_is_a_restart() {
    let _g = serial();
    let mut cluster = Cluster::start(3, 0);
    let name = "rv3";
    let slot = cluster.slot(name);
    let a = cluster.owner(slot);
    let window = Duration::from_millis(500);
    let gate =
        RedisGate::<16>::open(Config::new(cluster.nodes[a].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through A", Duration::from_secs(5));
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _: () = redis::cmd("SAVE")
        .query(&mut cluster.nodes[a].con())
        .unwrap();
    let t_fill = Instant::now();
    let mut before = 1u64;
    while before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: limit not taken ({before})"
        );
        if gate.try_acquire(1).is_admitted() {
            before += 1;
        }
    }
    let old_id = cluster.id(a);
    cluster.nodes[a].kill();
    std::fs::remove_file(cluster.nodes[a].dir.join("nodes.conf")).unwrap();
    cluster.nodes[a].extra.extend([
        "--cluster-require-full-coverage".to_owned(),
        "no".to_owned(),
    ]);
    cluster.nodes[a].restart();
    let new_id = cluster.id(a);
    assert_ne!(old_id, new_id, "premise: a new node id");
    let mut after = 0u64;
    while t_fill.elapsed() < Duration::from_millis(6_000) {
        if gate.try_acquire(1).is_admitted() {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let owner: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut cluster.nodes[a].con())
        .unwrap();
    println!("review | restart with a new node id | before {before} | after {after} | within one interval of 8000 ms");
    assert!(owner.contains("myself,master"), "premise: {owner}");
    assert!(
        before + after <= LIMIT,
        "one interval admitted {before} + {after} > {LIMIT}"
    );
}

/// With `cluster-preferred-endpoint-type unknown-endpoint` (nodes behind
/// one address), a non-owner answers `MOVED <slot> :<port>`: the empty
/// host is the host of the node that answered (Redis Cluster spec). A gate
/// given a non-owner's URL connects to the owner.
#[test]
fn moved_with_an_empty_host_is_followed_to_the_answering_host() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    for s in &cluster.nodes {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-preferred-endpoint-type")
            .arg("unknown-endpoint")
            .query(&mut s.con())
            .unwrap();
    }
    let name = "rv4";
    let slot = cluster.slot(name);
    let owner = cluster.owner(slot);
    let other = cluster.other_master(slot);
    // Premise: the redirection names no host.
    let moved = redis::cmd("GET")
        .arg(format!("{{{name}}}"))
        .query::<Option<String>>(&mut cluster.nodes[other].con())
        .unwrap_err();
    let port = cluster.nodes[owner].port;
    assert_eq!(
        moved.redirect_node(),
        Some((format!(":{port}").as_str(), slot)),
        "premise: {moved}"
    );
    let gate = RedisGate::<4>::open(Config::new(
        cluster.nodes[other].url(),
        name,
        Duration::from_millis(250),
        LIMIT,
    ))
    .unwrap();
    connected(
        &gate,
        "through a non-owner, MOVED :port",
        Duration::from_secs(5),
    );
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "never admitted through MOVED :port"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A migration to a master that was once a replica of the source (here:
/// its replica, detached with `CLUSTER RESET SOFT`, which flushes it, and
/// met again): its `master_replid2` is the source's replid, as a promoted
/// replica's would be. The gate saw the source answer `MOVED` while a
/// master: the data came by `MIGRATE`, the epoch is adopted, nothing is
/// refused (a fence would refuse every paced request for nothing).
#[test]
fn migration_to_a_former_replica_of_the_source_is_not_fenced() {
    let _g = serial();
    let cluster = Cluster::start(3, 1);
    let name = "rv5";
    let slot = cluster.slot(name);
    let m = cluster.owner(slot);
    let r = cluster.replica_of(m);
    let window = Duration::from_millis(250);
    let gate =
        RedisGate::<4>::open(Config::new(cluster.nodes[m].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through M", Duration::from_secs(5));
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // R leaves M: a master of nothing, then met again.
    let _: () = redis::cmd("CLUSTER")
        .arg("RESET")
        .arg("SOFT")
        .query(&mut cluster.nodes[r].con())
        .unwrap();
    let bus: u16 = {
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut cluster.nodes[m].con())
            .unwrap();
        let me = nodes.lines().find(|l| l.contains("myself")).unwrap();
        me.split(' ')
            .nth(1)
            .unwrap()
            .split(['@', ','])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    let _: () = redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(cluster.nodes[m].port)
        .arg(bus)
        .query(&mut cluster.nodes[r].con())
        .unwrap();
    let t = Instant::now();
    loop {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut cluster.nodes[r].con())
            .unwrap();
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut cluster.nodes[m].con())
            .unwrap();
        let rid = cluster.id(r);
        let r_master = nodes
            .lines()
            .any(|l| l.starts_with(&rid) && l.contains("master"));
        if info.contains("cluster_state:ok") && r_master {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: R never rejoined as a master: {nodes}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let rep: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut cluster.nodes[r].con())
        .unwrap();
    println!(
        "regression | former replica | {}",
        rep.lines()
            .filter(|l| l.contains("replid"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    // An interval later, a booking (the counters exist: an idle limit's
    // expire after 2N windows, and a migration without them is fenced),
    // then migrate M -> R.
    std::thread::sleep(Duration::from_millis(1_100));
    assert!(gate.try_acquire(1).is_admitted(), "premise: admitted at M");
    cluster.migrate(slot, m, r);
    // Paced: 1 request per 25 ms for 500 ms, far under the limit.
    let mut refused = 0;
    let mut asked = 0;
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(500) {
        asked += 1;
        if gate.try_acquire(1) == Decision::Refused {
            refused += 1;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    // The fence (Redis's time until which it refuses) in the counters hash.
    let mut con = cluster.nodes[r].con();
    let until: Option<u64> = redis::cmd("HGET")
        .arg(format!("{{{name}}}"))
        .arg("fence")
        .query(&mut con)
        .unwrap_or(None);
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut con).unwrap();
    let fence = until.is_some_and(|u| u > s * 1_000_000 + us);
    println!("regression | migration to a former replica | paced refused {refused} of {asked} | fence {fence}");
    assert_eq!(refused, 0, "a migration was fenced");
}

/// The rule's other side: a forced failover (`CLUSTER FAILOVER TAKEOVER`)
/// to a replica cut off before the owner's last bookings. The old owner X
/// lives on and answers the gate's pooled connections `MOVED` (to its
/// replica Y, now the owner), as a replica. Y's copy names X, and Y's
/// `master_replid2` is X's replid, as in a migration to a former replica:
/// only X's role at the `MOVED` tells the two apart. Adopting would forget
/// every booking Y missed.
#[test]
fn a_forced_failover_whose_old_master_answers_moved_is_a_restart() {
    let _g = serial();
    let cluster = Cluster::start(3, 1);
    let name = "rv6";
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let y = cluster.replica_of(x);
    // Intervals of 16 x 500 ms = 8 s: longer than the failover.
    let window = Duration::from_millis(500);
    let gate =
        RedisGate::<16>::open(Config::new(cluster.nodes[x].url(), name, window, LIMIT)).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let t = Instant::now();
    while !gate.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted at X"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Premise: Y holds the epoch X made (`{name}:run` names X).
    let run_key = format!("{{{name}}}:run");
    let x_id = cluster.id(x);
    let t = Instant::now();
    while !get_readonly(&cluster, y, &run_key).is_some_and(|r| r.contains(&x_id)) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "premise: Y never got the epoch"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Cut Y off: what X books from now on is X's alone.
    cluster.nodes[y].signal("-STOP");
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    let t_fill = Instant::now();
    let mut before = 1u64;
    while before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: the limit was never taken at X ({before})"
        );
        if gate.try_acquire(1).is_admitted() {
            before += 1;
        }
    }
    // Y takes over without X's agreement, before it resyncs: the command
    // waits in Y's socket while Y is stopped, and Y reads its clients
    // before its timers (which reconnect to X) when it resumes.
    let takeover = cluster.nodes[y].port;
    let sent = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut con = std::net::TcpStream::connect(("127.0.0.1", takeover)).unwrap();
        con.write_all(b"CLUSTER FAILOVER TAKEOVER\r\n").unwrap();
        let mut reply = [0u8; 5];
        con.read_exact(&mut reply).unwrap();
        String::from_utf8_lossy(&reply).into_owned()
    });
    std::thread::sleep(Duration::from_millis(100));
    cluster.nodes[y].signal("-CONT");
    let reply = sent.join().unwrap();
    assert_eq!(reply, "+OK\r\n", "premise: the takeover was accepted");
    let taken = Instant::now();
    let at_y: i64 = common::counts(&mut cluster.nodes[y].con(), name)
        .values()
        .sum();
    assert!(
        at_y < LIMIT as i64,
        "premise: Y missed bookings (it holds {at_y})"
    );
    let mut after = 0u64;
    let mut decisions = 0u64;
    while t_fill.elapsed() < Duration::from_millis(7_000) {
        decisions += 1;
        if gate.try_acquire(1).is_admitted() {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(cluster.owner(slot), y, "premise: Y took over");
    let rep: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    assert!(rep.contains("role:slave"), "premise: X is Y's replica");
    println!(
        "regression | forced failover, old master answers MOVED | Y held {at_y} | before {before} | after {after} of {decisions} decisions, {:?} after the takeover | within one interval of 8000 ms",
        taken.elapsed()
    );
    assert!(
        before + after <= LIMIT,
        "one interval admitted {before} at X + {after} at Y > {LIMIT}"
    );
}

/// A slot assigned to its new owner A before all its keys moved (an
/// interrupted reshard finished by hand: `SETSLOT ... NODE A` on A and
/// another master): A holds the epoch and `{name}:run` (naming B) but not
/// the counters. Redis itself then deletes them at B (a master that loses
/// a slot it holds keys of drops them), and B answers `MOVED` as a master:
/// the process that booked at B vouches for B. A must not adopt an epoch
/// whose counters did not come: a new epoch, the fence, the write-back.
#[test]
fn a_slot_assigned_before_its_counters_moved_is_a_restart() {
    let _g = serial();
    let cluster = Cluster::start(3, 0);
    let name = "rv7";
    let slot = cluster.slot(name);
    let b = cluster.owner(slot);
    let a = cluster.other_master(slot);
    let c = (0..3).find(|&i| i != a && i != b).unwrap();
    // Intervals of 16 x 500 ms = 8 s.
    let window = Duration::from_millis(500);
    let g1 =
        RedisGate::<16>::open(Config::new(cluster.nodes[b].url(), name, window, LIMIT)).unwrap();
    connected(&g1, "through B", Duration::from_secs(5));
    let t = Instant::now();
    while !g1.try_acquire(1).is_admitted() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "premise: never admitted at B"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let t_fill = Instant::now();
    let mut before = 1u64;
    while before < LIMIT {
        assert!(
            t_fill.elapsed() < Duration::from_secs(2),
            "premise: the limit was never taken at B ({before})"
        );
        if g1.try_acquire(1).is_admitted() {
            before += 1;
        }
    }
    // B -> A: the epoch and the identity move, the counters do not.
    cluster.begin_migration(slot, b, a);
    for key in [format!("{{{name}}}:epoch"), format!("{{{name}}}:run")] {
        let _: () = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(cluster.nodes[a].port)
            .arg(&key)
            .arg(0)
            .arg(5000)
            .query(&mut cluster.nodes[b].con())
            .unwrap();
    }
    let a_id = cluster.id(a);
    cluster.setslot(a, slot, &["NODE", &a_id]);
    cluster.setslot(c, slot, &["NODE", &a_id]);
    // The first process's heartbeat gets B's MOVED and reaches A first;
    // then a second process, given C's URL (C redirects it to A).
    std::thread::sleep(Duration::from_millis(300));
    let g2 =
        RedisGate::<16>::open(Config::new(cluster.nodes[c].url(), name, window, LIMIT)).unwrap();
    connected(&g2, "through C", Duration::from_secs(5));
    let mut after = 0u64;
    while t_fill.elapsed() < Duration::from_millis(6_000) {
        if g2.try_acquire(1).is_admitted() {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let counters: usize = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .query(&mut cluster.nodes[b].con())
        .unwrap();
    println!("regression | slot assigned before its counters moved | before {before} at B | after {after} at A | keys left at B {counters} | within one interval of 8000 ms");
    assert!(
        before + after <= LIMIT,
        "one interval admitted {before} at B + {after} at A > {LIMIT}"
    );
}

/// A master failed over, then reset into an empty master, answers `MOVED`
/// as a master again but with a new replication id: its vouch is not the
/// recorded identity, so its promoted replica makes a new epoch (red
/// before: 199 of 100). Sequence (limit 100 per 16 x 1 s):
/// 1. X owns the slot, Y is its replica. The process books 1 at X; Y
///    replicates the epoch (`{name}:run` names X).
/// 2. Y is cut off (SIGSTOP, `CLIENT KILL TYPE replica` on X); the process
///    books 99 more at X (Y holds 1).
/// 3. `CLUSTER FAILOVER TAKEOVER` on Y: Y owns the slot (`master_replid2`
///    = X's replid), X turns into Y's replica.
/// 4. The operator reuses X as an empty master: `CLUSTER RESET SOFT` on X
///    (it flushes a replica and keeps the node id), `CLUSTER MEET` Y. X now
///    answers `MOVED` for the slot, *as a master*.
/// 5. The process's next decision gets X's `MOVED` and vouches with X's
///    identity: same `run_id` and node id, but the replication id X took
///    when it became a replica (and then a master again), not the recorded
///    one. Y makes a new epoch: the fence, the write-back of 100, refused.
///    Vouching with the node id alone (the code under the review), Y
///    passed every test of `migrated()` (`master_replid2` = X's replid),
///    adopted the epoch and admitted 99 more: 199 of 100.
///
/// The process's heartbeat is long (20 s, a legal setting) only so that
/// it does not reach Y between steps 3 and 4; any process that first
/// reaches Y after step 4 through X is in the same place.
#[test]
fn a_failed_over_master_reset_into_an_empty_master_vouches_for_nothing() {
    let _g = serial();
    let cluster = Cluster::start(3, 1);
    let name = "rev2a";
    let slot = cluster.slot(name);
    let x = cluster.owner(slot);
    let y = cluster.replica_of(x);
    let window = Duration::from_millis(1_000);
    let mut ledger = Ledger::default();
    // A first process (defaults) makes the epoch and passes its first
    // start's fence (500 ms), then exits; the process under test, with a
    // long heartbeat (and a grace of at least it, as `check` requires),
    // then joins that epoch without a fence of its own.
    {
        let g0 = RedisGate::<16>::open(Config::new(cluster.nodes[x].url(), name, window, LIMIT))
            .unwrap();
        connected(&g0, "first process through X", Duration::from_secs(5));
        wait("never admitted at X", Duration::from_secs(10), || {
            ledger.note(g0.try_acquire(1))
        });
    }
    let mut cfg = Config::new(cluster.nodes[x].url(), name, window, LIMIT)
        .restart_grace(Duration::from_secs(21));
    cfg.heartbeat = Duration::from_secs(20);
    let gate = RedisGate::<16>::open(cfg).unwrap();
    connected(&gate, "through X", Duration::from_secs(5));
    let run_key = format!("{{{name}}}:run");
    let x_id = cluster.id(x);
    wait("Y never got the epoch", Duration::from_secs(5), || {
        get_readonly(&cluster, y, &run_key).is_some_and(|r| r.contains(&x_id))
    });
    cluster.nodes[y].signal("-STOP");
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query(&mut cluster.nodes[x].con())
        .unwrap();
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
    // Y takes over before it resyncs (as in cluster_regressions'
    // forced-failover test).
    let port = cluster.nodes[y].port;
    let sent = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut con = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        con.write_all(b"CLUSTER FAILOVER TAKEOVER\r\n").unwrap();
        let mut reply = [0u8; 5];
        con.read_exact(&mut reply).unwrap();
        String::from_utf8_lossy(&reply).into_owned()
    });
    std::thread::sleep(Duration::from_millis(100));
    cluster.nodes[y].signal("-CONT");
    assert_eq!(
        sent.join().unwrap(),
        "+OK\r\n",
        "premise: takeover accepted"
    );
    let at_y: i64 = common::counts(&mut cluster.nodes[y].con(), name)
        .values()
        .sum();
    assert!(
        at_y < LIMIT as i64,
        "premise: Y missed bookings (it holds {at_y})"
    );
    wait("X never became Y's replica", Duration::from_secs(5), || {
        role(&cluster, x) == "slave"
    });
    // The operator reuses X as an empty master.
    let _: () = redis::cmd("CLUSTER")
        .arg("RESET")
        .arg("SOFT")
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    let _: () = redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(cluster.nodes[y].port)
        .arg(bus_port(&cluster, y))
        .query(&mut cluster.nodes[x].con())
        .unwrap();
    let epoch_key = format!("{{{name}}}:epoch");
    wait(
        "X never answered MOVED as a master",
        Duration::from_secs(10),
        || {
            let r: redis::RedisResult<Option<String>> = redis::cmd("GET")
                .arg(&epoch_key)
                .query(&mut cluster.nodes[x].con());
            role(&cluster, x) == "master" && matches!(r, Err(e) if e.code() == Some("MOVED"))
        },
    );
    let reset_at = t_fill.elapsed();
    let mut after = 0u64;
    let mut decisions = 0u64;
    while t_fill.elapsed() < Duration::from_secs(12) {
        decisions += 1;
        if ledger.note(gate.try_acquire(1)) {
            after += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let worst = ledger.worst(16);
    println!(
        "old master reset to an empty master | Y held {at_y} | before {before} at X | X reset and answering MOVED {reset_at:?} after the fill | after {after} at Y of {decisions} | worst interval {worst} of {LIMIT}"
    );
    assert!(worst <= LIMIT, "one interval admitted {worst} > {LIMIT}");
}
