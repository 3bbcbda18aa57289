//! What a [`RateLimitLayer`](crate::RateLimitLayer) is built from: the
//! limits, the key, the mode, and the errors of a bad configuration.

use std::fmt;
use std::net::IpAddr;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{HeaderName, Request};
use leaparray::keyed::{HeapKeyedGate, KeyHasher, KeyedError};

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

/// The key table's default capacity: keys tracked at a time (48 bytes each:
/// the slot and the memory of evicted keys).
///
/// ```
/// use leaparray::KeyedGate;
/// use leaparray_tower::{DEFAULT_CAPACITY, WINDOWS};
/// let bytes = std::mem::size_of::<KeyedGate<WINDOWS, DEFAULT_CAPACITY>>();
/// assert_eq!(bytes / DEFAULT_CAPACITY, 48);
/// assert!(bytes < 769 * 1024); // 768 KiB and the header (on the heap)
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

/// The IPv6 prefix an IP key groups addresses by, by default: one key per
/// /64, the block a single subscriber or host gets (RFC 6177, RFC 7421).
/// IPv4 addresses are keyed one by one.
///
/// ```
/// assert_eq!(leaparray_tower::DEFAULT_V6_PREFIX, 64);
/// ```
pub const DEFAULT_V6_PREFIX: u8 = 64;

/// Which header of the reverse proxies in front of the server carries the
/// client's address: see [`Key::forwarded_ip`].
///
/// ```
/// use leaparray_tower::ProxyHeader;
/// assert_eq!(ProxyHeader::XForwardedFor.name(), "x-forwarded-for");
/// assert_eq!(ProxyHeader::Forwarded.name(), "forwarded");
/// assert_eq!(ProxyHeader::XRealIp.name(), "x-real-ip");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProxyHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`: each proxy appends the
    /// address it was connected from.
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239): each proxy appends
    /// an element; its `for=` parameter is the address.
    Forwarded,
    /// `X-Real-IP: client`: one address, which your nearest proxy sets
    /// (replacing any the client sent): a chain of one.
    XRealIp,
}

impl ProxyHeader {
    /// The header's name, lower case.
    ///
    /// ```
    /// # use leaparray_tower::ProxyHeader;
    /// assert_eq!(ProxyHeader::Forwarded.name(), http::header::FORWARDED.as_str());
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ProxyHeader::XForwardedFor => "x-forwarded-for",
            ProxyHeader::Forwarded => "forwarded",
            ProxyHeader::XRealIp => "x-real-ip",
        }
    }
}

/// Which key a request is counted under, for the per-key limit.
///
/// A request with no key (no such header, no peer address, the function
/// returned `None`) counts under one shared "keyless" key: keyless
/// requests share one limit rather than escaping it.
///
/// A key is only a limit if a client cannot make new ones for free. An
/// IPv4 address costs something; an IPv6 client owns at least a /64
/// (2^64 addresses), so the IP keys group IPv6 addresses by a prefix
/// ([`DEFAULT_V6_PREFIX`], /64; [`Key::v6_prefix`]). An unauthenticated
/// header is whatever the client writes: key on a header only when
/// something upstream has checked it (an API key your authentication
/// layer verified).
///
/// ```
/// use leaparray_tower::{Key, ProxyHeader};
/// let by_ip = Key::peer_ip(); // IPv6 by /64
/// let by_site = Key::peer_ip().v6_prefix(48);
/// let behind_one_proxy = Key::forwarded_ip(ProxyHeader::XForwardedFor, 1);
/// let by_token = Key::header(http::HeaderName::from_static("x-api-key"));
/// let by_path = Key::function(|parts| Some(parts.uri.path().len() as u64));
/// # let _ = (by_ip, by_site, behind_one_proxy, by_token, by_path);
/// ```
#[derive(Clone)]
pub struct Key {
    kind: KeyKind,
    /// The IPv6 prefix of an IP key, in bits, if set (checked by the
    /// builder); [`DEFAULT_V6_PREFIX`] if not.
    v6_prefix: Option<u8>,
}

/// A user's key function.
type KeyFn = Arc<dyn Fn(&Parts) -> Option<u64> + Send + Sync>;

