//! The store's slot table: leaparray's keyed slot table
//! ([`leaparray::keyed::Table`]) with the GCRA policy below. The slot
//! protocol (what a slot holds, where a key's slots are, one update from
//! exactly what governor's closure saw, claims and settling so that one
//! key holds one slot, and why what a policy folds before the swap that
//! takes a slot is seen by the key's next settler) is argued once, with
//! its races, in that module's docs (`leaparray/src/keyed/table/mod.rs`); this
//! file is only what is GCRA's.
//!
//! # A slot's value: the arrival time
//!
//! A slot's value is governor's theoretical arrival time (TAT) of its key,
//! in nanoseconds since the limiter's start: a table
//! [`Value`](leaparray::keyed::Value), below `2^63` (`0`: no TAT yet).
//! The tag is unused (0). A key's
//! fingerprint is 56 bits of its hash by the store's hasher
//! ([`Table::place`](leaparray::keyed::Table::place)).
//!
//! `measure_and_replace(key, f)` is [`Table::update`] with `f` as the
//! closure: `f` runs on the key's TAT, and again on each failed swap
//! (governor's contract); its refusal writes nothing.
//!
//! # Eviction: the earliest TAT goes, and is remembered
//!
//! A new key whose probe has no free slot evicts the key with the
//! *earliest* TAT there (the policy's rank is the TAT). For GCRA, `TAT -
//! now` is how much of its burst a key has booked ahead: the earliest TAT
//! is the key with the most headroom left and the least recent demand. A
//! TAT at or before `now` decides exactly as no state (`max(tat, now)`), so
//! evicting one loses nothing, and the policy needs no time: no slot is
//! ever recyclable without an eviction.
//!
//! The *memory* is [`ROWS`] rows of 64-bit cells, [`CELLS_PER_SLOT`]` *
//! CAP` cells in all (twice the slots' bytes; the whole table three
//! times). A key's cells are one per row, picked by hashes of its
//! fingerprint (all a slot knows of its key). The fold of an evicted (or,
//! by `retain_recent`, freed) key raises each of its cells to its TAT,
//! `cell = max(cell, tat)` (`fetch_max`, `AcqRel`); the table calls it
//! before the swap that takes the slot. A settler starts its key from the
//! *estimate*, the least of its cells (count-min), read after it read the
//! key's probe. Folding is a maximum, so folding a key twice (an eviction
//! whose swap lost, then another) never raises it past its own TAT, and
//! folding the smallest live TAT raises the cells least (other keys that
//! share a cell are over-estimated least); other keys' folds only raise
//! cells (a stricter start, never a laxer one). Cells never expire: a TAT
//! at or before `now` is the same as absent, so an old cell costs nothing
//! once its time has passed.
//!
//! So a key that comes back after it was evicted or freed starts from at
//! least its own folded TAT (the table's argument, "A slot changes hands"),
//! and a caller whose clock is behind the one that evicted or freed it is
//! limited as if the slot had stayed. (`loom-tests/tests/governor.rs`: an
//! eviction racing an update of the evicted key; `retain_recent` racing an
//! update; two threads inserting one key.)
//!
//! # A TAT out of range
//!
//! A slot holds a TAT of 63 bits ([`MAX_TAT`], 292 years after the
//! limiter's start). An update whose new TAT is past it is no
//! [`Value`] and is not stored:
//! the store calls `f` with TATs above the key's until `f` refuses, and
//! returns that refusal (governor's own `NotUntil`). Only a quota whose
//! burst takes more than 146 years to refill admits even at [`MAX_TAT`];
//! such an update is admitted unrecorded (`refuse`).

use leaparray::keyed::{Found, Policy, Slot, Start, Step, Value};

use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire},
};

/// The largest TAT a slot holds (2^63 - 1 ns, 292 years after the
/// limiter's start).
pub(crate) const MAX_TAT: Value = Value::MAX;

/// The TAT of a slot's value (a [`Value`]'s number), `None` for "no state
/// yet".
#[inline(always)]
const fn tat_of(v: u64) -> Option<u64> {
    match v {
        0 => None,
        t => Some(t),
    }
}

/// Rows of the memory of evicted TATs: a key has one cell in each.
pub(crate) const ROWS: usize = 3;

/// Memory cells (64-bit) per slot (16 bytes): the memory is at most twice
/// the slots' bytes, the whole table at most three times.
pub(crate) const CELLS_PER_SLOT: usize = 4;

/// A 64-bit mix (the SplitMix64 finalizer): row `r`'s cell of a key is
/// picked by the mix of its fingerprint and `r`, so the rows' picks are
/// independent for a uniform fingerprint.
#[inline(always)]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The GCRA policy: the memory of evicted and freed TATs (module docs,
/// "Eviction").
pub(crate) struct Gcra {
    /// [`ROWS`] rows of `width` cells, row `r` at `r * width..`.
    cells: Box<[AtomicU64]>,
    /// Cells in a row: `4 * CAP / ROWS` (at least 1).
    width: usize,
}

