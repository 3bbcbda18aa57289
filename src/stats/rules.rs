//! Sentinel's flow rules by caller and call chain, and its authority
//! rules: a [`FlowRule`] with a `limitApp` ([`LimitApp`]) and a
//! `strategy` ([`Strategy`]) decides on the node Sentinel's
//! `FlowRuleChecker.selectNodeByRequesterAndStrategy` would pick
//! ([`Selected`]); an [`AuthorityRule`] allows or denies origins.
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, FlowRule, FlowRules, LimitApp, Origin, Parent, Strategy};
//! use leaparray::Decision::{Block, Pass};
//!
//! const SECOND: NonZeroU64 = NonZeroU64::new(500).unwrap(); // 2 windows of 500 ms
//! static GET_ORDER: ClusterNode<64> = ClusterNode::millis();
//! static WEB: EntranceNode = EntranceNode::millis("web");
//! static NODE: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&WEB));
//! // Service A may call getOrder 2 times a second; every other caller 3.
//! static RULES: [FlowRule; 2] = [
//!     FlowRule::new(LimitApp::Origin(Origin::named("A")), Strategy::Direct, SECOND, 2),
//!     FlowRule::new(LimitApp::Other, Strategy::Direct, SECOND, 3),
//! ];
//! let rules = FlowRules::new(&RULES);
//! let (a, b) = (Some(Origin::named("A")), Some(Origin::named("B")));
//! assert_eq!([0, 1, 2].map(|_| rules.check(&NODE, a, 0, 1)), [Pass, Pass, Block]);
//! assert_eq!([0, 1, 2, 3].map(|_| rules.check(&NODE, b, 0, 1)), [Pass, Pass, Pass, Block]);
//! assert_eq!(rules.check(&NODE, None, 0, 1), Pass); // no rule reads a caller with no origin
//! ```
//!
//! # The decision
//!
//! Sentinel compares the picked node's passes per second with the rule's
//! count, and records a pass there only after every check passed: two
//! threads can both read room for one. Here a rule on a node of this
//! resource is a gate that books what it admits, exactly ([`Gate`],
//! [`KeyedGate`]), per interval of the rule's `N` windows:
//!
//! | rule | Sentinel's node | here |
//! |---|---|---|
//! | `limitApp` = an origin, DIRECT | the origin's node | a [`Gate`] only that origin's requests reach |
//! | `other`, DIRECT | the caller's origin node (each caller its own count) | a [`KeyedGate`] keyed by origin: each other origin its own limit, in fixed memory (below, "A flood of callers") |
//! | `default`, DIRECT | the resource's cluster node | a [`Gate`] every request reaches |
//! | any, CHAIN(context) | the resource's node in that context (every caller's passes there) | a [`Gate`] every pass in that context reaches; asked for room only by the requests the rule applies to |
//! | any, RELATE(resource) | the other resource's cluster node | that node's passes in its second-level interval, plus `n`, against the limit (the rule's window is not used); nothing booked |
//!
//! So a CHAIN rule for appA with the count 2 blocks appA once any callers
//! passed twice in that context within the rule's interval, as Sentinel's
//! `selectReferenceNode` (the context's `DefaultNode`) does. The gate
//! counts the passes [`FlowRules::check`] admits at a [`DefaultNode`] of
//! that context; entries made without a check are not in it.
//!
//! [`FlowRules::check`] asks every rule that applies for room first (a
//! gate's `remaining`) and books nothing if one has none. Then it books
//! the [`KeyedGate`]s (`other` DIRECT: their `remaining` is an upper
//! bound when the caller's insertion evicts, and they have no cancel),
//! then the [`Gate`]s in order, taking back what the gates before booked
//! if one refuses (as a [`GateSet`](crate::GateSet)), then counts the pass
//! in the CHAIN gates that did not apply. So with one thread a refused
//! request leaves nothing booked, except with two `other` DIRECT rules on
//! one resource: the second's refusal after an eviction leaves the
//! first's booking. Under races (room read, then another request takes
//! it): a gate's refusal leaves the `other` DIRECT booking made before it
//! (a caller's permit used for nothing); a gate booking taken back was
//! counted by other requests meanwhile (a false refusal, as in
//! [`GateSet`](crate::GateSet)); a RELATE rule reads its node again, with
//! no booking. No rule ever admits over its limit. Sentinel sorts a
//! resource's rules (named origins, then `other`, then `default`); give
//! them in that order to check them in Sentinel's.
//!
//! # A flood of callers
//!
//! Sentinel keeps a node per caller, so an `other` caller within its own
//! count always passes. The `other` DIRECT rule keeps `CAP` callers; past
//! that it evicts the least active and folds its count into the table's
//! memory, and a new caller starts from that memory's estimate
//! ([`KeyedGate`], "fail closed"): no caller ever passes over its limit,
//! but a caller within it can be refused while more than `CAP` callers
//! are active in an interval. For 1,600 callers of 3 requests each in one
//! second against "other, 3 a second" with `CAP` = 64, 3,781 of the 4,800
//! pass (`tests/review49.rs`, `other_callers_within_their_limit_are_refused_under_a_flood_never_over`).
//! Size `CAP` for the callers active in an interval.

