//! An [`Origin`] (a caller) and its [`OriginNode`] in a
//! [`ClusterNode`](crate::stats::ClusterNode): the words the protocol in
//! `stats/cluster.rs` reads and writes (a table slot's value, a node's
//! state) and the table's policy (ranks, generations). The protocol is
//! argued there.

use core::fmt;

use crate::keyed::{Policy, Start, Value};
use crate::stats::node::StatisticNode;
use crate::sync::{atomic_u64, const_fn_unless_loom, AtomicU64, Ordering};

/// A caller of a resource, Sentinel's `origin` (the name given to
/// `ContextUtil.enter(name, origin)`): a 64-bit hash of its name.
///
/// The empty name is no origin, as Sentinel's `""`
/// ([`is_none`](Origin::is_none)): the rules and the cluster node treat
/// `Some(Origin::named(""))` as `None` (no origin node, not an `other`
/// caller, passed by an authority rule). So is the one hash
/// [`from_hash`](Origin::from_hash) would need to give it (chance `2^-64`
/// for a uniform hash).
///
/// [`named`](Origin::named) hashes a name with a fixed function (FNV-1a,
/// then a finalizer), usable in `const` rules. Callers that choose their
/// own origin names can aim them at one table probe: hash those with a
/// secret key (`keyed::KeyHasher`, feature `std`) and use
/// [`from_hash`](Origin::from_hash).
///
/// ```
/// use leaparray::stats::Origin;
/// const A: Origin = Origin::named("appA");
/// assert_eq!(A, Origin::named("appA"));
/// assert_ne!(A, Origin::named("appB"));
/// assert_eq!(Origin::from_hash(7).hash(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Origin(u64);

impl Origin {
    /// The origin named `name`.
    ///
    /// ```
    /// assert_ne!(leaparray::stats::Origin::named(""), leaparray::stats::Origin::named(" "));
    /// ```
    #[must_use]
    pub const fn named(name: &str) -> Origin {
        let bytes = name.as_bytes();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
            i += 1;
        }
        // MurmurHash3's finalizer: the table places by the top bits.
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        Origin(h ^ (h >> 33))
    }

    /// The origin whose (uniform) hash is `hash`.
    ///
    /// ```
    /// assert_eq!(leaparray::stats::Origin::from_hash(9).hash(), 9);
    /// ```
    #[must_use]
    pub const fn from_hash(hash: u64) -> Origin {
        Origin(hash)
    }

    /// Whether this is the empty name's origin, which means no origin
    /// (Sentinel's `""`, the origin of `ContextUtil.enter(name)`).
    ///
    /// ```
    /// use leaparray::stats::Origin;
    /// assert!(Origin::named("").is_none());
    /// assert!(!Origin::named("appA").is_none());
    /// ```
    #[must_use]
    pub const fn is_none(self) -> bool {
        self.0 == EMPTY.0
    }

    /// `origin`, or `None` for the empty name's origin ([`Origin::is_none`]).
    pub(crate) fn some(origin: Option<Origin>) -> Option<Origin> {
        origin.filter(|o| !o.is_none())
    }

    /// The hash.
    ///
    /// ```
    /// let a = leaparray::stats::Origin::named("a");
    /// assert_eq!(leaparray::stats::Origin::from_hash(a.hash()), a);
    /// ```
    #[must_use]
    pub const fn hash(self) -> u64 {
        self.0
    }
}

/// The empty name's origin: no origin.
const EMPTY: Origin = Origin::named("");

/// The largest capacity: a slot's value keeps the node's index in 16
/// bits, `0xffff` meaning "not known yet".
pub(crate) const MAX_CAP: usize = 0xffff;
const POS_BITS: u32 = 16;
pub(crate) const UNKNOWN: u64 = 0xffff;
/// Generations are below `2^47`.
const GEN_MASK: u64 = (1 << 47) - 1;

pub(crate) const fn value_of(gen: u64, pos: u64) -> u64 {
    (gen << POS_BITS) | pos
}
pub(crate) const fn gen_of(value: u64) -> u64 {
    value >> POS_BITS
}
pub(crate) const fn pos_of(value: u64) -> u64 {
    value & UNKNOWN
}

