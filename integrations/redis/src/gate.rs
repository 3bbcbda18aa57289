//! [`RedisGate`]: one limit across processes, decided by Redis (exact mode)
//! or from blocks booked in Redis (lease mode), with a keeper thread that
//! reconnects, writes bookings back after a restart and returns leases.

use crate::cluster::{Route, Vouches, MAX_HOPS};
use crate::config::{Config, FaultPolicy, Mode, OnEviction};
use crate::fault::{self, Failure};
use crate::restart::Ledger;
use crate::script::{Calls, Reply, Status};
use crate::Error;
use leaparray::clock::{Clock, MonotonicClock, Unit};
use leaparray::Gate;
use redis::{Connection, ConnectionInfo, RedisError, RedisResult};
use std::num::NonZeroU64;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A decision of a [`RedisGate`].
///
/// ```
/// use leaparray_redis::Decision;
/// let d = Decision::Admitted { window: 7 };
/// assert!(d.is_admitted());
/// assert_eq!(d.window(), Some(7));
/// assert!(!Decision::Unavailable.is_admitted());
/// ```
#[must_use = "an admission has already booked its permits"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Admitted; counted in Redis window `window` (Redis time / window).
    Admitted {
        /// The window id the permits are counted in.
        window: u64,
    },
    /// Admitted by the [`FaultPolicy::Local`] gate while Redis is away;
    /// counted in `window`, this process's estimate of Redis's window, and
    /// written to Redis when it is back.
    AdmittedLocally {
        /// The estimated window id.
        window: u64,
    },
    /// Refused: the limit, or fresh bookings are fenced after a restart.
    Refused,
    /// Refused: Redis cannot be reached (policy [`FaultPolicy::Refuse`], or
    /// the local share is used up).
    Unavailable,
}

impl Decision {
    /// Whether the permits were admitted.
    ///
    /// ```
    /// use leaparray_redis::Decision;
    /// assert!(Decision::AdmittedLocally { window: 3 }.is_admitted());
    /// assert!(!Decision::Refused.is_admitted());
    /// ```
    #[must_use]
    pub const fn is_admitted(self) -> bool {
        matches!(
            self,
            Decision::Admitted { .. } | Decision::AdmittedLocally { .. }
        )
    }

    /// The window an admission is counted in.
    ///
    /// ```
    /// use leaparray_redis::Decision;
    /// assert_eq!(Decision::Refused.window(), None);
    /// ```
    #[must_use]
    pub const fn window(self) -> Option<u64> {
        match self {
            Decision::Admitted { window } | Decision::AdmittedLocally { window } => Some(window),
            _ => None,
        }
    }
}

/// Counters of one [`RedisGate`] since it was opened.
///
/// A decision Redis did not decide is never silent: it is counted in
/// `faulted` (and a call that ran out of [`Config::timeout`] in
/// `timeouts`), and the keeper thread logs them (`log::warn!`, at most
/// once per interval of `N` windows), with the latest measured round trip
/// ([`RedisGate::round_trip`]).
///
/// ```
/// let s = leaparray_redis::Stats::default();
/// assert_eq!(s.round_trips_per_decision(), 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Calls of `try_acquire` / `try_acquire_at`.
    pub decisions: u64,
    /// Admissions among them.
    pub admitted: u64,
    /// Script calls made by decisions (bookings, give-backs, restores).
    pub round_trips: u64,
    /// Script calls made by the keeper thread (heartbeats, returns of
    /// ended leases, reconnections).
    pub keeper_round_trips: u64,
    /// Decisions the fault policy decided ([`Decision::Unavailable`] and
    /// [`Decision::AdmittedLocally`]): Redis could not be reached, did not
    /// answer within [`Config::timeout`], or could not book (`OOM`, ...).
    pub faulted: u64,
    /// Redis calls (the decisions' and the keeper's) and connection
    /// attempts that ran out of [`Config::timeout`].
    pub timeouts: u64,
}

impl Stats {
    /// All round trips (decisions' and the keeper's) per decision.
    ///
    /// ```
    /// let s = leaparray_redis::Stats { decisions: 100, admitted: 90, round_trips: 3, keeper_round_trips: 1, ..Default::default() };
    /// assert_eq!(s.round_trips_per_decision(), 0.04);
    /// ```
    #[must_use]
    pub fn round_trips_per_decision(&self) -> f64 {
        if self.decisions == 0 {
            return 0.0;
        }
        (self.round_trips + self.keeper_round_trips) as f64 / self.decisions as f64
    }
}

/// A block of permits of one Redis window, admitted from locally.
#[derive(Debug, Default)]
struct Lease {
    window: u64,
    left: u64,
    /// Before this instant, Redis's clock is certainly still in `window`.
    deadline: Option<Instant>,
    /// Redis refused a block in `window` with this much room left: until
    /// `deadline`, refuse locally what does not fit in it.
    refused: Option<u64>,
    /// A thread is refilling (without holding the mutex across its Redis
    /// call); others wait on `lease_cv` at most `timeout`.
    refilling: bool,
}

/// A checked connection and the node it reaches (a redirection it gets
/// that names no host means this node's host).
struct Conn {
    con: Connection,
    at: ConnectionInfo,
    /// The pool's generation when it was made (see [`Inner::put`]).
    generation: u64,
}

impl std::ops::Deref for Conn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.con
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.con
    }
}

