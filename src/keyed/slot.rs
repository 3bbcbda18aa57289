//! The gate policy of both keyed tables: what a [`KeyedGate`]'s slot
//! table ([`Table`](super::Table), whose protocol its module argues once:
//! claims, settling, the ordering of a slot changing hands) holds for a
//! key, and what a [`LocalKeyedGate`](super::LocalKeyedGate) runs in one
//! thread with the same functions: the gate word, one decision on it, when
//! a slot may be recycled and what a key inserted after a recycling starts
//! from, which key an eviction takes the slot of and what an evicted key
//! starts from when it comes back.
//!
//! # A slot
//!
//! A slot's value is the key's gate word (`packed`'s layout with `F = 0`,
//! no future windows) below its top bit: `packed` sets the top bit of
//! every word it builds (its used bit, which marks a word that was ever
//! written), and the table's slot word keeps its own used bit there too,
//! so the table's [`Value`] of a gate word `w` is `w` with the top bit
//! cleared (`table_value`, always below `2^63`), and the gate word of a
//! value `v` the table hands out is `v` with it set (`gate_word`): the
//! slot stores the gate word bit for bit. Its tag is an
//! 8-bit *demand* counter: every decision adds its `n` (saturating at 255;
//! a refusal too, under eviction, until the counter saturates), and the
//! counter halves for each window the word's newest window moves on.
//! `locate(seed, key)` places a key by a seeded mix of it
//! ([`Table::place`](super::Table::place)). A local table keeps the same
//! two halves as `[key, word]` in plain memory and no claims: its owner is
//! the only writer.
//!
//! # Recycling never hands a key a fresh limit
//!
//! A gate word is recyclable once its newest window is `2N` windows or
//! more before the caller's (`recyclable`). A recycled key's permits count
//! in windows at least `2N` before the recycler's window `r`. Before
//! recycling, the recycler raises the table's *high-water* window to `r`
//! at least ([`Policy::recycle`]); a claim settles into an empty word whose
//! newest window is `max(caller, high water) - N` ([`fresh`]). A caller
//! earlier than that window is a late caller and books into it (as a
//! [`Gate`](crate::Gate) books its late callers). So a key that comes back
//! after it was recycled counts its new permits in windows at least `r -
//! N`, and no interval of `N` windows holds both its old and its new
//! permits. The settler reads the high water after it read every slot of
//! the probe, the recycled one included, so it reads at least `r` (the
//! table's module docs, "A slot changes hands"). A local table's owner
//! raises its high water and writes the slot itself.
//!
//! # Eviction: a key's counts outlive its slot
//!
//! Under [`Overflow::Evict`] a key that finds no free or recyclable slot in
//! its probe takes the slot of the least valued key there (`value_of`, the
//! policy's rank: its demand halved once per window since its newest, then
//! its demand, then the older newest window, then probe position). Before the swap that
//! evicts ([`Policy::fold`]), the evictor raises the high water to the
//! victim's newest window (and its own) and folds each of the victim's
//! window counts into the memory of evicted keys (`memory.rs`: a maximum
//! per cell, so folding a key twice never adds). A local table takes the
//! victim's newest window no later than the newest window it decided in (a
//! word read later is `2^(T-1)` windows or more behind, its id misread),
//! shifting all its counts by the same amount: counts folded later than
//! they were booked are still conservative, as the comeback starts at the
//! high water, at or after each folded window, and reads every window of
//! the intervals that hold the real counts.
//!
//! A settler starts its key from the memory ([`Policy::start`], after
//! reading every slot of the probe): it reads the high water `h'` and, for
//! `h = max(c, h')`, the estimates of the windows `h - 2N + 1 ..= h`; a key
//! with an estimate there starts with newest window `h` and the estimates
//! of `h - N + 1 ..= h`, capped newest first to sum to the limit at most
//! ([`start`]), so a booking lands at `h` or later and every interval it
//! joins holds the estimates of the windows it shares with the key's
//! evicted counts, which all lie at or before `h`. With no estimate a key
//! starts at [`fresh`] as after a recycling. That the settler sees the fold
//! and the high water is the
//! table's argument ("A slot changes hands"); the loom models
//! `an_eviction_races_a_decision_of_the_evicted_key` and
//! `a_returning_key_reads_its_estimate_while_it_is_folded`
//! (`loom-tests/tests/keyed.rs`) check it for gate words.

