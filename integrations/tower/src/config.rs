//! What a [`RateLimitLayer`](crate::RateLimitLayer) is built from: the
//! limits, the key, the mode, and the errors of a bad configuration.

use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{HeaderName, Request};
use leaparray::keyed::{Headroom, KeyHasher};
use leaparray::Decision;
use leaparray::KeyedGate;

/// Windows per interval, in every gate of the crate: a limit "per second"
/// is kept in 2 windows of 500 ms (a per-key limit of up to 32,767 per
/// interval; see the README for what a span that cuts a window can hold).
///
/// ```
/// assert_eq!(leaparray_tower::WINDOWS, 2);
/// ```
pub const WINDOWS: usize = 2;

/// The largest number of global limits (they are checked together, all
/// or nothing, as one `leaparray::GateSet`).
///
/// ```
/// use std::time::Duration;
/// use leaparray_tower::{ConfigError, RateLimitLayer, MAX_GLOBAL};
/// let s = Duration::from_secs(1);
/// let b = (0..=MAX_GLOBAL).fold(RateLimitLayer::builder(), |b, i| b.global(&format!("g{i}"), 1, s));
/// assert_eq!(b.build().unwrap_err(), ConfigError::TooManyGlobal);
/// ```
pub const MAX_GLOBAL: usize = 4;

/// The key table's default capacity: keys tracked at a time (16 bytes each).
///
/// ```
/// assert_eq!(leaparray_tower::DEFAULT_CAPACITY * 16, 256 * 1024); // bytes
/// ```
pub const DEFAULT_CAPACITY: usize = 16_384;

/// What a waiting request may do: see [`Builder::mode`](crate::Builder::mode).
///
/// ```
/// use std::time::Duration;
/// use leaparray_tower::Mode;
/// assert_eq!(Mode::default(), Mode::Refuse);
/// let wait = Mode::Wait { max_waiting: 64, max_delay: Duration::from_secs(2) };
/// assert_ne!(wait, Mode::Refuse);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Answer `429 Too Many Requests` at once (the default).
    #[default]
    Refuse,
    /// Hold the request (a tokio timer) until its `retry_after`, then try
    /// again, as long as no more than `max_waiting` requests wait at once
    /// and the next try is no more than `max_delay` away; otherwise `429`.
    Wait {
        /// The most requests waiting at once (a request over it gets 429).
        max_waiting: usize,
        /// The longest single wait (a longer `retry_after` gets 429).
        max_delay: Duration,
    },
}

/// The fields an admitted response carries: see
/// [`Builder::admitted_fields`](crate::Builder::admitted_fields). A
/// refusal always carries both.
///
/// ```
/// use leaparray_tower::AdmittedFields;
/// assert_eq!(AdmittedFields::default(), AdmittedFields::RateLimit);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AdmittedFields {
    /// Neither: only refusals carry the fields.
    None,
    /// `RateLimit` (the default): per policy, what is left now and when
    /// the whole quota is back.
    #[default]
    RateLimit,
    /// `RateLimit-Policy` as well, the same on every response (the draft:
    /// it "SHOULD remain consistent over a sequence of HTTP responses"; a
    /// client learns it from any refusal).
    Both,
}

/// Which key a request is counted under, for the per-key limit.
///
/// A request with no key (no such header, no peer address, the function
/// returned `None`) counts under one shared "keyless" key: keyless
/// requests share one limit rather than escaping it.
///
/// ```
/// use leaparray_tower::Key;
/// let by_ip = Key::peer_ip();
/// let by_token = Key::header(http::HeaderName::from_static("x-api-key"));
/// let by_path = Key::function(|parts| Some(parts.uri.path().len() as u64));
/// # let _ = (by_ip, by_token, by_path);
/// ```
#[derive(Clone)]
pub struct Key(KeyKind);

/// A user's key function.
type KeyFn = Arc<dyn Fn(&Parts) -> Option<u64> + Send + Sync>;

#[derive(Clone)]
enum KeyKind {
    PeerIp,
    Header(HeaderName),
    Function(KeyFn),
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            KeyKind::PeerIp => f.write_str("Key::PeerIp"),
            KeyKind::Header(h) => write!(f, "Key::Header({h})"),
            KeyKind::Function(_) => f.write_str("Key::Function"),
        }
    }
}

impl Key {
    /// The peer's IP address (not its port): from axum's
    /// `ConnectInfo<SocketAddr>` extension (with this crate's `axum`
    /// feature) or a plain `std::net::SocketAddr` extension (hyper
    /// servers insert one themselves).
    ///
    /// ```
    /// # use leaparray_tower::Key;
    /// let k = Key::peer_ip();
    /// assert_eq!(format!("{k:?}"), "Key::PeerIp");
    /// ```
    #[must_use]
    pub fn peer_ip() -> Self {
        Key(KeyKind::PeerIp)
    }

