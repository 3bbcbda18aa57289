//! Sentinel's statistics by caller and by call chain, as a Sentinel user
//! would set them up.
//!
//! One resource, `getOrder`, is called through two entrances (contexts):
//! `web` and `rpc`. Three callers (origins) call it: `appA`, `appB` and
//! `appC`. Two flow rules, as Sentinel's `FlowRule`s with a `limitApp`:
//! - `appA` may call it 5 times a second (`limitApp = "appA"`);
//! - every other caller 3 times a second, each (`limitApp = "other"`).
//!
//! An authority rule denies `appC` on `rpc`'s path. For two simulated
//! seconds each caller sends a request every 100 ms through each entrance,
//! and a health check with no origin one every 500 ms through `web` (no
//! rule reads it; it counts in "other"). The program prints what the rules decided
//! per caller beside the cluster node's per-origin table, the two
//! entrances' counts, and the per-origin lines of Sentinel's metric log.
//!
//! Run: `cargo run --example origins`

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use leaparray::export::MetricLog;
use leaparray::stats::{
    AuthorityRule, AuthorityStrategy, ClusterNode, DefaultNode, EntranceNode, FlowRule, FlowRules,
    LimitApp, Origin, Parent, Strategy,
};
use leaparray::Decision;

const HALF_SECOND: NonZeroU64 = NonZeroU64::new(500).unwrap(); // 2 windows of 500 ms: 1 s
const A: Origin = Origin::named("appA");
const B: Origin = Origin::named("appB");
const C: Origin = Origin::named("appC");

/// The resource over every chain, with room for 8 callers.
static GET_ORDER: ClusterNode<8> = ClusterNode::millis();
/// The call tree: two contexts, the resource under each.
static WEB: EntranceNode = EntranceNode::millis("web");
static RPC: EntranceNode = EntranceNode::millis("rpc");
static IN_WEB: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&WEB));
static IN_RPC: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&RPC));

static FLOW: [FlowRule; 2] = [
    FlowRule::new(LimitApp::Origin(A), Strategy::Direct, HALF_SECOND, 5),
    FlowRule::new(LimitApp::Other, Strategy::Direct, HALF_SECOND, 3),
];
static DENIED_ON_RPC: [Origin; 1] = [C];

fn name(o: Origin) -> Option<&'static str> {
    [(A, "appA"), (B, "appB"), (C, "appC")]
        .into_iter()
        .find(|(x, _)| *x == o)
        .map(|(_, n)| n)
}

#[derive(Default)]
struct Decided {
    pass: u64,
    flow: u64,
    authority: u64,
}

fn main() {
    let flow = FlowRules::new(&FLOW);
    let authority = AuthorityRule::new(AuthorityStrategy::Deny, &DENIED_ON_RPC);
    let mut decided: BTreeMap<&str, Decided> = BTreeMap::new();

    for now in (0..2_000).step_by(100) {
        for (node, callers) in [(&IN_WEB, [A, B, C].as_slice()), (&IN_RPC, &[A, B, C])] {
            for &origin in callers {
                let d = decided.entry(name(origin).unwrap()).or_default();
                // Sentinel's slot chain: authority, then flow, then the
                // statistics of the call tree.
                if std::ptr::eq(node, &IN_RPC) && authority.check(Some(origin)) == Decision::Block {
                    d.authority += 1;
                    node.add_block(Some(origin), now, 1).unwrap();
                    continue;
                }
                match flow.check(node, Some(origin), now, 1) {
                    Decision::Pass => {
                        d.pass += 1;
                        node.entry(Some(origin), now, 1).exit(now + 20, false);
                    }
                    _ => {
                        d.flow += 1;
                        node.add_block(Some(origin), now, 1).unwrap();
                    }
                }
            }
        }
        if now % 500 == 0 {
            assert_eq!(flow.check(&IN_WEB, None, now, 1), Decision::Pass);
            IN_WEB.entry(None, now, 1).exit(now + 5, false);
        }
    }

    let now = 2_000 - 1;
    println!("getOrder, called through `web` and `rpc` by appA, appB, appC for 2 s:");
    println!("flow rules: appA 5/s; other (each caller no rule names) 3/s; authority: appC denied on rpc\n");
    println!("  caller | rules decided: pass  flow-blocked  denied | node, last minute: pass  block  success  avg rt");
    println!("  -------+---------------------------------------------+-------------------------------------------");
    let mut parts = (0, 0);
    for o in [A, B, C] {
        let n = name(o).unwrap();
        let d = &decided[n];
        let s = GET_ORDER
            .origin(o, now)
            .expect("resident: 3 callers, 8 nodes");
        let m = s.minute;
        println!(
            "  {n:<6} | {:>18} {:>13} {:>7} | {:>21} {:>6} {:>8} {:>6.1} ms",
            d.pass,
            d.flow,
            d.authority,
            m.pass,
            m.block,
            m.success,
            m.rt as f64 / m.success.max(1) as f64
        );
        assert_eq!((m.pass, m.block), (d.pass, d.flow + d.authority));
        parts = (parts.0 + m.pass, parts.1 + m.block);
    }
    let other = GET_ORDER.others(now).minute;
    println!(
        "  other  | {:>18} {:>13} {:>7} | {:>21} {:>6} {:>8}",
        "-", "-", "-", other.pass, other.block, other.success
    );
    let total = GET_ORDER.total();
    println!(
        "  total  | {:>18} {:>13} {:>7} | {:>21} {:>6} {:>8}",
        "",
        "",
        "",
        total.total_pass(now),
        total.minute().block(now),
        total.total_success(now)
    );
    assert_eq!(
        (parts.0 + other.pass, parts.1 + other.block),
        (total.total_pass(now), total.minute().block(now))
    );

    println!("\nBy entrance (the call tree):");
    for e in [&WEB, &RPC] {
        let s = e.stats();
        println!(
            "  {:<4} pass {:>3}  block {:>3}",
            e.name(),
            s.total_pass(now),
            s.minute().block(now)
        );
    }

    println!("\nSentinel's metric log, per origin (resource@origin), the first two seconds:");
    let mut lines = String::new();
    MetricLog::new(NonZeroU64::new(1_000).unwrap())
        .write_origins(&mut lines, "getOrder", &GET_ORDER, &name, 2_000, None)
        .unwrap();
    print!("{lines}");
}