use core::num::NonZeroU64;

use crossbeam_utils::CachePadded;

use super::hash::mix;
use super::memory::{Memory, Shape, Word, Words};
use super::table::{place_of, Event, Policy, Start, Value};
#[cfg(doc)]
use super::KeyedGate;
use super::{KeyedError, Overflow, PROBE};
use crate::gate::divide::Divisor;
use crate::gate::packed::{self, Fast, Geometry, Layout, Outcome};
use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};

/// The top bit of a slot's word: set in every gate word (`packed`'s used
/// bit, and the table's).
pub(super) use super::table::USED;

/// The gate word of the value `v` a table hands out (module docs, "A
/// slot").
#[inline(always)]
pub(super) const fn gate_word(v: u64) -> u64 {
    v | USED
}

/// The table value of the gate word `w`: its bits below the used bit,
/// which every gate word has set (module docs, "A slot").
#[inline(always)]
pub(super) const fn table_value(w: u64) -> Value {
    debug_assert!(w & USED != 0, "a gate word has its used bit set");
    Value::low_bits_of(w)
}

/// What [`KeyedGate::try_acquire`] did.
pub(super) enum Booking {
    /// Booked: the window it booked into and the gate word it stored.
    In {
        /// The window booked into.
        at: u64,
        /// The gate word stored.
        word: u64,
    },
    /// Refused by the key's gate.
    Refused,
    /// Refused by the key's gate, on the slot's value as it was then (the
    /// refusal wrote the slot: its demand): never decided again.
    Counted,
    /// No room for the key: the overflow policy decides.
    Overflowed,
    /// `n == 0`.
    Nothing,
}

/// The seed [`KeyedGate::new`] mixes keys with.
pub(super) const DEFAULT_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// The word of a slot.
#[inline(always)]
pub(super) const fn word(slot: u128) -> u64 {
    slot as u64
}

/// The key of a slot.
#[inline(always)]
pub(super) const fn key_of(slot: u128) -> u64 {
    (slot >> 64) as u64
}

/// The key fingerprint of a slot's key half (module docs, "A slot").
#[inline(always)]
pub(super) const fn fp_of(half: u64) -> u64 {
    half >> 8
}

/// The demand counter of a slot's key half.
#[inline(always)]
pub(super) const fn demand_of(half: u64) -> u64 {
    half & 0xff
}

/// The key half of a key with fingerprint `fp` and no demand yet.
#[inline(always)]
pub(super) const fn half_of(fp: u64) -> u64 {
    fp << 8
}

/// The slot holding the key half `half` and `word`.
#[inline(always)]
pub(super) const fn slot(half: u64, word: u64) -> u128 {
    ((half as u128) << 64) | word as u128
}

/// The geometry of a slot's word: constant shifts and masks on 64-bit
/// targets (`packed::Fixed`, as [`decide`] reads it), from the layout
/// elsewhere (one copy of the code on microcontrollers).
#[inline(always)]
pub(super) fn geometry<const N: usize>(layout: &Layout) -> impl Geometry + '_ {
    #[cfg(target_pointer_width = "64")]
    let g = packed::Fixed::<u64, N, 0>::new(layout);
    #[cfg(not(target_pointer_width = "64"))]
    let g = layout;
    g
}

/// The home slot and the fingerprint of `key` under `seed` in a table of
/// `cap` slots: the home from the top bits of the key's mix (Lemire's
/// multiply-shift: uniform over `0..cap`, no division), the fingerprint
/// 56 bits of an odd multiple of the mix (so no function of the home).
#[inline(always)]
pub(super) fn locate(cap: usize, seed: u64, key: u64) -> (usize, u64) {
    let p = place_of(mix(key ^ seed), cap);
    (p.home(), p.fingerprint())
}