use core::fmt;
use core::num::NonZeroU64;

use crate::gate::decision::Decision;
use crate::gate::packed::Outcome;
use crate::gate::Gate;
use crate::keyed::KeyedGate;
use crate::stats::cluster::Cluster;
use crate::stats::context::DefaultNode;
use crate::stats::origin::Origin;
use crate::sync::const_fn_unless_loom;
use crate::MAX_COUNT;

/// Whose requests a flow rule limits: Sentinel's `limitApp`.
///
/// ```
/// use leaparray::stats::{LimitApp, Origin};
/// assert_ne!(LimitApp::Origin(Origin::named("A")), LimitApp::Default);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LimitApp {
    /// One caller.
    Origin(Origin),
    /// Every caller (`default`).
    Default,
    /// Each caller that no rule of the resource names (`other`).
    Other,
}

/// Which node a flow rule reads: Sentinel's `strategy`.
///
/// ```
/// use leaparray::stats::Strategy;
/// assert!(matches!(Strategy::Chain("web"), Strategy::Chain(c) if c == "web"));
/// ```
#[derive(Clone, Copy)]
pub enum Strategy {
    /// The resource itself (`STRATEGY_DIRECT`).
    Direct,
    /// Another resource's cluster node (`STRATEGY_RELATE` with its
    /// `refResource`).
    Relate(&'static dyn Cluster),
    /// The resource in one context only (`STRATEGY_CHAIN` with the
    /// context's name as `refResource`).
    Chain(&'static str),
}

impl fmt::Debug for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Direct => write!(f, "Direct"),
            Strategy::Relate(_) => write!(f, "Relate(..)"),
            Strategy::Chain(c) => write!(f, "Chain({c:?})"),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Strategy {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Strategy::Direct => defmt::write!(f, "Direct"),
            Strategy::Relate(_) => defmt::write!(f, "Relate(..)"),
            Strategy::Chain(c) => defmt::write!(f, "Chain({=str})", c),
        }
    }
}

/// The node Sentinel's checker picks for a rule and a request
/// ([`FlowRule::select`]).
///
/// ```
/// use leaparray::stats::Selected;
/// assert_ne!(Selected::None, Selected::Cluster);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Selected {
    /// None: the rule does not apply; the request passes it.
    None,
    /// The caller's origin node.
    Origin,
    /// The resource's cluster node.
    Cluster,
    /// The related resource's cluster node.
    Related,
    /// The resource's node in this context.
    Chain,
}