struct Inner<const N: usize> {
    cfg: Config,
    /// The node serving the limit (on Redis Cluster, followed; see the
    /// module `cluster`).
    route: Route,
    calls: Calls,
    window_us: u64,
    /// Idle connections; a decision takes one, and puts it back unless it failed.
    pool: Mutex<Vec<Conn>>,
    /// Bumped whenever the pool is dropped (offline, `MOVED`, Sentinel
    /// names another master): a connection made before is not pooled again.
    generation: AtomicU64,
    /// A connection works and this process's bookings are in Redis's epoch.
    up: AtomicBool,
    /// The epoch this process's bookings are in. Read-locked by a booking
    /// from its call to its ledger entry, write-locked by a restore.
    epoch: RwLock<String>,
    ledger: Ledger<N>,
    lease: Mutex<Lease>,
    /// Masters that answered `MOVED` (see [`Self::vouch`]).
    vouches: Vouches,
    /// The evicting `maxmemory-policy` the latest fresh connection read.
    evicting: Mutex<Option<String>>,
    /// Signalled when a refill ends.
    lease_cv: Condvar,
    /// Ended leases' unused permits, given back by the keeper thread (off
    /// the decision path).
    returns: Mutex<Vec<(u64, u64)>>,
    fallback: Option<Gate<N>>,
    clock: MonotonicClock,
    /// Redis's clock minus `clock`, µs, from the latest reply.
    offset: AtomicI64,
    process: String,
    stop: Mutex<bool>,
    wake: Condvar,
    decisions: AtomicU64,
    admitted: AtomicU64,
    round_trips: AtomicU64,
    keeper_round_trips: AtomicU64,
    faulted: AtomicU64,
    timeouts: AtomicU64,
    /// The latest round trip measured (µs; 0: none yet): a `TIME` at
    /// `open`, then every heartbeat's check.
    round_trip_us: AtomicU64,
}

/// One sliding-window limit shared by every process that opens it: `limit`
/// permits per interval of `N` windows.
///
/// ```no_run
/// use std::time::Duration;
/// use leaparray_redis::{Config, RedisGate};
///
/// let config = Config::new("redis://127.0.0.1:6379/", "api", Duration::from_millis(250), 100);
/// let gate = RedisGate::<4>::open(config)?; // 100 per second, in 4 windows
/// if gate.try_acquire(1).is_admitted() {
///     // serve
/// }
/// # Ok::<(), leaparray_redis::Error>(())
/// ```
/// (`tests/redis.rs` runs the same against a real Redis.)
pub struct RedisGate<const N: usize> {
    inner: Arc<Inner<N>>,
    keeper: Option<JoinHandle<()>>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value of `field` in an `INFO` reply (`field:value` lines).
fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')
            .map(str::trim)
            .filter(|v| !v.is_empty())
    })
}

impl<const N: usize> RedisGate<N> {
    /// Checks the configuration and starts the keeper thread, which
    /// connects (Redis need not be up yet: until it is, the fault policy
    /// decides). If it reaches Redis, a Redis user without a command the
    /// limit needs is [`Error::Permission`] (the README's "Redis user"
    /// lists them; one that connects later stays offline, with a
    /// `log::error!`), an evicting `maxmemory-policy` [`Error::Evicting`];
    /// a password or user Redis refuses (`WRONGPASS`, `NOAUTH`), a database
    /// index it does not have, or a master name no sentinel that answers
    /// knows is [`Error::Config`] naming it (later, a `log::error!` once
    /// until a connection works).
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray_redis::{Config, Error, RedisGate};
    /// let bad = Config::new("redis://127.0.0.1/", "api", Duration::from_secs(1), 0);
    /// assert!(matches!(RedisGate::<2>::open(bad), Err(Error::Config(_))));
    /// ```
    pub fn open(cfg: Config) -> Result<Self, Error> {
        cfg.check(N)?;
        Self::build(cfg)
    }

    /// Builds the `N`-sized state, in its own stack frame so that `open`
    /// refuses a too-large `N` before reserving stack for it.
    #[inline(never)]
    fn build(cfg: Config) -> Result<Self, Error> {
        let route = Route::new(&cfg.url, &cfg.seeds, &cfg.tls)?;
        let window_us = micros(cfg.window);
        let grace = micros(cfg.fence(N));
        let fallback = match cfg.on_fault {
            FaultPolicy::Local { share } => Some(Gate::new(
                NonZeroU64::new(window_us).unwrap_or(NonZeroU64::MIN),
                share,
            )),
            FaultPolicy::Refuse => None,
        };
        let clock = MonotonicClock::new(Unit::Micros);
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(micros)
            .unwrap_or(0);
        let process = format!(
            "{}-{}-{}",
            std::process::id(),
            wall,
            Arc::as_ptr(&Arc::new(0u8)) as usize % 65_536
        );
        let inner = Arc::new(Inner {
            calls: Calls::new(&cfg.name, window_us, N as u64, grace),
            ledger: Ledger::new(window_us),
            cfg,
            route,
            window_us,
            pool: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            up: AtomicBool::new(false),
            epoch: RwLock::new(String::new()),
            lease: Mutex::new(Lease::default()),
            evicting: Mutex::new(None),
            vouches: Vouches::default(),
            lease_cv: Condvar::new(),
            returns: Mutex::new(Vec::new()),
            fallback,
            clock,
            offset: AtomicI64::new(i64::try_from(wall).unwrap_or(0)),
            process,
            stop: Mutex::new(false),
            wake: Condvar::new(),
            decisions: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            keeper_round_trips: AtomicU64::new(0),
            faulted: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            round_trip_us: AtomicU64::new(0),
        });
        // A first connection now (bounded by the timeout), so that an
        // evicting maxmemory-policy or a missing permission is an error of
        // `open`; if Redis cannot be reached, the keeper connects later
        // (and checks both).
        match inner.reach(true) {
            Ok(mut con) => {
                let rtt = inner.ping(&mut con, inner.cfg.timeout).ok();
                inner.put(con);
                inner.up.store(true, Relaxed);
                inner.slow_link(rtt)?;
            }
            Err(e) if e.code() == Some("NOPERM") => {
                return Err(Error::Permission(e.detail().unwrap_or("").to_owned()));
            }
            Err(e) if crate::tls::failure(&e).is_some() => {
                return Err(Error::Tls(crate::tls::failure(&e).unwrap_or_default()));
            }
            Err(e) if fault::misconfigured(&e).is_some() => {
                return Err(Error::Config(fault::misconfigured(&e).unwrap_or_default()));
            }
            Err(e) if e.is_timeout() => {
                inner.timeouts.fetch_add(1, Relaxed);
                let rtt = inner.probe();
                inner.slow_link(rtt)?;
            }
            Err(_) => {
                if let Some(policy) = lock(&inner.evicting).clone() {
                    if inner.cfg.on_evicting == OnEviction::Refuse {
                        return Err(Error::Evicting(policy));
                    }
                }
            }
        }
        let k = Arc::clone(&inner);
        let keeper = std::thread::Builder::new()
            .name("leaparray-redis-keeper".into())
            .spawn(move || k.keep())
            .map_err(|e| Error::Config(format!("cannot start the keeper thread: {e}")))?;
        Ok(Self {
            inner,
            keeper: Some(keeper),
        })
    }

