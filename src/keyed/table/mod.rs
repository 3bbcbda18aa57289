//! The keyed slot table and its protocol, argued once: what a slot holds,
//! where a key's slots are (its probe), one update of a key's slot through
//! its user's closure, how threads that race to insert one key keep it in
//! one slot (claims and settling), when a slot changes hands (recycling,
//! eviction, [`Table::retain`]) and why what its old key had is never lost.
//!
//! A [`Table`] is the protocol; a [`Policy`] is what a slot's value means.
//! [`KeyedGate`](super::KeyedGate) is a table whose values are gate words
//! (its policy: `slot.rs`), `leaparray-governor`'s `KeyedStore` one whose
//! values are GCRA arrival times. The names: a *table* of slots, and the
//! *policy* that decides, for its values, which slot may be reused and
//! which key goes (as an eviction policy does in a cache).
//!
//! # A slot
//!
//! A [`Slot`] is 128 bits: the *key half* in the high 64, the *word* in the
//! low 64. The key half is the key's 56-bit *fingerprint* above an 8-bit
//! *tag* the policy owns (a [`KeyedGate`](super::KeyedGate) keeps its
//! key's demand there). The word is
//!
//! | word | state |
//! |---|---|
//! | `0` | free |
//! | top bit set | the key's *value* ([`Value`]) in the 63 bits below it, which the policy gives meaning |
//! | otherwise | a *claim* of a slot for the key, not settled yet: a token unique to that claim, with the claim's probe position in its low 4 bits |
//!
//! [`Table::place`] gives a key's *home* (Lemire's reduction of the top
//! bits of its hash: uniform over the slots, no division) and its
//! fingerprint (56 bits of an odd multiple of the hash, so no function of
//! the home). Its *probe* is its home and the `min(PROBE, slots) - 1`
//! slots after it, wrapping ([`PROBE`](super::PROBE)` = 16`). A slot holds
//! a key if it holds its fingerprint: two keys with one fingerprint in one
//! probe are one key to the table; a lookup meets a resident's fingerprint
//! with probability at most `16 * 2^-56` per lookup for a uniform hash. A
//! settler of another key's claim finds that key's home from the claim's
//! position, as a fingerprint does not give it. The invariant: at most one
//! slot of a key's probe holds its value.
//!
//! A value is a [`Value`]: a number below `2^63`, which a closure or a
//! policy builds with [`Value::new`] (a number that does not fit is
//! `None` there, never written as another), and which the table hands out
//! as that number, without the top bit: to [`Table::update`]'s closure,
//! to every [`Policy`] hook, to [`Table::retain`]'s predicate, and in
//! [`Snapshot::value`] and [`Found::Value`]. Only [`Snapshot::word`] gives
//! the word as stored.
//!
//! # One update
//!
//! [`Table::update`] reads the key's slot `s`, calls its closure with the
//! tag and the value, and, if the closure asks for a write, swaps the whole
//! 128-bit slot from `s` to the new tag and value. The swap succeeds only
//! if the slot is bit for bit what the closure was shown, so "write only if
//! nothing changed" holds exactly; on failure the closure runs again on
//! what the slot holds now:
//!
//! ```text
//!  Thread 1                               Thread 2
//!  ------------------------------------   ------------------------------------
//!  read slot: (K, 10)
//!                                         read slot: (K, 10)
//!  f(10): write 11
//!                                         f(10): write 11
//!  swap (K,10) -> (K,11): ok
//!                                         swap (K,10) -> (K,11): fails, slot
//!                                         is (K,11); f(11) decides again
//! ```
//!
//! With a plain store in place of the swap, both would decide from 10. A
//! swap of the whole slot (not the word alone) also fails when the slot
//! changed hands meanwhile, even to an equal word; then the update scans
//! the probe again.
//!
//! # One slot per key: claims and settling
//!
//! A key's probe has several slots, and whether a slot may be reused
//! ([`Policy::recyclable`]) depends on the caller's context (its clock).
//! So two threads inserting the same key can disagree on which slot is the
//! first free one:
//!
//! ```text
//!  Thread 1 (now = t)                    Thread 2 (now = t + 3 windows)
//!  -----------------------------------   -----------------------------------
//!  scan K's probe: slot 0 holds key X,
//!  live at t; slot 1 free
//!                                        scan K's probe: slot 0 holds X,
//!                                        recyclable at t + 3: take it
//!                                        swap slot 0: X -> K
//!  swap slot 1: free -> K
//!  K is in two slots: each admits up to the limit
//! ```
//!
//! So an insertion first writes a *claim*, and a claim becomes the key's
//! value only once it is *settled*: every other slot of the probe is read,
//! and
//! - if one holds the key's value, or an earlier claim of the key (in
//!   probe order), this claim is withdrawn (swapped back to free);
//! - a later claim of the key is withdrawn by this settler;
//! - otherwise the claim is swapped for the key's starting value
//!   ([`Policy::start`], read after those reads); a settler deciding for
//!   the key (the caller that wrote the claim, or any caller of
//!   [`Table::update`] for that key that meets it) swaps it instead for
//!   its closure's decision on that start, in the same one swap
//!   ("Progress", below).
//!
//! Withdrawing and settling swap from the exact claim (its token is unique
//! among the table's last `2^58` claims: a table-wide counter modulo
//! `2^58`, plus one), so a claim settles at most once, and never after it
//! was withdrawn, unless its settler is preempted across exactly a multiple
//! of `2^58` claims of the table and the slot holds the same key's claim
//! for the same position again (about 90 years of claims at 10^8 a
//! second). Any thread that meets a claim settles it (the claiming
//! thread may be preempted, or be the code an interrupt handler
//! interrupted), so no thread ever waits for another.
//!
//! Why two claims of one key never both settle: say claims at probe
//! positions `i < j` both did. The settler of `j` read slot `i` and did not
//! see the claim there (it would have withdrawn `j`), so claim `i` was
//! written after that read, after claim `j` was written. The settler of `i`
//! then read slot `j` after claim `j` was written: it saw the claim (and
//! withdrew it, so `j` never settled) or its value (and withdrew `i`).
//! Either way one of them did not settle. A settled value and a later claim
//! are the same argument with the settled value in place of the claim.
//! These races are loom models (`loom-tests/tests/keyed.rs`,
//! `loom-tests/tests/governor.rs`).
//!
//! # A slot changes hands: what its key had outlives it
//!
//! A key with no slot takes the first slot of its probe that is free or
//! [recyclable](Policy::recyclable). Failing that, if the policy
//! [evicts](Policy::evicts), it takes the slot of the key the policy ranks
//! least ([`Policy::rank`]); an evicting scan evicts rather than settle
//! another key's claim in its way first. Otherwise it settles another key's
//! claim in its way, if any, and looks again; with none, the update finds
//! no room (`None`). The victim choice reads the probe slot by slot, not
//! atomically: it may miss the least, which costs quality, not safety.
//!
//! Before the swap that takes a slot from its key, the table calls the
//! policy: [`Policy::recycle`] before recycling, [`Policy::fold`] before
//! evicting, and [`Table::retain`] calls [`Policy::fold`] before freeing.
//! There the policy writes whatever the key must not lose (a memory of
//! evicted keys; the newest time any caller had reached). A settler calls
//! [`Policy::start`] after it read every other slot of the probe, and
//! every write to a slot is a compare-and-swap, so a settler whose reads
//! come after the swap that took the old key's slot synchronizes with that
//! swap and sees everything the policy wrote before it:
//!
//! ```text
//!  Thread 1 (key V updates)              Thread 2 (key K evicts V)
//!  -----------------------------------   -----------------------------------
//!  reads V's slot: (V, w)                reads V's slot: (V, w)
//!                                        policy.fold(V, w)
//!  swaps (V, w) -> (V, w')               swaps (V, w) -> (K, claim)
//! ```
//!
//! Exactly one swap wins, as both compare the whole slot. If thread 1's
//! does, thread 2's fold was of an older value of V (a policy whose folds
//! only raise what they remember loses nothing: V stays resident, and a
//! later eviction folds again) and thread 2 scans again. If thread 2's
//! does, thread 1 scans again, finds V gone, inserts it, and its settler
//! calls [`Policy::start`] after reading the evicted slot: the fold is
//! visible. Had thread 2 folded after its swap, or a settler started its
//! key before reading the probe, V could start from nothing and take its
//! limit again (loom models `an_eviction_races_a_decision_of_the_evicted_key`
//! in `loom-tests/tests/keyed.rs`, `an_eviction_races_an_update_of_the_evicted_key`
//! in `loom-tests/tests/governor.rs`). [`Table::retain`] is an eviction with
//! no new key: a failed swap means the key was updated meanwhile, and it
//! stays.
//!
//! # Progress
//!
//! A claim that a settler of another key settles becomes a value that
//! decided nothing yet: a fresh key's, which a policy may rank least. If
//! the caller that claimed it settled it that way too and decided after,
//! two new keys on a full probe could undo each other forever:
//!
//! ```text
//!  Thread 1 (new key A)                  Thread 2 (new key B)
//!  -----------------------------------   -----------------------------------
//!  evict the least, claim, settle:
//!  A holds its start (ranked least)
//!  f_A decides; preempted
//!                                        A ranks least: fold A, evict it,
//!                                        claim, settle: B holds its start
//!                                        f_B decides; preempted
//!  swap A's start -> decision: fails;
//!  scan: B ranks least: evict it, ...
//!                                        swap B's start -> decision: fails;
//!                                        scan: A ranks least: evict it, ...
//! ```
//!
//! Each round two swaps succeed and no call returns. So a settler deciding
//! for its key settles the claim straight into the decision: the swap
//! that settles the claim is the swap that completes the call, and a
//! caller's claim goes only to its key's decision, to a withdrawal by a
//! settler of its own key, or to a settler of another key that found no
//! room and no victim in its probe.
//!
//! What is guaranteed: every loop of [`Table::update`] ends a pass in a
//! swap, and a pass that does not return was ended by another swap that
//! succeeded (module docs of each step above). The swaps that complete a
//! call are a decision's swap on the key's value and the settling swap of
//! a settler deciding for its key. The others (a claim, a withdrawal, a
//! settler of another key's claim) do not. Without completed calls, no
//! value is written except by settlers of another key's claim; each claim
//! takes a free slot or a value, and each withdrawal frees a claim of a
//! key whose value or earlier claim is in its probe, whose settler then
//! completes. A settler of another key's claim runs only when a scan finds
//! no room and no victim: for an evicting policy, when every slot of its
//! probe holds another key's claim, that is, when more calls than the
//! probe has slots (`min(PROBE, capacity)`) are inserting at once; for a
//! policy that does not evict, when the probe is full, and the value it
//! settles is taken again only by a caller to whom it is
//! [recyclable](Policy::recyclable). So: **lock-free** (some call
//! completes in a finite number of steps of all callers) for an evicting
//! policy while at most `min(PROBE, capacity)` calls run on the table at
//! once, and for a policy whose starts are not recyclable by the callers
//! running; beyond that, **obstruction-free** (a call that runs alone
//! completes). Beyond the bound the schedule above comes back through
//! the settler of another key's claim: in a table of one slot, two new
//! keys each preempted between their claim and their settling swap settle
//! and evict each other's claim without end. No thread ever waits for
//! another: a preempted caller's claim is settled by whoever needs the
//! slot. The loom model `gate_two_new_keys_on_a_full_probe_both_complete`
//! (`loom-tests/tests/review_table.rs`, up to 5 preemptions) and the
//! threads of `tests/review_table.rs` and
//! `integrations/governor/tests/review_table.rs` replay the schedule above
//! within the bound.
//!
//! What a policy remembers and how its keys start from it is the policy's
//! own argument: `keyed/slot.rs` for a [`KeyedGate`](super::KeyedGate)'s
//! gate words, `integrations/governor/src/slot.rs` for GCRA arrival times.
//!
//! # The parts
//!
//! `value.rs`: what a slot holds ([`Value`], [`Slot`], [`Snapshot`],
//! [`Place`]); `policy.rs`: what the table asks of its owner and tells it
//! ([`Policy`], [`Step`], [`Start`], [`Event`], [`Found`]); this file: the
//! protocol and [`Table`], which follows it.

