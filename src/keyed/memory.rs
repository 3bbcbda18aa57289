//! The memory of evicted keys under [`Overflow::Evict`](super::Overflow::Evict):
//! what an evicted key had booked, remembered conservatively in fixed
//! memory, so that a key that comes back starts from an estimate never
//! below what it really booked in the windows that still count.
//!
//! # Layout
//!
//! A count-min sketch per window, with conservative update. The memory is
//! `4 * CAP` 64-bit words (twice the slots' bytes) in `P = N` *planes* of
//! `4 * CAP / N` words, one per window of an interval, plus one *plane id*
//! (a full window id) per plane. Window `w` lives in plane `w mod N`. A
//! word holds sixteen 3-bit *cells* and, in its top 16 bits, the *tag*:
//! the window (mod `2^16`) its cells count for. A key's cells in a plane
//! are [`ROWS`] (two) cells picked by hashes of its fingerprint (all a slot
//! holds of its key).
//!
//! A cell holds a *code* `0 ..= 7` that reads as `ladder[code]` (`Shape`):
//! `0, 1, 2, 3, 4`, then `max(5, ceil(limit / 4))`, `max(6, ceil(limit /
//! 2))` and the limit, each capped at the limit. A count `x` (at most the
//! limit: no window of a key holds more) is stored as the least code that
//! reads as `x` or more. So a code never reads below the count it stands
//! for; counts up to 4 (6 for limits up to 12) read exactly, and a larger
//! one reads as the first of a quarter, a half and all of the limit that
//! holds it (at least 5 and 6): a key evicted with 5 of 100 in a window
//! comes back charged 25 there. Most evicted keys of a flood hold 1 or 2 a
//! window, and three bits are enough to tell them apart from a key at its
//! limit: a word holds 16 cells (one-byte cells would give 6), so the
//! sketch is wide, and two rows (each key raises one cell fewer than with
//! three) keep the cells it leaves lower still.
//!
//! - **Fold** (an eviction): for each window `w` of the evicted word with a
//!   count `x > 0`: raise the plane id to `w` (`fetch_max`); if it was
//!   already later, drop the fold (the plane belongs to a later window).
//!   Then in each of the key's cells: if the word's tag is `w`, raise the
//!   cell to `max(cell, code(x))`; otherwise reread the plane id, drop the
//!   fold if it is later than `w`, else reset the word to tag `w` with only
//!   this cell set. A compare-and-swap loop per word. Folding is a
//!   maximum, so folding one key twice never adds: a key's slot already
//!   counts the estimate it was seeded with, and folding it again does not
//!   count it twice.
//! - **Estimate** (a key inserted): for window `w`, read the key's cells'
//!   words, *then* the plane id. A plane id later than `w` reads as the
//!   limit (saturated: the window's cells may have been reset); an earlier
//!   one as 0 (nothing was folded for `w`); otherwise a word tagged `w`
//!   gives its cell, any other word 0. The estimate is what the least of
//!   the key's cells reads as (count-min).
//!
//! With `N` planes a window's plane is taken over by the window `N` later:
//! an estimate of a window `N` or more before the newest one folded reads
//! as the limit, so a key inserted under a flood starts at the newest
//! window (`slot.rs`, `start`: its bookings then join no interval that
//! reaches back that far).
//!
//! Expiry is lazy: a plane is taken over by a later window by the first
//! fold into it, word by word; nothing is ever cleared in bulk. A tag is
//! 16 bits: a word last written `2^16 * k` windows before `w` reads as
//! tagged `w` and over-reads (never under-reads) for that one window.
//!
//! # How far above the truth an estimate reads
//!
//! A cell holds the largest code folded into it for its window: of `K`'s
//! own count, or of another key whose cell in that row is the same. A key
//! seeded from its cells folds back what it was seeded with plus what it
//! booked, and its seed is the least of its cells, capped newest window
//! first (`slot.rs`, `start`), never raised to the limit: a refused key,
//! which books nothing, folds back no more than its cells already hold.
//! So an estimate of `K`'s window `w` reads above `K`'s count only if
//! both of its cells hold a larger code from other keys' counts (and
//! their seeds), read up the ladder. With `k` keys folded into a plane of
//! `W` cells (both rows hash into the same cells: `2k` raised), a key no
//! other key collides with reads its own count, and the chance that both
//! of a fresh key's cells were raised is at most about `(1 - e^(-2k /
//! W))^2` (`review46::fresh_keys_read_a_collision_at_most_as_often_as_the_docs_say`). Under a flood of one-shot keys (a count of
//! 1 each) such a collision mostly reads 1, and the key is still
//! admitted. `cargo run --release -p leaparray-examples --example flood --
//! --curve` measures the share of newcomers admitted as a flood grows
//! (`benches/README.md`).
//!
//! # Why an estimate is never below the truth
//!
//! What must hold: when a key `K` evicted by thread E comes back and its
//! new slot is settled by thread S, S's estimate of each window is at
//! least `K`'s count there in the word E evicted. E folds before the
//! compare-and-swap that evicts (`AcqRel`); S reads every slot of `K`'s
//! probe (`Acquire`) before it estimates, and every write to a slot is a
//! compare-and-swap, so S either still sees `K`'s gate word (and withdraws
//! its claim: one slot per key) or synchronizes with E's swap and sees
//! every write of E's fold. Folds of other keys only raise cells. The
//! races the rules above resolve:
//!
//! ```text
//!  Thread 1 (folds window w + P)          Thread 2 (folds window w)
//!  -----------------------------------   -----------------------------------
//!                                        plane id: fetch_max(w) -> was w
//!  plane id: fetch_max(w + P)
//!  word: tag w -> reset to tag w + P
//!                                        word: tag is w + P, not w
//!                                        without the reread: reset to tag w,
//!                                        erasing window w + P's cells: a
//!                                        key of w + P reads 0 (under)
//!                                        with it: plane id is w + P: drop
//! ```
//!
//! ```text
//!  Thread 1 (estimates window w)          Thread 2 (folds window w + P)
//!  -----------------------------------   -----------------------------------
//!                                        plane id: fetch_max(w + P)
//!                                        word: reset to tag w + P
//!  reads the word: tag w + P
//!  reads the plane id: w + P > w
//!  reads the limit (saturated)
//!  (the plane id read first, as w,
//!  would read this word as 0: under)
//! ```
//!
//! The loom models in `loom-tests/tests/keyed.rs` race an eviction with a
//! decision of the evicted key, two evictions folding into the same
//! cells, and a returning key's estimate with another eviction's fold
//! (bounded models: two or three threads, `LOOM_MAX_PREEMPTIONS=5`).

