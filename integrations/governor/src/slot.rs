//! The slot table and its protocol, argued once: what a slot holds, where
//! a key's slots are, one update through governor's closure, when a slot
//! may be reused, how two threads inserting one key keep it in one slot,
//! what a key with no room evicts and how the evicted TAT is remembered.
//! Everything the store does to memory is here; `lib.rs` only adapts
//! governor's types. (The same protocol as leaparray's keyed tables,
//! `src/keyed/slot.rs` and `src/keyed/memory.rs` of the core, for a plain
//! 64-bit value; the core's table is specific to its gate words.)
//!
//! # A slot
//!
//! A slot is one 128-bit atomic word: the key's 64-bit *fingerprint* (a
//! seeded hash of the key, never 0) in the high 64 bits, the *word* in the
//! low 64:
//!
//! | word | state |
//! |---|---|
//! | `0` | free |
//! | top bit ([`USED`]) set | the key's value: governor's theoretical arrival time (TAT), in nanoseconds since the limiter's start, in the low 63 bits (`0`: none yet) |
//! | otherwise | a *claim* of a slot for the key, not settled yet: a token unique to that claim |
//!
//! A key's *home* is a slot picked by its fingerprint; its *probe* is its
//! home and the `probe_len(CAP) - 1` slots after it, wrapping. The
//! invariant: at most one slot of a key's probe holds its value.
//!
//! # One update: exactly governor's contract
//!
//! `measure_and_replace(key, f)` reads the key's slot `s`, calls `f` with
//! its TAT and, if `f` admits with a new TAT, swaps the whole 128-bit slot
//! from `s` (fingerprint and old TAT) to (fingerprint, new TAT). The swap
//! succeeds only if the slot is bit for bit what `f` was shown, so "update
//! only if the value has not changed" holds exactly; on failure `f` runs
//! again on what the slot holds now (governor allows the closure to run
//! again on each retry). The race this prevents:
//!
//! ```text
//!  Thread 1                               Thread 2
//!  ------------------------------------   ------------------------------------
//!  read slot: (K, TAT 10)
//!                                         read slot: (K, TAT 10)
//!  f(10) admits: new TAT 11
//!                                         f(10) admits: new TAT 11
//!  swap (K,10) -> (K,11): ok
//!                                         swap (K,10) -> (K,11): fails, slot
//!                                         is (K,11); f(11) decides again
//! ```
//!
//! With a plain store in place of the swap, both would admit from TAT 10
//! and the key would get one request more than its quota. Swapping the
//! whole slot (not the TAT alone) also fails when the slot was reused by
//! another key meanwhile, even at an equal TAT.
//!
//! # Eviction: a key's TAT outlives its slot
//!
//! A new key whose probe has no free slot (and no claim in flight) evicts
//! the key with the *earliest* TAT there. For GCRA, `TAT - now` is how
//! much of its burst a key has booked ahead: the earliest TAT is the key
//! with the most headroom left and the least recent demand, the key whose
//! eviction costs least. A TAT at or before `now` decides exactly as no
//! state (`max(tat, now)`), so evicting one loses nothing; and the memory
//! below holds the maximum TAT folded into each cell, so folding the
//! smallest live TAT raises the cells least (other keys that share a cell
//! are over-estimated least). The choice reads the probe slot by slot, not
//! atomically: it may miss the earliest, which costs quality, not safety,
//! as every victim is folded before it goes. The store never needs the
//! time to evict.
//!
//! The *memory* is [`ROWS`] rows of 64-bit cells, [`CELLS_PER_SLOT`]` *
//! CAP` cells in all (twice the slots' bytes; the whole table three
//! times). A key's cells are one per row, picked by hashes of its
//! fingerprint (all a slot knows of its key). To evict (or, in
//! `retain_recent`, to free) a slot holding `(V, tat)`, a thread first
//! *folds* `tat` into V's cells, `cell = max(cell, tat)` (`fetch_max`,
//! `AcqRel`), then swaps that exact slot for its claim (or for free). A
//! settler starts its key from the *estimate*, the least of its cells, read
//! after it read every other slot of the probe: count-min. Folding is a
//! maximum, so folding a key twice (an eviction whose swap lost, then
//! another) never raises it past its own TAT; other keys' folds only raise
//! cells (a stricter start, never a laxer one). Cells never expire: a TAT
//! at or before `now` is the same as absent, so an old cell costs nothing
//! once its time has passed.
//!
//! Why a returning key starts at least from its own evicted TAT: every
//! write to a slot is a compare-and-swap, so a thread that reads V's old
//! slot after the evicting swap synchronizes with it, and sees the fold:
//!
//! ```text
//!  Thread 1 (updates V)                   Thread 2 (inserts K, evicts V)
//!  ------------------------------------   ------------------------------------
//!  read slot: (V, 10)                     read slot: (V, 10), the earliest
//!  f(10) admits: new TAT 11
//!                                         fold: V's cells >= 10
//!                                         swap (V,10) -> (K, claim): ok
//!  swap (V,10) -> (V,11): fails, slot
//!  is K's; scan again: V has no slot,
//!  claim one, read the probe, then V's
//!  cells: >= 10 (synchronized with the
//!  evicting swap); f(>= 10) decides again
//! ```
//!
//! Had Thread 1's swap come first, Thread 2's swap fails (it folded the old
//! 10: cells only rise, V stays with 11, a later eviction folds 11), and it
//! scans again. Had Thread 2 folded after its swap (or a settler read the
//! cells before its probe), Thread 1 could read V's cells at 0 and start V
//! afresh: a second burst. A key inserted after `retain_recent` freed it
//! starts the same way from its own freed TAT, so a caller whose clock is
//! behind the one that freed it is limited as if the slot had stayed.
//! (`loom-tests/tests/governor.rs`: an eviction racing an update of the
//! evicted key; `retain_recent` racing an update.)
//!
//! # One slot per key: claims and settling
//!
//! Two threads inserting the same new key can disagree on which slot is
//! the first free one (a slot freed between their scans):
//!
//! ```text
//!  Thread 1                               Thread 2
//!  ------------------------------------   ------------------------------------
//!  scan K's probe: slot 0 holds X (TAT
//!  not passed for f1), slot 1 free
//!                                         scan K's probe: slot 0 holds X, its
//!                                         TAT has passed: take slot 0
//!  take slot 1
//!  K is in two slots: each admits K's whole burst
//! ```
//!
//! So an insertion writes a *claim*, which becomes the key's value only
//! once *settled* (the protocol of leaparray's keyed tables,
//! `leaparray/src/keyed/slot.rs`): every other slot of the probe is read,
//! and if one holds the key's value or an earlier claim of it (in probe
//! order) this claim is withdrawn; a later claim of the key is withdrawn by
//! this settler; otherwise the claim is swapped for the key's starting
//! value (`USED | estimate`, "Eviction"). Withdrawing and settling swap from the exact
//! claim (its token is unique: a table-wide counter), so a claim settles at
//! most once and never after it was withdrawn; any thread that meets a claim
//! settles it, so no thread waits for another. Two claims `i < j` of one
//! key never both settle: the settler of `j` read slot `i` before claim `i`
//! was written (else it withdrew `j`), so the settler of `i` read slot `j`
//! after claim `j` was written and withdrew one of them.
//!
//! # A TAT out of range
//!
//! A slot holds a TAT of 63 bits ([`MAX_TAT`], 292 years after the
//! limiter's start). An update whose new TAT is past it is not stored:
//! the table calls `f` with TATs above the key's until `f` refuses, and
//! returns that refusal (governor's own `NotUntil`). Only a quota whose
//! burst takes more than 146 years to refill admits even at [`MAX_TAT`];
//! such an update is admitted unrecorded (`refuse`).

