//! A request admitted after waiting (`Mode::Wait`) gets the `RateLimit`
//! field of its decision's time, as a request admitted at once does, not
//! one read when its handler answers (found by hostile review: a global's
//! `r` counted the requests admitted while the handler ran).

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, Request, Response, StatusCode};
use leaparray_tower::{Key, Mode, RateLimitLayer};
use tokio::sync::{mpsc, Notify};
use tower::{Layer, ServiceExt};

fn req(key: &str, block: bool) -> Request<()> {
    let mut r = Request::get("/").header("x-api-key", key);
    if block {
        r = r.header("x-block", "1");
    }
    r.body(()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_requests_fields_are_of_its_decision() {
    let layer = RateLimitLayer::builder()
        .per_key(
            "k",
            10,
            Duration::from_secs(2),
            Key::header(HeaderName::from_static("x-api-key")),
        )
        .global("g", 2, Duration::from_secs(2))
        .mode(Mode::Wait {
            max_waiting: 4,
            max_delay: Duration::from_secs(3),
        })
        .build()
        .unwrap();
    // The handler of a request with `x-block` says it entered, then waits
    // to be released.
    let release = Arc::new(Notify::new());
    let (entered_tx, mut entered) = mpsc::unbounded_channel::<()>();
    let svc = {
        let release = release.clone();
        layer.layer(tower::service_fn(move |r: Request<()>| {
            let release = release.clone();
            let entered_tx = entered_tx.clone();
            async move {
                if r.headers().contains_key("x-block") {
                    let _ = entered_tx.send(());
                    release.notified().await;
                }
                Ok::<_, std::convert::Infallible>(Response::new(String::new()))
            }
        }))
    };
    for _ in 0..2 {
        let r = svc.clone().oneshot(req("a", false)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    // W is refused now: it waits for the global window to slide, is
    // admitted with the global at r=1 (its own booking alone in the
    // interval), and its handler blocks.
    let w = tokio::spawn(svc.clone().oneshot(req("w", true)));
    entered.recv().await.unwrap();
    // C is admitted while W's handler runs, in the same window.
    let c = svc.clone().oneshot(req("c", false)).await.unwrap();
    assert_eq!(c.status(), StatusCode::OK);
    let c_field = c.headers()["ratelimit"].to_str().unwrap().to_owned();
    assert!(c_field.contains("\"g\";r=0"), "{c_field}");
    release.notify_one();
    let w = w.await.unwrap().unwrap();
    assert_eq!(w.status(), StatusCode::OK);
    let w_field = w.headers()["ratelimit"].to_str().unwrap();
    assert!(
        w_field.contains("\"g\";r=1"),
        "W's RateLimit: {w_field} (C's, admitted after W's decision: {c_field})"
    );
}
