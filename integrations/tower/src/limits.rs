//! The shared state: the gates, the clock, the decision and the headers.

use std::fmt::Write as _;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::header::{HeaderValue, RETRY_AFTER};
use http::{HeaderMap, HeaderName, Response, StatusCode};
use leaparray::clock::Clock;
use leaparray::gate::{Gate, GateSet, Member};
use leaparray::keyed::KeyHasher;
use leaparray::Decision;

use crate::clock::LayerClock;
use crate::config::{Key, Mode, Policy, Table, MAX_GLOBAL, WINDOWS};

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

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
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
    /// Whether admitted requests get an `Admission` extension.
    pub(crate) admission: bool,
    /// Whether admitted responses get the `RateLimit` fields.
    pub(crate) admitted_headers: bool,
    pub(crate) waiting: AtomicUsize,
    pub(crate) clock: LayerClock,
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
        admission: bool,
        admitted_headers: bool,
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
            admission,
            admitted_headers,
            waiting: AtomicUsize::new(0),
            clock: LayerClock::new(),
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
    /// whole seconds until its whole quota is back. `admitted`: the
    /// request was just booked in every limit, in the window of `now`, so
    /// the whole quota is back when that window leaves the interval, at
    /// the start of the `WINDOWS`-th window after it (nothing is booked in
    /// a later window before `now`: no request is prioritized).
    pub(crate) fn ratelimit(&self, key: Option<u64>, now: u64, admitted: bool) -> HeaderValue {
        let back = |window: u64| {
            (now / window + WINDOWS as u64)
                .saturating_mul(window)
                .saturating_sub(now)
        };
        // (policy, r, t) of each member: at most one key and MAX_GLOBAL.
        let mut members = [("", 0, 0); 1 + MAX_GLOBAL];
        let mut m = 0;
        if let (Some(k), Some(pk)) = (key, &self.per_key) {
            let r = pk.table.remaining(k, now);
            let t = if admitted {
                back(pk.table.window())
            } else {
                pk.table.retry_after(k, now, pk.policy.limit).unwrap_or(0)
            };
            members[m] = (pk.policy.name.as_str(), r, seconds_up(t));
            m += 1;
        }
        for (p, g) in &self.global {
            let r = g.remaining(now);
            let t = if admitted {
                back(g.window())
            } else {
                g.retry_after(now, p.limit).unwrap_or(0)
            };
            members[m] = (p.name.as_str(), r, seconds_up(t));
            m += 1;
        }
        let members = &members[..m];
        // `"name";r=R;t=T`, joined by ", ", in a buffer of exactly its
        // length: `Bytes` then takes it without a second allocation.
        let len = members
            .iter()
            .map(|(name, r, t)| name.len() + 8 + digits(*r) + digits(*t))
            .sum::<usize>()
            + 2 * m.saturating_sub(1);
        let mut v = Vec::with_capacity(len);
        let mut numbers = itoa::Buffer::new();
        for (i, (name, r, t)) in members.iter().enumerate() {
            if i > 0 {
                v.extend_from_slice(b", ");
            }
            v.push(b'"');
            v.extend_from_slice(name.as_bytes());
            v.extend_from_slice(b"\";r=");
            v.extend_from_slice(numbers.format(*r).as_bytes());
            v.extend_from_slice(b";t=");
            v.extend_from_slice(numbers.format(*t).as_bytes());
        }
        debug_assert_eq!(v.len(), len);
        HeaderValue::from_maybe_shared(bytes::Bytes::from(v))
            .unwrap_or(HeaderValue::from_static(""))
    }

    /// `RateLimit-Policy` and `RateLimit` at `now`, of a request just
    /// `admitted` or not.
    pub(crate) fn fields(
        &self,
        key: Option<u64>,
        now: u64,
        admitted: bool,
    ) -> (HeaderValue, HeaderValue) {
        (
            self.policy_header.clone(),
            self.ratelimit(key, now, admitted),
        )
    }

    /// Adds `RateLimit-Policy` and `RateLimit` to `headers`.
    pub(crate) fn stamp(
        &self,
        headers: &mut HeaderMap,
        key: Option<u64>,
        now: u64,
        admitted: bool,
    ) {
        let (policy, ratelimit) = self.fields(key, now, admitted);
        headers.insert(RATELIMIT_POLICY.clone(), policy);
        headers.insert(RATELIMIT.clone(), ratelimit);
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
        self.stamp(h, key, now, false);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaparray::gate::Gate;
    use leaparray::keyed::KeyHasher;

    use super::{window_of, PerKey, Shared};
    use crate::config::{make_table, Key, Mode, Policy};

    fn policy(name: &str, limit: u64, per_ms: u64) -> Policy {
        Policy {
            name: name.into(),
            limit,
            per: Duration::from_millis(per_ms),
        }
    }

    /// The `t` of an admitted response comes from the window arithmetic,
    /// not from the gates: it must be what the gates answer.
    #[test]
    fn an_admitted_t_is_the_gates_time_until_the_whole_quota_is_back() {
        let key_policy = policy("key", 3, 2_000);
        let per_key = PerKey {
            table: make_table::<64>(window_of(&key_policy), &key_policy).unwrap(),
            policy: key_policy,
            key: Key::peer_ip(),
            hasher: KeyHasher::new(),
        };
        let global = [policy("short", 5, 1_000), policy("long", 40, 6_000)]
            .into_iter()
            .map(|p| {
                let g = Gate::new(window_of(&p), p.limit).with_occupy_timeout(0);
                (p, g)
            })
            .collect();
        let shared = Shared::new(Some(per_key), global, Mode::Refuse, false, true);
        // Times over 60 s: steps from 1 µs to 0.8 s (a pseudo-random walk),
        // two keys; every admission compared.
        let (mut now, mut x, mut admitted) = (0u64, 1u64, 0);
        for _ in 0..5_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            now += (x >> 33) % 800_000 + 1;
            let key = Some((x >> 20) & 1);
            if shared.decide(key, now).is_ok() {
                admitted += 1;
                assert_eq!(
                    shared.ratelimit(key, now, true),
                    shared.ratelimit(key, now, false),
                    "at {now} µs"
                );
            }
        }
        assert!(admitted > 1_000, "only {admitted} admitted");
    }
}