    /// Decides on `n` permits now, in Redis's time: one round trip in exact
    /// mode; in lease mode, none unless this process's block for the
    /// current window is used up or over.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1/", "a", Duration::from_millis(500), 10))?;
    /// let d = gate.try_acquire(1);
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    pub fn try_acquire(&self, n: u64) -> Decision {
        self.inner.decide(n, None)
    }

    /// Decides on `n` permits at the caller's time `now_us` (µs; any epoch,
    /// the same for every caller of this limit), always in one round trip
    /// (lease mode too). For deterministic tests and for fleets whose
    /// clocks are synchronized: a caller whose clock runs ahead by `s`
    /// books `s` early; every interval still holds at most the limit, in
    /// the windows the callers name, as long as every two callers' clocks
    /// differ by less than `N - 1` windows (see the README's "The clock"
    /// and the module `restart`). A time above [`crate::MAX_CALLER_TIME_US`] is
    /// [`Decision::Refused`] without a call to Redis. Its ledger of bookings
    /// (written back after a Redis restart) keeps every window booked in the
    /// last `2N` windows of this process's monotonic time, whichever clock
    /// named it (Redis's, or any caller's within the skew bound).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1/", "b", Duration::from_millis(500), 10))?;
    /// let d = gate.try_acquire_at(1_000_000, 1);
    /// assert_eq!(d.window(), Some(2)); // 1 s in windows of 500 ms, if admitted
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    pub fn try_acquire_at(&self, now_us: u64, n: u64) -> Decision {
        self.inner.decide(n, Some(now_us))
    }

    /// Whether Redis was reachable at the last attempt, with this process's
    /// bookings in its epoch.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// // Port 1 refuses connections: the gate is open, Redis is not.
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1:1/", "c", Duration::from_secs(1), 10))?;
    /// assert!(!gate.is_connected());
    /// assert_eq!(gate.try_acquire(1), leaparray_redis::Decision::Unavailable);
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.inner.up.load(Relaxed)
    }

    /// The counters since this gate was opened.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1:1/", "d", Duration::from_secs(1), 10))?;
    /// let _ = gate.try_acquire(1);
    /// assert_eq!(gate.stats().decisions, 1);
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    #[must_use]
    pub fn stats(&self) -> Stats {
        let i = &self.inner;
        Stats {
            decisions: i.decisions.load(Relaxed),
            admitted: i.admitted.load(Relaxed),
            round_trips: i.round_trips.load(Relaxed),
            keeper_round_trips: i.keeper_round_trips.load(Relaxed),
            faulted: i.faulted.load(Relaxed),
            timeouts: i.timeouts.load(Relaxed),
        }
    }

    /// The latest round trip to Redis this process measured: a `TIME` at
    /// [`RedisGate::open`], then each heartbeat's check (a script call);
    /// `None` before any. [`Config::timeout`] should be at least twice
    /// it (README, "Slow links").
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1:1/", "r", Duration::from_secs(1), 10))?;
    /// assert_eq!(gate.round_trip(), None); // nothing answers on port 1
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    #[must_use]
    pub fn round_trip(&self) -> Option<Duration> {
        match self.inner.round_trip_us.load(Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// The configuration.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_redis::{Config, RedisGate};
    /// let gate = RedisGate::<2>::open(Config::new("redis://127.0.0.1:1/", "e", Duration::from_secs(1), 10))?;
    /// assert_eq!(gate.config().limit, 10);
    /// # Ok::<(), leaparray_redis::Error>(())
    /// ```
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }
}

impl<const N: usize> std::fmt::Debug for RedisGate<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGate")
            .field("windows", &N)
            .field("config", &self.inner.cfg)
            .field("connected", &self.is_connected())
            .field("stats", &self.stats())
            .finish()
    }
}

impl<const N: usize> Drop for RedisGate<N> {
    fn drop(&mut self) {
        *lock(&self.inner.stop) = true;
        self.inner.wake.notify_all();
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
        // Unused permits of the live lease go back (best effort).
        let lease = std::mem::take(&mut *lock(&self.inner.lease));
        if lease.left > 0 {
            self.inner.give_back(lease.window, lease.left, false);
        }
        self.inner.give_back_queued(false);
    }
}

impl<const N: usize> Inner<N> {
    fn decide(&self, n: u64, at: Option<u64>) -> Decision {
        self.decisions.fetch_add(1, Relaxed);
        let d = if at.is_some_and(|t| t > crate::MAX_CALLER_TIME_US) {
            // Lua's doubles cannot hold it exactly: refused, no call.
            Decision::Refused
        } else if !self.up.load(Relaxed) {
            self.fault(n)
        } else {
            match (self.cfg.mode, at) {
                (Mode::Lease { block }, None) => self.leased(n, block),
                _ => self.exact(n, at),
            }
        };
        if d.is_admitted() {
            self.admitted.fetch_add(1, Relaxed);
        }
        d
    }

    /// An idle connection, or a new one (bounded by the timeout).
    fn conn(&self) -> RedisResult<Conn> {
        if let Some(c) = lock(&self.pool).pop() {
            return Ok(c);
        }
        self.fresh()
    }

    /// A new connection failed with `e`: offline (the keeper reconnects)
    /// unless the slot is migrating or Redis could not write (the
    /// connection was fine).
    fn unreached(&self, e: &RedisError) {
        self.timed_out(e);
        if !matches!(fault::classify(e), Failure::Migrating | Failure::Unbooked) {
            self.broken();
        }
    }

    fn connect(&self, info: &ConnectionInfo) -> RedisResult<Connection> {
        let c = redis::Client::open(info.clone())?.get_connection_with_timeout(self.cfg.timeout)?;
        c.set_read_timeout(Some(self.cfg.timeout))?;
        c.set_write_timeout(Some(self.cfg.timeout))?;
        Ok(c)
    }

