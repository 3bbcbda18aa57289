//! What a word says without deciding: the load a booking would meet,
//! the count of an interval, when a request would fit, and words built for
//! a window.

use super::layout::{
    decode, is_plain, pack, slide, slot, start_of, total_slot, view, with_slot, Bits, Geometry,
};

/// What a caller in window `c` could still take from word `w`: `limit`
/// less [`load_of`], read from the interval total without decoding the
/// word when `c` is its newest window and it is plain (the interval
/// ending at `c` is then the fullest, as in [`decide_fast`]); the word a
/// booking just stored, in the keyed tables.
#[inline(always)]
pub(crate) fn left_of<B: Bits, const N: usize>(l: impl Geometry, w: B, c: u64) -> u64 {
    if c.wrapping_sub(w.low_u64()) & l.id_mask() == 0 && is_plain(l, w) {
        let at = l.id_bits() + total_slot(l) * l.slot_bits();
        // The shifted word is the used bit's share of `total_limit` plus
        // the total (see `fits_total`).
        l.layout().total_limit.saturating_sub((w >> at).low_u64())
    } else {
        l.limit().saturating_sub(load_of::<B, N>(l, w, c))
    }
}

/// [`retry_after_of`] for the whole limit, on a plain word whose newest
/// window `newest` holds a booking (the word a keyed table's booking just
/// stored): the limit fits once that window has slid out of every slot,
/// and not before.
#[inline(always)]
pub(crate) fn reset_of(l: impl Geometry, newest: u64, now: u64) -> Option<u64> {
    start_of(l, newest, u64::from(l.slots())).map(|t| t.saturating_sub(now))
}

/// The fullest interval a booking in window `c` would join, in word `w`.
pub(crate) fn load_of<B: Bits, const N: usize>(l: impl Geometry, w: B, c: u64) -> u64 {
    peak::<_, N>(l, view(l, w, c).slots, l.future())
}

/// Passes in the interval of `N` windows ending at window `c`, in word `w`.
pub(crate) fn count_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> u64 {
    let v = view(l, w, c);
    let late = v.newest.saturating_sub(c);
    let first = u64::from(l.future()).saturating_add(late);
    let mut total = 0;
    let mut k = first;
    while k < first + u64::from(l.live()) && k < u64::from(l.slots()) {
        total += slot(l, v.slots, k as u32);
        k += 1;
    }
    total
}

/// Ticks from `now` until `n` (`1 ..= limit`) would be admitted by word
/// `w` if nothing else arrived; `None` if that window would start after
/// `u64::MAX`.
pub(crate) fn retry_after_of<B: Bits, const N: usize>(
    l: impl Geometry,
    w: B,
    now: u64,
    n: u64,
) -> Option<u64> {
    let v = view(l, w, l.window().div(now));
    // After `S` windows every slot has slid out, and `n <= limit` fits.
    let mut j = 0;
    while j < u64::from(l.slots()) && !fits::<_, N>(l, slide(l, v.slots, j), l.future(), n) {
        j += 1;
    }
    if j == 0 {
        return Some(0);
    }
    // Positive: the newest window is the caller's own or a later one.
    Some(start_of(l, v.newest, j)? - now)
}

/// Windows from the newest window of the used word `w` to window `c`, if
/// `c` is that window or a later one (read modulo `2^T`, as a decision
/// reads it); `None` if `c` is earlier (a late caller) or `w` was never
/// used.
pub(crate) fn ahead_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> Option<u64> {
    let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
    (w != B::ZERO && d <= l.id_mask() >> 1).then_some(d)
}

/// The newest window of the used word `w`, read from window `c` (its
/// full id, as a decision reads it modulo `2^T`).
pub(crate) fn newest_of<B: Bits>(l: impl Geometry, w: B, c: u64) -> u64 {
    match ahead_of(l, w, c) {
        Some(d) => c.saturating_sub(d),
        None => view(l, w, c).newest,
    }
}

/// The count the used word `w` (no future windows) holds for its window
/// `newest - k` (`k < N`).
pub(crate) fn count_at<B: Bits>(l: impl Geometry, w: B, k: u32) -> u64 {
    slot(l, decode(l, w >> l.id_bits()), k)
}

/// A used word (no future windows) whose newest window is `newest`, with
/// `count(k)` in its window `newest - k` for each `k < N`; the counts'
/// sum at most the limit.
pub(crate) fn word_with<B: Bits>(l: impl Geometry, newest: u64, count: impl Fn(u32) -> u64) -> B {
    let mut slots = B::ZERO;
    let mut k = 0;
    while k < l.slots() {
        slots = with_slot(l, slots, k, count(k).min(l.slot_max()));
        k += 1;
    }
    pack(l, newest, slots)
}

/// A used word whose newest window is `newest` and whose slots are empty.
pub(crate) fn empty_at<B: Bits>(l: impl Geometry, newest: u64) -> B {
    pack(l, newest, B::ZERO)
}

/// The fullest interval of `N` windows that contains slot `s`'s window, of
/// those the word describes: the intervals ending at that window and at
/// each later one the word holds (slots `s, s - 1, .. 0`, at most `N`);
/// later intervals hold a subset of these.
///
/// `s <= F`, so every slot read is below `F + N`: no shift reaches the
/// word's width.
#[inline(always)]
pub(super) fn peak<B: Bits, const N: usize>(l: impl Geometry, slots: B, s: u32) -> u64 {
    debug_assert!(s <= l.future());
    let n = N as u32;
    let at = |k: u32| (slots >> (k * l.slot_bits())).low_u64() & l.slot_max();
    // The interval ending at slot `s`: slots s .. s + N.
    let mut sum = 0;
    for i in 0..n {
        sum += at(s + i);
    }
    let mut peak = sum;
    // Move the end one window later at a time: slot e enters, slot e + N
    // leaves.
    for j in 1..n.min(s + 1) {
        let e = s - j;
        sum = sum + at(e) - at(e + n);
        peak = peak.max(sum);
    }
    peak
}

/// Whether `n` more in slot `s` keeps every interval within the limit.
#[inline(always)]
pub(super) fn fits<B: Bits, const N: usize>(l: impl Geometry, slots: B, s: u32, n: u64) -> bool {
    peak::<B, N>(l, slots, s).saturating_add(n) <= l.limit()
}
