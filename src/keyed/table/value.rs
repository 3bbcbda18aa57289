//! What a slot holds (the module's "A slot"): a key's [`Value`], the
//! 128-bit [`Slot`] and its encoding, a [`Snapshot`] of one, and where a
//! key lives ([`Place`]).

use crate::sync::{
    const_fn_unless_loom,
    Ordering::{AcqRel, Acquire},
    PortableAtomicU128,
};
use core::fmt;

/// The top bit of a slot's word: set in every value (module docs, "A
/// slot"). The table sets it on every [`Value`] it writes and masks it off
/// every value it hands out.
pub(crate) const USED: u64 = 1 << 63;

/// A key's value in a [`Table`](super::Table): a number below `2^63` (the 63 bits of a
/// slot's word below its used bit, module docs "A slot"). What a closure
/// or a policy writes ([`Step::Write`](super::Step::Write), [`Start`](super::Start)) is a `Value`, so a
/// number that does not fit is refused where it is built
/// ([`Value::new`] gives `None`, [`TryFrom`] an error), never stored as
/// another number. What the table hands out (the closure's and the
/// policy's words, [`Snapshot::value`], [`Found::Value`](super::Found::Value)) is a value's
/// [`get`](Value::get).
///
/// ```
/// use leaparray::keyed::Value;
/// assert_eq!(Value::new(5).map(Value::get), Some(5));
/// assert_eq!(Value::new(1 << 63), None);
/// assert_eq!(Value::MAX.get(), (1 << 63) - 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Value(u64);

impl Value {
    /// The least value, 0.
    ///
    /// ```
    /// use leaparray::keyed::Value;
    /// assert_eq!(Value::ZERO.get(), 0);
    /// ```
    pub const ZERO: Value = Value(0);

    /// The largest value, `2^63 - 1`.
    ///
    /// ```
    /// use leaparray::keyed::Value;
    /// assert_eq!(Value::MAX.get(), i64::MAX as u64);
    /// assert_eq!(Value::new(Value::MAX.get() + 1), None);
    /// ```
    pub const MAX: Value = Value(USED - 1);

    /// `v` as a value, or `None` if it is `2^63` or more (it does not fit
    /// a slot). A count bumped past [`MAX`](Value::MAX) is refused here:
    ///
    /// ```
    /// use leaparray::keyed::Value;
    /// let bump = |w: u64, n: u64| w.checked_add(n).and_then(Value::new);
    /// assert_eq!(bump(4, 1), Value::new(5));
    /// assert_eq!(bump(Value::MAX.get(), 1), None);
    /// assert_eq!(bump(u64::MAX, 1), None);
    /// ```
    #[must_use]
    #[inline(always)]
    pub const fn new(v: u64) -> Option<Value> {
        if v & USED == 0 {
            Some(Value(v))
        } else {
            None
        }
    }

    /// The number.
    ///
    /// ```
    /// use leaparray::keyed::Value;
    /// assert_eq!(Value::new(7).unwrap().get(), 7);
    /// ```
    #[must_use]
    #[inline(always)]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The 63 bits of `w` below its top bit: a gate word's value, whose
    /// top bit is the used bit (`slot.rs`).
    #[inline(always)]
    pub(in crate::keyed) const fn low_bits_of(w: u64) -> Value {
        Value(w & !USED)
    }
}

impl TryFrom<u64> for Value {
    type Error = ValueTooLarge;

    /// [`Value::new`], with the number that did not fit as the error.
    ///
    /// ```
    /// use leaparray::keyed::{Value, ValueTooLarge};
    /// assert_eq!(Value::try_from(9), Ok(Value::new(9).unwrap()));
    /// assert_eq!(Value::try_from(u64::MAX), Err(ValueTooLarge { value: u64::MAX }));
    /// ```
    fn try_from(value: u64) -> Result<Value, ValueTooLarge> {
        Value::new(value).ok_or(ValueTooLarge { value })
    }
}

impl From<Value> for u64 {
    /// [`Value::get`].
    ///
    /// ```
    /// use leaparray::keyed::Value;
    /// assert_eq!(u64::from(Value::MAX), (1 << 63) - 1);
    /// ```
    fn from(v: Value) -> u64 {
        v.0
    }
}

/// A number that is not a [`Value`]: `2^63` or more.
///
/// ```
/// use leaparray::keyed::{Value, ValueTooLarge};
/// let e = Value::try_from(1 << 63).unwrap_err();
/// assert_eq!(e, ValueTooLarge { value: 1 << 63 });
/// assert_eq!(e.to_string(), "9223372036854775808 is not a keyed table value (at most 2^63 - 1)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ValueTooLarge {
    /// The number.
    pub value: u64,
}