#[derive(Clone)]
enum KeyKind {
    PeerIp,
    Forwarded {
        header: ProxyHeader,
        trusted_proxies: usize,
    },
    Header(HeaderName),
    Function(KeyFn),
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.prefix();
        match &self.kind {
            KeyKind::PeerIp => write!(f, "Key::PeerIp(v6 /{bits})"),
            KeyKind::Forwarded {
                header,
                trusted_proxies,
            } => write!(
                f,
                "Key::ForwardedIp({}, {trusted_proxies} trusted, v6 /{bits})",
                header.name()
            ),
            KeyKind::Header(h) => write!(f, "Key::Header({h})"),
            KeyKind::Function(_) => f.write_str("Key::Function"),
        }
    }
}

impl Key {
    fn of_kind(kind: KeyKind) -> Self {
        Key {
            kind,
            v6_prefix: None,
        }
    }

    /// The IPv6 prefix in bits.
    fn prefix(&self) -> u8 {
        self.v6_prefix.unwrap_or(DEFAULT_V6_PREFIX)
    }

    /// The peer's IP address (not its port): from axum's
    /// `ConnectInfo<SocketAddr>` extension (with this crate's `axum`
    /// feature: serve with `into_make_service_with_connect_info`) or a
    /// plain `std::net::SocketAddr` extension, which a plain hyper server
    /// does not insert: the service that accepts the connection must. A
    /// request with neither has no key, and every such request shares the
    /// one keyless key. IPv4 addresses one by one (an
    /// IPv4-mapped IPv6 address, as a dual-stack socket gives it, is its
    /// IPv4 address); IPv6 addresses by their first
    /// [`DEFAULT_V6_PREFIX`] bits (see [`v6_prefix`](Self::v6_prefix)).
    ///
    /// Behind a reverse proxy every request comes from the proxy: use
    /// [`forwarded_ip`](Self::forwarded_ip).
    ///
    /// ```
    /// # use leaparray_tower::Key;
    /// let k = Key::peer_ip();
    /// assert_eq!(format!("{k:?}"), "Key::PeerIp(v6 /64)");
    /// ```
    #[must_use]
    pub fn peer_ip() -> Self {
        Key::of_kind(KeyKind::PeerIp)
    }

    /// The client's address as your reverse proxies report it in `header`,
    /// given how many of them there are: `trusted_proxies`, the proxies
    /// between the client and this server that each append to `header`
    /// (and the nearest of which is this server's peer). Grouped as
    /// [`peer_ip`](Self::peer_ip) groups (IPv6 by prefix).
    ///
    /// **What is trusted.** Only what your proxies wrote: the last
    /// `trusted_proxies` elements of the header (its lines in order, each
    /// a comma-separated list). The key is the element `trusted_proxies`
    /// from the right: the address your farthest proxy saw its client
    /// connect from. Everything left of it is the client's own writing and
    /// is never read. With 0 trusted proxies the header is not read at
    /// all. When the chain is shorter than `trusted_proxies`, or that
    /// element is not an IP address (`for=unknown`, an obfuscated name),
    /// the key is the peer's address.
    ///
    /// **Why.** A client sends `X-Forwarded-For: 198.51.100.7`; your one
    /// proxy appends the address it saw, `203.0.113.9`: the server gets
    /// `198.51.100.7, 203.0.113.9`. The leftmost address (what
    /// tower_governor's `SmartIpKeyExtractor` takes) is whatever the client
    /// wrote: a new one per request is a new key per request, and no limit.
    /// With `trusted_proxies = 1` the key is `203.0.113.9`. The count must
    /// be exact: one too many reads the client's writing again; one too few
    /// keys every client on a proxy's address. And the server must be
    /// reachable only through the proxies: a client that connects directly
    /// writes the whole chain. [`ProxyHeader::XRealIp`] holds one address:
    /// trust it (`trusted_proxies = 1`) only if your proxy replaces it.
    ///
    /// ```
    /// use leaparray_tower::{Key, ProxyHeader};
    /// let k = Key::forwarded_ip(ProxyHeader::XForwardedFor, 1);
    /// assert_eq!(format!("{k:?}"), "Key::ForwardedIp(x-forwarded-for, 1 trusted, v6 /64)");
    /// ```
    #[must_use]
    pub fn forwarded_ip(header: ProxyHeader, trusted_proxies: usize) -> Self {
        Key::of_kind(KeyKind::Forwarded {
            header,
            trusted_proxies,
        })
    }

