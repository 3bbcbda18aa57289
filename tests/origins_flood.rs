//! A flood of 100 times a cluster node's origins under threads: one
//! resource (`ClusterNode<16>`, a `static`) under flow rules for one named
//! caller and for `other`, 1,600 callers and the named one, four threads
//! in step. After every thread has stopped: the origins and "other" add up
//! to the resource's totals exactly (both levels, every event), the totals
//! are exactly the decisions, no caller was admitted over its rule's limit
//! in any interval, the named caller exactly its limit; and the threads'
//! records allocated nothing (the node's memory is its type's size, fixed
//! by `CAP`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use leaparray::stats::{
    ClusterNode, Counts, DefaultNode, EntranceNode, FlowRule, FlowRules, LimitApp, Origin,
    OriginNode, Parent, StatisticNode, Strategy,
};
use leaparray::Decision;

/// Counts the allocations made by a thread while its `COUNTING` is set.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CAP: usize = 16;
const FLOOD: usize = 100 * CAP;
const THREADS: usize = 4;
/// 40 rounds 100 ms apart: windows 0 to 7 of 500 ms.
const ROUNDS: u64 = 40;
const STEP: u64 = 100;
const WINDOW: u64 = 500;
/// Requests of the named caller per thread and round: 200 a window.
const HOT: u64 = 10;
const HOT_LIMIT: u64 = 50;
const OTHER_LIMIT: u64 = 3;

const HALF: NonZeroU64 = NonZeroU64::new(WINDOW).unwrap();
const A: Origin = Origin::named("appA");

static GET_ORDER: ClusterNode<CAP> = ClusterNode::millis();
static WEB: EntranceNode = EntranceNode::millis("web");
static NODE: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&WEB));
static RULES: [FlowRule; 2] = [
    FlowRule::new(LimitApp::Origin(A), Strategy::Direct, HALF, HOT_LIMIT),
    FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, OTHER_LIMIT),
];

// The node's memory: its totals, "other" and `CAP` origin nodes (and the
// table's slots), whatever the traffic: far below one node per caller.
const _: () = {
    let node = size_of::<StatisticNode>();
    let size = size_of::<ClusterNode<CAP>>();
    assert!(size >= (CAP + 2) * node);
    assert!(size <= (CAP + 2) * (node + 64));
    assert!(size_of::<OriginNode>() <= node + 16);
};

fn caller(i: usize) -> Origin {
    Origin::named(&format!("caller-{i}"))
}

/// Index `FLOOD` is the named caller.
type Ledger = BTreeMap<(usize, u64), (u64, u64)>; // (caller, window) -> (pass, block)

#[test]
#[cfg_attr(
    miri,
    ignore = "64,000 decisions and records on 4 threads: too slow under Miri"
)]
fn a_flood_of_100x_the_origins_keeps_the_totals_exact_in_fixed_memory() {
    let rules = FlowRules::new(&RULES);
    let names: Vec<Origin> = (0..FLOOD).map(caller).collect();
    let start = Barrier::new(THREADS);
    let ledgers: Vec<Ledger> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (names, start, rules) = (&names, &start, &rules);
                s.spawn(move || {
                    let mut ledger = Ledger::new();
                    // Every decision, with where it goes, before any count:
                    // the decisions and records allocate nothing.
                    let mut todo: Vec<(usize, Origin)> =
                        (t..FLOOD).step_by(THREADS).map(|i| (i, names[i])).collect();
                    todo.extend((0..HOT).map(|_| (FLOOD, A)));
                    let mut decided = Vec::with_capacity(todo.len());
                    for r in 0..ROUNDS {
                        let now = r * STEP;
                        start.wait();
                        COUNTING.with(|c| c.set(true));
                        decided.clear();
                        for &(i, o) in &todo {
                            let d = rules.check(&NODE, Some(o), now, 1);
                            if d == Decision::Pass {
                                NODE.entry(Some(o), now, 1).exit(now + 5, false);
                            } else {
                                NODE.add_block(Some(o), now, 1).unwrap();
                            }
                            decided.push((i, d));
                        }
                        COUNTING.with(|c| c.set(false));
                        for &(i, d) in &decided {
                            let e = ledger.entry((i, now / WINDOW)).or_default();
                            if d == Decision::Pass {
                                e.0 += 1;
                            } else {
                                e.1 += 1;
                            }
                        }
                    }
                    ledger
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "records allocated");

    let mut ledger = Ledger::new();
    for l in ledgers {
        for (k, (p, b)) in l {
            let e = ledger.entry(k).or_default();
            e.0 += p;
            e.1 += b;
        }
    }
    let (passes, blocks) = ledger
        .values()
        .fold((0, 0), |(p, b), &(x, y)| (p + x, b + y));
    assert_eq!(
        passes + blocks,
        ROUNDS * (FLOOD as u64 + THREADS as u64 * HOT)
    );

    // No caller over its limit in any interval (two adjacent windows);
    // the named caller exactly its limit in every other window.
    for (&(i, w), &(p, _)) in &ledger {
        let next = ledger.get(&(i, w + 1)).map_or(0, |e| e.0);
        let limit = if i == FLOOD { HOT_LIMIT } else { OTHER_LIMIT };
        assert!(
            p + next <= limit,
            "caller {i}, windows {w}, {}: {p} + {next}",
            w + 1
        );
    }
    let hot: Vec<u64> = (0..8).map(|w| ledger[&(FLOOD, w)].0).collect();
    assert_eq!(hot, [50, 0, 50, 0, 50, 0, 50, 0]);
    let flood_passes = passes - hot.iter().sum::<u64>();
    assert!(flood_passes > 0 && flood_passes <= FLOOD as u64 * 4 * OTHER_LIMIT);

    // The partition: resident origins + "other" = the totals, exactly.
    let end = (ROUNDS - 1) * STEP + 5;
    let resident: Vec<_> = GET_ORDER.origins(end).collect();
    assert!(resident.len() <= CAP);
    let others = GET_ORDER.others(end);
    let sum = |level: fn(&leaparray::stats::OriginStats) -> Counts| {
        resident
            .iter()
            .fold(level(&others), |c, o| c.plus(level(o)))
    };
    let total = GET_ORDER.total();
    // Every event and the least RT; a peak of requests in flight is
    // per node (the totals' is the sum of theirs at one moment).
    let events = |c: Counts| (c.pass, c.block, c.success, c.exception, c.rt, c.min_rt);
    for (name, parts, whole) in [
        ("second", sum(|o| o.second), Counts::of(total.second(), end)),
        ("minute", sum(|o| o.minute), Counts::of(total.minute(), end)),
    ] {
        assert_eq!(
            events(parts),
            events(whole),
            "{name}: origins + other != totals"
        );
        assert!(whole.pass > 0 && whole.block > 0, "{name}: {whole:?}");
    }
    // The minute holds the whole run: the totals are the decisions.
    let m = Counts::of(total.minute(), end);
    assert_eq!((m.pass, m.block, m.success), (passes, blocks, passes));
    assert_eq!(
        (total.concurrency(), others.concurrency),
        (0, 0),
        "nothing in flight"
    );
    assert!(resident.iter().all(|o| o.concurrency == 0));
}
