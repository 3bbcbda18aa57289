//! The layer behind a real axum server on a loopback port, asked by a real
//! client (hyper-util's legacy client). No timing goals: a test waits only
//! for what the server told it (`Retry-After`) or for a state it polls.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::{HeaderName, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leaparray::clock::Clock;
use leaparray_tower::{Admission, AdmittedFields, ConfigError, Key, Mode, RateLimitLayer};

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>;

/// Serves `/` behind `layer` on a free loopback port.
async fn serve(layer: RateLimitLayer) -> SocketAddr {
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

/// A client that opens a new connection for every request (so each is
/// served by a different clone of the service).
fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http()
}

async fn get_with(c: &HttpClient, addr: SocketAddr, key: Option<&str>) -> Response<Incoming> {
    let mut req = Request::get(format!("http://{addr}/"));
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    c.request(req.body(Empty::new()).unwrap()).await.unwrap()
}

fn header<'a>(r: &'a Response<Incoming>, name: &str) -> Option<&'a str> {
    r.headers().get(name).map(|v| v.to_str().unwrap())
}

/// `RateLimit`'s members as (name, r, t).
fn members(r: &Response<Incoming>) -> Vec<(String, u64, u64)> {
    header(r, "ratelimit")
        .unwrap()
        .split(", ")
        .map(|m| {
            let mut it = m.split(';');
            let name = it.next().unwrap().trim_matches('"').to_owned();
            let r = it
                .next()
                .unwrap()
                .strip_prefix("r=")
                .unwrap()
                .parse()
                .unwrap();
            let t = it
                .next()
                .unwrap()
                .strip_prefix("t=")
                .unwrap()
                .parse()
                .unwrap();
            (name, r, t)
        })
        .collect()
}

/// Asserts `RateLimit` has these (name, r) in order, each `t` in `t_range`
/// (the seconds until the quota is back shrink as the test runs).
fn assert_ratelimit(
    resp: &Response<Incoming>,
    want: &[(&str, u64)],
    t_range: std::ops::RangeInclusive<u64>,
) {
    let got = members(resp);
    let names: Vec<(&str, u64)> = got.iter().map(|(n, r, _)| (n.as_str(), *r)).collect();
    assert_eq!(names, want, "RateLimit: {:?}", header(resp, "ratelimit"));
    for (_, _, t) in &got {
        assert!(
            t_range.contains(t),
            "RateLimit: {:?}",
            header(resp, "ratelimit")
        );
    }
}

