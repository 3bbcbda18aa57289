//! Metric export: Sentinel's metric-log lines (no_std, allocation-free)
//! and, behind `std`, the Prometheus text exposition format.
//!
//! # Metric-log lines
//!
//! Sentinel's `MetricWriter` appends one line per resource per second to
//! `${app}-metrics.log`, made by `MetricNode.toFatString` (thin:
//! `toThinString`, for the dashboard's transport), from the windows of the
//! node's minute-level metric (`ArrayMetric.details()`, `fromBucket`):
//!
//! ```text
//! fat:  timestamp|yyyy-MM-dd HH:mm:ss|resource|pass|block|success|exception|rt|occupiedPass|concurrency
//! thin: timestamp|resource|pass|block|success|exception|rt|occupiedPass|concurrency
//! ```
//!
//! [`MetricLog`] writes these from [`Metric::details`] into any
//! [`core::fmt::Write`], without allocating. Field by field:
//!
//! - `timestamp`: the window's start in Unix milliseconds,
//!   `epoch_ms + start * 1000 / ticks_per_second` (rounded down; `epoch_ms`
//!   is the Unix time of tick 0, which the caller knows and the crate does
//!   not). The fat date is that instant in **UTC** (Sentinel formats it in
//!   the JVM's time zone; a `no_std` crate has none).
//! - `pass` ... `exception`, `occupiedPass`: the window's counts (Sentinel
//!   writes the counts of 1-second windows and calls them QPS).
//! - `rt`: the window's mean RT in milliseconds, `rt * 1000 /
//!   (ticks_per_second * success)` rounded down, as Sentinel's
//!   `rt / success` (its `rt` without a success).
//! - `concurrency`: the window's **peak** requests in flight (exact, one
//!   atomic maximum per window), where Sentinel writes the count at the
//!   moment it logs.
//!
//! Sentinel's tenth field, `classification` (the resource type), has no
//! counterpart here and is left out; Sentinel's parsers treat the fields
//! after `rt` as optional.
//!
//! Bad input: Sentinel replaces a `|` in a resource name with `_`, so two
//! resources can share a name in the log; a name with a line break splits
//! the line. Here a name that is empty or holds `|`, `\n` or `\r` is
//! refused with an [`ExportError`] before anything is written: a log never
//! holds a corrupt or ambiguous line.
//!
//! # Per origin
//!
//! A [`ClusterNode`]'s origins have lines of their own
//! ([`MetricLog::write_origins`]): the same fields, the resource field
//! `resource@origin`, one row per resident origin and one for other
//! origins, so at most `CAP + 1` lines per window whatever the number of
//! callers; window by window they add up to the resource's own line
//! (events; `rt` is a mean). A node stores an origin's 64-bit hash, not
//! its name: the caller passes `names`, a `&dyn Fn(Origin) -> Option<&str>`
//! (a `match` over its callers, a map it keeps), consulted only when it
//! exports, so recording stays one hash and no node holds a string.
//! [`origin_label`] says how an origin is written: `other`, its name, or
//! `#` and its hash when it has no name that fits (a name never starts
//! with `#`, so no two rows of a resource share a label).
//!
//! # Prometheus (feature `std`)
//!
//! `Exposition` collects named [`StatisticNode`](crate::stats::StatisticNode)s,
//! [`Gate`](crate::Gate)s and [`KeyedGate`](crate::KeyedGate)s at one `now` and renders them in the text exposition
//! format 0.0.4: one `# HELP` and one `# TYPE` line per metric family, its
//! samples together, the resource in the label `resource` (escaped as the
//! format says: `\\`, `\"`, `\n`). Families (prefix `leaparray_` by
//! default, see `Exposition::new`):
//!
//! | family | type | what |
//! |---|---|---|
//! | `node_second_events{resource, event}` | gauge | each event's count over the node's second-level interval |
//! | `node_minute_events{resource, event}` | gauge | the same over the minute-level interval |
//! | `node_concurrency{resource}` | gauge | requests in flight |
//! | `node_avg_rt_seconds{resource}` | gauge | mean RT over the second-level interval |
//! | `node_min_rt_seconds{resource}` | gauge | smallest RT over it (absent without one) |
//! | `origin_second_events{resource, origin, event}`, `origin_minute_events{..}` | gauge | a cluster node's origins (`Exposition::cluster`): each resident origin and `other`, events `pass`, `block`, `exception`, `success` |
//! | `origin_concurrency{resource, origin}` | gauge | an origin's requests in flight |
//! | `gate_limit{resource}` | gauge | permits per interval |
//! | `gate_load{resource}` | gauge | permits booked in the fullest interval a request now would join |
//! | `gate_remaining{resource}` | gauge | permits a request now could still get |
//! | `keyed_limit{resource}`, `keyed_capacity{resource}` | gauge | per key; slots |
//! | `keyed_resident{resource}`, `keyed_recyclable{resource}` | gauge | slots holding a key; of those, idle ones |
//! | `keyed_recycled_total{resource}`, `keyed_overflowed_total{resource}` | counter | since the table was built |
//! | `keyed_evicted_total{resource}`, `keyed_remembered_total{resource}` | counter | keys evicted; keys inserted from the memory of evicted keys, since the table was built |
//! | `refused_total{resource}` | counter | requests a limiter refused, as its caller counts them (`Exposition::refused`) |
//!
//! Events are `pass`, `block`, `exception`, `success`, `occupied_pass`.
//! Only the keyed table and the callers' refusals are cumulative counts, so only they are counters:
//! a sliding window's sum goes down as windows retire, which a Prometheus
//! counter must not, so window sums are gauges (use `rate()` on your own
//! counters, `avg_over_time()` on these).

