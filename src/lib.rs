//! # leaparray
//!
//! Alibaba Sentinel's sliding-window `LeapArray`, rebuilt lock-free,
//! `no_std` and allocation-free, with Sentinel's statistics and flow gate on
//! top.
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
//! ## Read on
//!
//! - [`guarantees`]: the contract (what is exact, what is and is not one
//!   atomic step, progress and interrupt safety per target, the time and
//!   count ranges, bad input, the tests and proofs behind each statement).
//! - [`protocol`]: how a bucket retires a window without a lock, and why no
//!   count is lost or leaks into a newer window.
//! - The Cargo features and the supported targets: the tables in the
//!   repository's `README.md`.
//!
//! ## Where things are
//!
//! Each public module is a file in `src/`, or a folder whose `mod.rs` is
//! its public face and whose other files are its private parts.
//!
//! | module | what it holds | in `src/` |
//! |---|---|---|
//! | the root | [`LeapArray`], [`Gate`], [`GateSet`], [`KeyedGate`], [`Decision`], [`AddError`], [`MAX_COUNT`]: what most users import | `lib.rs`; shared by several modules: `sync.rs` (the one place naming atomics), `error.rs` (the errors of arrays, shards and statistics), `protocol.md` (the bucket protocol, of arrays and shards) |
//! | [`array`](mod@array) | what the array's methods take and give: [`Window`](array::Window), [`ReadOnlyArray`](array::ReadOnlyArray), [`SpanError`](array::SpanError), the counter widths | `array/`: `bucket.rs` (a bucket and its protocol), `word.rs` (stamp and cell encodings), `view.rs`, `window.rs` |
//! | [`gate`] | one limit, or several at once: [`Gate`] and its shapes, [`GateSet`], prioritized requests ([`PriorityDecision`](gate::PriorityDecision)) | `gate/`: `packed/` (the one-word gate: `layout.rs`, `decide.rs`, `read.rs`), `bucket_gate.rs`, `set.rs`, `shape.rs`, `decision.rs`, `divide.rs` (dividing by a window) |
//! | [`keyed`] | a limit per key in fixed memory: [`KeyedGate`], the single-owner table, hashing keys | `keyed/`: `table/` (the slot table: `value.rs`, `policy.rs`), `slot.rs` (the gate policy), `shared.rs`, `local.rs`, `memory.rs` (the memory of evicted keys), `hash.rs` |
//! | [`stats`] | Sentinel's statistics: [`Metric`](stats::Metric), [`StatisticNode`](stats::StatisticNode), [`Event`](stats::Event); a resource's [`ClusterNode`](stats::ClusterNode) with its origins in fixed memory; the call tree ([`EntranceNode`](stats::EntranceNode), [`DefaultNode`](stats::DefaultNode)); flow rules by caller and chain ([`FlowRule`](stats::FlowRule)), [`AuthorityRule`](stats::AuthorityRule) | `stats/`: `metric.rs`, `node.rs`, `event.rs`, `borrow.rs` (permits borrowed from future windows), `cluster.rs` (the cluster node and its protocol), `origin.rs` (an origin and its node's state), `counts.rs` (what a reader gets), `context.rs` (the call tree), `rules.rs` (flow and authority rules) |
//! | [`breaker`], [`system`] | guards: a circuit breaker; Sentinel's adaptive rule | `breaker/`: `config.rs`, `word.rs`, `state.rs`, `report.rs`, `protocol.md`; `system.rs` |
//! | [`shard`] | one array per core or queue, read as one | `shard.rs` |
//! | [`clock`] | producing `now` (every operation takes it) | `clock.rs` |
//! | [`export`] | Sentinel's metric log lines, Prometheus text | `export/`: `prometheus.rs` |
//!
//! ## Sentinel's names
//!
//! | Sentinel | leaparray |
//! |---|---|
//! | `LeapArray` / `BucketLeapArray` | [`LeapArray`]; [`Narrow`](array::Narrow) words for targets with 32-bit atomics only; [`shard::Sharded`] per core or queue |
//! | `currentWindow(t)` then `value().addPass(n)` | `add(t, PASS, n)` |
//! | `pass()` after `currentWindow()` | `sum(now, PASS)` |
//! | `list()` / `values()` | `windows(now)` |
//! | Sentinel-Go `ValuesConditional(now, pred)` | `windows_where(now, pred)` |
//! | `getWindowValue(t)` | `window_at(t)` |
//! | `getPreviousWindow(t)` | `previous(t)` |
//! | `getValidHead(t)` | `head(t)` |
//! | Sentinel-Go `SlidingWindowMetric` | `sum_span(now, span, counter)` |
//! | `ArrayMetric` / `MetricBucket` | [`stats::Metric`] |
//! | `addRtAndSuccess(rt, n)`, `minRt()`, `avgRt()` | `add_rt_and_success(now, rt, n)`, `min_rt(now)`, `avg_rt(now)` |
//! | `OccupiableBucketLeapArray.addWaiting(t, n)` / `currentWaiting()` | `add_waiting(now, t, n)` / `waiting(now)` |
//! | `StatisticNode.tryOccupyNext(now, n, threshold)` | `try_occupy_next(now, n, limit, timeout)` |
//! | `StatisticNode` | [`stats::StatisticNode`] |
//! | `ClusterNode`, its `getOrCreateOriginNode(origin)` / `getOriginCountMap()` | [`stats::ClusterNode`]: records take an [`Origin`](stats::Origin); `origin(o, now)` / `origins(now)`, and `others(now)` for evicted origins; exported per origin by [`MetricLog::write_origins`](export::MetricLog::write_origins) and `Exposition::cluster` |
//! | `EntranceNode` / `DefaultNode` (NodeSelectorSlot's tree), `entry` / `exit` | [`stats::EntranceNode`] / [`stats::DefaultNode`] as `static`s; [`DefaultNode::entry`](stats::DefaultNode::entry) / [`Entry::exit`](stats::Entry::exit) |
//! | `FlowRule` with `limitApp` / `strategy`, `FlowRuleChecker.selectNodeByRequesterAndStrategy` | [`stats::FlowRule`] ([`LimitApp`](stats::LimitApp), [`Strategy`](stats::Strategy)), [`FlowRule::select`](stats::FlowRule::select); [`stats::FlowRules::check`] |
//! | `AuthorityRule` (white / black list) | [`stats::AuthorityRule`] |
//! | `DefaultController.canPass(node, n, prioritized)` | [`Gate::try_acquire`]`(now, n)`, a [`Decision`]; [`Gate::try_acquire_prioritized`]`(now, n)`, a [`gate::PriorityDecision`] |
//! | `SystemRuleManager.checkBbr` | [`system::AdaptiveRule`] |
//! | `ExceptionCircuitBreaker` / `ResponseTimeCircuitBreaker` | [`breaker::CircuitBreaker`] |
//! | (a limit per key: a client, an API key, a flow) | [`KeyedGate`] |

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(docsrs, doc(auto_cfg))]

#[cfg(any(feature = "std", leaparray_loom, test))]
extern crate std;

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod array;
pub mod breaker;
pub mod clock;
mod error;
pub mod export;
pub mod gate;
pub mod keyed;
pub mod shard;
pub mod stats;
mod sync;
pub mod system;

#[doc = include_str!("../GUARANTEES.md")]
pub mod guarantees {}

#[doc = include_str!("protocol.md")]
pub mod protocol {}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(leaparray_loom)]
#[doc(hidden)]
pub use array::word::LoomTinyGen;
pub use array::word::MAX_COUNT;
pub use array::LeapArray;
pub use error::AddError;
pub use gate::decision::Decision;
pub use gate::set::GateSet;
pub use gate::Gate;
pub use keyed::KeyedGate;
