//! Redis Sentinel: which redis-server is the master, asked of the
//! sentinels, and why a gate asks again at every heartbeat.
//!
//! A URL `redis+sentinel://[[user]:password@]host:port[,host:port...]/master[/db]`
//! names the sentinels and the master's name (`sentinel monitor <master>
//! ...`); the credentials and the database are the master's (sentinels
//! are asked without `AUTH`). `rediss+sentinel://` (feature `tls`)
//! reaches the sentinels and the master with TLS, with the same roots and
//! client certificate (module `tls`). A gate finds the master as Redis's client
//! guide says: it asks the sentinels in order (`SENTINEL
//! GET-MASTER-ADDR-BY-NAME`, each bounded by the gate's `timeout`; the
//! first that answers goes to the front of the list), connects to the
//! address, and checks the role there: the connection's first call is
//! the restart check (module `restart`), which refuses a server whose
//! `INFO replication` does not say `role:master` (`READONLY`, read inside
//! the script, atomically with the epoch check: a replica never passes).
//!
//! The keeper asks again when the connection fails or Redis answers
//! `READONLY` (the process goes offline, and every reconnection asks
//! Sentinel first), and at every heartbeat while connected. The
//! heartbeat's question is what follows a planned failover: Sentinel
//! promotes the replica (`REPLICAOF NO ONE`) and names it once the
//! promotion is seen, but it turns the old master into a replica only
//! when it has reported itself a master for 4 publish periods (8 s with
//! Redis 7.0's defaults). Meanwhile the old master takes writes, and a
//! process whose connections to it stay open would book there while new
//! processes, told the new master by Sentinel, book on the new one: two
//! limits. The race it prevents, limit 100:
//!
//! | step | Process 1 (on X) | Process 2 (starts) | X (master) | Y (X's replica) |
//! |---|---|---|---|---|
//! | 1 | books 100 in window w | | holds 100 | holds 100 |
//! | 2 | | | | `SENTINEL FAILOVER`: promoted; Sentinel names Y ~1 s later |
//! | 3 | | asks Sentinel: Y; new epoch, the fence | still a master (8 s) | |
//! | 4 | heartbeat: Sentinel names Y, not X: drops its connections, reconnects at Y, *stale*, writes back | | | holds 100 + write-back |
//! | 5 | | after the fence: refused (w's interval is full) | | |
//!
//! Without step 4, Process 1 goes on booking at X and Process 2 at Y,
//! each against its own counts, until Sentinel reconfigures X
//! (`sentinel::planned_failover_with_a_process_starting_during_the_switch`
//! passes the limit). A process moves within one heartbeat plus its round
//! trips to Sentinel and to Y after Sentinel names Y (a few ms past the
//! heartbeat on a LAN; each round trip at most `timeout`); its bookings at
//! X until then are in its ledger and written back under Y's epoch. The
//! fleet stays within the limit when every live process moves within the
//! restart fence that the first one to reach Y starts (the longest
//! `restart_grace` of the limit's processes; module `restart`, "The
//! fence", counts the sentinels' questions in its least), as for a
//! restart. If no sentinel answers
//! the heartbeat's question, the process stays on its master (with every
//! sentinel down no failover happens; a process cut off from the
//! sentinels but not from a deposed master is the README's split brain).

use crate::config::Tls;
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisResult};
use std::sync::Mutex;
use std::time::Duration;

/// The URL scheme of a Sentinel configuration.
const SCHEME: &str = "redis+sentinel://";
/// The same with TLS to the sentinels and the master (feature `tls`).
const TLS_SCHEME: &str = "rediss+sentinel://";

/// Whether `url` is a Sentinel URL.
pub(crate) fn is_sentinel(url: &str) -> bool {
    url.starts_with(SCHEME) || url.starts_with(TLS_SCHEME)
}

/// What a sentinel's null answer means: it watches no master of that name.
pub(crate) const UNKNOWN_MASTER: &str = "no sentinel that answered knows the master's name";

/// The default port of a sentinel.
const SENTINEL_PORT: u16 = 26379;

/// The sentinels and the name of the master they watch.
pub(crate) struct Sentinels {
    /// In the order to ask them (the latest that answered first).
    addrs: Mutex<Vec<(String, u16)>>,
    /// The master's name (`sentinel monitor <name> ...`).
    pub master: String,
    /// How a sentinel is reached: plain TCP, or TLS with the URL's
    /// settings (the address is replaced by each sentinel's).
    reach: ConnectionAddr,
    /// The connection to the sentinel that answered last (kept open: the
    /// keeper asks at every heartbeat).
    con: Mutex<Option<redis::Connection>>,
}

impl std::fmt::Debug for Sentinels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinels")
            .field("addrs", &self.addrs)
            .field("master", &self.master)
            .finish()
    }
}

fn invalid(why: &'static str, detail: String) -> redis::RedisError {
    (redis::ErrorKind::InvalidClientConfig, why, detail).into()
}

