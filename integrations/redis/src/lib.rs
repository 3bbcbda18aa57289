//! One sliding-window limit across a fleet of processes, on Redis.
//!
//! leaparray's sliding window (`limit` permits per interval of `N`
//! windows), run by Redis in one Lua script per decision (`EVALSHA`,
//! through [`redis::Script`]), on Redis's own clock:
//!
//! * [`Mode::Exact`]: one round trip per decision; check and book in one
//!   atomic script, no rollback.
//! * [`Mode::Lease`]: a process books a block of permits of the current
//!   window and admits from it locally; unused permits go back at the
//!   window's end.
//! * Faults: a [`FaultPolicy`] while Redis is away, reconnection with
//!   backoff in a keeper thread, and after Redis restarts (empty, from a
//!   snapshot or AOF, a replica promoted, a failback: a new `run_id` or
//!   replication id), every process writes its own bookings back before
//!   fresh ones are admitted (the protocol is argued in the module
//!   `restart`, `src/restart.rs`); nothing is booked on a replica.
//! * Redis Sentinel: a `redis+sentinel://` URL ([`Config::url`]); the
//!   gate follows the master the sentinels name (module `sentinel`).
//! * TLS (feature `tls`): `rediss://` and `rediss+sentinel://` URLs,
//!   rustls, the system's roots or [`Config::tls_roots`] (module `tls`).
//!
//! ```no_run
//! use std::time::Duration;
//! use leaparray_redis::{Config, FaultPolicy, RedisGate};
//!
//! // 1,000 per second across every process, in 4 windows of 250 ms,
//! // booked 50 at a time, each process admitting up to 100 alone if Redis is away.
//! let config = Config::new("redis://127.0.0.1:6379/", "api", Duration::from_millis(250), 1_000)
//!     .lease(50)
//!     .on_fault(FaultPolicy::Local { share: 100 });
//! let gate = RedisGate::<4>::open(config)?;
//! let admitted = gate.try_acquire(1).is_admitted();
//! # Ok::<(), leaparray_redis::Error>(())
//! ```
//! (`tests/redis.rs` runs the same against a real Redis.) The crate's
//! README has the modes, the fault policy, the restart protocol and the
//! measured figures.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod cluster;
mod config;
mod fault;
mod gate;
mod restart;
mod script;
mod sentinel;
mod tls;

pub use config::{Config, FaultPolicy, Mode, OnEviction, Tls};
pub use gate::{Decision, RedisGate, Stats};

/// The Lua script every operation runs (check and book, restore, give
/// back, heartbeat), for review or to load elsewhere.
///
/// ```
/// assert!(leaparray_redis::SCRIPT.contains("redis.call('TIME')"));
/// ```
pub const SCRIPT: &str = script::SOURCE;

/// The most windows per interval (`N`) a [`RedisGate`] accepts; above it
/// [`RedisGate::open`] returns [`Error::Config`]. A booking reads `2N - 1`
/// fields with one `HMGET` of Lua's `unpack`, whose limit is Lua 5.1's C
/// stack (`LUAI_MAXCSTACK`, 8000 slots: `unpack` of ~4000 fields already
/// fails); 1024 windows read 2047 fields, a quarter of it.
///
/// ```
/// assert_eq!(leaparray_redis::MAX_WINDOWS, 1024);
/// ```
pub const MAX_WINDOWS: usize = 1024;

/// The largest caller time (µs) [`RedisGate::try_acquire_at`] accepts:
/// 2^52, so that the script's Lua numbers (doubles, exact to 2^53) hold the
/// time and `floor(time / window)` exactly. A larger time is
/// [`Decision::Refused`] without a call to Redis. (Redis's own `TIME` is
/// about 2^50.7 µs in 2026; 2^52 µs is the year 2112.)
///
/// ```
/// assert_eq!(leaparray_redis::MAX_CALLER_TIME_US, 1 << 52);
/// ```
pub const MAX_CALLER_TIME_US: u64 = 1 << 52;

/// Why a [`RedisGate`] could not be opened.
///
/// ```
/// use std::time::Duration;
/// use leaparray_redis::{Config, Error, RedisGate};
/// let e = RedisGate::<2>::open(Config::new("not a url", "api", Duration::from_secs(1), 5));
/// assert!(matches!(e, Err(Error::Redis(_))));
/// ```
#[derive(Debug)]
pub enum Error {
    /// The configuration is invalid (the message says which field), or
    /// Redis refused part of it at `open`: the URL's password or user
    /// (`WRONGPASS`, `NOAUTH`), its database index, a Sentinel master name
    /// no sentinel that answered knows.
    Config(String),
    /// The Redis URL is invalid.
    Redis(redis::RedisError),
    /// Redis's `maxmemory-policy` (the value) can evict the limit's keys
    /// (`allkeys-*`), and [`Config::on_evicting`] is
    /// [`OnEviction::Refuse`] (the default).
    Evicting(String),
    /// The Redis user lacks a permission the limit needs (Redis's `NOPERM`;
    /// the message names the command or key, e.g. `INFO`, which the ACL
    /// category `@dangerous` holds): grant the ACL the README lists
    /// ("Redis user").
    Permission(String),
    /// A TLS connection failed on the first connection of `open` (the
    /// message is rustls's: an unknown issuer, a name not in the server's
    /// certificate, a client certificate the server requires, a server
    /// that does not speak TLS): set [`Config::tls_roots`] /
    /// [`Config::tls_client`], or fix the URL.
    Tls(String),
    /// `open` measured a round trip to Redis (the least of 3 `TIME`s) not
    /// shorter than [`Config::timeout`]: every call would run out of it.
    /// Set the timeout to at least twice the round trip (README, "Slow
    /// links").
    SlowLink {
        /// The round trip measured.
        round_trip: std::time::Duration,
        /// The configured timeout.
        timeout: std::time::Duration,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(why) => write!(f, "leaparray-redis: invalid configuration: {why}"),
            Error::Redis(e) => write!(f, "leaparray-redis: {e}"),
            Error::Evicting(p) => write!(f, "leaparray-redis: Redis's maxmemory-policy is {p}, which can evict the limit's keys; set noeviction (or Config::on_evicting(OnEviction::Warn))"),
            Error::Permission(what) => write!(f, "leaparray-redis: the Redis user lacks a permission the limit needs ({what}); grant the ACL of the README (\"Redis user\")"),
            Error::Tls(why) => write!(f, "leaparray-redis: TLS failed ({why}); set Config::tls_roots to the server's CA (Config::tls_client if it asks for a client certificate)"),
            Error::SlowLink { round_trip, timeout } => write!(f, "leaparray-redis: a round trip to Redis takes {round_trip:?}, not less than the timeout ({timeout:?}): every decision would be lost; set Config::timeout to at least 2 x the round trip"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            Error::Config(_)
            | Error::Evicting(_)
            | Error::Permission(_)
            | Error::Tls(_)
            | Error::SlowLink { .. } => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Redis(e)
    }
}
