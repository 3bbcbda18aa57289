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
//! # The memory of evicted keys
//!
//! Evicted (and, by `retain_recent`, freed) keys are remembered in
//! *generations* of arrival times. A generation is `width` ns of TATs:
//! generation `g` holds TATs in `((g - 1) * width, g * width]`, and
//! `width` is the quota's burst period `D` (`Quota::burst_size_replenished_in`,
//! [`Table::set_horizon`]; a minute if the store is not told) over
//! `PLANES - 1`, rounded up. [`PLANES`] planes hold the live
//! generations, generation `g` in plane `g mod PLANES`, each plane with
//! its generation's id (`ids`). The memory is `C` 32-byte blocks of
//! [`PLANES`] words, one per plane (one block a slot, or as many as
//! `KeyedStore::with_memory` asks for); a key's block and the [`BITS`] bits
//! it sets in a word (of 48; the top 16 bits are the word's generation
//! tag, `g mod 2^16`) are hashes of its fingerprint. A key's words are one
//! aligned block: its estimate reads one cache line.
//!
//! - **A cell's meaning**: the key's bits set in its word of plane `p`,
//!   the word tagged and the plane's id both `g`: a key with these bits
//!   was folded with a TAT at most `g * width`. The *floor* is at least
//!   every TAT of a generation that left its plane.
//! - **Fold** (before the swap that evicts or frees, with the key's TAT
//!   `t`): `g = ceil(t / width)`. Raise the plane's id to `g` by a
//!   compare-and-swap, first lifting the floor to the end of the
//!   generation it replaces (`id * width`); if the id is already later
//!   than `g`, lift the floor to `t` and stop. Then set the key's bits in
//!   its word: if the word is tagged `g`, OR them in; otherwise reread the
//!   id, lift the floor to `t` and stop if it is later than `g`, else
//!   reset the word to tag `g` with only these bits. A compare-and-swap
//!   loop. Only ever raises: folding a key twice is folding it once.
//! - **Estimate** (a settler's start): read the key's words, *then* the
//!   ids, *then* the floor. The estimate is the largest of the floor and
//!   `g * width` over the planes whose id `g` tags the key's word with all
//!   its bits set (0: none, a new key).
//!
//! Nothing expires in bulk: a plane is taken over by the first fold of a
//! later generation, word by word, as in leaparray's own memory
//! (`src/keyed/memory.rs`).
//!
//! ## A time that has passed
//!
//! A TAT at or before the caller's `now` needs no generation: it goes to
//! the floor, exactly, and decides as no state for every caller at or
//! after it. The memory knows two such times: `retain_recent`'s
//! `drop_below` (governor passes its `now`), and `high - D`, where `high`
//! is at most the latest TAT written (raised by eighths of a generation)
//! and an admission writes at most `D` past its caller's `now`. So a key
//! freed by `retain_recent`, or evicted long enough after its time passed,
//! comes back deciding as governor's `DashMap` store decides for a new
//! key; one evicted within `D` after its time passed may read up to its
//! generation's end.
//!
//! ## Why an estimate is never below what a key booked
//!
//! Key `K` is evicted by thread E with TAT `t` (at least what its own
//! admissions booked: the slot only ever holds a TAT governor's closure
//! decided from a start at least its own) and comes back, settled by
//! thread S. E's fold returns after it either set `K`'s bits in its word
//! of plane `g` tagged `g` with the id at `g`, or lifted the floor to
//! `t`; both before E's evicting swap, which S's probe reads synchronize
//! with (the table's argument, "A slot changes hands"). From then on the
//! bits leave the word only when a fold of a later generation resets it,
//! which it does only after reading the plane's id later than `g`; the id
//! changes from `g` only by a compare-and-swap made after lifting the
//! floor to `g * width >= t`. So S reads either the word tagged `g` with
//! the bits and an id of `g` (estimate `>= g * width >= t`), or an id
//! later than `g`, or a word reset after it, and then reads the floor
//! after that id: `>= t`. Other keys' folds only raise. The race the
//! order of reads closes:
//!
//! ```text
//!  Thread 1 (estimates K, gen g)         Thread 2 (folds generation g + 4)
//!  -----------------------------------   -----------------------------------
//!  reads K's word: tag g, bits set
//!                                        floor: lift to g * width
//!                                        plane id: g -> g + 4
//!                                        K's word: reset to tag g + 4
//!  reads the plane's id: g + 4, so the
//!  word is no estimate; reads the floor
//!  after the id: >= g * width >= t
//!  (the floor read before the id, or the
//!  floor lifted after the id's swap,
//!  could read below t: under)
//! ```
//!
//! ## How far above
//!
//! A key's estimate is above its own TAT only by (a) rounding up to its
//! generation's end (less than `width = D / 3`); (b) another key's bits
//! covering its own in a plane whose generation is still ahead of `now`
//! (a false positive of a blocked Bloom filter: with `n` keys folded per
//! generation in `C` blocks, about `(1 - e^(-3n/48C))^3` per plane); (c)
//! the floor, which stays at or before `now` while every TAT folded is at
//! most `D` ahead of its caller's `now` (GCRA: an admission writes at most
//! `now + D`, a refusal writes nothing), since a plane is taken over for
//! generation `g + 4` only by a TAT above `(g + 3) * width >= g * width +
//! D`. The floor holds only times at or before some caller's `now`: what
//! `retain_recent` freed (`drop_below`), an evicted TAT `D` before the
//! latest written (`high - D`, a time the writer of `high` reached), a
//! generation's end when a later generation takes its plane, and a TAT
//! whose plane a later generation already holds (each at or before the
//! `now` of the caller that folded that later generation). With a horizon
//! shorter than the quota's burst period, or a caller whose clock is `L`
//! behind another's, the floor can be ahead of that caller's `now`, by up
//! to `L`: a new key starts from it, up to `L` of its burst spent, and past
//! governor's `tau` (the quota's period times its burst less one: 0 for a
//! burst of 1) its first request waits at most `L - tau` (refused more,
//! never admitted more); (d) a word last written a
//! multiple of `2^16` generations before its plane's id, whose 16-bit tag
//! reads as the id's: an over-read for that one generation, at most `g *
//! width <= now + D + width`. A key started high by (b) that is admitted folds its own later
//! TAT, which is past its start's generation end, into the next
//! generation: the ratchet of a memory that folds what a start inflated is
//! left for its false positives, and each link of such a chain moves a
//! block a generation on (a third of `D`) where a memory of exact times
//! moved it by the key's own booking. Where nearly every key is a false
//! positive (a table far smaller than the keys live at once: a store of
//! one slot), a few such links reach past the burst and the block's keys
//! are refused until its times pass. A TAT at or
//! before `now` decides as no state (`max(tat, now)`), so a generation
//! whose end has passed costs nothing before it is taken over.
//!
//! So a key that comes back after it was evicted or freed starts from at
//! least its own folded TAT, and a caller whose clock is behind the one
//! that evicted or freed it is limited as if the slot had stayed
//! (`loom-tests/tests/governor.rs`: an eviction racing an update of the
//! evicted key; `retain_recent` racing an update; two threads inserting
//! one key).
//!
//! # Progress
//!
//! The table's update loops until a swap of its own completes the call,
//! running governor's closure on each pass; beyond the table's lock-free
//! bound (more than `min(16, CAP)` calls inserting at once, or a closure
//! that yields, which keeps a claim unsettled while another key's caller
//! settles and evicts it) that can be without end:
//!
//! ```text
//!  Thread 1 (new key A, CAP 1)           Thread 2 (new key B)
//!  -----------------------------------   -----------------------------------
//!  claim the slot; f_A yields inside
//!                                        A's claim: settle it, evict A,
//!                                        claim; f_B yields inside
//!  swap claim -> decision: fails;
//!  settle B's claim, evict B, claim;
//!  f_A yields inside                     swap claim -> decision: fails; ...
//! ```
//!
//! So `update` runs `f` at most once per call of the table's update: a
//! second run (the swap of the first decision failed) is a `Keep` with no
//! decision, which leaves the table at once (on the key's value) or after
//! the claim settles into the key's start. The store then backs off
//! ([`backoff`]: a spin of up to 64 pause hints, then `yield_now`s, one
//! more per attempt, so a thread preempted inside `f` gets the CPU) and
//! tries again. After [`ATTEMPTS`] attempts it falls back to [`refuse`],
//! which runs `f` on TATs only, off the table: a call runs `f` at most
//! [`MAX_RUNS`] times. The refusal is governor's own `NotUntil` for a TAT
//! above the latest `f` saw: it refuses where governor's `DashMap` store
//! might admit, never the reverse.
//!
//! # A TAT out of range
//!
//! A slot holds a TAT of 63 bits ([`MAX_TAT`], 292 years after the
//! limiter's start). An update that `f` admits with a new TAT past it
//! stores [`MAX_TAT`]: the admission is governor's, and the key's next
//! requests are refused until `now` is within governor's `tau` (the
//! quota's period times its burst less one; for `n` cells,
//! `tau - t * (n - 1)`) of [`MAX_TAT`], where
//! governor's `DashMap` store, which holds the true TAT, refuses them
//! longer (its `NotUntil` is later). The high water is told [`MAX_TAT`]
//! (`wrote`): the true TAT is past it and at most `now + D` for a quota
//! the store was told, so [`MAX_TAT`]` - D` is a time the writer has
//! reached ("A time that has passed"). From `2^63 - 1 - tau` ns of
//! limiter time on, the store limits nothing: a key at [`MAX_TAT`] stays
//! there, and every request governor admits at it is admitted, as often
//! as it comes (a one-cell request from then on, one of `n` cells from
//! `t * (n - 1)` ns later; crate docs, "What is not guaranteed"). A key evicted at [`MAX_TAT`] is
//! remembered in the generation that holds it: new keys its bits cover
//! (false positives) are refused until then.

