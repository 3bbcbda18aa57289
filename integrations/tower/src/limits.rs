//! The shared state: the gates, the clock, the decision and the headers.

use std::fmt::Write as _;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::header::{HeaderValue, RETRY_AFTER};
use http::{HeaderMap, HeaderName, Response, StatusCode};
use leaparray::clock::{Clock, MonotonicClock, Unit};
use leaparray::gate::{Gate, GateSet, Member};
use leaparray::keyed::KeyHasher;
use leaparray::Decision;

use crate::config::{Key, Mode, Policy, Table, WINDOWS};

/// Ticks per second of the gates' clock: microseconds.
pub(crate) const TICKS_PER_SECOND: u64 = 1_000_000;

/// `RateLimit-Policy`, draft-ietf-httpapi-ratelimit-headers-10.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`, draft-ietf-httpapi-ratelimit-headers-10.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Whole seconds, rounded up, of `ticks` µs.
pub(crate) fn seconds_up(ticks: u64) -> u64 {
    ticks.div_ceil(TICKS_PER_SECOND)
}

/// The per-key limit.
#[derive(Debug)]
pub(crate) struct PerKey {
    pub(crate) policy: Policy,
    pub(crate) table: Box<dyn Table>,
    pub(crate) key: Key,
    pub(crate) hasher: KeyHasher,
}

/// Everything every clone of the service shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) per_key: Option<PerKey>,
    pub(crate) global: Vec<(Policy, Gate<WINDOWS>)>,
    pub(crate) mode: Mode,
    pub(crate) waiting: AtomicUsize,
    pub(crate) clock: MonotonicClock,
    /// `RateLimit-Policy`, the same on every response.
    pub(crate) policy_header: HeaderValue,
}

/// Calls `f` with the global gates as one `GateSet` (sized at compile
/// time: one arm per count up to `MAX_GLOBAL`).
fn with_set<R>(gates: &[(Policy, Gate<WINDOWS>)], f: impl FnOnce(&dyn SetOps) -> R) -> R {
    let g = |i: usize| &gates[i].1 as &dyn Member;
    match gates.len() {
        0 => f(&GateSet::<0>::new([])),
        1 => f(&GateSet::new([g(0)])),
        2 => f(&GateSet::new([g(0), g(1)])),
        3 => f(&GateSet::new([g(0), g(1), g(2)])),
        _ => f(&GateSet::new([g(0), g(1), g(2), g(3)])),
    }
}

/// The two operations of a `GateSet` of any size.
trait SetOps {
    fn acquire(&self, now: u64) -> Decision;
    fn retry(&self, now: u64) -> Option<u64>;
}

impl<const K: usize> SetOps for GateSet<'_, K> {
    fn acquire(&self, now: u64) -> Decision {
        self.try_acquire(now, 1)
    }
    fn retry(&self, now: u64) -> Option<u64> {
        self.retry_after(now, 1)
    }
}