impl Gcra {
    /// The cell of fingerprint `fp` in row `r`.
    #[inline(always)]
    fn cell(&self, fp: u64, r: usize) -> &AtomicU64 {
        let h = mix(fp ^ 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(r as u64 + 1));
        let c = ((u128::from(h) * self.width as u128) >> 64) as usize;
        &self.cells[r * self.width + c]
    }
}

impl Policy for Gcra {
    type Context = ();
    /// The TAT: the earliest goes.
    type Rank = u64;

    fn evicts(&self) -> bool {
        true
    }

    fn rank(&self, _: u8, tat: u64, _: ()) -> u64 {
        tat
    }

    /// Each of the key's cells rises to at least its TAT. A maximum:
    /// folding one TAT twice is folding it once.
    fn fold(&self, fp: u64, _: u8, tat: u64, _: ()) {
        for r in 0..ROWS {
            // ORDERING: released by the table's swap that evicts or frees.
            self.cell(fp, r).fetch_max(tat, AcqRel);
        }
    }

    /// The least of the key's cells (0: none), never below a TAT of its
    /// own that was folded. A cell holds only folded TATs (values), so
    /// the least is one ([`MAX_TAT`] otherwise, never reached).
    fn start(&self, fp: u64, _: ()) -> Start {
        let estimate = (0..ROWS)
            .map(|r| self.cell(fp, r).load(Acquire))
            .min()
            .unwrap_or(0);
        Start {
            word: Value::new(estimate).unwrap_or(MAX_TAT),
            remembered: false,
        }
    }
}

/// A fixed table of slots with the GCRA policy (module docs).
pub(crate) struct Table(leaparray::keyed::Table<Gcra, Box<[Slot]>>);

impl Table {
    /// `cap` free slots (`cap >= 1`) and an empty memory: the only
    /// allocations.
    pub(crate) fn new(cap: usize) -> Self {
        let width = (CELLS_PER_SLOT * cap / ROWS).max(1);
        Table(leaparray::keyed::Table::new(
            (0..cap).map(|_| Slot::new()).collect(),
            Gcra {
                // Written (not calloc'd) so their pages are resident from `new`.
                cells: (0..ROWS * width).map(|_| AtomicU64::new(0)).collect(),
                width,
            },
        ))
    }

    /// Governor's `measure_and_replace` for the key whose hash is `hash`:
    /// module docs, "A slot's value", "A TAT out of range".
    #[inline]
    pub(crate) fn update<T, E, F>(&self, hash: u64, f: F) -> Result<T, E>
    where
        F: Fn(Option<u64>) -> Result<(T, u64), E>,
    {
        let place = self.0.place(hash);
        let out = self
            .0
            .update(place, None, (), |_, tat| match f(tat_of(tat)) {
                Err(e) => Step::Keep(Err(e)),
                Ok((t, new)) => match Value::new(new) {
                    Some(new) => Step::Write {
                        tag: 0,
                        word: new,
                        out: Ok(t),
                    },
                    // Past `MAX_TAT` (module docs, "A TAT out of range").
                    None => Step::Keep(refuse(&f, tat)),
                },
            });
        // `None`: no room, which an evicting table of `cap >= 1` slots
        // always finds.
        out.unwrap_or_else(|| refuse(&f, 0))
    }

    /// The TAT the key whose hash is `hash` holds (`Some(None)`: a slot
    /// with no TAT yet), if it has a slot.
    pub(crate) fn get(&self, hash: u64) -> Option<Option<u64>> {
        match self.0.find(self.0.place(hash), ()) {
            Found::Value(tat) => Some(tat_of(tat)),
            Found::Claimed | Found::Absent { .. } => None,
        }
    }

    /// Frees every slot whose TAT is at or before `drop_below`, folding it
    /// first (module docs, "Eviction").
    pub(crate) fn retain(&self, drop_below: u64) {
        self.0.retain((), |_, tat| tat > drop_below);
    }

    /// Slots holding a key's value.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().filter(|s| s.value().is_some()).count()
    }

    /// Slots in the table.
    pub(crate) fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

/// A refusal from `f` for a key whose next TAT is past [`MAX_TAT`]
/// (module docs, "A TAT out of range"): `f` at TATs from `latest` up,
/// each step twice the last, until it refuses. Governor's GCRA refuses a
/// TAT more than its burst past now, which a doubling step passes within
/// 34 calls (a burst is at most 2^32 cells). A quota that admits even at
/// [`MAX_TAT`] (a burst that takes more than 146 years to refill) is
/// admitted here unrecorded: the store cannot hold its arrival times.
#[cold]
fn refuse<T, E, F>(f: &F, latest: u64) -> Result<T, E>
where
    F: Fn(Option<u64>) -> Result<(T, u64), E>,
{
    let mut v = latest.max(1);
    let mut step = 1u64;
    loop {
        match f(Some(v)) {
            Err(e) => return Err(e),
            Ok((t, next)) => {
                if v == MAX_TAT.get() {
                    return Ok(t);
                }
                step = step.max(next.saturating_sub(v)).saturating_mul(2);
                v = v.saturating_add(step).min(MAX_TAT.get());
            }
        }
    }
}
