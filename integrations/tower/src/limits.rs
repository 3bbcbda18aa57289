//! The shared state: the gates, the clock, the decision and the headers.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use http::header::{HeaderValue, RETRY_AFTER};
use http::{HeaderMap, HeaderName, Response, StatusCode};
use leaparray::clock::Clock;
use leaparray::gate::Member;
use leaparray::keyed::{Headroom, HeapKeyedGate, KeyHasher};
use leaparray::Decision;
use leaparray::{Gate, GateSet};

use crate::clock::LayerClock;
use crate::config::{AdmittedFields, Key, Mode, Policy, WINDOWS};

/// Ticks per second of the gates' clock: microseconds.
pub(crate) const TICKS_PER_SECOND: u64 = 1_000_000;

/// `RateLimit-Policy`, draft-ietf-httpapi-ratelimit-headers-10.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`, draft-ietf-httpapi-ratelimit-headers-10.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

std::thread_local! {
    /// Where this thread writes `RateLimit` values: each one is split off
    /// as a `Bytes` that shares the buffer, so a value costs no allocation
    /// of its own; a new buffer of `FIELD_BUFFER` bytes is taken when this
    /// one is spent (the old one is freed with the last value in it).
    static FIELD: RefCell<BytesMut> = RefCell::new(BytesMut::with_capacity(FIELD_BUFFER));
}

/// The size of the buffers `RateLimit` values are written in.
const FIELD_BUFFER: usize = 4096;

/// Whole seconds, rounded up, of `ticks` µs.
pub(crate) fn seconds_up(ticks: u64) -> u64 {
    ticks.div_ceil(TICKS_PER_SECOND)
}

/// The per-key limit.
#[derive(Debug)]
pub(crate) struct PerKey {
    pub(crate) policy: Policy,
    pub(crate) table: HeapKeyedGate<WINDOWS>,
    pub(crate) key: Key,
    pub(crate) hasher: KeyHasher,
    /// Decisions the table refused since the layer was built (a waiting
    /// request's every try).
    pub(crate) refused: AtomicU64,
}

/// Everything every clone of the service shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) per_key: Option<PerKey>,
    pub(crate) global: Vec<(Policy, Gate<WINDOWS>)>,
    pub(crate) mode: Mode,
    /// Whether admitted requests get an `Admission` extension.
    pub(crate) admission: bool,
    /// The fields admitted responses get.
    pub(crate) admitted_fields: AdmittedFields,
    pub(crate) waiting: AtomicUsize,
    /// `429` answers since the layer was built.
    pub(crate) refused: AtomicU64,
    pub(crate) clock: LayerClock,
    /// `RateLimit-Policy`, the same on every response.
    pub(crate) policy_header: HeaderValue,
}

/// The fields of one response: `RateLimit-Policy`, if it gets it, and
/// `RateLimit`.
#[derive(Debug)]
pub(crate) struct Fields {
    policy: Option<HeaderValue>,
    ratelimit: HeaderValue,
}