use core::fmt;

use super::PROBE;
use crate::sync::{const_fn_unless_loom, AtomicU64, Ordering::Relaxed};

mod policy;
mod value;

pub use policy::{Event, Found, Policy, Start, Step};
use value::{claim_position, fp_of, is_claim, key_of, slot, value_of, valued, word};
pub(crate) use value::{place_of, USED};
pub use value::{Place, Slot, Snapshot, Value, ValueTooLarge};

/// A lock-free table of keyed slots following the slot protocol (module
/// docs), over the slots `S` (`[Slot; CAP]` in a `static`, `Box<[Slot]>`
/// on the heap) with the policy `P`. Every write to a slot is one 128-bit
/// compare-and-swap; nothing allocates.
///
/// ```
/// use leaparray::keyed::{Found, Policy, Slot, Start, Step, Table, Value};
/// # #[derive(Debug)] struct Latest;
/// # impl Policy for Latest {
/// #     type Context = (); type Rank = u64;
/// #     fn evicts(&self) -> bool { true }
/// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
/// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
/// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
/// # }
/// static T: Table<Latest, [Slot; 64]> = Table::new([const { Slot::new() }; 64], Latest);
/// let set = |v: Value| move |_: u8, _: u64| Step::Write { tag: 0, word: v, out: () };
/// assert_eq!(T.update(T.place(9), None, (), set(Value::new(5).unwrap())), Some(()));
/// assert_eq!(T.find(T.place(9), ()), Found::Value(5));
/// ```
pub struct Table<P, S> {
    // `pub(super)`: a `KeyedGate` builds its table as one struct
    // expression, in place (through `Table::new`, an unoptimized build
    // copies a large table several times on the stack).
    pub(super) slots: S,
    pub(super) policy: P,
    /// The last claim token handed out: written by insertions only (not
    /// padded to a cache line of its own: a [`KeyedGate`](super::KeyedGate)
    /// states its size to within 1,024 bytes of its slots and memory).
    pub(super) tokens: AtomicU64,
}

