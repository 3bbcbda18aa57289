//! Sentinel's call tree, declared statically: an [`EntranceNode`] per
//! context (`ContextUtil.enter(name, origin)`), a [`DefaultNode`] per
//! resource in a context (NodeSelectorSlot's node), each pointing at its
//! parent and at its resource's [`ClusterNode`](crate::stats::ClusterNode)
//! (ClusterBuilderSlot's). An [`Entry`] records as Sentinel's
//! StatisticSlot does, in one call: the resource's node in this context,
//! its cluster node (the totals and the caller's origin node), and the
//! context's entrance for a resource entered directly under it.
//!
//! ```
//! use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Origin, Parent};
//!
//! static GET_ORDER: ClusterNode<64> = ClusterNode::millis();
//! static WEB: EntranceNode = EntranceNode::millis("web");
//! static RPC: EntranceNode = EntranceNode::millis("rpc");
//! // getOrder under each entrance: two DefaultNodes, one ClusterNode.
//! static WEB_GET_ORDER: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&WEB));
//! static RPC_GET_ORDER: DefaultNode = DefaultNode::millis("getOrder", &GET_ORDER, Parent::Entrance(&RPC));
//!
//! let app_a = Some(Origin::named("appA"));
//! WEB_GET_ORDER.entry(app_a, 1_000, 1).exit(1_020, false);
//! RPC_GET_ORDER.entry(None, 1_000, 1).exit(1_040, false);
//! assert_eq!(WEB_GET_ORDER.stats().total_success(1_100), 1);
//! assert_eq!(WEB.stats().total_success(1_100), 1);
//! assert_eq!(GET_ORDER.total().total_success(1_100), 2);
//! assert_eq!(GET_ORDER.origin(Origin::named("appA"), 1_100).unwrap().minute.success, 1);
//! ```
//!
//! Sentinel builds the tree as calls arrive, with a lock; here it is a
//! tree of `static`s, fixed at compile time: a node knows its parent, the
//! parent does not list its children (Sentinel's `getChildList`), and an
//! [`EntranceNode`] counts its direct children's entries as they are
//! recorded (Sentinel sums its children when read: the same counts;
//! its average RT is weighted by each child's passes, here it is the RT
//! over the successes).

use core::fmt;

use crate::error::AddError;
use crate::stats::cluster::{Cluster, ClusterNode, OriginEntry};
use crate::stats::node::StatisticNode;
use crate::stats::origin::{same_windows, Origin};
use crate::sync::const_fn_unless_loom;

/// A context's root: Sentinel's `EntranceNode`, named by the context
/// (`ContextUtil.enter(name)`).
///
/// ```
/// use leaparray::stats::EntranceNode;
/// static WEB: EntranceNode = EntranceNode::millis("web");
/// assert_eq!(WEB.name(), "web");
/// ```
pub struct EntranceNode {
    name: &'static str,
    stats: StatisticNode,
}

impl EntranceNode {
    const_fn_unless_loom! {
        /// The entrance of the context `name`, with `stats`' windows.
        ///
        /// ```
        /// use leaparray::stats::{EntranceNode, StatisticNode};
        /// static RPC: EntranceNode = EntranceNode::new("rpc", StatisticNode::millis());
        /// assert_eq!(RPC.stats().concurrency(), 0);
        /// ```
        #[must_use]
        pub fn new(name: &'static str, stats: StatisticNode) -> EntranceNode {
            EntranceNode { name, stats }
        }
    }

    const_fn_unless_loom! {
        /// [`new`](Self::new) with Sentinel's windows in milliseconds.
        ///
        /// ```
        /// let e = leaparray::stats::EntranceNode::millis("web");
        /// assert_eq!(e.stats().second().window(), 500);
        /// ```
        #[must_use]
        pub fn millis(name: &'static str) -> EntranceNode {
            EntranceNode::new(name, StatisticNode::millis())
        }
    }

    /// The context's name.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::EntranceNode::millis("web").name(), "web");
    /// ```
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The entries of the resources entered directly under this context.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// static CN: ClusterNode<4> = ClusterNode::millis();
    /// static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// D.add_block(None, 0, 2).unwrap();
    /// assert_eq!(E.stats().block_request(0), 2);
    /// ```
    #[must_use]
    pub const fn stats(&self) -> &StatisticNode {
        &self.stats
    }
}

