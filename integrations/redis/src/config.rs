//! What a [`RedisGate`](crate::RedisGate) is told: the limit, the mode, the
//! fault policy and the timings of reconnection and restart.

use std::time::Duration;

/// How decisions are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every decision is one Redis round trip (one `EVALSHA`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, Mode};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100);
    /// assert_eq!(c.mode, Mode::Exact);
    /// ```
    Exact,
    /// A process books up to `block` permits of the current window at once
    /// and admits from them locally; unused permits go back at the window's
    /// end. The fleet can fall short of the limit by at most
    /// `processes x block` per window.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, Mode};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 1000)
    ///     .lease(50);
    /// assert_eq!(c.mode, Mode::Lease { block: 50 });
    /// ```
    Lease {
        /// Permits booked per round trip (at least the request's own).
        block: u64,
    },
}

/// What a decision does while Redis cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPolicy {
    /// Refuse (the default): never over the limit.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, FaultPolicy};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100);
    /// assert_eq!(c.on_fault, FaultPolicy::Refuse);
    /// ```
    Refuse,
    /// Admit from a local sliding window of `share` permits per interval
    /// (this process's share of the limit). Those admissions are written to
    /// Redis when it is back; while it is away, the fleet can pass the limit
    /// by the shares of the processes that cannot reach it.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, FaultPolicy};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100)
    ///     .on_fault(FaultPolicy::Local { share: 25 });
    /// assert_eq!(c.on_fault, FaultPolicy::Local { share: 25 });
    /// ```
    Local {
        /// Permits per interval this process admits on its own.
        share: u64,
    },
}

/// What [`RedisGate::open`](crate::RedisGate::open) and every check do
/// when Redis's `maxmemory-policy` (read with `INFO memory`, which managed
/// Redis allows where it blocks `CONFIG`) is an `allkeys-*` policy, which can evict the limit's keys (no key of a
/// limit has a TTL, so `volatile-*` cannot): each eviction is a restart
/// (the fence: refusals for `restart_grace`). Read at every check (each
/// new connection and each heartbeat): a policy set at run time counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnEviction {
    /// Refuse (the default): `open` returns
    /// [`Error::Evicting`](crate::Error::Evicting) if it reaches Redis;
    /// otherwise every check on that Redis fails (a connected process goes
    /// offline at its next heartbeat and stays offline, the fault policy
    /// decides) and `log::error!` says why.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, OnEviction};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100);
    /// assert_eq!(c.on_evicting, OnEviction::Refuse);
    /// ```
    Refuse,
    /// Use it, with a `log::warn!` once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, OnEviction};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100)
    ///     .on_evicting(OnEviction::Warn);
    /// assert_eq!(c.on_evicting, OnEviction::Warn);
    /// ```
    Warn,
}

/// TLS settings of a `rediss://` or `rediss+sentinel://` URL (they need
/// the feature `tls`; module `tls`, `src/tls.rs`). By default the
/// system's roots and no client certificate.
///
/// ```
/// use leaparray_redis::Tls;
/// let t = Tls::default();
/// assert_eq!((t.roots, t.client), (None, None));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Tls {
    /// CA certificates (PEM) trusted instead of the system's roots: a
    /// private CA, a self-signed server, a managed service's CA bundle.
    /// At least one certificate (else `open` returns
    /// [`crate::Error::Config`]).
    pub roots: Option<Vec<u8>>,
    /// A client certificate chain and its private key (PEM), for a server
    /// that requires one (`tls-auth-clients yes`, Redis's default when
    /// `tls-port` is set). `Debug` never shows the key.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field(
                "roots",
                &self
                    .roots
                    .as_ref()
                    .map(|r| format!("{} bytes of PEM", r.len())),
            )
            .field(
                "client",
                &self
                    .client
                    .as_ref()
                    .map(|(c, _)| format!("{} bytes of PEM, key hidden", c.len())),
            )
            .finish()
    }
}

