//! The tower_governor recipe (README, "From tower_governor"): each
//! `GovernorConfigBuilder` option beside its leaparray-tower equivalent,
//! built the way a tower_governor 0.8 user builds theirs and driven with the
//! same requests. Where the two agree, the test checks they answer alike;
//! where they differ by design (which address a proxy chain yields, which
//! header fields), it checks the difference the README states.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use leaparray_tower::{Key, ProxyHeader, RateLimitLayer};
use tower::{Layer, Service, ServiceExt};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, KeyExtractor, SmartIpKeyExtractor};
use tower_governor::{GovernorError, GovernorLayer};

/// The handler both limiters wrap.
fn hello(
) -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future = impl Send>
       + Clone
       + Send
       + 'static {
    tower::service_fn(|_req: Request<Body>| async { Ok(Response::new(Body::from("hello"))) })
}

/// A request from `peer` (axum's `ConnectInfo`, as
/// `into_make_service_with_connect_info` inserts it), with an
/// `X-Forwarded-For` if given.
fn req(method: Method, peer: [u8; 4], xff: Option<&str>) -> Request<Body> {
    let mut r = Request::builder().method(method).uri("/");
    if let Some(v) = xff {
        r = r.header("x-forwarded-for", v);
    }
    let mut r = r.body(Body::empty()).unwrap();
    r.extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((peer, 5000))));
    r
}

/// The status and headers of one request through a clone of `svc`.
async fn call<S>(svc: &S, r: Request<Body>) -> (u16, HeaderMap)
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone,
    S::Error: std::fmt::Debug,
{
    let res = svc.clone().oneshot(r).await.unwrap();
    (res.status().as_u16(), res.headers().clone())
}

/// The statuses of `reqs` in order.
async fn statuses<S>(svc: &S, reqs: impl IntoIterator<Item = Request<Body>>) -> Vec<u16>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone,
    S::Error: std::fmt::Debug,
{
    let mut out = Vec::new();
    for r in reqs {
        out.push(call(svc, r).await.0);
    }
    out
}

/// Four requests from one address, then one from another.
fn four_then_other() -> Vec<Request<Body>> {
    let mut v: Vec<_> = (0..4)
        .map(|_| req(Method::GET, [192, 0, 2, 1], None))
        .collect();
    v.push(req(Method::GET, [192, 0, 2, 2], None));
    v
}

/// `per_second(2).burst_size(3)` (one request back every 2 s, 3 at once)
/// is `per_key(name, 3, 3 * 2 s, Key::peer_ip().v6_prefix(128))`: the
/// burst, then a refusal, each address on its own.
#[tokio::test]
async fn per_second_and_burst_size() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(3)
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config).layer(hello());
    let ours = RateLimitLayer::builder()
        .per_key(
            "per-ip",
            3,
            Duration::from_secs(3 * 2),
            Key::peer_ip().v6_prefix(128),
        )
        .build()
        .unwrap()
        .layer(hello());
    let expected = [200, 200, 200, 429, 200];
    assert_eq!(statuses(&theirs, four_then_other()).await, expected);
    assert_eq!(statuses(&ours, four_then_other()).await, expected);
}

/// `per_millisecond(500).burst_size(8)` (tower_governor's default) is
/// `per_key(name, 8, 8 * 500 ms, Key::peer_ip())`.
#[tokio::test]
async fn per_millisecond_the_default() {
    let theirs =
        GovernorLayer::new(GovernorConfigBuilder::default().finish().unwrap()).layer(hello());
    let ours = RateLimitLayer::builder()
        .per_key("per-ip", 8, Duration::from_millis(8 * 500), Key::peer_ip())
        .build()
        .unwrap()
        .layer(hello());
    let reqs = || (0..9).map(|_| req(Method::GET, [192, 0, 2, 1], None));
    let mut expected = vec![200; 8];
    expected.push(429);
    assert_eq!(statuses(&theirs, reqs()).await, expected);
    assert_eq!(statuses(&ours, reqs()).await, expected);
}