impl Fields {
    /// Adds the fields to `headers`.
    pub(crate) fn stamp(self, headers: &mut HeaderMap) {
        if let Some(policy) = self.policy {
            headers.insert(RATELIMIT_POLICY.clone(), policy);
        }
        headers.insert(RATELIMIT.clone(), self.ratelimit);
    }
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
        admitted_fields: AdmittedFields,
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
            let _ = write!(policy, "\"{}\";q={}", p.name, p.limit);
            // `w` (draft -10: optional, an integer of seconds) only for an
            // interval of whole seconds: `q` per 100 ms is not `10 q` per
            // second in a sliding window, nor `q` per 1 s, so no integer
            // states it and the member goes without.
            if p.per.subsec_nanos() == 0 {
                let _ = write!(policy, ";w={}", p.per.as_secs());
            }
        }
        Shared {
            per_key,
            global,
            mode,
            admission,
            admitted_fields,
            waiting: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            clock: LayerClock::new(),
            // Names are checked printable ASCII by the builder.
            policy_header: HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("")),
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Admits one request of `key` at `now`, or says in how many ticks to
    /// retry. The order (see the crate docs, "Order of the checks"):
    /// check the key and every global limit without booking; book the
    /// key; book the global set (all or nothing). Only a race lost in the
    /// last step spends a permit (the key's) on a refused request. An
    /// admission gives what the key's booking left (for its `RateLimit`
    /// field), if it has one.
    #[inline]
    pub(crate) fn decide(&self, key: Option<u64>, now: u64) -> Result<Option<Headroom>, u64> {
        let refuse = || Err(self.retry_after(key, now));
        // Only with both kinds of limit can one refuse after the other
        // booked: then look before booking (a key alone, or the global set
        // alone, books all or nothing by itself).
        let both = key.is_some() && self.per_key.is_some() && !self.global.is_empty();
        let mut booked = None;
        if both {
            if let (Some(k), Some(pk)) = (key, &self.per_key) {
                if pk.table.remaining(k, now) == 0 {
                    // Refused by the look: the key's decision itself says so
                    // (a refusal books nothing), so that a new key without
                    // room is counted as overflowed (`occupancy`, the
                    // exposition), as without a global limit. Room that came
                    // back between the two is booked: the race of the
                    // crate docs' "Order of the checks".
                    match self.book_key(pk, k, now) {
                        Some(left) => booked = Some(left),
                        None => return refuse(),
                    }
                }
            }
            if self.global.iter().any(|(_, g)| g.remaining(now) == 0) {
                return refuse();
            }
        }
        let left = match (booked, key, &self.per_key) {
            (Some(left), _, _) => left,
            (None, Some(k), Some(pk)) => match self.book_key(pk, k, now) {
                Some(left) => left,
                None => return refuse(),
            },
            _ => None,
        };
        if !self.global.is_empty() && with_set(&self.global, |s| s.acquire(now)) != Decision::Pass {
            return refuse();
        }
        Ok(left)
    }

    /// One permit of key `k`, and what it left (if the fields want it), or
    /// `None` if refused.
    #[inline]
    fn book_key(&self, pk: &PerKey, k: u64, now: u64) -> Option<Option<Headroom>> {
        let booked = if self.admitted_fields == AdmittedFields::None {
            (pk.table.try_acquire(k, now, 1) == Decision::Pass).then_some(None)
        } else {
            match pk.table.try_acquire_headroom(k, now, 1) {
                (Decision::Pass, headroom) => Some(Some(headroom)),
                _ => None,
            }
        };
        if booked.is_none() {
            pk.refused.fetch_add(1, Ordering::Relaxed);
        }
        booked
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
    /// whole seconds until its whole quota is back (`retry_after` for the
    /// policy's limit; a late caller's booking counts from the newest
    /// window, where it went). The key's numbers are `left`, what its
    /// booking left, if given; the rest are looks at the gates.
    pub(crate) fn ratelimit(
        &self,
        key: Option<u64>,
        now: u64,
        left: Option<Headroom>,
    ) -> HeaderValue {
        FIELD.with(|buf| {
            let mut buf = buf.borrow_mut();
            // `"name";r=R;t=T` per policy, joined by ", ".
            let mut member = |name: &str, r: u64, t: Option<u64>| {
                if !buf.is_empty() {
                    buf.extend_from_slice(b", ");
                }
                let mut numbers = itoa::Buffer::new();
                buf.reserve(name.len() + 8 + 2 * 20);
                buf.extend_from_slice(b"\"");
                buf.extend_from_slice(name.as_bytes());
                buf.extend_from_slice(b"\";r=");
                buf.extend_from_slice(numbers.format(r).as_bytes());
                buf.extend_from_slice(b";t=");
                buf.extend_from_slice(numbers.format(seconds_up(t.unwrap_or(0))).as_bytes());
            };
            if let (Some(k), Some(pk)) = (key, &self.per_key) {
                let headroom = left.unwrap_or_else(|| Headroom {
                    remaining: pk.table.remaining(k, now),
                    reset: pk.table.retry_after(k, now, pk.policy.limit),
                });
                member(&pk.policy.name, headroom.remaining, headroom.reset);
            }
            for (p, g) in &self.global {
                member(&p.name, g.remaining(now), g.retry_after(now, p.limit));
            }
            HeaderValue::from_maybe_shared(buf.split().freeze())
                .unwrap_or(HeaderValue::from_static(""))
        })
    }

    /// The fields of a response admitted at `now`, if it gets any; `left`
    /// what the key's booking left, if it said.
    #[inline]
    pub(crate) fn admitted(
        &self,
        key: Option<u64>,
        now: u64,
        left: Option<Headroom>,
    ) -> Option<Fields> {
        let policy = match self.admitted_fields {
            AdmittedFields::None => return None,
            AdmittedFields::RateLimit => None,
            AdmittedFields::Both => Some(self.policy_header.clone()),
        };
        Some(Fields {
            policy,
            ratelimit: self.ratelimit(key, now, left),
        })
    }

    /// The 429 answer, `Retry-After` in whole seconds rounded up.
    pub(crate) fn refusal<B: Default>(
        &self,
        key: Option<u64>,
        now: u64,
        retry: u64,
    ) -> Response<B> {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut resp = Response::new(B::default());
        *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        let h = resp.headers_mut();
        h.insert(RETRY_AFTER, HeaderValue::from(seconds_up(retry)));
        Fields {
            policy: Some(self.policy_header.clone()),
            ratelimit: self.ratelimit(key, now, None),
        }
        .stamp(h);
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

    use leaparray::keyed::KeyHasher;
    use leaparray::Gate;

    use super::{seconds_up, window_of, PerKey, Shared};
    use crate::config::{make_table, AdmittedFields, Key, Mode, Policy};

    fn policy(name: &str, limit: u64, per_ms: u64) -> Policy {
        Policy {
            name: name.into(),
            limit,
            per: Duration::from_millis(per_ms),
        }
    }

    fn shared_of(key: Policy, globals: Vec<Policy>) -> Shared {
        let per_key = PerKey {
            table: make_table(64, window_of(&key), &key).unwrap(),
            policy: key,
            key: Key::peer_ip(),
            hasher: KeyHasher::new(),
            refused: std::sync::atomic::AtomicU64::new(0),
        };
        let global = globals
            .into_iter()
            .map(|p| {
                let g = Gate::new(window_of(&p), p.limit).with_occupy_timeout(0);
                (p, g)
            })
            .collect();
        Shared::new(
            Some(per_key),
            global,
            Mode::Refuse,
            false,
            AdmittedFields::RateLimit,
        )
    }

    /// A late caller (a clock reading in a window before the newest one
    /// its key and gate saw: another core's clock, or a thread that read
    /// it before another's booking) is booked into the newest window, so
    /// its whole quota is back one window later than its own window says.
    /// Its admitted `t` must still be the gates' `retry_after(limit)`
    /// (found by hostile review: `t` was one window short).
    #[test]
    fn a_late_callers_admitted_t_is_the_gates() {
        let shared = shared_of(policy("key", 3, 2_000), vec![policy("g", 5, 2_000)]);
        let key = Some(1);
        // A request of the key read the clock in window 1 (1 s windows)...
        assert!(shared.decide(key, 1_500_000).is_ok());
        // ...then this one, whose reading (window 0) was taken earlier.
        let now = 900_000;
        let headroom = shared.decide(key, now).expect("admitted, into window 1");
        assert_eq!(
            shared.ratelimit(key, now, headroom),
            shared.ratelimit(key, now, None),
            "at {now} µs"
        );
    }

    /// `RateLimit` values split off the per-thread buffer are exactly the
    /// formatted members, and stay so while later values are written:
    /// buffer boundaries crossed many times, names up to 9,000 bytes (more
    /// than a buffer), a key and 4 global policies (from the hostile
    /// review of the buffer).
    #[test]
    fn values_from_the_buffer_are_exact_and_stay_so() {
        let long = "n".repeat(9_000);
        let mid = "m".repeat(4_090);
        for names in [
            ["k", "a", "b", "c", "d"],
            [long.as_str(), "a", mid.as_str(), "c", "d"],
            ["k", mid.as_str(), mid.as_str(), long.as_str(), "x"],
        ] {
            let globals = names[1..]
                .iter()
                .enumerate()
                .map(|(i, n)| policy(n, 7 + i as u64, 2_000))
                .collect();
            // Only the text matters here (the builder refuses duplicates).
            let shared = shared_of(policy(names[0], 5, 2_000), globals);
            let mut kept = Vec::new();
            let mut now = 0;
            for i in 0..3_000u64 {
                now += 37_000 + i % 5_000;
                let key = Some(i % 3);
                let left = shared.decide(key, now).unwrap_or(None);
                let v = shared.ratelimit(key, now, left);
                // The gates' own answers, formatted by `format!`.
                let k = shared.per_key.as_ref().unwrap();
                let mut want = format!(
                    "\"{}\";r={};t={}",
                    k.policy.name,
                    k.table.remaining(i % 3, now),
                    seconds_up(k.table.retry_after(i % 3, now, k.policy.limit).unwrap_or(0))
                );
                for (p, g) in &shared.global {
                    want.push_str(&format!(
                        ", \"{}\";r={};t={}",
                        p.name,
                        g.remaining(now),
                        seconds_up(g.retry_after(now, p.limit).unwrap_or(0))
                    ));
                }
                assert_eq!(v.as_bytes(), want.as_bytes(), "value {i}");
                kept.push((v, want));
            }
            for (i, (v, want)) in kept.iter().enumerate() {
                assert_eq!(v.as_bytes(), want.as_bytes(), "kept value {i} changed");
            }
        }
    }

    /// The key's `r` and `t` of an admitted response come from its booking
    /// (`try_acquire_headroom`), not from a look at its gate: they must be
    /// what a look answers.
    #[test]
    fn an_admitted_t_is_the_gates_time_until_the_whole_quota_is_back() {
        let key_policy = policy("key", 3, 2_000);
        let per_key = PerKey {
            table: make_table(64, window_of(&key_policy), &key_policy).unwrap(),
            policy: key_policy,
            key: Key::peer_ip(),
            hasher: KeyHasher::new(),
            refused: std::sync::atomic::AtomicU64::new(0),
        };
        let global = [policy("short", 5, 1_000), policy("long", 40, 6_000)]
            .into_iter()
            .map(|p| {
                let g = Gate::new(window_of(&p), p.limit).with_occupy_timeout(0);
                (p, g)
            })
            .collect();
        let shared = Shared::new(
            Some(per_key),
            global,
            Mode::Refuse,
            false,
            AdmittedFields::RateLimit,
        );
        // Times over 60 s: steps from 1 µs to 0.8 s (a pseudo-random walk),
        // two keys; every admission compared.
        let (mut now, mut x, mut admitted) = (0u64, 1u64, 0);
        for _ in 0..5_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            now += (x >> 33) % 800_000 + 1;
            let key = Some((x >> 20) & 1);
            if let Ok(left) = shared.decide(key, now) {
                admitted += 1;
                assert_eq!(
                    shared.ratelimit(key, now, left),
                    shared.ratelimit(key, now, None),
                    "at {now} µs"
                );
            }
        }
        assert!(admitted > 1_000, "only {admitted} admitted");
    }
}
