//! [`ClusterNode`]: a resource's statistics over all its call chains, and
//! per caller (*origin*) in fixed memory; the protocol that lets an
//! origin's node change hands while other threads record into it, argued
//! once.
//!
//! Sentinel's `ClusterNode` keeps a `StatisticNode` per origin in a map
//! that grows with every new caller. Here a resource has `CAP` origin
//! nodes, fixed when it is declared. An origin takes one when it first
//! records; under a flood of new origins the least active is evicted, and
//! what it had counted is *folded* into the node of *other origins*. So
//! the resident origins and "other" always partition what the resource
//! counted ("What a reader sees", below).
//!
//! ```
//! use leaparray::stats::{ClusterNode, Origin};
//!
//! static GET_ORDER: ClusterNode<64> = ClusterNode::millis(); // 64 origins, time in ms
//! let (a, b) = (Origin::named("appA"), Origin::named("appB"));
//! GET_ORDER.add_pass(Some(a), 1_000, 3).unwrap();
//! GET_ORDER.add_pass(Some(b), 1_000, 1).unwrap();
//! GET_ORDER.add_block(Some(a), 1_100, 1).unwrap();
//! assert_eq!(GET_ORDER.total().total_request(1_100), 5);
//! let sa = GET_ORDER.origin(a, 1_100).unwrap();
//! assert_eq!((sa.second.pass, sa.second.block), (3, 1));
//! assert_eq!(GET_ORDER.origin(b, 1_100).unwrap().second.pass, 1);
//! ```
//!
//! # The parts
//!
//! A [`ClusterNode<CAP>`] holds the resource's totals (a
//! [`StatisticNode`]), `CAP` [`OriginNode`]s, the node of other origins,
//! and a [`keyed::Table`](crate::keyed::Table) of `CAP` slots mapping an
//! origin to its node. The table's protocol (claims, settling, eviction:
//! `keyed/table/mod.rs`) keeps one slot per origin; this module adds only
//! what a slot's value means and what a node does when its origin changes.
//!
//! **A slot's value** is `gen << 16 | pos`: `gen`, a *generation* unique to
//! this residency of the origin in its slot (a table-wide counter, taken
//! by [`Policy::start`] when the origin's claim settles), and `pos`, the
//! slot's own index, which is also the index of the origin's node
//! (`0xffff`: not known yet; the first recorder finds the slot in the
//! origin's probe and writes it, once). Nothing else ever writes a
//! resident's value.
//!
//! **Generations at one slot only grow.** An origin settles into slot `j`
//! only after the swap that took `j` from the previous origin, which came
//! after that origin's value was written, which came after its settler
//! took its generation. The counter is one atomic, and its increments
//! follow that happens-before chain, so each new resident of `j` has a
//! larger generation than every earlier one.
//!
//! **A node's state** is one word: the generation it holds counts for,
//! a phase, and *pins* (threads recording into it, and entries in flight
//! that will record their exit there):
//!
//! | phase | meaning | who leaves it |
//! |---|---|---|
//! | `open` | the generation's recorders pin and record | a recorder of a newer generation closes it |
//! | `closed` | pinned recorders finish; no new pins | the last unpin: to `folding` |
//! | `folding` | one thread moves the counts into "other" and empties the node | that thread: to `done`, or straight to `open` for its own generation |
//! | `done` | empty; belongs to no one | a recorder of a newer generation: to `open` |
//!
//! **Recording** for an origin at `(pos, gen)`: read the node's state.
//! - Its generation is `gen` and it is `open`: add a pin (compare-and-swap
//!   of the word), record into the node, remove the pin.
//! - Its generation is `gen` but not `open`, or newer than `gen`: `gen`'s
//!   residency is over (only a newer generation closes a node): record
//!   into "other".
//! - Older than `gen`, `open` with no pin, or `done`: take the node
//!   (swap to `folding`), fold what an `open` node holds into "other",
//!   empty it, note the origin, open it for `gen` with one pin, record.
//! - Older, `open` with pins: close it (the last unpin folds), record into
//!   "other"; older and `closed` or `folding`: record into "other".
//!
//! So a record that meets its own origin's node being taken (the few
//! steps of a first recorder noting its origin, or a fold) counts in
//! "other" rather than wait: an origin's first records under contention
//! may be attributed to "other", never lost.
//!
//! Eviction itself (the policy's `fold`) does nothing: the fold happens when
//! the slot's next resident first records, or when the last pin of a
//! closed node goes. Until then the evicted origin's counts stay in its
//! node, which a reader counts as "other" (its generation is not its
//! slot's). A fold in the table's hook could run for an eviction whose
//! swap then fails, and run twice; a fold under the node's state runs
//! once per generation, by the one thread whose swap to `folding` won.
//!
//! # The race: recording into a node that changes hands
//!
//! ```text
//!  Thread 1 (origin A: gen 1, node j)     Thread 2 (new origin B)
//!  -------------------------------------  -------------------------------------
//!  state (1, open, 0) -> (1, open, 1)
//!                                         evicts A from slot j; B settles
//!                                         there with gen 2, writes pos j
//!  adds A's pass into node j
//!                                         state (1, open, 1) -> (1, closed, 1)
//!                                         a pin is held: B's pass -> "other"
//!  unpin: (1, closed, 1) -> (1, folding, 0)
//!  folds node j into "other" (its own
//!  pass with it), empties node j,
//!  stores (1, done, 0)
//!                                         B again: (1, done, 0) -> folding,
//!                                         notes B, stores (2, open, 1),
//!                                         records into node j
//! ```
//!
//! Without the pins (check the generation, then record), Thread 1's add
//! could land after Thread 2 read node j to fold it: emptied with the
//! rest and lost, or, after the emptying, counted as B's. With them, a
//! node is folded only by the thread that took it to `folding` from no
//! pins, no one records into it meanwhile (a pin needs `open`), and a
//! recorder that cannot pin records into "other" instead: every record
//! lands in exactly one of A's node, B's node or "other", and a fold
//! moves A's node into "other" whole. No thread waits for another: a
//! recorder that meets `closed` or `folding` records into "other" and
//! returns. A late recorder, which read A's value (gen 1) before B
//! replaced it, finds the node at generation 2 (newer: "other") or
//! closed (1, not `open`: "other"); one that finds it still `open` at 1
//! pins, and its record is folded with A's.
//!
//! An entry in flight holds its pin until its exit ([`OriginEntry`]), so
//! a node's concurrency is always its own entries': a closed node is
//! folded when its last entry exits, and meanwhile its slot's new origin
//! counts in "other". At most `2^15 - 1` pins a node; past that, records
//! go to "other".
//!
//! # What a reader sees
//!
//! Every record goes into the resource's totals and into exactly one of
//! the nodes of origins or "other"; a fold moves a node's windows into
//! "other" and empties them. So, when no record and no fold is in
//! progress, for every window and every event, the resource's count is
//! the sum of the origins' nodes and "other" ([`ClusterNode::others`]
//! counts a node whose generation is not its slot's as "other"). Mid-way
//! a reader can see:
//! - a record in the totals and not yet in its origin's node or "other"
//!   (the totals are written first), by at most the counts of the records
//!   in progress;
//! - a folded window in both a node and "other", or in neither, until
//!   the fold returns (it adds to "other", then empties the node);
//! - an origin's [`snapshot`](ClusterNode::origin) never mixes two
//!   generations: it is read between two reads of the node's state that
//!   must both be `open` at the origin's generation, and its loads of the
//!   counts and of the node's origin acquire what the fold released after
//!   `folding` (loom: `a_read_during_a_fold_never_mixes_two_origins`). It
//!   is not one atomic read of every count: a record can land between
//!   its second- and minute-level reads.
//!
//! A record the totals refuse as `Stale` (a caller whose clock is behind
//! the resource's newest window by a whole metric) may still count in its
//! origin's node, and one they refuse as `Saturated` (past `MAX_COUNT` in
//! a window) counts whole there: the origins and "other" then exceed the
//! totals by what the totals refused; the caller gets the error. A fold moves every window the node's buckets hold; one
//! that "other" has already retired (it holds a newer window at that
//! index) is retired in the totals too, as every record reaches both.
//!
//! # Bounds
//!
//! `CAP <= 65,535`, checked at compile time. Generations are 47 bits: past
//! `2^47` settles (4 years at a million new origins a second) a slot's new
//! generation can compare below an old one; its origin then records into
//! "other" (totals still add up; only the attribution is lost).
//! Origins are told apart by 64-bit hashes ([`Origin`]) and, in the table,
//! 56-bit fingerprints within a probe of 16 slots: two origins that
//! collide share a node.

