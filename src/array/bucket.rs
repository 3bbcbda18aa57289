//! One bucket of the ring, and the protocol that makes it exact without a lock.
//! The protocol (the race it closes, invariants, progress, orderings, limits)
//! is documented in `crate::protocol` (`src/protocol.md`).

use crate::array::word::{CellWord, Narrow, Stamp, Wide, Width};
use crate::error::AddError;
use crate::sync::Ordering::{Relaxed, Release, SeqCst};
use crate::sync::{array_of, atomic_u32, atomic_u64, const_fn_unless_loom, AtomicWord};

/// What an update does to a counter's count `have` in its window: the new
/// count, and whether it had to be clamped to `0..=max` (the width's
/// `MAX_COUNT`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CellOp {
    /// `have + n`, clamped at `MAX_COUNT`.
    Add(u64),
    /// `have - n`, clamped at 0.
    Sub(u64),
    /// `max(have, v)`, with `v` clamped at `MAX_COUNT`.
    Max(u64),
}

impl CellOp {
    #[inline]
    pub(crate) fn apply(self, have: u64, max: u64) -> (u64, bool) {
        match self {
            CellOp::Add(n) => match have.checked_add(n) {
                Some(c) if c <= max => (c, false),
                _ => (max, true),
            },
            CellOp::Sub(n) => match have.checked_sub(n) {
                Some(c) => (c, false),
                None => (0, true),
            },
            CellOp::Max(v) if v > max => (max, true),
            CellOp::Max(v) => (have.max(v), false),
        }
    }
}

/// What [`Bucket::seal`] makes of a cell whose tag is neither the generation
/// it seals nor the sealed one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Foreign {
    /// The bucket moved past that generation: give up, reload the stamp.
    MovedOn,
    /// The stamp did not move, so the tag is a recycled generation written
    /// by a thread stalled across a whole cycle: seal over it.
    Overwrite,
}

/// A window's cells as its single writer holds them
/// ([`Bucket::enter_single_writer`]): cell `i` of the window is
/// `tag | counts[i]` until the writer stores a new count.
pub(crate) struct WriterCells<'a, W: Width, const C: usize> {
    /// The bucket's cells.
    pub(crate) cells: &'a [W::Atomic; C],
    /// The window's generation tag, open (`CellWord::new(gen, false, 0)`):
    /// a count `<= MAX_COUNT` or-ed into it is the cell's word.
    pub(crate) tag: u64,
    /// Each cell's count in the window when the writer entered it.
    pub(crate) counts: [u64; C],
}

/// A window whose bucket has moved on to a newer window: its counts are gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Retired;

/// One slot of the ring: the window it holds and its `C` counters.
pub(crate) struct Bucket<W: Width, const C: usize> {
    /// Encoding: [`Stamp`]: generation (16 bits) | window id mod 2^48
    /// ([`Narrow`]: 8 | 24).
    /// Invariant: only ever replaced by a CAS to `self.next(newer window)`,
    /// after every cell has been sealed to the old generation.
    stamp: W::Atomic,
    /// Encoding: [`CellWord`]: generation tag (16) | sealed (1) | count (47)
    /// ([`Narrow`]: 8 | 1 | 23).
    /// Invariant: tagged with the stamp's generation `g` or, sealed, the one
    /// before it (see `CellWord::is_sealed_predecessor_of`).
    cells: [W::Atomic; C],
    /// Loom builds only: `(window id, final counts)` of every window this
    /// bucket retired, written by the roller whose stamp CAS won, so the
    /// models can check that retired windows hold exactly their `Ok` adds.
    #[cfg(leaparray_loom)]
    retired: crate::sync::Mutex<std::vec::Vec<(u64, [u64; C])>>,
}

/// An empty bucket of each width: stamp `EMPTY`, every cell `(0, open, 0)`.
macro_rules! empty_bucket {
    ($width:ty, $atomic:ident) => {
        impl<const C: usize> Bucket<$width, C> {
            const_fn_unless_loom! {
                pub(crate) fn new() -> Self {
                    Bucket {
                        stamp: $atomic(0),
                        cells: array_of!(C, $atomic(0)),
                        #[cfg(leaparray_loom)]
                        retired: crate::sync::Mutex::new(std::vec::Vec::new()),
                    }
                }
            }
        }
    };
}
empty_bucket!(Wide, atomic_u64);
empty_bucket!(Narrow, atomic_u32);
#[cfg(leaparray_loom)]
empty_bucket!(crate::array::word::LoomTinyGen, atomic_u32);

