//! Resident memory of the keyed gate and of governor's keyed limiter, with
//! 1,000,000 keys and after a flood of 10,000,000 new ones:
//! `cargo bench -p leaparray-benches --bench keyed_memory` (Linux: it reads
//! `/proc/self/statm`). Prints a markdown table.
//!
//! Each figure is the process's resident set size (RSS) minus the RSS
//! just before the structure was first used. The keyed gate is a `static`
//! `KeyedGate<2, 2^21>` (96 MiB: 32 MiB of slots and 64 MiB of the memory
//! of evicted keys, in the binary's data, paged in as they are read);
//! governor is `RateLimiter::dashmap_with_clock` (its default keyed store)
//! with a `FakeRelativeClock`. Both get the quota of `benches/keyed.rs`:
//! 1,000 per 1,000 ticks (microseconds for governor), time advancing one
//! tick every 4,096 decisions.

use std::hint::black_box;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use leaparray::Decision;
use leaparray::KeyedGate;
use leaparray_benches::{keyed_governor, splitmix as key, KeyedGovernor as Governor};

const WINDOW: NonZeroU64 = NonZeroU64::new(500).unwrap();
const LIMIT: u64 = 1_000;
const KEYS: u64 = 1_000_000;
const FLOOD: u64 = 10_000_000;
/// Decisions per tick (per microsecond of governor's clock).
const PER_TICK: u64 = 4096;
/// Time allowed to governor's flood before it stops short.
const FLOOD_BUDGET: Duration = Duration::from_secs(30);

static TABLE: KeyedGate<2, { 1 << 21 }> = KeyedGate::new(WINDOW, LIMIT);

// `key(i)`: splitmix64's output function, a bijection, so distinct inputs
// give distinct keys. The flood's keys are `key(FLOOD_FROM + i)`.

/// Where the flood's key indices start: past any the key set used.
const FLOOD_FROM: u64 = 1 << 40;

fn page_size() -> u64 {
    std::process::Command::new("getconf")
        .arg("PAGESIZE")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096)
}

/// Resident set size in bytes (the second field of `/proc/self/statm`,
/// in pages).
fn rss(page: u64) -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

struct Row {
    what: String,
    keys: String,
    rss: String,
    per_key: String,
    notes: String,
}