use core::fmt;

use crate::error::AddError;
use crate::keyed::{Slot, Step, Table, Value};
use crate::stats::counts::{Counts, OriginStats};
use crate::stats::metric::MetricWindow;
use crate::stats::node::StatisticNode;
use crate::stats::origin::{
    gen_of, phase, pos_of, same_windows, state_gen, value_of, Origin, OriginNode, Origins, DONE,
    MAX_CAP, OPEN, UNKNOWN,
};
use crate::sync::{array_of, atomic_u64, const_fn_unless_loom, Ordering};

/// Why [`ClusterNode::try_with_nodes`] built no node.
///
/// ```
/// use leaparray::stats::ClusterError;
/// assert_eq!(ClusterError::WindowsDiffer.to_string(), "every node needs the totals' windows");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClusterError {
    /// "Other" or an origin node has other windows or another tick rate
    /// than the totals.
    WindowsDiffer,
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::WindowsDiffer => f.write_str("every node needs the totals' windows"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ClusterError {}

/// Where a record goes: an origin's node at a generation, held by a pin,
/// or (`None`) "other".
type Pin<'a, const S: usize, const M: usize> = Option<(&'a OriginNode<S, M>, u64)>;

/// One resource's statistics: its totals over every call chain (Sentinel's
/// `ClusterNode`), one [`OriginNode`] per resident origin (Sentinel's
/// `originCountMap`) and the node of other origins, in fixed memory
/// (module docs: the protocol, and what a reader sees).
///
/// Records without an origin count in the totals and in "other", so the
/// resident origins and "other" always partition the totals.
///
/// `SECOND` and `MINUTE` are every node's window counts
/// ([`StatisticNode<SECOND, MINUTE>`]): Sentinel's 2 and 60 by default. The
/// size is fixed by the type: `CAP + 2` nodes and `CAP` table slots,
/// whatever the traffic; a shorter minute-level metric makes each origin
/// node lighter ([`with_nodes`](Self::with_nodes)).
///
/// ```
/// use leaparray::stats::{ClusterNode, Origin};
/// static CN: ClusterNode<2> = ClusterNode::millis();
/// for (i, name) in ["a", "b", "c"].iter().enumerate() {
///     CN.add_pass(Some(Origin::named(name)), 0, i as u64 + 1).unwrap();
/// }
/// CN.add_pass(None, 0, 10).unwrap();
/// // Two nodes: one of the three origins was evicted into "other".
/// let resident: u64 = CN.origins(0).map(|o| o.second.pass).sum();
/// assert_eq!(resident + CN.others(0).second.pass, 16);
/// assert_eq!(CN.total().second().pass(0), 16);
/// ```
pub struct ClusterNode<const CAP: usize, const SECOND: usize = 2, const MINUTE: usize = 60> {
    total: StatisticNode<SECOND, MINUTE>,
    table: Table<Origins<CAP, SECOND, MINUTE>, [Slot; CAP]>,
}