impl<P, S> Table<P, S> {
    /// Whether a slot may be used where an interrupt or signal handler can
    /// interrupt its user (`crate::sync::PORTABLE_U128_INTERRUPT_SAFE`).
    const INTERRUPT_SAFE: bool = crate::sync::PORTABLE_U128_INTERRUPT_SAFE;

    const_fn_unless_loom! {
        /// A table over `slots` (all free: [`Slot::new`]) with `policy`.
        /// Where a slot would be portable-atomic's global spin lock this
        /// does not compile (as [`KeyedGate::new`](super::KeyedGate::new)).
        ///
        /// ```
        /// use leaparray::keyed::{Policy, Slot, Start, Table};
        /// # #[derive(Debug)] struct P;
        /// # impl Policy for P {
        /// #     type Context = (); type Rank = u64;
        /// #     fn evicts(&self) -> bool { false }
        /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
        /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
        /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
        /// # }
        /// let heap: Table<P, Box<[Slot]>> = Table::new((0..1000).map(|_| Slot::new()).collect(), P);
        /// assert_eq!(heap.capacity(), 1000);
        /// ```
        ///
        /// An array of no slots does not compile (slots on the heap may be
        /// none: then every key finds no room, and [`peek`](Self::peek)
        /// gives a free slot):
        ///
        /// ```compile_fail
        /// # use leaparray::keyed::{Policy, Slot, Start, Table};
        /// # #[derive(Debug)] struct P;
        /// # impl Policy for P {
        /// #     type Context = (); type Rank = u64;
        /// #     fn evicts(&self) -> bool { false }
        /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
        /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
        /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
        /// # }
        /// static T: Table<P, [Slot; 0]> = Table::new([], P);
        /// ```
        #[must_use]
        pub fn new(slots: S, policy: P) -> Self {
            const {
                assert!(
                    Self::INTERRUPT_SAFE,
                    "leaparray: on this target a keyed table's slot (portable-atomic's AtomicU128) \
                     is a global spin lock; see KeyedGate::new"
                );
                // `[Slot; 0]` (the only slots of size 0): a table with no
                // slot. Slots on the heap may be none: every call answers
                // as for a full table (no room; `peek`: free).
                assert!(
                    core::mem::size_of::<S>() != 0,
                    "leaparray: a keyed table needs at least one slot"
                );
            };
            Table {
                slots,
                policy,
                tokens: crate::sync::atomic_u64(0),
            }
        }
    }

