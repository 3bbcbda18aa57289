//! Sentinel's statistics: a [`Metric`] of [`Event`] counts per window
//! (`ArrayMetric` / `MetricBucket`), a [`StatisticNode`] of a second-level
//! and a minute-level metric with the concurrency in flight, and what
//! reading and writing them takes.
//!
//! ```
//! use core::num::NonZeroU64;
//! use leaparray::stats::{Event, Metric, StatisticNode};
//!
//! static M: Metric<2> = Metric::new(NonZeroU64::new(500).unwrap());
//! M.add(100, Event::Pass, 3).unwrap();
//! M.add_rt_and_success(120, 15, 1).unwrap();
//! assert_eq!((M.pass(600), M.success(600), M.min_rt(600)), (3, 1, Some(15)));
//!
//! let node = StatisticNode::millis(); // 2 x 500 ms and 60 x 1 s
//! let in_flight = node.enter(0);
//! assert_eq!(node.concurrency(), 1);
//! drop(in_flight);
//! ```

pub(crate) mod borrow;
pub(crate) mod cluster;
pub(crate) mod context;
pub(crate) mod counts;
pub(crate) mod event;
pub(crate) mod metric;
pub(crate) mod node;
pub(crate) mod origin;
pub(crate) mod rules;

pub use crate::stats::borrow::WaitingError;
pub use crate::stats::cluster::{Cluster, ClusterError, ClusterNode, OriginEntry};
pub use crate::stats::context::{DefaultNode, EntranceNode, Entry, Parent};
pub use crate::stats::counts::{Counts, OriginStats};
pub use crate::stats::event::Event;
pub use crate::stats::metric::{Access, Metric, MetricWindow, ReadOnly, Writable};
pub use crate::stats::node::{ConcurrencyGuard, StatisticNode};
pub use crate::stats::origin::{Origin, OriginNode};
pub use crate::stats::rules::{
    AuthorityRule, AuthorityStrategy, FlowRule, FlowRules, LimitApp, RuleError, Selected, Strategy,
};