use crate::sync::{AtomicU64, Ordering::AcqRel, Ordering::Acquire};

/// Cells a key has in a plane (count-min's rows).
pub(super) const ROWS: usize = 2;

/// Bits of a cell: a code of 0 to 7 (`Shape::ladder`).
const CELL_BITS: u32 = 3;

/// The largest code: reads as the limit.
const TOP: u64 = (1 << CELL_BITS) - 1;

/// Cells per word (the top 16 bits are the tag).
const CELLS: usize = (48 / CELL_BITS) as usize;

/// Memory words per slot: the sketch is `4 * CAP` words.
pub(super) const WORDS_PER_SLOT: usize = 4;

/// The most planes a memory has (`N <= 31`).
pub(super) const MAX_PLANES: usize = 31;

/// The size of memory past which an evictor loads its keys' lines early
/// ([`Shape::far`]): 1 MiB, a per-core L2 cache's size (the measurements
/// behind it: benches/README.md, "What an eviction cannot shed").
pub(super) const FAR_BYTES: usize = 1 << 20;

const fn min(a: u64, b: u64) -> u64 {
    if a < b {
        a
    } else {
        b
    }
}

const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// A 64-bit cell of the memory: an atomic for a shared table, a
/// [`Cell`](core::cell::Cell) for a local one. The fold and the estimate
/// are one piece of code over either.
pub(super) trait Word {
    /// The value (`Acquire`).
    fn get(&self) -> u64;
    /// Replaces `cur` by `new` (`AcqRel`), or gives the value found.
    fn swap_from(&self, cur: u64, new: u64) -> Result<(), u64>;
    /// Raises the value to `v` (`AcqRel`); gives the value before.
    fn raise(&self, v: u64) -> u64;
}

impl Word for AtomicU64 {
    #[inline]
    fn get(&self) -> u64 {
        self.load(Acquire)
    }
    #[inline]
    fn swap_from(&self, cur: u64, new: u64) -> Result<(), u64> {
        // ORDERING: a fold's writes are released to the swap that evicts
        // (module docs); a failed swap rereads.
        self.compare_exchange(cur, new, AcqRel, Acquire).map(|_| ())
    }
    #[inline]
    fn raise(&self, v: u64) -> u64 {
        self.fetch_max(v, AcqRel)
    }
}

impl Word for core::cell::Cell<u64> {
    #[inline]
    fn get(&self) -> u64 {
        core::cell::Cell::get(self)
    }
    #[inline]
    fn swap_from(&self, cur: u64, new: u64) -> Result<(), u64> {
        let v = core::cell::Cell::get(self);
        if v == cur {
            self.set(new);
            Ok(())
        } else {
            Err(v)
        }
    }
    #[inline]
    fn raise(&self, v: u64) -> u64 {
        let old = core::cell::Cell::get(self);
        self.set(old.max(v));
        old
    }
}