impl fmt::Debug for EntranceNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntranceNode")
            .field("name", &self.name)
            .field("stats", &self.stats)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for EntranceNode {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "EntranceNode {{ name: {=str}, stats: {} }}",
            self.name,
            self.stats
        );
    }
}

/// Where a [`DefaultNode`] hangs in its context's tree.
///
/// ```
/// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
/// static CN: ClusterNode<4> = ClusterNode::millis();
/// static E: EntranceNode = EntranceNode::millis("web");
/// static A: DefaultNode = DefaultNode::millis("a", &CN, Parent::Entrance(&E));
/// static B: DefaultNode = DefaultNode::millis("b", &CN, Parent::Resource(&A)); // b called inside a
/// assert_eq!(B.context(), "web");
/// assert!(matches!(B.parent(), Parent::Resource(p) if p.resource() == "a"));
/// ```
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Parent {
    /// Entered directly under the context.
    Entrance(&'static EntranceNode),
    /// Entered while the caller was in another resource of the context.
    Resource(&'static DefaultNode),
}

/// A resource in one context: Sentinel's `DefaultNode` (NodeSelectorSlot's
/// node for the pair), pointing at its parent and its resource's cluster
/// node.
///
/// ```
/// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
/// static CN: ClusterNode<4> = ClusterNode::millis();
/// static E: EntranceNode = EntranceNode::millis("web");
/// static D: DefaultNode = DefaultNode::millis("getOrder", &CN, Parent::Entrance(&E));
/// let e = D.entry(None, 0, 1);
/// assert_eq!((D.stats().concurrency(), CN.total().concurrency(), E.stats().concurrency()), (1, 1, 1));
/// e.exit(10, false);
/// assert_eq!((D.stats().concurrency(), D.stats().avg_rt(10)), (0, 10.0));
/// ```
pub struct DefaultNode {
    resource: &'static str,
    cluster: &'static dyn Cluster,
    parent: Parent,
    /// The root of `parent`'s chain, found once when the node is built.
    entrance: &'static EntranceNode,
    stats: StatisticNode,
}

impl DefaultNode {
    const_fn_unless_loom! {
        /// The node of `resource` in the context of `parent`, recording also
        /// into `cluster` (the resource's cluster node), with `stats`'
        /// windows.
        ///
        /// The node finds its context's entrance when it is built, so
        /// [`context`](Self::context) is one read. A cycle of parents (statics
        /// that are each other's parents) is a compile error (E0391, the
        /// statics' initializers need each other); no other cycle can be
        /// built, as a parent is a `'static` node built before.
        ///
        /// # Panics
        ///
        /// If `stats`' windows are not `cluster`'s and the entrance's
        /// ("DefaultNode::new: the node needs its cluster node's and its
        /// entrance's windows"): one `now` feeds all three. A compile error in
        /// a `static`.
        ///
        /// ```
        /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent, StatisticNode};
        /// static CN: ClusterNode<4> = ClusterNode::millis();
        /// static E: EntranceNode = EntranceNode::millis("web");
        /// static D: DefaultNode = DefaultNode::new("r", &CN, Parent::Entrance(&E), StatisticNode::millis());
        /// assert_eq!(D.resource(), "r");
        /// ```
        ///
        /// ```compile_fail,E0080
        /// use core::num::NonZeroU64;
        /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent, StatisticNode};
        /// const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
        /// static CN: ClusterNode<4> = ClusterNode::millis();
        /// static E: EntranceNode = EntranceNode::millis("web");
        /// static D: DefaultNode = DefaultNode::new("r", &CN, Parent::Entrance(&E), StatisticNode::new(US, US, US));
        /// ```
        ///
        /// ```compile_fail,E0391
        /// use leaparray::stats::{ClusterNode, DefaultNode, Parent};
        /// static CN: ClusterNode<4> = ClusterNode::millis();
        /// static X: DefaultNode = DefaultNode::millis("x", &CN, Parent::Resource(&Y));
        /// static Y: DefaultNode = DefaultNode::millis("y", &CN, Parent::Resource(&X));
        /// ```
        #[must_use]
        pub fn new<const CAP: usize>(
            resource: &'static str,
            cluster: &'static ClusterNode<CAP>,
            parent: Parent,
            stats: StatisticNode,
        ) -> DefaultNode {
            let entrance = match parent {
                Parent::Entrance(e) => e,
                Parent::Resource(d) => d.entrance,
            };
            assert!(
                same_windows(&stats, cluster.total()) && same_windows(&stats, &entrance.stats),
                "DefaultNode::new: the node needs its cluster node's and its entrance's windows"
            );
            DefaultNode {
                resource,
                cluster,
                parent,
                entrance,
                stats,
            }
        }
    }

    const_fn_unless_loom! {
        /// [`new`](Self::new) with Sentinel's windows in milliseconds.
        ///
        /// ```
        /// use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
        /// static CN: ClusterNode<4> = ClusterNode::millis();
        /// static E: EntranceNode = EntranceNode::millis("web");
        /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
        /// assert_eq!(D.stats().minute().window(), 1_000);
        /// ```
        #[must_use]
        pub fn millis<const CAP: usize>(
            resource: &'static str,
            cluster: &'static ClusterNode<CAP>,
            parent: Parent,
        ) -> DefaultNode {
            DefaultNode::new(resource, cluster, parent, StatisticNode::millis())
        }
    }

    /// The resource's name.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("getOrder", &CN, Parent::Entrance(&E));
    /// assert_eq!(D.resource(), "getOrder");
    /// ```
    #[must_use]
    pub const fn resource(&self) -> &'static str {
        self.resource
    }

    /// The node's parent.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// assert!(matches!(D.parent(), Parent::Entrance(e) if e.name() == "web"));
    /// ```
    #[must_use]
    pub const fn parent(&self) -> Parent {
        self.parent
    }

    /// The entrance of the node's context (its root).
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// static E: EntranceNode = EntranceNode::millis("web");
    /// static A: DefaultNode = DefaultNode::millis("a", &CN, Parent::Entrance(&E));
    /// static B: DefaultNode = DefaultNode::millis("b", &CN, Parent::Resource(&A));
    /// assert_eq!(B.entrance().name(), "web");
    /// ```
    #[must_use]
    pub const fn entrance(&self) -> &'static EntranceNode {
        self.entrance
    }

    /// The name of the node's context (Sentinel's `context.getName()`).
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// assert_eq!(D.context(), "web");
    /// ```
    #[must_use]
    pub const fn context(&self) -> &'static str {
        self.entrance.name
    }

    /// The resource's cluster node.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// D.add_block(None, 0, 1).unwrap();
    /// assert_eq!(D.cluster().total().block_request(0), 1);
    /// ```
    #[must_use]
    pub const fn cluster(&self) -> &'static dyn Cluster {
        self.cluster
    }

    /// The resource's statistics in this context.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// assert_eq!(D.stats().total_request(0), 0);
    /// ```
    #[must_use]
    pub const fn stats(&self) -> &StatisticNode {
        &self.stats
    }

    /// The entrance, if the resource is entered directly under it.
    fn direct_entrance(&self) -> Option<&'static EntranceNode> {
        match self.parent {
            Parent::Entrance(e) => Some(e),
            Parent::Resource(_) => None,
        }
    }

    /// An entry of `n` permits by `origin` at `now` that passed (Sentinel's
    /// StatisticSlot after the checks passed): `n` passes and one more in
    /// flight in this node, the cluster node (its totals and the origin's
    /// node) and, for a resource directly under it, the entrance.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Origin, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// let a = Some(Origin::named("appA"));
    /// D.entry(a, 0, 2).exit(8, true);
    /// assert_eq!((D.stats().total_pass(8), D.stats().total_exception(8)), (2, 2));
    /// assert_eq!(CN.origin(Origin::named("appA"), 8).unwrap().second.exception, 2);
    /// ```
    pub fn entry(&self, origin: Option<Origin>, now: u64, n: u64) -> Entry<'_> {
        for s in self.own() {
            let _ = s.add_pass(now, n);
            s.increase_concurrency(now);
        }
        Entry {
            node: self,
            origin: Some(self.cluster.enter(origin, now, n)),
            start: now,
            n,
        }
    }

    /// Records `n` blocked requests of `origin` at `now` (Sentinel's
    /// StatisticSlot on a `BlockException`) in this node, the cluster node
    /// and, for a resource directly under it, the entrance; the first
    /// error.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Origin, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// D.add_block(Some(Origin::named("appB")), 0, 1).unwrap();
    /// assert_eq!((D.stats().block_request(0), E.stats().block_request(0)), (1, 1));
    /// assert_eq!(CN.origin(Origin::named("appB"), 0).unwrap().second.block, 1);
    /// ```
    pub fn add_block(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError> {
        let mut r = self.cluster.add_block(origin, now, n);
        for s in self.own() {
            r = r.and(s.add_block(now, n));
        }
        r
    }

    /// This node's statistics and its direct entrance's.
    fn own(&self) -> impl Iterator<Item = &StatisticNode> {
        core::iter::once(&self.stats).chain(self.direct_entrance().map(EntranceNode::stats))
    }
}

