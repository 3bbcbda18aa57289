//! The slot protocol of both keyed tables, argued once: what a slot
//! holds, where a key's slots are (its probe), one decision on a slot's
//! gate word, when a slot may be recycled and what a key inserted after a
//! recycling starts from; and, for the shared [`KeyedGate`], how threads
//! that race to insert one key keep it in one slot (claims and settling).
//! A [`LocalKeyedGate`](super::LocalKeyedGate) uses everything here but
//! the claims: its owner is the only writer.
//!
//! # A slot
//!
//! A [`Slot`] is 128 bits: the key in the high 64, the *word* in the low
//! 64. The word is
//!
//! | word | state |
//! |---|---|
//! | `0` | free |
//! | top bit ([`USED`]) set | the key's gate word (`packed`'s layout with `F = 0`, no future windows) |
//! | otherwise | a *claim* of a free slot for the key, not settled yet: a token unique to that claim (shared table only) |
//!
//! A key's *home* is `home_of(seed, key)`, a seeded mix of the key; its
//! *probe* is its home and the `probe_len(CAP) - 1` slots after it,
//! wrapping (`at`). The invariant both tables keep: at most one slot of a
//! key's probe holds its gate word.
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

use core::num::NonZeroU64;

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

/// The slot holding `key` and `word`.
#[inline(always)]
const fn slot(key: u64, word: u64) -> u128 {
    ((key as u128) << 64) | word as u128
}

/// A claim's word (a token), as opposed to a gate word or a free slot.
#[inline(always)]
const fn is_claim(w: u64) -> bool {
    w != 0 && w & USED == 0
}

/// MurmurHash3's 64-bit finalizer: every input bit moves every output bit.
#[inline(always)]
const fn mix(mut h: u64) -> u64 {
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

/// The slot where `key`'s probe starts in a table of `CAP` slots.
#[inline(always)]
pub(super) fn home_of<const CAP: usize>(seed: u64, key: u64) -> usize {
    // Lemire's multiply-shift: uniform over 0..CAP, no division.
    ((u128::from(mix(key ^ seed)) * CAP as u128) >> 64) as usize
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
            Overflow::Refuse => 0,
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
            Overflow::Refuse => probe()
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
    /// [`book_from`](Self::book_from), taking `first` at its word.
    #[inline(always)]
    pub(super) fn book_scan(
        &self,
        key: u64,
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
        'scan: loop {
            // Whether this pass's read of the home slot is `first`.
            let early = first.is_some();
            // The first slot a new key may take, and a claim of another key
            // in the way (settled before overflowing, so a table with room
            // never overflows for a claim in flight).
            let mut room = None;
            let mut claim = None;
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
                if key_of(s) == key {
                    if is_claim(w) {
                        self.settle(key, i, s, c);
                        continue 'scan;
                    }
                    // The key's gate word: decide as its gate.
                    loop {
                        let w = word(s);
                        let Some((new, outcome)) = self.decide(w, c, n) else {
                            return Booking::Refused;
                        };
                        // ORDERING: Release publishes the booking as a
                        // gate's swap does; a failed swap rereads.
                        match self.slots[at].compare_exchange(s, slot(key, new), AcqRel, Acquire) {
                            Ok(_) => {
                                // No prioritized request borrows here.
                                let at = match outcome {
                                    Outcome::Booked(w) => w,
                                    Outcome::Borrowed { .. } | Outcome::Refused => c,
                                };
                                return Booking::In { at, word: new };
                            }
                            Err(actual) => s = actual,
                        }
                        if key_of(s) != key || word(s) & USED == 0 {
                            // Recycled, or withdrawn: look again.
                            continue 'scan;
                        }
                    }
                }
                if is_claim(w) {
                    if claim.is_none() {
                        claim = Some((i, s));
                    }
                } else if room.is_none() && self.recyclable(w, c) {
                    room = Some((at, s));
                }
            }
            if let Some((at, s)) = room {
                let recycling = word(s) != 0;
                if recycling && early && at == home && self.slots[at].load(Acquire) != s {
                    // The home slot's value came from before a burst's
                    // earlier requests, and they changed it: look again
                    // rather than raise the high water for nothing.
                    continue 'scan;
                }
                if recycling {
                    // ORDERING: before the swap that evicts, so a settler
                    // that reads the evicted slot reads this too (module
                    // docs, "Recycling").
                    self.shared.high_water.fetch_max(c, AcqRel);
                }
                let mine = slot(key, self.token());
                if self.slots[at]
                    .compare_exchange(s, mine, AcqRel, Acquire)
                    .is_ok()
                {
                    if recycling {
                        self.shared.recycled.fetch_add(1, Relaxed);
                    }
                    let i = (at + CAP - home) % CAP;
                    self.settle(key, i, mine, c);
                }
                continue 'scan;
            }
            if let Some((i_other, s)) = claim {
                // Another key's claim: settle it, then look again.
                let other = key_of(s);
                let at = Self::at(home, i_other);
                let j = (at + CAP - self.home(other)) % CAP;
                self.settle(other, j, s, c);
                continue 'scan;
            }
            return Booking::Overflowed;
        }
    }

    /// [`decide`] with this table's layout.
    #[inline(always)]
    fn decide(&self, w: u64, c: u64, n: u64) -> Option<(u64, Outcome)> {
        decide::<N>(&self.layout, w, c, n)
    }

    /// A claim token no claim had: nonzero, top bit clear.
    fn token(&self) -> u64 {
        self.shared.tokens.fetch_add(1, Relaxed) % (USED - 1) + 1
    }

    /// Whether the gate word `w` is recyclable by a caller in window `c`:
    /// its newest window is `N + GRACE` windows or more before `c`.
    pub(super) fn recyclable(&self, w: u64, c: u64) -> bool {
        recyclable::<N>(&self.layout, w, c)
    }

    /// Settles the claim `mine` of `key` at position `i` of its probe
    /// (module docs): withdraws it if the probe holds the key's gate word
    /// or an earlier claim of it, withdraws later claims of it, and
    /// otherwise swaps it for an empty gate word. Whoever meets a claim may
    /// call this; all but one of the swaps from `mine` fail.
    fn settle(&self, key: u64, i: usize, mine: u128, c: u64) {
        let home = self.home(key);
        let at = Self::at(home, i);
        for j in 0..Self::PROBE {
            if j == i {
                continue;
            }
            let other = Self::at(home, j);
            let mut s = self.slots[other].load(Acquire);
            loop {
                let w = word(s);
                if key_of(s) != key || w == 0 {
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
        let empty = fresh::<N>(&self.layout, c, self.shared.high_water.load(Acquire));
        let _ = self.slots[at].compare_exchange(mine, slot(key, empty), AcqRel, Acquire);
    }

    /// The gate word `key` holds (the first slot of its probe that holds
    /// it), if any, and whether its probe has room for it otherwise.
    pub(super) fn find(&self, key: u64, c: u64) -> (Option<u64>, bool) {
        let home = self.home(key);
        let mut room = false;
        for i in 0..Self::PROBE {
            let s = self.slots[Self::at(home, i)].load(Acquire);
            let w = word(s);
            if w != 0 && key_of(s) == key {
                // A claim settles into an empty word.
                return (if is_claim(w) { None } else { Some(w) }, true);
            }
            room |= w == 0 || is_claim(w) || self.recyclable(w, c);
        }
        (None, room)
    }
}