/// A limit shared through Redis, and how to reach it.
///
/// `limit` permits per interval of `N` windows of `window` (`N` is the
/// [`RedisGate`](crate::RedisGate)'s const parameter).
///
/// ```
/// # use std::time::Duration;
/// use leaparray_redis::Config;
/// let c = Config::new("redis://127.0.0.1:6379/", "checkout", Duration::from_millis(250), 100)
///     .timeout(Duration::from_millis(20));
/// assert_eq!(c.timeout, Duration::from_millis(20));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Redis URL (`redis://host:port/db`, or `rediss://` for TLS with the
    /// feature `tls`: [`Config::tls`](Config#structfield.tls)): a standalone Redis, or any node
    /// of a Redis Cluster (the gate follows the limit's slot to the master
    /// serving it); or Redis Sentinel's sentinels and the master's name,
    /// `redis+sentinel://[[user]:password@]host:port[,host:port...]/master[/db]`
    /// (port 26379 if left out; the credentials and database are the
    /// master's): the gate asks the sentinels for the master, books only
    /// on a master, and follows a failover (asking again at every
    /// heartbeat and after a failure); `rediss+sentinel://` reaches the
    /// sentinels and the master with TLS.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, RedisGate};
    /// let url = "redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster";
    /// let gate = RedisGate::<4>::open(Config::new(url, "api", Duration::from_millis(250), 100))?;
    /// // No sentinel answers on ports 1 and 2: offline, the fault policy decides.
    /// assert!(!gate.is_connected());
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    pub url: String,
    /// More nodes of the same cluster (URLs), tried when neither the
    /// slot's known owner nor the URL's node can be reached. Empty by
    /// default; the nodes learned from the cluster are tried too. Not with
    /// a Sentinel URL, which names every sentinel itself (`open` returns
    /// [`crate::Error::Config`]).
    pub seeds: Vec<String>,
    /// The limit's name: its keys are `{name}`, `{name}:epoch`,
    /// `{name}:restored`, `{name}:run` (one hash tag: one Cluster slot).
    pub name: String,
    /// The length of a window (at least 1 µs; Redis time is in µs).
    pub window: Duration,
    /// Permits per interval of `N` windows, across every process.
    pub limit: u64,
    /// Exact or lease mode.
    pub mode: Mode,
    /// What decisions do while Redis cannot be reached.
    pub on_fault: FaultPolicy,
    /// The longest a decision waits for Redis (connect, send, reply); past
    /// it the connection is dropped and the fault policy decides. 50 ms.
    pub timeout: Duration,
    /// How often the background keeper checks Redis's epoch when the
    /// process is idle (so an idle process writes its bookings back after a
    /// restart too), and returns ended leases. 50 ms.
    pub heartbeat: Duration,
    /// The longest wait between reconnection attempts (they start at
    /// 10 ms and double). 100 ms.
    pub max_backoff: Duration,
    /// After Redis restarts (a new epoch), fresh bookings are refused this long
    /// so that every live process can write its bookings back first
    /// (capped at `2N - 1` windows, which make a restart exact even for the
    /// bookings of processes that died, whichever clock named them; the
    /// cap is never below [`Config::min_restart_grace`]). Must be at least
    /// [`Config::min_restart_grace`] (else `open` returns
    /// [`crate::Error::Config`]): a fence shorter than that can end before
    /// this process has written its bookings back. Every process of a
    /// limit records its fence in Redis, and a new epoch is fenced for the
    /// longest of them (module `restart`, "The fence"). 500 ms.
    pub restart_grace: Duration,
    /// What to do when Redis's `maxmemory-policy` can evict the limit's
    /// keys. [`OnEviction::Refuse`].
    pub on_evicting: OnEviction,
    /// TLS roots and client certificate of a `rediss://` URL. The
    /// system's roots, no client certificate.
    pub tls: Tls,
}

impl Config {
    /// A limit of `limit` permits per interval of `N` windows of `window`,
    /// in exact mode, refusing while Redis is away, with the default
    /// timings.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let c = leaparray_redis::Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 10);
    /// assert_eq!((c.limit, c.restart_grace), (10, Duration::from_millis(500)));
    /// ```
    #[must_use]
    pub fn new(
        url: impl Into<String>,
        name: impl Into<String>,
        window: Duration,
        limit: u64,
    ) -> Self {
        Self {
            url: url.into(),
            seeds: Vec::new(),
            name: name.into(),
            window,
            limit,
            mode: Mode::Exact,
            on_fault: FaultPolicy::Refuse,
            timeout: Duration::from_millis(50),
            heartbeat: Duration::from_millis(50),
            max_backoff: Duration::from_millis(100),
            restart_grace: Duration::from_millis(500),
            on_evicting: OnEviction::Refuse,
            tls: Tls::default(),
        }
    }

    /// Lease mode with blocks of `block` permits.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, Mode};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 100).lease(5);
    /// assert_eq!(c.mode, Mode::Lease { block: 5 });
    /// ```
    #[must_use]
    pub fn lease(mut self, block: u64) -> Self {
        self.mode = Mode::Lease { block };
        self
    }

