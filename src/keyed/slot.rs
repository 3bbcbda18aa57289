//! The slot protocol of both keyed tables, argued once: what a slot
//! holds, where a key's slots are (its probe), one decision on a slot's
//! gate word, when a slot may be recycled and what a key inserted after a
//! recycling starts from, which key an eviction takes the slot of and
//! what an evicted key starts from when it comes back; and, for the shared
//! [`KeyedGate`], how threads that race to insert one key keep it in one
//! slot (claims and settling).
//! A [`LocalKeyedGate`](super::LocalKeyedGate) uses everything here but
//! the claims: its owner is the only writer.
//!
//! # A slot
//!
//! A [`Slot`] is 128 bits: the *key half* in the high 64, the *word* in
//! the low 64. The key half is the key's 56-bit *fingerprint* above an
//! 8-bit *demand* counter: every decision adds its `n` (saturating at 255;
//! a refusal too, under eviction, until the counter saturates), and the
//! counter halves for each window the word's newest window moves on. The
//! word is
//!
//! | word | state |
//! |---|---|
//! | `0` | free |
//! | top bit ([`USED`]) set | the key's gate word (`packed`'s layout with `F = 0`, no future windows) |
//! | otherwise | a *claim* of a free slot for the key, not settled yet: a token unique to that claim, with the claim's probe position in its low 4 bits (shared table only) |
//!
//! `locate(seed, key)` gives a key's *home*, Lemire's reduction of the top
//! bits of a seeded mix of the key, and its fingerprint, 56 bits of an odd
//! multiple of that mix. Its *probe* is its home and the `probe_len(CAP) -
//! 1` slots after it, wrapping (`at`). A slot holds a key if it holds its
//! fingerprint: two keys with one fingerprint in one probe are one key to
//! the table (they share a limit: each is refused more, never admitted
//! more); a lookup meets a resident's fingerprint with probability at most
//! `16 * 2^-56`. A settler of another key's claim finds that key's home
//! from the claim's position, as a fingerprint does not give it. The
//! invariant both tables keep: at most one slot of a key's probe holds its
//! gate word.
//!
//! # One slot per key: claims and settling
//!
//! A key's probe has several slots, and whether a slot is recyclable
//! depends on the caller's clock. So two threads inserting the same key
//! can disagree on which slot is the first free one:
//!
//! ```text
//!  Thread 1 (now = t)                    Thread 2 (now = t + 3 windows)
//!  -----------------------------------   -----------------------------------
//!  scan K's probe: slot 0 holds key X,
//!  live at t; slot 1 free
//!                                        scan K's probe: slot 0 holds X,
//!                                        idle for 2N windows at t + 3: take it
//!                                        swap slot 0: X -> K
//!  swap slot 1: free -> K
//!  K is in two slots: each admits up to the limit
//! ```
//!
//! So an insertion first writes a *claim*, and a claim becomes the key's
//! gate word only once it is *settled*: every other slot of the probe is
//! read, and
//! - if one holds the key's gate word, or an earlier claim of the key (in
//!   probe order), this claim is withdrawn (swapped back to free);
//! - a later claim of the key is withdrawn by this settler;
//! - otherwise the claim is swapped for an empty gate word.
//!
//! Withdrawing and settling swap from the exact claim (its token is unique:
//! a table-wide counter), so a claim settles at most once, and never after
//! it was withdrawn. Any thread that meets a claim settles it (the claiming
//! thread may be preempted, or be the code an interrupt handler
//! interrupted), so no thread ever waits for another.
//!
//! Why two claims of one key never both settle: say claims at probe
//! positions `i < j` both did. The settler of `j` read slot `i` and did not
//! see the claim there (it would have withdrawn `j`), so claim `i` was
//! written after that read, after claim `j` was written. The settler of `i`
//! then read slot `j` after claim `j` was written: it saw the claim (and
//! withdrew it, so `j` never settled) or its gate word (and withdrew `i`).
//! Either way one of them did not settle. A settled word and a later claim
//! are the same argument with the settled word in place of the claim. These
//! races are loom models (`loom-tests/tests/keyed.rs`).
//!
//! # Recycling never hands a key a fresh limit
//!
//! A recycled key's permits count in windows at least `2N` before the
//! recycler's window `r`. Before recycling, the recycler raises the
//! table's *high-water* window to `r` at least; a claim settles into an
//! empty word whose newest window is `max(caller, high water) - N`. A
//! caller earlier than that window is a late caller and books into it (as a
//! [`Gate`](crate::Gate) books its late callers). So a key that comes back after it was
//! recycled counts its new permits in windows at least `r - N`, and no
//! interval of `N` windows holds both its old and its new permits. Both
//! tables start a new key's word at [`fresh`].
//!
//! The recycler's swap releases the slot, and the settler read that slot
//! (it reads every slot of the probe) with acquire before reading the high
//! water: the high water it reads is at least `r`. (A local table's
//! owner raises its high water and writes the slot itself.)
//!
//! # Eviction: a key's counts outlive its slot
//!
//! Under [`Overflow::Evict`] a key that finds no free or recyclable slot in
//! its probe takes the slot of the least valued key there (`value_of`: its
//! demand halved once per window since its newest, then the older newest
//! window, then probe position). The victim choice reads the probe slot by
//! slot, not atomically: it may miss the least, which costs quality, not
//! safety, as every victim is folded before it goes. Before the swap that
//! evicts, the evictor raises the high water to the victim's newest window
//! (and its own) and folds each of the victim's window counts into the
//! memory of evicted keys (`memory.rs`: a maximum per cell, so folding a
//! key twice never adds). It then swaps the victim's exact slot (key half
//! and word) for a claim, and settles it as any claim. A local table takes
//! the victim's newest window no later than the newest window it decided
//! in (a word read later is `2^(T-1)` windows or more behind, its id
//! misread), shifting all its counts by the same amount: counts folded
//! later than they were booked are still conservative, as the comeback
//! starts at the high water, at or after each folded window, and reads
//! every window of the intervals that hold the real counts.
//!
//! A settler starts its key from the memory: after reading every slot of
//! the probe, it reads the high water `h'` and, for `h = max(c, h')`, the
//! estimate of each window `h - N + 1 ..= h`; a key with a nonzero estimate
//! starts with newest window `h` and those counts (all the limit in window
//! `h` if they sum above it), so a booking lands at `h` or later and every
//! interval it joins holds the estimates of the windows it shares with the
//! key's evicted counts, which all lie at or before `h`. With no estimate a
//! key starts at [`fresh`] as after a recycling.
//!
//! ```text
//!  Thread 1 (key V decides)              Thread 2 (key K evicts V)
//!  -----------------------------------   -----------------------------------
//!  reads V's slot: (V, w)                reads V's slot: (V, w)
//!                                        high water: fetch_max(newest of w)
//!                                        folds w's counts into the memory
//!  swaps (V, w) -> (V, w + 1 booked)     swaps (V, w) -> (K, claim)
//! ```
//!
//! Exactly one swap wins, as both compare the whole slot. If thread 1's
//! does, thread 2's fold was of an older count of V (cells only rise, and
//! V stays resident; a later eviction folds again) and thread 2 scans
//! again. If thread 2's does, thread 1 scans again, finds V gone, inserts
//! it, and its settler reads the estimate after reading the evicted slot:
//! every write to a slot is a compare-and-swap, so that read synchronizes
//! with thread 2's swap, and the fold and the high water are visible. Had
//! thread 2 folded after its swap, or thread 1 read the estimate before its
//! scan, V could start from 0 and take its limit again (loom models
//! `an_eviction_races_a_decision_of_the_evicted_key` and
//! `a_returning_key_reads_its_estimate_while_it_is_folded`). An evicting
//! scan evicts rather than settle another key's claim in its way first.
//! A local table runs the same steps in one thread.

