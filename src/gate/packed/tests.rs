//! The word's tests: every shape's decisions against a plain model, the
//! fast path against the general decision, the readers against the word.

use super::decide::{decide, decide_fast, decide_fast_ahead, fits_total, Fast, Outcome};
use super::layout::{
    booking, decode, encode, pack, slide, slot, used, view, view_moved, with_slot, Bits, Fixed,
    Geometry, Layout, View,
};
use super::read::{ahead_of, left_of, load_of, peak};
use crate::gate::divide::Divisor;
use core::num::NonZeroU64;

/// xorshift64*: the tests' fixed pseudo-random sequence.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn layout(live: u32, window: u64, limit: u64, timeout: u64) -> Layout {
    let w = Divisor::new(NonZeroU64::new(window).unwrap());
    Layout::fit(64, live, w, limit, timeout).unwrap()
}

#[test]
fn slots_take_every_bit_the_shape_leaves() {
    // 64 bits: 1 used bit, at least 32 id bits, (N + F) slots of b.
    let l = layout(2, 500, 1_000, 500);
    assert_eq!((l.slot_bits, l.future, l.id_bits), (10, 1, 33));
    let l = layout(2, 500, 1_000, 0);
    assert_eq!((l.slot_bits, l.future, l.id_bits), (15, 0, 33));
    let l = layout(2, 500, 7, 0);
    assert_eq!(
        (l.slot_bits, l.id_bits),
        (15, 33),
        "the same for any limit that fits"
    );
    let w = Divisor::new(NonZeroU64::new(500).unwrap());
    assert!(
        Layout::fit(64, 2, w, 1 << 10, 500).is_none(),
        "11 bits > 31 / 3"
    );
    let l = Layout::fit(128, 2, w, 1 << 10, 500).unwrap();
    assert_eq!((l.slot_bits, l.id_bits), (31, 34));
    let l = Layout::fit(128, 1, w, 1, 0).unwrap();
    assert_eq!(
        (l.slot_bits, l.id_bits),
        (48, 64),
        "slots no wider than counts"
    );
}

/// `Fixed` gives the numbers `Layout::fit` computes.
#[cfg(target_pointer_width = "64")]
#[test]
fn fixed_geometry_is_the_layout() {
    fn same<B: Bits, const N: usize, const F: u32>(word_bits: u32) {
        let w = Divisor::new(NonZeroU64::new(10).unwrap());
        let l = Layout::fit(word_bits, N as u32, w, 1, u64::from(F) * 10).unwrap();
        let f = Fixed::<B, N, F>::new(&l);
        assert_eq!(
            (
                f.id_bits(),
                f.slot_bits(),
                f.id_mask(),
                f.slot_max(),
                f.slots()
            ),
            (l.id_bits, l.slot_bits, l.id_mask, l.slot_max, N as u32 + F)
        );
    }
    same::<u64, 1, 0>(64);
    same::<u64, 2, 1>(64);
    same::<u64, 10, 1>(64);
    same::<u64, 31, 0>(64);
    same::<u128, 1, 0>(128);
    same::<u128, 2, 1>(128);
    same::<u128, 60, 1>(128);
}

#[test]
fn the_last_slot_holds_the_interval_total() {
    // N = 3, F = 1: slot 0 borrowed, slots 1..4 the interval.
    let l = layout(3, 500, 100, 500);
    assert_eq!((l.future, l.slot_bits), (1, 7));
    let counts = 4u64 | (5 << 7) | (6 << 14) | (7 << 21);
    let fields = encode(&l, counts);
    assert_eq!(slot(&l, fields, 3), 5 + 6 + 7, "the total, not the 7");
    assert_eq!(decode(&l, fields), counts);
    let w = pack(&l, 9, counts);
    // (The view's slots keep the used bit above them.)
    let slots = |w: u64| view(&l, w, 9).slots & ((1 << 28) - 1);
    assert_eq!(slots(w), counts);
    // A booking into the newest window: its slot and the total.
    let booked = w + booking::<_, u64>(&l, 1, 2);
    assert_eq!(slots(booked), counts + (2 << 7));
    assert!(fits_total(&l, booked, 100 - 20) && !fits_total(&l, booked, 100 - 19));
    // N = 1: the only live slot is its own total.
    let l = layout(1, 500, 100, 0);
    assert_eq!(encode(&l, 42u64), 42);
}

/// `view` before its inline branch for words whose windows all slid
/// out: the newest window's case inline, every other to `view_moved`.
fn view_before<B: Bits>(l: impl Geometry, w: B, c: u64) -> View<B> {
    let d = c.wrapping_sub(w.low_u64()) & l.id_mask();
    if d == 0 {
        View {
            newest: c,
            slots: decode(l, w >> l.id_bits()),
            base: w | used::<B>(),
        }
    } else {
        view_moved(l, w, c, d)
    }
}