/// How a table's memory is cut: planes, words per plane, the cell quantum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// `P`: planes (0: the table is too small to remember, and evicts
    /// nothing).
    pub(super) planes: u64,
    /// Words per plane.
    words: usize,
    /// What each code of a cell reads as: `ladder[c]`, non-decreasing,
    /// from 0 to the limit (a saturated read).
    ladder: [u64; 1 << CELL_BITS],
    /// The limit (a saturated read).
    limit: u64,
}

impl Shape {
    /// The shape of the memory of a table of `cap` slots, `n` windows and
    /// `limit`.
    pub(super) const fn of(n: usize, cap: usize, limit: u64) -> Shape {
        let total = WORDS_PER_SLOT * cap;
        let planes = if total >= n && n <= MAX_PLANES { n } else { 0 };
        // 0 to 4 exactly, then a quarter and a half of the limit, then the
        // limit; never above it.
        let l = limit;
        let ladder = [
            0,
            min(1, l),
            min(2, l),
            min(3, l),
            min(4, l),
            min(max(5, l.div_ceil(4)), l),
            min(max(6, l.div_ceil(2)), l),
            l,
        ];
        Shape {
            planes: planes as u64,
            words: match total.checked_div(planes) {
                Some(words) => words,
                None => 0,
            },
            ladder,
            limit,
        }
    }

    /// The least code that reads as `x` or more.
    #[inline]
    fn code_of(&self, x: u64) -> u64 {
        let mut c = 0;
        while c < TOP && self.ladder[c as usize] < x {
            c += 1;
        }
        c
    }

    /// Whether the memory can hold anything.
    #[inline]
    pub(super) const fn remembers(&self) -> bool {
        self.planes != 0
    }

    /// Whether the memory is larger than [`FAR_BYTES`]: beyond a core's
    /// L2 cache, where a key's lines
    /// are mostly misses and loading them early pays ([`Memory::touch`]).
    /// Below it the early loads' instructions cost more than they save.
    #[inline]
    pub(super) const fn far(&self) -> bool {
        self.planes as usize * self.words * 8 > FAR_BYTES
    }

    /// Where the cells of the key with fingerprint `fp` are, in every
    /// plane: one hash per row, for all its windows.
    #[inline]
    pub(super) fn cells(&self, fp: u64) -> Cells {
        let n = (self.words * CELLS) as u128;
        let mut out = [(0, 0); ROWS];
        let mut r = 0;
        while r < ROWS {
            let h = super::hash::mix(fp ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(r as u64 + 1)));
            let i = ((u128::from(h) * n) >> 64) as usize;
            // A row's cell of each plane in words side by side (`planes`
            // words: one cache line for `N <= 8`), so that the windows of a
            // key are read together.
            out[r] = (
                (i / CELLS) * self.planes as usize,
                (i % CELLS) as u32 * CELL_BITS,
            );
            r += 1;
        }
        Cells(out)
    }
}

/// Where a key's cells are: per row, the first word of its group (one
/// word per plane, side by side) and the cell's bit offset in a word.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cells([(usize, u32); ROWS]);

/// The tag of window `w`.
#[inline]
const fn tag(w: u64) -> u64 {
    w & 0xffff
}

/// The tag of word `v`.
#[inline]
const fn tag_of(v: u64) -> u64 {
    v >> 48
}

/// Where a memory's `WORDS_PER_SLOT * CAP` words live: in the table
/// (`[[C; CAP]; WORDS_PER_SLOT]`, built by value, as a `static` holds it)
/// or on the heap (`Box<[C]>`, built in place, for a capacity chosen at run
/// time). The fold and the estimate see one flat slice either way.
pub(super) trait Words<C> {
    /// The words, `WORDS_PER_SLOT * capacity` of them.
    fn flat(&self) -> &[C];
}

impl<C, const CAP: usize> Words<C> for [[C; CAP]; WORDS_PER_SLOT] {
    #[inline(always)]
    fn flat(&self) -> &[C] {
        self.as_flattened()
    }
}

#[cfg(feature = "alloc")]
impl<C> Words<C> for alloc::boxed::Box<[C]> {
    #[inline(always)]
    fn flat(&self) -> &[C] {
        self
    }
}

/// The memory: plane ids and the words (`WORDS_PER_SLOT` per slot).
#[derive(Clone)]
pub(super) struct Memory<C, W> {
    pub(super) ids: [C; MAX_PLANES],
    pub(super) words: W,
}

impl<C: Word, W: Words<C>> Memory<C, W> {
    /// The word at flat index `i`.
    #[inline]
    fn word(&self, i: usize) -> &C {
        &self.words.flat()[i]
    }

