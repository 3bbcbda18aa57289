//! Contexts and the rules that read them: Sentinel's `FlowRuleCheckerTest`
//! and `AuthoritySlotTest` scenarios (rewritten, with their names and
//! numbers), the call tree of `static`s, and exact decisions for "A may
//! call 50 times a second, every other caller 200".

use core::num::NonZeroU64;

use leaparray::stats::{
    AuthorityRule, AuthorityStrategy, ClusterNode, DefaultNode, EntranceNode, FlowRule, FlowRules,
    LimitApp, Origin, Parent, Selected, Strategy,
};
use leaparray::Decision::{Block, Pass};

const HALF: NonZeroU64 = NonZeroU64::new(500).unwrap();
const APP_A: Origin = Origin::named("appA");
const APP_B: Origin = Origin::named("appB");

static RES: ClusterNode<16> = ClusterNode::millis();
static REF: ClusterNode<16> = ClusterNode::millis();
static GOOD: EntranceNode = EntranceNode::millis("good_context");
static OTHER_CTX: EntranceNode = EntranceNode::millis("other_context");
static IN_GOOD: DefaultNode = DefaultNode::millis("res", &RES, Parent::Entrance(&GOOD));
static IN_OTHER: DefaultNode = DefaultNode::millis("res", &RES, Parent::Entrance(&OTHER_CTX));

fn rule(limit_app: LimitApp, strategy: Strategy, count: u64) -> FlowRule {
    FlowRule::new(limit_app, strategy, HALF, count)
}

/// `testDefaultLimitAppFlowSelectNode`: `default` reads the cluster node.
#[test]
fn default_limit_app_selects_the_cluster_node() {
    let r = rule(LimitApp::Default, Strategy::Direct, 1);
    assert_eq!(r.select(&IN_GOOD, Some(APP_A), true), Selected::Cluster);
    assert_eq!(r.select(&IN_GOOD, None, false), Selected::Cluster);
}

/// `testCustomOriginFlowSelectNode`: a rule for appA reads appA's origin
/// node for appA's requests; a rule for appB selects nothing for them.
#[test]
fn a_named_origin_selects_its_origin_node_or_nothing() {
    let for_a = rule(LimitApp::Origin(APP_A), Strategy::Direct, 1);
    let for_b = rule(LimitApp::Origin(APP_B), Strategy::Direct, 1);
    assert_eq!(for_a.select(&IN_GOOD, Some(APP_A), false), Selected::Origin);
    assert_eq!(for_b.select(&IN_GOOD, Some(APP_A), true), Selected::None);
}

/// `testOtherOriginFlowSelectNode`: rules for appA (count 1) and `other`
/// (count 2): appB is "other" and the `other` rule reads its origin
/// node; appA is named by a rule, so `other` selects nothing for it.
#[test]
fn other_selects_the_origin_node_of_origins_no_rule_names() {
    let rules = [
        rule(LimitApp::Origin(APP_A), Strategy::Direct, 1),
        rule(LimitApp::Other, Strategy::Direct, 2),
    ];
    let set = FlowRules::new(&rules);
    let other = &rules[1];
    let b = Some(APP_B);
    assert_eq!(other.select(&IN_GOOD, b, set.is_other(b)), Selected::Origin);
    let a = Some(APP_A);
    assert_eq!(other.select(&IN_GOOD, a, set.is_other(a)), Selected::None);
    // And the counts: appA 1, appB 2 (its own), per interval.
    let d = |o| set.check(&IN_GOOD, Some(o), 0, 1);
    assert_eq!([d(APP_A), d(APP_A)], [Pass, Block]);
    assert_eq!([d(APP_B), d(APP_B), d(APP_B)], [Pass, Pass, Block]);
}

/// `testSelectNodeForEmptyReference`: CHAIN with no reference (here a
/// context named "") selects nothing.
#[test]
fn chain_with_an_empty_reference_selects_nothing() {
    let r = rule(LimitApp::Default, Strategy::Chain(""), 1);
    assert_eq!(r.select(&IN_GOOD, None, false), Selected::None);
}

