//! Review 49's reproducers, fixed: each of the reviewer's failed on the code as reviewed
//! (`75a168c`) and checks the fix or the documented behaviour. D9 (a
//! cycle of parents) cannot compile any more: its test is the
//! `compile_fail,E0391` example on `DefaultNode::new`.

use core::num::NonZeroU64;

#[cfg(feature = "std")]
use leaparray::export::Exposition;
use leaparray::export::MetricLog;
use leaparray::stats::{
    AuthorityRule, AuthorityStrategy, ClusterNode, Counts, DefaultNode, EntranceNode, FlowRule,
    FlowRules, LimitApp, Origin, Parent, Strategy,
};
use leaparray::Decision::{self, Block, Pass};

const HALF: NonZeroU64 = NonZeroU64::new(500).unwrap();
const A: Origin = Origin::named("appA");
const B: Origin = Origin::named("appB");

static RES: ClusterNode<16> = ClusterNode::millis();
static WEB: EntranceNode = EntranceNode::millis("web");
static IN_WEB: DefaultNode = DefaultNode::millis("res", &RES, Parent::Entrance(&WEB));

/// Sentinel's slot chain for one request: the flow check, then the
/// statistics of the call tree (an entry that exits at once, or a block).
fn request(
    rules: &FlowRules<'_>,
    node: &DefaultNode,
    origin: Option<Origin>,
    now: u64,
) -> Decision {
    let d = rules.check(node, origin, now, 1);
    if d == Pass {
        node.entry(origin, now, 1).exit(now + 1, false);
    } else {
        node.add_block(origin, now, 1).unwrap();
    }
    d
}

/// D1. Sentinel's `FlowRuleChecker.selectNodeByRequesterAndStrategy`: a
/// rule whose `limitApp` is a named origin and whose strategy is CHAIN
/// returns `selectReferenceNode`, i.e. the resource's DefaultNode in that
/// context, which counts every caller's passes in the context. So with
/// appB passing 3 times in `web`, appA's request against "appA, CHAIN(web),
/// count 2" meets passQps 3: 3 + 1 > 2, blocked. Here the rule's gate is
/// reached only by appA's own requests (the rule selects `None` for appB),
/// so appA passes.
#[test]
fn chain_rule_of_a_named_origin_reads_every_caller_in_the_context() {
    static CN: ClusterNode<16> = ClusterNode::millis();
    static E: EntranceNode = EntranceNode::millis("web");
    static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    let rules: Vec<FlowRule> = vec![FlowRule::new(
        LimitApp::Origin(A),
        Strategy::Chain("web"),
        HALF,
        2,
    )];
    let set = FlowRules::new(&rules);
    for t in 0..3 {
        assert_eq!(request(&set, &D, Some(B), t), Pass); // no rule limits appB
    }
    assert_eq!(
        D.stats().second().pass(10),
        3,
        "the node the rule reads in Sentinel"
    );
    assert_eq!(request(&set, &D, Some(A), 10), Block, "Sentinel: 3 + 1 > 2");
}

/// D1, the `other` side: "appA DIRECT 100" and "other, CHAIN(web), count
/// 2". Sentinel reads the DefaultNode in `web` for appB's request: appA's 3
/// passes are in it, so appB is blocked. Here the CHAIN gate is reached
/// only by "other" callers.
#[test]
fn chain_rule_of_other_reads_every_caller_in_the_context() {
    static CN: ClusterNode<16> = ClusterNode::millis();
    static E: EntranceNode = EntranceNode::millis("web");
    static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    let rules: Vec<FlowRule> = vec![
        FlowRule::new(LimitApp::Origin(A), Strategy::Direct, HALF, 100),
        FlowRule::new(LimitApp::Other, Strategy::Chain("web"), HALF, 2),
    ];
    let set = FlowRules::new(&rules);
    for t in 0..3 {
        assert_eq!(request(&set, &D, Some(A), t), Pass);
    }
    assert_eq!(request(&set, &D, Some(B), 10), Block, "Sentinel: 3 + 1 > 2");
}