impl Shared {
    pub(crate) fn new(
        per_key: Option<PerKey>,
        global: Vec<(Policy, Gate<WINDOWS>)>,
        mode: Mode,
    ) -> Self {
        let mut policy = String::new();
        let policies = per_key
            .iter()
            .map(|k| &k.policy)
            .chain(global.iter().map(|(p, _)| p));
        for p in policies {
            if !policy.is_empty() {
                policy.push_str(", ");
            }
            // `w` in whole seconds (draft -10: an integer); a sub-second
            // interval is rounded up.
            let _ = write!(
                policy,
                "\"{}\";q={};w={}",
                p.name,
                p.limit,
                seconds_up(u64::try_from(p.per.as_micros()).unwrap_or(u64::MAX)).max(1)
            );
        }
        Shared {
            per_key,
            global,
            mode,
            waiting: AtomicUsize::new(0),
            clock: MonotonicClock::new(Unit::Micros),
            // Names are checked printable ASCII by the builder.
            policy_header: HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("")),
        }
    }

    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Admits one request of `key` at `now`, or says in how many ticks to
    /// retry. The order (see the crate docs, "Order of the checks"):
    /// check the key and every global limit without booking; book the
    /// key; book the global set (all or nothing). Only a race lost in the
    /// last step spends a permit (the key's) on a refused request.
    pub(crate) fn decide(&self, key: Option<u64>, now: u64) -> Result<(), u64> {
        let refuse = || Err(self.retry_after(key, now));
        // Only with both kinds of limit can one refuse after the other
        // booked: then look before booking (a key alone, or the global set
        // alone, books all or nothing by itself).
        let both = key.is_some() && self.per_key.is_some() && !self.global.is_empty();
        if both {
            if let (Some(k), Some(pk)) = (key, &self.per_key) {
                if pk.table.remaining(k, now) == 0 {
                    return refuse();
                }
            }
            if self.global.iter().any(|(_, g)| g.remaining(now) == 0) {
                return refuse();
            }
        }
        if let (Some(k), Some(pk)) = (key, &self.per_key) {
            if pk.table.try_acquire(k, now, 1) != Decision::Pass {
                return refuse();
            }
        }
        if !self.global.is_empty() && with_set(&self.global, |s| s.acquire(now)) != Decision::Pass {
            return refuse();
        }
        Ok(())
    }

    /// Ticks until one more request of `key` would pass, if nothing else
    /// arrived: the longest of the key's and the global set's.
    pub(crate) fn retry_after(&self, key: Option<u64>, now: u64) -> u64 {
        // `None` (never) cannot happen with limits of at least 1 and the
        // clock within u64; two intervals is an upper bound anyway.
        let fallback = self.longest_interval();
        let mut ticks = 0;
        if let (Some(k), Some(pk)) = (key, &self.per_key) {
            ticks = pk.table.retry_after(k, now, 1).unwrap_or(fallback);
        }
        if !self.global.is_empty() {
            ticks = ticks.max(with_set(&self.global, |s| s.retry(now)).unwrap_or(fallback));
        }
        ticks
    }

    fn longest_interval(&self) -> u64 {
        self.per_key
            .iter()
            .map(|k| &k.policy)
            .chain(self.global.iter().map(|(p, _)| p))
            .map(|p| u64::try_from(p.per.as_micros()).unwrap_or(u64::MAX))
            .max()
            .unwrap_or(0)
    }

    /// The `RateLimit` field: every policy, `r` what is left now, `t` the
    /// whole seconds until its whole quota is back.
    pub(crate) fn ratelimit(&self, key: Option<u64>, now: u64) -> HeaderValue {
        let mut v = String::with_capacity(64);
        if let (Some(k), Some(pk)) = (key, &self.per_key) {
            let r = pk.table.remaining(k, now);
            let t = pk.table.retry_after(k, now, pk.policy.limit).unwrap_or(0);
            let _ = write!(v, "\"{}\";r={};t={}", pk.policy.name, r, seconds_up(t));
        }
        for (p, g) in &self.global {
            if !v.is_empty() {
                v.push_str(", ");
            }
            let r = g.remaining(now);
            let t = g.retry_after(now, p.limit).unwrap_or(0);
            let _ = write!(v, "\"{}\";r={};t={}", p.name, r, seconds_up(t));
        }
        // The string's buffer becomes the value's: one allocation, no copy.
        HeaderValue::from_maybe_shared(bytes::Bytes::from(v))
            .unwrap_or(HeaderValue::from_static(""))
    }

    /// Adds `RateLimit-Policy` and `RateLimit` to `headers`.
    pub(crate) fn stamp(&self, headers: &mut HeaderMap, key: Option<u64>, now: u64) {
        headers.insert(RATELIMIT_POLICY.clone(), self.policy_header.clone());
        headers.insert(RATELIMIT.clone(), self.ratelimit(key, now));
    }

    /// The 429 answer, `Retry-After` in whole seconds rounded up.
    pub(crate) fn refusal<B: Default>(
        &self,
        key: Option<u64>,
        now: u64,
        retry: u64,
    ) -> Response<B> {
        let mut resp = Response::new(B::default());
        *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        let h = resp.headers_mut();
        h.insert(RETRY_AFTER, HeaderValue::from(seconds_up(retry)));
        self.stamp(h, key, now);
        resp
    }

    /// A place among the waiting requests, if there is one.
    pub(crate) fn wait_slot(self: &Arc<Self>, max: usize) -> Option<WaitSlot> {
        let mut cur = self.waiting.load(Ordering::Relaxed);
        loop {
            if cur >= max {
                return None;
            }
            match self.waiting.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(WaitSlot(self.clone())),
                Err(seen) => cur = seen,
            }
        }
    }
}

/// One of the bounded waiting places; given back when dropped (also when
/// the waiting request is cancelled).
#[derive(Debug)]
pub(crate) struct WaitSlot(Arc<Shared>);

impl Drop for WaitSlot {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The window length in µs of a policy already validated.
pub(crate) fn window_of(p: &Policy) -> NonZeroU64 {
    p.window().unwrap_or(NonZeroU64::MIN)
}