/// Why [`FlowRule::try_new`] built no rule.
///
/// ```
/// use leaparray::stats::RuleError;
/// let e = RuleError::LimitTooLarge { max: 7 };
/// assert_eq!(e.to_string(), "the limit is above 7, the most the rule's gate holds");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RuleError {
    /// The limit does not fit the rule's gate: `max` is the largest that
    /// does ([`MAX_COUNT`] for a [`Gate`], [`KeyedGate::max_limit`] for
    /// an `other` DIRECT rule).
    LimitTooLarge {
        /// The largest limit the rule takes.
        max: u64,
    },
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::LimitTooLarge { max } => {
                write!(
                    f,
                    "the limit is above {max}, the most the rule's gate holds"
                )
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for RuleError {}

/// How a rule decides (module docs, "The decision"). Every rule is as
/// large as an `other` DIRECT one: nothing is allocated to box it into.
#[allow(clippy::large_enum_variant)]
enum Limiter<const N: usize, const CAP: usize> {
    One(Gate<N>),
    PerOrigin(KeyedGate<N, CAP>),
    Reads,
}

/// A flow rule: Sentinel's `FlowRule` with its `limitApp`, `strategy` and
/// `count` as a limit per interval of `N` windows (QPS grade, default
/// controller); an `other` DIRECT rule keeps up to `CAP` callers' counts.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{FlowRule, LimitApp, Strategy};
/// static R: FlowRule = FlowRule::new(LimitApp::Default, Strategy::Direct, NonZeroU64::new(500).unwrap(), 200);
/// assert_eq!((R.limit_app(), R.limit()), (LimitApp::Default, 200));
/// ```
pub struct FlowRule<const N: usize = 2, const CAP: usize = 64> {
    limit_app: LimitApp,
    strategy: Strategy,
    limit: u64,
    limiter: Limiter<N, CAP>,
}

impl<const N: usize, const CAP: usize> FlowRule<N, CAP> {
    const_fn_unless_loom! {
        /// A rule limiting `limit_app`'s requests on the node `strategy` reads
        /// to `limit` per interval of `N` windows of `window` ticks. A
        /// RELATE rule books nothing and does not use `window`: as
        /// Sentinel's `passQps`, it reads the related node's passes over
        /// that node's second-level interval (1 s for
        /// [`ClusterNode::millis`](crate::stats::ClusterNode::millis); a node
        /// of another interval is compared per its interval, where Sentinel
        /// divides by its length in seconds).
        ///
        /// # Panics
        ///
        /// As [`Gate::new`], or for `other` DIRECT as [`KeyedGate::new`]
        /// (a limit that does not fit): a compile error in a `static`.
        /// [`try_new`](Self::try_new) returns the error.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use leaparray::stats::{FlowRule, LimitApp, Origin, Strategy};
        /// const W: NonZeroU64 = NonZeroU64::new(500).unwrap();
        /// static BY_A: FlowRule = FlowRule::new(LimitApp::Origin(Origin::named("A")), Strategy::Direct, W, 50);
        /// static IN_WEB: FlowRule = FlowRule::new(LimitApp::Default, Strategy::Chain("web"), W, 100);
        /// assert_eq!(BY_A.limit(), 50);
        /// ```
        #[must_use]
        pub fn new(
            limit_app: LimitApp,
            strategy: Strategy,
            window: NonZeroU64,
            limit: u64,
        ) -> Self {
            let limiter = match (limit_app, strategy) {
                (_, Strategy::Relate(_)) => Limiter::Reads,
                (LimitApp::Other, Strategy::Direct) => {
                    Limiter::PerOrigin(KeyedGate::new(window, limit))
                }
                _ => Limiter::One(Gate::new(window, limit)),
            };
            FlowRule {
                limit_app,
                strategy,
                limit,
                limiter,
            }
        }
    }

    /// [`new`](Self::new), or why not: the limit does not fit the rule's
    /// gate.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{FlowRule, LimitApp, RuleError, Strategy};
    /// let w = NonZeroU64::new(500).unwrap();
    /// assert!(FlowRule::<2, 64>::try_new(LimitApp::Default, Strategy::Direct, w, 1_000_000).is_ok());
    /// let e = FlowRule::<2, 64>::try_new(LimitApp::Other, Strategy::Direct, w, 1_000_000);
    /// assert_eq!(e.err(), Some(RuleError::LimitTooLarge { max: 32_767 }));
    /// ```
    pub fn try_new(
        limit_app: LimitApp,
        strategy: Strategy,
        window: NonZeroU64,
        limit: u64,
    ) -> Result<Self, RuleError> {
        let limiter = match (limit_app, strategy) {
            (_, Strategy::Relate(_)) => Limiter::Reads,
            (LimitApp::Other, Strategy::Direct) => match KeyedGate::try_new(window, limit) {
                Ok(k) => Limiter::PerOrigin(k),
                Err(_) => {
                    return Err(RuleError::LimitTooLarge {
                        max: KeyedGate::<N, CAP>::max_limit(),
                    })
                }
            },
            _ => match Gate::try_new(window, limit) {
                Ok(g) => Limiter::One(g),
                Err(_) => return Err(RuleError::LimitTooLarge { max: MAX_COUNT }),
            },
        };
        Ok(FlowRule {
            limit_app,
            strategy,
            limit,
            limiter,
        })
    }

    /// The rule's `limitApp`.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{FlowRule, LimitApp, Strategy};
    /// let r: FlowRule = FlowRule::new(LimitApp::Other, Strategy::Direct, NonZeroU64::new(500).unwrap(), 2);
    /// assert_eq!(r.limit_app(), LimitApp::Other);
    /// ```
    #[must_use]
    pub const fn limit_app(&self) -> LimitApp {
        self.limit_app
    }

    /// The rule's strategy.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{FlowRule, LimitApp, Strategy};
    /// let r: FlowRule = FlowRule::new(LimitApp::Default, Strategy::Chain("web"), NonZeroU64::new(500).unwrap(), 2);
    /// assert!(matches!(r.strategy(), Strategy::Chain("web")));
    /// ```
    #[must_use]
    pub const fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The limit per interval (Sentinel's `count`).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{FlowRule, LimitApp, Strategy};
    /// let r: FlowRule = FlowRule::new(LimitApp::Default, Strategy::Direct, NonZeroU64::new(500).unwrap(), 7);
    /// assert_eq!(r.limit(), 7);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// Sentinel's `selectNodeByRequesterAndStrategy` for a request of
    /// `origin` at `node`; `other` tells whether the origin is one no rule
    /// of the resource names (Sentinel's `isOtherOrigin`, which
    /// [`FlowRules`] works out). The empty name's origin is none
    /// ([`Origin::is_none`]).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, FlowRule, LimitApp, Origin, Parent, Selected, Strategy};
    /// static CN: ClusterNode<4> = ClusterNode::millis();
    /// static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// let w = NonZeroU64::new(500).unwrap();
    /// let r: FlowRule = FlowRule::new(LimitApp::Default, Strategy::Direct, w, 1);
    /// assert_eq!(r.select(&D, Some(Origin::named("A")), true), Selected::Cluster);
    /// ```
    #[must_use]
    pub fn select(&self, node: &DefaultNode, origin: Option<Origin>, other: bool) -> Selected {
        let origin = Origin::some(origin);
        let applies = match self.limit_app {
            LimitApp::Origin(o) => origin == Some(o),
            LimitApp::Default => true,
            LimitApp::Other => origin.is_some() && other,
        };
        if !applies {
            return Selected::None;
        }
        match self.strategy {
            Strategy::Direct if self.limit_app == LimitApp::Default => Selected::Cluster,
            Strategy::Direct => Selected::Origin,
            Strategy::Relate(_) => Selected::Related,
            Strategy::Chain(context) if context == node.context() => Selected::Chain,
            Strategy::Chain(_) => Selected::None,
        }
    }

    /// Whether the rule has room for `n` more of `origin` at `now` on the
    /// node it selected (books nothing).
    fn room(&self, selected: Selected, origin: Option<Origin>, now: u64, n: u64) -> bool {
        match (selected, &self.limiter) {
            (Selected::None, _) => true,
            (_, Limiter::One(g)) => g.remaining(now) >= n,
            (_, Limiter::PerOrigin(k)) => origin.is_none_or(|o| k.remaining(o.hash(), now) >= n),
            (_, Limiter::Reads) => self.related_room(now, n),
        }
    }

    fn related_room(&self, now: u64, n: u64) -> bool {
        match self.strategy {
            Strategy::Relate(c) => c.total().second().pass(now).saturating_add(n) <= self.limit,
            _ => true,
        }
    }

    /// Books `n` of `origin` at `now` in the rule's [`KeyedGate`], if it
    /// applies; reads a RELATE rule's node again.
    fn book_first(&self, selected: Selected, origin: Option<Origin>, now: u64, n: u64) -> bool {
        match (selected, &self.limiter, origin) {
            (_, Limiter::PerOrigin(k), Some(o)) if selected != Selected::None => {
                k.try_acquire(o.hash(), now, n) == Decision::Pass
            }
            (Selected::None, _, _) => true,
            (_, Limiter::Reads, _) => self.related_room(now, n),
            _ => true,
        }
    }

    /// Books `n` at `now` in the rule's [`Gate`], if it applies: the
    /// window it booked into, `Err` if refused, `Ok(None)` for nothing.
    fn book_gate(&self, selected: Selected, now: u64, n: u64) -> Result<Option<u64>, ()> {
        match (selected, &self.limiter) {
            (Selected::None, _) | (_, Limiter::PerOrigin(_) | Limiter::Reads) => Ok(None),
            (_, Limiter::One(g)) => match g.book::<Outcome>(now, n, false) {
                Outcome::Booked(window) => Ok(Some(window)),
                _ => Err(()),
            },
        }
    }

    /// Takes back `n` that [`book_gate`](Self::book_gate) booked into
    /// `window`.
    fn cancel(&self, window: u64, n: u64) {
        if let Limiter::One(g) = &self.limiter {
            g.cancel(window, n);
        }
    }

    /// Counts `n` passes at `now` of a request at `node` the rule did not
    /// apply to, if its gate counts every caller's: a CHAIN rule of
    /// `node`'s context reads the resource's node in that context, which
    /// every request there reaches (Sentinel's `selectReferenceNode`).
    fn count_pass(&self, selected: Selected, node: &DefaultNode, now: u64, n: u64) {
        if let (Selected::None, Limiter::One(g), Strategy::Chain(c)) =
            (selected, &self.limiter, self.strategy)
        {
            if c == node.context() {
                // Saturated only past `MAX_COUNT` in an interval, where the
                // gate refuses every request anyway.
                let _ = g.record(now, n);
            }
        }
    }
}

impl<const N: usize, const CAP: usize> fmt::Debug for FlowRule<N, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowRule")
            .field("limit_app", &self.limit_app)
            .field("strategy", &self.strategy)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const CAP: usize> defmt::Format for FlowRule<N, CAP> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "FlowRule {{ limit_app: {}, strategy: {}, limit: {=u64} }}",
            self.limit_app,
            self.strategy,
            self.limit
        );
    }
}