// A node's state word: generation (47 bits) | phase (2) | pins (15).
const PIN_BITS: u32 = 15;
pub(crate) const MAX_PINS: u64 = (1 << PIN_BITS) - 1;
pub(crate) const OPEN: u64 = 0;
pub(crate) const CLOSED: u64 = 1;
pub(crate) const FOLDING: u64 = 2;
pub(crate) const DONE: u64 = 3;

pub(crate) const fn state(gen: u64, phase: u64, pins: u64) -> u64 {
    (gen << (PIN_BITS + 2)) | (phase << PIN_BITS) | pins
}
pub(crate) const fn state_gen(s: u64) -> u64 {
    s >> (PIN_BITS + 2)
}
pub(crate) const fn phase(s: u64) -> u64 {
    (s >> PIN_BITS) & 3
}
pub(crate) const fn pins(s: u64) -> u64 {
    s & MAX_PINS
}

/// One origin's statistics in a [`ClusterNode`](crate::stats::ClusterNode): a [`StatisticNode`] and
/// the state that lets it change origins (module docs). Built only to be
/// handed to [`ClusterNode::with_nodes`](crate::stats::ClusterNode::with_nodes); read it through the cluster
/// node ([`ClusterNode::origin`](crate::stats::ClusterNode::origin), [`ClusterNode::origins`](crate::stats::ClusterNode::origins)).
///
/// ```
/// use leaparray::stats::{OriginNode, StatisticNode};
/// let nodes: [OriginNode; 4] = [const { OriginNode::new(StatisticNode::millis()) }; 4];
/// # let _ = nodes;
/// ```
pub struct OriginNode<const SECOND: usize = 2, const MINUTE: usize = 60> {
    /// Generation, phase, pins (module docs, "A node's state").
    pub(crate) state: AtomicU64,
    /// The origin's hash, written while the node is `folding`.
    pub(crate) origin: AtomicU64,
    pub(crate) stats: StatisticNode<SECOND, MINUTE>,
}

impl<const SECOND: usize, const MINUTE: usize> OriginNode<SECOND, MINUTE> {
    const_fn_unless_loom! {
        /// A node with the windows of `stats` (which must be empty), holding no
        /// origin.
        ///
        /// ```
        /// use leaparray::stats::{OriginNode, StatisticNode};
        /// static N: OriginNode = OriginNode::new(StatisticNode::millis());
        /// # let _ = &N;
        /// ```
        #[must_use]
        pub fn new(stats: StatisticNode<SECOND, MINUTE>) -> Self {
            OriginNode {
                state: atomic_u64(state(0, DONE, 0)),
                origin: atomic_u64(0),
                stats,
            }
        }
    }
}

impl<const SECOND: usize, const MINUTE: usize> OriginNode<SECOND, MINUTE> {
    /// Pins the node for generation `gen` of `origin` at `now`: `false`
    /// if the record goes to `other` instead. Takes the node from an
    /// older generation (folding it into `other`) when that is open with
    /// no pin or done, and closes it when it has pins (the protocol:
    /// `stats/cluster.rs`, "Recording").
    pub(crate) fn pin(
        &self,
        gen: u64,
        origin: Origin,
        other: &StatisticNode<SECOND, MINUTE>,
        now: u64,
    ) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let (g, ph, p) = (state_gen(s), phase(s), pins(s));
            let next = if g == gen {
                if ph != OPEN || p == MAX_PINS {
                    return false;
                }
                s + 1
            } else if g > gen {
                return false;
            } else {
                match (ph, p) {
                    (OPEN, 0) | (DONE, _) => state(g, FOLDING, 0),
                    (OPEN, _) => state(g, CLOSED, p),
                    _ => return false,
                }
            };
            // ORDERING: acquires what the node's last holder wrote (its
            // records, a fold's emptying); the unpin releases this one's.
            match self
                .state
                .compare_exchange(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Err(actual) => s = actual,
                Ok(_) if g == gen => return true,
                Ok(_) if phase(next) == CLOSED => return false,
                Ok(_) => {
                    // `folding`: no one else writes the node.
                    if ph == OPEN {
                        self.stats.drain_into(other, now);
                    }
                    // ORDERING: release: a reader that sees this origin
                    // sees `folding` after it (`ClusterNode::read`).
                    self.origin.store(origin.hash(), Ordering::Release);
                    // ORDERING: publishes the emptied node and its origin.
                    self.state.store(state(gen, OPEN, 1), Ordering::Release);
                    return true;
                }
            }
        }
    }

    /// Removes a pin of generation `gen`; the last pin of a closed node
    /// folds it into `other` at `now`.
    pub(crate) fn unpin(&self, gen: u64, other: &StatisticNode<SECOND, MINUTE>, now: u64) {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let last = phase(s) == CLOSED && pins(s) == 1;
            let next = if last {
                state(gen, FOLDING, 0)
            } else {
                s.saturating_sub(1)
            };
            match self
                .state
                .compare_exchange(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Err(actual) => s = actual,
                Ok(_) => {
                    if last {
                        self.stats.drain_into(other, now);
                        // ORDERING: publishes the emptied node.
                        self.state.store(state(gen, DONE, 0), Ordering::Release);
                    }
                    return;
                }
            }
        }
    }
}