/// D2. `FlowRules::check` asks every rule for room, then books in order;
/// its docs say a booking is left behind by a later refusal "only [in] a
/// race within a limit's concurrent requests". Single-threaded, in
/// Sentinel's order (two `other` rules; Sentinel's comparator keeps their
/// order): the `other` DIRECT rule's `KeyedGate<2, 16>` answers
/// `remaining >= 1` for a new caller whose insertion then evicts a key
/// whose memory cells are the caller's (`KeyedGate::remaining`: an upper
/// bound), so it refuses after the CHAIN gate booked. The CHAIN gate then
/// holds more than the passes: run 1 (CHAIN limit 10,000) admits `P`
/// requests; run 2 is the same traffic with the CHAIN limit `P`, which
/// Sentinel (and a gate holding exactly the passes) would decide the
/// same way. It admits fewer.
#[test]
fn a_refused_request_leaves_no_booking_single_threaded() {
    static CN: ClusterNode<16> = ClusterNode::millis();
    static E: EntranceNode = EntranceNode::millis("web");
    static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    let callers: Vec<Origin> = (0..200)
        .map(|i| Origin::named(&format!("caller-{i}")))
        .collect();
    let run = |chain_limit: u64| -> Vec<Decision> {
        let rules: [FlowRule<2, 16>; 2] = [
            FlowRule::new(LimitApp::Other, Strategy::Chain("web"), HALF, chain_limit),
            FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 1),
        ];
        let set = FlowRules::new(&rules);
        callers
            .iter()
            .map(|&o| set.check(&D, Some(o), 0, 1))
            .collect()
    };
    let first = run(10_000);
    let passes = first.iter().filter(|d| **d == Pass).count() as u64;
    let second = run(passes);
    let passes2 = second.iter().filter(|d| **d == Pass).count() as u64;
    assert_eq!(
        passes2, passes,
        "the CHAIN gate booked for refused requests"
    );
    assert_eq!(second, first);
}

/// D3. A RELATE rule reads the related node's passes over that node's
/// second-level interval, as Sentinel's `passQps` (`rollingCounterInSecond`,
/// 1 s for `millis`); its own window is not used (`FlowRule::new`'s
/// docs). A rule "2 per 200 ms" still blocks at 300 ms for 2 passes made at
/// 0, and passes once they leave the related node's interval (1,000 ms).
#[test]
fn relate_rule_reads_the_related_nodes_interval_not_its_own_window() {
    static REF: ClusterNode<4> = ClusterNode::millis();
    const TENTH: NonZeroU64 = NonZeroU64::new(100).unwrap();
    let rules: Vec<FlowRule> = vec![FlowRule::new(
        LimitApp::Default,
        Strategy::Relate(&REF),
        TENTH,
        2,
    )];
    let set = FlowRules::new(&rules);
    REF.add_pass(None, 0, 2).unwrap();
    assert_eq!(set.check(&IN_WEB, None, 0, 1), Block); // 2 + 1 > 2 in the interval
    assert_eq!(set.check(&IN_WEB, None, 300, 1), Block); // the related node's 1 s interval
    assert_eq!(set.check(&IN_WEB, None, 999, 1), Block);
    assert_eq!(set.check(&IN_WEB, None, 1_000, 1), Pass); // window 0 slid out
}

/// D4. Export: "no two rows of a resource share a label"
/// (GUARANTEES, "A resource's origins"). `origin_label` accepts a name
/// that starts with `#`; an origin with no name is written `#` and its
/// hash. So a caller named "#00000000000000ab" and the origin whose hash
/// is 0xab share a label, in the metric log and in the Prometheus
/// exposition.
#[test]
fn two_origins_never_share_a_label() {
    let cn = ClusterNode::<4>::millis();
    let (named, unnamed) = (Origin::named("x"), Origin::from_hash(0xab));
    cn.add_pass(Some(named), 100, 1).unwrap();
    cn.add_pass(Some(unnamed), 100, 2).unwrap();
    let names = |o: Origin| (o == named).then_some("#00000000000000ab");
    let log = MetricLog::new(NonZeroU64::new(1_000).unwrap());
    let mut out = String::new();
    log.write_origins(&mut out, "r", &cn, &names, 1_000, None)
        .unwrap();
    let fields: Vec<&str> = out.lines().map(|l| l.split('|').nth(1).unwrap()).collect();
    let mut unique = fields.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), fields.len(), "metric log rows: {fields:?}");
}