use crate::sync::{
    AtomicU128, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};

/// The top bit of a slot's word: set in every value word.
pub(crate) const USED: u64 = 1 << 63;

/// The largest TAT a slot holds (2^63 - 1 ns, 292 years after the
/// limiter's start).
pub(crate) const MAX_TAT: u64 = USED - 1;

/// Slots in a probe (at most; fewer in a smaller table).
pub(crate) const PROBE: usize = 16;

/// The word of a slot.
#[inline(always)]
const fn word(slot: u128) -> u64 {
    slot as u64
}

/// The fingerprint of a slot.
#[inline(always)]
const fn key_of(slot: u128) -> u64 {
    (slot >> 64) as u64
}

/// The slot holding `key` and `word`.
#[inline(always)]
const fn slot(key: u64, word: u64) -> u128 {
    ((key as u128) << 64) | word as u128
}

/// A claim's word (a token), as opposed to a value or a free slot.
#[inline(always)]
const fn is_claim(w: u64) -> bool {
    w != 0 && w & USED == 0
}

/// The TAT of a value word, `None` for "no state yet".
#[inline(always)]
const fn tat_of(w: u64) -> Option<u64> {
    match w & MAX_TAT {
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

/// A fixed table of slots (module docs).
pub(crate) struct Table {
    slots: Box<[AtomicU128]>,
    /// The memory of evicted and freed TATs: [`ROWS`] rows of `width`
    /// cells, row `r` at `r * width..` (module docs, "Eviction").
    cells: Box<[AtomicU64]>,
    /// Cells in a row: `4 * CAP / ROWS` (at least 1).
    width: usize,
    /// Claim tokens.
    tokens: AtomicU64,
}

impl Table {
    /// `cap` free slots (`cap >= 1`) and an empty memory: the only
    /// allocations.
    pub(crate) fn new(cap: usize) -> Self {
        let width = (CELLS_PER_SLOT * cap / ROWS).max(1);
        Table {
            slots: (0..cap).map(|_| AtomicU128::new(0)).collect(),
            // Written (not calloc'd) so their pages are resident from `new`.
            cells: (0..ROWS * width).map(|_| AtomicU64::new(0)).collect(),
            width,
            tokens: AtomicU64::new(0),
        }
    }

    /// Slots in a probe.
    #[inline(always)]
    fn probe(&self) -> usize {
        self.slots.len().min(PROBE)
    }

    /// The home slot of fingerprint `key` (Lemire's multiply-shift).
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        ((u128::from(key) * self.slots.len() as u128) >> 64) as usize
    }

    /// The `i`-th slot of the probe starting at `home`.
    #[inline(always)]
    fn at(&self, home: usize, i: usize) -> usize {
        let j = home + i;
        if j >= self.slots.len() {
            j - self.slots.len()
        } else {
            j
        }
    }

    /// A claim token no claim had: nonzero, top bit clear.
    fn token(&self) -> u64 {
        self.tokens.fetch_add(1, Relaxed) % (USED - 1) + 1
    }

    /// Governor's `measure_and_replace` for fingerprint `key` (nonzero):
    /// module docs, "One update", "Eviction", "A TAT out of range".
    pub(crate) fn update<T, E, F>(&self, key: u64, f: F) -> Result<T, E>
    where
        F: Fn(Option<u64>) -> Result<(T, u64), E>,
    {
        let home = self.home(key);
        'scan: loop {
            // The first free slot; a claim of another key in the way (settled
            // before refusing, so a table with room never refuses for a claim
            // in flight); the probe's earliest and latest TATs.
            let mut room = None;
            let mut claim = None;
            let mut earliest: Option<(usize, u128, u64)> = None;
            for i in 0..self.probe() {
                let at = self.at(home, i);
                let mut s = self.slots[at].load(Acquire);
                let w = word(s);
                if w == 0 {
                    room.get_or_insert((i, s));
                    continue;
                }
                if key_of(s) == key {
                    if is_claim(w) {
                        self.settle(key, i, s);
                        continue 'scan;
                    }
                    // The key's value: decide, swap from exactly what `f` saw.
                    loop {
                        let (t, new) = f(tat_of(word(s)))?;
                        if new > MAX_TAT {
                            return self.refuse(&f, word(s) & MAX_TAT);
                        }
                        match self.slots[at].compare_exchange(
                            s,
                            slot(key, USED | new),
                            AcqRel,
                            Acquire,
                        ) {
                            Ok(_) => return Ok(t),
                            Err(actual) => s = actual,
                        }
                        if key_of(s) != key || word(s) & USED == 0 {
                            // Freed, reused or a claim: look again.
                            continue 'scan;
                        }
                    }
                }
                if is_claim(w) {
                    claim.get_or_insert((i, s));
                } else {
                    let v = w & MAX_TAT;
                    if earliest.is_none_or(|(_, _, e)| v < e) {
                        earliest = Some((i, s, v));
                    }
                }
            }
            if let Some((i, s)) = room {
                self.claim(key, home, i, s);
                continue 'scan;
            }
            if let Some((i, s)) = claim {
                // Another key's claim: settle it (as that key), look again.
                let other = key_of(s);
                let at = self.at(home, i);
                let j = (at + self.slots.len() - self.home(other)) % self.slots.len();
                self.settle(other, j, s);
                continue 'scan;
            }
            let Some((i, s, v)) = earliest else {
                // A probe of no slots: `new` takes `cap >= 1`.
                return self.refuse(&f, 0);
            };
            // Full: evict the earliest TAT (module docs, "Eviction").
            // ORDERING: the fold before the swap that evicts, so a settler
            // that reads the slot after it reads the fold too.
            self.fold(key_of(s), v);
            self.claim(key, home, i, s);
        }
    }

    /// Claims position `i` of `key`'s probe from `s` and settles the claim.
    fn claim(&self, key: u64, home: usize, i: usize, s: u128) {
        let mine = slot(key, self.token());
        if self.slots[self.at(home, i)]
            .compare_exchange(s, mine, AcqRel, Acquire)
            .is_ok()
        {
            self.settle(key, i, mine);
        }
    }

    /// A refusal from `f` for a key whose next TAT is past [`MAX_TAT`]
    /// (module docs, "A TAT out of range"): `f` at TATs from `latest` up,
    /// each step twice the last, until it refuses. Governor's GCRA refuses a TAT more than its burst past now,
    /// which a doubling step passes within 34 calls (a burst is at most
    /// 2^32 cells). A quota that admits even at [`MAX_TAT`] (a burst that
    /// takes more than 146 years to refill) is admitted here unrecorded:
    /// the store cannot hold its arrival times.
    #[cold]
    fn refuse<T, E, F>(&self, f: &F, latest: u64) -> Result<T, E>
    where
        F: Fn(Option<u64>) -> Result<(T, u64), E>,
    {
        let mut v = latest.max(1);
        let mut step = 1u64;
        loop {
            match f(Some(v)) {
                Err(e) => return Err(e),
                Ok((t, next)) => {
                    if v == MAX_TAT {
                        return Ok(t);
                    }
                    step = step.max(next.saturating_sub(v)).saturating_mul(2);
                    v = v.saturating_add(step).min(MAX_TAT);
                }
            }
        }
    }

    /// Settles the claim `mine` of `key` at position `i` of its probe
    /// (module docs, "One slot per key"). Whoever meets a claim may call
    /// this; all but one of the swaps from `mine` fail.
    fn settle(&self, key: u64, i: usize, mine: u128) {
        let home = self.home(key);
        let at = self.at(home, i);
        for j in 0..self.probe() {
            if j == i {
                continue;
            }
            let other = self.at(home, j);
            let mut s = self.slots[other].load(Acquire);
            loop {
                let w = word(s);
                if key_of(s) != key || w == 0 {
                    break;
                }
                if w & USED != 0 || j < i {
                    // The key's value, or an earlier claim: this one goes.
                    let _ = self.slots[at].compare_exchange(mine, 0, AcqRel, Acquire);
                    return;
                }
                // A later claim of the key goes.
                match self.slots[other].compare_exchange(s, 0, AcqRel, Acquire) {
                    Ok(_) => break,
                    Err(actual) => s = actual,
                }
            }
        }
        // After the probe's reads (module docs, "Eviction").
        let start = USED | self.estimate(key);
        let _ = self.slots[at].compare_exchange(mine, slot(key, start), AcqRel, Acquire);
    }

    /// The cell of fingerprint `key` in row `r`.
    #[inline(always)]
    fn cell(&self, key: u64, r: usize) -> &AtomicU64 {
        let h = mix(key ^ 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(r as u64 + 1));
        let c = ((u128::from(h) * self.width as u128) >> 64) as usize;
        &self.cells[r * self.width + c]
    }

    /// Folds the TAT `tat` of the key with fingerprint `key` into the
    /// memory: each of its cells rises to at least `tat` (module docs,
    /// "Eviction"). A maximum: folding one TAT twice is folding it once.
    fn fold(&self, key: u64, tat: u64) {
        for r in 0..ROWS {
            // ORDERING: released by the caller's swap that evicts or frees.
            self.cell(key, r).fetch_max(tat, AcqRel);
        }
    }

    /// The TAT a key with fingerprint `key` starts from: the least of its
    /// cells (0: none), never below a TAT of its own that was folded.
    fn estimate(&self, key: u64) -> u64 {
        (0..ROWS)
            .map(|r| self.cell(key, r).load(Acquire))
            .min()
            .unwrap_or(0)
    }

    /// The TAT `key` holds (`Some(None)`: a slot with no TAT yet), if it
    /// has a slot.
    pub(crate) fn get(&self, key: u64) -> Option<Option<u64>> {
        let home = self.home(key);
        (0..self.probe()).find_map(|i| {
            let s = self.slots[self.at(home, i)].load(Acquire);
            let w = word(s);
            (key_of(s) == key && w & USED != 0).then(|| tat_of(w))
        })
    }

    /// Frees every slot whose TAT is at or before `drop_below`.
    pub(crate) fn retain(&self, drop_below: u64) {
        for cell in self.slots.iter() {
            let s = cell.load(Acquire);
            let w = word(s);
            if w & USED != 0 && w & MAX_TAT <= drop_below {
                // ORDERING: before the swap that frees it (module docs,
                // "Eviction": freeing is evicting with no new key).
                self.fold(key_of(s), w & MAX_TAT);
                // A failed swap: updated meanwhile, so it stays.
                let _ = cell.compare_exchange(s, 0, AcqRel, Acquire);
            }
        }
    }

    /// Slots holding a key's value.
    pub(crate) fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|c| word(c.load(Relaxed)) & USED != 0)
            .count()
    }

    /// Slots in the table.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }
}