/// `host:port` or `[v6]:port` (port optional: 26379).
fn host_port(s: &str, url: &str) -> RedisResult<(String, u16)> {
    let bad = || invalid("invalid sentinel address", format!("{s:?} in {url}"));
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(p) => (h, p.parse().map_err(|_| bad())?),
            None if after.is_empty() => (h, SENTINEL_PORT),
            None => return Err(bad()),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
            None => (s, SENTINEL_PORT),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// Parses a Sentinel URL: the sentinels, and the master's connection
/// info as a template (database, credentials, TLS with `tls`'s roots and
/// client certificate; its address is the first sentinel's until Sentinel
/// names the master).
pub(crate) fn parse(url: &str, tls: &Tls) -> RedisResult<(Sentinels, ConnectionInfo)> {
    let (rest, scheme) = match (url.strip_prefix(SCHEME), url.strip_prefix(TLS_SCHEME)) {
        (Some(rest), _) => (rest, "redis"),
        (_, Some(rest)) => (rest, "rediss"),
        _ => return Err(invalid("not a Sentinel URL", url.to_owned())),
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let addrs = hosts
        .split(',')
        .map(|h| host_port(h, url))
        .collect::<RedisResult<Vec<_>>>()?;
    let mut parts = path.split('/');
    let master = parts.next().unwrap_or("").to_owned();
    if master.is_empty() {
        return Err(invalid(
            "a Sentinel URL names the master: redis+sentinel://host:port[,host:port]/master[/db]",
            url.to_owned(),
        ));
    }
    let db = parts.next().unwrap_or("");
    if parts.next().is_some() {
        return Err(invalid("too many path segments", url.to_owned()));
    }
    // The redis crate parses (and percent-decodes) the credentials and the
    // database, at the first sentinel's address.
    let (h, p) = &addrs[0];
    let host = if h.contains(':') {
        format!("[{h}]")
    } else {
        h.clone()
    };
    let auth = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let template = format!("{scheme}://{auth}{host}:{p}/{db}").into_connection_info()?;
    let template = crate::tls::apply(template, tls)?;
    Ok((
        Sentinels {
            addrs: Mutex::new(addrs),
            master,
            reach: template.addr.clone(),
            con: Mutex::new(None),
        },
        template,
    ))
}

impl Sentinels {
    /// The master's address as the first sentinel that answers names it
    /// (each asked within `timeout` to connect and `timeout` to answer);
    /// that sentinel goes first for the next question. If none names it
    /// and one answered that it knows no master of that name, that is the
    /// error ([`UNKNOWN_MASTER`]: a typo, not an outage).
    pub fn ask(&self, timeout: Duration) -> RedisResult<(String, u16)> {
        let mut con = self.con.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = con.as_mut() {
            if let Ok(Some(at)) = self.query(c) {
                return Ok(at);
            }
            *con = None;
        }
        let addrs = self.addrs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut last = invalid("no sentinel", String::new());
        let mut unknown = None;
        for (i, (host, port)) in addrs.iter().enumerate() {
            match self.ask_one(host, *port, timeout) {
                Ok((c, Some(at))) => {
                    *con = Some(c);
                    if i > 0 {
                        let mut g = self.addrs.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(j) = g.iter().position(|a| a.0 == *host && a.1 == *port) {
                            let a = g.remove(j);
                            g.insert(0, a);
                        }
                    }
                    return Ok(at);
                }
                Ok((_, None)) => {
                    unknown = Some(invalid(
                        UNKNOWN_MASTER,
                        format!("{:?}, asked at {host}:{port}", self.master),
                    ))
                }
                Err(e) => last = e,
            }
        }
        Err(unknown.unwrap_or(last))
    }

    fn ask_one(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> RedisResult<(redis::Connection, Option<(String, u16)>)> {
        let info = ConnectionInfo {
            addr: crate::tls::at(&self.reach, host, port),
            redis: Default::default(),
        };
        let mut con = redis::Client::open(info)?.get_connection_with_timeout(timeout)?;
        con.set_read_timeout(Some(timeout))?;
        con.set_write_timeout(Some(timeout))?;
        let at = self.query(&mut con)?;
        Ok((con, at))
    }

    fn query(&self, con: &mut redis::Connection) -> RedisResult<Option<(String, u16)>> {
        redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.master)
            .query(con)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentinel_url_names_the_sentinels_the_master_and_the_masters_database_and_credentials() {
        let (s, t) = parse(
            "redis+sentinel://user:p%40ss@10.0.0.1:26380,10.0.0.2,[::1]:5000/mymaster/3",
            &Tls::default(),
        )
        .unwrap();
        assert_eq!(s.master, "mymaster");
        assert_eq!(
            *s.addrs.lock().unwrap(),
            vec![
                ("10.0.0.1".to_owned(), 26380),
                ("10.0.0.2".to_owned(), 26379),
                ("::1".to_owned(), 5000)
            ]
        );
        assert_eq!(t.redis.db, 3);
        assert_eq!(t.redis.username.as_deref(), Some("user"));
        assert_eq!(t.redis.password.as_deref(), Some("p@ss"));
        let (s, t) = parse("redis+sentinel://127.0.0.1:26379/m", &Tls::default()).unwrap();
        assert_eq!((s.master.as_str(), t.redis.db), ("m", 0));
        for bad in [
            "redis+sentinel://127.0.0.1:26379",
            "redis+sentinel://127.0.0.1:26379/",
            "redis+sentinel://127.0.0.1:x/m",
            "redis+sentinel://,127.0.0.1/m",
            "redis+sentinel://127.0.0.1/m/0/extra",
            "redis+sentinel://[::1/m",
        ] {
            assert!(parse(bad, &Tls::default()).is_err(), "{bad}");
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn a_rediss_sentinel_url_reaches_the_sentinels_and_the_master_with_tls() {
        let (s, t) = parse("rediss+sentinel://10.0.0.1/m/2", &Tls::default()).unwrap();
        assert!(matches!(t.addr, ConnectionAddr::TcpTls { .. }));
        assert!(matches!(
            crate::tls::at(&s.reach, "10.0.0.2", 26379),
            ConnectionAddr::TcpTls { ref host, port: 26379, .. } if host == "10.0.0.2"
        ));
        assert_eq!((s.master.as_str(), t.redis.db), ("m", 2));
        let (s, _) = parse("redis+sentinel://10.0.0.1/m", &Tls::default()).unwrap();
        assert!(matches!(s.reach, ConnectionAddr::Tcp(..)));
    }
}