impl<const CAP: usize> ClusterNode<CAP> {
    const_fn_unless_loom! {
        /// Sentinel's windows with time in milliseconds (2 of 500 ms, 60 of
        /// 1 s) for the totals, "other" and `CAP` origin nodes. `1 <= CAP
        /// <= 65,535`, checked at compile time.
        ///
        /// ```
        /// use leaparray::stats::ClusterNode;
        /// static CN: ClusterNode<16> = ClusterNode::millis();
        /// assert_eq!(CN.capacity(), 16);
        /// ```
        #[must_use]
        pub fn millis() -> Self {
            Self::with_nodes(
                StatisticNode::millis(),
                StatisticNode::millis(),
                array_of!(CAP, OriginNode::new(StatisticNode::millis())),
            )
        }
    }
}

impl<const CAP: usize, const SECOND: usize, const MINUTE: usize> ClusterNode<CAP, SECOND, MINUTE> {
    const_fn_unless_loom! {
        /// A node with the totals `total`, the node of other origins `other`
        /// and the origin nodes `nodes`, all empty and with the same windows.
        ///
        /// # Panics
        ///
        /// If their windows differ ("ClusterNode::with_nodes: every node
        /// needs the totals' windows"): a compile error in a `static`.
        /// `1 <= CAP <= 65,535` is checked at compile time.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use leaparray::stats::{ClusterNode, OriginNode, StatisticNode};
        /// const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
        /// const TENTH: NonZeroU64 = NonZeroU64::new(100_000).unwrap();
        /// // Time in µs: 2 windows of 100 ms (the second-level interval is
        /// // 200 ms), 60 of 1 s.
        /// static CN: ClusterNode<8> = ClusterNode::with_nodes(
        ///     StatisticNode::new(TENTH, US, US),
        ///     StatisticNode::new(TENTH, US, US),
        ///     [const { OriginNode::new(StatisticNode::new(TENTH, US, US)) }; 8],
        /// );
        /// assert_eq!(CN.total().second().window(), 100_000);
        ///
        /// // Lighter origin nodes: 2 windows of 500 ms, 10 of 1 s.
        /// const MS: NonZeroU64 = NonZeroU64::new(1_000).unwrap();
        /// const HALF: NonZeroU64 = NonZeroU64::new(500).unwrap();
        /// type Node = StatisticNode<2, 10>;
        /// static LIGHT: ClusterNode<64, 2, 10> = ClusterNode::with_nodes(
        ///     Node::new(HALF, MS, MS),
        ///     Node::new(HALF, MS, MS),
        ///     [const { OriginNode::new(Node::new(HALF, MS, MS)) }; 64],
        /// );
        /// assert!(size_of::<ClusterNode<64, 2, 10>>() < size_of::<ClusterNode<64>>() / 4);
        /// assert_eq!(LIGHT.total().minute().interval(), 10_000);
        /// ```
        ///
        /// ```compile_fail,E0080
        /// use core::num::NonZeroU64;
        /// use leaparray::stats::{ClusterNode, OriginNode, StatisticNode};
        /// const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
        /// static CN: ClusterNode<8> = ClusterNode::with_nodes(
        ///     StatisticNode::millis(),
        ///     StatisticNode::millis(),
        ///     [const { OriginNode::new(StatisticNode::new(US, US, US)) }; 8],
        /// );
        /// ```
        #[must_use]
        pub fn with_nodes(
            total: StatisticNode<SECOND, MINUTE>,
            other: StatisticNode<SECOND, MINUTE>,
            nodes: [OriginNode<SECOND, MINUTE>; CAP],
        ) -> Self {
            match Self::try_with_nodes(total, other, nodes) {
                Ok(node) => node,
                Err(ClusterError::WindowsDiffer) => {
                    panic!("ClusterNode::with_nodes: every node needs the totals' windows")
                }
            }
        }
    }