/// A resource's flow rules, checked together (module docs, "The
/// decision").
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, FlowRule, FlowRules, LimitApp, Parent, Strategy};
/// use leaparray::Decision::{Block, Pass};
/// static CN: ClusterNode<4> = ClusterNode::millis();
/// static E: EntranceNode = EntranceNode::millis("web");
/// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
/// static R: [FlowRule; 1] = [FlowRule::new(LimitApp::Default, Strategy::Direct, NonZeroU64::new(500).unwrap(), 1)];
/// let rules = FlowRules::new(&R);
/// assert_eq!((rules.check(&D, None, 0, 1), rules.check(&D, None, 0, 1)), (Pass, Block));
/// ```
#[derive(Clone, Copy)]
pub struct FlowRules<'a, const N: usize = 2, const CAP: usize = 64> {
    rules: &'a [FlowRule<N, CAP>],
}

impl<'a, const N: usize, const CAP: usize> FlowRules<'a, N, CAP> {
    /// The rules of one resource.
    ///
    /// ```
    /// use leaparray::stats::FlowRules;
    /// let none: FlowRules = FlowRules::new(&[]);
    /// assert_eq!(none.rules().len(), 0);
    /// ```
    #[must_use]
    pub const fn new(rules: &'a [FlowRule<N, CAP>]) -> Self {
        FlowRules { rules }
    }