use core::fmt;
use core::num::NonZeroU64;

use crate::stats::cluster::ClusterNode;
use crate::stats::event::Event;
use crate::stats::metric::{Access, Metric, MetricWindow};
use crate::stats::origin::Origin;

/// Why an export was refused. Nothing was written.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::export::{ExportError, MetricLog};
/// let log = MetricLog::new(NonZeroU64::new(1_000).unwrap());
/// let m = leaparray::stats::Metric::<60>::new(NonZeroU64::new(1_000).unwrap());
/// let mut out = String::new();
/// assert_eq!(log.write_completed(&mut out, "a|b", &m, 0, None), Err(ExportError::Separator));
/// assert!(out.is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ExportError {
    /// A resource name is empty.
    EmptyName,
    /// A resource name holds `|`, the metric log's separator.
    Separator,
    /// A resource name holds a line break (`\n` or `\r`).
    LineBreak,
    /// A Prometheus metric prefix is not `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    InvalidPrefix,
    /// A resource was added twice to the same kind of one exposition (its
    /// series would be duplicates).
    Duplicate,
    /// The writer failed (`core::fmt::Error`); it may hold part of a line.
    Write,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExportError::EmptyName => "empty resource name",
            ExportError::Separator => "resource name holds '|', the metric log's separator",
            ExportError::LineBreak => "resource name holds a line break",
            ExportError::InvalidPrefix => {
                "Prometheus metric prefix is not [a-zA-Z_:][a-zA-Z0-9_:]*"
            }
            ExportError::Duplicate => "resource already in this exposition",
            ExportError::Write => "the writer failed",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ExportError {}

impl From<fmt::Error> for ExportError {
    fn from(_: fmt::Error) -> Self {
        ExportError::Write
    }
}

/// Which of Sentinel's two line layouts [`MetricLog`] writes.
///
/// ```
/// use leaparray::export::LineFormat;
/// assert_ne!(LineFormat::Thin, LineFormat::Fat);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LineFormat {
    /// `timestamp|resource|...` (`MetricNode.toThinString`).
    Thin,
    /// `timestamp|yyyy-MM-dd HH:mm:ss|resource|...` (`toFatString`, the
    /// log file's), the date in UTC.
    Fat,
}

/// Writes Sentinel metric-log lines (see the [module docs](self)).
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::export::MetricLog;
/// use leaparray::stats::StatisticNode;
///
/// static LOG: MetricLog = MetricLog::new(NonZeroU64::new(1_000).unwrap()) // ticks are ms
///     .with_epoch_ms(1_579_460_700_000) // Unix time of tick 0
///     .fat();
/// let node = StatisticNode::millis();
/// node.add_pass(8_100, 2).unwrap();
/// node.add_rt_and_success(8_200, 30, 2).unwrap();
/// node.add_block(8_300, 1).unwrap();
///
/// let mut out = heapless::String::<256>::new(); // any core::fmt::Write
/// let newest = LOG.write_completed(&mut out, "/hello", node.minute(), 9_000, None).unwrap();
/// assert_eq!(out, "1579460708000|2020-01-19 19:05:08|/hello|2|1|2|0|15|0|0\n");
/// assert_eq!(newest, Some(8_000)); // pass it as `after` next time
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MetricLog {
    ticks_per_second: u64,
    epoch_ms: u64,
    format: LineFormat,
}