/// D4 in the Prometheus exposition (feature `std`): the same two origins,
/// one series label. Run: `cargo test --release --features std --test
/// review49 -- --ignored`.
#[cfg(feature = "std")]
#[test]
fn two_origins_never_share_a_prometheus_label() {
    let cn = ClusterNode::<4>::millis();
    let (named, unnamed) = (Origin::named("x"), Origin::from_hash(0xab));
    cn.add_pass(Some(named), 100, 1).unwrap();
    cn.add_pass(Some(unnamed), 100, 2).unwrap();
    let names = |o: Origin| (o == named).then_some("#00000000000000ab");
    let mut e = Exposition::new("x").unwrap();
    e.cluster("r", &cn, &names, 1_000).unwrap();
    let text = e.to_string();
    let concurrency: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("x_origin_concurrency{"))
        .collect();
    let mut u = concurrency
        .iter()
        .map(|l| l.split('}').next().unwrap())
        .collect::<Vec<_>>();
    let n = u.len();
    u.sort_unstable();
    u.dedup();
    assert_eq!(u.len(), n, "Prometheus series: {concurrency:?}");
}

/// D5. Sentinel's empty origin ("" from `ContextUtil.enter(name)`) is no
/// origin: `AuthorityRuleChecker.passCheck` passes it, `isOtherOrigin("")`
/// is false, ClusterBuilderSlot makes no origin node. `Origin::named("")`
/// (the docs: "the name given to `ContextUtil.enter(name, origin)`") is a
/// caller like any other: a white list blocks it and an `other` rule
/// limits it.
#[test]
fn the_empty_origin_is_no_origin() {
    let empty = Some(Origin::named(""));
    static ONLY_A: [Origin; 1] = [A];
    assert_eq!(
        AuthorityRule::new(AuthorityStrategy::Allow, &ONLY_A).check(empty),
        Pass
    );
    let rules: Vec<FlowRule> = vec![FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 1)];
    let set = FlowRules::new(&rules);
    assert!(!set.is_other(empty));
}

/// D5, the names Sentinel compares: `isOtherOrigin` is false for an
/// origin equal to some rule's `limitApp` string, so a caller named
/// "other" is not limited by an `other` rule, nor one named "default"
/// when a `default` rule exists. An empty origin records into no origin
/// node (ClusterBuilderSlot makes none).
#[test]
fn origins_named_other_or_default_are_not_other() {
    let rules: Vec<FlowRule> = vec![
        FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 1),
        FlowRule::new(LimitApp::Default, Strategy::Direct, HALF, 100),
    ];
    let set = FlowRules::new(&rules);
    assert!(!set.is_other(Some(Origin::named("other"))));
    assert!(!set.is_other(Some(Origin::named("default"))));
    assert!(set.is_other(Some(B)));
    let cn = ClusterNode::<4>::millis();
    cn.add_pass(Some(Origin::named("")), 0, 2).unwrap();
    assert_eq!(cn.origins(0).count(), 0);
    assert_eq!(cn.others(0).second.pass, 2);
}

/// D6. The partition's exception for a saturated record (GUARANTEES, "A
/// resource's origins"; `cluster.rs`, "What a reader sees"): a record the
/// totals refuse as `Saturated` (past `MAX_COUNT` in a window) still counts
/// whole in its origin's node, and the caller gets the error. Two origins
/// of 2^46 passes each: 2^47 in their nodes, `MAX_COUNT` = 2^47 - 1 in the
/// totals.
#[test]
fn a_saturated_record_counts_whole_in_its_origin_and_returns_the_error() {
    let cn = ClusterNode::<4>::millis();
    let half = 1u64 << 46;
    assert_eq!(cn.add_pass(Some(A), 0, half), Ok(()));
    assert_eq!(
        cn.add_pass(Some(B), 0, half),
        Err(leaparray::AddError::Saturated)
    );
    let parts = cn
        .origins(0)
        .fold(cn.others(0).second, |c, o| c.plus(o.second));
    let total = Counts::of(cn.total().second(), 0).pass;
    assert_eq!(total, leaparray::MAX_COUNT);
    assert_eq!(parts.pass, 2 * half, "the origins hold what was recorded");
}

