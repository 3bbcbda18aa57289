//! The one-word gate: a window id and the pass counts of the windows that
//! matter, in one atomic word, decided with one compare-and-swap.
//!
//! # The word
//!
//! ```text
//!  high                                                                low
//!  | used | (0) | slot S-1 | ... | slot F | ... | slot 0 | newest id mod 2^T |
//!   1 bit          b bits           b bits        b bits       T bits
//! ```
//!
//! Slot `k` is for window `newest + F - k`: slots `F .. F + N` are the
//! `N` windows of the interval ending at the newest window, slots `0 ..
//! F` the `F` windows after it, which only borrowed permits (prioritized
//! requests told to [`Wait`](crate::gate::PriorityDecision::Wait)) can reach. Each slot
//! holds its window's passes, except the last, `S - 1` (the oldest
//! window's) when `N >= 2`: it holds the **total** of the interval
//! ending at the newest window (slots `F .. S`), so that a decision
//! reads the load it is judged by in one field; the oldest window's
//! passes are that total less the other live slots (`decode`). A
//! booking into the newest window adds `n` to its slot and to the total:
//! still one add to the word. Every slot is as wide as the word allows, `b = (W - 33) / (N +
//! F)` bits for a word of `W` bits (at most 48), so the layout depends on
//! the shape only and a decision's shifts are constants (`Fixed`); the
//! limit must fit in `b` bits, and no window of an admissible interval
//! holds more than the limit, so no slot overflows.
//! The top bit is set by every write: a word that is all zero has never
//! been used, and only such a word takes any caller's window as its newest
//! (a used word whose slots are all zero still has a newest window: older
//! windows that slid out of it may still share intervals with callers
//! older than it).
//!
//! # A decision
//!
//! Load the word; slide it to the caller's window `c` (the id moves to `c`,
//! the slots shift up by `c - newest` windows, and the ones that leave the
//! interval drop off); check every interval that contains the booking
//! window; compare-and-swap the new word in, or retry on failure with the
//! word the failed swap returned. A refusal writes nothing. Each admission
//! is one swap from the exact word it checked to the exact word it
//! booked, so the admissions form one sequence (the word's modification
//! order) in which each one saw every earlier one: the gate is
//! linearizable, with no rollback (so no false rejection) and with any
//! memory orderings (the proof uses only the atomicity of the swap, not
//! the order of accesses to other locations).
//!
//! The race this closes (Sentinel's check-then-act):
//!
//! ```text
//!  Thread 1                             Thread 2          (limit 10, 9 passed)
//!  -----------------------------------  ---------------------------------
//!  load w (9 passed); 9 + 1 <= 10
//!                                       load w (9 passed); 9 + 1 <= 10
//!  CAS w -> w + 1: succeeds
//!                                       CAS w -> w + 1: fails (w changed);
//!                                       retry with w + 1: 10 + 1 > 10, refuse
//! ```
//!
//! # The fast path
//!
//! A caller whose window is the word's newest decides from three fields,
//! without decoding (`decide_fast`, which `WordGate::acquire` and the
//! keyed tables try first): the id, the total, and the future slots. If
//! the total plus `n` is over the limit, it is refused (the interval
//! ending at the newest window contains the booking). If not, and the
//! future slots are zero, it books: every other interval containing the
//! newest window runs through future windows, so it holds zeros and a
//! part of the total. A caller for whom every window of the word slid out
//! (a key seen again after a while) books `n` into a word empty at its
//! window if `n` is within the limit. A caller a few windows (fewer than
//! `N`) after the newest of a word with no future windows (`F = 0`, as a
//! keyed table's) books into the word slid to its window: the one
//! interval it joins holds the counts that stay live. Otherwise (a late
//! caller, a word with future windows that moved on with counts still
//! live, borrowed permits in a future slot, a prioritized refusal) the
//! general decision runs. The window of `now` comes from the gate's hint when `now` falls
//! in the hinted window (`Gate::book_word`): a multiply instead of a
//! division. A gate's `try_acquire`, which wants no window back, needs
//! not even that: it tests `now` against the hinted window's start and
//! the word's newest window against that start
//! (`WordGate::acquire_started`), then decides as `decide_fast`'s first
//! case (`decide_newest`).
//!
//! # Late callers
//!
//! A caller whose window is older than the newest is booked into the newest
//! window: its permits count from the newest window on, no earlier than
//! its own, so every interval the gate checks still holds all of them. It
//! is refused only if the newest window's intervals are full.
//!
//! # Ids modulo 2^T
//!
//! The word keeps the newest id modulo `2^T`, and reads the caller's window
//! as `d = (c - newest) mod 2^T` windows ahead when `d < 2^(T-1)`, and as
//! `2^T - d` windows late otherwise. Every shape has `T >= 32`. Both
//! misreadings a modulus allows are stricter, never looser, as long as no
//! caller's window lags the newest by `2^(T-1)` windows or more:
//! - a caller `2^T k + d` windows ahead is read as `d` ahead: fewer windows
//!   slide out than should, so it may be refused, never admitted over the
//!   limit;
//! - after an idle of `2^T - l` windows (for `l < 2^(T-1)`), a caller is
//!   read as `l` windows late and booked into the stale newest window,
//!   whose counts have not slid out: the gate may refuse until the clock
//!   catches up with the stale id (at most `2^(T-1)` windows). A new gate
//!   is not affected: a never-used word takes any id.
//!
//! A caller whose clock lags the newest window by `2^(T-1)` windows or more
//! (a thread stalled that long between reading its clock and deciding) is
//! read as ahead, and its slide drops counts that are still live: beyond
//! that limit the gate can admit more than its limit.
//!
//! The same limit makes the swap's ABA harmless. The swap compares bits,
//! and a decision depends only on the bits and the caller's window, so a
//! swap that succeeds on bits the word returned to (a `cancel` lowers
//! counts) does what a fresh load would have done, unless the same bits
//! now mean a later window. A word whose newest window moved on by a
//! multiple of `2^T` windows can hold the bits it held before (every count
//! slid out, then the same bookings): a caller that loaded the old word
//! and swaps after such a move succeeds over permits it never saw. If its
//! window is where it read it (at most `2^(T-1)` windows from the old
//! newest), it now lags the new newest by more than `2^(T-1)` windows,
//! beyond the limit above; if it was read as ahead by aliasing, it reads
//! the new word the same way, which is no worse. So every shape keeps at
//! least 32 id bits, even where a larger limit would want them for slots:
//! with fewer (3 would give a `Gate<2>` with the default occupy timeout
//! slots for a limit of 1,000,000), even beside a second word bounding the
//! full id from above, a caller stalled while the word moves `2^T` windows
//! on (8 for `T = 3`) could admit over the limit.
//!
//! # The parts
//!
//! `layout.rs`: the word (integer types, atomic cells, where each field
//! sits, sliding and rewriting fields); `decide.rs`: [`WordGate`] and the
//! decision with its fast path; `read.rs`: what a word says without
//! deciding (loads, counts, when a request would fit); `tests.rs`.

mod decide;
mod layout;
mod read;
#[cfg(test)]
mod tests;

pub(crate) use decide::{decide, decide_fast_ahead, Answer, Fast, Outcome, WordGate};
#[cfg(target_pointer_width = "64")]
pub(crate) use layout::{Fixed, WordCell};
pub(crate) use layout::{Geometry, Layout};
pub(crate) use read::{
    ahead_of, count_at, empty_at, left_of, load_of, newest_of, reset_of, retry_after_of, word_with,
};
