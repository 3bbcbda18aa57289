//! The paired word: a 64-bit gate word that keeps only a few bits of its
//! window id, beside a second word, the guard, that bounds its newest
//! window's full id from above.
//!
//! # Why
//!
//! A limit of a million over two windows with one future window needs
//! three slots of 20 bits: 61 bits with the used bit, which leaves 3 for
//! the id. Kept alone, ids modulo `2^3` would misread a caller 4 windows
//! late as ahead and slide live counts out. The guard gives back the full
//! id, so the decision still swaps one 64-bit word.
//!
//! # The guard
//!
//! `guard` holds a window id `A`. Invariant: **`A` is at least the full id
//! `n` of the newest window of every word the cell has held**, because
//! every swap that moves the word to a newer window `c` is preceded, in its
//! thread, by `guard.fetch_max(c)` (or by a load of the guard that already
//! read `c` or more), and the swap is a release that the next reader's
//! load of the word acquires, before it loads the guard.
//!
//! A reader with word `w` (id `w mod 2^T`) and guard `a` takes as the
//! newest window `e`, the largest id at most `a` that is `w`'s id modulo
//! `2^T`: `e = a - ((a - w) mod 2^T)`. Then `e >= n` (since `n <= a` and
//! `n` is such an id), with equality while `a - n < 2^T`.
//!
//! # What a reader does with `e`
//!
//! With `e` and the caller's full window `c`, the reader presents the
//! word's decision and reads (`view`, `decide`, the reads of `read.rs`)
//! with a distance they read exactly modulo `2^T` (`2^(T-1) > S`,
//! [`paired_id_bits`](super::layout::paired_id_bits)):
//! - `c - e < 2^(T-1)` ahead, or at most `2^(T-1)` late: as they are;
//! - further ahead: every window slid out, so the word is read as a
//!   never-used word (empty, takes `c` as its newest);
//! - further late: as a caller 1 window late. A late caller is booked into
//!   the newest window and answered the same however late it is, and its
//!   view (`newest = c + 1 = e`) is the same.
//!
//! The swap still expects the word as loaded, so a change by anyone in
//! between fails it, and the loop starts over from the word it returns.
//! So a paired gate decides as the one-word gate does (module "A
//! decision"), with every distance exact when `e = n`, and it has no lag
//! limit: a caller any number of windows late is booked into the newest.
//!
//! # When `e` is too new, and why that is only stricter
//!
//! `e > n` (by a multiple of `2^T`) while a thread has raised the guard
//! for a move of `2^T` windows or more and its swap has not landed: the
//! first callers after an idle of at least `2^T` windows, racing. Then a
//! reader takes the counts from before the idle as counts of window `e`:
//! more recent than they are, so the error can refuse, never admit over
//! the limit (`n <= e` is all the exactness proof needs: each admission is
//! a swap from the word it checked, and the counts it checked are at least
//! the counts that are live). A reader that books or moves the word keeps
//! them as window `e`'s (sliding them as its windows pass), and `e <= A`,
//! a window some caller asked for: so they count in no interval that ends
//! `N` windows or more after the latest window any caller has asked for.

//! The race the order of the two writes prevents (`T = 3`, a word last
//! moved at window 8, `A = 8`):
//!
//! ```text
//!  Thread 1 (window 20)                 Thread 2 (window 19)
//!  -----------------------------------  ---------------------------------
//!  load w (id 0), A = 8: e = 8;
//!  20 - 8 >= 4: all slid out
//!  fetch_max(A, 20)
//!  CAS w -> (id 20 mod 8 = 4, 1 booked)
//!                                       load w (id 4), A = 20: e = 20;
//!                                       19 is 1 late: booked into 20
//! ```
//!
//! Had thread 1 raised `A` after its swap, thread 2 could read the new
//! word with `A = 8`: `e = 4`, and window 19 would read as 15 windows
//! ahead, every count slid out: its booking would ignore thread 1's.

use super::decide::{decide, Outcome, WordGate};
#[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
use super::decide::{decide_newest, Answer, Fast};
use super::layout::{decode, encode, pack, slot, view, with_slot, Geometry, WordCell};
use super::read::{count_of, load_of, peak, retry_after_in};
use crate::sync::AtomicU64;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed};

/// A gate in a paired word: the word ([`WordGate`]'s cell) and its guard.
#[derive(Clone, Copy)]
pub(crate) struct Paired<'a> {
    pub(crate) word: &'a WordGate<AtomicU64>,
    /// Encoding: a full window id. Invariant: the module's "The guard".
    pub(crate) guard: &'a AtomicU64,
}

/// A word as a caller sees it (the module's "What a reader does with
/// `e`"): the word and window to decide or read with, and the newest
/// window the word holds once a booking from `c` lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) word: u64,
    pub(crate) c: u64,
    pub(crate) newest: u64,
}

/// The word `w` with guard `a`, seen from window `c`.
#[inline(always)]
pub(crate) fn seen(l: impl Geometry, w: u64, a: u64, c: u64) -> Seen {
    if w == 0 {
        return Seen {
            word: 0,
            c,
            newest: c,
        };
    }
    let mask = l.id_mask();
    let half = (mask >> 1) + 1;
    let e = a.wrapping_sub(a.wrapping_sub(w) & mask);
    if c >= e {
        let word = if c - e < half { w } else { 0 };
        Seen { word, c, newest: c }
    } else {
        let c = if e - c <= half { c } else { e - 1 };
        Seen {
            word: w,
            c,
            newest: e,
        }
    }
}

