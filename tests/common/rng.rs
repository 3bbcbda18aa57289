//! xorshift64*: the integration tests' pseudo-random walks (a fixed seed
//! replays a failure). Included with `#[path]`, as the models are.

/// A xorshift64* generator; the seed must not be 0.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (`n > 0`; modulo bias is fine for tests).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