    const_fn_unless_loom! {
        /// [`with_nodes`](Self::with_nodes), or why not: the nodes' windows
        /// differ from the totals'.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use leaparray::stats::{ClusterError, ClusterNode, OriginNode, StatisticNode};
        /// const US: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();
        /// let bad = ClusterNode::<2>::try_with_nodes(
        ///     StatisticNode::millis(),
        ///     StatisticNode::millis(),
        ///     [const { OriginNode::new(StatisticNode::new(US, US, US)) }; 2],
        /// );
        /// assert_eq!(bad.err(), Some(ClusterError::WindowsDiffer));
        /// ```
        pub fn try_with_nodes(
            total: StatisticNode<SECOND, MINUTE>,
            other: StatisticNode<SECOND, MINUTE>,
            nodes: [OriginNode<SECOND, MINUTE>; CAP],
        ) -> Result<Self, ClusterError> {
            const {
                assert!(CAP >= 1 && CAP <= MAX_CAP, "ClusterNode<CAP> needs 1 <= CAP <= 65,535");
            };
            let mut i = 0;
            let mut ok = same_windows(&total, &other);
            while i < CAP {
                ok = ok && same_windows(&total, &nodes[i].stats);
                i += 1;
            }
            if !ok {
                return Err(ClusterError::WindowsDiffer);
            }
            Ok(ClusterNode {
                total,
                table: Table::new(
                    array_of!(CAP, Slot::new()),
                    Origins {
                        nodes,
                        other,
                        gens: atomic_u64(0),
                    },
                ),
            })
        }
    }

    /// Origin nodes.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::ClusterNode::<3>::millis().capacity(), 3);
    /// ```
    #[must_use]
    pub const fn capacity(&self) -> usize {
        CAP
    }

    /// The resource's totals over every origin and call chain. Read it;
    /// record through the cluster node, so the origins and "other" add up
    /// to it.
    ///
    /// ```
    /// use leaparray::stats::ClusterNode;
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_block(None, 0, 2).unwrap();
    /// assert_eq!(cn.total().block_request(0), 2);
    /// ```
    #[must_use]
    pub const fn total(&self) -> &StatisticNode<SECOND, MINUTE> {
        &self.total
    }

    /// The node of other origins: evicted origins' folded counts, records
    /// without an origin, and records that found their origin's node
    /// changing hands. [`others`](Self::others) adds the nodes of evicted
    /// origins not folded yet.
    ///
    /// ```
    /// use leaparray::stats::ClusterNode;
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_pass(None, 0, 1).unwrap();
    /// assert_eq!(cn.other().total_pass(0), 1);
    /// ```
    #[must_use]
    pub const fn other(&self) -> &StatisticNode<SECOND, MINUTE> {
        &self.table.policy().other
    }

    fn nodes(&self) -> &[OriginNode<SECOND, MINUTE>; CAP] {
        &self.table.policy().nodes
    }

    /// The slot of `origin` (inserted if absent, evicting the least active
    /// origin of its probe if full) as `(pos, gen)`; `None` if it went
    /// again before its position was written (module docs, "A slot's
    /// value").
    fn locate(&self, origin: Origin, now: u64) -> Option<(usize, u64)> {
        let t = &self.table;
        let place = t.place(origin.hash());
        let v = t.update(place, None, now, |_, v| Step::Keep(v))?;
        let gen = gen_of(v);
        if pos_of(v) != UNKNOWN {
            return Some((pos_of(v) as usize, gen));
        }
        let i = t
            .probe(place)
            .position(|s| s.fingerprint() == place.fingerprint() && s.value() == Some(v))?;
        let pos = (place.home() + i) % CAP;
        let known = value_of(gen, pos as u64);
        let written = t.update(place, None, now, |tag, w| {
            if w == v {
                match Value::new(known) {
                    Some(word) => Step::Write {
                        tag,
                        word,
                        out: true,
                    },
                    None => Step::Keep(false),
                }
            } else {
                Step::Keep(w == known)
            }
        });
        (written == Some(true)).then_some((pos, gen))
    }