use leaparray::keyed::{Found, Policy, Slot, Start, Step, Value};

use crate::CapacityError;

use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
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

/// Planes of the memory: generations of arrival times live at once.
pub(crate) const PLANES: usize = 4;

/// Bits a key sets in its word of a plane.
pub(crate) const BITS: u32 = 3;

/// Cells (bits) of a word; its top 16 bits are the generation's tag.
const CELLS: u64 = 48;

/// The horizon of a store not told its quota: a burst period of a minute.
pub(crate) const DEFAULT_HORIZON: u64 = 60_000_000_000;

/// A 64-bit mix (the SplitMix64 finalizer).
#[inline(always)]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The tag of generation `g` in a word.
#[inline(always)]
const fn tag(g: u64) -> u64 {
    g & 0xffff
}

/// A key's words, one per plane, in one aligned block (one cache line
/// read for an estimate).
#[repr(align(32))]
struct Block([AtomicU64; PLANES]);

/// Bytes of a [`Block`]: the memory's quantum.
pub(crate) const BLOCK_BYTES: usize = core::mem::size_of::<Block>();

/// Who calls the table: the key's fingerprint and the attempts of its
/// call that failed (module docs, "Progress").
#[derive(Clone, Copy)]
pub(crate) struct Caller {
    fp: u64,
    attempt: usize,
    /// A time at or before the caller's `now` (`retain_recent`'s
    /// `drop_below`; 0 if not known).
    passed: u64,
}

