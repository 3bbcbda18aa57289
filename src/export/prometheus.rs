//! The Prometheus text exposition format 0.0.4 (feature `std`): see the
//! [`export`](super) module docs for the families.

use core::fmt::{self, Write as _};
use std::string::{String, ToString};
use std::vec::Vec;

use super::ExportError;
use crate::gate::Gate;
use crate::keyed::KeyedTable;
use crate::stats::cluster::ClusterNode;
use crate::stats::counts::{Counts, OriginStats};
use crate::stats::event::Event;
use crate::stats::node::StatisticNode;
use crate::stats::origin::Origin;

/// The events a node exposes, with their label values.
const EVENTS: [(Event, &str); 5] = [
    (Event::Pass, "pass"),
    (Event::Block, "block"),
    (Event::Exception, "exception"),
    (Event::Success, "success"),
    (Event::OccupiedPass, "occupied_pass"),
];

#[derive(Debug, Clone, PartialEq)]
struct NodeSample {
    second: [u64; 5],
    minute: [u64; 5],
    concurrency: u64,
    avg_rt_seconds: f64,
    min_rt_seconds: Option<f64>,
}

/// One origin of a cluster node: its resource, its label
/// ([`origin_label`](super::origin_label)) and its counts.
#[derive(Debug, Clone, PartialEq)]
struct OriginSample {
    origin: String,
    second: [u64; 4],
    minute: [u64; 4],
    concurrency: u64,
}

/// The events an origin row exposes (a cluster node's origin nodes count
/// no borrowed passes).
const ORIGIN_EVENTS: [&str; 4] = ["pass", "block", "exception", "success"];

