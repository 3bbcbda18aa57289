//! [`Divisor`]: `now / window` as two multiplies and an add.
//!
//! A gate divides `now` by its window (on 64-bit targets only when `now`
//! is not in the window the gate remembers, `Gate::book_word`). A 64-bit
//! `div` costs tens of cycles on x86-64 cores (35 to 90 by the vendors'
//! latency tables), more than the rest of a decision; the window is fixed when the gate is built, so the
//! quotient can be computed with a precomputed reciprocal instead (Lemire,
//! Kaser and Kurz, "Faster remainder by direct computation", 2019,
//! theorem 1): with `c = ceil(2^128 / d)`, `n / d = (c * n) >> 128` for
//! every 64-bit `n`, because `c * d - 2^128 < d <= 2^64`. `c` takes 128
//! bits, so the product is two 64 x 64 multiplies and an add, with no
//! shift by a variable amount. `d = 1` (where `c` would be `2^128`) is
//! `n` itself.
//!
//! Written here because the crate that does this (`strength_reduce`) cannot
//! build its divisors in a `const fn`, and a `static` gate needs one.

use core::num::NonZeroU64;

/// `n / d` for one fixed `d`, exact for every `n: u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Divisor {
    /// The divisor itself (for the products `id * d`).
    d: u64,
    /// `ceil(2^128 / d)` (0 for `d = 1`, which does not use it).
    c: u128,
}

impl Divisor {
    /// The reciprocal of `d`.
    pub(crate) const fn new(d: NonZeroU64) -> Self {
        let d = d.get();
        // For d >= 2: floor((2^128 - 1) / d) + 1 = ceil(2^128 / d), whether
        // or not d divides 2^128.
        let c = if d == 1 { 0 } else { u128::MAX / d as u128 + 1 };
        Divisor { d, c }
    }

    /// The divisor.
    pub(crate) const fn get(self) -> u64 {
        self.d
    }

    /// The divisor, as it was given.
    pub(crate) const fn nonzero(self) -> NonZeroU64 {
        match NonZeroU64::new(self.d) {
            Some(d) => d,
            // `new` took a NonZeroU64.
            None => NonZeroU64::MIN,
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub(crate) const fn div(self, n: u64) -> u64 {
        if self.d == 1 {
            return n;
        }
        // (c * n) >> 128 = (c_hi * n + ((c_lo * n) >> 64)) >> 64.
        let low = ((self.c as u64 as u128) * n as u128) >> 64;
        let high = ((self.c >> 64) as u64 as u128) * n as u128;
        ((high + low) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(d: u64, n: u64) {
        let q = Divisor::new(NonZeroU64::new(d).unwrap()).div(n);
        assert_eq!(q, n / d, "{n} / {d}");
    }

    /// Divisors at and around every power of two, and numerators at and
    /// around every multiple boundary near 0, the divisor and `u64::MAX`.
    #[test]
    fn exact_at_the_edges() {
        let mut ds = std::vec![1u64, 3, 5, 7, 10, 100, 500, 641, 1_000, 1_000_000_007];
        for k in 1..64 {
            let p = 1u64 << k;
            ds.extend([p - 1, p, p + 1]);
        }
        ds.extend([u64::MAX, u64::MAX - 1, u64::MAX / 3, (1 << 63) + 12_345]);
        for &d in &ds {
            let mut ns = std::vec![
                0,
                1,
                2,
                d - 1,
                d,
                d.saturating_add(1),
                u64::MAX,
                u64::MAX - 1
            ];
            for q in [1u64, 2, 3, 1_000, u64::MAX / d] {
                let base = q.saturating_mul(d);
                ns.extend([base.saturating_sub(1), base, base.saturating_add(1)]);
            }
            ns.extend([
                u64::MAX - u64::MAX % d,
                (u64::MAX - u64::MAX % d).wrapping_sub(1),
            ]);
            for n in ns {
                check(d, n);
            }
        }
    }

    #[cfg(not(miri))]
    proptest::proptest! {
        #[test]
        fn exact_for_any_pair(d in 1u64.., n: u64, small_d in 1u64..5_000, small_n in 0u64..10_000_000) {
            check(d, n);
            check(small_d, n);
            check(d, small_n);
            check(small_d, small_n);
        }
    }
}