impl Caller {
    /// A caller that never backs off (a lookup, `retain_recent`).
    const QUIET: Caller = Caller {
        fp: 0,
        attempt: 0,
        passed: 0,
    };
}

/// The GCRA policy: the memory of evicted and freed TATs (module docs,
/// "The memory of evicted keys").
pub(crate) struct Gcra {
    /// One block per slot: a key's word in each plane.
    blocks: Box<[Block]>,
    /// The generation each plane holds (0: none yet).
    ids: [AtomicU64; PLANES],
    /// At least every TAT of a generation that left its plane.
    floor: AtomicU64,
    /// A generation's width in ns: the horizon over `PLANES - 1`, rounded
    /// up (at least 1).
    width: AtomicU64,
    /// The horizon: the quota's burst period (ns).
    horizon: AtomicU64,
    /// At most the latest TAT written: `high - horizon` is at or before
    /// the `now` of the caller that wrote it (module docs, "A time that
    /// has passed").
    high: AtomicU64,
}

impl Gcra {
    /// The block of fingerprint `fp` and the bits it sets in a word.
    #[inline(always)]
    fn cells(&self, fp: u64) -> (&Block, u64) {
        let h = mix(fp ^ 0x9e37_79b9_7f4a_7c15);
        let b = ((u128::from(h) * self.blocks.len() as u128) >> 64) as usize;
        let mut bits = mix(h);
        let mut mask = 0;
        for _ in 0..BITS {
            mask |= 1 << (((bits & 0xffff) * CELLS) >> 16);
            bits >>= 16;
        }
        (&self.blocks[b], mask)
    }

