//! What a table asks of its owner and tells it: the [`Policy`] that ranks,
//! folds and starts keys, a closure's [`Step`], and what an update or a
//! lookup found ([`Event`], [`Found`], [`Start`]).

use super::value::Value;

/// What a [`Table::update`](super::Table::update) closure decides on a key's slot.
///
/// ```
/// use leaparray::keyed::Step;
/// let s: Step<bool> = Step::Keep(false);
/// assert!(matches!(s, Step::Keep(false)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step<R> {
    /// Swap the slot from exactly what the closure saw to `tag` and `word`,
    /// and return `out` if that swap succeeds; the closure runs again on
    /// what the slot holds if it fails.
    Write {
        /// The policy's new tag.
        tag: u8,
        /// The new value.
        word: Value,
        /// What [`Table::update`](super::Table::update) returns once the swap succeeded.
        out: R,
    },
    /// Write nothing; [`Table::update`](super::Table::update) returns this.
    Keep(R),
}

/// The value a settler gives its key ([`Policy::start`]).
///
/// ```
/// use leaparray::keyed::{Start, Value};
/// let s = Start { word: Value::new(5).unwrap(), remembered: false };
/// assert_eq!(s.word.get(), 5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Start {
    /// The value.
    pub word: Value,
    /// Whether it comes from the policy's memory of evicted keys: the
    /// settle that stores it is counted as [`Event::Remembered`].
    pub remembered: bool,
}

/// What a [`Table`](super::Table) tells its policy after it happened ([`Policy::count`]).
///
/// ```
/// use leaparray::keyed::Event;
/// assert_ne!(Event::Recycled, Event::Evicted);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// A recyclable slot was taken for another key.
    Recycled,
    /// A key was evicted.
    Evicted,
    /// A claim settled into a [`Start`] with `remembered` set.
    Remembered,
}

/// What a read-only [`Table::find`](super::Table::find) saw in a key's probe.
///
/// ```
/// use leaparray::keyed::Found;
/// assert_ne!(Found::Claimed, Found::Absent { room: true });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Found {
    /// The key's value (the first slot of its probe that holds it).
    Value(u64),
    /// A claim of the key, not settled yet: it settles into
    /// [`Policy::start`].
    Claimed,
    /// No slot holds the key; `room`: a slot of its probe is free or
    /// recyclable (eviction not counted). Another key's claim in flight is
    /// not room: it settles into that key unless it is withdrawn.
    Absent {
        /// Whether a slot of the key's probe was free or recyclable when
        /// read.
        room: bool,
    },
}

