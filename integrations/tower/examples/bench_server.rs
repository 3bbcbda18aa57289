//! The benchmark server of `bench.sh`: one axum handler, behind no layer,
//! this crate's layer or tower_governor's, at a limit the load never
//! reaches (32,767 per 100 ms per peer IP, about 327,000 per second).
//!
//! `cargo run --release -p leaparray-tower --example bench_server -- none|leaparray|governor PORT`

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::routing::get;
use axum::Router;
use leaparray_tower::{Key, RateLimitLayer};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "none".into());
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(3000);
    let app = Router::new().route("/", get(|| async { "hello\n" }));
    let app = match which.as_str() {
        "none" => app,
        // A layer that does nothing: what axum's `Router::layer` itself costs.
        "noop" => app.layer(tower::layer::layer_fn(|s| s)),
        // No limiter, but the layer's two header fields (as long): what
        // the larger response costs the server and the client.
        "headers" => app.layer(axum::middleware::map_response(
            |mut r: axum::response::Response| async move {
                let h = r.headers_mut();
                h.insert(
                    "ratelimit-policy",
                    HeaderValue::from_static("\"ip\";q=32767;w=1"),
                );
                h.insert("ratelimit", HeaderValue::from_static("\"ip\";r=32766;t=1"));
                r
            },
        )),
        // `leaparray-quiet`: the fields on refusals only.
        "leaparray" | "leaparray-quiet" => app.layer(
            RateLimitLayer::builder()
                .per_key("ip", 32_767, Duration::from_millis(100), Key::peer_ip())
                .headers_on_admitted(which == "leaparray")
                .build()
                .expect("valid"),
        ),
        // The same rate: a burst of 32,767, one more every 100 ms / 32,767.
        "governor" => {
            let mut config = GovernorConfigBuilder::default();
            config
                .per_nanosecond(100_000_000 / 32_767)
                .burst_size(32_767);
            app.layer(GovernorLayer::new(config.finish().expect("valid")))
        }
        // The same, with its `x-ratelimit-*` fields on every response.
        "governor-headers" => {
            let mut config = GovernorConfigBuilder::default();
            config
                .per_nanosecond(100_000_000 / 32_767)
                .burst_size(32_767);
            let config = config.use_headers().finish().expect("valid");
            app.layer(GovernorLayer::new(config))
        }
        other => {
            eprintln!("bench_server: none, leaparray or governor, not {other:?}");
            std::process::exit(2);
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    println!("listening on {}", listener.local_addr().expect("addr"));
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
    .expect("serve");
}