    /// More nodes of the same Redis Cluster, for when the URL's node is
    /// down (see [`Config::seeds`](Config#structfield.seeds)).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let c = leaparray_redis::Config::new("redis://10.0.0.1:7000/", "api", Duration::from_secs(1), 100)
    ///     .seeds(["redis://10.0.0.2:7000/", "redis://10.0.0.3:7000/"]);
    /// assert_eq!(c.seeds.len(), 2);
    /// ```
    #[must_use]
    pub fn seeds<S: Into<String>>(mut self, seeds: impl IntoIterator<Item = S>) -> Self {
        self.seeds = seeds.into_iter().map(Into::into).collect();
        self
    }

    /// The fault policy.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, FaultPolicy};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 100)
    ///     .on_fault(FaultPolicy::Local { share: 10 });
    /// assert_eq!(c.on_fault, FaultPolicy::Local { share: 10 });
    /// ```
    #[must_use]
    pub fn on_fault(mut self, policy: FaultPolicy) -> Self {
        self.on_fault = policy;
        self
    }

    /// The longest a decision waits for Redis.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let c = leaparray_redis::Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 100)
    ///     .timeout(Duration::from_millis(5));
    /// assert_eq!(c.timeout, Duration::from_millis(5));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long fresh bookings wait after Redis restarts.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let c = leaparray_redis::Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 100)
    ///     .restart_grace(Duration::from_secs(1));
    /// assert_eq!(c.restart_grace, Duration::from_secs(1));
    /// ```
    #[must_use]
    pub fn restart_grace(mut self, grace: Duration) -> Self {
        self.restart_grace = grace;
        self
    }