    /// The value of header `name` (its bytes), e.g. `x-api-key`.
    ///
    /// ```
    /// # use leaparray_tower::Key;
    /// let k = Key::header(http::HeaderName::from_static("x-api-key"));
    /// assert_eq!(format!("{k:?}"), "Key::Header(x-api-key)");
    /// ```
    #[must_use]
    pub fn header(name: HeaderName) -> Self {
        Key(KeyKind::Header(name))
    }

    /// Your function of the request's head. Its `u64` is hashed again with
    /// a random key, so any value (a user id) is fine.
    ///
    /// ```
    /// # use leaparray_tower::Key;
    /// let k = Key::function(|parts| parts.uri.query().map(|q| q.len() as u64));
    /// assert_eq!(format!("{k:?}"), "Key::Function");
    /// ```
    #[must_use]
    pub fn function(f: impl Fn(&Parts) -> Option<u64> + Send + Sync + 'static) -> Self {
        Key(KeyKind::Function(Arc::new(f)))
    }

    /// Whether the key needs the request taken apart ([`Key::function`]
    /// is given the head): the others read it in place.
    pub(crate) fn needs_parts(&self) -> bool {
        matches!(self.0, KeyKind::Function(_))
    }

    /// The request's `u64` key, with the hasher's random key; the keyless
    /// key is hashed apart.
    pub(crate) fn of<B>(&self, req: &Request<B>, hasher: &KeyHasher) -> u64 {
        let found = match &self.0 {
            // The address as one integer, one write to the hasher: a v4
            // address (also v6-mapped, as a dual-stack socket gives it) as
            // 4 bytes, any other v6 as 16. No tag: a layer has one kind of
            // key, and SipHash takes the input's length, so keys of
            // different lengths (and the keyless key, one byte) cannot
            // collide but by chance.
            KeyKind::PeerIp => peer_ip(req.extensions()).map(|ip| ip_key(ip, hasher)),
            KeyKind::Header(name) => req
                .headers()
                .get(name)
                .map(|v| hasher.key(&(1u8, v.as_bytes()))),
            KeyKind::Function(_) => None,
        };
        found.unwrap_or_else(|| hasher.key(&3u8))
    }

    /// The key of a request taken apart: [`Key::function`]'s.
    pub(crate) fn of_parts(&self, parts: &Parts, hasher: &KeyHasher) -> u64 {
        let found = match &self.0 {
            KeyKind::Function(f) => f(parts).map(|k| hasher.key(&(2u8, k))),
            _ => None,
        };
        found.unwrap_or_else(|| hasher.key(&3u8))
    }
}

/// A peer's address as a key: a v4 address (also v6-mapped, as a
/// dual-stack socket gives it) as its 4 bytes, any other v6 as its 16.
fn ip_key(ip: std::net::IpAddr, hasher: &KeyHasher) -> u64 {
    match ip {
        std::net::IpAddr::V4(a) => hasher.key(&u32::from(a)),
        std::net::IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => hasher.key(&u32::from(v4)),
            None => hasher.key(&u128::from(a)),
        },
    }
}
fn peer_ip(extensions: &http::Extensions) -> Option<std::net::IpAddr> {
    #[cfg(feature = "axum")]
    if let Some(axum::extract::ConnectInfo(addr)) =
        extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        return Some(addr.ip());
    }
    extensions
        .get::<std::net::SocketAddr>()
        .map(|addr| addr.ip())
}