/// `view` gives what it gave before the inline branch, for never-used
/// words, packed words, raw words (with and without the used bit) and
/// callers at every distance around the slots' reach and the id's
/// half range and wrap, in every 64-bit shape with `N <= 4`, `F <= 2`
/// (by `Layout` and by `Fixed`), and in 128-bit shapes.
#[test]
#[cfg_attr(
    miri,
    ignore = "plain integer arithmetic on word values in safe code: nothing for Miri to check that the native run does not (`--include-ignored` runs a small case)"
)]
fn view_is_what_it_was_before_the_inline_branch() {
    fn same<B: Bits + core::fmt::Debug>(l: impl Geometry, w: B, c: u64) {
        let (a, b) = (view(l, w, c), view_before(l, w, c));
        assert!(
            a.newest == b.newest && a.slots == b.slots && a.base == b.base,
            "w {w:?} c {c}: {a:?} against {b:?}"
        );
    }
    fn words_and_callers<B: Bits + core::fmt::Debug>(
        l: impl Geometry,
        rng: &mut Rng,
        rounds: usize,
        mut check: impl FnMut(B, u64),
    ) {
        let mask = l.id_mask();
        let half = mask >> 1;
        let s = u64::from(l.slots());
        let far = [
            1,
            s.saturating_sub(1),
            s,
            s + 1,
            half - 1,
            half,
            half + 1,
            half + 2,
            mask - s,
            mask - 1,
            mask,
            mask.wrapping_add(1),
            mask.wrapping_add(s),
        ];
        for r in 0..rounds {
            // Ids near 0, near the wrap, and anywhere.
            let id = match r % 3 {
                0 => rng.next() % 4,
                1 => mask - rng.next() % 4,
                _ => rng.next(),
            };
            // Counts within the limit per interval, or any fields.
            let mut counts = B::ZERO;
            for k in 0..l.slots() {
                let v = rng.next() % (l.limit() + 1) / u64::from(l.live());
                counts = with_slot(l, counts, k, v);
            }
            let raw = (B::from_u64(rng.next()) << (64 % B::BITS)) | B::from_u64(rng.next());
            let words = [
                B::ZERO,
                pack(l, id, counts),
                pack(l, id, B::ZERO),
                raw | used::<B>(),
                raw & !used::<B>(),
                B::ONES,
            ];
            for w in words {
                let newest = w.low_u64() & mask;
                let base = if r % 2 == 0 { newest } else { id };
                for d in 0..s + 3 {
                    check(w, base.wrapping_add(d));
                    check(w, base.wrapping_sub(d));
                }
                for d in far {
                    check(w, base.wrapping_add(d));
                    check(w, base.wrapping_sub(d));
                }
                check(w, rng.next());
                check(w, u64::MAX - rng.next() % 4);
            }
        }
    }
    let rounds = if cfg!(miri) { 2 } else { 300 };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (windows, limits): (&[u64], &[u64]) = if cfg!(miri) {
        (&[7], &[3])
    } else {
        (&[1, 7, 500, u64::MAX], &[0, 1, 3])
    };
    for &window in windows {
        let w = Divisor::new(NonZeroU64::new(window).unwrap());
        for n in 1u32..=4 {
            for f in 0u64..=2 {
                let timeout = f.saturating_mul(window);
                for &limit in limits {
                    let Some(l) = Layout::fit(64, n, w, limit, timeout) else {
                        continue;
                    };
                    words_and_callers::<u64>(&l, &mut rng, rounds, |x, c| same(&l, x, c));
                    #[cfg(target_pointer_width = "64")]
                    {
                        macro_rules! fixed {
                            ($(($nn:literal, $ff:literal)),*) => {$(
                                if (l.live, l.future) == ($nn, $ff) {
                                    let g = Fixed::<u64, $nn, $ff>::new(&l);
                                    words_and_callers::<u64>(g, &mut rng, rounds, |x, c| same(g, x, c));
                                }
                            )*};
                        }
                        fixed!(
                            (1, 0),
                            (1, 1),
                            (2, 0),
                            (2, 1),
                            (2, 2),
                            (3, 0),
                            (3, 1),
                            (3, 2),
                            (4, 0),
                            (4, 1),
                            (4, 2)
                        );
                    }
                    if let Some(l) = Layout::fit(128, n, w, limit, timeout) {
                        words_and_callers::<u128>(&l, &mut rng, rounds.div_ceil(4), |x, c| {
                            same(&l, x, c)
                        });
                    }
                }
            }
        }
    }
}