    /// The rules.
    ///
    /// ```
    /// use leaparray::stats::FlowRules;
    /// assert!(FlowRules::<2, 64>::new(&[]).rules().is_empty());
    /// ```
    #[must_use]
    pub const fn rules(&self) -> &'a [FlowRule<N, CAP>] {
        self.rules
    }

    /// Whether `origin` is one no rule names (Sentinel's
    /// `FlowRuleManager.isOtherOrigin`): an origin (not the empty name's,
    /// [`Origin::is_none`]), and no rule's `limitApp` is it. As in
    /// Sentinel, which compares the names, an origin named `"other"` is
    /// named by an `other` rule, and one named `"default"` by a
    /// `default` rule.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{FlowRule, FlowRules, LimitApp, Origin, Strategy};
    /// let w = NonZeroU64::new(500).unwrap();
    /// let r: [FlowRule; 1] = [FlowRule::new(LimitApp::Origin(Origin::named("A")), Strategy::Direct, w, 1)];
    /// let rules = FlowRules::new(&r);
    /// assert!(!rules.is_other(Some(Origin::named("A"))));
    /// assert!(rules.is_other(Some(Origin::named("B"))));
    /// assert!(!rules.is_other(None));
    /// ```
    #[must_use]
    pub fn is_other(&self, origin: Option<Origin>) -> bool {
        Origin::some(origin).is_some_and(|o| {
            self.rules.iter().all(|r| match r.limit_app {
                LimitApp::Origin(named) => named != o,
                LimitApp::Other => o != Origin::named("other"),
                LimitApp::Default => o != Origin::named("default"),
            })
        })
    }

    /// Decides `n` permits for a request of `origin` at `node` at `now`:
    /// [`Decision::Pass`] if every rule that applies admits them, after
    /// asking each for room (module docs).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, FlowRule, FlowRules, LimitApp, Parent, Strategy};
    /// use leaparray::Decision::{Block, Pass};
    /// static CN: ClusterNode<4> = ClusterNode::millis();
    /// static WEB: EntranceNode = EntranceNode::millis("web");
    /// static RPC: EntranceNode = EntranceNode::millis("rpc");
    /// static IN_WEB: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&WEB));
    /// static IN_RPC: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&RPC));
    /// static R: [FlowRule; 1] = [FlowRule::new(LimitApp::Default, Strategy::Chain("web"), NonZeroU64::new(500).unwrap(), 1)];
    /// let rules = FlowRules::new(&R);
    /// assert_eq!((rules.check(&IN_WEB, None, 0, 1), rules.check(&IN_WEB, None, 0, 1)), (Pass, Block));
    /// assert_eq!(rules.check(&IN_RPC, None, 0, 5), Pass); // the rule reads "web" only
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn check(&self, node: &DefaultNode, origin: Option<Origin>, now: u64, n: u64) -> Decision {
        let origin = Origin::some(origin);
        let other = self.is_other(origin);
        let selected = |r: &FlowRule<N, CAP>| r.select(node, origin, other);
        if !self
            .rules
            .iter()
            .all(|r| r.room(selected(r), origin, now, n))
        {
            return Decision::Block;
        }
        // The `KeyedGate`s first: one can refuse after its room said yes
        // (`KeyedGate::remaining` is an upper bound when the key's
        // insertion evicts), and it has no cancel.
        if !self
            .rules
            .iter()
            .all(|r| r.book_first(selected(r), origin, now, n))
        {
            return Decision::Block;
        }
        if !Self::book_gates(self.rules, &selected, now, n) {
            return Decision::Block;
        }
        for r in self.rules {
            r.count_pass(selected(r), node, now, n);
        }
        Decision::Pass
    }

    /// Books `n` at `now` in the gates of `rules` that apply, in order;
    /// if one refuses, takes back what the ones before it booked.
    fn book_gates(
        rules: &[FlowRule<N, CAP>],
        selected: &impl Fn(&FlowRule<N, CAP>) -> Selected,
        now: u64,
        n: u64,
    ) -> bool {
        let Some((r, rest)) = rules.split_first() else {
            return true;
        };
        let Ok(booked) = r.book_gate(selected(r), now, n) else {
            return false;
        };
        let ok = Self::book_gates(rest, selected, now, n);
        if let (false, Some(window)) = (ok, booked) {
            r.cancel(window, n);
        }
        ok
    }
}