/// `key_extractor(GlobalKeyExtractor)` is `.global(name, limit, per)`: one
/// limit for every client together.
#[tokio::test]
async fn global_key_extractor() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(3)
        .key_extractor(GlobalKeyExtractor)
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config).layer(hello());
    let ours = RateLimitLayer::builder()
        .global("global", 3, Duration::from_secs(3 * 2))
        .build()
        .unwrap()
        .layer(hello());
    let reqs = || (1..=4).map(|i| req(Method::GET, [192, 0, 2, i], None));
    assert_eq!(statuses(&theirs, reqs()).await, [200, 200, 200, 429]);
    assert_eq!(statuses(&ours, reqs()).await, [200, 200, 200, 429]);
}

/// `key_extractor(SmartIpKeyExtractor)` behind one proxy is
/// `Key::forwarded_ip(ProxyHeader::XForwardedFor, 1)`. They agree for an
/// honest client; a client that writes a new address into the header on
/// each request gets a new key from `SmartIpKeyExtractor` (the leftmost
/// address) and none from `forwarded_ip` (the address the proxy appended).
#[tokio::test]
async fn smart_ip_key_extractor() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(2)
        .key_extractor(SmartIpKeyExtractor)
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config).layer(hello());
    let ours = RateLimitLayer::builder()
        .per_key(
            "client",
            2,
            Duration::from_secs(2 * 2),
            Key::forwarded_ip(ProxyHeader::XForwardedFor, 1),
        )
        .build()
        .unwrap()
        .layer(hello());
    let proxy = [10, 0, 0, 9];
    // An honest client: the proxy appends the address it saw.
    let honest = || (0..3).map(|_| req(Method::GET, proxy, Some("198.51.100.7")));
    assert_eq!(statuses(&theirs, honest()).await, [200, 200, 429]);
    assert_eq!(statuses(&ours, honest()).await, [200, 200, 429]);
    // A client that writes its own left part, a new one each time.
    let spoofing = || {
        (1..=4).map(|i| {
            req(
                Method::GET,
                proxy,
                Some(&format!("203.0.113.{i}, 198.51.100.8")),
            )
        })
    };
    assert_eq!(statuses(&theirs, spoofing()).await, [200, 200, 200, 200]);
    assert_eq!(statuses(&ours, spoofing()).await, [200, 200, 429, 429]);
}

/// A custom `KeyExtractor` reading a header is `Key::header(name)` (or
/// `Key::function` for anything else of the request's head).
#[tokio::test]
async fn custom_key_extractor() {
    #[derive(Clone)]
    struct ApiKey;
    impl KeyExtractor for ApiKey {
        type Key = String;
        fn extract<T>(&self, req: &Request<T>) -> Result<String, GovernorError> {
            req.headers()
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .ok_or(GovernorError::UnableToExtractKey)
        }
    }
    let config = GovernorConfigBuilder::default()
        .per_second(1)
        .burst_size(2)
        .key_extractor(ApiKey)
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config).layer(hello());
    let ours = RateLimitLayer::builder()
        .per_key(
            "api-key",
            2,
            Duration::from_secs(2),
            Key::header(http::HeaderName::from_static("x-api-key")),
        )
        .build()
        .unwrap()
        .layer(hello());
    let with_key = |k: &str| {
        let mut r = req(Method::GET, [192, 0, 2, 1], None);
        r.headers_mut().insert("x-api-key", k.parse().unwrap());
        r
    };
    let reqs = || vec![with_key("a"), with_key("a"), with_key("a"), with_key("b")];
    assert_eq!(statuses(&theirs, reqs()).await, [200, 200, 429, 200]);
    assert_eq!(statuses(&ours, reqs()).await, [200, 200, 429, 200]);
}