impl<W: Width, const C: usize> Bucket<W, C> {
    fn load_stamp(&self) -> Stamp<W> {
        Stamp::<W>::of(self.stamp.load_word(SeqCst))
    }

    /// Moves the bucket to `window` if it holds an older one; leaves it
    /// alone if it holds `window`, a newer one or none (`LeapArray::refresh`).
    /// One stamp load when there is nothing to do.
    pub(crate) fn refresh_to(&self, window: u64) {
        let s = self.load_stamp();
        if !s.is_empty() && s.window_diff(window) > 0 {
            // `Stale` only if another thread moved it past `window` first.
            let _ = self.advance_from(s, window);
        }
    }

    /// The generation of `window` in this bucket, moving the bucket forward
    /// to `window` if it holds an older one. `Err(Stale)` if it holds a
    /// newer window.
    #[inline]
    pub(crate) fn advance_to(&self, window: u64) -> Result<u16, AddError> {
        self.advance_from(self.load_stamp(), window)
    }

    /// `advance_to` from a stamp loaded earlier (a thread may stall for any
    /// time between loading `s` and acting on it: the unit tests stall here).
    #[inline]
    fn advance_from(&self, mut s: Stamp<W>, window: u64) -> Result<u16, AddError> {
        loop {
            if !s.is_empty() {
                let d = s.window_diff(window);
                if d == 0 {
                    return Ok(s.generation());
                }
                if d < 0 {
                    return Err(AddError::Stale);
                }
            }
            // The bucket holds an older window (or none): retire it.
            let Some(_final_counts) = self.seal(s.generation(), Foreign::MovedOn).or_else(|| {
                // A cell carries a tag that no roll-over from `s` can have
                // written, so the stamp moved (a writer of a newer tag had
                // loaded a newer stamp first)...
                let reloaded = self.load_stamp();
                if reloaded != s {
                    s = reloaded;
                    return None;
                }
                // ...unless a thread stalled across a whole generation cycle
                // wrote a recycled tag (see "Limits" in `crate::protocol`): seal over it instead
                // of waiting for a stamp that will never move.
                self.seal(s.generation(), Foreign::Overwrite)
            }) else {
                continue;
            };
            let next = s.next(window);
            match self.stamp.cas_word(s.0, next.0, SeqCst, SeqCst) {
                Ok(_) => {
                    #[cfg(leaparray_loom)]
                    if !s.is_empty() {
                        let old = window.wrapping_sub(s.window_diff(window) as u64);
                        self.retired.lock().unwrap().push((old, _final_counts));
                    }
                    return Ok(next.generation());
                }
                Err(cur) => s = Stamp::<W>::of(cur),
            }
        }
    }

    /// Seals every cell to generation `gen` and returns their (now final)
    /// counts: a cell tagged `gen` keeps its count, a sealed cell of the
    /// generation before `gen` becomes `(gen, sealed, 0)`. Any other tag is
    /// `foreign`: with [`Foreign::MovedOn`] the bucket has moved past `gen`
    /// and the result is `None`; with [`Foreign::Overwrite`] the cell is
    /// sealed to `(gen, sealed, 0)` like an older one.
    #[cold]
    fn seal(&self, gen: u16, foreign: Foreign) -> Option<[u64; C]> {
        let mut counts = [0; C];
        for (cell, count) in self.cells.iter().zip(counts.iter_mut()) {
            let mut cur = CellWord::<W>::of(cell.load_word(SeqCst));
            loop {
                let sealed = if cur.generation() == gen {
                    if cur.is_sealed() {
                        *count = cur.count();
                        break;
                    }
                    CellWord::<W>::new(gen, true, cur.count())
                } else if cur.is_sealed_predecessor_of(gen) || foreign == Foreign::Overwrite {
                    CellWord::<W>::new(gen, true, 0)
                } else {
                    return None;
                };
                // ORDERING: adders need nothing from this CAS: theirs sees
                // the seal through the cell's modification order.
                let sealing = cell.cas_word_weak(cur.0, sealed.0, SeqCst, SeqCst);
                match sealing {
                    Ok(_) => {
                        *count = sealed.count();
                        break;
                    }
                    Err(v) => cur = CellWord::<W>::of(v),
                }
            }
        }
        Some(counts)
    }

