//! The one place that names an atomic implementation: portable-atomic's
//! (the 128-bit slot word) and core's, or loom's under
//! `RUSTFLAGS="--cfg leaparray_loom"` (the models in `loom-tests/tests/governor.rs`).

#[cfg(not(leaparray_loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(leaparray_loom))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(leaparray_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

/// Loom builds: loom has no 128-bit atomic, so a slot is a word behind a
/// loom mutex. Each operation is one critical section, as atomic as a real
/// compare-and-swap, and lock/unlock give it acquire/release, all the slot
/// protocol uses; loom explores every interleaving of these sections.
#[cfg(leaparray_loom)]
pub(crate) struct AtomicU128(loom::sync::Mutex<u128>);

#[cfg(leaparray_loom)]
impl AtomicU128 {
    pub(crate) fn new(v: u128) -> Self {
        AtomicU128(loom::sync::Mutex::new(v))
    }

    pub(crate) fn load(&self, _: Ordering) -> u128 {
        *self.0.lock().unwrap()
    }

    pub(crate) fn compare_exchange(
        &self,
        cur: u128,
        new: u128,
        _: Ordering,
        _: Ordering,
    ) -> Result<u128, u128> {
        let mut v = self.0.lock().unwrap();
        if *v == cur {
            *v = new;
            Ok(cur)
        } else {
            Err(*v)
        }
    }
}
