//! Brute-force models of leaparray's documented semantics, and the
//! arbitrary inputs that drive the fuzz targets in `fuzz_targets/`.
//!
//! Each model is the slow and obvious form of what the crate's docs say:
//! a bucket is an `Option<(window id, counts)>`, a query walks the window
//! ids it covers. The window-id arithmetic follows the documented limits
//! exactly (ids compared modulo `2^Width::WINDOW_BITS`), so the targets can
//! use any time at all, `0` and `u64::MAX` included.

/// The array model lives with the crate's tests (`tests/model.rs` uses it
/// too), so there is one of it.
#[path = "../../tests/common/array_model.rs"]
pub mod array;
pub mod gate;
pub mod input;
pub mod metric;