/// D7. `other` DIRECT under a flood (`rules.rs`, "A flood of callers"):
/// Sentinel keeps an origin node per caller (a map that grows), so a
/// caller within its own limit always passes. Here the rule's
/// `KeyedGate<2, 64>` folds evicted callers into its memory and starts
/// new ones from its estimate (fail closed): 1,600 callers making 3
/// requests each in one second against "other, 3 a second" are 4,800
/// requests Sentinel admits. No caller passes more than 3; 3,781 pass,
/// the number `rules.rs` quotes.
#[test]
#[cfg_attr(
    miri,
    ignore = "4,800 requests through a ClusterNode: minutes under Miri (tests/origins_flood.rs runs a flood there)"
)]
fn other_callers_within_their_limit_are_refused_under_a_flood_never_over() {
    static CN: ClusterNode<16> = ClusterNode::millis();
    static E: EntranceNode = EntranceNode::millis("web");
    static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    let rules: Vec<FlowRule> = vec![FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 3)];
    let set = FlowRules::new(&rules);
    let callers: Vec<Origin> = (0..1_600)
        .map(|i| Origin::named(&format!("c{i}")))
        .collect();
    let mut per_caller = vec![0u64; callers.len()];
    for round in 0..3u64 {
        for (i, &o) in callers.iter().enumerate() {
            // All within one second: windows 0 and 1 of 500 ms.
            let now = round * 10 + i as u64 * 900 / 1_600;
            per_caller[i] += u64::from(set.check(&D, Some(o), now, 1) == Pass);
        }
    }
    assert!(
        per_caller.iter().all(|&p| p <= 3),
        "never over a caller's limit"
    );
    let admitted: u64 = per_caller.iter().sum();
    assert_eq!(admitted, 3_781, "the number rules.rs quotes");
    // With no more callers than the table holds, each gets its limit.
    let few: Vec<FlowRule> = vec![FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 3)];
    let few = FlowRules::new(&few);
    let passed = (0..3)
        .flat_map(|_| callers[..16].iter())
        .filter(|&&o| few.check(&D, Some(o), 0, 1) == Pass)
        .count();
    assert_eq!(passed, 48);
}

/// D8. `ClusterNode::with_nodes` refuses nodes whose windows differ
/// ("every node needs the totals' windows"), but `DefaultNode::new` takes
/// a node in µs under a cluster node and an entrance in ms without a
/// word: one `now` then feeds windows of two units (silently wrong
/// rates). The standards: an invalid configuration is a compile error in a
/// `static` and a panic with the reason at run time.
#[test]
fn a_default_node_with_other_windows_than_its_cluster_is_refused() {
    static CN: ClusterNode<4> = ClusterNode::millis();
    static E: EntranceNode = EntranceNode::millis("web");
    const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
    const TENTH: NonZeroU64 = NonZeroU64::new(100_000).unwrap();
    let built = std::panic::catch_unwind(|| {
        DefaultNode::new(
            "r",
            &CN,
            Parent::Entrance(&E),
            leaparray::stats::StatisticNode::new(TENTH, US, US),
        )
    });
    assert!(
        built.is_err(),
        "a µs node under a ms cluster node was built"
    );
}

// D9. A cycle of parents (`X: Parent::Resource(&Y)`, `Y:
// Parent::Resource(&X)`) no longer compiles: `DefaultNode::new` reads its
// parent's entrance, so each static's initializer needs the other's
// (E0391). The `compile_fail,E0391` example on `DefaultNode::new` is its
// test; a test here could not compile.

/// D10. A bad limit or windows from run-time configuration are an error,
/// not a panic: `FlowRule::try_new`, `ClusterNode::try_with_nodes`.
#[test]
fn bad_configuration_is_an_error_from_try_new() {
    use leaparray::stats::{ClusterError, OriginNode, RuleError, StatisticNode};
    let too_many = FlowRule::<2, 64>::try_new(LimitApp::Other, Strategy::Direct, HALF, 1 << 20);
    assert_eq!(
        too_many.err(),
        Some(RuleError::LimitTooLarge { max: 32_767 })
    );
    let over = FlowRule::<2, 64>::try_new(LimitApp::Default, Strategy::Direct, HALF, u64::MAX);
    assert_eq!(
        over.err(),
        Some(RuleError::LimitTooLarge {
            max: leaparray::MAX_COUNT
        })
    );
    assert!(FlowRule::<2, 64>::try_new(LimitApp::Other, Strategy::Direct, HALF, 3).is_ok());
    const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
    let nodes = [const { OriginNode::new(StatisticNode::new(US, US, US)) }; 2];
    let built =
        ClusterNode::<2>::try_with_nodes(StatisticNode::millis(), StatisticNode::millis(), nodes);
    assert_eq!(built.err(), Some(ClusterError::WindowsDiffer));
}