/// `use_headers()`: tower_governor's `x-ratelimit-limit` and
/// `x-ratelimit-remaining` on admitted responses are leaparray-tower's
/// `RateLimit` field (on by default; `AdmittedFields::Both` adds
/// `RateLimit-Policy`). A refusal carries `retry-after` in both.
#[tokio::test]
async fn use_headers() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(2)
        .use_headers()
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config).layer(hello());
    let ours = RateLimitLayer::builder()
        .per_key("per-ip", 2, Duration::from_secs(2 * 2), Key::peer_ip())
        .build()
        .unwrap()
        .layer(hello());
    let ip = [192, 0, 2, 1];
    let (s, h) = call(&theirs, req(Method::GET, ip, None)).await;
    assert_eq!(
        (s, &h["x-ratelimit-limit"], &h["x-ratelimit-remaining"]),
        (200, &"2".parse().unwrap(), &"1".parse().unwrap())
    );
    let (s, h) = call(&ours, req(Method::GET, ip, None)).await;
    assert_eq!(
        (s, h["ratelimit"].to_str().unwrap()),
        (200, "\"per-ip\";r=1;t=4")
    );
    for svc_refusal in [
        {
            let _ = call(&theirs, req(Method::GET, ip, None)).await;
            call(&theirs, req(Method::GET, ip, None)).await
        },
        {
            let _ = call(&ours, req(Method::GET, ip, None)).await;
            call(&ours, req(Method::GET, ip, None)).await
        },
    ] {
        let (s, h) = svc_refusal;
        assert_eq!(s, 429);
        assert!(h.contains_key("retry-after"), "{h:?}");
    }
}

/// `methods(vec![Method::POST])` (only POST limited) is the layer on the
/// POST route alone: axum's `post(h).layer(limits).get(h)` (the layer
/// wraps what the method router held when it was applied).
#[tokio::test]
async fn methods() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(2)
        .methods(vec![Method::POST])
        .finish()
        .unwrap();
    let handler = || async { "hello" };
    let theirs = axum::Router::new()
        .route("/", axum::routing::post(handler).get(handler))
        .layer(GovernorLayer::new(config));
    let limits = RateLimitLayer::builder()
        .per_key("per-ip", 2, Duration::from_secs(2 * 2), Key::peer_ip())
        .build()
        .unwrap();
    let ours =
        axum::Router::new().route("/", axum::routing::post(handler).layer(limits).get(handler));
    let reqs = |m: Method| (0..3).map(move |_| req(m.clone(), [192, 0, 2, 1], None));
    for (name, gets, posts) in [
        (
            "tower_governor",
            statuses(&theirs, reqs(Method::GET)).await,
            statuses(&theirs, reqs(Method::POST)).await,
        ),
        (
            "leaparray-tower",
            statuses(&ours, reqs(Method::GET)).await,
            statuses(&ours, reqs(Method::POST)).await,
        ),
    ] {
        assert_eq!(
            (name, gets, posts),
            (name, vec![200, 200, 200], vec![200, 200, 429])
        );
    }
}

/// `GovernorLayer::error_handler(f)` is a response map around the layer:
/// tower's `ServiceBuilder::map_response` (or axum's
/// `middleware::map_response`) on a 429.
#[tokio::test]
async fn error_handler() {
    let config = GovernorConfigBuilder::default()
        .per_second(2)
        .burst_size(1)
        .finish()
        .unwrap();
    let theirs = GovernorLayer::new(config)
        .error_handler(|_e: GovernorError| {
            Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .body(Body::from("slow down"))
                .unwrap()
        })
        .layer(hello());
    let limits = RateLimitLayer::builder()
        .per_key("per-ip", 1, Duration::from_secs(2), Key::peer_ip())
        .build()
        .unwrap();
    let ours = tower::ServiceBuilder::new()
        .map_response(|r: Response<Body>| {
            if r.status() == StatusCode::TOO_MANY_REQUESTS {
                let (mut parts, _) = r.into_parts();
                parts.status = StatusCode::SERVICE_UNAVAILABLE;
                Response::from_parts(parts, Body::from("slow down"))
            } else {
                r
            }
        })
        .layer(limits)
        .service(hello());
    let reqs = || (0..2).map(|_| req(Method::GET, [192, 0, 2, 1], None));
    assert_eq!(statuses(&theirs, reqs()).await, [200, 503]);
    assert_eq!(statuses(&ours, reqs()).await, [200, 503]);
}