impl<const SECOND: usize, const MINUTE: usize> fmt::Debug for OriginNode<SECOND, MINUTE> {
    /// The state's generation, phase and pins.
    ///
    /// ```
    /// use leaparray::stats::{OriginNode, StatisticNode};
    /// let n = OriginNode::new(StatisticNode::millis());
    /// assert_eq!(format!("{n:?}"), "OriginNode { generation: 0, phase: \"done\", pins: 0, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Ordering::Acquire);
        f.debug_struct("OriginNode")
            .field("generation", &state_gen(s))
            .field(
                "phase",
                &["open", "closed", "folding", "done"][phase(s) as usize],
            )
            .field("pins", &pins(s))
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const SECOND: usize, const MINUTE: usize> defmt::Format for OriginNode<SECOND, MINUTE> {
    fn format(&self, f: defmt::Formatter<'_>) {
        let s = self.state.load(Ordering::Acquire);
        defmt::write!(
            f,
            "OriginNode {{ generation: {=u64}, phase: {=u64}, pins: {=u64} }}",
            state_gen(s),
            phase(s),
            pins(s)
        );
    }
}

/// Whether `a` and `b` have the same windows and tick rate.
pub(crate) const fn same_windows<const S: usize, const M: usize>(
    a: &StatisticNode<S, M>,
    b: &StatisticNode<S, M>,
) -> bool {
    a.second().window() == b.second().window()
        && a.minute().window() == b.minute().window()
        && a.ticks_per_second() == b.ticks_per_second()
}

/// The table's policy: the origin nodes, "other", and the generations
/// (module docs).
pub(crate) struct Origins<const CAP: usize, const S: usize, const M: usize> {
    pub(crate) nodes: [OriginNode<S, M>; CAP],
    pub(crate) other: StatisticNode<S, M>,
    /// The last generation handed out.
    pub(crate) gens: AtomicU64,
}

impl<const CAP: usize, const S: usize, const M: usize> Policy for Origins<CAP, S, M> {
    /// The caller's `now`.
    type Context = u64;
    /// Activity: 0 for an origin that has not recorded in its node yet,
    /// else 1 + its requests (pass + block) in the second-level interval
    /// + its entries in flight.
    type Rank = u64;

    fn evicts(&self) -> bool {
        true
    }

    fn rank(&self, _: u8, value: u64, now: u64) -> u64 {
        let Some(node) = self.nodes.get(pos_of(value) as usize) else {
            return 0; // position not known yet: a fresh origin
        };
        let s = node.state.load(Ordering::Acquire);
        if state_gen(s) != gen_of(value) || phase(s) != OPEN {
            return 0;
        }
        let second = node.stats.second();
        1u64.saturating_add(second.pass(now))
            .saturating_add(second.block(now))
            .saturating_add(node.stats.concurrency())
    }

    /// Nothing: the node is folded under its own state by its next user
    /// (module docs).
    fn fold(&self, _: u64, _: u8, _: u64, _: u64) {}

    fn start(&self, _: u64, _: u64) -> Start {
        // Relaxed: the generations of one slot are ordered by the
        // happens-before chain through the slot's swaps (module docs).
        let gen = (self.gens.fetch_add(1, Ordering::Relaxed).wrapping_add(1)) & GEN_MASK;
        Start {
            word: Value::new(value_of(gen, UNKNOWN)).unwrap_or(Value::ZERO),
            remembered: false,
        }
    }
}

impl<const CAP: usize, const S: usize, const M: usize> fmt::Debug for Origins<CAP, S, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Origins")
            .field("capacity", &CAP)
            .finish_non_exhaustive()
    }
}