    /// A new connection to the node serving the limit, checked before any
    /// use: its first call asks whether Redis's epoch was made by this
    /// redis-server process (see the module `restart`), and writes this
    /// process's bookings back if not.
    fn fresh(&self) -> RedisResult<Conn> {
        self.reach(false)
    }

    /// [`Self::fresh`] at the slot's known owner (else the URL's node);
    /// with `scan` (the keeper, `open`), if that fails, at every other node
    /// known (the URL's, the seeds, those learned; see the module
    /// `cluster`). Not after `ASK` or `TRYAGAIN`: the owner is up and
    /// migrating the slot, and a scan could reach the new owner without
    /// its `MOVED`, so without a vouch (a needless fence); the keeper tries
    /// the owner again at its next beat.
    fn reach(&self, scan: bool) -> RedisResult<Conn> {
        // ORDERING: read before the owner, with Acquire: a generation
        // bumped (Release, `drop_pool`) after the keeper set a new owner
        // comes with that owner, so a connection pooled under it is the
        // new owner's; one made from the owner read before is not pooled.
        let generation = self.generation.load(Acquire);
        if let Some(sentinels) = self.route.sentinel() {
            // Sentinel: the decision path goes to the master a check
            // passed at; the keeper (and `open`) asks the sentinels. A
            // replica fails the check (module `sentinel`).
            if let (false, Some(owner)) = (scan, self.route.owner()) {
                return self.open_at(owner, generation);
            }
            let (host, port) = sentinels.ask(self.cfg.timeout)?;
            return self.open_at(self.route.at(&host, port), generation);
        }
        let first = self.route.first();
        let e = match self.open_at(first.clone(), generation) {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        if scan && fault::classify(&e) != Failure::Migrating && lock(&self.evicting).is_none() {
            for info in self.route.others(&first) {
                if let Ok(c) = self.open_at(info, generation) {
                    return Ok(c);
                }
            }
        }
        Err(e)
    }

    /// A checked connection to `info`, or to the node its `MOVED` replies
    /// name (at most [`MAX_HOPS`]); that node becomes the slot's owner.
    fn open_at(&self, mut info: ConnectionInfo, generation: u64) -> RedisResult<Conn> {
        for _ in 0..MAX_HOPS {
            let mut c = self.connect(&info)?;
            match self.beat(&mut c, true) {
                Ok(cluster) => {
                    if cluster && self.route.take_stale() {
                        // Best effort: the nodes to try if this one fails.
                        let _ = self.route.learn(&mut c, &info);
                        self.keeper_round_trips.fetch_add(1, Relaxed);
                    }
                    self.route.owned_by(info.clone());
                    return Ok(Conn {
                        con: c,
                        at: info,
                        generation,
                    });
                }
                Err(e) => match self.moved(&e, &mut c, &info) {
                    Some(to) => info = to,
                    None => return Err(e),
                },
            }
        }
        Err((
            redis::ErrorKind::ClientError,
            "leaparray-redis: too many cluster redirections",
        )
            .into())
    }

    /// The node a `MOVED` reply on `con` (to the node at `from`) names (now
    /// the slot's owner: pooled connections, to the old one, are dropped).
    fn moved(
        &self,
        e: &RedisError,
        con: &mut Connection,
        from: &ConnectionInfo,
    ) -> Option<ConnectionInfo> {
        if fault::classify(e) != Failure::Moved {
            return None;
        }
        let to = self.route.moved_to(e.redirect_node()?.0, from)?;
        // Before the route changes, so that every connection to the new
        // owner carries it.
        self.vouch(con);
        self.route.redirected(to.clone());
        self.drop_pool();
        Some(to)
    }

    /// After `MOVED` on `con`: if the node that sent it is a master, its
    /// identity (`run_id`, node id, replication id: what the script
    /// records) is a vouch the fresh connections' checks carry for
    /// `heartbeat + max_backoff + timeout` (a master that answers `MOVED`
    /// gave the slot away by migration; after a failover the old master
    /// answers `MOVED` only as a replica; one failed over and then reset
    /// into a master has a new replication id). Without a vouch equal to
    /// the recorded identity the new owner makes a new epoch (a fence,
    /// never an admission over the limit). Argued in the module `restart`.
    fn vouch(&self, con: &mut Connection) {
        let r: RedisResult<(String, String, String)> = redis::pipe()
            .cmd("CLUSTER")
            .arg("MYID")
            .cmd("INFO")
            .arg("server")
            .cmd("INFO")
            .arg("replication")
            .query(con);
        self.keeper_round_trips.fetch_add(1, Relaxed);
        match r {
            Ok((id, server, rep)) if rep.contains("role:master") => {
                match (
                    info_field(&server, "run_id"),
                    info_field(&rep, "master_replid"),
                ) {
                    (Some(run), Some(replid)) => {
                        let identity = format!("{run} {id} {replid}");
                        self.vouches.master(id, identity)
                    }
                    _ => self.vouches.replica(&id),
                }
            }
            Ok((id, _, _)) => self.vouches.replica(&id),
            Err(_) => {}
        }
    }

    /// A call on `con` (none: a new connection, which follows `MOVED`
    /// itself) failed with `e`: whether to try again (before `deadline`):
    /// after `MOVED`, at the new owner; after `ASK` or `TRYAGAIN` (the slot
    /// is migrating), at the owner after a pause.
    fn again(&self, e: &RedisError, con: Option<&mut Conn>, deadline: Instant) -> bool {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        match fault::classify(e) {
            Failure::Moved => match con {
                Some(c) => self.moved(e, &mut c.con, &c.at).is_some(),
                None => false,
            },
            Failure::Migrating => {
                std::thread::sleep(Duration::from_millis(2).min(deadline - now));
                true
            }
            _ => false,
        }
    }

    /// Pools `c`, unless the pool was dropped since `c` was made: a
    /// decision that held a connection to the old master while the keeper
    /// moved to the new one (Sentinel) or while a `MOVED` came must not
    /// put it back, where later decisions would book on the old master.
    fn put(&self, c: Conn) {
        let mut pool = lock(&self.pool);
        if c.generation == self.generation.load(Acquire) {
            pool.push(c);
        }
    }

    /// Drops every pooled connection, and those in use when they come back.
    fn drop_pool(&self) {
        let mut pool = lock(&self.pool);
        self.generation.fetch_add(1, Release);
        pool.clear();
    }

    /// A call on `con` failed: what it means is [`fault::classify`]'s.
    /// Offline: the process goes offline (the keeper reconnects) and the
    /// fault policy decides; unbooked (Redis could not write, e.g. `OOM`):
    /// the fault policy decides, the connection is kept; any other error
    /// (a script or decode error, for one request) drops only this
    /// connection and is refused (if it was the last, the keeper makes a
    /// checked one at its next heartbeat).
    fn failed(&self, e: &redis::RedisError, n: u64, con: Conn) -> Decision {
        self.timed_out(e);
        match fault::classify(e) {
            Failure::Offline | Failure::Moved => {
                drop(con);
                self.broken();
                self.fault(n)
            }
            Failure::Unbooked | Failure::Migrating => {
                self.put(con);
                self.fault(n)
            }
            Failure::Request => Decision::Refused,
        }
    }

    /// Counts `e` if it is a timeout.
    fn timed_out(&self, e: &RedisError) {
        if e.is_timeout() {
            self.timeouts.fetch_add(1, Relaxed);
        }
    }

    /// A `TIME` (a command the README's ACL grants, unlike `PING`) on
    /// `con` within `timeout`: the round trip (also the latest measured).
    fn ping(&self, con: &mut Connection, timeout: Duration) -> RedisResult<Duration> {
        con.set_read_timeout(Some(timeout))?;
        con.set_write_timeout(Some(timeout))?;
        let t = Instant::now();
        let r = redis::cmd("TIME").query::<(u64, u64)>(con);
        let rtt = t.elapsed();
        con.set_read_timeout(Some(self.cfg.timeout))?;
        con.set_write_timeout(Some(self.cfg.timeout))?;
        r?;
        self.round_trip_us.store(micros(rtt).max(1), Relaxed);
        Ok(rtt)
    }

    /// `open`'s first connection ran out of the timeout: the round trip
    /// measured with 4 x the timeout, the least of 3 `TIME`s (a server
    /// busy for a moment delays one, a slow link every one); `None` if it
    /// could not be measured (Redis down or hung, a Sentinel URL whose
    /// master is not known yet).
    fn probe(&self) -> Option<Duration> {
        if self.route.sentinel().is_some() && self.route.owner().is_none() {
            return None;
        }
        let long = self.cfg.timeout.saturating_mul(4);
        let c = redis::Client::open(self.route.first()).ok()?;
        let mut con = c.get_connection_with_timeout(long).ok()?;
        (0..3).filter_map(|_| self.ping(&mut con, long).ok()).min()
    }

    /// What `open` does with the round trip it measured: at least the
    /// timeout, every call would be lost ([`Error::SlowLink`]); more than
    /// half of it, decisions are lost to its jitter (a `log::warn!`).
    fn slow_link(&self, rtt: Option<Duration>) -> Result<(), Error> {
        let (Some(rtt), timeout) = (rtt, self.cfg.timeout) else {
            return Ok(());
        };
        if rtt >= timeout {
            return Err(Error::SlowLink {
                round_trip: rtt,
                timeout,
            });
        }
        if rtt.saturating_mul(2) > timeout {
            log::warn!("leaparray-redis {}: a round trip to Redis took {rtt:?}, more than half the timeout ({timeout:?}): decisions will be lost to its jitter; set Config::timeout to at least 2 x the round trip", self.cfg.name);
        }
        Ok(())
    }

    /// The keeper's report: decisions the fault policy decided and calls
    /// that timed out since the last one, at most once per interval.
    fn report(&self, last: &mut (Instant, u64, u64)) {
        let interval = self
            .cfg
            .window
            .saturating_mul(u32::try_from(N).unwrap_or(u32::MAX));
        if last.0.elapsed() < interval {
            return;
        }
        let (faulted, timeouts) = (self.faulted.load(Relaxed), self.timeouts.load(Relaxed));
        if faulted > last.1 || timeouts > last.2 {
            let rtt = match self.round_trip_us.load(Relaxed) {
                0 => "not measured".to_owned(),
                us => format!("{:?}", Duration::from_micros(us)),
            };
            log::warn!(
                "leaparray-redis {}: in the last {:?}, {} decisions were decided by the fault policy ({:?}) and {} Redis calls ran out of the timeout ({:?}; latest measured round trip {rtt}): Redis is unreachable or slower than the timeout (set Config::timeout to at least 2 x the round trip; README, \"Slow links\")",
                self.cfg.name,
                last.0.elapsed(),
                faulted - last.1,
                self.cfg.on_fault,
                timeouts - last.2,
                self.cfg.timeout,
            );
        }
        *last = (Instant::now(), faulted, timeouts);
    }

    /// A call failed: drop every connection, let the keeper reconnect.
    fn broken(&self) {
        self.up.store(false, Relaxed);
        self.drop_pool();
        self.wake.notify_all();
    }

    /// Redis's clock minus the local one, from a reply to a call sent at
    /// local time `at` (µs).
    fn learn(&self, at: u64, r: &Reply) {
        let off = i64::try_from(r.now).unwrap_or(i64::MAX) - i64::try_from(at).unwrap_or(0);
        self.offset.store(off, Relaxed);
    }

    /// The instant before which Redis's clock is certainly still in
    /// `window`: Redis read `r.now` after `sent`.
    fn deadline(&self, sent: Instant, r: &Reply) -> Instant {
        let end = (r.window + 1).saturating_mul(self.window_us);
        sent + Duration::from_micros(end.saturating_sub(r.now))
    }

    fn fault(&self, n: u64) -> Decision {
        self.faulted.fetch_add(1, Relaxed);
        let Some(g) = &self.fallback else {
            return Decision::Unavailable;
        };
        let local = self.clock.now();
        if g.try_acquire(local, n) != leaparray::Decision::Pass {
            return Decision::Unavailable;
        }
        let redis_now = local.saturating_add_signed(self.offset.load(Relaxed));
        let window = redis_now / self.window_us;
        self.ledger.admit_pending(window, n);
        Decision::AdmittedLocally { window }
    }

    fn exact(&self, n: u64, at: Option<u64>) -> Decision {
        let deadline = Instant::now() + self.cfg.timeout;
        let mut restores = 0;
        while restores < 2 {
            let mut con = match self.conn() {
                Ok(c) => c,
                Err(e) if self.again(&e, None, deadline) => continue,
                Err(e) => {
                    self.unreached(&e);
                    return self.fault(n);
                }
            };
            let epoch = self.epoch.read().unwrap_or_else(|e| e.into_inner());
            let local = self.clock.now();
            let r = self.calls.book(&mut con, &epoch, self.cfg.limit, n, n, at);
            self.round_trips.fetch_add(1, Relaxed);
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    drop(epoch);
                    if self.again(&e, Some(&mut con), deadline) {
                        self.keep_if_migrating(&e, con);
                        continue;
                    }
                    return self.failed(&e, n, con);
                }
            };
            if at.is_none() {
                self.learn(local, &r);
            }
            match r.status {
                Status::Done => {
                    self.ledger.book(r.window, r.booked, self.clock.now());
                    drop(epoch);
                    self.put(con);
                    return Decision::Admitted { window: r.window };
                }
                Status::Limit | Status::Fenced => {
                    drop(epoch);
                    self.put(con);
                    return Decision::Refused;
                }
                Status::Stale => {
                    drop(epoch);
                    restores += 1;
                    if self.restore(&mut con, &r, &self.round_trips).is_err() {
                        self.broken();
                        return self.fault(n);
                    }
                    self.put(con);
                }
            }
        }
        // Redis restarted again while this process wrote back: refuse.
        Decision::Refused
    }

    /// After a retried `ASK` or `TRYAGAIN` the connection is still the
    /// owner's: back to the pool (after `MOVED` it is dropped).
    fn keep_if_migrating(&self, e: &RedisError, con: Conn) {
        if fault::classify(e) == Failure::Migrating {
            self.put(con);
        }
    }

    fn leased(&self, n: u64, block: u64) -> Decision {
        let mut lease = lock(&self.lease);
        let give_up = Instant::now() + self.cfg.timeout;
        let live = loop {
            let now = Instant::now();
            let live = lease.deadline.is_some_and(|d| now < d);
            if live && lease.left >= n {
                lease.left -= n;
                return Decision::Admitted {
                    window: lease.window,
                };
            }
            if live && lease.refused.is_some_and(|room| n > room) {
                return Decision::Refused;
            }
            if !lease.refilling {
                break live;
            }
            // Another thread refills: wait for it at most `timeout`, then
            // the fault policy decides (no queueing behind its timeouts).
            if now >= give_up {
                drop(lease);
                return self.fault(n);
            }
            lease = self
                .lease_cv
                .wait_timeout(lease, give_up - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        // The block is used up or its window is over: this thread books
        // another, without holding the mutex across the Redis call.
        let mut ended = None;
        if !live {
            let old = std::mem::take(&mut *lease);
            if old.left > 0 {
                ended = Some((old.window, old.left));
            }
        }
        lease.refilling = true;
        drop(lease);
        let d = self.refill(n, block, &mut ended);
        let mut lease = lock(&self.lease);
        lease.refilling = false;
        drop(lease);
        self.lease_cv.notify_all();
        if let Some(ended) = ended {
            // Given back by the keeper, off the decision path.
            lock(&self.returns).push(ended);
            self.wake.notify_all();
        }
        d
    }

    fn refill(&self, n: u64, block: u64, ended: &mut Option<(u64, u64)>) -> Decision {
        let deadline = Instant::now() + self.cfg.timeout;
        let mut restores = 0;
        while restores < 2 {
            let mut con = match self.conn() {
                Ok(c) => c,
                Err(e) if self.again(&e, None, deadline) => continue,
                Err(e) => {
                    self.unreached(&e);
                    return self.fault(n);
                }
            };
            let epoch = self.epoch.read().unwrap_or_else(|e| e.into_inner());
            let (sent, local) = (Instant::now(), self.clock.now());
            let r = self
                .calls
                .book(&mut con, &epoch, self.cfg.limit, block.max(n), n, None);
            self.round_trips.fetch_add(1, Relaxed);
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    drop(epoch);
                    if self.again(&e, Some(&mut con), deadline) {
                        self.keep_if_migrating(&e, con);
                        continue;
                    }
                    return self.failed(&e, n, con);
                }
            };
            self.learn(local, &r);
            match r.status {
                Status::Done => {
                    self.ledger.book(r.window, r.booked, self.clock.now());
                    drop(epoch);
                    self.put(con);
                    let mut lease = lock(&self.lease);
                    if lease.deadline.is_some() && lease.window == r.window {
                        lease.left += r.booked - n;
                        lease.refused = None;
                    } else {
                        if lease.left > 0 && ended.is_none() {
                            *ended = Some((lease.window, lease.left));
                        }
                        *lease = Lease {
                            window: r.window,
                            left: r.booked - n,
                            deadline: Some(self.deadline(sent, &r)),
                            refused: None,
                            refilling: true,
                        };
                    }
                    return Decision::Admitted { window: r.window };
                }
                Status::Limit => {
                    drop(epoch);
                    self.put(con);
                    let mut lease = lock(&self.lease);
                    if lease.deadline.is_none() || lease.window != r.window {
                        if lease.left > 0 && ended.is_none() {
                            *ended = Some((lease.window, lease.left));
                        }
                        *lease = Lease {
                            window: r.window,
                            left: 0,
                            deadline: Some(self.deadline(sent, &r)),
                            refused: Some(r.room),
                            refilling: true,
                        };
                    } else {
                        lease.refused = Some(r.room);
                    }
                    return Decision::Refused;
                }
                Status::Fenced => {
                    drop(epoch);
                    self.put(con);
                    return Decision::Refused;
                }
                Status::Stale => {
                    drop(epoch);
                    restores += 1;
                    if self.restore(&mut con, &r, &self.round_trips).is_err() {
                        self.broken();
                        return self.fault(n);
                    }
                    self.put(con);
                }
            }
        }
        Decision::Refused
    }

    /// Gives back `left` permits never used from `window`: out of the
    /// ledger and out of Redis under one read lock of the epoch, so a
    /// restore writes the ledger either before both (then the give-back
    /// subtracts in the new epoch) or after both (then Redis refuses it as
    /// stale, and the restore writes the net count). A failure leaves Redis
    /// counting them: under the limit, never over.
    fn give_back(&self, window: u64, left: u64, keeper: bool) {
        let con = if self.up.load(Relaxed) {
            self.conn().map_err(|e| self.unreached(&e)).ok()
        } else {
            None
        };
        let epoch = self.epoch.read().unwrap_or_else(|e| e.into_inner());
        self.ledger.give_back(window, left);
        let Some(mut con) = con else { return };
        let r = self.calls.give_back(&mut con, &epoch, window, left);
        drop(epoch);
        let counter = if keeper {
            &self.keeper_round_trips
        } else {
            &self.round_trips
        };
        counter.fetch_add(1, Relaxed);
        match r {
            Ok(_) => self.put(con),
            Err(e) => match fault::classify(&e) {
                Failure::Offline => self.broken(),
                // Not retried: permits left counted are under the limit.
                Failure::Moved => {
                    let _ = self.moved(&e, &mut con.con, &con.at);
                }
                Failure::Unbooked | Failure::Migrating => self.put(con),
                Failure::Request => {}
            },
        }
    }

    /// Writes this process's live windows (and pending local admissions)
    /// back under the epoch `seen` names; see the module `restart`.
    fn restore(&self, con: &mut Connection, seen: &Reply, counter: &AtomicU64) -> RedisResult<()> {
        let mut epoch = self.epoch.write().unwrap_or_else(|e| e.into_inner());
        let (mut target, mut now) = (seen.epoch.clone(), seen.now);
        for _ in 0..3 {
            if *epoch == target {
                break;
            }
            // The ledger only: it cannot grow while the epoch is stale (no
            // booking succeeds), so a retry after a lost reply, skipped by
            // the script as already applied, loses nothing.
            let windows = self.ledger.live(self.clock.now());
            let r = self.calls.restore(con, &target, &self.process, &windows)?;
            counter.fetch_add(1, Relaxed);
            if r.status == Status::Stale {
                (target, now) = (r.epoch, r.now);
            } else {
                epoch.clone_from(&target);
            }
        }
        if *epoch != target {
            return Err((
                redis::ErrorKind::TryAgain,
                "leaparray-redis: the epoch keeps changing",
            )
                .into());
        }
        self.flush_in(con, &epoch, now, counter)
    }

    /// Writes the local fault policy's admissions to Redis under `epoch`
    /// (not idempotent: a reply lost to a timeout can count them twice,
    /// under the limit, never over).
    fn flush_in(
        &self,
        con: &mut Connection,
        epoch: &str,
        now: u64,
        counter: &AtomicU64,
    ) -> RedisResult<()> {
        let pending = self.ledger.take_pending(now);
        if pending.is_empty() {
            return Ok(());
        }
        let r = self.calls.restore(con, epoch, "", &pending);
        counter.fetch_add(1, Relaxed);
        match r {
            Ok(r) if r.status == Status::Done => {
                for (w, n) in pending {
                    self.ledger.book(w, n, self.clock.now());
                }
                Ok(())
            }
            Ok(_) => {
                // Stale: the next heartbeat restores, then flushes them.
                self.ledger.untake_pending(&pending);
                Ok(())
            }
            Err(e) => {
                self.ledger.untake_pending(&pending);
                Err(e)
            }
        }
    }

    /// Writes the local fault policy's admissions to Redis (epoch unchanged).
    fn flush(&self, con: &mut Connection, now: u64) -> RedisResult<()> {
        let epoch = self.epoch.read().unwrap_or_else(|e| e.into_inner());
        self.flush_in(con, &epoch, now, &self.keeper_round_trips)
    }

    /// One heartbeat: check the epoch (restore if it changed), flush
    /// pending admissions. `fresh`: the first call of a new connection,
    /// which also checks the redis-server process (see [`Self::fresh`]).
    /// Returns whether Redis is a cluster (`fresh` only).
    fn beat(&self, con: &mut Connection, fresh: bool) -> RedisResult<bool> {
        let known = self.epoch.read().unwrap_or_else(|e| e.into_inner()).clone();
        let local = self.clock.now();
        let (vouch, mark) = if fresh {
            let c = &self.cfg;
            self.vouches
                .current(c.heartbeat + c.max_backoff + c.timeout)
        } else {
            (String::new(), 0)
        };
        let sent = Instant::now();
        let r = self.calls.check(con, &known, fresh, &vouch)?;
        self.round_trip_us
            .store(micros(sent.elapsed()).max(1), Relaxed);
        if fresh {
            self.vouches.used(mark);
        }
        self.keeper_round_trips.fetch_add(1, Relaxed);
        self.learn(local, &r);
        self.calls.learn_grace(r.grace);
        if let Some(policy) = r.policy.as_deref() {
            self.eviction(policy)?;
        }
        if r.status == Status::Stale {
            self.restore(con, &r, &self.keeper_round_trips)?;
        }
        self.flush(con, r.now)?;
        Ok(r.cluster)
    }

    /// The `maxmemory-policy` a check read (every check: it can change at
    /// run time): an `allkeys-*` policy can evict the limit's keys (no key
    /// of a limit has a TTL, so `volatile-*` cannot; an evicted key is
    /// seen as an empty Redis is: the module `restart`, "Eviction").
    /// [`OnEviction::Refuse`]: the check fails (the process goes offline
    /// within one heartbeat, stays offline and the fault policy decides);
    /// [`OnEviction::Warn`]: a `log` warning.
    fn eviction(&self, policy: &str) -> RedisResult<()> {
        if !policy.starts_with("allkeys-") {
            *lock(&self.evicting) = None;
            return Ok(());
        }
        let first = lock(&self.evicting).replace(policy.to_owned()).is_none();
        match self.cfg.on_evicting {
            OnEviction::Refuse => {
                if first {
                    log::error!("leaparray-redis {}: Redis's maxmemory-policy is {policy}, which can evict the limit's keys: not used (set noeviction, or Config::on_evicting(OnEviction::Warn))", self.cfg.name);
                }
                Err((
                    redis::ErrorKind::ClientError,
                    "leaparray-redis: Redis's maxmemory-policy can evict the limit's keys",
                )
                    .into())
            }
            OnEviction::Warn => {
                if first {
                    log::warn!("leaparray-redis {}: Redis's maxmemory-policy is {policy}, which can evict the limit's keys (an evicted key can let the fleet pass the limit)", self.cfg.name);
                }
                Ok(())
            }
        }
    }

    /// The keeper thread: reconnects with backoff, beats, returns ended leases.
    fn keep(&self) {
        let first = Duration::from_millis(10).min(self.cfg.max_backoff);
        let mut backoff = first;
        let mut pause = Duration::ZERO;
        // A missing permission, a TLS failure or a refused password,
        // database or Sentinel master name is logged once until a
        // connection works.
        let mut said = false;
        let mut reported = (Instant::now(), 0, 0);
        loop {
            self.report(&mut reported);
            {
                let stop = lock(&self.stop);
                let (stop, _) = self
                    .wake
                    .wait_timeout(stop, pause)
                    .unwrap_or_else(|e| e.into_inner());
                if *stop {
                    return;
                }
            }
            self.return_ended_lease();
            if self.up.load(Relaxed) {
                pause = self.cfg.heartbeat;
                if let Some(master) = self.sentinel_moved() {
                    // The decisions' fresh connections go there from now
                    // on (before the pool's generation moves: `reach`),
                    // and the keeper reconnects now, asking Sentinel.
                    self.route.owned_by(master);
                    self.broken();
                    pause = Duration::ZERO;
                    continue;
                }
                // The pool can be empty while up: a request error drops
                // only its connection (`failed`). Then the keeper makes a
                // checked one (`reach` beats), so an idle process keeps its
                // heartbeat and its write-back after a restart.
                // A failed beat reconnects at once (then with backoff), not
                // a heartbeat later: a write-back after a restart waits for
                // one heartbeat or one backoff, never both
                // (`Config::min_restart_grace`).
                let Some(mut con) = lock(&self.pool).pop() else {
                    match self.reach(true) {
                        Ok(con) => self.put(con),
                        Err(e) if fault::classify(&e) == Failure::Migrating => {}
                        Err(e) => {
                            self.timed_out(&e);
                            self.broken();
                            pause = Duration::ZERO;
                        }
                    }
                    continue;
                };
                match self.beat(&mut con, false) {
                    Ok(_) => self.put(con),
                    // The slot moved: the next connection goes to its owner.
                    Err(e) if self.moved(&e, &mut con.con, &con.at).is_some() => {}
                    // The slot is migrating: the connection is fine.
                    Err(e) if fault::classify(&e) == Failure::Migrating => self.put(con),
                    Err(e) => {
                        self.timed_out(&e);
                        self.broken();
                        pause = Duration::ZERO;
                    }
                }
            } else {
                match self.reach(true) {
                    Ok(con) => {
                        self.put(con);
                        self.up.store(true, Relaxed);
                        said = false;
                        backoff = first;
                        pause = self.cfg.heartbeat;
                    }
                    Err(e) => {
                        self.timed_out(&e);
                        if !said && e.code() == Some("NOPERM") {
                            said = true;
                            log::error!("leaparray-redis {}: the Redis user lacks a permission the limit needs ({e}): the process stays offline (the fault policy decides); grant the ACL of the README (\"Redis user\")", self.cfg.name);
                        }
                        if let (false, Some(why)) = (said, crate::tls::failure(&e)) {
                            said = true;
                            log::error!("leaparray-redis {}: TLS failed ({why}): the process stays offline (the fault policy decides); set Config::tls_roots to the server's CA (Config::tls_client if it asks for a client certificate)", self.cfg.name);
                        }
                        if let (false, Some(why)) = (said, fault::misconfigured(&e)) {
                            said = true;
                            log::error!("leaparray-redis {}: {why}: the process stays offline (the fault policy decides)", self.cfg.name);
                        }
                        pause = backoff;
                        backoff = (backoff * 2).min(self.cfg.max_backoff);
                    }
                }
            }
        }
    }

    /// Sentinel only: whether the sentinels name another master than the
    /// one this process is connected to (a failover: the old master can
    /// stay a writable master for seconds after it; see the module
    /// `sentinel`); the master it names. No answer: stay.
    fn sentinel_moved(&self) -> Option<ConnectionInfo> {
        let (Some(sentinels), Some(owner)) = (self.route.sentinel(), self.route.owner()) else {
            return None;
        };
        // A sentinel slower than the timeout is counted (`Stats::timeouts`).
        let (host, port) = sentinels
            .ask(self.cfg.timeout)
            .map_err(|e| self.timed_out(&e))
            .ok()?;
        let named = self.route.at(&host, port);
        if named.addr == owner.addr {
            return None;
        }
        log::warn!(
            "leaparray-redis {}: Sentinel names {host}:{port} as the master of {}: moving there",
            self.cfg.name,
            sentinels.master
        );
        Some(named)
    }

    /// Gives back the ended leases queued by decisions.
    fn give_back_queued(&self, keeper: bool) {
        let queued = std::mem::take(&mut *lock(&self.returns));
        for (w, left) in queued {
            self.give_back(w, left, keeper);
        }
    }

    fn return_ended_lease(&self) {
        self.give_back_queued(true);
        let ended = {
            let mut lease = lock(&self.lease);
            match lease.deadline {
                Some(d) if Instant::now() >= d && lease.left > 0 => {
                    let w = lease.window;
                    let left = std::mem::take(&mut lease.left);
                    Some((w, left))
                }
                _ => None,
            }
        };
        if let Some((w, left)) = ended {
            self.give_back(w, left, true);
        }
    }
}