/// What a slot's value means to a [`Table`](super::Table): which slot may be reused,
/// which key an eviction takes, what a key leaving its slot leaves behind,
/// and what a key starts from (module docs, "A slot changes hands").
///
/// Words given to a policy (and to [`Table::update`](super::Table::update)'s closure and
/// [`Table::retain`](super::Table::retain)'s predicate) are values: a [`Value`]'s number, below
/// `2^63`; the words it gives the table are [`Value`]s.
///
/// # What the table asks of a policy
///
/// - A hook runs on the thread of whichever caller reaches it, with that
///   caller's context: [`start`](Policy::start) (and
///   [`count`](Policy::count) of [`Event::Remembered`]) may run on a
///   caller of another key that settles the claim ("One slot per key"), so
///   a start must not depend on which caller asks beyond its `cx` (a
///   [`KeyedGate`](crate::KeyedGate) starts a key from the newest of its
///   `cx` and the table's high water).
/// - A hook must not call the table: a [`start`](Policy::start) that
///   updates the key being settled meets its own claim and settles it
///   again, without end.
/// - Recycling calls [`recycle`](Policy::recycle), not
///   [`fold`](Policy::fold): what a recycled key must not lose, the policy
///   keeps in `recycle`.
/// - [`fold`](Policy::fold) may run for a swap that then fails, and again
///   for the same key: it must only raise what it remembers.
/// - A hook that panics leaves a claim in its slot, which the next caller
///   that meets it settles.
///
/// ```
/// use leaparray::keyed::{Policy, Slot, Start, Step, Table, Value};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// /// A count per key; an eviction takes the least count and remembers
/// /// the largest it took, which every new key starts from.
/// #[derive(Debug, Default)]
/// struct Counts { evicted_max: AtomicU64 }
///
/// impl Policy for Counts {
///     type Context = ();
///     type Rank = u64;
///     fn evicts(&self) -> bool { true }
///     fn rank(&self, _: u8, word: u64, _: ()) -> u64 { word }
///     fn fold(&self, _: u64, _: u8, word: u64, _: ()) {
///         self.evicted_max.fetch_max(word, Ordering::AcqRel);
///     }
///     fn start(&self, _: u64, _: ()) -> Start {
///         // Only values are folded: the largest is one.
///         let max = Value::new(self.evicted_max.load(Ordering::Acquire)).unwrap_or(Value::MAX);
///         Start { word: max, remembered: false }
///     }
/// }
///
/// let t = Table::new([const { Slot::new() }; 1], Counts::default());
/// // A count past `Value::MAX` is refused, not written.
/// let bump = |_: u8, w: u64| match w.checked_add(1).and_then(Value::new) {
///     Some(v) => Step::Write { tag: 0, word: v, out: Some(v.get()) },
///     None => Step::Keep(None),
/// };
/// assert_eq!(t.update(t.place(1), None, (), bump), Some(Some(1)));
/// assert_eq!(t.update(t.place(1), None, (), bump), Some(Some(2)));
/// // One slot: key 2 evicts key 1 (count 2) and starts from it.
/// assert_eq!(t.update(t.place(2), None, (), bump), Some(Some(3)));
/// ```
pub trait Policy {
    /// What a caller passes along with each request (a
    /// [`KeyedGate`](crate::KeyedGate): its window; `()` for none).
    type Context: Copy;
    /// An eviction's order: the least goes.
    type Rank: Ord;

    /// Whether a key that finds no free or recyclable slot evicts.
    fn evicts(&self) -> bool;

    /// Whether the slot holding `word` may be taken for another key by a
    /// caller in `cx`, with no eviction. None by default.
    #[inline(always)]
    fn recyclable(&self, word: u64, cx: Self::Context) -> bool {
        let _ = (word, cx);
        false
    }

    /// Where the key with `tag` and `word` stands for an eviction by a
    /// caller in `cx`: the least goes.
    fn rank(&self, tag: u8, word: u64, cx: Self::Context) -> Self::Rank;

    /// Called before the swap that recycles the slot holding `word` (module
    /// docs, "A slot changes hands"). Nothing by default.
    #[inline(always)]
    fn recycle(&self, word: u64, cx: Self::Context) {
        let _ = (word, cx);
    }

    /// Called once a probe is read and its victim chosen, before
    /// [`fold`](Self::fold): the key with fingerprint `fp` is about to
    /// evict the key with fingerprint `victim`. A policy may load here what
    /// `fold` and [`start`](Self::start) read, so that their cache misses
    /// overlap; what it loads must not decide anything. Nothing by default.
    #[inline(always)]
    fn evicting(&self, fp: u64, victim: u64, cx: Self::Context) {
        let _ = (fp, victim, cx);
    }

    /// Called before the swap that evicts, or frees ([`Table::retain`](super::Table::retain)),
    /// the key with fingerprint `fp`, `tag` and `word`: what it must not
    /// lose goes into the policy's memory here. It may run for a swap that
    /// then fails, and again for the same key: it must only raise what it
    /// remembers.
    fn fold(&self, fp: u64, tag: u8, word: u64, cx: Self::Context);

    /// The value a settler gives the key with fingerprint `fp`, called
    /// after it read every other slot of the key's probe (module docs).
    fn start(&self, fp: u64, cx: Self::Context) -> Start;

    /// Told after a recycling, an eviction, or a remembered start took
    /// effect. Nothing by default.
    #[inline(always)]
    fn count(&self, event: Event) {
        let _ = event;
    }
}