impl OriginSample {
    fn of(origin: String, s: &OriginStats) -> Self {
        let ev = |c: Counts| [c.pass, c.block, c.exception, c.success];
        OriginSample {
            origin,
            second: ev(s.second),
            minute: ev(s.minute),
            concurrency: s.concurrency,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GateSample {
    limit: u64,
    load: u64,
    remaining: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyedSample {
    limit: u64,
    capacity: u64,
    resident: u64,
    recyclable: u64,
    recycled: u64,
    overflowed: u64,
    evicted: u64,
    remembered: u64,
}

/// A Prometheus text exposition (format 0.0.4) of named nodes, gates and
/// keyed gates, each read at the `now` it is added with. Render it with
/// `to_string()` (it is [`Display`](fmt::Display)) or
/// [`write_to`](Self::write_to), and serve it with the content type
/// [`CONTENT_TYPE`](Self::CONTENT_TYPE). The families are listed in the
/// [module docs](super).
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::export::Exposition;
/// use leaparray::stats::StatisticNode;
/// use leaparray::Gate;
///
/// let node = StatisticNode::millis();
/// node.add_pass(0, 3).unwrap();
/// let gate = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100);
/// let _ = gate.try_acquire(0, 40);
///
/// let mut e = Exposition::new("leaparray").unwrap();
/// e.node("orders", &node, 10).unwrap();
/// e.gate("api \"v2\"", &gate, 10).unwrap();
/// let text = e.to_string();
/// assert!(text.contains("# TYPE leaparray_node_concurrency gauge\n"));
/// assert!(text.contains("leaparray_node_second_events{resource=\"orders\",event=\"pass\"} 3\n"));
/// assert!(text.contains("leaparray_gate_remaining{resource=\"api \\\"v2\\\"\"} 60\n"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Exposition {
    prefix: String,
    nodes: Vec<(String, NodeSample)>,
    origins: Vec<(String, OriginSample)>,
    gates: Vec<(String, GateSample)>,
    keyed: Vec<(String, KeyedSample)>,
    refused: Vec<(String, u64)>,
}

fn valid_prefix(p: &str) -> bool {
    let mut chars = p.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn add<T>(list: &mut Vec<(String, T)>, name: &str, sample: T) -> Result<(), ExportError> {
    if name.is_empty() {
        return Err(ExportError::EmptyName);
    }
    if list.iter().any(|(n, _)| n == name) {
        return Err(ExportError::Duplicate);
    }
    list.push((name.to_string(), sample));
    Ok(())
}

/// A label value as the format wants it: `\`, `"` and line feed escaped.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A sample value: integers as integers, floats as Go's `ParseFloat` reads
/// them (Rust's `Display` of a finite `f64` is plain decimal).
enum Value {
    Int(u64),
    Float(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) if v.is_finite() => write!(f, "{v}"),
            Value::Float(v) if v.is_nan() => f.write_str("NaN"),
            Value::Float(v) if *v > 0.0 => f.write_str("+Inf"),
            Value::Float(_) => f.write_str("-Inf"),
        }
    }
}

/// One sample per event, labelled.
fn events(v: &[u64; 5]) -> Vec<(Option<&'static str>, Value)> {
    EVENTS
        .iter()
        .zip(v)
        .map(|((_, l), &c)| (Some(*l), Value::Int(c)))
        .collect()
}

/// One sample, unlabelled beyond the resource.
fn one(v: Value) -> Vec<(Option<&'static str>, Value)> {
    std::vec![(None, v)]
}

/// One family: name, type, help, and the samples of a resource.
type Family<'a, T> = (
    &'a str,
    &'a str,
    &'a str,
    fn(&T) -> Vec<(Option<&'static str>, Value)>,
);

fn family<W: fmt::Write + ?Sized, T>(
    out: &mut W,
    prefix: &str,
    rows: &[(String, T)],
    families: &[Family<'_, T>],
) -> fmt::Result {
    for (name, kind, help, values) in families {
        let samples: Vec<_> = rows
            .iter()
            .flat_map(|(r, s)| values(s).into_iter().map(move |v| (r, v)))
            .collect();
        if samples.is_empty() {
            continue;
        }
        writeln!(out, "# HELP {prefix}_{name} {help}")?;
        writeln!(out, "# TYPE {prefix}_{name} {kind}")?;
        for (resource, (event, value)) in samples {
            write!(out, "{prefix}_{name}{{resource=\"{}\"", Escaped(resource))?;
            if let Some(e) = event {
                write!(out, ",event=\"{e}\"")?;
            }
            writeln!(out, "}} {value}")?;
        }
    }
    Ok(())
}

/// An origin family: name, help, and an origin's samples.
type OriginFamily = (
    &'static str,
    &'static str,
    fn(&OriginSample) -> Vec<(Option<&'static str>, u64)>,
);

/// The origin families: like [`family`], with the label `origin`.
fn origin_families<W: fmt::Write + ?Sized>(
    out: &mut W,
    prefix: &str,
    rows: &[(String, OriginSample)],
) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let families: [OriginFamily; 3] = [
        (
            "origin_second_events",
            "Each event's count over an origin's second-level sliding interval.",
            |s| {
                ORIGIN_EVENTS
                    .iter()
                    .zip(s.second)
                    .map(|(e, c)| (Some(*e), c))
                    .collect()
            },
        ),
        (
            "origin_minute_events",
            "Each event's count over an origin's minute-level sliding interval.",
            |s| {
                ORIGIN_EVENTS
                    .iter()
                    .zip(s.minute)
                    .map(|(e, c)| (Some(*e), c))
                    .collect()
            },
        ),
        (
            "origin_concurrency",
            "An origin's requests in flight.",
            |s| std::vec![(None, s.concurrency)],
        ),
    ];
    for (name, help, values) in families {
        writeln!(out, "# HELP {prefix}_{name} {help}")?;
        writeln!(out, "# TYPE {prefix}_{name} gauge")?;
        for (resource, s) in rows {
            for (event, value) in values(s) {
                write!(
                    out,
                    "{prefix}_{name}{{resource=\"{}\",origin=\"{}\"",
                    Escaped(resource),
                    Escaped(&s.origin)
                )?;
                if let Some(e) = event {
                    write!(out, ",event=\"{e}\"")?;
                }
                writeln!(out, "}} {value}")?;
            }
        }
    }
    Ok(())
}

impl Exposition {
    /// The media type of this format, for the `Content-Type` header.
    ///
    /// ```
    /// assert!(leaparray::export::Exposition::CONTENT_TYPE.starts_with("text/plain; version=0.0.4"));
    /// ```
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";

    /// An empty exposition whose metric names start with `prefix` and `_`
    /// (`leaparray` gives `leaparray_node_concurrency`). The prefix must be
    /// a valid metric name, `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    ///
    /// ```
    /// use leaparray::export::{ExportError, Exposition};
    /// assert!(Exposition::new("shop").is_ok());
    /// assert_eq!(Exposition::new("9lives").unwrap_err(), ExportError::InvalidPrefix);
    /// assert_eq!(Exposition::new("a-b").unwrap_err(), ExportError::InvalidPrefix);
    /// ```
    pub fn new(prefix: &str) -> Result<Self, ExportError> {
        if !valid_prefix(prefix) {
            return Err(ExportError::InvalidPrefix);
        }
        Ok(Exposition {
            prefix: prefix.to_string(),
            nodes: Vec::new(),
            origins: Vec::new(),
            gates: Vec::new(),
            keyed: Vec::new(),
            refused: Vec::new(),
        })
    }

    /// Adds `node`, read at `now`, as the resource `name` (any non-empty
    /// UTF-8; escaped in the output). RTs are converted to seconds with the
    /// node's `ticks_per_second`.
    ///
    /// ```
    /// use leaparray::export::{ExportError, Exposition};
    /// let node = leaparray::stats::StatisticNode::millis();
    /// let mut e = Exposition::new("x").unwrap();
    /// e.node("a", &node, 0).unwrap();
    /// assert_eq!(e.node("a", &node, 0).unwrap_err(), ExportError::Duplicate);
    /// assert_eq!(e.node("", &node, 0).unwrap_err(), ExportError::EmptyName);
    /// ```
    pub fn node<const S: usize, const M: usize>(
        &mut self,
        name: &str,
        node: &StatisticNode<S, M>,
        now: u64,
    ) -> Result<&mut Self, ExportError> {
        let tps = node.ticks_per_second() as f64;
        let sample = NodeSample {
            second: EVENTS.map(|(e, _)| node.second().total(now, e)),
            minute: EVENTS.map(|(e, _)| node.minute().total(now, e)),
            concurrency: node.concurrency(),
            avg_rt_seconds: node.avg_rt(now) / tps,
            min_rt_seconds: node.min_rt(now).map(|rt| rt as f64 / tps),
        };
        add(&mut self.nodes, name, sample)?;
        Ok(self)
    }

    /// Adds the cluster node `node`, read at `now`, as the resource `name`:
    /// its totals as a node ([`node`](Self::node)), and a row per resident
    /// origin and one for other origins (at most `CAP + 1`), labelled
    /// `origin` by [`origin_label`](super::origin_label) with `names` (an
    /// origin whose name an earlier row of the resource has, by its hash:
    /// no two series are one): the
    /// families `origin_second_events{resource, origin, event}`,
    /// `origin_minute_events{..}` (events `pass`, `block`, `exception`,
    /// `success`) and `origin_concurrency{resource, origin}`.
    ///
    /// ```
    /// use leaparray::export::Exposition;
    /// use leaparray::stats::{ClusterNode, Origin};
    /// let cn = ClusterNode::<4>::millis();
    /// let a = Origin::named("appA");
    /// cn.add_pass(Some(a), 0, 2).unwrap();
    /// cn.add_block(Some(Origin::named("appB")), 0, 1).unwrap();
    /// let names = |o: Origin| (o == a).then_some("appA");
    /// let mut e = Exposition::new("x").unwrap();
    /// e.cluster("getOrder", &cn, &names, 0).unwrap();
    /// let text = e.to_string();
    /// assert!(text.contains("x_node_second_events{resource=\"getOrder\",event=\"pass\"} 2\n"));
    /// assert!(text.contains("x_origin_second_events{resource=\"getOrder\",origin=\"appA\",event=\"pass\"} 2\n"));
    /// assert!(text.contains("x_origin_second_events{resource=\"getOrder\",origin=\"other\",event=\"pass\"} 0\n"));
    /// let b = format!("origin=\"#{:016x}\",event=\"block\"}} 1\n", Origin::named("appB").hash());
    /// assert!(text.contains(&b));
    /// ```
    pub fn cluster<'n, const CAP: usize, const S: usize, const M: usize>(
        &mut self,
        name: &str,
        node: &ClusterNode<CAP, S, M>,
        names: &dyn Fn(Origin) -> Option<&'n str>,
        now: u64,
    ) -> Result<&mut Self, ExportError> {
        self.node(name, node.total(), now)?;
        let rows = node.origins(now).chain(core::iter::once(node.others(now)));
        for o in rows {
            let mut label = super::origin_label(o.origin, names).to_string();
            let taken = |l: &str| self.origins.iter().any(|(r, s)| r == name && s.origin == l);
            if let (true, Some(origin)) = (taken(&label), o.origin) {
                // Two origins `names` calls the same: the later by its hash.
                label = super::OriginLabel::Hash(origin.hash()).to_string();
            }
            self.origins
                .push((name.to_string(), OriginSample::of(label, &o)));
        }
        Ok(self)
    }

    /// Adds `gate`, read at `now`, as the resource `name`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::Exposition;
    /// use leaparray::Gate;
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let mut e = Exposition::new("x").unwrap();
    /// e.gate("login", &g, 0).unwrap();
    /// assert!(e.to_string().contains("x_gate_limit{resource=\"login\"} 10\n"));
    /// ```
    pub fn gate<const N: usize>(
        &mut self,
        name: &str,
        gate: &Gate<N>,
        now: u64,
    ) -> Result<&mut Self, ExportError> {
        let sample = GateSample {
            limit: gate.limit(),
            load: gate.peek(now),
            remaining: gate.remaining(now),
        };
        add(&mut self.gates, name, sample)?;
        Ok(self)
    }

    /// Adds the keyed gate `table`, read at `now` (its
    /// [`occupancy`](KeyedTable::occupancy): a scan of its slots), as the resource
    /// `name`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::export::Exposition;
    /// use leaparray::KeyedGate;
    /// let t = KeyedGate::<2, 16>::new(NonZeroU64::new(500).unwrap(), 5);
    /// let _ = t.try_acquire(7, 0, 1);
    /// let mut e = Exposition::new("x").unwrap();
    /// e.keyed("per_ip", &t, 0).unwrap();
    /// assert!(e.to_string().contains("x_keyed_resident{resource=\"per_ip\"} 1\n"));
    /// ```
    pub fn keyed(
        &mut self,
        name: &str,
        table: &impl KeyedTable,
        now: u64,
    ) -> Result<&mut Self, ExportError> {
        let s = table.occupancy(now);
        let sample = KeyedSample {
            limit: table.limit(),
            capacity: table.capacity() as u64,
            resident: s.resident as u64,
            recyclable: s.recyclable as u64,
            recycled: s.recycled,
            overflowed: s.overflowed,
            evicted: s.evicted,
            remembered: s.remembered,
        };
        add(&mut self.keyed, name, sample)?;
        Ok(self)
    }

    /// Adds `count`, the requests the limiter `name` has refused since it
    /// was built (a count its caller keeps: the gates do not count
    /// refusals), as the counter `refused_total` of the resource `name`.
    ///
    /// ```
    /// use leaparray::export::Exposition;
    /// let mut e = Exposition::new("x").unwrap();
    /// e.refused("per_ip", 12).unwrap();
    /// assert!(e.to_string().contains("x_refused_total{resource=\"per_ip\"} 12\n"));
    /// ```
    pub fn refused(&mut self, name: &str, count: u64) -> Result<&mut Self, ExportError> {
        add(&mut self.refused, name, count)?;
        Ok(self)
    }

    /// Writes the exposition: each family with samples, its `# HELP` and
    /// `# TYPE` lines, then its samples. A family without samples is left
    /// out.
    ///
    /// ```
    /// let mut out = String::new();
    /// leaparray::export::Exposition::new("x").unwrap().write_to(&mut out).unwrap();
    /// assert_eq!(out, "");
    /// ```
    pub fn write_to<W: fmt::Write + ?Sized>(&self, out: &mut W) -> fmt::Result {
        let p = &self.prefix;
        family::<W, NodeSample>(
            out,
            p,
            &self.nodes,
            &[
                (
                    "node_second_events",
                    "gauge",
                    "Each event's count over the node's second-level sliding interval.",
                    |s| events(&s.second),
                ),
                (
                    "node_minute_events",
                    "gauge",
                    "Each event's count over the node's minute-level sliding interval.",
                    |s| events(&s.minute),
                ),
                ("node_concurrency", "gauge", "Requests in flight.", |s| {
                    one(Value::Int(s.concurrency))
                }),
                (
                    "node_avg_rt_seconds",
                    "gauge",
                    "Mean response time over the second-level interval.",
                    |s| one(Value::Float(s.avg_rt_seconds)),
                ),
                (
                    "node_min_rt_seconds",
                    "gauge",
                    "Smallest response time over the second-level interval.",
                    |s| {
                        s.min_rt_seconds
                            .map(|v| one(Value::Float(v)))
                            .unwrap_or_default()
                    },
                ),
            ],
        )?;
        origin_families(out, p, &self.origins)?;
        family::<W, GateSample>(
            out,
            p,
            &self.gates,
            &[
                (
                    "gate_limit",
                    "gauge",
                    "Permits per sliding interval.",
                    |s| one(Value::Int(s.limit)),
                ),
                (
                    "gate_load",
                    "gauge",
                    "Permits booked in the fullest interval a request now would join.",
                    |s| one(Value::Int(s.load)),
                ),
                (
                    "gate_remaining",
                    "gauge",
                    "Permits a request now could still get.",
                    |s| one(Value::Int(s.remaining)),
                ),
            ],
        )?;
        family::<W, KeyedSample>(
            out,
            p,
            &self.keyed,
            &[
                (
                    "keyed_limit",
                    "gauge",
                    "Permits per key per sliding interval.",
                    |s| one(Value::Int(s.limit)),
                ),
                ("keyed_capacity", "gauge", "Slots of the table.", |s| {
                    one(Value::Int(s.capacity))
                }),
                (
                    "keyed_resident",
                    "gauge",
                    "Slots holding a key's gate.",
                    |s| one(Value::Int(s.resident)),
                ),
                (
                    "keyed_recyclable",
                    "gauge",
                    "Resident keys idle for two intervals.",
                    |s| one(Value::Int(s.recyclable)),
                ),
                (
                    "keyed_recycled_total",
                    "counter",
                    "Slots taken from an idle key for a new one.",
                    |s| one(Value::Int(s.recycled)),
                ),
                (
                    "keyed_overflowed_total",
                    "counter",
                    "Decisions made under the overflow policy.",
                    |s| one(Value::Int(s.overflowed)),
                ),
                (
                    "keyed_evicted_total",
                    "counter",
                    "Keys evicted to make room for a new key; their counts are remembered.",
                    |s| one(Value::Int(s.evicted)),
                ),
                (
                    "keyed_remembered_total",
                    "counter",
                    "Keys inserted with counts estimated from the memory of evicted keys.",
                    |s| one(Value::Int(s.remembered)),
                ),
            ],
        )?;
        family::<W, u64>(
            out,
            p,
            &self.refused,
            &[(
                "refused_total",
                "counter",
                "Requests the limiter refused, as its caller counted them.",
                |s| one(Value::Int(*s)),
            )],
        )
    }
}

impl fmt::Display for Exposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}