    /// Loom builds only: the windows this bucket retired, with their final
    /// counts.
    #[cfg(leaparray_loom)]
    pub(crate) fn retired(&self) -> std::vec::Vec<(u64, [u64; C])> {
        self.retired.lock().unwrap().clone()
    }

    /// Applies `op` to cell `i` for generation `gen` (as returned by
    /// `advance_to`).
    #[inline]
    pub(crate) fn update(&self, gen: u16, i: usize, op: CellOp) -> Result<(), AddError> {
        let Some(cell) = self.cells.get(i) else {
            return Err(AddError::NoSuchCounter);
        };
        let mut cur = CellWord::<W>::of(cell.load_word(Relaxed));
        loop {
            let have = if cur.generation() == gen {
                if cur.is_sealed() {
                    // The window is being retired: a roller sealed it.
                    return Err(AddError::Stale);
                }
                cur.count()
            } else if cur.is_sealed_predecessor_of(gen) {
                // Sealed by the roll-over to `gen`: this is the first
                // update of the window.
                0
            } else {
                // The bucket has moved past `gen` (any other tag, whatever
                // its distance: see "Limits" in `crate::protocol`).
                return Err(AddError::Stale);
            };
            let (count, saturated) = op.apply(have, W::MAX_COUNT);
            let new = CellWord::<W>::new(gen, false, count);
            if new == cur {
                // Nothing to write (no change, or already saturated).
                return if saturated {
                    Err(AddError::Saturated)
                } else {
                    Ok(())
                };
            }
            match cell.cas_word_weak(cur.0, new.0, SeqCst, Relaxed) {
                Ok(_) => {
                    return if saturated {
                        Err(AddError::Saturated)
                    } else {
                        Ok(())
                    }
                }
                Err(v) => cur = CellWord::<W>::of(v),
            }
        }
    }

    /// Single-writer add: `n` to cell `i` of `window`, with no
    /// read-modify-write at all. **Only for a bucket that no other thread
    /// writes** (a claimed shard, `crate::shard`); readers may race it.
    ///
    /// The writer owns the stamp and every cell, so it needs no seal:
    ///
    /// ```text
    ///  writer (roll-over to window k')           reader of window k
    ///  ----------------------------------------  ----------------------------------
    ///                                            s1 = load stamp      -> (g, k)
    ///  store stamp (g+1, k')      (release)
    ///  store every cell (g+1, 0)  (release)
    ///                                            load cell -> (g+1, 0): tag != g, 0
    ///                                            s2 = load stamp -> (g+1, k') != s1
    ///                                            -> window k retired: reported absent
    /// ```
    ///
    /// The stamp is stored before the cells are reset, so a reader that sees
    /// a reset cell also sees the new stamp and rejects its read; a reader
    /// that loaded the new stamp first sees cells tagged `g` (count 0 for the
    /// new window) or `g+1`. Resetting every cell on each roll-over keeps all
    /// tags within one generation of the stamp, as the seal does for shared
    /// buckets. An add is then one release store of the cell: the writer
    /// (`ShardWriter`) remembers its current window and keeps each cell's
    /// running count, read from the cells when it enters the window
    /// ([`Bucket::enter_single_writer`]).
    ///
    /// This function moves the bucket to `window` if needed and returns the
    /// generation to add under.
    #[inline]
    fn advance_to_single_writer(&self, window: u64) -> Result<u16, AddError> {
        let s = Stamp::<W>::of(self.stamp.load_word(Relaxed));
        if !s.is_empty() && s.window_diff(window) == 0 {
            return Ok(s.generation());
        }
        if !s.is_empty() && s.window_diff(window) < 0 {
            return Err(AddError::Stale);
        }
        let next = s.next(window);
        // ORDERING: the stamp is stored before the cells are reset, both
        // release: a reader that sees a reset cell sees the new stamp.
        self.stamp.store_word(next.0, Release);
        for c in &self.cells {
            c.store_word(CellWord::<W>::new(next.generation(), false, 0).0, Release);
        }
        Ok(next.generation())
    }