impl fmt::Debug for DefaultNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultNode")
            .field("resource", &self.resource)
            .field("context", &self.context())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for DefaultNode {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "DefaultNode {{ resource: {=str}, context: {=str} }}",
            self.resource,
            self.context()
        );
    }
}

/// An entry in flight through a [`DefaultNode`] ([`DefaultNode::entry`]),
/// until [`exit`](Self::exit): Sentinel's `Entry`. Dropped without `exit`,
/// it leaves with no completion (concurrency only: no success, no RT).
///
/// ```
/// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
/// # static CN: ClusterNode<4> = ClusterNode::millis();
/// # static E: EntranceNode = EntranceNode::millis("web");
/// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
/// drop(D.entry(None, 0, 1));
/// assert_eq!((D.stats().concurrency(), D.stats().total_success(0)), (0, 0));
/// ```
#[must_use = "an entry is in flight until its exit"]
pub struct Entry<'a> {
    node: &'a DefaultNode,
    /// `None` once exited.
    origin: Option<OriginEntry<'a>>,
    start: u64,
    n: u64,
}

impl Entry<'_> {
    /// Sentinel's `exit` at `now`: `n` successes with the RT `now - start`,
    /// `n` exceptions too if `error` (Sentinel's `Tracer.trace`), one fewer
    /// in flight, in every node the entry entered.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// D.entry(None, 100, 1).exit(125, false);
    /// assert_eq!((E.stats().min_rt(125), CN.total().min_rt(125)), (Some(25), Some(25)));
    /// ```
    pub fn exit(mut self, now: u64, error: bool) {
        let rt = now.saturating_sub(self.start);
        for s in self.node.own() {
            let _ = s.add_rt_and_success(now, rt, self.n);
            if error {
                let _ = s.add_exception(now, self.n);
            }
            s.decrease_concurrency();
        }
        if let Some(o) = self.origin.take() {
            o.exit(now, error);
        }
    }

    /// When the entry started.
    ///
    /// ```
    /// # use leaparray::stats::{ClusterNode, DefaultNode, EntranceNode, Parent};
    /// # static CN: ClusterNode<4> = ClusterNode::millis();
    /// # static E: EntranceNode = EntranceNode::millis("web");
    /// static D: DefaultNode = DefaultNode::millis("r", &CN, Parent::Entrance(&E));
    /// let e = D.entry(None, 9, 1);
    /// assert_eq!(e.start(), 9);
    /// # e.exit(10, false);
    /// ```
    #[must_use]
    pub const fn start(&self) -> u64 {
        self.start
    }
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        if let Some(o) = self.origin.take() {
            for s in self.node.own() {
                s.decrease_concurrency();
            }
            drop(o);
        }
    }
}

impl fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("resource", &self.node.resource)
            .field("start", &self.start)
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Entry<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Entry {{ resource: {=str}, start: {=u64}, n: {=u64} }}",
            self.node.resource,
            self.start,
            self.n
        );
    }
}
