//! Brute-force models of leaparray's documented semantics, and the
//! arbitrary inputs that drive the fuzz targets in `fuzz_targets/`.
//!
//! Each model is the slow and obvious form of what the crate's docs say:
//! a bucket is an `Option<(window id, counts)>`, a query walks the window
//! ids it covers. The window-id arithmetic follows the documented limits
//! exactly (ids compared modulo `2^Width::WINDOW_BITS`), so the targets can
//! use any time at all, `0` and `u64::MAX` included.

// The models live with the crate's tests (`tests/model.rs` uses the array
// model, `tests/gate.rs` all three), so there is one of each.
#[path = "../../tests/common/array_model.rs"]
pub mod array;
#[path = "../../tests/common/breaker_model.rs"]
pub mod breaker;
#[path = "../../tests/common/gate_model.rs"]
pub mod gate;
pub mod input;
#[path = "../../tests/common/metric_model.rs"]
pub mod metric;