/// `testSelectNodeForRelateReference`: RELATE reads the referenced
/// resource's cluster node: the decision follows its passes.
#[test]
fn relate_reads_the_referenced_cluster_node() {
    let rules = [rule(LimitApp::Default, Strategy::Relate(&REF), 1)];
    let set = FlowRules::new(&rules);
    assert_eq!(rules[0].select(&IN_GOOD, None, false), Selected::Related);
    let t = 10_000;
    assert_eq!(set.check(&IN_GOOD, None, t, 1), Pass); // REF has no pass
    assert_eq!(set.check(&IN_GOOD, None, t, 1), Pass); // nothing booked
    REF.add_pass(None, t, 1).unwrap();
    assert_eq!(set.check(&IN_GOOD, None, t, 1), Block); // 1 + 1 > 1
    assert_eq!(set.check(&IN_GOOD, None, t + 1_000, 1), Pass); // slid out
}

/// `testSelectReferenceNodeForContextEntrance`: CHAIN("good_context")
/// reads the resource's node in that context only.
#[test]
fn chain_selects_the_node_in_its_context_only() {
    let rules = [rule(LimitApp::Default, Strategy::Chain("good_context"), 1)];
    assert_eq!(rules[0].select(&IN_GOOD, None, false), Selected::Chain);
    assert_eq!(rules[0].select(&IN_OTHER, None, false), Selected::None);
    let set = FlowRules::new(&rules);
    assert_eq!(
        [
            set.check(&IN_GOOD, None, 0, 1),
            set.check(&IN_GOOD, None, 0, 1)
        ],
        [Pass, Block]
    );
    assert_eq!(set.check(&IN_OTHER, None, 0, 1), Pass);
}

/// `testPassCheckSelectEmptyNodeSuccess`: a rule for "abc" and a request
/// of "def": no node, so it passes, however many.
#[test]
fn a_rule_that_selects_no_node_passes() {
    let rules = [rule(
        LimitApp::Origin(Origin::named("abc")),
        Strategy::Direct,
        1,
    )];
    let set = FlowRules::new(&rules);
    let def = Some(Origin::named("def"));
    assert!((0..10).all(|_| set.check(&IN_GOOD, def, 0, 1) == Pass));
}

/// The issue's rule: "A may call getOrder 50 times a second, every other
/// caller 200" (Sentinel's `other`: each caller its own 200), exact per
/// interval, and a request refused by the first rule books nothing in
/// the second.
#[test]
fn a_50_for_a_and_200_for_each_other_caller() {
    static RULES: [FlowRule; 2] = [
        FlowRule::new(LimitApp::Origin(APP_A), Strategy::Direct, HALF, 50),
        FlowRule::new(LimitApp::Other, Strategy::Direct, HALF, 200),
    ];
    let set = FlowRules::new(&RULES);
    let count = |o: Option<Origin>, now| {
        (0..300)
            .filter(|_| set.check(&IN_GOOD, o, now, 1) == Pass)
            .count()
    };
    assert_eq!(count(Some(APP_A), 0), 50);
    assert_eq!(count(Some(APP_B), 0), 200);
    assert_eq!(count(Some(Origin::named("appC")), 0), 200);
    assert_eq!(count(None, 0), 300); // no rule reads a caller with no origin
                                     // The next interval.
    assert_eq!(count(Some(APP_A), 1_000), 50);
}

/// `AuthoritySlotTest.testCheckAuthorityNoExceptionItemsSuccess`: appA
/// passes a white list "appA,appB" and a black list "appD".
#[test]
fn authority_white_and_black_lists_pass_appa() {
    let (ab, d) = ([APP_A, APP_B], [Origin::named("appD")]);
    let white = AuthorityRule::new(AuthorityStrategy::Allow, &ab);
    let black = AuthorityRule::new(AuthorityStrategy::Deny, &d);
    assert_eq!(white.check(Some(APP_A)), Pass);
    assert_eq!(black.check(Some(APP_A)), Pass);
}

/// `testCheckAuthorityNoExceptionItemsBlackFail`: a black list
/// "appA,appC" blocks appA.
#[test]
fn authority_black_list_blocks_appa() {
    let ac = [APP_A, Origin::named("appC")];
    let black = AuthorityRule::new(AuthorityStrategy::Deny, &ac);
    assert_eq!(black.check(Some(APP_A)), Block);
}