fn main() {
    // `cargo bench` passes `--bench`; this is no criterion benchmark.
    let page = page_size();
    let Some(_) = rss(page) else {
        println!("keyed_memory: no /proc/self/statm (not Linux): nothing measured");
        return;
    };
    let rss = || rss(page).unwrap();
    let mut rows = Vec::new();

    // (a) The keyed gate, 1,000,000 keys at time 0: the first 1,000,000
    // the table has room for (a key whose probe of 16 slots is full is
    // refused: counted).
    let base = rss();
    let t0 = Instant::now();
    let (mut resident, mut tried) = (0u64, 0u64);
    while resident < KEYS {
        if TABLE.try_acquire(key(tried), 0, 1) == Decision::Pass {
            resident += 1;
        }
        tried += 1;
    }
    let fill = t0.elapsed();
    let s = TABLE.occupancy(0);
    let grown = rss().saturating_sub(base);
    let size = core::mem::size_of_val(&TABLE) as u64;
    rows.push(Row {
        what: "leaparray `KeyedGate<2, 2^21>` (a `static`)".into(),
        keys: format!("{}", s.resident),
        rss: mib(grown),
        per_key: format!("{:.1}", grown as f64 / s.resident as f64),
        notes: format!(
            "`size_of_val` {} ({size} bytes, fixed); {} of {tried} keys found no room \
             (load {:.3}); {:.0} ns per insertion",
            mib(size),
            s.overflowed,
            s.resident as f64 / TABLE.capacity() as f64,
            fill.as_nanos() as f64 / tried as f64
        ),
    });

    // (c) The flood: 10,000,000 distinct new keys, one decision each.
    let t0 = Instant::now();
    let mut passed = 0u64;
    for i in 0..FLOOD {
        let now = 1 + i / PER_TICK;
        if TABLE.try_acquire(black_box(key(FLOOD_FROM + i)), now, 1) == Decision::Pass {
            passed += 1;
        }
    }
    let took = t0.elapsed();
    let end = 1 + FLOOD / PER_TICK;
    let after = TABLE.occupancy(end);
    let grown_flood = rss().saturating_sub(base);
    rows.push(Row {
        what: format!("the same after a flood of {FLOOD} new keys"),
        keys: format!("{}", after.resident),
        rss: mib(grown_flood),
        per_key: "-".into(),
        notes: format!(
            "{} more than before the flood; flood: {passed} admitted, {} refused \
             (no room), {} slots recycled (keys idle two intervals), {:.0} ns per decision",
            mib(grown_flood.saturating_sub(grown)),
            FLOOD - passed,
            after.recycled - s.recycled,
            took.as_nanos() as f64 / FLOOD as f64
        ),
    });

    // (b) governor, 1,000,000 keys.
    let base = rss();
    let (lim, clock): (Governor, _) = keyed_governor(LIMIT);
    let t0 = Instant::now();
    for i in 0..KEYS {
        assert!(lim.check_key(&key(i)).is_ok());
    }
    let fill = t0.elapsed();
    let grown = rss().saturating_sub(base);
    rows.push(Row {
        what: "governor keyed, `DashMap` store".into(),
        keys: format!("{}", lim.len()),
        rss: mib(grown),
        per_key: format!("{:.1}", grown as f64 / lim.len() as f64),
        notes: format!(
            "grows with the keys; {:.0} ns per insertion",
            fill.as_nanos() as f64 / KEYS as f64
        ),
    });

    // (c) governor's flood, as far as the time budget allows.
    let t0 = Instant::now();
    let mut flooded = 0u64;
    let mut passed = 0u64;
    while flooded < FLOOD {
        if flooded % PER_TICK == PER_TICK - 1 {
            clock.advance(Duration::from_micros(1));
        }
        if lim.check_key(&black_box(key(FLOOD_FROM + flooded))).is_ok() {
            passed += 1;
        }
        flooded += 1;
        if flooded.is_multiple_of(1 << 20) && t0.elapsed() > FLOOD_BUDGET {
            break;
        }
    }
    let took = t0.elapsed();
    let grown_flood = rss().saturating_sub(base);
    let stopped = if flooded < FLOOD {
        format!(" (stopped at {flooded} of {FLOOD}: over {FLOOD_BUDGET:?})")
    } else {
        String::new()
    };
    rows.push(Row {
        what: format!("the same after a flood of {flooded} new keys{stopped}"),
        keys: format!("{}", lim.len()),
        rss: mib(grown_flood),
        per_key: format!("{:.1}", grown_flood as f64 / lim.len() as f64),
        notes: format!(
            "{} more than before the flood; {passed} admitted; {:.0} ns per decision",
            mib(grown_flood.saturating_sub(grown)),
            took.as_nanos() as f64 / flooded as f64
        ),
    });

    // governor's housekeeping: every key idle past its burst is dropped.
    clock.advance(Duration::from_secs(1));
    let t0 = Instant::now();
    lim.retain_recent();
    lim.shrink_to_fit();
    let took = t0.elapsed();
    let grown_after = rss().saturating_sub(base);
    rows.push(Row {
        what: "the same after `retain_recent()` + `shrink_to_fit()`, 1 s later".into(),
        keys: format!("{}", lim.len()),
        rss: mib(grown_after),
        per_key: "-".into(),
        notes: format!(
            "the caller's housekeeping: {:.0} ms; RSS is what the allocator kept",
            took.as_secs_f64() * 1e3
        ),
    });
    drop(lim);

    println!();
    println!("| structure | keys held | RSS growth | bytes per key | notes |");
    println!("|---|---:|---:|---:|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.what, r.keys, r.rss, r.per_key, r.notes
        );
    }
    println!();
    println!(
        "RSS from /proc/self/statm x {page}-byte pages, minus the RSS before the structure was first used."
    );
}