impl<const N: usize, const CAP: usize> fmt::Debug for FlowRules<'_, N, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.rules).finish()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const CAP: usize> defmt::Format for FlowRules<'_, N, CAP> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "FlowRules {{ rules: {=usize} }}", self.rules.len());
    }
}

/// Whether an [`AuthorityRule`]'s origins are the only ones allowed or
/// the ones denied (Sentinel's `AUTHORITY_WHITE` / `AUTHORITY_BLACK`).
///
/// ```
/// use leaparray::stats::AuthorityStrategy;
/// assert_ne!(AuthorityStrategy::Allow, AuthorityStrategy::Deny);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AuthorityStrategy {
    /// Only these origins pass (a white list).
    Allow,
    /// These origins are blocked (a black list).
    Deny,
}

/// Sentinel's `AuthorityRule`: origins allowed or denied on a resource.
/// A request with no origin (or the empty name's, [`Origin::is_none`]),
/// or a rule with no origins, passes (Sentinel's
/// `AuthorityRuleChecker.passCheck`).
///
/// ```
/// use leaparray::stats::{AuthorityRule, AuthorityStrategy, Origin};
/// use leaparray::Decision::{Block, Pass};
/// static ONLY_A_B: AuthorityRule = AuthorityRule::new(AuthorityStrategy::Allow, &[Origin::named("appA"), Origin::named("appB")]);
/// assert_eq!(ONLY_A_B.check(Some(Origin::named("appA"))), Pass);
/// assert_eq!(ONLY_A_B.check(Some(Origin::named("appC"))), Block);
/// assert_eq!(ONLY_A_B.check(None), Pass);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AuthorityRule<'a> {
    strategy: AuthorityStrategy,
    origins: &'a [Origin],
}