    /// A generation's width (ns).
    #[inline(always)]
    fn width(&self) -> u64 {
        // ORDERING: written only through `&mut` (`set_horizon`).
        self.width.load(Relaxed)
    }

    /// Raises the floor to `tat` (module docs: what leaves the planes).
    #[inline]
    fn lift(&self, tat: u64) {
        // ORDERING: released before the plane id changes (a reader reads
        // the id, then the floor).
        self.floor.fetch_max(tat.min(MAX_TAT.get()), AcqRel);
    }

    /// Tells the memory a TAT was written (module docs, "A time that has
    /// passed"): `high` rises by steps of an eighth of a generation, so
    /// the shared word is written rarely.
    #[inline]
    fn wrote(&self, tat: u64) {
        // ORDERING: only a bound (module docs).
        if tat > self.high.load(Relaxed).saturating_add(self.width() / 8) {
            self.high.fetch_max(tat, Relaxed);
        }
    }

    /// Sizes generations for a burst period of `horizon` ns; what was
    /// remembered moves to the floor (module docs). Called only through
    /// [`Table::set_horizon`]'s `&mut`: no call races it.
    fn set_horizon(&self, horizon: u64) {
        let width = self.width();
        for id in &self.ids {
            self.lift(id.swap(0, AcqRel).saturating_mul(width));
        }
        for b in self.blocks.iter() {
            for w in &b.0 {
                w.store(0, Relaxed);
            }
        }
        self.width
            .store(horizon.div_ceil(PLANES as u64 - 1).max(1), Relaxed);
        self.horizon.store(horizon, Relaxed);
    }
}

impl Policy for Gcra {
    type Context = Caller;
    /// The TAT: the earliest goes.
    type Rank = u64;

    fn evicts(&self) -> bool {
        true
    }

    fn rank(&self, _: u8, tat: u64, _: Caller) -> u64 {
        tat
    }

    /// The victim's block and the new key's, loaded together before the
    /// fold: their misses overlap rather than follow one another through
    /// the fold's read-modify-writes. What they hold is read again where
    /// it counts. Only for blocks of more than 1 MiB (beyond a core's L2
    /// cache, where they are mostly misses; below it the loads'
    /// instructions cost more than they save, as in the core's table:
    /// benches/README.md).
    /// Nothing under loom: a load whose value is dropped changes no
    /// outcome, and would only multiply the interleavings.
    fn evicting(&self, fp: u64, victim: u64, _: Caller) {
        if cfg!(leaparray_loom) || self.blocks.len() * BLOCK_BYTES <= 1 << 20 {
            return;
        }
        for f in [victim, fp] {
            core::hint::black_box(self.cells(f).0 .0[0].load(Relaxed));
        }
    }

