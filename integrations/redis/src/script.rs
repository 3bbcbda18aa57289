//! The Lua script (`src/window.lua`) and its typed calls. One script for
//! every operation, so a limit's state changes only inside it, atomically.

use redis::{Connection, RedisResult, Script};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The script's source: the sliding window run by Redis.
pub(crate) const SOURCE: &str = include_str!("window.lua");

/// The reply's first element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Done,
    Limit,
    Stale,
    Fenced,
}

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub status: Status,
    /// The time the script ran at, µs (Redis `TIME`, or the caller's).
    pub now: u64,
    /// Redis's epoch token.
    pub epoch: String,
    /// `book` only: the window id booked into or refused in.
    pub window: u64,
    /// `book` only: permits booked.
    pub booked: u64,
    /// `book` only: room left in the fullest interval holding the window.
    pub room: u64,
    /// `check` only: Redis's `maxmemory-policy` (empty if `INFO` does not
    /// say).
    pub policy: Option<String>,
    /// `check` of a fresh connection only: Redis runs as a cluster.
    pub cluster: bool,
    /// `check` only: the longest fence a process of the limit recorded
    /// (µs; the counters hash's field `grace`).
    pub grace: u64,
}

/// The keys and fixed arguments of one limit.
#[derive(Debug)]
pub(crate) struct Calls {
    script: Script,
    keys: [String; 4],
    window_us: u64,
    n_windows: u64,
    /// This process's own fence (µs).
    grace_us: u64,
    /// The longest fence the limit's processes recorded, as the latest
    /// check read it (µs): a new epoch this process makes gets the longer
    /// of the two, even when Redis lost the record (module `restart`,
    /// "The fence").
    fleet_us: AtomicU64,
}

impl Calls {
    pub fn new(name: &str, window_us: u64, n_windows: u64, grace_us: u64) -> Self {
        Self {
            script: Script::new(SOURCE),
            keys: [
                format!("{{{name}}}"),
                format!("{{{name}}}:epoch"),
                format!("{{{name}}}:restored"),
                format!("{{{name}}}:run"),
            ],
            window_us,
            n_windows,
            grace_us,
            fleet_us: AtomicU64::new(0),
        }
    }

    /// Records the fleet's fence a check read.
    pub fn learn_grace(&self, fleet_us: u64) {
        self.fleet_us.store(fleet_us, Relaxed);
    }

    /// The fence a new epoch made by this process's calls gets (µs).
    pub fn fence_us(&self) -> u64 {
        self.grace_us.max(self.fleet_us.load(Relaxed))
    }

    fn invoke(
        &self,
        con: &mut Connection,
        op: &str,
        epoch: &str,
        extra: &[String],
    ) -> RedisResult<Reply> {
        let mut inv = self.script.prepare_invoke();
        for k in &self.keys {
            inv.key(k);
        }
        inv.arg(op)
            .arg(epoch)
            .arg(self.window_us)
            .arg(self.n_windows)
            .arg(self.fence_us());
        for a in extra {
            inv.arg(a);
        }
        let v: Vec<redis::Value> = inv.invoke(con)?;
        decode(&v)
    }

    /// Books between `least` and `want` permits in the current window.
    pub fn book(
        &self,
        con: &mut Connection,
        epoch: &str,
        limit: u64,
        want: u64,
        least: u64,
        at: Option<u64>,
    ) -> RedisResult<Reply> {
        let at = at.map(|t| t.to_string()).unwrap_or_default();
        self.invoke(
            con,
            "book",
            epoch,
            &[limit.to_string(), want.to_string(), least.to_string(), at],
        )
    }

    /// Is `epoch` still Redis's epoch? (creates a new one if Redis is
    /// empty or the counters lost theirs). Also makes a new epoch if the
    /// epoch was made by another redis-server process (a restart from
    /// persisted data, a failover), and reads the `maxmemory-policy`.
    /// `fresh`: a new connection's first call. `vouch` (fresh only): identities ("run node
    /// replid"), separated by commas, of masters that answered this process
    /// `MOVED` (see the module `restart`). Records this process's fence
    /// in the counters hash (raised, never lowered) and reads the
    /// fleet's ([`Reply::grace`]).
    pub fn check(
        &self,
        con: &mut Connection,
        epoch: &str,
        fresh: bool,
        vouch: &str,
    ) -> RedisResult<Reply> {
        let fresh = if fresh { "1" } else { "" };
        self.invoke(
            con,
            "check",
            epoch,
            &[
                fresh.to_owned(),
                vouch.to_owned(),
                self.grace_us.to_string(),
            ],
        )
    }

    /// Adds `windows` (id, permits) under `epoch`, once per `process` and
    /// epoch (`process` empty: every time).
    pub fn restore(
        &self,
        con: &mut Connection,
        epoch: &str,
        process: &str,
        windows: &[(u64, u64)],
    ) -> RedisResult<Reply> {
        let mut extra = vec![process.to_owned()];
        for (id, n) in windows {
            extra.push(id.to_string());
            extra.push(n.to_string());
        }
        self.invoke(con, "restore", epoch, &extra)
    }

    /// Takes back `permits` never used from window `id`.
    pub fn give_back(
        &self,
        con: &mut Connection,
        epoch: &str,
        id: u64,
        permits: u64,
    ) -> RedisResult<Reply> {
        self.invoke(con, "return", epoch, &[id.to_string(), permits.to_string()])
    }
}

fn decode(v: &[redis::Value]) -> RedisResult<Reply> {
    let int = |i: usize| -> RedisResult<u64> {
        match v.get(i) {
            Some(x) => redis::from_redis_value::<u64>(x),
            None => Ok(0),
        }
    };
    let status = match int(0)? {
        0 => Status::Done,
        1 => Status::Limit,
        2 => Status::Stale,
        3 => Status::Fenced,
        _ => {
            return Err((
                redis::ErrorKind::TypeError,
                "leaparray-redis: unknown status",
            )
                .into())
        }
    };
    let epoch = match v.get(2) {
        Some(x) => redis::from_redis_value::<String>(x)?,
        None => return Err((redis::ErrorKind::TypeError, "leaparray-redis: short reply").into()),
    };
    let policy = match v.get(6) {
        Some(x) => Some(redis::from_redis_value::<String>(x)?),
        None => None,
    };
    Ok(Reply {
        status,
        now: int(1)?,
        epoch,
        window: int(3)?,
        booked: int(4)?,
        room: int(5)?,
        policy,
        cluster: int(7)? == 1,
        grace: int(8)?,
    })
}