use core::num::NonZeroU64;

use super::memory::{Memory, Shape, Word};
use super::{KeyedError, KeyedGate, Overflow, PROBE};
use crate::divide::Divisor;
use crate::packed::{self, Fast, Layout, Outcome};
use crate::sync::{
    Ordering::{AcqRel, Acquire, Relaxed},
    PortableAtomicU128,
};

/// A slot of a [`KeyedGate`]: the key in the high 64 bits, the word in the
/// low 64 (module docs, "A slot": free, a gate word with [`USED`] set, or
/// a claim's token). Invariant: at most one slot of a key's probe holds
/// its gate word (module docs, "One slot per key"). A
/// [`LocalKeyedGate`](super::LocalKeyedGate) keeps the same two halves as
/// `[key, word]` in plain memory.
pub(super) type Slot = PortableAtomicU128;

/// The top bit of a slot's word: set in every gate word.
pub(super) const USED: u64 = 1 << 63;

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

/// A claim's word (a token), as opposed to a gate word or a free slot.
#[inline(always)]
pub(super) const fn is_claim(w: u64) -> bool {
    w != 0 && w & USED == 0
}

/// The probe position a claim's word was made for (its low 4 bits: a
/// settler of another key's claim finds the key's home from it, as a
/// fingerprint does not give it).
#[inline(always)]
pub(super) const fn claim_position(w: u64) -> usize {
    (w & 0xf) as usize
}

