//! How a key becomes the 64-bit hash a table places: the seeded mix both
//! tables and the memory of evicted keys use ([`mix`]), and [`KeyHasher`]
//! for keys of any hashable type. Its own module because `slot.rs`,
//! `shared.rs` and `memory.rs` all use the mix and none of them owns it.

/// MurmurHash3's 64-bit finalizer: every input bit moves every output bit.
#[inline(always)]
pub(super) const fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Keys of any hashable type as the `u64` keys of a [`KeyedGate`](super::KeyedGate), with a
/// random secret key (std's `RandomState`, SipHash 1-3): a client cannot
/// choose keys that land in one probe. Two keys share a slot only if their
/// 64-bit hashes collide, or their tables' 56-bit fingerprints do within
/// one probe.
///
/// ```
/// # use core::num::NonZeroU64;
/// use leaparray::keyed::KeyHasher;
/// use leaparray::KeyedGate;
/// use leaparray::Decision;
/// static T: KeyedGate<2, 64> = KeyedGate::new(NonZeroU64::new(500).unwrap(), 1);
/// let keys = KeyHasher::new();
/// assert_eq!(T.try_acquire(keys.key("api-token-1"), 0, 1), Decision::Pass);
/// assert_eq!(T.try_acquire(keys.key("api-token-1"), 0, 1), Decision::Block);
/// assert_eq!(T.try_acquire(keys.key("api-token-2"), 0, 1), Decision::Pass);
/// ```
#[cfg(feature = "std")]
#[derive(Debug, Clone, Default)]
pub struct KeyHasher(std::collections::hash_map::RandomState);

#[cfg(feature = "std")]
impl KeyHasher {
    /// A hasher with a fresh random key.
    ///
    /// ```
    /// let a = leaparray::keyed::KeyHasher::new();
    /// assert_eq!(a.key(&42u32), a.key(&42u32));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        KeyHasher(std::collections::hash_map::RandomState::new())
    }

    /// The `u64` key of `key`.
    ///
    /// ```
    /// let a = leaparray::keyed::KeyHasher::new();
    /// assert_ne!(a.key("10.0.0.1"), a.key("10.0.0.2"));
    /// ```
    #[must_use]
    pub fn key<K: core::hash::Hash + ?Sized>(&self, key: &K) -> u64 {
        use core::hash::BuildHasher;
        self.0.hash_one(key)
    }
}