fn api_key() -> Key {
    Key::header(HeaderName::from_static("x-api-key"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_on_admitted_and_refused_responses() {
    let layer = RateLimitLayer::builder()
        .per_key("per-key", 2, Duration::from_secs(60), api_key())
        .global("global", 100, Duration::from_secs(60))
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client();
    let policy = r#""per-key";q=2;w=60, "global";q=100;w=60"#;

    let first = get_with(&c, addr, Some("alice")).await;
    assert_eq!(first.status(), StatusCode::OK);
    // By default an admitted response carries `RateLimit` alone.
    assert_eq!(header(&first, "ratelimit-policy"), None);
    assert_ratelimit(&first, &[("per-key", 1), ("global", 99)], 1..=60);
    assert_eq!(header(&first, "retry-after"), None);
    assert_eq!(
        first.into_body().collect().await.unwrap().to_bytes(),
        "hello"
    );

    let second = get_with(&c, addr, Some("alice")).await;
    assert_eq!(second.status(), StatusCode::OK);
    assert_ratelimit(&second, &[("per-key", 0), ("global", 98)], 1..=60);

    let refused = get_with(&c, addr, Some("alice")).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&refused, "ratelimit-policy"), Some(policy));
    // A refusal books nothing.
    assert_ratelimit(&refused, &[("per-key", 0), ("global", 98)], 1..=60);
    // Both of alice's permits leave when the window they were counted in
    // slides out: at most one interval from now, more than 0 s.
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After: {retry}");

    // Another key has its own limit; the global one counts both.
    let bob = get_with(&c, addr, Some("bob")).await;
    assert_eq!(bob.status(), StatusCode::OK);
    assert_ratelimit(&bob, &[("per-key", 1), ("global", 97)], 1..=60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_both_admitted_responses_carry_the_policy_too() {
    let layer = RateLimitLayer::builder()
        .per_key("per-key", 1, Duration::from_secs(60), api_key())
        .global("global", 100, Duration::from_secs(1))
        .admitted_fields(AdmittedFields::Both)
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client();
    let policy = r#""per-key";q=1;w=60, "global";q=100;w=1"#;
    let admitted = get_with(&c, addr, Some("alice")).await;
    assert_eq!(admitted.status(), StatusCode::OK);
    assert_eq!(header(&admitted, "ratelimit-policy"), Some(policy));
    assert_ratelimit(&admitted, &[("per-key", 0), ("global", 99)], 1..=60);
    let refused = get_with(&c, addr, Some("alice")).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&refused, "ratelimit-policy"), Some(policy));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_admitted_fields_only_refusals_carry_them() {
    let layer = RateLimitLayer::builder()
        .per_key("per-key", 1, Duration::from_secs(60), api_key())
        .admitted_fields(AdmittedFields::None)
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client();
    let admitted = get_with(&c, addr, Some("alice")).await;
    assert_eq!(admitted.status(), StatusCode::OK);
    assert_eq!(header(&admitted, "ratelimit"), None);
    assert_eq!(header(&admitted, "ratelimit-policy"), None);
    let refused = get_with(&c, addr, Some("alice")).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&refused, "ratelimit-policy"),
        Some(r#""per-key";q=1;w=60"#)
    );
    assert_ratelimit(&refused, &[("per-key", 0)], 1..=60);
    assert!(header(&refused, "retry-after").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admission_extension_only_when_asked() {
    for asked in [false, true] {
        let mut b = RateLimitLayer::builder().global("g", 10, Duration::from_secs(60));
        if asked {
            b = b.admission_extension();
        }
        let layer = b.build().unwrap();
        let clock = layer.clock();
        let app = Router::new()
            .route(
                "/",
                get(|req: axum::extract::Request| async move {
                    match req.extensions().get::<Admission>() {
                        Some(a) => a.now.to_string(),
                        None => "none".to_owned(),
                    }
                }),
            )
            .layer(layer);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let before = clock.now();
        let resp = get_with(&client(), addr, None).await;
        let after = clock.now();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let body = std::str::from_utf8(&body).unwrap();
        if asked {
            let at: u64 = body.parse().unwrap();
            assert!(
                (before..=after).contains(&at),
                "{before} <= {at} <= {after}"
            );
        } else {
            assert_eq!(body, "none");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_limit_refuses_with_the_longest_retry() {
    let layer = RateLimitLayer::builder()
        .per_key("per-key", 10, Duration::from_secs(2), api_key())
        .global("global", 2, Duration::from_secs(60))
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client();
    for k in ["a", "b"] {
        assert_eq!(get_with(&c, addr, Some(k)).await.status(), StatusCode::OK);
    }
    let refused = get_with(&c, addr, Some("c")).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!(
        retry > 2,
        "the global limit's retry, not the key's: {retry}"
    );
    // The global refusal booked nothing in c's key: its quota is whole (t = 0).
    let m = members(&refused);
    assert_eq!((m[0].0.as_str(), m[0].1, m[0].2), ("per-key", 10, 0));
    assert_eq!((m[1].0.as_str(), m[1].1), ("global", 0));
    assert!((3..=60).contains(&m[1].2), "{m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honouring_retry_after_is_admitted() {
    let layer = RateLimitLayer::builder()
        .per_key("per-key", 3, Duration::from_secs(1), api_key())
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client();
    let mut admitted = 0;
    let refused = loop {
        let r = get_with(&c, addr, Some("k")).await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            break r;
        }
        admitted += 1;
        // 3 per interval of 2 windows: at most 6 before a refusal, even
        // across a window edge (a bound, so a broken limit fails, not hangs).
        assert!(admitted <= 6, "{admitted} admitted in a row");
    };
    assert!(
        admitted >= 3,
        "the limit's 3 first (a window edge may add some)"
    );
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let again = get_with(&c, addr, Some("k")).await;
    assert_eq!(
        again.status(),
        StatusCode::OK,
        "after Retry-After: {retry} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_and_clone_shares_the_limits() {
    let layer = RateLimitLayer::builder()
        .global("global", 3, Duration::from_secs(60))
        .build()
        .unwrap();
    let addr = serve(layer.clone()).await;
    let c = client(); // a new connection for each request
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(get_with(&c, addr, None).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429]);

    // The same layer on a second server: its services share the count too.
    let other = serve(layer).await;
    assert_eq!(
        get_with(&c, other, None).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peer_ip_is_a_key() {
    let layer = RateLimitLayer::builder()
        .per_key("ip", 2, Duration::from_secs(60), Key::peer_ip())
        .build()
        .unwrap();
    let addr = serve(layer).await;
    let c = client(); // new connections: new ports, one IP
    let mut statuses = Vec::new();
    for key in ["a", "b", "c"] {
        statuses.push(get_with(&c, addr, Some(key)).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429], "the header is not the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_mode_holds_requests_up_to_its_bound() {
    let layer = RateLimitLayer::builder()
        .global("global", 1, Duration::from_secs(1))
        .mode(Mode::Wait {
            max_waiting: 1,
            max_delay: Duration::from_secs(2),
        })
        .build()
        .unwrap();
    let addr = serve(layer.clone()).await;
    let c = client();
    assert_eq!(get_with(&c, addr, None).await.status(), StatusCode::OK);

    // The second request waits for the window to slide.
    let waiter = tokio::spawn({
        let c = c.clone();
        async move { get_with(&c, addr, None).await }
    });
    // Polls (a bound so that a broken count fails rather than hangs; the
    // request waits up to a second, so it is seen long before).
    let mut polls = 0;
    while layer.waiting() == 0 && !waiter.is_finished() {
        polls += 1;
        assert!(polls < 2_000, "the request never waited");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(layer.waiting(), 1, "one request waits");
    // The third finds the one waiting place taken: refused at once.
    let over = get_with(&c, addr, None).await;
    assert_eq!(over.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(header(&over, "retry-after").is_some());

    // A bound so that a request waiting forever fails the test rather
    // than hanging it (it waits about a second).
    let waited = tokio::time::timeout(Duration::from_secs(60), waiter)
        .await
        .expect("the waiting request is answered")
        .unwrap();
    assert_eq!(waited.status(), StatusCode::OK, "admitted after waiting");
    assert!(header(&waited, "ratelimit").is_some());
    assert_eq!(layer.waiting(), 0, "the place is given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_mode_refuses_a_wait_longer_than_its_maximum() {
    let layer = RateLimitLayer::builder()
        .global("global", 1, Duration::from_secs(60))
        .mode(Mode::Wait {
            max_waiting: 10,
            max_delay: Duration::from_secs(1),
        })
        .build()
        .unwrap();
    let addr = serve(layer.clone()).await;
    let c = client();
    assert_eq!(get_with(&c, addr, None).await.status(), StatusCode::OK);
    let refused = get_with(&c, addr, None).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(layer.waiting(), 0);
}

#[test]
fn bad_configurations_are_errors() {
    let s = Duration::from_secs(1);
    let b = RateLimitLayer::builder;
    assert_eq!(b().build().unwrap_err(), ConfigError::NoLimits);
    assert_eq!(
        b().global("g", 1, Duration::ZERO).build().unwrap_err(),
        ConfigError::Interval { policy: "g".into() }
    );
    assert_eq!(
        b().global("g", 1, Duration::from_nanos(3_001))
            .build()
            .unwrap_err(),
        ConfigError::Interval { policy: "g".into() }
    );
    assert_eq!(
        b().global("g", 1, Duration::from_micros(3))
            .build()
            .unwrap_err(),
        ConfigError::Interval { policy: "g".into() },
        "odd: not 2 whole windows"
    );
    assert_eq!(
        b().global("g", 0, s).build().unwrap_err(),
        ConfigError::ZeroLimit { policy: "g".into() }
    );
    assert_eq!(
        b().per_key("k", 32_768, s, Key::peer_ip())
            .build()
            .unwrap_err(),
        ConfigError::LimitTooLarge {
            policy: "k".into(),
            max: 32_767
        }
    );
    assert!(b().per_key("k", 32_767, s, Key::peer_ip()).build().is_ok());
    // A gate counts up to `MAX_COUNT`: a global limit over it is refused,
    // not capped while the fields advertise it (found by hostile review:
    // `RateLimit-Policy` said q=2^50 while `r` counted down from 2^47 - 1
    // and `t` read 0).
    assert_eq!(
        b().global("g", leaparray::MAX_COUNT + 1, s)
            .build()
            .unwrap_err(),
        ConfigError::LimitTooLarge {
            policy: "g".into(),
            max: leaparray::MAX_COUNT
        }
    );
    assert!(b().global("g", leaparray::MAX_COUNT, s).build().is_ok());
    let five = (0..5).fold(b(), |b, i| b.global(&format!("g{i}"), 1, s));
    assert_eq!(five.build().unwrap_err(), ConfigError::TooManyGlobal);
    assert_eq!(
        b().global("a\"b", 1, s).build().unwrap_err(),
        ConfigError::Name {
            policy: "a\"b".into()
        }
    );
    assert_eq!(
        b().global("g", 1, s).global("g", 2, s).build().unwrap_err(),
        ConfigError::DuplicateName { policy: "g".into() }
    );
}
