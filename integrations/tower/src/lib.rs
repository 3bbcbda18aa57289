//! A tower rate-limit layer on [leaparray](https://docs.rs/leaparray): exact
//! sliding windows per key (`leaparray::KeyedGate`, fixed memory) and
//! global (`leaparray::Gate`, several at once through
//! `leaparray::GateSet`), **shared by every clone** of the service.
//! Refusals are `429 Too Many Requests` with `Retry-After` and the IETF
//! `RateLimit-Policy` / `RateLimit` fields; or requests wait for their turn.
//!
//! ```
//! use std::time::Duration;
//! use leaparray_tower::{Key, RateLimitLayer};
//!
//! let layer = RateLimitLayer::builder()
//!     // IPv4 per address, IPv6 per /64: keys a client cannot mint for free.
//!     .per_key("per-key", 100, Duration::from_secs(1), Key::peer_ip())
//!     .global("global", 10_000, Duration::from_secs(1))
//!     .build()
//!     .expect("a valid configuration");
//! // `let app = axum::Router::new().route("/", get(handler)).layer(layer);`
//! # let _ = layer;
//! ```
//!
//! # Time
//!
//! One [`LayerClock`] (quanta's time-stamp counter) in microseconds, read
//! once per request (and once more per retry of a waiting request). Each limit of
//! `q` per interval `w` is kept in [`WINDOWS`] windows of `w / 2`: no span
//! of two consecutive windows ever admits more than `q`.
//!
//! # Order of the checks
//!
//! A request is checked against its key's limit and every global limit
//! without booking anything (so a request that one of them refuses spends
//! nothing anywhere), then booked in its key's gate, then in the global
//! gates together (a `GateSet`: all or nothing). The key's permit is not
//! returned when the global set then refuses: that happens only when
//! another request took the last global permit between the check and the
//! booking, and it costs that key one permit of the interval (a later
//! request of the key may be refused where it would not have been). This
//! order puts the cost of a race on the key that raced: with the global
//! booking first, a key at its limit hammering from many connections
//! would spend global permits that its own refusals then waste.
//!
//! # Headers
//!
//! draft-ietf-httpapi-ratelimit-headers-10 syntax, one list member per
//! policy: `RateLimit: "per-key";r=99;t=1, "global";r=9999;t=1` on every
//! response, `r` the permits left now, `t` the whole seconds (rounded up)
//! until the policy's whole quota is back; and `RateLimit-Policy:
//! "per-key";q=100;w=1, "global";q=10000;w=1` on every refusal (and every
//! response with [`AdmittedFields::Both`]; neither field on admitted
//! responses with [`AdmittedFields::None`]: see
//! [`Builder::admitted_fields`]). `w` is an integer of seconds in the
//! draft (and optional): a member states it only for an interval of whole
//! seconds (2 per 100 ms reads `"name";q=2`). A refusal adds
//! `Retry-After`: the whole seconds, rounded up, until one more request
//! would pass if nothing else arrived (the gates' `retry_after`), so a
//! client that honours it is admitted (when nothing else arrived), except
//! for a new key of a per-key table under `Overflow::Evict` whose
//! insertion evicts: there `retry_after` is a lower bound (the eviction
//! may add its victim's counts to the key's estimate).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod clock;
mod config;
mod limits;
mod service;

pub use clock::LayerClock;
pub use config::{
    AdmittedFields, ConfigError, Key, Mode, ProxyHeader, DEFAULT_CAPACITY, DEFAULT_V6_PREFIX,
    MAX_GLOBAL, WINDOWS,
};
pub use service::{Admission, BoxFuture, Builder, RateLimit, RateLimitLayer, ResponseFuture};