/// `testCheckAuthorityNoExceptionItemsWhiteFail`: a white list
/// "appB, appE" blocks appA; and (`passCheck`) a request with no origin
/// or a rule with no origins passes.
#[test]
fn authority_white_list_blocks_appa() {
    let be = [APP_B, Origin::named("appE")];
    let white = AuthorityRule::new(AuthorityStrategy::Allow, &be);
    assert_eq!(white.check(Some(APP_A)), Block);
    assert_eq!(white.check(None), Pass);
    assert_eq!(
        AuthorityRule::new(AuthorityStrategy::Allow, &[]).check(Some(APP_A)),
        Pass
    );
}

/// NodeSelectorSlot's tree as `static`s: one resource under two
/// entrances is two DefaultNodes and one ClusterNode; a resource entered
/// inside another counts in its own node and the cluster node, and not
/// in the entrance (which counts its direct children, as Sentinel's sums
/// them).
#[test]
fn the_call_tree_records_each_entry_in_its_nodes() {
    static A: ClusterNode<4> = ClusterNode::millis();
    static B: ClusterNode<4> = ClusterNode::millis();
    static WEB: EntranceNode = EntranceNode::millis("web");
    static RPC: EntranceNode = EntranceNode::millis("rpc");
    static WEB_A: DefaultNode = DefaultNode::millis("a", &A, Parent::Entrance(&WEB));
    static RPC_A: DefaultNode = DefaultNode::millis("a", &A, Parent::Entrance(&RPC));
    static WEB_A_B: DefaultNode = DefaultNode::millis("b", &B, Parent::Resource(&WEB_A));
    let outer = WEB_A.entry(Some(APP_A), 0, 1);
    let inner = WEB_A_B.entry(Some(APP_A), 5, 1);
    assert_eq!(
        [
            WEB.stats(),
            WEB_A.stats(),
            WEB_A_B.stats(),
            A.total(),
            B.total()
        ]
        .map(|s| s.concurrency()),
        [1, 1, 1, 1, 1]
    );
    inner.exit(15, false);
    outer.exit(30, true);
    RPC_A.entry(None, 40, 2).exit(50, false);
    RPC_A.add_block(Some(APP_B), 60, 1).unwrap();
    let t = 100;
    assert_eq!(
        (WEB.stats().total_pass(t), WEB.stats().total_success(t)),
        (1, 1)
    );
    assert_eq!(
        (WEB.stats().avg_rt(t), WEB.stats().total_exception(t)),
        (30.0, 1)
    );
    assert_eq!(
        (RPC.stats().total_pass(t), RPC.stats().block_request(t)),
        (2, 1)
    );
    assert_eq!(
        (WEB_A_B.stats().total_pass(t), WEB_A_B.context()),
        (1, "web")
    );
    assert_eq!(
        (A.total().total_pass(t), A.total().block_request(t)),
        (3, 1)
    );
    assert_eq!(A.total().total_success(t), 3);
    assert_eq!(B.total().avg_rt(t), 10.0);
    let a = A.origin(APP_A, t).unwrap();
    assert_eq!(
        (a.minute.pass, a.minute.exception, a.concurrency),
        (1, 1, 0)
    );
    assert_eq!(A.origin(APP_B, t).unwrap().minute.block, 1);
    assert_eq!(A.others(t).minute.pass, 2); // the entry with no origin
}

/// Rules checked together: a request that the second rule refuses books
/// nothing in the first (every rule is asked for room first).
#[test]
fn a_request_refused_by_one_rule_books_nothing_in_another() {
    static RULES: [FlowRule; 2] = [
        FlowRule::new(LimitApp::Default, Strategy::Direct, HALF, 3),
        FlowRule::new(LimitApp::Origin(APP_A), Strategy::Direct, HALF, 1),
    ];
    let set = FlowRules::new(&RULES);
    let d = |o| set.check(&IN_GOOD, Some(o), 0, 1);
    assert_eq!([d(APP_A), d(APP_A), d(APP_A)], [Pass, Block, Block]);
    assert_eq!([d(APP_B), d(APP_B), d(APP_B)], [Pass, Pass, Block]);
}