    /// The bucket's cells.
    pub(crate) fn cells(&self) -> &[W::Atomic; C] {
        &self.cells
    }

    /// The single writer enters `window`: moves the bucket to it if needed
    /// ([`Bucket::advance_to_single_writer`]) and returns its cells, the tag
    /// every cell of the window carries, and their counts now. While the
    /// writer stays in the window only it writes these cells, so the counts
    /// it keeps from here on are the cells' values: each add is one store.
    #[inline]
    pub(crate) fn enter_single_writer(
        &self,
        window: u64,
    ) -> Result<WriterCells<'_, W, C>, AddError> {
        let gen = self.advance_to_single_writer(window)?;
        let mut counts = [0; C];
        for (count, cell) in counts.iter_mut().zip(&self.cells) {
            // ORDERING: relaxed: the writer's claim (acquire) ordered every
            // earlier writer's stores before this load, and no one else
            // writes the cells while it holds the shard.
            *count = CellWord::<W>::of(cell.load_word(Relaxed)).count_for(gen);
        }
        Ok(WriterCells {
            cells: &self.cells,
            tag: CellWord::<W>::new(gen, false, 0).0,
            counts,
        })
    }

    /// The window the bucket holds, read as the one nearest `near` (stamps
    /// keep ids modulo 2^48, `Narrow` 2^24); `None` if it is empty.
    #[inline]
    pub(crate) fn held_near(&self, near: u64) -> Option<u64> {
        let s = self.load_stamp();
        if s.is_empty() {
            None
        } else {
            Some(near.wrapping_sub(s.window_diff(near) as u64))
        }
    }

    /// The count of cell `i` (`< C`) in `window` for a reader that must
    /// know it exactly: `Ok(count)` if the bucket holds `window` for the
    /// whole read, `Ok(0)` if it holds an older window or none (nothing was
    /// ever counted in `window`), `Err(Retired)` if it holds a newer one
    /// (before or during the read): `window`'s count is gone.
    #[inline]
    pub(crate) fn count_or_retired(&self, window: u64, i: usize) -> Result<u64, Retired> {
        let s1 = self.load_stamp();
        if s1.is_empty() || s1.window_diff(window) > 0 {
            return Ok(0);
        }
        if s1.window_diff(window) < 0 {
            return Err(Retired);
        }
        let Some(cell) = self.cells.get(i) else {
            return Ok(0);
        };
        let count = CellWord::<W>::of(cell.load_word(SeqCst)).count_for(s1.generation());
        // A changed stamp names a newer window: retired during the read.
        if self.load_stamp() == s1 {
            Ok(count)
        } else {
            Err(Retired)
        }
    }

    /// Reads the cells `first..first + out.len()` of `window` into `out`.
    /// `false` (and `out` unspecified) if the bucket does not hold `window`
    /// for the whole read.
    #[inline]
    pub(crate) fn read(&self, window: u64, first: usize, out: &mut [u64]) -> bool {
        let s1 = self.load_stamp();
        if !s1.holds(window) {
            return false;
        }
        let gen = s1.generation();
        for (o, cell) in out.iter_mut().zip(self.cells.iter().skip(first)) {
            *o = CellWord::<W>::of(cell.load_word(SeqCst)).count_for(gen);
        }
        // Unchanged stamp: the bucket held `window` (generation `gen`) for
        // the whole read, so every count above is a count of that window.
        // A changed stamp always names a newer window: `window` is retired.
        self.load_stamp() == s1
    }
}

#[cfg(all(test, not(leaparray_loom)))]
mod tests {
    use super::*;

    /// Rolls `b` (one bucket) forward `k` times from window `from`, one add
    /// in each new window; returns the last window.
    fn roll<W: Width>(b: &Bucket<W, 1>, from: u64, k: u64) -> u64 {
        for w in from + 1..=from + k {
            let g = b.advance_to(w).expect("newest window");
            b.update(g, 0, CellOp::Add(1)).expect("newest window");
        }
        from + k
    }

    fn count<W: Width>(b: &Bucket<W, 1>, window: u64) -> Option<u64> {
        let mut out = [0];
        b.read(window, 0, &mut out).then_some(out[0])
    }