    /// The IPv6 prefix, in bits (1 to 128), an IP key
    /// ([`peer_ip`](Self::peer_ip), [`forwarded_ip`](Self::forwarded_ip))
    /// groups addresses by: 128 keys each address alone (one client can
    /// then make 2^64 keys), 48 a whole site. Checked by
    /// [`build`](crate::Builder::build): [`ConfigError::V6Prefix`] for a
    /// prefix out of range or on a key that is not an IP key.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray_tower::{ConfigError, Key, RateLimitLayer};
    /// let k = Key::peer_ip().v6_prefix(56);
    /// assert_eq!(format!("{k:?}"), "Key::PeerIp(v6 /56)");
    /// let e = RateLimitLayer::builder()
    ///     .per_key("ip", 5, Duration::from_secs(1), Key::peer_ip().v6_prefix(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(e, ConfigError::V6Prefix { bits: 0 });
    /// ```
    #[must_use]
    pub fn v6_prefix(mut self, bits: u8) -> Self {
        self.v6_prefix = Some(bits);
        self
    }

    /// The value of header `name` (its bytes), e.g. `x-api-key`. Whatever a
    /// client writes there is a key: use it for a value checked upstream
    /// (an authenticated API key), not for a header anyone can fill.
    ///
    /// ```
    /// # use leaparray_tower::Key;
    /// let k = Key::header(http::HeaderName::from_static("x-api-key"));
    /// assert_eq!(format!("{k:?}"), "Key::Header(x-api-key)");
    /// ```
    #[must_use]
    pub fn header(name: HeaderName) -> Self {
        Key::of_kind(KeyKind::Header(name))
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
        Key::of_kind(KeyKind::Function(Arc::new(f)))
    }

    /// The key's configuration error, if any.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        let ip = matches!(self.kind, KeyKind::PeerIp | KeyKind::Forwarded { .. });
        match self.v6_prefix {
            Some(bits) if !ip || !(1..=128).contains(&bits) => Err(ConfigError::V6Prefix { bits }),
            _ => Ok(()),
        }
    }

    /// Whether the key needs the request taken apart ([`Key::function`]
    /// is given the head): the others read it in place.
    pub(crate) fn needs_parts(&self) -> bool {
        matches!(self.kind, KeyKind::Function(_))
    }

    /// The request's `u64` key, with the hasher's random key; the keyless
    /// key is hashed apart.
    pub(crate) fn of<B>(&self, req: &Request<B>, hasher: &KeyHasher) -> u64 {
        let found = match &self.kind {
            // The address as one integer, one write to the hasher: see
            // `ip_key`. No tag: a layer has one kind of key, and SipHash
            // takes the input's length, so keys of different lengths (and
            // the keyless key, one byte) cannot collide but by chance.
            KeyKind::PeerIp => {
                peer_ip(req.extensions()).map(|ip| ip_key(ip, self.prefix(), hasher))
            }
            KeyKind::Forwarded {
                header,
                trusted_proxies,
            } => forwarded(req.headers(), *header, *trusted_proxies)
                .or_else(|| peer_ip(req.extensions()))
                .map(|ip| ip_key(ip, self.prefix(), hasher)),
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
        let found = match &self.kind {
            KeyKind::Function(f) => f(parts).map(|k| hasher.key(&(2u8, k))),
            _ => None,
        };
        found.unwrap_or_else(|| hasher.key(&3u8))
    }
}

/// A client's address as a key: an IPv4 address (also IPv4-mapped IPv6, as
/// a dual-stack socket gives it) as its 4 bytes; any other IPv6 address as
/// its 16 bytes with all but the first `v6_prefix` bits (1 to 128) zeroed.
fn ip_key(ip: IpAddr, v6_prefix: u8, hasher: &KeyHasher) -> u64 {
    match ip {
        IpAddr::V4(a) => hasher.key(&u32::from(a)),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => hasher.key(&u32::from(v4)),
            None => {
                // 1 to 128 bits (checked by the builder): a shift of 0 to 127.
                let mask = u128::MAX << (128 - u32::from(v6_prefix.clamp(1, 128)));
                hasher.key(&(u128::from(a) & mask))
            }
        },
    }
}