    /// Pins `origin`'s node for a record at `now`, or gives "other"
    /// (module docs, "Recording").
    fn pin(&self, origin: Option<Origin>, now: u64) -> Pin<'_, SECOND, MINUTE> {
        let origin = Origin::some(origin)?;
        let (pos, gen) = self.locate(origin, now)?;
        let node = &self.nodes()[pos];
        node.pin(gen, origin, self.other(), now)
            .then_some((node, gen))
    }

    /// The node a pin records into.
    fn node_of<'a>(&'a self, pin: Pin<'a, SECOND, MINUTE>) -> &'a StatisticNode<SECOND, MINUTE> {
        pin.map_or(self.other(), |(node, _)| &node.stats)
    }

    /// Removes a pin (module docs).
    fn unpin(&self, pin: Pin<'_, SECOND, MINUTE>, now: u64) {
        if let Some((node, gen)) = pin {
            node.unpin(gen, self.other(), now);
        }
    }

    /// Records through `op` into the totals, then into `origin`'s node or
    /// "other"; the first error.
    fn record(
        &self,
        origin: Option<Origin>,
        now: u64,
        op: impl Fn(&StatisticNode<SECOND, MINUTE>) -> Result<(), AddError>,
    ) -> Result<(), AddError> {
        let t = op(&self.total);
        let pin = self.pin(origin, now);
        let o = op(self.node_of(pin));
        self.unpin(pin, now);
        t.and(o)
    }

    /// Records `n` passed requests of `origin` (`None`: no origin) at `now`
    /// in the totals and the origin's node ([`StatisticNode::add_pass`]).
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_pass(Some(Origin::named("a")), 0, 2).unwrap();
    /// assert_eq!(cn.origin(Origin::named("a"), 0).unwrap().second.pass, 2);
    /// ```
    pub fn add_pass(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError> {
        self.record(origin, now, |s| s.add_pass(now, n))
    }

    /// Records `n` blocked requests of `origin` at `now`.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_block(Some(Origin::named("a")), 0, 2).unwrap();
    /// assert_eq!(cn.origin(Origin::named("a"), 0).unwrap().second.block, 2);
    /// ```
    pub fn add_block(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError> {
        self.record(origin, now, |s| s.add_block(now, n))
    }

    /// Records `n` business exceptions of `origin` at `now`.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_exception(Some(Origin::named("a")), 0, 1).unwrap();
    /// assert_eq!(cn.origin(Origin::named("a"), 0).unwrap().second.exception, 1);
    /// ```
    pub fn add_exception(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError> {
        self.record(origin, now, |s| s.add_exception(now, n))
    }

    /// Records `success` completed requests of `origin` taking `rt` ticks
    /// in all ([`StatisticNode::add_rt_and_success`]).
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_rt_and_success(Some(Origin::named("a")), 0, 30, 2).unwrap();
    /// let a = cn.origin(Origin::named("a"), 0).unwrap();
    /// assert_eq!((a.second.success, a.second.rt, a.second.min_rt), (2, 30, Some(30)));
    /// ```
    pub fn add_rt_and_success(
        &self,
        origin: Option<Origin>,
        now: u64,
        rt: u64,
        success: u64,
    ) -> Result<(), AddError> {
        self.record(origin, now, |s| s.add_rt_and_success(now, rt, success))
    }

    /// An entry of `origin` at `now` for `n` permits that passed: `n`
    /// passes and one more in flight, in the totals and the origin's node,
    /// which stays pinned until the entry's [`exit`](OriginEntry::exit)
    /// (module docs).
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// let a = Origin::named("a");
    /// let e = cn.enter(Some(a), 100, 1);
    /// assert_eq!((cn.total().concurrency(), cn.origin(a, 100).unwrap().concurrency), (1, 1));
    /// e.exit(130, false);
    /// let s = cn.origin(a, 130).unwrap();
    /// assert_eq!((s.concurrency, s.second.success, s.second.rt), (0, 1, 30));
    /// ```
    pub fn enter(
        &self,
        origin: Option<Origin>,
        now: u64,
        n: u64,
    ) -> OriginEntry<'_, SECOND, MINUTE> {
        let pin = self.pin(origin, now);
        for s in [&self.total, self.node_of(pin)] {
            let _ = s.add_pass(now, n);
            s.increase_concurrency(now);
        }
        OriginEntry {
            total: &self.total,
            other: self.other(),
            pin,
            start: now,
            n,
            open: true,
        }
    }

    /// What `origin`'s node holds at `now`, if the origin is resident and
    /// has recorded in it: read between two reads of the node's state
    /// that both find it open for the origin, so never a mix of two
    /// origins (module docs, "What a reader sees").
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// assert_eq!(cn.origin(Origin::named("a"), 0), None);
    /// ```
    #[must_use]
    pub fn origin(&self, origin: Origin, now: u64) -> Option<OriginStats> {
        let place = self.table.place(origin.hash());
        self.table
            .probe(place)
            .enumerate()
            .filter(|(_, s)| s.fingerprint() == place.fingerprint())
            .find_map(|(i, s)| {
                let v = s.value()?;
                self.read((place.home() + i) % CAP, gen_of(v), now)
            })
    }

    /// Every resident origin that has recorded in its node, in slot order:
    /// each as [`origin`](Self::origin) reads it.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<8>::millis();
    /// cn.add_pass(Some(Origin::named("a")), 0, 1).unwrap();
    /// cn.add_pass(Some(Origin::named("b")), 0, 2).unwrap();
    /// let mut passes: Vec<u64> = cn.origins(0).map(|o| o.second.pass).collect();
    /// passes.sort();
    /// assert_eq!(passes, [1, 2]);
    /// ```
    pub fn origins(&self, now: u64) -> impl Iterator<Item = OriginStats> + '_ {
        self.table
            .iter()
            .enumerate()
            .filter_map(move |(pos, s)| self.read(pos, gen_of(s.value()?), now))
    }

    /// "Other" as a reader counts it at `now`: the node of other origins
    /// plus every origin node whose generation is not its slot's (an
    /// evicted origin not folded yet), as one row with no origin. With
    /// [`origins`](Self::origins), the partition of
    /// [`total`](Self::total) (module docs, "What a reader sees"); the
    /// minimum RT is the least of them, the peak the highest.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<1>::millis();
    /// cn.add_pass(Some(Origin::named("a")), 0, 1).unwrap();
    /// cn.add_pass(Some(Origin::named("b")), 0, 2).unwrap(); // evicts a
    /// assert_eq!((cn.others(0).origin, cn.others(0).second.pass), (None, 1));
    /// assert_eq!(cn.origin(Origin::named("b"), 0).unwrap().second.pass, 2);
    /// ```
    #[must_use]
    pub fn others(&self, now: u64) -> OriginStats {
        let of = |n: &StatisticNode<SECOND, MINUTE>| OriginStats {
            origin: None,
            second: Counts::of(n.second(), now),
            minute: Counts::of(n.minute(), now),
            concurrency: n.concurrency(),
        };
        let mut c = of(self.other());
        for pos in self.evicted() {
            let n = of(&self.nodes()[pos].stats);
            c.second = c.second.plus(n.second);
            c.minute = c.minute.plus(n.minute);
            c.concurrency = c.concurrency.saturating_add(n.concurrency);
        }
        c
    }

    /// Each resident origin's minute-level windows at `now`
    /// ([`Metric::details`](crate::stats::Metric::details)), each origin read as [`origin`](Self::origin)
    /// reads it, then "other" as [`others`](Self::others) counts it
    /// (`None`), window by window, oldest first: at most `CAP + 1` rows,
    /// what the metric log writes per origin
    /// ([`MetricLog::write_origins`](crate::export::MetricLog::write_origins)).
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Event, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.add_pass(Some(Origin::named("a")), 0, 2).unwrap();
    /// cn.add_block(None, 1_500, 1).unwrap();
    /// let rows: Vec<_> = cn.origin_windows(1_500).collect();
    /// assert_eq!(rows.len(), 2);
    /// assert_eq!(rows[0].0, Some(Origin::named("a")));
    /// assert_eq!((rows[0].1[0].start, rows[0].1[0].get(Event::Pass)), (0, 2));
    /// assert_eq!((rows[1].0, rows[1].1[0].start, rows[1].1[0].get(Event::Block)), (None, 1_000, 1));
    /// ```
    pub fn origin_windows(
        &self,
        now: u64,
    ) -> impl Iterator<Item = (Option<Origin>, heapless::Vec<MetricWindow, MINUTE>)> + '_ {
        let resident = self.table.iter().enumerate().filter_map(move |(pos, s)| {
            self.read_node(pos, gen_of(s.value()?), |node| {
                (
                    Some(Origin::from_hash(node.origin.load(Ordering::Acquire))),
                    node.stats.minute().details(now),
                )
            })
        });
        resident.chain(core::iter::once_with(move || {
            let mut rows = self.other().minute().details(now);
            for pos in self.evicted() {
                for w in self.nodes()[pos].stats.minute().details(now) {
                    match rows.iter_mut().find(|r| r.start == w.start) {
                        Some(r) => *r = plus(r, &w),
                        // Both hold live windows only: at most MINUTE.
                        None => {
                            let _ = rows.push(w);
                        }
                    }
                }
            }
            rows.sort_unstable_by_key(|w| w.start);
            (None, rows)
        }))
    }

    /// The origin nodes that hold counts of an evicted origin not folded
    /// yet: their generation is not their slot's and they are not done.
    fn evicted(&self) -> impl Iterator<Item = usize> + '_ {
        self.table.iter().enumerate().filter_map(|(pos, slot)| {
            let s = self.nodes()[pos].state.load(Ordering::Acquire);
            let resident = slot.value().map(gen_of) == Some(state_gen(s));
            (!resident && phase(s) != DONE).then_some(pos)
        })
    }

    /// The node at `pos` if it is open for generation `gen`, read between
    /// two reads of its state.
    fn read(&self, pos: usize, gen: u64, now: u64) -> Option<OriginStats> {
        self.read_node(pos, gen, |node| OriginStats {
            // ORDERING: acquire, as the counts' loads: a read of the next
            // origin's name (stored after `folding`) sees `folding` below.
            origin: Some(Origin::from_hash(node.origin.load(Ordering::Acquire))),
            second: Counts::of(node.stats.second(), now),
            minute: Counts::of(node.stats.minute(), now),
            concurrency: node.stats.concurrency(),
        })
    }

    /// `f` of the node at `pos` if it is open for generation `gen` both
    /// before and after `f` reads it.
    fn read_node<T>(
        &self,
        pos: usize,
        gen: u64,
        f: impl FnOnce(&OriginNode<SECOND, MINUTE>) -> T,
    ) -> Option<T> {
        let node = self.nodes().get(pos)?;
        let open = |s: u64| state_gen(s) == gen && phase(s) == OPEN;
        let before = node.state.load(Ordering::Acquire);
        if !open(before) {
            return None;
        }
        let out = f(node);
        // ORDERING: a fold writes `folding` before it empties the node and
        // notes the next origin (release stores), and `f`'s loads acquire:
        // a read that saw an emptied cell or the next origin sees `folding`
        // (or later) here.
        open(node.state.load(Ordering::Acquire)).then_some(out)
    }
}