/// The key half after a decision for `n` permits that stored a word whose
/// newest window is `d` windows after `old`'s (0 for the same window or a
/// late caller): demand halves per window moved on, then adds `n`,
/// saturating at 255.
#[inline(always)]
pub(super) fn bumped(l: &Layout, half: u64, old: u64, c: u64, n: u64) -> u64 {
    let d = match packed::ahead_of(l, old, c) {
        Some(d) => d.min(8),
        None => 0,
    };
    let demand = ((demand_of(half) >> d) + n).min(255);
    (half & !0xff) | demand
}

/// What an eviction values the slot `s` (a used word) at, for a caller in
/// window `c`: the least is evicted first. Its demand halved per window
/// since its newest, then its demand (a key whose callers' clock lags looks
/// older to a caller ahead of it: it still outranks a one-shot key that
/// decayed to as little), then the older newest window: in one `u64`, the
/// two demands in its top 16 bits and the newest window, as its distance
/// from `c` plus `2^47`, in the low 48 (a word's newest window reads within
/// `2^(T-1) <= 2^47` windows of `c`, so the order is the windows' order).
#[inline]
pub(super) fn value_of(l: impl Geometry, s: u128, c: u64) -> u64 {
    let (w, mask) = (word(s), l.id_mask());
    // The word's newest window relative to `c`, read modulo `2^T` as a
    // decision reads it: `d` windows before `c`, or after it (late).
    let d = c.wrapping_sub(w) & mask;
    let (ahead, rel) = if d <= mask >> 1 {
        (d, (1u64 << 47).wrapping_sub(d))
    } else {
        (0, (1u64 << 47).wrapping_add(mask + 1 - d))
    };
    let demand = demand_of(key_of(s));
    ((demand >> ahead.min(8)) << 56) | (demand << 48) | (rel & ((1 << 48) - 1))
}

/// Folds the gate word `w` of the key with fingerprint `fp`, evicted by a
/// caller in window `c`, into `memory`: each of its windows' counts, its
/// count for window `newest_of(w) - k` into window `newest - k` (`newest`:
/// the word's newest window, or a later one the high water has reached:
/// folding later is conservative, module docs, "Eviction").
pub(super) fn fold_into<C: Word, W: Words<C>, const N: usize>(
    l: &Layout,
    memory: &Memory<C, W>,
    shape: &Shape,
    fp: u64,
    w: u64,
    newest: u64,
) {
    let (g, cells) = (geometry::<N>(l), shape.cells(fp));
    for k in 0..N as u32 {
        if let Some(window) = newest.checked_sub(u64::from(k)) {
            memory.fold(shape, &cells, window, packed::count_at(g, w, k));
        }
    }
}

/// The gate word a key with fingerprint `fp`, inserted by a caller in
/// window `c` with the table's high water `high_water`, starts with, and
/// whether the memory of evicted keys estimated a count for it in a
/// window it holds.
///
/// With no estimate in the `2N` windows ending at `h = max(c, high
/// water)`, the key starts at [`fresh`] (newest window `h - N`): a late
/// caller books into window `h - N`, whose intervals reach back to `h - 2N
/// + 1`. Otherwise it starts at newest window `h`, each window `h - k`
/// (`k < N`) holding the memory's estimate of it, capped newest first so
/// that they sum to the limit at most: a window keeps its estimate while
/// the windows after it leave room (an interval that holds a capped
/// window holds every window after it, whose estimates already fill it).
/// A booking then lands at `h` or later, and the intervals it joins hold
/// no window before `h - N + 1`. The memory keeps `N` planes, so an
/// estimate of a window `N` or more before the newest one folded reads as
/// the limit (`memory.rs`): under a flood every key starts at `h`.
pub(super) fn start<C: Word, W: Words<C>, const N: usize>(
    l: &Layout,
    memory: &Memory<C, W>,
    shape: &Shape,
    fp: u64,
    c: u64,
    high_water: u64,
) -> (u64, bool) {
    let h = c.max(high_water);
    if !shape.remembers() || !memory.may_estimate(shape, h, 2 * N as u64) {
        return (fresh::<N>(l, c, high_water), false);
    }
    let cells = shape.cells(fp);
    let mut est = [0u64; N];
    let (mut room, mut live) = (l.limit, false);
    for (k, kept) in est.iter_mut().enumerate() {
        let Some(window) = h.checked_sub(k as u64) else {
            break;
        };
        let e = memory.estimate(shape, &cells, window);
        *kept = e.min(room);
        room -= *kept;
        live |= e != 0;
    }
    // The windows before: only whether any holds an estimate (a window
    // whose plane a later window took reads as the limit: no cell read).
    let any = live
        || (N..2 * N).any(|k| {
            h.checked_sub(k as u64).is_some_and(|window| {
                memory.taken(shape, window) || memory.estimate(shape, &cells, window) != 0
            })
        });
    if !any {
        return (fresh::<N>(l, c, high_water), false);
    }
    (
        packed::word_with::<u64>(geometry::<N>(l), h, |k| est[k as usize]),
        live,
    )
}

