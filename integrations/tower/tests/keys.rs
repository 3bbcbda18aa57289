//! Keys a flood cannot mint for free, the state a dashboard shows, and the
//! policy field of intervals that are not whole seconds. The proxy test
//! runs a real axum server on a loopback port; the others call the
//! service directly.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leaparray::export::Exposition;
use leaparray_tower::{AdmittedFields, ConfigError, Key, ProxyHeader, RateLimitLayer};
use tower::{Layer, ServiceExt};

/// Calls a fresh service of `layer` with `X-Forwarded-For: xff` (no peer
/// address: the header alone is the key), and answers the status.
async fn call(layer: &RateLimitLayer, xff: &str) -> StatusCode {
    let svc = layer.layer(tower::service_fn(|_req: Request<()>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    }));
    let req = Request::get("/")
        .header("x-forwarded-for", xff)
        .body(())
        .unwrap();
    svc.oneshot(req).await.unwrap().status()
}

/// Behind one proxy, the client writes the left of `X-Forwarded-For` and
/// the proxy appends the address it saw: a new left part per request is
/// not a new key. A request with no header is keyed on its peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoofed_forwarded_for_is_not_a_new_key() {
    let layer = RateLimitLayer::builder()
        .per_key(
            "client",
            2,
            Duration::from_secs(60),
            Key::forwarded_ip(ProxyHeader::XForwardedFor, 1),
        )
        .build()
        .unwrap();
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    let c = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let get = |xff: Option<String>| {
        let mut req = Request::get(format!("http://{addr}/"));
        if let Some(v) = xff {
            req = req.header("x-forwarded-for", v);
        }
        let c = c.clone();
        async move {
            c.request(req.body(Empty::new()).unwrap())
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let mut statuses = Vec::new();
    for i in 0..4 {
        statuses.push(get(Some(format!("10.9.8.{i}, 203.0.113.9"))).await);
    }
    assert_eq!(
        statuses,
        [200, 200, 429, 429],
        "one client behind the proxy"
    );
    // Another client of the proxy; the peer (127.0.0.1) without a header.
    assert_eq!(get(Some("203.0.113.10".into())).await, 200);
    assert_eq!(get(None).await, 200);
    assert_eq!(get(None).await, 200);
    assert_eq!(get(None).await, 429);
    server.abort();
}

/// A flood of addresses: from one IPv6 /64 it is one key; from many IPv4
/// addresses it fills the table, and both show in the exposition.
#[tokio::test]
async fn a_flood_shows_in_the_exposition() {
    let layer = RateLimitLayer::builder()
        .per_key_with_capacity(
            "client",
            5,
            Duration::from_secs(60),
            Key::forwarded_ip(ProxyHeader::XForwardedFor, 1),
            64,
        )
        .global("all", 1_000_000, Duration::from_secs(60))
        .build()
        .unwrap();
    let mut refused = 0;
    for i in 0..200u32 {
        let ip = format!("2001:db8:7:7:{:x}:{:x}::1", (i * 331) % 0x1_0000, i);
        if call(&layer, &ip).await == StatusCode::TOO_MANY_REQUESTS {
            refused += 1;
        }
    }
    assert_eq!(refused, 195, "one /64 is one key of 5 per minute");
    let occ = layer.occupancy().unwrap();
    assert_eq!((occ.resident, occ.overflowed), (1, 0));
    assert_eq!(layer.refused(), 195);

    for i in 0..200u32 {
        let ip = format!("198.51.{}.{}", i / 100, i % 100);
        if call(&layer, &ip).await == StatusCode::TOO_MANY_REQUESTS {
            refused += 1;
        }
    }
    let occ = layer.occupancy().unwrap();
    assert!(occ.resident <= 64, "{occ:?}");
    // The table evicts by default: new keys take the least-demanded slots
    // (one request each is within their limit) and pass.
    assert!(occ.evicted > 0, "{occ:?}");
    assert_eq!(refused, 195, "new keys without room evicted and passed");
    assert_eq!(layer.refused(), refused);

    let mut e = Exposition::new("api").unwrap();
    layer.export(&mut e).unwrap();
    let text = e.to_string();
    for line in [
        "api_keyed_capacity{resource=\"client\"} 64\n".to_string(),
        format!(
            "api_keyed_resident{{resource=\"client\"}} {}\n",
            occ.resident
        ),
        format!(
            "api_keyed_overflowed_total{{resource=\"client\"}} {}\n",
            occ.overflowed
        ),
        format!(
            "api_gate_remaining{{resource=\"all\"}} {}\n",
            1_000_000 - (400 - refused)
        ),
    ] {
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
    // A resource already there is an error, not a second sample.
    assert!(layer.export(&mut e).is_err());
}

/// A flood of one-shot keys through a table of 64: the exposition shows
/// the table's state as `occupancy` reads it: resident keys, keys evicted
/// for newcomers, keys that came back after an eviction and started from
/// the table's memory of them, and the requests the table refused.
#[tokio::test]
async fn the_tables_state_shows_in_the_exposition() {
    let layer = RateLimitLayer::builder()
        .per_key_with_capacity(
            "client",
            2,
            Duration::from_secs(60),
            Key::forwarded_ip(ProxyHeader::XForwardedFor, 1),
            64,
        )
        .build()
        .unwrap();
    let ip = |i: u32| format!("198.51.{}.{}", i / 100, i % 100);
    // Three rounds over 300 keys, 2 per minute each: the first fills the
    // table and evicts; in the second, evicted keys come back; in the
    // third, every key has had its 2.
    let mut refused = 0;
    for _ in 0..3 {
        for i in 0..300 {
            if call(&layer, &ip(i)).await == StatusCode::TOO_MANY_REQUESTS {
                refused += 1;
            }
        }
    }
    let occ = layer.occupancy().unwrap();
    assert!(occ.evicted > 0, "{occ:?}");
    assert!(occ.remembered > 0, "{occ:?}");
    assert!(refused > 0);
    assert_eq!(layer.refused(), refused);

    let mut e = Exposition::new("api").unwrap();
    layer.export(&mut e).unwrap();
    let text = e.to_string();
    for (family, kind, value) in [
        ("keyed_resident", "gauge", occ.resident as u64),
        ("keyed_evicted_total", "counter", occ.evicted),
        ("keyed_remembered_total", "counter", occ.remembered),
        ("refused_total", "counter", refused),
    ] {
        for line in [
            format!("# TYPE api_{family} {kind}\n"),
            format!("api_{family}{{resource=\"client\"}} {value}\n"),
        ] {
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
        let help = format!("# HELP api_{family} ");
        let help = text.lines().find(|l| l.starts_with(&help));
        assert!(
            help.is_some_and(|l| l.len() > 40),
            "{family}: no help in\n{text}"
        );
    }
}

/// `w` is an integer of seconds: an interval of whole seconds states it;
/// any other goes without (2 per 100 ms is neither 2 nor 20 per second).
#[tokio::test]
async fn w_only_for_whole_seconds() {
    let fields = |per: Duration| async move {
        let layer = RateLimitLayer::builder()
            .global("g", 2, per)
            .admitted_fields(AdmittedFields::Both)
            .build()
            .unwrap();
        let svc = layer.layer(tower::service_fn(|_req: Request<()>| async {
            Ok::<_, Infallible>(Response::new(String::new()))
        }));
        let resp = svc.oneshot(Request::new(())).await.unwrap();
        resp.headers()["ratelimit-policy"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(fields(Duration::from_millis(100)).await, "\"g\";q=2");
    assert_eq!(fields(Duration::from_millis(1_500)).await, "\"g\";q=2");
    assert_eq!(fields(Duration::from_secs(1)).await, "\"g\";q=2;w=1");
    assert_eq!(fields(Duration::from_secs(90)).await, "\"g\";q=2;w=90");
}

#[test]
fn a_v6_prefix_out_of_range_or_on_another_key_is_an_error() {
    let b = |key: Key| {
        RateLimitLayer::builder()
            .per_key("k", 1, Duration::from_secs(1), key)
            .build()
    };
    for bits in [0, 129, 255] {
        assert_eq!(
            b(Key::peer_ip().v6_prefix(bits)).unwrap_err(),
            ConfigError::V6Prefix { bits }
        );
    }
    for bits in [1, 48, 64, 128] {
        assert!(b(Key::peer_ip().v6_prefix(bits)).is_ok());
        assert!(b(Key::forwarded_ip(ProxyHeader::Forwarded, 2).v6_prefix(bits)).is_ok());
    }
    let header = Key::header(http::HeaderName::from_static("x-api-key"));
    assert_eq!(
        b(header.v6_prefix(64)).unwrap_err(),
        ConfigError::V6Prefix { bits: 64 }
    );
    assert!(ConfigError::V6Prefix { bits: 0 }
        .to_string()
        .contains("1 to 128"));
}