impl MetricLog {
    /// Thin lines, ticks at `ticks_per_second`, tick 0 at Unix time 0.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// let log = leaparray::export::MetricLog::new(NonZeroU64::new(1_000_000).unwrap());
    /// assert_eq!(log.ticks_per_second(), 1_000_000);
    /// ```
    #[must_use]
    pub const fn new(ticks_per_second: NonZeroU64) -> Self {
        MetricLog {
            ticks_per_second: ticks_per_second.get(),
            epoch_ms: 0,
            format: LineFormat::Thin,
        }
    }

    /// The same log, with tick 0 at `epoch_ms` milliseconds of Unix time.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let log = leaparray::export::MetricLog::new(NonZeroU64::new(1_000).unwrap()).with_epoch_ms(5);
    /// assert_eq!(log.epoch_ms(), 5);
    /// ```
    #[must_use]
    pub const fn with_epoch_ms(self, epoch_ms: u64) -> Self {
        MetricLog { epoch_ms, ..self }
    }

    /// The same log, writing fat lines (with the date).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::{LineFormat, MetricLog};
    /// let log = MetricLog::new(NonZeroU64::new(1_000).unwrap()).fat();
    /// assert_eq!(log.format(), LineFormat::Fat);
    /// ```
    #[must_use]
    pub const fn fat(self) -> Self {
        MetricLog {
            format: LineFormat::Fat,
            ..self
        }
    }

    /// Ticks per second.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::export::MetricLog::new(NonZeroU64::new(10).unwrap()).ticks_per_second(), 10);
    /// ```
    #[must_use]
    pub const fn ticks_per_second(&self) -> u64 {
        self.ticks_per_second
    }

    /// Unix milliseconds of tick 0.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::export::MetricLog::new(NonZeroU64::new(10).unwrap()).epoch_ms(), 0);
    /// ```
    #[must_use]
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// The line layout.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::{LineFormat, MetricLog};
    /// assert_eq!(MetricLog::new(NonZeroU64::new(10).unwrap()).format(), LineFormat::Thin);
    /// ```
    #[must_use]
    pub const fn format(&self) -> LineFormat {
        self.format
    }

    /// The Unix milliseconds of `tick`, rounded down (saturating).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let log = leaparray::export::MetricLog::new(NonZeroU64::new(3).unwrap()).with_epoch_ms(100);
    /// assert_eq!(log.unix_ms(2), 766); // 100 + 2 * 1000 / 3
    /// ```
    #[must_use]
    pub const fn unix_ms(&self, tick: u64) -> u64 {
        let ms = tick as u128 * 1_000 / self.ticks_per_second as u128;
        let ms = if ms > u64::MAX as u128 {
            u64::MAX
        } else {
            ms as u64
        };
        self.epoch_ms.saturating_add(ms)
    }

