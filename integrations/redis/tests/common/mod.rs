//! The tests' own `redis-server`: started on a free loopback port, killed
//! and restarted at will, killed on drop (also when a test panics).
#![allow(dead_code)] // each test binary uses a part

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests launch processes and servers: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the test lock (a failed test does not poison it for the others).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Server {
    pub port: u16,
    pub child: Option<Child>,
    /// Its working directory (RDB and AOF files), removed on drop.
    pub dir: std::path::PathBuf,
    /// Options after the defaults (`--save '' --appendonly no`), which they override.
    pub extra: Vec<String>,
}

impl Server {
    /// A server that persists nothing.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server with `extra` options (e.g. `--appendonly yes`); it keeps
    /// its files in its own directory, so a restart loads them.
    pub fn start_with(extra: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!(
            "leaparray-redis-server-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Server {
            port,
            child: None,
            dir,
            extra: extra.iter().map(|a| a.to_string()).collect(),
        };
        s.restart();
        s
    }

    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                &self.dir.display().to_string(),
            ])
            .args(&self.extra)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): these tests need a real Redis; \
                     install it (`apt-get install -y redis-server`, as .ci/redis.sh does)"
                )
            });
        self.child = Some(child);
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "redis-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` (`-STOP`, `-CONT`, `-KILL`) to the server.
    pub fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// A connection of the test's own (not the gate's).
    pub fn con(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Redis Cluster of the tests' own: `masters` masters with `replicas`
/// replicas each, every node a [`Server`] on free loopback ports (its
/// cluster bus too), all killed on drop (also when a test panics).
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(masters: usize, replicas: usize) -> Self {
        let mut nodes = Vec::new();
        for _ in 0..masters * (1 + replicas) {
            let bus = free_port().to_string();
            nodes.push(Server::start_with(&[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &bus,
                // A failed master is noticed in about 1 s; a replica cut
                // off from its master for a while can still take over.
                "--cluster-node-timeout",
                "1000",
                "--cluster-replica-validity-factor",
                "0",
            ]));
        }
        let c = Cluster { nodes };
        let addrs: Vec<String> = c
            .nodes
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli (it comes with redis-server)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let t = Instant::now();
        while !c.ready() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the cluster never became ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    /// Every live node says `cluster_state:ok`, and every live replica's
    /// link to its master is up.
    pub fn ready(&self) -> bool {
        self.nodes.iter().filter(|s| s.child.is_some()).all(|s| {
            let mut con = s.con();
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap();
            let rep: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut con)
                .unwrap();
            info.contains("cluster_state:ok")
                && (rep.contains("role:master") || rep.contains("master_link_status:up"))
        })
    }

    /// The slot of a limit's keys (`{name}`).
    pub fn slot(&self, name: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{{name}}}"))
            .query(&mut self.nodes[0].con())
            .unwrap()
    }

    /// The node (index) that serves `slot`, as node `asked` sees it.
    pub fn owner_seen_by(&self, asked: usize, slot: u16) -> usize {
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut self.nodes[asked].con())
            .unwrap();
        for range in slots {
            let redis::Value::Array(r) = range else {
                continue;
            };
            let lo: u16 = redis::from_redis_value(&r[0]).unwrap();
            let hi: u16 = redis::from_redis_value(&r[1]).unwrap();
            if (lo..=hi).contains(&slot) {
                let redis::Value::Array(m) = &r[2] else {
                    panic!("CLUSTER SLOTS: {r:?}")
                };
                let port: u16 = redis::from_redis_value(&m[1]).unwrap();
                return self.nodes.iter().position(|s| s.port == port).unwrap();
            }
        }
        panic!("slot {slot} is served by nobody")
    }

    pub fn owner(&self, slot: u16) -> usize {
        let asked = self.nodes.iter().position(|s| s.child.is_some()).unwrap();
        self.owner_seen_by(asked, slot)
    }

    pub fn id(&self, node: usize) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.nodes[node].con())
            .unwrap()
    }

    /// A master that does not serve `slot`.
    pub fn other_master(&self, slot: u16) -> usize {
        let owner = self.owner(slot);
        (0..self.nodes.len())
            .find(|&i| {
                let rep: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut self.nodes[i].con())
                    .unwrap();
                i != owner && rep.contains("role:master")
            })
            .unwrap()
    }

    /// The replica of master `node`.
    pub fn replica_of(&self, node: usize) -> usize {
        let id = self.id(node);
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.nodes[node].con())
            .unwrap();
        let line = nodes
            .lines()
            .find(|l| l.split(' ').nth(3) == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no replica of {id}: {nodes}"));
        let port: u16 = line
            .split(' ')
            .nth(1)
            .unwrap()
            .split(['@', ':'])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        self.nodes.iter().position(|s| s.port == port).unwrap()
    }

    /// Moves `slot` from master `from` to master `to` the way `redis-cli
    /// --cluster reshard` does: IMPORTING, MIGRATING, `MIGRATE` of its
    /// keys, then `SETSLOT ... NODE` on every master.
    pub fn migrate(&self, slot: u16, from: usize, to: usize) {
        self.begin_migration(slot, from, to);
        self.move_keys(slot, from, to);
        self.end_migration(slot, from, to, &[]);
    }

    /// `SETSLOT` on `node` (`IMPORTING <id>`, `NODE <id>`, ...).
    pub fn setslot(&self, node: usize, slot: u16, args: &[&str]) {
        let _: () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(args)
            .query(&mut self.nodes[node].con())
            .unwrap();
    }

    /// A migration's first phase: `to` IMPORTING, `from` MIGRATING.
    pub fn begin_migration(&self, slot: u16, from: usize, to: usize) {
        let (from_id, to_id) = (self.id(from), self.id(to));
        self.setslot(to, slot, &["IMPORTING", &from_id]);
        self.setslot(from, slot, &["MIGRATING", &to_id]);
    }

    /// A migration's second phase: `MIGRATE` of every key of `slot` from
    /// `from` to `to`; the keys moved.
    pub fn move_keys(&self, slot: u16, from: usize, to: usize) -> Vec<String> {
        let mut con = self.nodes[from].con();
        let mut moved = Vec::new();
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query(&mut con)
                .unwrap();
            if keys.is_empty() {
                return moved;
            }
            let _: () = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(self.nodes[to].port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut con)
                .unwrap();
            moved.extend(keys);
        }
    }

    /// A migration's last phase: `SETSLOT ... NODE` on `to`, `from`, then
    /// every other live master but those in `skip` (a stopped node would
    /// not answer).
    pub fn end_migration(&self, slot: u16, from: usize, to: usize, skip: &[usize]) {
        let to_id = self.id(to);
        self.setslot(to, slot, &["NODE", &to_id]);
        self.setslot(from, slot, &["NODE", &to_id]);
        for i in 0..self.nodes.len() {
            if i == from || i == to || skip.contains(&i) || self.nodes[i].child.is_none() {
                continue;
            }
            let rep: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut self.nodes[i].con())
                .unwrap();
            if rep.contains("role:master") {
                self.setslot(i, slot, &["NODE", &to_id]);
            }
        }
    }
}

