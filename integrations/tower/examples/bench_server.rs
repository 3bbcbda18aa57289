//! The benchmark server of `bench.sh`: one axum handler, behind no layer,
//! this crate's layer or tower_governor's, at a limit the load never
//! reaches (32,767 per 100 ms per peer IP, about 327,000 per second).
//!
//! `cargo run --release -p leaparray-tower --example bench_server -- MODE PORT`,
//! MODE one of `none`, `noop`, `headers`, `leaparray` (`RateLimit` on
//! admitted responses, the default), `leaparray-both` (`RateLimit-Policy`
//! too), `leaparray-quiet` (the fields on refusals only), `governor`,
//! `governor-headers`; a limiter's MODE with `-outer` puts the
//! layer around the router instead of through `Router::layer`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::routing::get;
use axum::Router;
use leaparray_tower::{AdmittedFields, Key, RateLimitLayer};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

/// Serves `$app` with `$layer` through `Router::layer`, or around the whole
/// router (before routing) when `$outer`.
macro_rules! serve {
    ($listener:expr, $app:expr, $layer:expr, $outer:expr) => {{
        let (listener, app, layer) = ($listener, $app, $layer);
        if $outer {
            // `with_state` turns every handler into its route once, as
            // `Router::into_make_service` does; without it, the router
            // would build a handler's route for every request (a clone and
            // an allocation) that the `none` server does not pay for.
            let svc = tower::Layer::layer(&layer, app.with_state(()));
            let make =
                axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
                    SocketAddr,
                >(svc);
            axum::serve(listener, make).await.expect("serve");
        } else {
            let app = app.layer(layer);
            let make = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, make).await.expect("serve");
        }
    }};
}

fn leaparray(fields: AdmittedFields) -> RateLimitLayer {
    RateLimitLayer::builder()
        .per_key("ip", 32_767, Duration::from_millis(100), Key::peer_ip())
        .admitted_fields(fields)
        .build()
        .expect("valid")
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "none".into());
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(3000);
    let (which, outer) = match mode.strip_suffix("-outer") {
        Some(w) => (w, true),
        None => (mode.as_str(), false),
    };
    let app = Router::new().route("/", get(|| async { "hello\n" }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    println!("listening on {}", listener.local_addr().expect("addr"));
    match which {
        "none" if !outer => {
            let make = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, make).await.expect("serve");
        }
        // A layer that does nothing: what axum's `Router::layer` costs.
        "noop" if !outer => {
            let app = app.layer(tower::layer::layer_fn(|s: axum::routing::Route| s));
            let make = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, make).await.expect("serve");
        }
        // No limiter, but the layer's two header fields (as long): what the
        // larger response costs the server.
        "headers" if !outer => serve!(
            listener,
            app,
            axum::middleware::map_response(|mut r: axum::response::Response| async move {
                let h = r.headers_mut();
                h.insert(
                    "ratelimit-policy",
                    HeaderValue::from_static("\"ip\";q=32767;w=1"),
                );
                h.insert("ratelimit", HeaderValue::from_static("\"ip\";r=32766;t=1"));
                r
            }),
            false
        ),
        "leaparray" => serve!(listener, app, leaparray(AdmittedFields::RateLimit), outer),
        "leaparray-both" => serve!(listener, app, leaparray(AdmittedFields::Both), outer),
        "leaparray-quiet" => serve!(listener, app, leaparray(AdmittedFields::None), outer),
        // The same rate: a burst of 32,767, one more every 100 ms / 32,767.
        "governor" => {
            let mut config = GovernorConfigBuilder::default();
            config
                .per_nanosecond(100_000_000 / 32_767)
                .burst_size(32_767);
            let config = config.finish().expect("valid");
            serve!(listener, app, GovernorLayer::new(config), outer)
        }
        // With its `x-ratelimit-*` fields on every response.
        "governor-headers" => {
            let mut config = GovernorConfigBuilder::default();
            config
                .per_nanosecond(100_000_000 / 32_767)
                .burst_size(32_767);
            let config = config.use_headers().finish().expect("valid");
            serve!(listener, app, GovernorLayer::new(config), outer)
        }
        other => {
            eprintln!("bench_server: no mode {other:?} (see the file's docs)");
            std::process::exit(2);
        }
    }
}