    /// The policy.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug, PartialEq)] struct P(u8);
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 1], P(3));
    /// assert_eq!(t.policy(), &P(3));
    /// ```
    #[must_use]
    pub const fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy, to change it before the table is shared.
    pub(super) const fn policy_mut(&mut self) -> &mut P {
        &mut self.policy
    }
}

impl<P: Policy, S: AsRef<[Slot]>> Table<P, S> {
    /// The slots.
    #[inline(always)]
    fn slots(&self) -> &[Slot] {
        self.slots.as_ref()
    }

    /// Slots in the table.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// assert_eq!(Table::new([const { Slot::new() }; 5], P).capacity(), 5);
    /// ```
    #[must_use]
    #[inline(always)]
    pub fn capacity(&self) -> usize {
        self.slots().len()
    }

    /// Where the key whose (uniform) hash is `hash` lives: its home from the
    /// hash's top bits, its fingerprint from 56 bits of an odd multiple of
    /// the hash (module docs, "A slot"). Hash keys an attacker chooses with
    /// a secret key first.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 4], P);
    /// assert_eq!((t.place(0).home(), t.place(1 << 63).home()), (0, 2));
    /// ```
    #[must_use]
    #[inline(always)]
    pub fn place(&self, hash: u64) -> Place {
        place_of(hash, self.capacity())
    }