// The rules a slot follows, shared by `KeyedGate` and `LocalKeyedGate`
// (`owned.rs`): one source for the word's layout, where a key lives, one
// decision, and when a slot may be recycled.

/// The layout of a slot's word for `N` windows of `window` ticks and
/// `limit`, or why the limit does not fit.
pub(super) const fn layout_of<const N: usize>(
    window: NonZeroU64,
    limit: u64,
) -> Result<Layout, KeyedError> {
    match Layout::fit(64, live::<N>(), Divisor::new(window), limit, 0) {
        Some(layout) => Ok(layout),
        None => Err(KeyedError::LimitTooLarge {
            max: max_limit_of::<N>(),
        }),
    }
}

/// `N` as a packed layout's count of live windows.
const fn live<const N: usize>() -> u32 {
    if N > u32::MAX as usize {
        u32::MAX
    } else {
        N as u32
    }
}

/// The largest limit a slot's word takes for `N` windows.
pub(super) const fn max_limit_of<const N: usize>() -> u64 {
    match Layout::fit(64, live::<N>(), Divisor::new(NonZeroU64::MIN), 0, 0) {
        Some(l) => {
            if l.slot_max > crate::MAX_COUNT {
                crate::MAX_COUNT
            } else {
                l.slot_max
            }
        }
        None => 0,
    }
}

/// Slots in a probe of a table of `cap` slots.
pub(super) const fn probe_len(cap: usize) -> usize {
    if cap < PROBE {
        cap
    } else {
        PROBE
    }
}

/// Windows of grace for `N` windows: a slot is recyclable `N + GRACE`
/// windows after its newest window.
pub(super) const fn grace<const N: usize>() -> u64 {
    N as u64
}

/// The `i`-th slot of the probe starting at `home`, in a table of `cap`
/// slots.
#[inline(always)]
pub(super) fn at(cap: usize, home: usize, i: usize) -> usize {
    let j = home + i;
    if j >= cap {
        j - cap
    } else {
        j
    }
}

/// One decision on the gate word `w` (`packed::decide`) for a caller in
/// window `c`, on a slot whose key half (or demand tag) is `half`: the
/// half to store ([`bumped`]'s), the word to store, and the outcome. With
/// constant shifts on 64-bit targets, from the layout elsewhere (one copy
/// of the code on microcontrollers, as `Gate` does). No time: a keyed
/// table never borrows a later window, the only use `packed::decide` has
/// for one. `w` is a slot's value (used).
#[inline(always)]
pub(super) fn decide<const N: usize>(
    layout: &Layout,
    half: u64,
    w: u64,
    c: u64,
    n: u64,
) -> Option<(u64, u64, Outcome)> {
    #[cfg(target_pointer_width = "64")]
    let l = packed::Fixed::<u64, N, 0>::new(layout);
    #[cfg(not(target_pointer_width = "64"))]
    let l = layout;
    // A key decided again in its newest window, moved on by fewer than
    // `N` windows, or seen again after its windows slid out: no decoding
    // of the other windows.
    match packed::decide_fast_ahead(l, w, c, n) {
        (Fast::Book(new), d) => {
            // `bumped` with the fast path's `d` (`ahead_of`'s answer for
            // the used word `w`), not found twice.
            let demand = ((demand_of(half) >> d.min(8)) + n).min(255);
            Some(((half & !0xff) | demand, new, Outcome::Booked(c)))
        }
        (Fast::Full, _) => None,
        (Fast::Other, _) => packed::decide::<u64, N>(l, w, c, 0, n, false)
            .map(|(new, outcome)| (bumped(layout, half, w, c, n), new, outcome)),
    }
}