impl Paired<'_> {
    /// The common case of `WordGate::acquire` for a paired word, inline:
    /// `now` is in the guard's window and the word's id is the guard's
    /// (then `e` is that window, the caller's), and `decide_newest`
    /// answers; `None` if the general decision
    /// ([`decide_from`](Self::decide_from)) must run. (The caller makes
    /// that call itself, with its own arguments: a tail call with no
    /// moves.)
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    #[inline(always)]
    pub(crate) fn acquire_fast<R: Answer>(
        self,
        l: impl Geometry,
        now: u64,
        n: u64,
        prioritized: bool,
    ) -> Option<R> {
        debug_assert!(n >= 1 && n <= l.limit());
        let cur = self.word.cell().load(Acquire);
        // ORDERING: after the word's acquire (the module's "The guard").
        let a = self.guard.load(Relaxed);
        let d = l.window().get();
        // `a * d` does not wrap: `a` is some caller's window.
        if now.wrapping_sub(a.wrapping_mul(d)) < d && (a ^ cur) & l.id_mask() == 0 {
            match decide_newest(l, cur, n) {
                Fast::Full if !prioritized => return Some(R::refused()),
                Fast::Book(new) if self.word.cell().cas_weak(cur, new, AcqRel, Acquire).is_ok() => {
                    return Some(R::booked(a));
                }
                _ => {}
            }
        }
        None
    }

    /// The decision from a word `cur` read from the cell (the guard is read
    /// after it, in the loop).
    #[inline(never)]
    pub(crate) fn decide_from<const N: usize>(
        self,
        now: u64,
        n: u64,
        l: impl Geometry,
        mut cur: u64,
        prioritized: bool,
    ) -> Outcome {
        let c = l.window().div(now);
        loop {
            let a = self.guard.load(Relaxed);
            let s = seen(l, cur, a, c);
            let Some((new, outcome)) = decide::<u64, N>(l, s.word, s.c, now, n, prioritized) else {
                return Outcome::Refused;
            };
            self.raise(a, s.newest);
            match self.word.cell().cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return outcome,
                Err(actual) => cur = actual,
            }
        }
    }

    /// The guard raised to `newest` before a swap that may move the word
    /// there (`a`: the guard as this caller read it).
    #[inline(always)]
    fn raise(self, a: u64, newest: u64) {
        if newest > a {
            // ORDERING: before the swap, which releases it to every reader
            // of the new word (the module's "The guard").
            self.guard.fetch_max(newest, Relaxed);
        }
    }

    /// The word and guard, and the word seen from window `c`.
    #[inline(always)]
    fn load(self, l: impl Geometry, c: u64) -> (u64, Seen) {
        let w = self.word.cell().load(Acquire);
        let a = self.guard.load(Relaxed);
        (w, seen(l, w, a, c))
    }

    /// `WordGate::record` for a paired word.
    pub(crate) fn record<const N: usize>(self, l: impl Geometry, now: u64, n: u64) -> bool {
        let c = l.window().div(now);
        let mut cur = self.word.cell().load(Acquire);
        loop {
            let a = self.guard.load(Relaxed);
            let s = seen(l, cur, a, c);
            let v = view(l, s.word, s.c);
            // As `WordGate::record`.
            let room = l
                .slot_max()
                .saturating_sub(peak::<_, N>(l, v.slots, l.future()));
            let added = n.min(room);
            let have = slot(l, v.slots, l.future());
            let new = pack(l, v.newest, with_slot(l, v.slots, l.future(), have + added));
            self.raise(a, s.newest);
            match self.word.cell().cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return added == n,
                Err(actual) => cur = actual,
            }
        }
    }

    /// `WordGate::cancel` for a paired word, with full ids: takes back `n`
    /// booked into `window` if the word still holds it.
    pub(crate) fn cancel(self, l: impl Geometry, window: u64, n: u64) {
        let mut cur = self.word.cell().load(Acquire);
        loop {
            if cur == 0 {
                return;
            }
            let a = self.guard.load(Relaxed);
            let e = a.wrapping_sub(a.wrapping_sub(cur) & l.id_mask());
            let k = if window >= e && window - e <= u64::from(l.future()) {
                l.future() - (window - e) as u32
            } else if window < e && e - window < u64::from(l.live()) {
                l.future() + (e - window) as u32
            } else {
                return;
            };
            let counts = decode(l, cur >> l.id_bits());
            let have = slot(l, counts, k);
            let new_counts = encode(l, with_slot(l, counts, k, have.saturating_sub(n)));
            let new = (new_counts << l.id_bits()) | (cur & l.id_mask());
            match self.word.cell().cas_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// `WordGate::load` for a paired word.
    pub(crate) fn peek<const N: usize>(self, l: impl Geometry, now: u64) -> u64 {
        let (_, s) = self.load(l, l.window().div(now));
        load_of::<u64, N>(l, s.word, s.c)
    }

    /// `WordGate::count` for a paired word: 0 for a window more than
    /// `2^(T-1)` before the newest (`seen` presents it as 1 late), whose
    /// interval holds none of the word's windows (`2^(T-1) > S`).
    pub(crate) fn count(self, l: impl Geometry, now: u64) -> u64 {
        let c = l.window().div(now);
        let (_, s) = self.load(l, c);
        if s.c != c {
            return 0;
        }
        count_of(l, s.word, s.c)
    }

    /// `WordGate::retry_after` for a paired word.
    pub(crate) fn retry_after<const N: usize>(
        self,
        l: impl Geometry,
        now: u64,
        n: u64,
    ) -> Option<u64> {
        let (_, s) = self.load(l, l.window().div(now));
        retry_after_in::<u64, N>(l, s.word, s.c, now, n)
    }
}