    /// Slots in a probe.
    #[inline(always)]
    fn probe_len(&self) -> usize {
        self.capacity().min(PROBE)
    }

    /// The `i`-th slot of the probe starting at `home`.
    #[inline(always)]
    fn at(&self, home: usize, i: usize) -> usize {
        let j = home + i;
        if j >= self.capacity() {
            j - self.capacity()
        } else {
            j
        }
    }

    /// The home slot of `place` as it is now: given back to
    /// [`update`](Self::update) as `first`, a burst reads its keys' home
    /// slots before it decides any of them, so their cache misses overlap.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 4], P);
    /// assert!(t.peek(t.place(3)).is_free());
    /// ```
    #[must_use]
    #[inline(always)]
    pub fn peek(&self, place: Place) -> Snapshot {
        self.slots()
            .get(self.home_of(place))
            .map_or(Snapshot::FREE, |s| Snapshot(s.load()))
    }

    /// The home of `place` in this table: a place of another, larger table
    /// is reduced to this one's slots ([`Place`]); 0 in a table of none.
    #[inline(always)]
    fn home_of(&self, place: Place) -> usize {
        if place.home < self.capacity() {
            place.home
        } else {
            place.home.checked_rem(self.capacity()).unwrap_or(0)
        }
    }

    /// Updates the slot of the key at `place` through `f`, inserting the
    /// key first if it has no slot (claims, settling, recycling, eviction:
    /// module docs). `f` sees the slot's tag and value and decides
    /// ([`Step`]); it runs again whenever its write's swap fails (the slot
    /// changed since `f` saw it). `first`: the key's home slot as
    /// [`peek`](Self::peek) read it earlier, taken as the first read of the
    /// probe; a stale one costs a failed swap or a reread (an insertion, a
    /// `None` or a [`Step::Keep`] it would lead to rereads the home slot
    /// first, and looks again if it changed). `cx` goes to the policy.
    ///
    /// `None`: no room for the key (no free or recyclable slot in its
    /// probe, and the policy does not evict); nothing was written.
    ///
    /// ```
    /// use leaparray::keyed::{Policy, Slot, Start, Step, Table, Value};
    /// # #[derive(Debug)] struct Refuse;
    /// # impl Policy for Refuse {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 1], Refuse);
    /// // A sum past `Value::MAX` does not fit: refused, nothing written.
    /// let add = |n: u64| move |_: u8, w: u64| match w.checked_add(n).and_then(Value::new) {
    ///     Some(v) => Step::Write { tag: 0, word: v, out: Ok(v.get()) },
    ///     None => Step::Keep(Err(w)),
    /// };
    /// assert_eq!(t.update(t.place(1), None, (), add(2)), Some(Ok(2)));
    /// assert_eq!(t.update(t.place(1), Some(t.peek(t.place(1))), (), add(3)), Some(Ok(5)));
    /// assert_eq!(t.update(t.place(1), None, (), add(Value::MAX.get())), Some(Err(5)));
    /// assert_eq!(t.update(t.place(2), None, (), add(1)), None); // no room, no eviction
    /// ```
    #[inline(always)]
    pub fn update<R, F>(
        &self,
        place: Place,
        first: Option<Snapshot>,
        cx: P::Context,
        mut f: F,
    ) -> Option<R>
    where
        F: FnMut(u8, u64) -> Step<R>,
    {
        if first.is_none() {
            if let Some(out) = self.update_at_home(place, &mut f) {
                return Some(out);
            }
        }
        self.update_by_scan(place, first, cx, f)
    }

