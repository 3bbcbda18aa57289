//! A key evicted after booking its limit comes back with the table's
//! estimate of what it booked: it is refused with the `Retry-After` of
//! that estimate, and honouring it is admitted. The service is called
//! directly, keyed on `X-Forwarded-For` (one trusted proxy).

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use leaparray::clock::Clock;
use leaparray_tower::{Key, ProxyHeader, RateLimitLayer};
use tower::{Layer, ServiceExt};

/// The interval's half: a limit per 2 s is kept in windows of 1 s (µs).
const WINDOW: u64 = 1_000_000;

/// Calls a fresh service of `layer` as client `ip`: the status and the
/// `Retry-After` of a refusal, in seconds.
async fn call(layer: &RateLimitLayer, ip: &str) -> (StatusCode, Option<u64>) {
    let svc = layer.layer(tower::service_fn(|_req: Request<()>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    }));
    let req = Request::get("/")
        .header("x-forwarded-for", ip)
        .body(())
        .unwrap();
    let res = svc.oneshot(req).await.unwrap();
    let retry = res
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().parse().unwrap());
    (res.status(), retry)
}

/// Sleeps until the layer's clock is `at` µs or later.
async fn sleep_until(layer: &RateLimitLayer, at: u64) {
    let now = layer.clock().now();
    if at > now {
        tokio::time::sleep(Duration::from_micros(at - now)).await;
    }
}

/// One slot: client B evicts client A, who has booked its limit of 2 in
/// window `w0`; A comes back in the next window and is seeded from the
/// table's memory: refused, with `Retry-After` the time until window
/// `w0`'s permits slide out (the end of window `w0 + 1`), 1 s rounded up
/// where a key the table forgot would pass and the whole interval would be
/// 2 s; after that wait A is admitted.
#[tokio::test]
async fn a_remembered_key_is_told_when_its_remembered_permits_slide_out() {
    let layer = RateLimitLayer::builder()
        .per_key_with_capacity(
            "client",
            2,
            Duration::from_secs(2),
            Key::forwarded_ip(ProxyHeader::XForwardedFor, 1),
            1,
        )
        .build()
        .unwrap();
    let (a, b) = ("192.0.2.1", "192.0.2.2");

    // Book late in a window, so that the next steps are well inside it
    // and the next one.
    let now = layer.clock().now();
    let w0 = now / WINDOW + u64::from(now % WINDOW > WINDOW * 7 / 10);
    sleep_until(&layer, w0 * WINDOW + WINDOW * 7 / 10).await;
    assert_eq!(call(&layer, a).await.0, StatusCode::OK);
    assert_eq!(call(&layer, a).await.0, StatusCode::OK);
    assert_eq!(call(&layer, b).await.0, StatusCode::OK); // evicts A
    assert_eq!(layer.clock().now() / WINDOW, w0, "booked in one window");
    assert_eq!(layer.occupancy().unwrap().evicted, 1);

    // The next window: A's 2 permits of window w0 still count.
    sleep_until(&layer, (w0 + 1) * WINDOW + WINDOW / 10).await;
    let before = layer.clock().now();
    let (status, retry) = call(&layer, a).await; // evicts B, seeded
    let after = layer.clock().now();
    let occ = layer.occupancy().unwrap();
    assert_eq!((occ.evicted, occ.remembered), (2, 1), "{occ:?}");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // Window w0's permits leave when window w0 + 2 begins.
    let slide_out = (w0 + 2) * WINDOW;
    let seconds_up = |t: u64| (slide_out - t).div_ceil(1_000_000);
    assert_eq!(seconds_up(before), seconds_up(after), "one answer");
    assert_eq!(retry, Some(seconds_up(after)));
    assert_eq!(retry, Some(1));

    tokio::time::sleep(Duration::from_secs(retry.unwrap())).await;
    assert!(layer.clock().now() >= slide_out);
    assert_eq!(call(&layer, a).await.0, StatusCode::OK);
}