/// The empty gate word a key inserted by a caller in window `c` starts
/// with, given the table's high water: its newest window is
/// `max(c, high water) - N`, so a key that comes back after it was recycled never books where
/// its old permits still count (module docs, "Recycling").
pub(super) fn fresh<const N: usize>(layout: &Layout, c: u64, high_water: u64) -> u64 {
    packed::empty_at::<u64>(
        geometry::<N>(layout),
        c.max(high_water).saturating_sub(grace::<N>()),
    )
}

/// Whether the gate word `w` is recyclable by a caller in window `c`: its
/// newest window is `N + GRACE` windows or more before `c`.
pub(super) fn recyclable<const N: usize>(layout: &Layout, w: u64, c: u64) -> bool {
    matches!(packed::ahead_of(geometry::<N>(layout), w, c), Some(d) if d >= N as u64 + grace::<N>())
}

/// `remaining` from what a lookup at window `c` found: the key's gate
/// word, if any, and whether its probe has room for it otherwise.
pub(super) fn remaining_from<const N: usize>(
    l: &Layout,
    found: (Option<u64>, bool),
    overflow: Overflow,
    c: u64,
) -> u64 {
    match found {
        (Some(w), _) => l.limit.saturating_sub(packed::load_of::<u64, N>(l, w, c)),
        (None, true) => l.limit,
        (None, false) => match overflow {
            // (An evicting table with a memory finds room: it evicts.)
            Overflow::Refuse | Overflow::Evict => 0,
            Overflow::Admit => l.limit,
        },
    }
}

/// `retry_after(n)` (`1 <= n <= limit`) from what a lookup at window `c`
/// found (as [`remaining_from`]); `probe` gives the words of the key's
/// probe, read only for a key with no slot and no room.
pub(super) fn retry_after_from<const N: usize, I: Iterator<Item = u64>>(
    l: &Layout,
    found: (Option<u64>, bool),
    overflow: Overflow,
    c: u64,
    now: u64,
    n: u64,
    probe: impl FnOnce() -> I,
) -> Option<u64> {
    match found {
        (Some(w), _) => packed::retry_after_of::<u64, N>(l, w, now, n),
        (None, true) => Some(0),
        (None, false) => match overflow {
            Overflow::Admit => Some(0),
            // Every slot of the probe holds a gate word: the first to
            // become recyclable.
            Overflow::Refuse | Overflow::Evict => probe()
                .filter_map(|w| {
                    let newest = packed::newest_of(l, w, c);
                    let free = newest.checked_add(N as u64 + grace::<N>())?;
                    free.checked_mul(l.window.get())
                })
                .min()
                .map(|t| t.saturating_sub(now)),
        },
    }
}

/// A [`KeyedGate`]'s policy for its slot table: the gate words' layout,
/// the overflow policy, and the memory of evicted keys with the table-wide
/// counters (module docs).
pub(super) struct GatePolicy<const N: usize, W> {
    pub(super) layout: Layout,
    /// The seed keys are mixed with.
    pub(super) seed: u64,
    pub(super) overflow: Overflow,
    /// How the memory of evicted keys is cut.
    pub(super) shape: Shape,
    /// Written by insertions, recycling and overflows only: on cache lines
    /// of their own, away from what every decision reads.
    pub(super) shared: CachePadded<Shared>,
    /// The memory of evicted keys (`memory.rs`).
    pub(super) memory: Memory<AtomicU64, W>,
}