    /// A thread stalled between its stamp load and its cell CAS, or between
    /// its stamp load and its seal, while the bucket rolls over `k` times,
    /// placed exactly: its add is refused and the live window keeps exactly
    /// its count, for every `k` below the limit, including past half the
    /// generation range; starting windows cover the generation-0 skip.
    fn stall_at_both_points<W: Width>(new: fn() -> Bucket<W, 1>, ks: &[u64]) {
        // Starting windows: ordinary ones, and ones whose roll-overs cross
        // a window id that is 0 modulo 2^WINDOW_BITS (the EMPTY skip).
        let range = 2 * W::WINDOW_RANGE;
        for &k in ks {
            for start in [10, range - 3, range - k / 2] {
                // Stall point 1: the adder holds the generation of `start`.
                let b = new();
                let g = b.advance_to(start).unwrap();
                b.update(g, 0, CellOp::Add(1)).unwrap();
                let newest = roll(&b, start, k);
                assert_eq!(
                    b.update(g, 0, CellOp::Add(1)),
                    Err(AddError::Stale),
                    "adder stalled across {k} roll-overs from {start}"
                );
                assert_eq!(count(&b, newest), Some(1), "live window wiped (k {k})");
                let g2 = b.advance_to(newest).unwrap();
                assert_eq!(b.update(g2, 0, CellOp::Add(1)), Ok(()), "newest refused");
                // Stall point 2: the roller loaded the stamp of `start` and
                // means to roll to `start + 1`.
                let b = new();
                let g = b.advance_to(start).unwrap();
                b.update(g, 0, CellOp::Add(1)).unwrap();
                let stalled = b.load_stamp();
                let newest = roll(&b, start + 1, k);
                assert_eq!(
                    b.advance_from(stalled, start + 1),
                    Err(AddError::Stale),
                    "roller stalled across {k} roll-overs from {start}"
                );
                assert_eq!(
                    count(&b, newest),
                    Some(1),
                    "live window sealed over (k {k})"
                );
                let g2 = b.advance_to(newest).unwrap();
                assert_eq!(b.update(g2, 0, CellOp::Add(1)), Ok(()), "newest refused");
            }
        }
    }

    #[test]
    fn narrow_stalls_below_the_limit_are_exact() {
        let ks: [u64; 253] = core::array::from_fn(|i| i as u64 + 1);
        // Miri: the stall at half the range only (it interprets every step).
        let ks = if cfg!(miri) { &ks[127..128] } else { &ks[..] };
        stall_at_both_points(Bucket::<Narrow, 1>::new, ks);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "tens of thousands of roll-overs; the Narrow test covers the logic"
    )]
    fn wide_stalls_below_the_limit_are_exact() {
        stall_at_both_points(
            Bucket::<Wide, 1>::new,
            &[1, 2, 32_767, 32_768, 32_769, 50_000, 65_533],
        );
    }

    /// A cell tagged with a generation the stamp's cannot explain (what a
    /// thread stalled across a whole generation cycle leaves) is never read
    /// as the first add of a window, and never makes a roll-over spin: the
    /// roller reloads the stamp, finds it unchanged and seals over the cell.
    #[test]
    fn a_recycled_tag_is_stale_for_adds_and_sealed_over_by_rollers() {
        let b = Bucket::<Narrow, 1>::new();
        assert_eq!(b.advance_to(5), Ok(1));
        b.update(1, 0, CellOp::Add(3)).unwrap();
        // Generation 1's window holds 3; plant tag 4, open, as a thread
        // that loaded generation 4 a cycle ago would write it.
        plant(&b.cells[0], CellWord::<Narrow>::new(4, false, 7).0);
        assert_eq!(b.update(1, 0, CellOp::Add(1)), Err(AddError::Stale));
        // Tag 4 sealed is not generation 1's predecessor either.
        plant(&b.cells[0], CellWord::<Narrow>::new(4, true, 7).0);
        assert_eq!(b.update(1, 0, CellOp::Add(1)), Err(AddError::Stale));
        // The roll-over to window 6 finishes (it used to spin forever).
        assert_eq!(b.advance_to(6), Ok(2));
        assert_eq!(b.update(2, 0, CellOp::Add(2)), Ok(()));
        let mut out = [0];
        assert!(b.read(6, 0, &mut out));
        assert_eq!(out, [2]);
    }

    fn plant(a: &crate::sync::AtomicU32, v: u64) {
        a.store_word(v, SeqCst);
    }
}
