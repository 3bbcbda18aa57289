//! # leaparray
//!
//! Alibaba Sentinel's sliding-window `LeapArray`, rebuilt lock-free,
//! `no_std` and allocation-free.
//!
//! A [`LeapArray<N, C>`](LeapArray) is a ring of `N` time buckets of `window`
//! ticks each, with `C` counters per bucket. Callers pass the time in (any
//! monotonic tick: ms, µs, CPU cycles); an [`add`](LeapArray::add) lands in
//! the window of its time, lazily retiring whatever older window its bucket
//! held; a [`sum`](LeapArray::sum) totals the `N` most recent windows.
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::LeapArray;
//!
//! const PASS: usize = 0;
//! const BLOCK: usize = 1;
//! // One second as two windows of 500 ms, two counters per window.
//! static STATS: LeapArray<2, 2> = LeapArray::new(NonZeroU64::new(500).unwrap());
//!
//! let now_ms = 1_250;
//! STATS.add(now_ms, PASS, 1).unwrap();
//! STATS.add(now_ms, BLOCK, 1).unwrap();
//! assert_eq!(STATS.sum(now_ms, PASS), 1);
//! assert_eq!(STATS.sums(now_ms), [1, 1]);
//! ```
//!
//! ## The exactness contract
//!
//! Under any interleaving of threads, or of interrupt handlers on one core:
//! 1. An `add` that returns `Ok` is counted in its window, and stays counted
//!    until that window is retired by its bucket moving forward.
//! 2. An `add` whose window is already retired returns
//!    [`AddError::Stale`] and changes nothing any reader can see: a late add
//!    never leaks into a newer window, and a lagging clock never moves a
//!    bucket backwards or wipes newer counts.
//! 3. A reader never sees a mix: every count it reports belongs to the
//!    window it reports it for. (A read of several windows is not one atomic
//!    snapshot: each window is read on its own.)
//! 4. No operation waits for another thread: no lock, no spinning on someone
//!    else's progress. Reads finish in a bounded number of steps.
//! 5. Nothing panics, on any input.
//!
//! How: every counter word carries the generation of its bucket and a
//! *sealed* bit; a roll-over seals the old window's counters before it moves
//! the bucket's stamp, so an add either lands before the seal or fails. The
//! protocol, its interleaving table and its limits are documented in
//! [`protocol`]; `loom-tests/` model-checks it. `GUARANTEES.md`
//! in the repository states the whole contract: what is and is not one
//! atomic step, progress per target, and the time and count ranges.
//!
//! ## Features
//!
//! | feature | effect |
//! |---|---|
//! | `std` | `std::error::Error` for the error types |
//! | `defmt` | `defmt::Format` for every public type |
//! | `portable-atomic` | 64-bit atomics from `portable-atomic` (targets without native ones) |
//! | `portable-atomic-critical-section` | the above, through a `critical-section` implementation (targets without CAS) |
//!
//! None is enabled by default.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "std", leaparray_loom))]
extern crate std;

mod array;
mod borrow;
mod bucket;
pub mod clock;
mod error;
mod event;
pub mod gate;
mod limiter;
mod metric;
mod node;
pub mod shard;

#[doc = include_str!("../GUARANTEES.md")]
pub mod guarantees {}

#[doc = include_str!("protocol.md")]
pub mod protocol {}
mod sync;
mod view;
mod window;
mod word;

pub use array::LeapArray;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub use error::{AddError, SpanError};
pub use event::Event;
pub use gate::Gate;
pub use limiter::{Decision, Limiter};
pub use metric::{Metric, WindowDetail};
pub use node::{ConcurrencyGuard, StatisticNode};
pub use view::ReadOnlyArray;
pub use window::Window;
#[cfg(leaparray_loom)]
#[doc(hidden)]
pub use word::LoomTinyGen;
pub use word::{Narrow, Wide, Width, MAX_COUNT};