    /// What to do when Redis's `maxmemory-policy` can evict the limit's keys.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::{Config, OnEviction};
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 100)
    ///     .on_evicting(OnEviction::Warn);
    /// assert_eq!(c.on_evicting, OnEviction::Warn);
    /// ```
    #[must_use]
    pub fn on_evicting(mut self, on: OnEviction) -> Self {
        self.on_evicting = on;
        self
    }

    /// Trust only the CA certificates of `pem` (PEM) for a `rediss://` URL.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let ca = b"-----BEGIN CERTIFICATE-----\n...".to_vec(); // e.g. std::fs::read("ca.crt")?
    /// let c = leaparray_redis::Config::new("rediss://10.0.0.1:6380/", "api", Duration::from_secs(1), 100)
    ///     .tls_roots(ca.clone());
    /// assert_eq!(c.tls.roots, Some(ca));
    /// ```
    #[must_use]
    pub fn tls_roots(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.roots = Some(pem.into());
        self
    }

    /// Present the client certificate chain `cert` and its key `key` (PEM)
    /// to a `rediss://` server that asks for one.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let (cert, key) = (b"chain PEM".to_vec(), b"key PEM".to_vec()); // e.g. std::fs::read("client.crt")?
    /// let c = leaparray_redis::Config::new("rediss://10.0.0.1:6380/", "api", Duration::from_secs(1), 100)
    ///     .tls_client(cert, key);
    /// assert!(format!("{c:?}").contains("key hidden"));
    /// ```
    #[must_use]
    pub fn tls_client(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.tls.client = Some((cert.into(), key.into()));
        self
    }

    /// The least `restart_grace` [`RedisGate::open`](crate::RedisGate::open)
    /// accepts: the longest a live process can take, from the moment
    /// Redis answers again, to have its bookings written back:
    /// `max(heartbeat, max_backoff) + k x timeout`, `k` = 6 (8 with a
    /// Sentinel URL): the call that finds the old connection dead (or the
    /// reconnection attempt in flight), a connect, the check (3 calls on a
    /// restarted Redis, whose script cache is empty: `EVALSHA`, `SCRIPT
    /// LOAD`, `EVALSHA`) and the restore, each at most `timeout`; with
    /// Sentinel, the heartbeat's question and the reconnection's. Argued in
    /// the module `restart`, "The fence".
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_redis::Config;
    /// let c = Config::new("redis://127.0.0.1/", "api", Duration::from_millis(250), 100);
    /// // max(50 ms, 100 ms) + 6 x 50 ms
    /// assert_eq!(c.min_restart_grace(), Duration::from_millis(400));
    /// let s = Config::new("redis+sentinel://127.0.0.1/m", "api", Duration::from_millis(250), 100);
    /// assert_eq!(s.min_restart_grace(), Duration::from_millis(500));
    /// ```
    #[must_use]
    pub fn min_restart_grace(&self) -> Duration {
        let k = if crate::sentinel::is_sentinel(&self.url) {
            8
        } else {
            6
        };
        self.heartbeat
            .max(self.max_backoff)
            .saturating_add(self.timeout.saturating_mul(k))
    }

    /// The restart fence: `restart_grace`, capped at `2N - 1` windows
    /// (past them no fresh booking shares an interval with a lost one,
    /// whichever clock named it: `src/restart.rs`, "How long a window
    /// matters"), but never below [`Config::min_restart_grace`] (so a live
    /// process writes back before any fresh booking, however short the
    /// interval).
    pub(crate) fn fence(&self, n_windows: usize) -> Duration {
        let windows = u32::try_from(2 * n_windows.max(1) - 1).unwrap_or(u32::MAX);
        let cap = self.window.saturating_mul(windows);
        self.restart_grace.min(cap.max(self.min_restart_grace()))
    }

    pub(crate) fn check(&self, n_windows: usize) -> Result<(), crate::Error> {
        let bad = |why: &str| Err(crate::Error::Config(why.to_owned()));
        if n_windows == 0 || n_windows > crate::MAX_WINDOWS {
            return bad("N (windows per interval) must be between 1 and MAX_WINDOWS (1024)");
        }
        if self.window.as_micros() == 0 || self.window.as_micros() > u128::from(u32::MAX) {
            return bad("window must be between 1 µs and about 71 minutes");
        }
        if self.limit == 0 || self.limit > (1 << 50) {
            return bad("limit must be between 1 and 2^50 (Lua numbers are doubles)");
        }
        if self.name.is_empty() || self.name.contains(['{', '}']) {
            return bad("name must be non-empty, without braces (it is the hash tag)");
        }
        if let Mode::Lease { block } = self.mode {
            if block == 0 || block > self.limit {
                return bad("lease block must be between 1 and the limit");
            }
        }
        if let FaultPolicy::Local { share } = self.on_fault {
            if share > self.limit {
                return bad("a local share cannot exceed the limit");
            }
        }
        if self.timeout.is_zero() || self.heartbeat.is_zero() || self.max_backoff.is_zero() {
            return bad("timeout, heartbeat and max_backoff must be above zero");
        }
        if crate::sentinel::is_sentinel(&self.url) && !self.seeds.is_empty() {
            return bad(
                "seeds are for Redis Cluster: a redis+sentinel:// URL lists every sentinel itself",
            );
        }
        let tls = crate::tls::wanted(&self.url);
        if tls && !cfg!(feature = "tls") {
            return bad("a rediss:// URL needs leaparray-redis's feature `tls` (features = [\"tls\"] in Cargo.toml)");
        }
        if !tls && self.tls != Tls::default() {
            return bad("Config::tls is for rediss:// and rediss+sentinel:// URLs");
        }
        if self.seeds.iter().any(|s| crate::tls::wanted(s) != tls) {
            return bad("seeds must use the URL's scheme (rediss:// with rediss://)");
        }
        if let Some(roots) = &self.tls.roots {
            if cfg!(feature = "tls") && crate::tls::certificates(roots) == 0 {
                return bad("Config::tls.roots holds no PEM certificate");
            }
        }
        if self.restart_grace < self.min_restart_grace() {
            return Err(crate::Error::Config(format!("restart_grace must be at least max(heartbeat, max_backoff) + {} x timeout = {:?} (Config::min_restart_grace; else the restart fence can end before this process writes its bookings back)", if crate::sentinel::is_sentinel(&self.url) { 8 } else { 6 }, self.min_restart_grace())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_is_the_grace_capped_at_2n_minus_1_windows_never_below_the_minimum() {
        let ms = Duration::from_millis;
        let c = |window: u64, grace: u64, heartbeat: u64| {
            let mut c =
                Config::new("redis://127.0.0.1/", "f", ms(window), 10).restart_grace(ms(grace));
            c.heartbeat = ms(heartbeat);
            c
        };
        // Below the cap: the grace.
        assert_eq!(c(100, 500, 50).fence(4), ms(500));
        // Capped at 2N - 1 = 7 windows.
        assert_eq!(c(100, 1_000, 50).fence(4), ms(700));
        // The minimum, max(50, 100) + 6 x 50: above the cap (1 window).
        assert_eq!(c(100, 1_000, 50).fence(1), ms(400));
        // The cap (7 x 50 ms) is below the minimum, max(800, 100) + 6 x 50:
        // the minimum, which `check` keeps within the grace.
        assert_eq!(c(50, 1_500, 800).fence(4), ms(1_100));
    }
}