impl<'a> AuthorityRule<'a> {
    /// A rule allowing only, or denying, `origins`.
    ///
    /// ```
    /// use leaparray::stats::{AuthorityRule, AuthorityStrategy, Origin};
    /// static D: [Origin; 1] = [Origin::named("appD")];
    /// let deny_d = AuthorityRule::new(AuthorityStrategy::Deny, &D);
    /// assert_eq!(deny_d.origins(), &[Origin::named("appD")]);
    /// ```
    #[must_use]
    pub const fn new(strategy: AuthorityStrategy, origins: &'a [Origin]) -> Self {
        AuthorityRule { strategy, origins }
    }

    /// Allow or deny.
    ///
    /// ```
    /// use leaparray::stats::{AuthorityRule, AuthorityStrategy};
    /// assert_eq!(AuthorityRule::new(AuthorityStrategy::Deny, &[]).strategy(), AuthorityStrategy::Deny);
    /// ```
    #[must_use]
    pub const fn strategy(&self) -> AuthorityStrategy {
        self.strategy
    }

    /// The origins.
    ///
    /// ```
    /// use leaparray::stats::{AuthorityRule, AuthorityStrategy};
    /// assert!(AuthorityRule::new(AuthorityStrategy::Allow, &[]).origins().is_empty());
    /// ```
    #[must_use]
    pub const fn origins(&self) -> &'a [Origin] {
        self.origins
    }

    /// Whether a request of `origin` passes.
    ///
    /// ```
    /// use leaparray::stats::{AuthorityRule, AuthorityStrategy, Origin};
    /// use leaparray::Decision::{Block, Pass};
    /// static A: [Origin; 1] = [Origin::named("appA")];
    /// let deny = AuthorityRule::new(AuthorityStrategy::Deny, &A);
    /// assert_eq!((deny.check(Some(Origin::named("appA"))), deny.check(Some(Origin::named("appB")))), (Block, Pass));
    /// ```
    pub fn check(&self, origin: Option<Origin>) -> Decision {
        let Some(o) = Origin::some(origin) else {
            return Decision::Pass;
        };
        if self.origins.is_empty() {
            return Decision::Pass;
        }
        let listed = self.origins.contains(&o);
        match (self.strategy, listed) {
            (AuthorityStrategy::Deny, true) | (AuthorityStrategy::Allow, false) => Decision::Block,
            _ => Decision::Pass,
        }
    }
}
