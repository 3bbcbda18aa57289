//! The one place that names an atomic implementation for the memory of
//! evicted arrival times: core's, or loom's under
//! `RUSTFLAGS="--cfg leaparray_loom"` (the models in
//! `loom-tests/tests/governor.rs`). The slots are leaparray's
//! (`leaparray::keyed::Slot`), which follows the same cfg.

#[cfg(not(leaparray_loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};

#[cfg(leaparray_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