// Helpers of the cluster test files.

pub fn connected<const W: usize>(g: &leaparray_redis::RedisGate<W>, why: &str, within: Duration) {
    let t = Instant::now();
    while !g.is_connected() {
        assert!(t.elapsed() < within, "{why}: never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn get_readonly(c: &Cluster, node: usize, key: &str) -> Option<String> {
    let mut con = c.nodes[node].con();
    let _: () = redis::cmd("READONLY").query(&mut con).unwrap();
    redis::cmd("GET").arg(key).query(&mut con).unwrap()
}

pub fn role(c: &Cluster, node: usize) -> String {
    let rep: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut c.nodes[node].con())
        .unwrap();
    rep.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .unwrap_or("")
        .trim()
        .to_owned()
}

pub fn wait(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < within, "premise: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ledger: admissions per window; the most any `n` consecutive windows hold.
#[derive(Default)]
pub struct Ledger(pub std::collections::BTreeMap<u64, u64>);

impl Ledger {
    pub fn note(&mut self, d: leaparray_redis::Decision) -> bool {
        match d.window() {
            Some(w) => {
                *self.0.entry(w).or_insert(0) += 1;
                true
            }
            None => false,
        }
    }
    pub fn worst(&self, n: u64) -> u64 {
        self.0
            .keys()
            .map(|&w| self.0.range(w..w + n).map(|(_, c)| c).sum())
            .max()
            .unwrap_or(0)
    }
}

/// A `redis-sentinel` of the tests' own (`redis-server <conf> --sentinel`)
/// on a free loopback port, watching one master as `name` with quorum 1;
/// killed on drop (also when a test panics). Its periods are shortened
/// with `SENTINEL DEBUG` (the same state machine, shorter waits): INFO
/// every 100 ms (10 s by default), publish period 500 ms (2 s: an old
/// master left a master is turned into a replica after 4 of them, 2 s
/// here, 8 s by default); a master is down after 1 s without a reply.
pub struct Sentinel {
    pub port: u16,
    pub name: String,
    child: Option<Child>,
    dir: std::path::PathBuf,
}

impl Sentinel {
    pub fn start(master: &Server, name: &str) -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "leaparray-redis-sentinel-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor {name} 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 2000\n",
                dir.display(),
                master.port
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server --sentinel ({e}): install redis-server \
                     (`apt-get install -y redis-server redis-sentinel`, as .ci/redis.sh does)"
                )
            });
        let s = Sentinel {
            port,
            name: name.to_owned(),
            child: Some(child),
            dir,
        };
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "sentinel did not listen"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let _: () = redis::cmd("SENTINEL")
            .arg("DEBUG")
            .arg(&["info-period", "100", "publish-period", "500"][..])
            .query(&mut s.con())
            .unwrap();
        s
    }

    pub fn con(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// The gates' URL.
    pub fn url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/{}", self.port, self.name)
    }

    /// The port of the master Sentinel names.
    pub fn master(&self) -> u16 {
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.name)
            .query(&mut self.con())
            .unwrap();
        port
    }

    /// Whether Sentinel sees `replica` as a replica it could promote (no
    /// down flag, its link to the master up).
    pub fn can_promote(&self, replica: &Server) -> bool {
        let replicas: Vec<std::collections::HashMap<String, String>> = redis::cmd("SENTINEL")
            .arg("REPLICAS")
            .arg(&self.name)
            .query(&mut self.con())
            .unwrap();
        replicas.iter().any(|r| {
            r.get("port").map(String::as_str) == Some(&replica.port.to_string())
                && r.get("flags").is_some_and(|f| f == "slave")
                && r.get("master-link-status").map(String::as_str) == Some("ok")
        })
    }

    /// `SENTINEL FAILOVER` (retried while Sentinel answers that no replica
    /// can be promoted yet, up to 10 s).
    pub fn failover(&self) {
        let t = Instant::now();
        loop {
            let r: redis::RedisResult<()> = redis::cmd("SENTINEL")
                .arg("FAILOVER")
                .arg(&self.name)
                .query(&mut self.con());
            match r {
                Ok(()) => return,
                Err(e) if t.elapsed() < Duration::from_secs(10) => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("SENTINEL FAILOVER: {e}"),
            }
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `INFO replication`'s `field` on `server`.
pub fn replication(server: &Server, field: &str) -> String {
    let rep: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut server.con())
        .unwrap();
    rep.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// The counts of limit `name` per window (the counters hash `{name}`
/// without its `epoch` and `fence` fields).
pub fn counts(con: &mut redis::Connection, name: &str) -> std::collections::BTreeMap<u64, i64> {
    let all: std::collections::BTreeMap<String, i64> = redis::cmd("HGETALL")
        .arg(format!("{{{name}}}"))
        .query(con)
        .unwrap();
    all.into_iter()
        .filter_map(|(w, n)| Some((w.parse().ok()?, n)))
        .collect()
}

/// A loopback TCP proxy to a port (the test's own link): it holds each
/// chunk of bytes for `delay_ms` (read when the chunk arrives) in each
/// direction, keeping the order and the throughput.
/// [`Proxy::blackhole`] is a silent partition; [`Proxy::retarget`] sends new connections elsewhere (an endpoint whose
/// DNS name moved: open connections stay where they were).
pub struct Proxy {
    pub port: u16,
    delay_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
    to: std::sync::Arc<std::sync::atomic::AtomicU16>,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub fn start(to: u16) -> Self {
        use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let to = Arc::new(AtomicU16::new(to));
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, target, c) = (Arc::clone(&delay_ms), Arc::clone(&to), Arc::clone(&cut));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target.load(Ordering::Relaxed)))
                else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                pipe(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    &d,
                    &c,
                );
                pipe(server, client, &d, &c);
            }
        });
        Proxy {
            port,
            delay_ms,
            to,
            cut,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn delay(&self, ms: u64) {
        self.delay_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// A silent partition from now on: nothing passes in either direction,
    /// and a side that closes its connection is not told to the other
    /// (its end stays open), as across a network partition.
    pub fn blackhole(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// New connections go to `port`.
    pub fn retarget(&self, port: u16) {
        self.to.store(port, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Bytes from `from` to `to`, each chunk held `delay` after it arrived;
/// none, and no close, once `cut`.
fn pipe(
    mut from: TcpStream,
    mut to: TcpStream,
    delay: &std::sync::Arc<std::sync::atomic::AtomicU64>,
    cut: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::io::{Read, Write};
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let delay = std::sync::Arc::clone(delay);
    let cut = std::sync::Arc::clone(cut);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = from.read(&mut buf);
            if cut.load(std::sync::atomic::Ordering::Relaxed) {
                match n {
                    Ok(n) if n > 0 => continue,
                    // The close is not passed on: the writer never ends.
                    _ => {
                        std::mem::forget(tx);
                        return;
                    }
                }
            }
            match n {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let d = delay.load(std::sync::atomic::Ordering::Relaxed);
                    let due = Instant::now() + Duration::from_millis(d);
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = from.shutdown(std::net::Shutdown::Both);
    });
    std::thread::spawn(move || {
        for (due, bytes) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}
