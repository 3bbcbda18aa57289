//! Redis Cluster: which node serves the limit's slot, and how a gate
//! follows it (a thin layer over the single-node connections).
//!
//! Every key of a limit has the hash tag `{name}`, so the limit lives in
//! one slot, served by one master at a time. The gate does not need to
//! know the cluster's layout up front:
//!
//! * It connects to the node it knows (the slot's last known owner, else
//!   the URL's node). A node that does not serve the slot answers the
//!   script with `MOVED <slot> <host:port>`: the gate connects there (the
//!   same URL with that host and port: same database, credentials; an
//!   empty host, from `cluster-preferred-endpoint-type unknown-endpoint`,
//!   is the answering node's host, as the Redis Cluster specification
//!   says), up to
//!   [`MAX_HOPS`] redirections per connection, and learns the cluster's
//!   nodes with `CLUSTER SLOTS` (after a redirection, or once when the
//!   first connection finds a cluster).
//! * Every new connection's first call is the restart check (module
//!   `restart`), on the owner itself: a promoted replica is detected where
//!   it serves.
//! * When the known owner cannot be reached (killed, failed over), the
//!   keeper tries every node it knows (the URL's, [`Config::seeds`], those
//!   learned), each of which redirects to the slot's owner as it sees it.
//! * On a connection in use, `MOVED` (the slot moved, or a failover) makes
//!   that node the owner and drops the pooled connections; the decision is
//!   retried there within its `timeout`. `ASK` and `TRYAGAIN` (the slot is
//!   migrating) are retried at the owner after a pause, within the same
//!   bound, then the fault policy decides; never a refusal.
//!
//! Why `ASK` is not followed with `ASKING`: the script names four keys,
//! one of which exists only after a restart (`{name}:restored`); an importing node answers a multi-key command whose
//! keys it does not all hold with `TRYAGAIN`, even after `ASKING`. So
//! following `ASK` would give `TRYAGAIN` from the importing node instead
//! of from the migrating one: the same wait, one more connection. Waiting
//! at the owner ends with the migration (`MOVED` then names the new owner).
//!
//! Standalone Redis takes none of this path: no redirection ever comes,
//! the hot path is unchanged (one `EVALSHA` per decision).
//!
//! [`Config::seeds`]: crate::Config::seeds

use crate::config::Tls;
use crate::sentinel::{self, Sentinels};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisResult};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Redirections followed by one new connection before it gives up.
pub(crate) const MAX_HOPS: usize = 5;

/// Where the limit's slot is served.
#[derive(Debug)]
pub(crate) struct Route {
    /// The URL's connection info: database, credentials, TLS (roots and
    /// client certificate included, so every node reached has them).
    base: ConnectionInfo,
    /// The seeds' (from `Config::seeds`).
    seeds: Vec<ConnectionInfo>,
    /// The slot's owner as last learned (`None`: the URL's node).
    owner: Mutex<Option<ConnectionInfo>>,
    /// Nodes learned with `CLUSTER SLOTS`.
    learned: Mutex<Vec<ConnectionInfo>>,
    /// A redirection came: learn the nodes again at the next connection.
    stale: AtomicBool,
    /// A Sentinel URL's sentinels (then `base` is the master's template:
    /// database and credentials; see the module `sentinel`).
    sentinel: Option<Sentinels>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn same(a: &ConnectionInfo, b: &ConnectionInfo) -> bool {
    a.addr == b.addr
}

/// The host a connection reaches (`None`: a Unix socket, no cluster).
fn host_of(info: &ConnectionInfo) -> Option<&str> {
    match &info.addr {
        ConnectionAddr::Tcp(h, _) | ConnectionAddr::TcpTls { host: h, .. } => Some(h),
        _ => None,
    }
}

impl Route {
    /// The route of `url` and `seeds`, each with `tls`'s roots and client
    /// certificate if it is a TLS URL (module `tls`).
    pub fn new(url: &str, seeds: &[String], tls: &Tls) -> RedisResult<Self> {
        if crate::tls::wanted(url) {
            crate::tls::provider();
        }
        let (base, sentinel) = if sentinel::is_sentinel(url) {
            let (s, template) = sentinel::parse(url, tls)?;
            (template, Some(s))
        } else {
            (crate::tls::apply(url.into_connection_info()?, tls)?, None)
        };
        let seeds = seeds
            .iter()
            .map(|s| crate::tls::apply(s.as_str().into_connection_info()?, tls))
            .collect::<RedisResult<Vec<_>>>()?;
        Ok(Self {
            base,
            seeds,
            owner: Mutex::new(None),
            learned: Mutex::new(Vec::new()),
            stale: AtomicBool::new(true),
            sentinel,
        })
    }