fn peer_ip(extensions: &http::Extensions) -> Option<IpAddr> {
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

/// The address `trusted` elements from the right of `header`'s chain (its
/// lines in order, each a comma-separated list), if the chain is that long
/// and that element is an address; `None` with 0 trusted proxies.
///
/// By hand, from the right, rather than with a parser of the whole field
/// (`forwarded-header-value`): the left part is the client's writing, and
/// a client must not be able to make the field unparseable (an unclosed
/// quote, a bad element) and so change what the proxies' part means. Only
/// the proxies' elements are looked at; the client's are skipped as bytes.
fn forwarded(headers: &http::HeaderMap, header: ProxyHeader, trusted: usize) -> Option<IpAddr> {
    if trusted == 0 {
        return None;
    }
    let mut seen = 0;
    for line in headers.get_all(header.name()).iter().rev() {
        for element in line.as_bytes().rsplit(|&b| b == b',') {
            let element = element.trim_ascii();
            // An empty list element (`a,,b`) is no element (RFC 9110 5.6.1).
            if element.is_empty() {
                continue;
            }
            seen += 1;
            if seen == trusted {
                let element = std::str::from_utf8(element).ok()?;
                return match header {
                    ProxyHeader::Forwarded => forwarded_for(element).and_then(node_ip),
                    ProxyHeader::XForwardedFor | ProxyHeader::XRealIp => node_ip(element),
                };
            }
        }
    }
    None
}

/// The `for=` value of one `Forwarded` element (`for=a;proto=https`).
fn forwarded_for(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then(|| value.trim().trim_matches('"'))
    })
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`,
/// `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:4711`.
fn node_ip(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sa) = s.parse::<std::net::SocketAddr>() {
        return Some(sa.ip());
    }
    s.strip_prefix('[')?
        .strip_suffix(']')?
        .parse::<std::net::Ipv6Addr>()
        .ok()
        .map(IpAddr::V6)
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
    /// An IPv6 prefix ([`Key::v6_prefix`]) not of 1 to 128 bits, or on a key
    /// that is not an IP key.
    V6Prefix {
        /// The prefix asked for.
        bits: u8,
    },
    /// A per-key table of no slots, or one that could not be allocated
    /// (48 bytes a slot).
    Capacity {
        /// The per-key policy.
        policy: String,
        /// The capacity asked for.
        capacity: usize,
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
            ConfigError::V6Prefix { bits } => write!(
                f,
                "an IPv6 prefix of {bits} bits: it must be 1 to 128, on Key::peer_ip or Key::forwarded_ip"
            ),
            ConfigError::Capacity { policy, capacity } => write!(
                f,
                "policy {policy:?}: a key table of {capacity} slots (at least 1, 48 bytes each, allocated at once)"
            ),
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

/// The per-key table: `capacity` keys on the heap (built slot by slot,
/// on no stack), for `policy`'s limit.
pub(crate) fn make_table(
    capacity: usize,
    window: NonZeroU64,
    policy: &Policy,
) -> Result<HeapKeyedGate<WINDOWS>, ConfigError> {
    HeapKeyedGate::try_new(capacity, window, policy.limit).map_err(|e| match e {
        KeyedError::LimitTooLarge { max } => ConfigError::LimitTooLarge {
            policy: policy.name.clone(),
            max,
        },
        _ => ConfigError::Capacity {
            policy: policy.name.clone(),
            capacity,
        },
    })
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use http::{HeaderMap, HeaderValue};
    use leaparray::keyed::KeyHasher;

    use super::{forwarded, ip_key, ProxyHeader, DEFAULT_V6_PREFIX};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A dual-stack socket gives a v4 client as a v6-mapped address: it must
    /// be the same client as on a v4 socket, and no other; IPv4 addresses
    /// are keyed one by one whatever the IPv6 prefix.
    #[test]
    fn a_v4_peer_is_one_key_whichever_socket_saw_it() {
        let h = KeyHasher::new();
        for bits in [1, 48, DEFAULT_V6_PREFIX, 128] {
            let v4 = Ipv4Addr::new(192, 0, 2, 7);
            let k = ip_key(IpAddr::V4(v4), bits, &h);
            assert_eq!(ip_key(IpAddr::V6(v4.to_ipv6_mapped()), bits, &h), k);
            assert_ne!(ip_key(ip("192.0.2.8"), bits, &h), k);
            assert_ne!(ip_key(ip("::ffff:192.0.2.8"), bits, &h), k);
            // The v4-compatible form (deprecated, ::a.b.c.d) is a v6 address.
            let v6 = IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0xc000, 0x0207));
            assert_ne!(ip_key(v6, bits, &h), k);
            assert_ne!(ip_key(ip("2001:db8::7"), bits, &h), k);
        }
    }

    /// One IPv6 client owns a /64: any address in it is the same key, by
    /// default; the next /64 is another key; the prefix is configurable.
    #[test]
    fn ipv6_addresses_are_grouped_by_their_prefix() {
        let h = KeyHasher::new();
        let k = |s: &str, bits| ip_key(ip(s), bits, &h);
        let d = DEFAULT_V6_PREFIX;
        assert_eq!(
            k("2001:db8:1:2::1", d),
            k("2001:db8:1:2:ffff:ffff:ffff:ffff", d)
        );
        assert_eq!(k("2001:db8:1:2::1", d), k("2001:db8:1:2:8000::", d));
        assert_ne!(k("2001:db8:1:2::1", d), k("2001:db8:1:3::1", d));
        // The last bit of the prefix counts.
        assert_ne!(k("2001:db8:1:2::1", d), k("2001:db8:1:3::1", d));
        assert_ne!(k("2001:db8::", 48), k("2001:db9::", 48));
        assert_eq!(k("2001:db8:0:1::", 48), k("2001:db8:0:ffff::", 48));
        assert_ne!(k("2001:db8:0:1::", 64), k("2001:db8:0:ffff::", 64));
        // /128: every address alone.
        assert_ne!(k("2001:db8::1", 128), k("2001:db8::2", 128));
        assert_eq!(k("2001:db8::1", 128), k("2001:db8::1", 128));
        // /1: two halves of the space.
        assert_eq!(k("2001::", 1), k("7fff::", 1));
        assert_ne!(k("2001::", 1), k("8001::", 1));
    }

    fn headers(name: &str, lines: &[&str]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for l in lines {
            m.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(l).unwrap(),
            );
        }
        m
    }

    /// The element `trusted` from the right, over every line in order;
    /// nothing with 0 trusted proxies or a chain too short.
    #[test]
    fn x_forwarded_for_is_read_from_the_right() {
        let xff = ProxyHeader::XForwardedFor;
        let m = headers("x-forwarded-for", &["198.51.100.7, 203.0.113.9"]);
        assert_eq!(forwarded(&m, xff, 0), None);
        assert_eq!(forwarded(&m, xff, 1), Some(ip("203.0.113.9")));
        assert_eq!(forwarded(&m, xff, 2), Some(ip("198.51.100.7")));
        assert_eq!(forwarded(&m, xff, 3), None);
        // Lines are one list, in order; empty elements are none.
        let m = headers(
            "x-forwarded-for",
            &["1.1.1.1,, 2.2.2.2", "[2001:db8::5]:443 ,", "192.0.2.1:80"],
        );
        assert_eq!(forwarded(&m, xff, 1), Some(ip("192.0.2.1")));
        assert_eq!(forwarded(&m, xff, 2), Some(ip("2001:db8::5")));
        assert_eq!(forwarded(&m, xff, 3), Some(ip("2.2.2.2")));
        assert_eq!(forwarded(&m, xff, 4), Some(ip("1.1.1.1")));
        // Another header is not read.
        assert_eq!(forwarded(&m, ProxyHeader::Forwarded, 1), None);
        // The client's garbage on the left changes nothing on the right.
        let m = headers("x-forwarded-for", &["\"unclosed, ;for=[, 2001:db8::9"]);
        assert_eq!(forwarded(&m, xff, 1), Some(ip("2001:db8::9")));
        // A trusted element that is no address: nothing (the peer is used).
        let m = headers("x-forwarded-for", &["1.1.1.1, unknown"]);
        assert_eq!(forwarded(&m, xff, 1), None);
    }

    #[test]
    fn forwarded_for_is_read_from_the_right() {
        let f = ProxyHeader::Forwarded;
        let m = headers(
            "forwarded",
            &[
                "for=1.1.1.1;host=\"a, for=6.6.6.6\"",
                "For=\"[2001:db8:cafe::17]:4711\";proto=https, by=10.0.0.1;for=192.0.2.60",
            ],
        );
        assert_eq!(forwarded(&m, f, 1), Some(ip("192.0.2.60")));
        assert_eq!(forwarded(&m, f, 2), Some(ip("2001:db8:cafe::17")));
        let m = headers("forwarded", &["for=192.0.2.43, for=unknown", "for=_hidden"]);
        assert_eq!(forwarded(&m, f, 1), None);
        assert_eq!(forwarded(&m, f, 2), None);
        assert_eq!(forwarded(&m, f, 3), Some(ip("192.0.2.43")));
    }

    #[test]
    fn x_real_ip_is_a_chain_of_one() {
        let r = ProxyHeader::XRealIp;
        let m = headers("x-real-ip", &["2001:db8::3"]);
        assert_eq!(forwarded(&m, r, 0), None);
        assert_eq!(forwarded(&m, r, 1), Some(ip("2001:db8::3")));
        assert_eq!(forwarded(&m, r, 2), None);
    }
}