/// The home slot and the fingerprint of `key` under `seed` in a table of
/// `CAP` slots: the home from the top bits of the key's mix (Lemire's
/// multiply-shift: uniform over `0..CAP`, no division), the fingerprint
/// 56 bits of an odd multiple of the mix (so no function of the home).
#[inline(always)]
pub(super) fn locate<const CAP: usize>(seed: u64, key: u64) -> (usize, u64) {
    let m = mix(key ^ seed);
    (
        ((u128::from(m) * CAP as u128) >> 64) as usize,
        m.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8,
    )
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

/// What an eviction values the slot `s` at, for a caller in window `c`:
/// the least is evicted first. Its demand halved per window since its
/// newest, then the older newest window.
#[inline]
pub(super) fn value_of(l: &Layout, s: u128, c: u64) -> (u64, u64) {
    let w = word(s);
    let d = packed::ahead_of(l, w, c).unwrap_or(0).min(8);
    (demand_of(key_of(s)) >> d, packed::newest_of(l, w, c))
}

/// Folds the gate word `w` of the key with fingerprint `fp`, evicted by a
/// caller in window `c`, into `memory`: each of its windows' counts, its
/// count for window `newest_of(w) - k` into window `newest - k` (`newest`:
/// the word's newest window, or a later one the high water has reached:
/// folding later is conservative, module docs, "Eviction").
pub(super) fn fold_into<C: Word, const N: usize, const CAP: usize>(
    l: &Layout,
    memory: &Memory<C, CAP>,
    shape: &Shape,
    fp: u64,
    w: u64,
    newest: u64,
) {
    for k in 0..N as u32 {
        if let Some(window) = newest.checked_sub(u64::from(k)) {
            memory.fold(shape, fp, window, packed::count_at(l, w, k));
        }
    }
}

/// The gate word a key with fingerprint `fp`, inserted by a caller in
/// window `c` with the table's high water `high_water`, starts with when
/// the memory has an estimate for it: newest window `h = max(c, high
/// water)`, each window `h - k` holding the estimate of that window (all
/// the limit in window `h` if they sum above it). The windows `h - 2N + 1
/// ..= h - N` are read too: a key that starts at [`fresh`] (newest window
/// `h - N`) books a late caller into window `h - N`, whose intervals reach
/// back to `h - 2N + 1`; an estimate there starts the key at window `h`
/// instead. `None`: no estimate in those `2N` windows, the key starts at
/// [`fresh`].
pub(super) fn seeded<C: Word, const N: usize, const CAP: usize>(
    l: &Layout,
    memory: &Memory<C, CAP>,
    shape: &Shape,
    fp: u64,
    c: u64,
    high_water: u64,
) -> Option<u64> {
    let h = c.max(high_water);
    let mut est = [0u64; 64];
    let (mut live, mut any) = (0u64, false);
    for (k, e) in est.iter_mut().enumerate().take(2 * N) {
        if let Some(window) = h.checked_sub(k as u64) {
            *e = memory.estimate(shape, fp, window);
            any |= *e != 0;
            if k < N {
                live = live.saturating_add(*e);
            }
        }
    }
    if !any {
        return None;
    }
    Some(if live > l.limit {
        packed::word_with::<u64>(l, h, |k| if k == 0 { l.limit } else { 0 })
    } else {
        packed::word_with::<u64>(l, h, |k| est[k as usize])
    })
}

/// MurmurHash3's 64-bit finalizer: every input bit moves every output bit.
#[inline(always)]
pub(super) const fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
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

/// Slots in a probe of a table of `CAP` slots.
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

/// The `i`-th slot of the probe starting at `home`.
#[inline(always)]
pub(super) fn at<const CAP: usize>(home: usize, i: usize) -> usize {
    let j = home + i;
    if j >= CAP {
        j - CAP
    } else {
        j
    }
}

/// One decision on the gate word `w` (`packed::decide`) for a caller in
/// window `c`: with constant shifts on 64-bit targets, from the layout
/// elsewhere (one copy of the code on microcontrollers, as `Gate` does).
/// No time: a keyed table never borrows a later window, the only use
/// `packed::decide` has for one.
#[inline(always)]
pub(super) fn decide<const N: usize>(
    layout: &Layout,
    w: u64,
    c: u64,
    n: u64,
) -> Option<(u64, Outcome)> {
    #[cfg(target_pointer_width = "64")]
    let l = packed::Fixed::<u64, N, 0>::new(layout);
    #[cfg(not(target_pointer_width = "64"))]
    let l = layout;
    // A key decided again in its newest window, or seen again after its
    // windows slid out: no decoding of the other windows.
    match packed::decide_fast(l, w, c, n) {
        Fast::Book(new) => Some((new, Outcome::Booked(c))),
        Fast::Full => None,
        Fast::Other => packed::decide::<u64, N>(l, w, c, 0, n, false),
    }
}

/// The empty gate word a key inserted by a caller in window `c` starts
/// with, given the table's high water: its newest window is
/// `max(c, high water) - N`, so a key that comes back after it was recycled never books where
/// its old permits still count (module docs, "Recycling").
pub(super) fn fresh<const N: usize>(layout: &Layout, c: u64, high_water: u64) -> u64 {
    packed::empty_at::<u64>(layout, c.max(high_water).saturating_sub(grace::<N>()))
}

/// Whether the gate word `w` is recyclable by a caller in window `c`: its
/// newest window is `N + GRACE` windows or more before `c`.
pub(super) fn recyclable<const N: usize>(layout: &Layout, w: u64, c: u64) -> bool {
    matches!(packed::ahead_of(layout, w, c), Some(d) if d >= N as u64 + grace::<N>())
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

/// The shared table's side of the protocol: booking, claims, settling.
impl<const N: usize, const CAP: usize> KeyedGate<N, CAP> {
    /// [`book_from`](Self::book_from), taking `first` at its word. `fp`:
    /// the key's fingerprint.
    #[inline(always)]
    pub(super) fn book_scan(
        &self,
        fp: u64,
        home: usize,
        mut first: Option<u128>,
        c: u64,
        n: u64,
    ) -> Booking {
        if n == 0 {
            return Booking::Nothing;
        }
        let l = &self.layout;
        if n > l.limit {
            // Never admitted: no slot for it either.
            return Booking::Refused;
        }
        let evicts = self.evicts();
        'scan: loop {
            // This pass's read of the home slot, if it is `first`.
            let early = first;
            // The first slot a new key may take, the slot an eviction would
            // take, and a claim of another key in the way (settled before
            // overflowing, so a table with room never overflows for a claim
            // in flight; an evicting table evicts instead).
            let mut room = None;
            let mut claim = None;
            let mut victim: Option<(usize, u128, (u64, u64))> = None;
            for i in 0..Self::PROBE {
                let at = Self::at(home, i);
                let mut s = match first.take() {
                    Some(s) => s,
                    None => self.slots[at].load(Acquire),
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
                        self.settle(fp, home, i, s, c);
                        continue 'scan;
                    }
                    // The key's gate word: decide as its gate.
                    loop {
                        let w = word(s);
                        let half = key_of(s);
                        let next = match self.decide(w, c, n) {
                            Some((new, outcome)) => {
                                Ok((slot(bumped(l, half, w, c, n), new), new, outcome))
                            }
                            // A refusal counts in the key's demand (while
                            // the counter is below saturation).
                            None if evicts && demand_of(half) < 255 => {
                                Err(slot((half & !0xff) | (demand_of(half) + n).min(255), w))
                            }
                            None => return Booking::Refused,
                        };
                        let new_slot = match next {
                            Ok((ns, _, _)) | Err(ns) => ns,
                        };
                        // ORDERING: Release publishes the booking as a
                        // gate's swap does; a failed swap rereads.
                        match self.slots[at].compare_exchange(s, new_slot, AcqRel, Acquire) {
                            Ok(_) => {
                                let Ok((_, new, outcome)) = next else {
                                    return Booking::Counted;
                                };
                                // No prioritized request borrows here.
                                let at = match outcome {
                                    Outcome::Booked(w) => w,
                                    Outcome::Borrowed { .. } | Outcome::Refused => c,
                                };
                                return Booking::In { at, word: new };
                            }
                            Err(actual) => s = actual,
                        }
                        if fp_of(key_of(s)) != fp || word(s) & USED == 0 {
                            // Recycled, evicted, or withdrawn: look again.
                            continue 'scan;
                        }
                    }
                }
                if is_claim(w) {
                    if claim.is_none() {
                        claim = Some((at, s));
                    }
                } else if room.is_none() {
                    if self.recyclable(w, c) {
                        room = Some((at, s));
                    } else if evicts {
                        let v = value_of(l, s, c);
                        if victim.is_none_or(|(_, _, least)| v < least) {
                            victim = Some((at, s, v));
                        }
                    }
                }
            }
            if (room.is_some() || victim.is_some())
                && early.is_some_and(|s| self.slots[home].load(Acquire) != s)
            {
                // The home slot's value came from before a burst's earlier
                // requests, and they changed it (the key may be there
                // now): look again rather than take a slot for nothing.
                continue 'scan;
            }
            if let Some((at, s)) = room {
                let recycling = word(s) != 0;
                if recycling {
                    // ORDERING: before the swap that evicts, so a settler
                    // that reads the evicted slot reads this too (module
                    // docs, "Recycling").
                    self.shared.high_water.fetch_max(c, AcqRel);
                }
                let i = (at + CAP - home) % CAP;
                let mine = slot(half_of(fp), self.token(i));
                if self.slots[at]
                    .compare_exchange(s, mine, AcqRel, Acquire)
                    .is_ok()
                {
                    if recycling {
                        self.shared.recycled.fetch_add(1, Relaxed);
                    }
                    self.settle(fp, home, i, mine, c);
                }
                continue 'scan;
            }
            if let Some((at, s, _)) = victim {
                let w = word(s);
                // ORDERING: the high water reaches the evicted word's
                // newest window, and its counts are folded, before the
                // swap that evicts: a settler that reads the evicted slot
                // reads both (module docs, "Eviction"; `memory.rs`).
                let newest = packed::newest_of(l, w, c);
                self.shared.high_water.fetch_max(c.max(newest), AcqRel);
                fold_into::<_, N, CAP>(l, &self.memory, &self.shape, fp_of(key_of(s)), w, newest);
                let i = (at + CAP - home) % CAP;
                let mine = slot(half_of(fp), self.token(i));
                if self.slots[at]
                    .compare_exchange(s, mine, AcqRel, Acquire)
                    .is_ok()
                {
                    self.shared.evicted.fetch_add(1, Relaxed);
                    self.settle(fp, home, i, mine, c);
                }
                continue 'scan;
            }
            if let Some((at, s)) = claim {
                // Another key's claim: settle it, then look again.
                let j = claim_position(word(s));
                let other_home = (at + CAP - j) % CAP;
                self.settle(fp_of(key_of(s)), other_home, j, s, c);
                continue 'scan;
            }
            return Booking::Overflowed;
        }
    }

    /// Whether a key with no room evicts: the policy is
    /// [`Overflow::Evict`] and the memory can hold what it evicts.
    #[inline(always)]
    pub(super) fn evicts(&self) -> bool {
        matches!(self.overflow, Overflow::Evict) && self.shape.remembers()
    }

    /// [`decide`] with this table's layout.
    #[inline(always)]
    fn decide(&self, w: u64, c: u64, n: u64) -> Option<(u64, Outcome)> {
        decide::<N>(&self.layout, w, c, n)
    }

    /// A claim token no claim had, for probe position `i`: nonzero, top
    /// bit clear, `i` in its low 4 bits.
    fn token(&self, i: usize) -> u64 {
        let t = self.shared.tokens.fetch_add(1, Relaxed) % ((1 << 58) - 1) + 1;
        (t << 4) | i as u64
    }

    /// Whether the gate word `w` is recyclable by a caller in window `c`:
    /// its newest window is `N + GRACE` windows or more before `c`.
    pub(super) fn recyclable(&self, w: u64, c: u64) -> bool {
        recyclable::<N>(&self.layout, w, c)
    }

    /// The word a key with fingerprint `fp` inserted now by a caller in
    /// window `c` starts from: its estimate if the memory holds one
    /// (reading the high water after whatever the caller read of the
    /// probe), else [`fresh`]. And whether it was an estimate. The memory
    /// is read whatever the policy is now: a table that evicted under
    /// [`Overflow::Evict`] and then changed its policy still seeds the keys
    /// it evicted.
    pub(super) fn start_word(&self, fp: u64, c: u64) -> (u64, bool) {
        let hw = self.shared.high_water.load(Acquire);
        if self.shape.remembers() {
            if let Some(w) = seeded::<_, N, CAP>(&self.layout, &self.memory, &self.shape, fp, c, hw)
            {
                return (w, true);
            }
        }
        (fresh::<N>(&self.layout, c, hw), false)
    }

    /// Settles the claim `mine` of the key with fingerprint `fp` and home
    /// `home` at position `i` of its probe (module docs): withdraws it if
    /// the probe holds the key's gate word or an earlier claim of it,
    /// withdraws later claims of it, and otherwise swaps it for the key's
    /// starting word (an empty one, or its estimate). Whoever meets a
    /// claim may call this; all but one of the swaps from `mine` fail.
    fn settle(&self, fp: u64, home: usize, i: usize, mine: u128, c: u64) {
        let at = Self::at(home, i);
        for j in 0..Self::PROBE {
            if j == i {
                continue;
            }
            let other = Self::at(home, j);
            let mut s = self.slots[other].load(Acquire);
            loop {
                let w = word(s);
                if fp_of(key_of(s)) != fp || w == 0 {
                    break;
                }
                if w & USED != 0 || j < i {
                    // The key's gate word, or an earlier claim: this one
                    // goes (a failed swap: it had already gone, or settled
                    // by someone who saw none of this).
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
        let (start, remembered) = self.start_word(fp, c);
        if self.slots[at]
            .compare_exchange(mine, slot(half_of(fp), start), AcqRel, Acquire)
            .is_ok()
            && remembered
        {
            self.shared.remembered.fetch_add(1, Relaxed);
        }
    }

    /// The gate word the key with fingerprint `fp` holds (the first slot
    /// of its probe that holds it), if any, and whether its probe has room
    /// for it otherwise. Under eviction, a key with no slot is given the
    /// word it would start from, and room.
    pub(super) fn find(&self, fp: u64, home: usize, c: u64) -> (Option<u64>, bool) {
        let mut room = false;
        for i in 0..Self::PROBE {
            let s = self.slots[Self::at(home, i)].load(Acquire);
            let w = word(s);
            if w != 0 && fp_of(key_of(s)) == fp {
                if is_claim(w) {
                    // A claim settles into its starting word.
                    room = true;
                    break;
                }
                return (Some(w), true);
            }
            room |= w == 0 || is_claim(w) || self.recyclable(w, c);
        }
        match self.start_word(fp, c) {
            (w, true) => (Some(w), true),
            _ => (None, room || self.evicts()),
        }
    }
}