    /// The sentinels of a Sentinel URL.
    pub fn sentinel(&self) -> Option<&Sentinels> {
        self.sentinel.as_ref()
    }

    /// The node a connection last passed its check at, if any.
    pub fn owner(&self) -> Option<ConnectionInfo> {
        lock(&self.owner).clone()
    }

    /// The URL's connection info at `host:port` (a node named by `MOVED`
    /// or `CLUSTER SLOTS`).
    pub fn at(&self, host: &str, port: u16) -> ConnectionInfo {
        let mut info = self.base.clone();
        info.addr = crate::tls::at(&self.base.addr, host, port);
        info
    }

    /// A `MOVED` redirection's node (`host:port`; IPv6 hosts hold colons),
    /// sent by the node at `from`. An empty host (`MOVED 3999 :6381`, from
    /// `cluster-preferred-endpoint-type unknown-endpoint`) is `from`'s host,
    /// as the Redis Cluster specification says ("the client should send the
    /// next request to the same endpoint as the current request but with
    /// the provided port"). `?` (a `hostname` endpoint type without a
    /// hostname: a misconfigured node) is not followed.
    pub fn moved_to(&self, addr: &str, from: &ConnectionInfo) -> Option<ConnectionInfo> {
        let (host, port) = addr.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = port.parse().ok()?;
        if host.is_empty() {
            return Some(self.at(host_of(from)?, port));
        }
        if host == "?" {
            return None;
        }
        Some(self.at(host, port))
    }

    /// The node to try first: the slot's owner as last learned, else the URL's.
    pub fn first(&self) -> ConnectionInfo {
        lock(&self.owner)
            .clone()
            .unwrap_or_else(|| self.base.clone())
    }

    /// Every other node known, to try when `first` cannot be reached: the
    /// URL's, the seeds, those learned.
    pub fn others(&self, first: &ConnectionInfo) -> Vec<ConnectionInfo> {
        let mut all = vec![self.base.clone()];
        all.extend(self.seeds.iter().cloned());
        all.extend(lock(&self.learned).iter().cloned());
        let mut out: Vec<ConnectionInfo> = Vec::new();
        for i in all {
            if !same(&i, first) && !out.iter().any(|o| same(o, &i)) {
                out.push(i);
            }
        }
        out
    }

    /// The slot is served by `info` (a connection there passed its check).
    pub fn owned_by(&self, info: ConnectionInfo) {
        *lock(&self.owner) = Some(info);
    }

    /// A redirection came: learn the nodes again at the next connection.
    pub fn redirected(&self, to: ConnectionInfo) {
        *lock(&self.owner) = Some(to);
        self.stale.store(true, Relaxed);
    }

    /// Whether the nodes should be learned again (once, then after each
    /// redirection).
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Relaxed)
    }

    /// Learns the cluster's nodes (masters and replicas) from `CLUSTER
    /// SLOTS` on `con`, a connection to `from`. A node whose endpoint is
    /// NULL (`unknown-endpoint`) is at `from`'s host (the specification of
    /// `CLUSTER SLOTS`); one whose endpoint is `""` (a node that does not
    /// know its address) or `?` (a misconfigured hostname) is left out.
    pub fn learn(&self, con: &mut redis::Connection, from: &ConnectionInfo) -> RedisResult<()> {
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SLOTS").query(con)?;
        let mut nodes: Vec<ConnectionInfo> = Vec::new();
        for range in &slots {
            let redis::Value::Array(r) = range else {
                continue;
            };
            for node in r.iter().skip(2) {
                let redis::Value::Array(n) = node else {
                    continue;
                };
                let (Some(h), Some(p)) = (n.first(), n.get(1)) else {
                    continue;
                };
                let host = match h {
                    redis::Value::Nil => host_of(from).map(str::to_owned),
                    h => redis::from_redis_value::<String>(h).ok(),
                };
                let (Some(host), Ok(port)) = (host, redis::from_redis_value::<u16>(p)) else {
                    continue;
                };
                if host.is_empty() || host == "?" {
                    continue;
                }
                let info = self.at(&host, port);
                if !nodes.iter().any(|o| same(o, &info)) {
                    nodes.push(info);
                }
            }
        }
        if !nodes.is_empty() {
            *lock(&self.learned) = nodes;
        }
        Ok(())
    }
}