impl fmt::Display for ValueTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a keyed table value (at most 2^63 - 1)",
            self.value
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ValueTooLarge {}

/// The word of a slot.
#[inline(always)]
pub(super) const fn word(slot: u128) -> u64 {
    slot as u64
}

/// The key half of a slot.
#[inline(always)]
pub(super) const fn key_of(slot: u128) -> u64 {
    (slot >> 64) as u64
}

/// The fingerprint of a key half.
#[inline(always)]
pub(super) const fn fp_of(half: u64) -> u64 {
    half >> 8
}

/// The slot holding the key half `half` and `word`.
#[inline(always)]
pub(super) const fn slot(half: u64, word: u64) -> u128 {
    ((half as u128) << 64) | word as u128
}

/// The slot holding the value `v` for the key of fingerprint `fp`, with the
/// policy's tag `tag`.
#[inline(always)]
pub(super) const fn valued(fp: u64, tag: u8, v: Value) -> u128 {
    slot((fp << 8) | tag as u64, v.get() | USED)
}

/// The value a value's word holds: its 63 bits below [`USED`].
#[inline(always)]
pub(super) const fn value_of(w: u64) -> u64 {
    Value::low_bits_of(w).get()
}

/// A claim's word (a token), as opposed to a value or a free slot.
#[inline(always)]
pub(super) const fn is_claim(w: u64) -> bool {
    w != 0 && w & USED == 0
}

/// The probe position a claim was made for (its low 4 bits).
#[inline(always)]
pub(super) const fn claim_position(w: u64) -> usize {
    (w & 0xf) as usize
}

/// The home slot and the fingerprint of the hash `hash` in a table of
/// `cap` slots (module docs, "A slot").
#[inline(always)]
pub(crate) const fn place_of(hash: u64, cap: usize) -> Place {
    Place {
        home: ((hash as u128 * cap as u128) >> 64) as usize,
        fp: hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8,
    }
}

/// One slot of a [`Table`](super::Table): a 128-bit atomic (portable-atomic's; a loom
/// mutex under `--cfg leaparray_loom`), free when built. Read it through
/// the table ([`Table::iter`](super::Table::iter)).
///
/// ```
/// use leaparray::keyed::Slot;
/// let slots: [Slot; 4] = [const { Slot::new() }; 4];
/// assert!(format!("{:?}", slots[0]).contains("free"));
/// ```
pub struct Slot(pub(super) PortableAtomicU128);

impl Slot {
    const_fn_unless_loom! {
        /// A free slot.
        ///
        /// ```
        /// let slot = leaparray::keyed::Slot::new();
        /// # let _ = slot;
        /// ```
        #[must_use]
        pub fn new() -> Slot {
            Slot(PortableAtomicU128::new(0))
        }
    }

    /// The slot's value (`Acquire`).
    #[inline(always)]
    pub(super) fn load(&self) -> u128 {
        self.0.load(Acquire)
    }

    /// Replaces exactly `cur` by `new` (`AcqRel`), or gives what the slot
    /// holds.
    #[inline(always)]
    pub(super) fn swap(&self, cur: u128, new: u128) -> Result<u128, u128> {
        // ORDERING: every write to a slot is this swap: a reader of its
        // result sees what the writer wrote before it (module docs, "A slot
        // changes hands").
        self.0.compare_exchange(cur, new, AcqRel, Acquire)
    }
}

impl Default for Slot {
    /// [`Slot::new`].
    ///
    /// ```
    /// let slot = leaparray::keyed::Slot::default();
    /// # let _ = slot;
    /// ```
    fn default() -> Self {
        Slot::new()
    }
}

impl fmt::Debug for Slot {
    /// What the slot holds now, as a [`Snapshot`].
    ///
    /// ```
    /// let slot = leaparray::keyed::Slot::new();
    /// assert_eq!(format!("{slot:?}"), "Slot(free)");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slot(")?;
        Snapshot(self.load()).describe(f)?;
        write!(f, ")")
    }
}

/// A slot as one read saw it: a key's fingerprint, tag and value, a claim,
/// or free (module docs, "A slot").
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::{Place, Policy, Slot, Start, Step, Table, Value};
/// # #[derive(Debug)]
/// # struct Count;
/// # impl Policy for Count {
/// #     type Context = ();
/// #     type Rank = u64;
/// #     fn evicts(&self) -> bool { false }
/// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
/// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
/// #     fn start(&self, _: u64, _: ()) -> Start { Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
/// # }
/// let t = Table::new([const { Slot::new() }; 8], Count);
/// let p = t.place(42);
/// let _ = t.update(p, None, (), |_, _| Step::Write { tag: 7, word: Value::new(1).unwrap(), out: () });
/// let s = t.peek(p);
/// assert_eq!((s.fingerprint(), s.tag(), s.value()), (p.fingerprint(), 7, Some(1)));
/// assert_eq!(s.word(), 1 << 63 | 1); // the value under the used bit
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Snapshot(pub(super) u128);