    /// The common case of [`update`](Self::update) with no earlier read,
    /// the key's value in its home slot: the scan's first step alone (`f`
    /// decides on a fresh read, the swap is from exactly what it saw).
    /// `None`: the home slot does not hold the key's value, or `f`'s swap
    /// failed; then [`update_by_scan`](Self::update_by_scan) decides (after
    /// a failed swap, `f` runs again on a fresh read). A caller may keep
    /// this step inline and the scan out of line.
    #[inline(always)]
    pub(crate) fn update_at_home<R, F>(&self, place: Place, f: &mut F) -> Option<R>
    where
        F: FnMut(u8, u64) -> Step<R>,
    {
        // (`get`: a table of no slots has no home slot.)
        let cell = self.slots().get(self.home_of(place))?;
        let (s, fp) = (cell.load(), place.fp);
        if fp_of(key_of(s)) != fp || word(s) & USED == 0 {
            return None;
        }
        match f(key_of(s) as u8, value_of(word(s))) {
            Step::Keep(out) => Some(out),
            Step::Write {
                tag,
                word: new,
                out,
            } => cell.swap(s, valued(fp, tag, new)).is_ok().then_some(out),
        }
    }

    /// [`update`](Self::update) without its home-slot step: the scan of
    /// the probe, taking `first` as its first read.
    #[inline(always)]
    pub(crate) fn update_by_scan<R, F>(
        &self,
        place: Place,
        first: Option<Snapshot>,
        cx: P::Context,
        mut f: F,
    ) -> Option<R>
    where
        F: FnMut(u8, u64) -> Step<R>,
    {
        let (home, fp) = (self.home_of(place), place.fp);
        let p = &self.policy;
        let mut first = first.map(|s| s.0);
        'scan: loop {
            // This pass's read of the home slot, if it is `first`.
            let early = first;
            // The first slot a new key may take, the slot an eviction would
            // take, and a claim of another key in the way (settled before
            // finding no room, so a table with room never refuses for a
            // claim in flight; an evicting table evicts instead).
            let mut room = None;
            let mut claim = None;
            let mut victim: Option<(usize, u128, P::Rank)> = None;
            for i in 0..self.probe_len() {
                let at = self.at(home, i);
                let mut s = match first.take() {
                    Some(s) => s,
                    None => self.slots()[at].load(),
                };
                let w = word(s);
                if w == 0 {
                    if room.is_none() {
                        room = Some((at, s));
                    }
                    continue;
                }
                if fp_of(key_of(s)) == fp {
                    if is_claim(w) {
                        // A claim of this key: settled straight into `f`'s
                        // decision (module docs, "Progress").
                        match self.settle(fp, home, i, s, cx, Some(&mut f)) {
                            Some(out) => return Some(out),
                            None => continue 'scan,
                        }
                    }
                    // The key's value: `f` decides, the swap is from
                    // exactly what it saw (module docs, "One update").
                    // A `Keep` on `first` answers only if the slot still
                    // holds it (it came from before the call).
                    let mut early_value = i == 0 && early.is_some();
                    loop {
                        match f(key_of(s) as u8, value_of(word(s))) {
                            Step::Keep(out) if !early_value => return Some(out),
                            Step::Keep(out) => {
                                early_value = false;
                                let now = self.slots()[at].load();
                                if now == s {
                                    return Some(out);
                                }
                                s = now;
                            }
                            Step::Write {
                                tag,
                                word: new,
                                out,
                            } => {
                                let next = valued(fp, tag, new);
                                match self.slots()[at].swap(s, next) {
                                    Ok(_) => return Some(out),
                                    Err(actual) => {
                                        early_value = false;
                                        s = actual;
                                    }
                                }
                            }
                        }
                        if fp_of(key_of(s)) != fp || word(s) & USED == 0 {
                            // Recycled, evicted, freed or withdrawn: look
                            // again.
                            continue 'scan;
                        }
                    }
                }
                if is_claim(w) {
                    if claim.is_none() {
                        claim = Some((at, s));
                    }
                } else if room.is_none() {
                    if p.recyclable(value_of(w), cx) {
                        room = Some((at, s));
                    } else if p.evicts() {
                        let r = p.rank(key_of(s) as u8, value_of(w), cx);
                        if victim.as_ref().is_none_or(|(_, _, least)| r < *least) {
                            victim = Some((at, s, r));
                        }
                    }
                }
            }
            // (`get`: a table of no slots has no home slot, and no room.)
            if early.is_some_and(|s| self.slots().get(home).is_some_and(|c| c.load() != s)) {
                // The home slot's value came from before a burst's earlier
                // requests, and they changed it (the key may be there
                // now): look again rather than take a slot for nothing or
                // answer that there is no room.
                continue 'scan;
            }
            if let Some((at, s)) = room {
                let recycling = word(s) != 0;
                if recycling {
                    // Before the swap that recycles (module docs).
                    p.recycle(value_of(word(s)), cx);
                }
                let event = recycling.then_some(Event::Recycled);
                if let Some(out) = self.take(fp, home, at, s, cx, event, &mut f) {
                    return Some(out);
                }
                continue 'scan;
            }
            if let Some((at, s, _)) = victim {
                p.evicting(fp, fp_of(key_of(s)), cx);
                // Before the swap that evicts (module docs).
                p.fold(fp_of(key_of(s)), key_of(s) as u8, value_of(word(s)), cx);
                if let Some(out) = self.take(fp, home, at, s, cx, Some(Event::Evicted), &mut f) {
                    return Some(out);
                }
                continue 'scan;
            }
            if let Some((at, s)) = claim {
                // Another key's claim: settle it, then look again.
                let j = claim_position(word(s));
                let other_home = (at + self.capacity() - j) % self.capacity();
                let _ = self.settle::<R, F>(fp_of(key_of(s)), other_home, j, s, cx, None);
                continue 'scan;
            }
            return None;
        }
    }

    /// Claims the slot `at` (read as `s`) for the key with fingerprint `fp`
    /// and home `home`, and settles the claim into `f`'s decision; `event`
    /// is counted if the claim's swap succeeds. `None`: the claim's swap or
    /// its settling failed, or it was withdrawn.
    #[allow(clippy::too_many_arguments)]
    fn take<R, F>(
        &self,
        fp: u64,
        home: usize,
        at: usize,
        s: u128,
        cx: P::Context,
        event: Option<Event>,
        f: &mut F,
    ) -> Option<R>
    where
        F: FnMut(u8, u64) -> Step<R>,
    {
        let i = (at + self.capacity() - home) % self.capacity();
        let mine = slot(fp << 8, self.token(i));
        if self.slots()[at].swap(s, mine).is_ok() {
            if let Some(e) = event {
                self.policy.count(e);
            }
            return self.settle(fp, home, i, mine, cx, Some(f));
        }
        None
    }

    /// A claim token none of the table's last `2^58` claims had, for probe
    /// position `i`: nonzero, top bit clear, `i` in its low 4 bits. (`2^58`
    /// divides `2^64`: the period holds across the counter's wrap.)
    fn token(&self, i: usize) -> u64 {
        let t = (self.tokens.fetch_add(1, Relaxed) & ((1 << 58) - 1)) + 1;
        (t << 4) | i as u64
    }

    /// Settles the claim `mine` of the key with fingerprint `fp` and home
    /// `home` at position `i` of its probe (module docs): withdraws it if
    /// the probe holds the key's value or an earlier claim of it, withdraws
    /// later claims of it, and otherwise swaps it for the key's start: with
    /// `f` (a caller deciding for this key), for `f`'s decision on the
    /// start in that one swap, and gives `f`'s out if the swap succeeded.
    /// Whoever meets a claim may call this; all but one of the swaps from
    /// `mine` fail.
    fn settle<R, F>(
        &self,
        fp: u64,
        home: usize,
        i: usize,
        mine: u128,
        cx: P::Context,
        f: Option<&mut F>,
    ) -> Option<R>
    where
        F: FnMut(u8, u64) -> Step<R>,
    {
        let at = self.at(home, i);
        for j in 0..self.probe_len() {
            if j == i {
                continue;
            }
            let other = self.at(home, j);
            let mut s = self.slots()[other].load();
            loop {
                let w = word(s);
                if fp_of(key_of(s)) != fp || w == 0 {
                    break;
                }
                if w & USED != 0 || j < i {
                    // The key's value, or an earlier claim: this one goes
                    // (a failed swap: it had already gone, or settled by
                    // someone who saw none of this).
                    let _ = self.slots()[at].swap(mine, 0);
                    return None;
                }
                // A later claim of the key goes.
                match self.slots()[other].swap(s, 0) {
                    Ok(_) => break,
                    Err(actual) => s = actual,
                }
            }
        }
        // After the probe's reads (module docs, "A slot changes hands").
        let start = self.policy.start(fp, cx);
        let started = valued(fp, 0, start.word);
        // The settler's own key: its decision on the start goes in with
        // the settling swap (module docs, "Progress").
        let (next, out) = match f.map(|f| f(0, start.word.get())) {
            None => (started, None),
            Some(Step::Keep(out)) => (started, Some(out)),
            Some(Step::Write {
                tag,
                word: new,
                out,
            }) => (valued(fp, tag, new), Some(out)),
        };
        if self.slots()[at].swap(mine, next).is_err() {
            return None;
        }
        if start.remembered {
            self.policy.count(Event::Remembered);
        }
        out
    }

    /// What the probe of the key at `place` holds for it, read-only: its
    /// value, a claim of it, or neither (and whether there is room without
    /// evicting, for a caller in `cx`).
    ///
    /// ```
    /// use leaparray::keyed::{Found, Policy, Slot, Start, Step, Table, Value};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 1], P);
    /// assert_eq!(t.find(t.place(1), ()), Found::Absent { room: true });
    /// let _ = t.update(t.place(1), None, (), |_, _| Step::Write { tag: 0, word: Value::new(4).unwrap(), out: () });
    /// assert_eq!(t.find(t.place(1), ()), Found::Value(4));
    /// assert_eq!(t.find(t.place(2), ()), Found::Absent { room: false });
    /// ```
    #[must_use]
    pub fn find(&self, place: Place, cx: P::Context) -> Found {
        let mut room = false;
        let home = self.home_of(place);
        for i in 0..self.probe_len() {
            let s = self.slots()[self.at(home, i)].load();
            let w = word(s);
            if w != 0 && fp_of(key_of(s)) == place.fp {
                if is_claim(w) {
                    return Found::Claimed;
                }
                return Found::Value(value_of(w));
            }
            room |= w == 0 || (!is_claim(w) && self.policy.recyclable(value_of(w), cx));
        }
        Found::Absent { room }
    }

    /// The slots of the probe of `place`, in probe order, each read once
    /// as the iterator reaches it.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 64], P);
    /// assert_eq!(t.probe(t.place(5)).filter(|s| s.is_free()).count(), 16);
    /// ```
    pub fn probe(&self, place: Place) -> impl Iterator<Item = Snapshot> + '_ {
        let home = self.home_of(place);
        (0..self.probe_len()).map(move |i| Snapshot(self.slots()[self.at(home, i)].load()))
    }

    /// Every slot, in order, each read once as the iterator reaches it.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Step, Table, Value};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 8], P);
    /// let _ = t.update(t.place(1), None, (), |_, _| Step::Write { tag: 0, word: Value::new(1).unwrap(), out: () });
    /// assert_eq!(t.iter().filter(|s| s.value().is_some()).count(), 1);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = Snapshot> + '_ {
        self.slots().iter().map(|s| Snapshot(s.load()))
    }

    /// Frees every slot holding a value `keep` refuses, after folding it
    /// ([`Policy::fold`], before the swap that frees: module docs). A slot
    /// updated between the read and the swap stays. One pass over the
    /// slots.
    ///
    /// ```
    /// use leaparray::keyed::{Policy, Slot, Start, Step, Table, Value};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 8], P);
    /// for k in 0..4u64 {
    ///     let _ = t.update(t.place(k << 61), None, (), |_, _| Step::Write { tag: 0, word: Value::new(k).unwrap(), out: () });
    /// }
    /// t.retain((), |_, w| w >= 2);
    /// assert_eq!(t.iter().filter(|s| s.value().is_some()).count(), 2);
    /// ```
    pub fn retain(&self, cx: P::Context, mut keep: impl FnMut(u8, u64) -> bool) {
        for cell in self.slots() {
            let s = cell.load();
            let w = word(s);
            if w & USED != 0 && !keep(key_of(s) as u8, value_of(w)) {
                self.policy
                    .fold(fp_of(key_of(s)), key_of(s) as u8, value_of(w), cx);
                // A failed swap: updated meanwhile, so it stays.
                let _ = cell.swap(s, 0);
            }
        }
    }
}

impl<P: fmt::Debug, S: AsRef<[Slot]>> fmt::Debug for Table<P, S> {
    /// The capacity and the policy.
    ///
    /// ```
    /// # use leaparray::keyed::{Policy, Slot, Start, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 2], P);
    /// assert_eq!(format!("{t:?}"), "Table { capacity: 2, policy: P, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("capacity", &self.slots.as_ref().len())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
