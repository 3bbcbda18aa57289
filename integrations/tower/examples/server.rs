//! An axum server behind `leaparray-tower`:
//!
//! ```text
//! cargo run -p leaparray-tower --example server            # then: curl -i localhost:3000/
//! cargo run -p leaparray-tower --example server -- --port 8080 --per-key 5 --global 100 --key ip
//! ```
//!
//! Flags (or the environment variables in brackets):
//! - `--port P` [`PORT`]: 3000; 0 picks a free port. Loopback only. The
//!   first line printed is `listening on ADDR`.
//! - `--per-key Q` [`PER_KEY`]: requests per key per interval (1000; 0: none).
//! - `--global Q` [`GLOBAL`]: requests per interval in all (10000; 0: none).
//! - `--interval-ms MS` [`INTERVAL_MS`]: the interval (1000).
//! - `--key header|ip` [`KEY`]: the `x-api-key` header (default) or the
//!   peer's IP address.
//! - `--wait N` [`WAIT`]: wait mode with up to N waiting requests (for at
//!   most one interval each); default: refuse.
//! - `--capacity C` [`CAPACITY`]: slots of the per-key table, any number
//!   from 1 (16384 by default, `DEFAULT_CAPACITY`).
//! - `--ledger` [`LEDGER=1`]: keep the books (below).
//!
//! # The ledger
//!
//! With `--ledger`, the handler records every admitted request under its
//! key and in the global total, in the window (of the limits' clock) its
//! decision read, `lo`, and the window of a second reading taken in the
//! handler, after the booking, `hi`. The gates count a request in a window
//! no earlier than its caller's and no later than the newest any caller
//! had read before its booking returned (a late caller is counted in the
//! newest window): that window is in `[lo, hi]`. `GET /__ledger/check`
//! (not rate-limited), and SIGTERM or Ctrl-C, check that no interval of
//! `N = 2` windows holds more than its limit counting the requests whose
//! `[lo, hi]` lies inside it (a lower bound of what the gate counted
//! there, so a report of a violation is one), and answer 200 / exit 0, or
//! 500 / exit 1 on a violation, with the totals.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use leaparray::clock::Clock;
use leaparray_tower::{Admission, Key, Mode, RateLimitLayer, WINDOWS};

#[derive(Debug, Clone)]
struct Config {
    port: u16,
    per_key: u64,
    global: u64,
    interval_ms: u64,
    key_ip: bool,
    wait: Option<usize>,
    capacity: usize,
    ledger: bool,
}

fn config() -> Result<Config, String> {
    let env = |k: &str| std::env::var(k).ok();
    let mut c = Config {
        port: 3000,
        per_key: 1000,
        global: 10_000,
        interval_ms: 1000,
        key_ip: false,
        wait: None,
        capacity: leaparray_tower::DEFAULT_CAPACITY,
        ledger: false,
    };
    let set = |flag: &str, v: &str, c: &mut Config| -> Result<(), String> {
        let num = || v.parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag {
            "--port" => c.port = v.parse().map_err(|e| format!("--port {v:?}: {e}"))?,
            "--per-key" => c.per_key = num()?,
            "--global" => c.global = num()?,
            "--interval-ms" => c.interval_ms = num()?,
            "--key" => match v {
                "ip" => c.key_ip = true,
                "header" => c.key_ip = false,
                _ => return Err(format!("--key {v:?}: header or ip")),
            },
            "--wait" => c.wait = Some(num()? as usize),
            "--capacity" => c.capacity = num()? as usize,
            "--ledger" => c.ledger = v == "1" || v == "true",
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    };
    for (var, flag) in [
        ("PORT", "--port"),
        ("PER_KEY", "--per-key"),
        ("GLOBAL", "--global"),
        ("INTERVAL_MS", "--interval-ms"),
        ("KEY", "--key"),
        ("WAIT", "--wait"),
        ("CAPACITY", "--capacity"),
        ("LEDGER", "--ledger"),
    ] {
        if let Some(v) = env(var) {
            set(flag, &v, &mut c)?;
        }
    }
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--ledger" {
            c.ledger = true;
            continue;
        }
        let v = args.next().ok_or(format!("{flag} needs a value"))?;
        set(&flag, &v, &mut c)?;
    }
    Ok(c)
}

/// Admitted requests of one series (a key, or all): counts by `(lo, hi)`.
type Series = HashMap<(u64, u64), u64>;

#[derive(Default)]
struct Books {
    keys: BTreeMap<String, Series>,
    all: Series,
}

#[derive(Clone)]
struct App {
    clock: leaparray_tower::LayerClock,
    window_us: u64,
    books: Option<Arc<Mutex<Books>>>,
    per_key: u64,
    global: u64,
    key_ip: bool,
}

async fn hello(State(app): State<App>, req: Request) -> &'static str {
    let admission = req.extensions().get::<Admission>();
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>();
    let headers = req.headers();
    if let (Some(books), Some(a)) = (&app.books, admission) {
        let lo = a.now / app.window_us;
        // Not before the decision's window, even if this core's counter
        // reads behind the deciding core's.
        let hi = (app.clock.now() / app.window_us).max(lo);
        let key = if app.key_ip {
            peer.map(|p| p.0.ip().to_string()).unwrap_or_default()
        } else {
            headers
                .get("x-api-key")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default()
        };
        let mut b = books.lock().unwrap_or_else(|e| e.into_inner());
        *b.keys.entry(key).or_default().entry((lo, hi)).or_default() += 1;
        *b.all.entry((lo, hi)).or_default() += 1;
    }
    "hello\n"
}