    /// The key's bits in the plane of its TAT's generation, or the floor
    /// (module docs). Only ever raises.
    fn fold(&self, fp: u64, _: u8, tat: u64, cx: Caller) {
        // Before the swap that evicts a key whose caller may be inside
        // `f` (module docs, "Progress").
        if cx.attempt > 0 {
            backoff(cx.attempt);
        }
        if tat == 0 {
            return;
        }
        // A TAT passed for the caller that freed it, or for the caller
        // that wrote the latest TAT: the floor holds it exactly (module
        // docs, "A time that has passed").
        // ORDERING: `high` and `horizon` only bound; any value read is one
        // that was written.
        let seen = self.high.load(Relaxed);
        if tat <= cx.passed || tat.saturating_add(self.horizon.load(Relaxed)) <= seen {
            self.lift(tat);
            return;
        }
        let width = self.width();
        let g = tat.div_ceil(width);
        let plane = (g % PLANES as u64) as usize;
        let id = &self.ids[plane];
        let mut cur = id.load(Acquire);
        loop {
            if cur > g {
                // A later generation holds the plane.
                self.lift(tat);
                return;
            }
            if cur == g {
                break;
            }
            // Generation `cur` leaves the plane: its bound goes to the
            // floor first.
            self.lift(cur.saturating_mul(width));
            // ORDERING: releases the floor to whoever reads this id.
            match id.compare_exchange(cur, g, AcqRel, Acquire) {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        let (block, mask) = self.cells(fp);
        let word = &block.0[plane];
        let mut w = word.load(Acquire);
        loop {
            let new = if w >> CELLS == tag(g) {
                if w & mask == mask {
                    return;
                }
                w | mask
            } else {
                // An older generation's word, or a later one's: the id
                // tells (module docs).
                if id.load(Acquire) > g {
                    self.lift(tat);
                    return;
                }
                (tag(g) << CELLS) | mask
            };
            // ORDERING: released by the table's swap that evicts or frees.
            match word.compare_exchange(w, new, AcqRel, Acquire) {
                Ok(_) => return,
                Err(actual) => w = actual,
            }
        }
    }

    /// The end of the latest generation whose plane holds all the key's
    /// bits, or the floor if later (0: none): never below a TAT of its own
    /// that was folded (module docs).
    fn start(&self, fp: u64, cx: Caller) -> Start {
        // Before the swap that settles another key's claim, whose caller
        // may be inside `f` (module docs, "Progress").
        if cx.attempt > 0 && fp != cx.fp {
            backoff(cx.attempt);
        }
        let (block, mask) = self.cells(fp);
        let words: [u64; PLANES] = core::array::from_fn(|p| block.0[p].load(Acquire));
        // After the words, and the floor after the ids (module docs).
        let ids: [u64; PLANES] = core::array::from_fn(|p| self.ids[p].load(Acquire));
        let mut estimate = self.floor.load(Acquire);
        let width = self.width();
        for p in 0..PLANES {
            let (w, g) = (words[p], ids[p]);
            if g != 0 && w >> CELLS == tag(g) && w & mask == mask {
                estimate = estimate.max(g.saturating_mul(width));
            }
        }
        Start {
            word: Value::new(estimate).unwrap_or(MAX_TAT),
            remembered: false,
        }
    }
}

/// A fixed table of slots with the GCRA policy (module docs).
pub(crate) struct Table(leaparray::keyed::Table<Gcra, Box<[Slot]>>);

impl Table {
    /// `cap` free slots and an empty memory of one block a slot: the only
    /// allocations (`CapacityError`: `cap == 0`, or more than can be
    /// allocated).
    pub(crate) fn try_new(cap: usize) -> Result<Self, CapacityError> {
        Self::try_with_blocks(cap, cap, CapacityError::OutOfMemory { capacity: cap })
    }

    /// `cap` free slots and an empty memory of `blocks` blocks; `oom` if
    /// the memory cannot be allocated.
    fn try_with_blocks(
        cap: usize,
        blocks: usize,
        oom: CapacityError,
    ) -> Result<Self, CapacityError> {
        if cap == 0 {
            return Err(CapacityError::Zero);
        }
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(cap)
            .map_err(|_| CapacityError::OutOfMemory { capacity: cap })?;
        slots.extend((0..cap).map(|_| Slot::new()));
        let mut memory = Vec::new();
        memory.try_reserve_exact(blocks).map_err(|_| oom)?;
        // Written (not calloc'd) so their pages are resident from `new`.
        memory.extend((0..blocks).map(|_| Block(core::array::from_fn(|_| AtomicU64::new(0)))));
        let mut t = Table(leaparray::keyed::Table::new(
            slots.into_boxed_slice(),
            Gcra {
                blocks: memory.into_boxed_slice(),
                ids: core::array::from_fn(|_| AtomicU64::new(0)),
                floor: AtomicU64::new(0),
                width: AtomicU64::new(1),
                horizon: AtomicU64::new(0),
                high: AtomicU64::new(0),
            },
        ));
        t.set_horizon(DEFAULT_HORIZON);
        Ok(t)
    }

    /// A new table of this one's slots count and horizon, its slots free,
    /// with a memory of `bytes` (whole blocks of [`BLOCK_BYTES`]) that
    /// holds what this table held: every key with a value is folded into
    /// it as an eviction folds its victim, and every TAT this memory held
    /// (its floor, the end of each generation its planes hold) goes to the
    /// new floor. So a key of this table starts in the new one from a time
    /// at or after its own (module docs, "Why an estimate is never below
    /// what a key booked"). This table is only read: on an error it is as
    /// it was. Called with `&self` of a store its owner holds by `&mut`: no
    /// call races it.
    pub(crate) fn try_with_memory(&self, bytes: usize) -> Result<Self, CapacityError> {
        let blocks = bytes / BLOCK_BYTES;
        if blocks == 0 {
            return Err(CapacityError::MemoryTooSmall { bytes });
        }
        let oom = CapacityError::MemoryOutOfMemory { bytes };
        let t = Self::try_with_blocks(self.capacity(), blocks, oom)?;
        let (old, new) = (self.0.policy(), t.0.policy());
        // ORDERING: `&mut` of the store: every write to this table
        // happened before, and the new table is not shared yet.
        new.width.store(old.width(), Relaxed);
        new.horizon.store(old.horizon.load(Relaxed), Relaxed);
        new.high.store(old.high.load(Relaxed), Relaxed);
        let width = old.width();
        let ends = old
            .ids
            .iter()
            .map(|id| id.load(Relaxed).saturating_mul(width));
        new.lift(ends.fold(old.floor.load(Relaxed), u64::max));
        for s in self.0.iter() {
            if let Some(tat) = s.value() {
                new.fold(s.fingerprint(), s.tag(), tat, Caller::QUIET);
            }
        }
        Ok(t)
    }

    /// Bytes of the memory of evicted keys.
    pub(crate) fn memory(&self) -> usize {
        self.0.policy().blocks.len() * BLOCK_BYTES
    }

    /// Sizes the memory's generations for a quota whose burst refills in
    /// `horizon` ns (module docs); what it remembered moves to the floor.
    pub(crate) fn set_horizon(&mut self, horizon: u64) {
        self.0.policy().set_horizon(horizon);
    }

    /// Governor's `measure_and_replace` for the key whose hash is `hash`:
    /// module docs, "A slot's value", "Progress", "A TAT out of range".
    #[inline]
    pub(crate) fn update<T, E, F>(&self, hash: u64, f: F) -> Result<T, E>
    where
        F: Fn(Option<u64>) -> Result<(T, u64), E>,
    {
        let place = self.0.place(hash);
        // The latest TAT `f` saw, where a fallback refusal starts.
        let mut latest = 0;
        // The TAT the decision writes.
        let mut written = 0;
        for attempt in 0..ATTEMPTS {
            let mut ran = false;
            let cx = Caller {
                fp: place.fingerprint(),
                attempt,
                passed: 0,
            };
            let out = self.0.update(place, None, cx, |_, tat| {
                if ran {
                    // `f`'s swap failed: leave the table, back off, and
                    // decide again from a fresh read (module docs,
                    // "Progress").
                    return Step::Keep(None);
                }
                ran = true;
                latest = latest.max(tat);
                match f(tat_of(tat)) {
                    Err(e) => Step::Keep(Some(Err(e))),
                    Ok((t, new)) => {
                        // Past `MAX_TAT`: admitted, `MAX_TAT` stored
                        // (module docs, "A TAT out of range").
                        let word = match Value::new(new) {
                            Some(new) => {
                                written = new.get();
                                new
                            }
                            None => {
                                written = MAX_TAT.get();
                                MAX_TAT
                            }
                        };
                        Step::Write {
                            tag: 0,
                            word,
                            out: Some(Ok(t)),
                        }
                    }
                }
            });
            match out {
                Some(Some(decided)) => {
                    if decided.is_ok() {
                        self.0.policy().wrote(written);
                    }
                    return decided;
                }
                Some(None) => backoff(attempt),
                // No room, which an evicting table of `cap >= 1` slots
                // always finds.
                None => break,
            }
        }
        refuse(&f, latest)
    }

    /// The TAT the key whose hash is `hash` holds (`Some(None)`: a slot
    /// with no TAT yet), if it has a slot.
    pub(crate) fn get(&self, hash: u64) -> Option<Option<u64>> {
        match self.0.find(self.0.place(hash), Caller::QUIET) {
            Found::Value(tat) => Some(tat_of(tat)),
            Found::Claimed | Found::Absent { .. } => None,
        }
    }

    /// Frees every slot whose TAT is at or before `drop_below`, folding it
    /// first (module docs, "The memory of evicted keys").
    pub(crate) fn retain(&self, drop_below: u64) {
        let cx = Caller {
            passed: drop_below,
            ..Caller::QUIET
        };
        self.0.retain(cx, |_, tat| tat > drop_below);
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

/// Calls of the table's update in one `measure_and_replace`, each running
/// governor's closure at most once (module docs, "Progress").
pub(crate) const ATTEMPTS: usize = 32;

/// Runs of governor's closure in one `measure_and_replace`, at most: one
/// per attempt, and [`refuse`]'s (64 calls that double a TAT from 1 up to
/// [`MAX_TAT`], and the call at it).
pub(crate) const MAX_RUNS: usize = ATTEMPTS + 65;

/// The wait after the failed `attempt` (from 0): a spin of `2^attempt`
/// pause hints up to 64, then as many `yield_now`s as attempts past 6
/// (the CPU goes to a thread preempted inside governor's closure, maybe
/// holding the claim this one would settle).
#[cold]
fn backoff(attempt: usize) {
    for _ in 0..1u32 << attempt.min(6) {
        core::hint::spin_loop();
    }
    for _ in 6..attempt {
        std::thread::yield_now();
    }
}

/// The fallback refusal after [`ATTEMPTS`] failed swaps (module docs,
/// "Progress"): `f` at TATs from `latest` up, each step twice the last,
/// until it refuses. Governor's GCRA refuses a TAT more than its burst
/// past now, which a doubling step passes within 34 calls (a burst is at
/// most 2^32 cells). If `f` admits even at [`MAX_TAT`] (the limiter's
/// time within `tau` of it: module docs, "A TAT out of range"), that
/// admission is returned, unrecorded.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_memory_keeps_the_slots_count_and_the_horizon() {
        let mut t = Table::try_new(64).unwrap();
        t.set_horizon(3_000);
        let m = t.try_with_memory(1000).unwrap();
        assert_eq!((m.capacity(), m.memory()), (64, 992));
        let (old, new) = (t.0.policy(), m.0.policy());
        assert_eq!(new.horizon.load(Relaxed), 3_000);
        assert_eq!(new.width(), old.width());
        assert_eq!(new.width(), 1_000);
        assert_eq!(new.floor.load(Relaxed), 0);
        assert_eq!(
            m.try_with_memory(31).err(),
            Some(CapacityError::MemoryTooSmall { bytes: 31 })
        );
    }
}
