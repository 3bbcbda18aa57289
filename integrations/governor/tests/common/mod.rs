//! What more than one test file of this crate uses.

use std::hash::{BuildHasher, Hasher};

/// A hash that is the key (`u32` and `u64` keys), so a test picks the
/// slots its keys go to: in a table of 64 slots, keys `1..=17` all have
/// home 0, so 16 of them fill one probe.
#[derive(Clone, Copy, Default)]
pub struct Id;

/// [`Id`]'s hasher.
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("u32 and u64 keys only")
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = u64::from(v);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl BuildHasher for Id {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}