/// Identities ("run node replid", as the script records them) of masters
/// that answered this process `MOVED` (the vouch of the module `restart`,
/// "Redis Cluster: migration or failover"): each sent with the fresh
/// connections' checks for a while after its `MOVED`, until a fresh check
/// sent after it passes (the node that passed then holds its own identity:
/// adopted or a new epoch).
#[derive(Debug, Default)]
pub(crate) struct Vouches {
    /// (node id, identity, when its `MOVED` came, sequence number), and the
    /// latest sequence number.
    seen: Mutex<(Vec<Vouch>, u64)>,
}

/// A node id, its identity, when its `MOVED` came, its sequence number.
type Vouch = (String, String, Instant, u64);

/// Vouches kept at most.
const VOUCHES: usize = 8;

impl Vouches {
    /// The master `id` answered `MOVED`; `identity` is its "run node
    /// replid".
    pub fn master(&self, id: String, identity: String) {
        let mut g = lock(&self.seen);
        g.1 += 1;
        let seq = g.1;
        g.0.retain(|v| v.0 != id);
        g.0.push((id, identity, Instant::now(), seq));
        if g.0.len() > VOUCHES {
            g.0.remove(0);
        }
    }

    /// `id` answered `MOVED` as a replica: it vouches for nothing.
    pub fn replica(&self, id: &str) {
        lock(&self.seen).0.retain(|v| v.0 != id);
    }

    /// The identities whose `MOVED` came less than `within` ago, separated
    /// by commas (the script's argument), and the mark to give
    /// [`Self::used`].
    pub fn current(&self, within: Duration) -> (String, u64) {
        let g = lock(&self.seen);
        let ids: Vec<&str> =
            g.0.iter()
                .filter(|v| v.2.elapsed() < within)
                .map(|v| v.1.as_str())
                .collect();
        (ids.join(","), g.1)
    }

    /// A fresh check sent with `current`'s `mark` passed: the vouches it
    /// carried are spent (those that came after stay).
    pub fn used(&self, mark: u64) {
        lock(&self.seen).0.retain(|v| v.3 > mark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirection_keeps_the_urls_database_and_credentials() {
        let r = Route::new(
            "redis://user:secret@10.0.0.1:7000/2",
            &["redis://10.0.0.2:7000/".to_owned()],
            &Tls::default(),
        )
        .unwrap();
        let from = r.first();
        let to = r.moved_to("10.0.0.3:7001", &from).unwrap();
        assert_eq!(to.addr, ConnectionAddr::Tcp("10.0.0.3".into(), 7001));
        assert_eq!(to.redis.db, 2);
        assert_eq!(to.redis.password.as_deref(), Some("secret"));
        let v6 = r.moved_to("[::1]:7002", &from).unwrap();
        assert_eq!(v6.addr, ConnectionAddr::Tcp("::1".into(), 7002));
        assert!(r.moved_to("no port", &from).is_none());
        // An empty host is the answering node's; `?` is not followed.
        let same_host = r.moved_to(":7003", &to).unwrap();
        assert_eq!(same_host.addr, ConnectionAddr::Tcp("10.0.0.3".into(), 7003));
        assert_eq!(same_host.redis.password.as_deref(), Some("secret"));
        assert!(r.moved_to("?:7004", &from).is_none());
        // First the URL's node; then, after a redirection, the new owner
        // first and the URL's node and the seed as the others.
        assert_eq!(r.first().addr, r.base.addr);
        r.redirected(to.clone());
        assert_eq!(r.first().addr, to.addr);
        let others: Vec<_> = r.others(&to).into_iter().map(|i| i.addr).collect();
        assert_eq!(
            others,
            vec![
                ConnectionAddr::Tcp("10.0.0.1".into(), 7000),
                ConnectionAddr::Tcp("10.0.0.2".into(), 7000)
            ]
        );
    }

    #[test]
    fn vouches_are_spent_by_a_check_sent_after_them_and_expire() {
        let v = Vouches::default();
        let long = Duration::from_secs(60);
        v.master("b".into(), "r1 b p1".into());
        v.master("c".into(), "r2 c p2".into());
        let (ids, mark) = v.current(long);
        assert_eq!(ids, "r1 b p1,r2 c p2");
        // `d` answers while that check is under way: it stays.
        v.master("d".into(), "r3 d p3".into());
        v.replica("c");
        v.used(mark);
        assert_eq!(v.current(long).0, "r3 d p3");
        // A later `MOVED` of the same node replaces its identity.
        v.master("d".into(), "r3 d p4".into());
        assert_eq!(v.current(long).0, "r3 d p4");
        assert_eq!(v.current(Duration::ZERO).0, "");
        for i in 0..10 {
            v.master(format!("n{i}"), format!("r n{i} p"));
        }
        assert_eq!(v.current(long).0.split(',').count(), VOUCHES);
    }
}