impl Snapshot {
    /// A free slot's snapshot (an array's filler).
    pub(in crate::keyed) const FREE: Snapshot = Snapshot(0);

    /// The fingerprint of the key the slot holds (0 in a free slot).
    #[must_use]
    pub const fn fingerprint(self) -> u64 {
        fp_of(key_of(self.0))
    }

    /// The policy's tag (0 in a free slot or a claim).
    #[must_use]
    pub const fn tag(self) -> u8 {
        key_of(self.0) as u8
    }

    /// The slot's word as stored (module docs, "A slot"): 0 (free), a
    /// value with the top bit set above it, or a claim's token (top bit
    /// clear). [`value`](Self::value) reads a value out of it.
    #[must_use]
    pub const fn word(self) -> u64 {
        word(self.0)
    }

    /// The key's value (a [`Value`]'s number, below `2^63`), if the slot
    /// holds one.
    #[must_use]
    pub const fn value(self) -> Option<u64> {
        if self.word() & USED != 0 {
            Some(value_of(self.word()))
        } else {
            None
        }
    }

    /// Whether the slot is free.
    #[must_use]
    pub const fn is_free(self) -> bool {
        self.word() == 0
    }

    /// Whether the slot holds a claim not settled yet.
    #[must_use]
    pub const fn is_claim(self) -> bool {
        is_claim(self.word())
    }

    fn describe(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value() {
            _ if self.is_free() => write!(f, "free"),
            Some(v) => write!(
                f,
                "key {:#x}, tag {}, value {:#x}",
                self.fingerprint(),
                self.tag(),
                v
            ),
            None => write!(f, "claim of key {:#x}", self.fingerprint()),
        }
    }
}

impl fmt::Debug for Snapshot {
    /// `Snapshot(free)`, `Snapshot(key .., tag .., value ..)` or
    /// `Snapshot(claim of key ..)`.
    ///
    /// ```
    /// # use leaparray::keyed::{Slot, Table};
    /// # #[derive(Debug)] struct P;
    /// # impl leaparray::keyed::Policy for P {
    /// #     type Context = (); type Rank = u64;
    /// #     fn evicts(&self) -> bool { false }
    /// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
    /// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    /// #     fn start(&self, _: u64, _: ()) -> leaparray::keyed::Start { leaparray::keyed::Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
    /// # }
    /// let t = Table::new([const { Slot::new() }; 2], P);
    /// assert_eq!(format!("{:?}", t.peek(t.place(1))), "Snapshot(free)");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Snapshot(")?;
        self.describe(f)?;
        write!(f, ")")
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Snapshot {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Snapshot {{ fingerprint: {=u64:#x}, tag: {=u8}, word: {=u64:#x} }}",
            self.fingerprint(),
            self.tag(),
            self.word()
        );
    }
}

/// Where a key lives in a [`Table`](super::Table): its home slot and its fingerprint
/// ([`Table::place`](super::Table::place); module docs, "A slot").
///
/// A place is for the table that made it. Another table reduces a home
/// beyond its slots modulo its capacity (no panic), which need not be the
/// home its own [`Table::place`](super::Table::place) gives the key: the key is then looked up
/// and inserted in another probe, as another key.
///
/// ```
/// # use leaparray::keyed::{Slot, Table};
/// # #[derive(Debug)] struct P;
/// # impl leaparray::keyed::Policy for P {
/// #     type Context = (); type Rank = u64;
/// #     fn evicts(&self) -> bool { false }
/// #     fn rank(&self, _: u8, w: u64, _: ()) -> u64 { w }
/// #     fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
/// #     fn start(&self, _: u64, _: ()) -> leaparray::keyed::Start { leaparray::keyed::Start { word: leaparray::keyed::Value::ZERO, remembered: false } }
/// # }
/// let t = Table::new([const { Slot::new() }; 64], P);
/// let p = t.place(u64::MAX);
/// assert_eq!(p.home(), 63);
/// assert!(p.fingerprint() < 1 << 56);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Place {
    pub(super) home: usize,
    pub(super) fp: u64,
}

impl Place {
    /// Slot 0, fingerprint 0 (an array's filler).
    pub(in crate::keyed) const HOME: Place = Place { home: 0, fp: 0 };

    /// The key's home slot: the first of its probe.
    #[must_use]
    pub const fn home(self) -> usize {
        self.home
    }

    /// The key's 56-bit fingerprint.
    #[must_use]
    pub const fn fingerprint(self) -> u64 {
        self.fp
    }
}