/// Two readings of one window added: events summed, the least minimum
/// RT, the higher peak.
fn plus(a: &MetricWindow, b: &MetricWindow) -> MetricWindow {
    let mut counts = a.counts;
    for (c, d) in counts.iter_mut().zip(b.counts) {
        *c = c.saturating_add(d);
    }
    MetricWindow {
        start: a.start,
        counts,
        min_rt: match (a.min_rt, b.min_rt) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        max_concurrency: a.max_concurrency.max(b.max_concurrency),
    }
}

impl<const CAP: usize, const SECOND: usize, const MINUTE: usize> fmt::Debug
    for ClusterNode<CAP, SECOND, MINUTE>
{
    /// The capacity and the totals.
    ///
    /// ```
    /// let cn = leaparray::stats::ClusterNode::<2>::millis();
    /// assert!(format!("{cn:?}").starts_with("ClusterNode { capacity: 2, total: StatisticNode"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterNode")
            .field("capacity", &CAP)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const CAP: usize, const SECOND: usize, const MINUTE: usize> defmt::Format
    for ClusterNode<CAP, SECOND, MINUTE>
{
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ClusterNode {{ capacity: {=usize}, total: {} }}",
            CAP,
            self.total
        );
    }
}

mod sealed {
    /// Only [`ClusterNode`](super::ClusterNode)s are [`Cluster`](super::Cluster)s.
    pub trait Sealed {}
}