    /// Loads the words of the keys with fingerprints `fps` (each row's
    /// words of every plane sit in one cache line) and drops what they
    /// hold: an evictor about to fold one key and start another issues
    /// these loads together, so that their misses overlap rather than
    /// follow one another through the fold's read-modify-writes. What the
    /// words hold is read again where it counts. Only for a memory beyond
    /// [`Shape::far`]; nothing under loom (a load whose value is dropped
    /// changes no outcome, and would only multiply the interleavings).
    #[inline]
    pub(super) fn touch(&self, s: &Shape, fps: [u64; 2]) {
        if cfg!(leaparray_loom) || !s.far() {
            return;
        }
        for fp in fps {
            for (group, _) in s.cells(fp).0 {
                core::hint::black_box(self.word(group).get());
            }
        }
    }

    /// Remembers that the key whose cells are `cells` had `x` permits
    /// counted in window `w` (module docs, "Fold"). Idempotent; only ever
    /// raises.
    pub(super) fn fold(&self, s: &Shape, cells: &Cells, w: u64, x: u64) {
        if x == 0 || !s.remembers() {
            return;
        }
        let plane = (w % s.planes) as usize;
        let id = &self.ids[plane];
        // Raised to `w` only if it is below (mostly it already is `w`: the
        // read spares a read-modify-write; the id only rises, so a later
        // reader that sees this fold's writes sees `w` or later).
        let seen = id.get();
        if seen > w || (seen < w && id.raise(w) > w) {
            // A later window owns the plane.
            return;
        }
        let val = s.code_of(x);
        for (group, at) in cells.0 {
            let cell = self.word(group + plane);
            let mut cur = cell.get();
            loop {
                let new = if tag_of(cur) == tag(w) {
                    let old = (cur >> at) & TOP;
                    if old >= val {
                        break;
                    }
                    (cur & !(TOP << at)) | (val << at)
                } else {
                    // An older window's word, or a later one's: the plane
                    // id tells (module docs: reread after the word).
                    if id.get() > w {
                        return;
                    }
                    (tag(w) << 48) | (val << at)
                };
                match cell.swap_from(cur, new) {
                    Ok(()) => break,
                    Err(actual) => cur = actual,
                }
            }
        }
    }

    /// Whether an estimate of any of the `windows` windows ending at `h`
    /// (what a settler's `start` reads: `2N` ending at `max(c, high
    /// water)`) may be nonzero, read from the plane ids alone, without
    /// hashing a key's cells: the estimate of a window whose plane's id is
    /// earlier than it is 0 ("Estimate": nothing was folded for it). The
    /// memory must remember ([`Shape::remembers`]).
    ///
    /// The same answer as the estimates at the instant of these reads: a
    /// plane id only rises, and an estimate of a window whose id it reads
    /// earlier than the window is 0 whatever its words held. Read after the
    /// probe's reads, as the estimates are, a fold whose evicting swap the
    /// caller's probe synchronized with has raised the id read here ("Why
    /// an estimate is never below the truth").
    #[inline]
    pub(super) fn may_estimate(&self, s: &Shape, h: u64, windows: u64) -> bool {
        let planes = s.planes;
        // The plane of window `h - k` (`w mod P`, as `fold` cuts it).
        let mut plane = h % planes;
        for k in 0..windows {
            let Some(w) = h.checked_sub(k) else {
                break;
            };
            if self.ids[plane as usize].get() >= w {
                return true;
            }
            plane = if plane == 0 { planes - 1 } else { plane - 1 };
        }
        false
    }

    /// Whether window `w`'s plane belongs to a later window: an estimate
    /// of `w` then reads as the limit whatever its cells hold (the id only
    /// rises), so a caller that needs no more than that reads no cell.
    #[inline]
    pub(super) fn taken(&self, s: &Shape, w: u64) -> bool {
        self.ids[(w % s.planes) as usize].get() > w
    }

    /// At least the count the key whose cells are `cells` had in window
    /// `w` when it was evicted, if its eviction happened before (module
    /// docs, "Estimate"); at most the limit.
    pub(super) fn estimate(&self, s: &Shape, cells: &Cells, w: u64) -> u64 {
        if !s.remembers() {
            return 0;
        }
        let plane = (w % s.planes) as usize;
        let mut read = [0u64; ROWS];
        for (r, (group, _)) in cells.0.iter().enumerate() {
            read[r] = self.word(group + plane).get();
        }
        // After the words (module docs).
        let id = self.ids[plane].get();
        if id > w {
            return s.limit;
        }
        if id < w {
            return 0;
        }
        let mut least = u64::MAX;
        for (r, (_, at)) in cells.0.iter().enumerate() {
            let v = read[r];
            let cell = if tag_of(v) == tag(w) {
                (v >> at) & TOP
            } else {
                0
            };
            least = least.min(cell);
        }
        s.ladder[least as usize]
    }
}