/// Why [`Builder::build`](crate::Builder::build) refused its configuration.
///
/// ```
/// use std::time::Duration;
/// use leaparray_tower::{ConfigError, RateLimitLayer};
/// let e = RateLimitLayer::builder().global("g", 0, Duration::from_secs(1)).build().unwrap_err();
/// assert_eq!(e, ConfigError::ZeroLimit { policy: "g".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// No limit at all: the layer would do nothing.
    NoLimits,
    /// A limit of 0 (refuse everything: remove the route instead).
    ZeroLimit {
        /// The policy's name.
        policy: String,
    },
    /// The interval is not a whole, even number of microseconds of at
    /// least 2 µs (it is kept in [`WINDOWS`] windows of whole µs).
    Interval {
        /// The policy's name.
        policy: String,
    },
    /// The limit does not fit: a per-key limit over a key slot's
    /// (`KeyedGate::max_limit`), or a global one over a gate's
    /// (`leaparray::MAX_COUNT`, 2^47 - 1).
    LimitTooLarge {
        /// The policy's name.
        policy: String,
        /// The largest limit of its kind.
        max: u64,
    },
    /// More than [`MAX_GLOBAL`] global limits.
    TooManyGlobal,
    /// A policy name that is empty, or not printable ASCII without `"`
    /// and `\` (it is sent as a structured-field string).
    Name {
        /// The name.
        policy: String,
    },
    /// Two policies with one name.
    DuplicateName {
        /// The name.
        policy: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoLimits => f.write_str("no limit configured"),
            ConfigError::ZeroLimit { policy } => write!(f, "policy {policy:?}: a limit of 0"),
            ConfigError::Interval { policy } => write!(
                f,
                "policy {policy:?}: the interval must be a whole, even number of microseconds (at least 2)"
            ),
            ConfigError::LimitTooLarge { policy, max } => {
                write!(f, "policy {policy:?}: the limit goes up to {max}")
            }
            ConfigError::TooManyGlobal => write!(f, "more than {MAX_GLOBAL} global limits"),
            ConfigError::Name { policy } => write!(
                f,
                "policy name {policy:?}: must be non-empty printable ASCII without '\"' or '\\'"
            ),
            ConfigError::DuplicateName { policy } => write!(f, "policy name {policy:?} used twice"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// One limit as configured: `limit` per `per`.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) name: String,
    pub(crate) limit: u64,
    pub(crate) per: Duration,
}

impl Policy {
    /// The window in µs, or the error.
    pub(crate) fn window(&self) -> Result<NonZeroU64, ConfigError> {
        if self.limit == 0 {
            return Err(ConfigError::ZeroLimit {
                policy: self.name.clone(),
            });
        }
        let bad = || ConfigError::Interval {
            policy: self.name.clone(),
        };
        let micros = u64::try_from(self.per.as_micros()).map_err(|_| bad())?;
        if !self.per.subsec_nanos().is_multiple_of(1_000) || !micros.is_multiple_of(WINDOWS as u64)
        {
            return Err(bad());
        }
        NonZeroU64::new(micros / WINDOWS as u64).ok_or_else(bad)
    }

    pub(crate) fn check_name(&self) -> Result<(), ConfigError> {
        let ok = !self.name.is_empty()
            && self
                .name
                .bytes()
                .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
        if ok {
            Ok(())
        } else {
            Err(ConfigError::Name {
                policy: self.name.clone(),
            })
        }
    }
}

/// A `KeyedGate` of some capacity, behind one type.
pub(crate) trait Table: Send + Sync + fmt::Debug {
    fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision;
    fn try_acquire_headroom(&self, key: u64, now: u64, n: u64) -> (Decision, Headroom);
    fn remaining(&self, key: u64, now: u64) -> u64;
    fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64>;
}

impl<const CAP: usize> Table for KeyedGate<WINDOWS, CAP> {
    fn try_acquire(&self, key: u64, now: u64, n: u64) -> Decision {
        KeyedGate::try_acquire(self, key, now, n)
    }
    fn try_acquire_headroom(&self, key: u64, now: u64, n: u64) -> (Decision, Headroom) {
        KeyedGate::try_acquire_headroom(self, key, now, n)
    }
    fn remaining(&self, key: u64, now: u64) -> u64 {
        KeyedGate::remaining(self, key, now)
    }
    fn retry_after(&self, key: u64, now: u64, n: u64) -> Option<u64> {
        KeyedGate::retry_after(self, key, now, n)
    }
}

/// Builds the key table of capacity `CAP` (on the heap).
pub(crate) type MakeTable = fn(NonZeroU64, &Policy) -> Result<Box<dyn Table>, ConfigError>;

pub(crate) fn make_table<const CAP: usize>(
    window: NonZeroU64,
    policy: &Policy,
) -> Result<Box<dyn Table>, ConfigError> {
    match KeyedGate::<WINDOWS, CAP>::try_new(window, policy.limit) {
        Ok(t) => Ok(Box::new(t)),
        Err(_) => Err(ConfigError::LimitTooLarge {
            policy: policy.name.clone(),
            max: KeyedGate::<WINDOWS, CAP>::max_limit(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use leaparray::keyed::KeyHasher;

    use super::ip_key;

    /// A dual-stack socket gives a v4 client as a v6-mapped address: it must
    /// be the same client as on a v4 socket, and no other.
    #[test]
    fn a_v4_peer_is_one_key_whichever_socket_saw_it() {
        let h = KeyHasher::new();
        let v4 = Ipv4Addr::new(192, 0, 2, 7);
        let k = ip_key(IpAddr::V4(v4), &h);
        assert_eq!(ip_key(IpAddr::V6(v4.to_ipv6_mapped()), &h), k);
        assert_ne!(ip_key(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 8)), &h), k);
        // The v4-compatible form (deprecated, ::a.b.c.d) is a v6 address.
        let v6 = IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0xc000, 0x0207));
        assert_ne!(ip_key(v6, &h), k);
        assert_ne!(ip_key("2001:db8::7".parse().unwrap(), &h), k);
    }
}