/// Raises the high water `hw` to `v` at least (`AcqRel`), with no
/// read-modify-write when it is there already (mostly: every eviction in a
/// window raises it to that window).
///
/// ORDERING: the load is `Acquire`, and the high water only rises: a
/// settler that synchronizes with this caller's later swap reads it after
/// this load in its modification order, so `v` or later, as it would
/// after a `fetch_max`.
#[inline]
fn raise(hw: &AtomicU64, v: u64) {
    if hw.load(Acquire) < v {
        hw.fetch_max(v, AcqRel);
    }
}

/// A [`KeyedGate`]'s table-wide counters.
pub(super) struct Shared {
    /// The newest window any recycler had reached when it recycled (0 if
    /// none): a key that comes back books no earlier than `N` windows
    /// before it.
    pub(super) high_water: AtomicU64,
    /// Slots recycled since the table was built.
    pub(super) recycled: AtomicU64,
    /// Decisions made under the overflow policy.
    pub(super) overflowed: AtomicU64,
    /// Keys evicted.
    pub(super) evicted: AtomicU64,
    /// Keys inserted with an estimate from the memory.
    pub(super) remembered: AtomicU64,
}

impl<const N: usize, W: Words<AtomicU64>> GatePolicy<N, W> {
    /// The word a key with fingerprint `fp` inserted now by a caller in
    /// window `c` starts from ([`start`], reading the high water after
    /// whatever the caller read of the probe), and whether the memory
    /// estimated it. The memory is read whatever the policy is now: a table
    /// that evicted under [`Overflow::Evict`] and then changed its policy
    /// still seeds the keys it evicted.
    pub(super) fn start_word(&self, fp: u64, c: u64) -> (u64, bool) {
        let hw = self.shared.high_water.load(Acquire);
        start::<_, _, N>(&self.layout, &self.memory, &self.shape, fp, c, hw)
    }
}

/// The context is the caller's window; the rank `value_of`'s.
impl<const N: usize, W: Words<AtomicU64>> Policy for GatePolicy<N, W> {
    type Context = u64;
    type Rank = u64;

    /// [`Overflow::Evict`], and a memory that can hold what it evicts.
    #[inline(always)]
    fn evicts(&self) -> bool {
        matches!(self.overflow, Overflow::Evict) && self.shape.remembers()
    }

    #[inline(always)]
    fn recyclable(&self, v: u64, c: u64) -> bool {
        recyclable::<N>(&self.layout, gate_word(v), c)
    }

    #[inline]
    fn rank(&self, tag: u8, v: u64, c: u64) -> u64 {
        value_of(
            geometry::<N>(&self.layout),
            slot(u64::from(tag), gate_word(v)),
            c,
        )
    }

    fn recycle(&self, _: u64, c: u64) {
        // ORDERING: before the swap that recycles, so a settler that reads
        // the recycled slot reads this too (module docs, "Recycling").
        raise(&self.shared.high_water, c);
    }

    // Out of line: inlined, its code sits in `Table::update_by_scan`, which
    // a burst's loop inlines, beside each decision of a burst, and costs
    // those decisions registers (benches/README, the Zen 5 sitting).
    #[inline(never)]
    fn evicting(&self, fp: u64, victim: u64, _: u64) {
        self.memory.touch(&self.shape, [victim, fp]);
    }

    fn fold(&self, fp: u64, _: u8, v: u64, c: u64) {
        let w = gate_word(v);
        // ORDERING: the high water reaches the evicted word's newest
        // window, and its counts are folded, before the swap that evicts:
        // a settler that reads the evicted slot reads both (module docs,
        // "Eviction"; `memory.rs`).
        let l = &self.layout;
        let newest = packed::newest_of(geometry::<N>(l), w, c);
        raise(&self.shared.high_water, c.max(newest));
        fold_into::<_, _, N>(l, &self.memory, &self.shape, fp, w, newest);
    }

    fn start(&self, fp: u64, c: u64) -> Start {
        let (word, remembered) = self.start_word(fp, c);
        Start {
            word: table_value(word),
            remembered,
        }
    }

    fn count(&self, event: Event) {
        let counter = match event {
            Event::Recycled => &self.shared.recycled,
            Event::Evicted => &self.shared.evicted,
            Event::Remembered => &self.shared.remembered,
        };
        counter.fetch_add(1, Relaxed);
    }
}