/// The largest count of any interval of `WINDOWS` windows, counting the
/// records whose `[lo, hi]` lies inside it; and how many records straddle
/// windows.
fn worst(series: &Series) -> (u64, u64, u64) {
    let n = WINDOWS as u64;
    let (Some(first), Some(last)) = (
        series.keys().map(|k| k.0).min(),
        series.keys().map(|k| k.1).max(),
    ) else {
        return (0, 0, 0);
    };
    let mut worst = 0;
    for start in first..=last {
        let end = start + n - 1;
        let c: u64 = series
            .iter()
            .filter(|((lo, hi), _)| *lo >= start && *hi <= end)
            .map(|(_, c)| c)
            .sum();
        worst = worst.max(c);
    }
    let total = series.values().sum();
    let straddling = series
        .iter()
        .filter(|((lo, hi), _)| lo != hi)
        .map(|(_, c)| c)
        .sum();
    (worst, total, straddling)
}

/// The report and whether every limit held.
fn check(app: &App) -> (bool, String) {
    let Some(books) = &app.books else {
        return (false, "no ledger: start with --ledger\n".into());
    };
    let b = books.lock().unwrap_or_else(|e| e.into_inner());
    let mut ok = true;
    let mut out = String::new();
    let mut line = |name: &str, s: &Series, limit: u64| {
        let (w, total, straddling) = worst(s);
        let verdict = if limit > 0 && w > limit {
            ok = false;
            "VIOLATION"
        } else {
            "ok"
        };
        out.push_str(&format!(
            "{name}: admitted {total}, most in any {WINDOWS} windows {w} (limit {limit}), {straddling} across a window edge: {verdict}\n"
        ));
    };
    // A line for each key over its limit, and for the busiest few; a flood
    // of keys is summed up in one line.
    let mut busiest: Vec<(u64, &String)> = b.keys.iter().map(|(k, s)| (worst(s).0, k)).collect();
    busiest.sort_unstable_by(|a, b| b.cmp(a));
    for (rank, (w, k)) in busiest.iter().enumerate() {
        if rank < 8 || (app.per_key > 0 && *w > app.per_key) {
            line(&format!("key {k:?}"), &b.keys[*k], app.per_key);
        }
    }
    line("global", &b.all, app.global);
    out.push_str(&format!(
        "keys: {} admitted at least once, {} over the limit\n",
        busiest.len(),
        busiest
            .iter()
            .filter(|(w, _)| app.per_key > 0 && *w > app.per_key)
            .count()
    ));
    let verdict = if ok {
        "LEDGER OK: 0 intervals over a limit\n"
    } else {
        "LEDGER VIOLATION\n"
    };
    out.push_str(verdict);
    (ok, out)
}

async fn ledger_check(State(app): State<App>) -> (StatusCode, String) {
    let (ok, report) = check(&app);
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    (status, report)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

#[tokio::main]
async fn main() {
    let c = match config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("server: {e}");
            std::process::exit(2);
        }
    };
    let per = Duration::from_millis(c.interval_ms);
    let mut b = RateLimitLayer::builder();
    if c.ledger {
        b = b.admission_extension();
    }
    if c.per_key > 0 {
        let key = if c.key_ip {
            Key::peer_ip()
        } else {
            Key::header(axum::http::HeaderName::from_static("x-api-key"))
        };
        b = b.per_key_with_capacity("per-key", c.per_key, per, key, c.capacity);
    }
    if c.global > 0 {
        b = b.global("global", c.global, per);
    }
    if let Some(max_waiting) = c.wait {
        b = b.mode(Mode::Wait {
            max_waiting,
            max_delay: per,
        });
    }
    let layer = match b.build() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("server: {e}");
            std::process::exit(2);
        }
    };
    let app = App {
        clock: layer.clock(),
        window_us: (c.interval_ms * 1000 / WINDOWS as u64).max(1),
        books: c.ledger.then(|| Arc::new(Mutex::new(Books::default()))),
        per_key: c.per_key,
        global: c.global,
        key_ip: c.key_ip,
    };
    let router = Router::new()
        .route("/", get(hello))
        .layer(layer)
        // Added after the layer: not limited.
        .route("/__ledger/check", get(ledger_check))
        .with_state(app.clone());
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", c.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("server: bind 127.0.0.1:{}: {e}", c.port);
            std::process::exit(2);
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    println!("listening on {addr}");
    let serve = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    );
    // Stop at the signal at once, open connections or not.
    tokio::select! {
        served = serve => if let Err(e) = served {
            eprintln!("server: {e}");
            std::process::exit(2);
        },
        () = shutdown_signal() => {}
    }
    if c.ledger {
        let (ok, report) = check(&app);
        print!("{report}");
        std::process::exit(if ok { 0 } else { 1 });
    }
}