    /// One line (ending in `\n`) for one window. `resource` is checked
    /// first: on an error nothing is written.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::{ExportError, MetricLog};
    /// use leaparray::stats::MetricWindow;
    /// let log = MetricLog::new(NonZeroU64::new(1_000).unwrap());
    /// let d = MetricWindow { start: 2_000, counts: [5, 1, 0, 4, 40, 0], min_rt: Some(7), max_concurrency: 3 };
    /// let mut out = String::new();
    /// log.write_line(&mut out, "db", &d).unwrap();
    /// assert_eq!(out, "2000|db|5|1|4|0|10|0|3\n");
    /// assert_eq!(log.write_line(&mut out, "a\nb", &d), Err(ExportError::LineBreak));
    /// ```
    pub fn write_line<W: fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        resource: &str,
        detail: &MetricWindow,
    ) -> Result<(), ExportError> {
        check_resource(resource)?;
        self.line(out, resource, detail)
    }

    fn line<W: fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        resource: impl fmt::Display,
        d: &MetricWindow,
    ) -> Result<(), ExportError> {
        let ts = self.unix_ms(d.start);
        write!(out, "{ts}|")?;
        if self.format == LineFormat::Fat {
            write_utc(out, ts)?;
            out.write_char('|')?;
        }
        let success = d.get(Event::Success);
        let rt = d.get(Event::Rt);
        // Sentinel: rt / success, or rt without a success; here in ms.
        let per = u128::from(self.ticks_per_second) * u128::from(success.max(1));
        let rt_ms = u128::from(rt) * 1_000 / per;
        writeln!(
            out,
            "{resource}|{}|{}|{success}|{}|{rt_ms}|{}|{}",
            d.get(Event::Pass),
            d.get(Event::Block),
            d.get(Event::Exception),
            d.get(Event::OccupiedPass),
            d.max_concurrency,
        )?;
        Ok(())
    }

    /// Lines for the windows of `metric` that have ended by `now` and start
    /// after the tick `after` (all, with `None`), oldest first; returns the
    /// start of the newest window written, to pass as `after` next time
    /// (Sentinel's `MetricTimerListener` writes each second once). For a
    /// [`StatisticNode`](crate::stats::StatisticNode) pass its `minute()` metric,
    /// as Sentinel does. On an error about `resource` nothing is written.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::MetricLog;
    /// use leaparray::stats::{Event, Metric};
    /// let log = MetricLog::new(NonZeroU64::new(1_000).unwrap());
    /// let m = Metric::<60>::new(NonZeroU64::new(1_000).unwrap());
    /// m.add(500, Event::Pass, 1).unwrap();
    /// m.add(1_500, Event::Pass, 2).unwrap();
    /// let mut out = String::new();
    /// let last = log.write_completed(&mut out, "r", &m, 1_999, None).unwrap(); // [1000, 2000) not ended
    /// assert_eq!((out.as_str(), last), ("0|r|1|0|0|0|0|0|0\n", Some(0)));
    /// out.clear();
    /// let last = log.write_completed(&mut out, "r", &m, 2_000, last).unwrap();
    /// assert_eq!((out.as_str(), last), ("1000|r|2|0|0|0|0|0|0\n", Some(1_000)));
    /// ```
    pub fn write_completed<W: fmt::Write + ?Sized, const N: usize, A: Access>(
        &self,
        out: &mut W,
        resource: &str,
        metric: &Metric<N, A>,
        now: u64,
        after: Option<u64>,
    ) -> Result<Option<u64>, ExportError> {
        check_resource(resource)?;
        let window = metric.window();
        let current = now / window;
        let mut newest = None;
        for d in metric.details(now) {
            let ended = d.start / window < current;
            let new = after.is_none_or(|a| d.start > a);
            if ended && new {
                self.line(out, resource, &d)?;
                newest = Some(d.start);
            }
        }
        Ok(newest.or(after))
    }

    /// Lines per origin of the cluster node `node` of `resource`: for
    /// each resident origin, then for other origins as one, the windows
    /// of its minute-level metric that have ended by `now` and start
    /// after `after` ([`ClusterNode::origin_windows`]; at most `CAP + 1`
    /// origins). The resource field is `resource@origin`, the origin named
    /// by `names` ([`origin_label`]; an origin whose name an earlier row
    /// has, by its hash): the numbers are where Sentinel's parsers read
    /// them. Returns the start of the newest window written
    /// (or `after`), as [`write_completed`](Self::write_completed). On an
    /// error about `resource` nothing is written.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use leaparray::export::MetricLog;
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let log = MetricLog::new(NonZeroU64::new(1_000).unwrap());
    /// let cn = ClusterNode::<4>::millis();
    /// let (a, b) = (Origin::named("appA"), Origin::from_hash(0xab));
    /// cn.add_pass(Some(a), 100, 2).unwrap();
    /// cn.add_block(Some(b), 200, 1).unwrap();
    /// cn.add_pass(None, 300, 1).unwrap();
    /// let names = |o: Origin| (o == a).then_some("appA");
    /// let mut out = String::new();
    /// let last = log.write_origins(&mut out, "getOrder", &cn, &names, 1_000, None).unwrap();
    /// assert_eq!(last, Some(0));
    /// let mut lines: Vec<&str> = out.lines().collect();
    /// lines.sort();
    /// assert_eq!(lines, [
    ///     "0|getOrder@#00000000000000ab|0|1|0|0|0|0|0",
    ///     "0|getOrder@appA|2|0|0|0|0|0|0",
    ///     "0|getOrder@other|1|0|0|0|0|0|0",
    /// ]);
    /// ```
    pub fn write_origins<'n, W, const CAP: usize, const S: usize, const M: usize>(
        &self,
        out: &mut W,
        resource: &str,
        node: &ClusterNode<CAP, S, M>,
        names: &dyn Fn(Origin) -> Option<&'n str>,
        now: u64,
        after: Option<u64>,
    ) -> Result<Option<u64>, ExportError>
    where
        W: fmt::Write + ?Sized,
    {
        check_resource(resource)?;
        let window = node.total().minute().window();
        let current = now / window;
        let mut newest: Option<u64> = None;
        let mut named: heapless::Vec<&str, CAP> = heapless::Vec::new();
        for (origin, windows) in node.origin_windows(now) {
            let mut label = origin_label(origin, names);
            if let (OriginLabel::Name(n), Some(o)) = (label, origin) {
                if named.contains(&n) {
                    // Two origins `names` calls the same: the later by its hash.
                    label = OriginLabel::Hash(o.hash());
                } else {
                    // At most CAP resident origins: never full.
                    let _ = named.push(n);
                }
            }
            for d in windows {
                let ended = d.start / window < current;
                let new = after.is_none_or(|a| d.start > a);
                if ended && new {
                    self.line(out, format_args!("{resource}@{label}"), &d)?;
                    newest = Some(newest.map_or(d.start, |n| n.max(d.start)));
                }
            }
        }
        Ok(newest.or(after))
    }
}