impl<const CAP: usize, const SECOND: usize, const MINUTE: usize> sealed::Sealed
    for ClusterNode<CAP, SECOND, MINUTE>
{
}

/// A [`ClusterNode`] of any capacity, as a
/// [`DefaultNode`](crate::stats::DefaultNode) and a flow rule reach it
/// (`&'static dyn Cluster` in a `static`). Sealed.
///
/// ```
/// use leaparray::stats::{Cluster, ClusterNode};
/// static CN: ClusterNode<8> = ClusterNode::millis();
/// static ANY: &dyn Cluster = &CN;
/// ANY.enter(None, 0, 1).exit(5, false);
/// assert_eq!(ANY.total().total_success(5), 1);
/// ```
pub trait Cluster: Sync + sealed::Sealed {
    /// [`ClusterNode::total`].
    fn total(&self) -> &StatisticNode;
    /// [`ClusterNode::enter`].
    fn enter(&self, origin: Option<Origin>, now: u64, n: u64) -> OriginEntry<'_>;
    /// [`ClusterNode::add_block`].
    fn add_block(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError>;
    /// [`ClusterNode::origin`].
    fn origin(&self, origin: Origin, now: u64) -> Option<OriginStats>;
}

impl<const CAP: usize> Cluster for ClusterNode<CAP> {
    fn total(&self) -> &StatisticNode {
        ClusterNode::total(self)
    }
    fn enter(&self, origin: Option<Origin>, now: u64, n: u64) -> OriginEntry<'_> {
        ClusterNode::enter(self, origin, now, n)
    }
    fn add_block(&self, origin: Option<Origin>, now: u64, n: u64) -> Result<(), AddError> {
        ClusterNode::add_block(self, origin, now, n)
    }
    fn origin(&self, origin: Origin, now: u64) -> Option<OriginStats> {
        ClusterNode::origin(self, origin, now)
    }
}

/// An entry in flight through a [`ClusterNode`] ([`ClusterNode::enter`]):
/// its origin's node stays pinned until [`exit`](Self::exit). Dropped
/// without `exit`, it leaves as an exit with no completion (concurrency
/// only: no success, no RT).
///
/// ```
/// use leaparray::stats::{ClusterNode, Origin};
/// let cn = ClusterNode::<4>::millis();
/// drop(cn.enter(Some(Origin::named("a")), 0, 1));
/// assert_eq!((cn.total().concurrency(), cn.total().total_success(0)), (0, 0));
/// ```
#[must_use = "an entry is in flight until its exit"]
pub struct OriginEntry<'a, const SECOND: usize = 2, const MINUTE: usize = 60> {
    total: &'a StatisticNode<SECOND, MINUTE>,
    other: &'a StatisticNode<SECOND, MINUTE>,
    pin: Pin<'a, SECOND, MINUTE>,
    start: u64,
    n: u64,
    open: bool,
}

impl<const SECOND: usize, const MINUTE: usize> OriginEntry<'_, SECOND, MINUTE> {
    /// Sentinel's exit at `now`: the entry's `n` successes with the RT
    /// `now - start` (once, as Sentinel's `addRtAndSuccess(rt, n)`), `n`
    /// exceptions too if `error`, and one fewer in flight, in the totals
    /// and the node it entered; then its pin goes.
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// cn.enter(None, 0, 2).exit(40, true);
    /// let t = cn.total();
    /// assert_eq!((t.total_success(40), t.total_exception(40), t.avg_rt(40)), (2, 2, 20.0));
    /// ```
    pub fn exit(mut self, now: u64, error: bool) {
        let rt = now.saturating_sub(self.start);
        for s in [self.total, self.node()] {
            let _ = s.add_rt_and_success(now, rt, self.n);
            if error {
                let _ = s.add_exception(now, self.n);
            }
        }
        self.leave(now);
    }

    /// When the entry started.
    ///
    /// ```
    /// let cn = leaparray::stats::ClusterNode::<4>::millis();
    /// let e = cn.enter(None, 70, 1);
    /// assert_eq!(e.start(), 70);
    /// # e.exit(80, false);
    /// ```
    #[must_use]
    pub const fn start(&self) -> u64 {
        self.start
    }

    /// Whether the entry counts in its origin's node (else in "other").
    ///
    /// ```
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// let e = cn.enter(Some(Origin::named("a")), 0, 1);
    /// assert!(e.in_origin_node());
    /// # e.exit(1, false);
    /// ```
    #[must_use]
    pub const fn in_origin_node(&self) -> bool {
        self.pin.is_some()
    }

    fn node(&self) -> &StatisticNode<SECOND, MINUTE> {
        self.pin.map_or(self.other, |(node, _)| &node.stats)
    }

    fn leave(&mut self, now: u64) {
        if !self.open {
            return;
        }
        self.open = false;
        self.total.decrease_concurrency();
        self.node().decrease_concurrency();
        if let Some((node, gen)) = self.pin {
            node.unpin(gen, self.other, now);
        }
    }
}