/// Where `decide_fast` answers, the general decision answers the same,
/// on words a gate can reach: random walks of decisions (prioritized
/// ones borrowing future windows too) from a never-used word, each
/// word checked for callers at every distance around the slots' reach
/// and the id's half range and wrap, and for `n` of 1, about half the
/// limit, the limit, and (in a 64-bit word) over it; every 64-bit
/// shape with `N <= 4`, `F <= 2`, by `Layout` and by `Fixed`.
#[test]
#[cfg_attr(
    miri,
    ignore = "plain integer arithmetic on word values in safe code: nothing for Miri to check that the native run does not (`--include-ignored` runs a small case)"
)]
fn the_fast_path_answers_as_the_general_decision() {
    fn walk<const N: usize>(l: impl Geometry, rng: &mut Rng, steps: usize) -> usize {
        let (mask, s) = (l.id_mask(), u64::from(l.slots()));
        let half = mask >> 1;
        let window = l.window().get();
        let mut checked = 0;
        let mut check = |w: u64, c: u64| {
            assert_eq!(
                left_of::<u64, N>(l, w, c),
                l.limit().saturating_sub(load_of::<u64, N>(l, w, c)),
                "w {w:#x} c {c}"
            );
            for n in [1, l.limit() / 2 + 1, l.limit(), l.limit() + 1] {
                let general = decide::<u64, N>(l, w, c, c.saturating_mul(window), n, false);
                let (fast, ahead) = decide_fast_ahead(l, w, c, n);
                assert_eq!(fast, decide_fast(l, w, c, n));
                match fast {
                    Fast::Book(new) => {
                        assert_eq!(
                            general,
                            Some((new, Outcome::Booked(c))),
                            "w {w:#x} c {c} n {n}"
                        );
                        if w != 0 {
                            assert_eq!(Some(ahead), ahead_of(l, w, c), "w {w:#x} c {c}");
                        }
                        checked += 1;
                    }
                    Fast::Full => {
                        assert_eq!(general, None, "w {w:#x} c {c} n {n}");
                        checked += 1;
                    }
                    Fast::Other => {}
                }
            }
        };
        for start in [0, mask - 2, rng.next() % (1 << 40)] {
            let (mut w, mut c) = (0u64, start);
            for _ in 0..steps {
                let newest = w.low_u64() & mask;
                for d in (0..s + 3).chain([half - 1, half, half + 1, mask]) {
                    check(w, newest.wrapping_add(d));
                    check(w, newest.wrapping_sub(d));
                }
                check(w, c);
                // The next decision of the walk.
                c = c.wrapping_add(match rng.next() % 8 {
                    0..=3 => 0,
                    4 | 5 => 1,
                    6 => rng.next() % (s + 2),
                    _ => s + rng.next() % 3,
                });
                let n = 1 + rng.next() % l.limit();
                let prioritized = rng.next().is_multiple_of(3);
                let now = c.saturating_mul(window) + rng.next() % window;
                if let Some((new, _)) = decide::<u64, N>(l, w, c, now, n, prioritized) {
                    w = new;
                }
            }
        }
        checked
    }
    // Under Miri (minutes otherwise), a few steps of one window and limit.
    let (steps, windows, limits): (usize, &[u64], &[u64]) = if cfg!(miri) {
        (1, &[7], &[3])
    } else {
        (400, &[1, 7, 500], &[1, 3, 7, 100])
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut checked = 0;
    for &window in windows {
        let wd = Divisor::new(NonZeroU64::new(window).unwrap());
        for f in 0u64..=2 {
            for &limit in limits {
                macro_rules! shapes {
                    ($($nn:literal),*) => {$(
                        if let Some(l) = Layout::fit(64, $nn, wd, limit, f * window) {
                            checked += walk::<$nn>(&l, &mut rng, steps);
                            #[cfg(target_pointer_width = "64")]
                            {
                                macro_rules! fixed {
                                    ($ff:literal) => {
                                        if l.future == $ff {
                                            let g = Fixed::<u64, $nn, $ff>::new(&l);
                                            checked += walk::<$nn>(g, &mut rng, steps);
                                        }
                                    };
                                }
                                fixed!(0);
                                fixed!(1);
                                fixed!(2);
                            }
                        }
                    )*};
                }
                shapes!(1, 2, 3, 4);
            }
        }
    }
    assert!(checked > steps, "only {checked} fast answers checked");
}

#[test]
fn peak_covers_the_borrowed_windows() {
    let l = layout(2, 500, 10, 500);
    // slot 0: window newest + 1 (borrowed 4), slot 1: newest (3),
    // slot 2: newest - 1 (6).
    let slots = 4u64 | (3 << 10) | (6 << 20);
    assert_eq!(peak::<_, 2>(&l, slots, 1), 9, "max(3 + 6, 4 + 3)");
    assert_eq!(
        peak::<_, 2>(&l, slots, 0),
        7,
        "the borrowed window's interval"
    );
    assert_eq!(slide(&l, slots, 1), (4 << 10) | (3 << 20));
    assert_eq!(slide(&l, slots, 3), 0);
}