/// How an origin is named in an export: `other` for other origins
/// (`None`); else the name `names` gives it, if it has one that fits
/// (not empty, not `other`, not starting with `#`, none of `@`, `|`, `"`,
/// `\`, a line break); else `#` and its hash in 16 hex digits. So a label
/// never breaks a line, never splits a field, no origin is written as
/// "other", and a name never reads as another origin's hash.
///
/// ```
/// use leaparray::export::origin_label;
/// use leaparray::stats::Origin;
/// let a = Origin::named("appA");
/// let names = |o: Origin| if o == a { Some("appA") } else { Some("a|b") };
/// assert_eq!(origin_label(Some(a), &names).to_string(), "appA");
/// assert_eq!(origin_label(None, &names).to_string(), "other");
/// assert_eq!(origin_label(Some(Origin::from_hash(255)), &names).to_string(), "#00000000000000ff");
/// let fake = |_: Origin| Some("#00000000000000ff"); // not a name: the hash
/// assert_eq!(origin_label(Some(a), &fake).to_string(), format!("#{:016x}", a.hash()));
/// ```
#[must_use]
pub fn origin_label<'n>(
    origin: Option<Origin>,
    names: &dyn Fn(Origin) -> Option<&'n str>,
) -> OriginLabel<'n> {
    match origin {
        None => OriginLabel::Other,
        Some(o) => match names(o) {
            Some(n)
                if !n.is_empty()
                    && n != "other"
                    && !n.starts_with('#')
                    && !n.contains(['@', '|', '"', '\\', '\n', '\r']) =>
            {
                OriginLabel::Name(n)
            }
            _ => OriginLabel::Hash(o.hash()),
        },
    }
}

/// An origin as an export names it ([`origin_label`]); written by its
/// `Display`.
///
/// ```
/// use leaparray::export::OriginLabel;
/// assert_eq!(OriginLabel::Hash(1).to_string(), "#0000000000000001");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OriginLabel<'n> {
    /// The origin's name.
    Name(&'n str),
    /// An origin without a name that fits: its hash.
    Hash(u64),
    /// Other origins.
    Other,
}

impl fmt::Display for OriginLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginLabel::Name(n) => f.write_str(n),
            OriginLabel::Hash(h) => write!(f, "#{h:016x}"),
            OriginLabel::Other => f.write_str("other"),
        }
    }
}

/// A resource name fit for a metric log line.
fn check_resource(resource: &str) -> Result<(), ExportError> {
    if resource.is_empty() {
        Err(ExportError::EmptyName)
    } else if resource.contains('|') {
        Err(ExportError::Separator)
    } else if resource.contains(['\n', '\r']) {
        Err(ExportError::LineBreak)
    } else {
        Ok(())
    }
}

/// `yyyy-MM-dd HH:mm:ss` of Unix milliseconds `ms`, in UTC (the proleptic
/// Gregorian calendar; days to a civil date as in Howard Hinnant's
/// `civil_from_days`).
fn write_utc<W: fmt::Write + ?Sized>(out: &mut W, ms: u64) -> fmt::Result {
    let secs = ms / 1_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Year, month (1..=12) and day (1..=31) of `days` after 1970-01-01.
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01, so leap days end a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(feature = "std")]
pub use prometheus::Exposition;

#[cfg(feature = "std")]
mod prometheus;

#[cfg(test)]
mod tests {
    use super::*;

    /// Day by day from 1970 against the closed form.
    #[test]
    fn civil_from_days_matches_counting_days() {
        let (mut y, mut m, mut d) = (1970u64, 1u64, 1u64);
        let days_in = |y: u64, m: u64| match m {
            2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let n = if cfg!(miri) { 800 } else { 200_000 };
        for days in 0..n {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            d += 1;
            if d > days_in(y, m) {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }
}