impl<const SECOND: usize, const MINUTE: usize> Drop for OriginEntry<'_, SECOND, MINUTE> {
    fn drop(&mut self) {
        // No time: the start only names which windows a fold reads ids
        // near; it moves every window the node holds.
        let start = self.start;
        self.leave(start);
    }
}

impl<const SECOND: usize, const MINUTE: usize> fmt::Debug for OriginEntry<'_, SECOND, MINUTE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OriginEntry")
            .field("start", &self.start)
            .field("n", &self.n)
            .field("in_origin_node", &self.in_origin_node())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const SECOND: usize, const MINUTE: usize> defmt::Format for OriginEntry<'_, SECOND, MINUTE> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "OriginEntry {{ start: {=u64}, n: {=u64} }}",
            self.start,
            self.n
        );
    }
}

#[cfg(all(test, not(leaparray_loom)))]
mod tests {
    use super::*;

    const A: Origin = Origin::named("appA");
    const B: Origin = Origin::named("appB");

    /// The module's race table, step by step on one thread: A pinned and
    /// recording while B evicts A from the only slot and comes for its
    /// node.
    #[test]
    fn a_record_into_a_node_changing_hands_lands_once() {
        let cn = ClusterNode::<1>::millis();
        cn.add_pass(Some(A), 0, 2).unwrap();
        // Thread 1: pins A's node (generation 1).
        let pin = cn.pin(Some(A), 0);
        assert!(pin.is_some());
        // Thread 2: B evicts A; A's node is pinned, so B's pass goes to
        // "other" and the node is closed.
        cn.add_pass(Some(B), 0, 1).unwrap();
        assert_eq!(cn.other().second().pass(0), 1);
        assert_eq!(cn.origin(B, 0), None);
        // Thread 1: its add lands in A's node, then it unpins: the last pin
        // of a closed node folds it into "other".
        cn.node_of(pin).add_pass(0, 4).unwrap();
        cn.total().add_pass(0, 4).unwrap();
        assert_eq!(cn.others(0).second.pass, 1 + 2 + 4);
        cn.unpin(pin, 0);
        assert_eq!(cn.other().second().pass(0), 7);
        // B again: takes the emptied node.
        cn.add_pass(Some(B), 0, 8).unwrap();
        assert_eq!(cn.origin(B, 0).unwrap().second.pass, 8);
        assert_eq!(cn.others(0).second.pass, 7);
        assert_eq!(cn.total().second().pass(0), 15);
    }

    /// A late recorder of an evicted origin (its generation read before
    /// the eviction) never records into the node's next origin.
    #[test]
    fn a_late_recorder_of_an_evicted_origin_goes_to_other() {
        let cn = ClusterNode::<1>::millis();
        cn.add_pass(Some(A), 0, 1).unwrap();
        let (pos, old) = cn.locate(A, 0).unwrap();
        cn.add_pass(Some(B), 0, 1).unwrap(); // evicts A, folds, B takes the node
        let node = &cn.nodes()[pos];
        assert!(!node.pin(old, A, cn.other(), 0));
        assert_eq!(cn.origin(B, 0).unwrap().second.pass, 1);
        assert_eq!(cn.others(0).second.pass, 1);
    }

    /// Entries in flight hold their node: a fold waits for the last exit,
    /// and the exits' RT lands in the node before it is folded.
    #[test]
    fn an_evicted_origin_with_entries_in_flight_is_folded_at_its_last_exit() {
        let cn = ClusterNode::<1>::millis();
        let e1 = cn.enter(Some(A), 0, 1);
        let e2 = cn.enter(Some(A), 0, 1);
        cn.add_pass(Some(B), 10, 1).unwrap(); // evicts A: closed, 2 pins
        assert_eq!(cn.others(10).second.pass, 3);
        e1.exit(20, false);
        assert_eq!(cn.other().second().pass(20), 1); // not folded yet
        e2.exit(30, true);
        let o = Counts::of(cn.other().second(), 30);
        assert_eq!(
            (o.pass, o.success, o.exception, o.rt, o.min_rt),
            (3, 2, 1, 50, Some(20))
        );
        assert_eq!(cn.other().concurrency(), 0);
        assert_eq!(cn.total().concurrency(), 0);
        cn.add_pass(Some(B), 40, 1).unwrap();
        assert_eq!(
            cn.origin(B, 40).unwrap().second,
            Counts {
                pass: 1,
                ..Counts::default()
            }
        );
    }

    /// A fold by an exit whose clock is far behind the node's newest
    /// window (an entry dropped without exit unpins at its start) still
    /// moves every window the node holds.
    #[test]
    fn a_fold_with_an_old_clock_moves_every_window() {
        let cn = ClusterNode::<1>::millis();
        let entry = cn.enter(Some(A), 0, 1);
        cn.add_pass(Some(A), 100_000, 5).unwrap();
        cn.add_pass(Some(B), 100_000, 1).unwrap(); // evicts A: closed, 1 pin
        drop(entry); // the last pin: folds with `now` = 0
        cn.add_pass(Some(B), 100_000, 2).unwrap();
        assert_eq!(cn.origin(B, 100_000).unwrap().minute.pass, 2);
        assert_eq!(cn.others(100_000).minute.pass, 1 + 5);
    }
}
