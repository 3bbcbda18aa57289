//! `export`: Sentinel metric-log lines parsed back against `Metric::details`,
//! bad resource names, UTC dates; the Prometheus exposition through a strict
//! parser of the text format 0.0.4, its structure and its escaping.

use core::num::NonZeroU64;

use leaparray::export::{ExportError, LineFormat, MetricLog};
use leaparray::stats::{Event, MetricWindow, StatisticNode};
use proptest::prelude::*;

fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

/// Sentinel's `MetricNode.fromThinString` / `fromFatString`, strictly:
/// the fields as numbers, the resource, the date if fat.
fn parse_line(line: &str, format: LineFormat) -> (u64, Option<String>, String, [u64; 7]) {
    let fields: Vec<&str> = line.split('|').collect();
    let (ts, date, rest) = match format {
        LineFormat::Thin => (fields[0], None, &fields[1..]),
        LineFormat::Fat => (fields[0], Some(fields[1].to_string()), &fields[2..]),
    };
    assert_eq!(rest.len(), 8, "{line}");
    let mut nums = [0; 7];
    for (n, f) in nums.iter_mut().zip(&rest[1..]) {
        *n = f
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {f} in {line}"));
    }
    (ts.parse().unwrap(), date, rest[0].to_string(), nums)
}

/// The line's seven numbers as Sentinel's `fromBucket` makes them, in ms.
fn expected(d: &MetricWindow, ticks_per_second: u64) -> [u64; 7] {
    let success = d.get(Event::Success);
    let rt = u128::from(d.get(Event::Rt)) * 1_000
        / (u128::from(ticks_per_second) * u128::from(success.max(1)));
    [
        d.get(Event::Pass),
        d.get(Event::Block),
        success,
        d.get(Event::Exception),
        rt as u64,
        d.get(Event::OccupiedPass),
        d.max_concurrency,
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Wait(u64),
    Add(usize, u64),
    Rt(u64, u64),
    Enter,
    Exit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..3_000).prop_map(Op::Wait),
        (0usize..6, 0u64..50).prop_map(|(e, n)| Op::Add(e, n)),
        (1u64..5_000, 1u64..4).prop_map(|(rt, n)| Op::Rt(rt, n)),
        Just(Op::Enter),
        Just(Op::Exit),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 128 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Every completed window is written once, in order, and its line
    /// parses back to its details (time in µs, so the ms conversions show).
    #[test]
    fn log_lines_parse_back_to_details(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 10 } else { 80 }),
        fat in any::<bool>(),
        epoch in 0u64..2_000_000_000_000,
    ) {
        let tps = 1_000_000;
        let node = StatisticNode::<2, 60>::new(nz(500_000), nz(1_000_000), nz(tps));
        let mut log = MetricLog::new(nz(tps)).with_epoch_ms(epoch);
        if fat {
            log = log.fat();
        }
        let mut now = 0;
        let mut after = None;
        let mut written = Vec::new();
        let mut held = Vec::new();
        for op in ops {
            match op {
                Op::Wait(ms) => now += ms * 1_000,
                Op::Add(e, n) => {
                    let e = Event::ALL[e];
                    if e != Event::Rt && e != Event::Success {
                        let _ = node.minute().add(now, e, n);
                    }
                }
                Op::Rt(rt, n) => node.add_rt_and_success(now, rt * n, n).unwrap(),
                Op::Enter => held.push(node.enter(now)),
                Op::Exit => drop(held.pop()),
            }
            let mut out = String::new();
            let details = node.minute().details(now);
            let before = after;
            after = log.write_completed(&mut out, "svc/a b", node.minute(), now, after).unwrap();
            let want: Vec<_> = details
                .iter()
                .filter(|d| d.start < now / 1_000_000 * 1_000_000 && before.is_none_or(|a| d.start > a))
                .collect();
            let lines: Vec<&str> = out.lines().collect();
            prop_assert_eq!(lines.len(), want.len());
            prop_assert!(out.is_empty() || out.ends_with('\n'));
            for (line, d) in lines.iter().zip(&want) {
                let (ts, date, resource, nums) = parse_line(line, log.format());
                prop_assert_eq!(ts, epoch + d.start / 1_000);
                prop_assert_eq!(date.is_some(), fat);
                prop_assert_eq!(resource, "svc/a b");
                prop_assert_eq!(nums, expected(d, tps));
                written.push(d.start);
            }
        }
        let mut sorted = written.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted, written, "each window once, oldest first");
    }
}

/// A name with the separator or a line break (or none) is refused before
/// anything is written: the writer keeps exactly what it held.
#[test]
fn log_refuses_bad_names_and_writes_nothing() {
    let node = StatisticNode::millis();
    node.add_pass(0, 1).unwrap();
    let log = MetricLog::new(nz(1_000)).fat();
    let d = node.minute().details(0)[0];
    for (name, err) in [
        ("a|b", ExportError::Separator),
        ("|", ExportError::Separator),
        ("a\nb", ExportError::LineBreak),
        ("a\r", ExportError::LineBreak),
        ("", ExportError::EmptyName),
    ] {
        let mut out = String::from("kept\n");
        assert_eq!(
            log.write_completed(&mut out, name, node.minute(), 5_000, None),
            Err(err)
        );
        assert_eq!(log.write_line(&mut out, name, &d), Err(err));
        assert_eq!(out, "kept\n", "{name:?}");
    }
    let mut out = String::new();
    log.write_line(&mut out, "a_b", &d).unwrap();
    assert_eq!(out.matches('|').count(), 9);
    assert_eq!(out.matches('\n').count(), 1);
}

/// The fat date is UTC (values from Python's `datetime`, UTC).
#[test]
fn log_fat_dates_are_utc() {
    let d = MetricWindow {
        start: 0,
        counts: [0; 6],
        min_rt: None,
        max_concurrency: 0,
    };
    for (ms, date) in [
        (0, "1970-01-01 00:00:00"),
        (951_782_400_000, "2000-02-29 00:00:00"),
        (1_579_460_708_000, "2020-01-19 19:05:08"),
        (4_102_444_799_000, "2099-12-31 23:59:59"),
        (253_402_300_799_000, "9999-12-31 23:59:59"),
    ] {
        let log = MetricLog::new(nz(1_000)).with_epoch_ms(ms).fat();
        let mut out = String::new();
        log.write_line(&mut out, "r", &d).unwrap();
        assert_eq!(out, format!("{ms}|{date}|r|0|0|0|0|0|0|0\n"));
    }
}

/// A writer that fails reports `Write`, not a panic.
#[test]
fn log_writer_failure_is_an_error() {
    struct Full;
    impl core::fmt::Write for Full {
        fn write_str(&mut self, _: &str) -> core::fmt::Result {
            Err(core::fmt::Error)
        }
    }
    let node = StatisticNode::millis();
    node.add_pass(0, 1).unwrap();
    let log = MetricLog::new(nz(1_000));
    assert_eq!(
        log.write_completed(&mut Full, "r", node.minute(), 1_000, None),
        Err(ExportError::Write)
    );
}

#[cfg(feature = "std")]
mod prometheus {
    use std::collections::{BTreeMap, BTreeSet};

    use super::nz;
    use leaparray::export::{ExportError, Exposition};
    use leaparray::keyed::Overflow;
    use leaparray::stats::StatisticNode;
    use leaparray::{Gate, KeyedGate};

    #[derive(Debug, PartialEq)]
    struct Sample {
        name: String,
        labels: Vec<(String, String)>,
        value: f64,
    }

    #[derive(Debug, Default)]
    struct Parsed {
        /// family -> (type, help)
        families: BTreeMap<String, (String, String)>,
        samples: Vec<Sample>,
    }

    fn metric_name(s: &str) -> bool {
        let mut c = s.chars();
        c.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    fn label_name(s: &str) -> bool {
        let mut c = s.chars();
        !s.starts_with("__")
            && c.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    fn value(s: &str) -> Result<f64, String> {
        match s {
            "NaN" => Ok(f64::NAN),
            "+Inf" => Ok(f64::INFINITY),
            "-Inf" => Ok(f64::NEG_INFINITY),
            _ => s.parse().map_err(|_| format!("bad value {s:?}")),
        }
    }

    /// The labels of `{...}` (after the `{`), and the rest after the `}`.
    type Labels = Vec<(String, String)>;

    fn labels(mut s: &str) -> Result<(Labels, &str), String> {
        let mut out = Vec::new();
        loop {
            if let Some(rest) = s.strip_prefix('}') {
                return Ok((out, rest));
            }
            let eq = s.find('=').ok_or("label without =")?;
            let name = &s[..eq];
            if !label_name(name) {
                return Err(format!("bad label name {name:?}"));
            }
            s = s[eq + 1..]
                .strip_prefix('"')
                .ok_or("label value not quoted")?;
            let mut v = String::new();
            let mut chars = s.char_indices();
            let end = loop {
                match chars.next().ok_or("unterminated label value")? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                        '\\' => v.push('\\'),
                        '"' => v.push('"'),
                        'n' => v.push('\n'),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (_, c) => v.push(c),
                }
            };
            if out.iter().any(|(n, _)| n == name) {
                return Err(format!("label {name} twice"));
            }
            out.push((name.to_string(), v));
            s = &s[end + 1..];
            if let Some(rest) = s.strip_prefix(',') {
                s = rest;
            } else if !s.starts_with('}') {
                return Err("labels not separated by ,".into());
            }
        }
    }

    /// The text format 0.0.4, strictly: HELP and TYPE at most once per
    /// family, TYPE before the family's samples, a family's samples
    /// together, valid names, escapes and values, no duplicate series,
    /// counters named `_total` and not negative, a final line feed.
    fn parse(text: &str) -> Result<Parsed, String> {
        let mut p = Parsed::default();
        if text.is_empty() {
            return Ok(p);
        }
        let body = text.strip_suffix('\n').ok_or("no final line feed")?;
        let mut help = BTreeMap::new();
        let mut done = BTreeSet::new();
        let mut current: Option<String> = None;
        let mut series = BTreeSet::new();
        for line in body.split('\n') {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, text) = rest.split_once(' ').ok_or("HELP without text")?;
                if !metric_name(name) || help.insert(name.to_string(), text.to_string()).is_some() {
                    return Err(format!("bad or second HELP for {name}"));
                }
                if text.contains('\\') && !text.contains("\\\\") && !text.contains("\\n") {
                    return Err("bad escape in HELP".into());
                }
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or("TYPE without type")?;
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(format!("bad type {kind}"));
                }
                if p.families.contains_key(name) || done.contains(name) {
                    return Err(format!("second TYPE for {name}"));
                }
                if kind == "counter" && !name.ends_with("_total") {
                    return Err(format!("counter {name} not named _total"));
                }
                let h = help
                    .get(name)
                    .cloned()
                    .ok_or(format!("TYPE before HELP for {name}"))?;
                p.families.insert(name.to_string(), (kind.to_string(), h));
            } else if line.starts_with('#') || line.is_empty() {
                return Err(format!("unexpected line {line:?}"));
            } else {
                let end = line.find(['{', ' ']).ok_or("sample without value")?;
                let name = &line[..end];
                if !metric_name(name) {
                    return Err(format!("bad metric name {name:?}"));
                }
                let (labels, rest) = match line[end..].strip_prefix('{') {
                    Some(l) => labels(l)?,
                    None => (Vec::new(), &line[end..]),
                };
                let rest = rest.strip_prefix(' ').ok_or("no space before value")?;
                let v = value(rest.split(' ').next().unwrap_or(""))?;
                let (kind, _) = p
                    .families
                    .get(name)
                    .ok_or(format!("sample of {name} before its TYPE"))?;
                if kind == "counter" && (v.is_nan() || v < 0.0) {
                    return Err(format!("negative counter {name}"));
                }
                if current.as_deref() != Some(name) {
                    if let Some(prev) = current.replace(name.to_string()) {
                        done.insert(prev);
                    }
                    if done.contains(name) {
                        return Err(format!("samples of {name} not together"));
                    }
                }
                let mut key = labels.clone();
                key.sort();
                if !series.insert((name.to_string(), key)) {
                    return Err(format!("duplicate series of {name}"));
                }
                p.samples.push(Sample {
                    name: name.to_string(),
                    labels,
                    value: v,
                });
            }
        }
        Ok(p)
    }

    fn get(p: &Parsed, name: &str, resource: &str, event: Option<&str>) -> f64 {
        let found: Vec<_> = p
            .samples
            .iter()
            .filter(|s| {
                s.name == name
                    && s.labels
                        .iter()
                        .any(|(k, v)| k == "resource" && v == resource)
                    && event.is_none_or(|e| s.labels.iter().any(|(k, v)| k == "event" && v == e))
            })
            .collect();
        assert_eq!(found.len(), 1, "{name} {resource} {event:?}");
        found[0].value
    }

    const HOSTILE: &str = "GET /a\\b \"quoted\"\nline|two ü";

    /// A node, two gates and a keyed table, with a hostile name: the output
    /// parses strictly, has every family for every resource, and each value
    /// is what the API reads at the same `now`.
    /// A cluster node's origin rows pass the strict parser: one family
    /// each, the labels `resource`, `origin` (and `event`), every origin
    /// row once.
    #[test]
    fn prometheus_origin_rows_parse_strictly() {
        use leaparray::stats::{ClusterNode, Origin};
        let cn = Box::new(ClusterNode::<2>::millis());
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            cn.add_pass(Some(Origin::named(name)), 0, i as u64 + 1)
                .unwrap();
        }
        let names = |o: Origin| (o == Origin::named("a")).then_some("a");
        let mut e = Exposition::new("leaparray").unwrap();
        e.cluster(HOSTILE, &cn, &names, 0).unwrap();
        let text = e.to_string();
        let p = parse(&text).unwrap_or_else(|err| panic!("{err}\n{text}"));
        let rows: BTreeSet<String> = p
            .samples
            .iter()
            .filter(|s| s.name == "leaparray_origin_concurrency")
            .map(|s| {
                assert_eq!(s.labels[0], ("resource".to_string(), HOSTILE.to_string()));
                assert_eq!(s.labels[1].0, "origin");
                s.labels[1].1.clone()
            })
            .collect();
        assert_eq!(rows.len(), 3, "two resident and other: {rows:?}");
        assert!(rows.contains("other"));
    }

    #[test]
    fn prometheus_parses_strictly_with_the_values_the_api_reads() {
        let node = StatisticNode::millis();
        node.add_pass(100, 7).unwrap();
        node.add_block(200, 2).unwrap();
        node.add_rt_and_success(300, 12, 1).unwrap();
        node.add_rt_and_success(300, 40, 2).unwrap();
        node.add_exception(400, 1).unwrap();
        let _inflight = node.enter(400);
        let quiet = StatisticNode::millis(); // no RT: no min RT sample
        let gate = Gate::<2>::new(nz(500), 10);
        let _ = gate.try_acquire(100, 4);
        let big = Gate::<60>::new(nz(1_000), 100_000);
        let _ = big.try_acquire(100, 99);
        let table = KeyedGate::<2, 16>::new(nz(500), 3).with_overflow(Overflow::Refuse);
        for k in 0..40 {
            let _ = table.try_acquire(k, 100, 1);
        }
        let now = 500;

        let mut e = Exposition::new("leaparray").unwrap();
        e.node(HOSTILE, &node, now).unwrap();
        e.node("quiet", &quiet, now).unwrap();
        e.gate(HOSTILE, &gate, now)
            .unwrap()
            .gate("big", &big, now)
            .unwrap();
        e.keyed(HOSTILE, &table, now).unwrap();
        let text = e.to_string();
        let p = parse(&text).unwrap_or_else(|err| panic!("{err}\n{text}"));

        // Families: exactly these, typed as the module docs say.
        let want: BTreeMap<&str, &str> = [
            ("node_second_events", "gauge"),
            ("node_minute_events", "gauge"),
            ("node_concurrency", "gauge"),
            ("node_avg_rt_seconds", "gauge"),
            ("node_min_rt_seconds", "gauge"),
            ("gate_limit", "gauge"),
            ("gate_load", "gauge"),
            ("gate_remaining", "gauge"),
            ("keyed_limit", "gauge"),
            ("keyed_capacity", "gauge"),
            ("keyed_resident", "gauge"),
            ("keyed_recyclable", "gauge"),
            ("keyed_recycled_total", "counter"),
            ("keyed_overflowed_total", "counter"),
            ("keyed_evicted_total", "counter"),
            ("keyed_remembered_total", "counter"),
        ]
        .into_iter()
        .collect();
        let got: BTreeMap<&str, &str> = p
            .families
            .iter()
            .map(|(n, (k, _))| (n.strip_prefix("leaparray_").unwrap(), k.as_str()))
            .collect();
        assert_eq!(got, want);
        assert!(p.families.values().all(|(_, help)| !help.is_empty()));

        // Every sample names a resource added, and the hostile name survives.
        let resources: BTreeSet<_> = p
            .samples
            .iter()
            .map(|s| {
                s.labels
                    .iter()
                    .find(|(k, _)| k == "resource")
                    .unwrap()
                    .1
                    .clone()
            })
            .collect();
        let added: BTreeSet<_> = [HOSTILE, "quiet", "big"]
            .map(String::from)
            .into_iter()
            .collect();
        assert_eq!(resources, added);

        // Values: what the API reads at `now`.
        let f = |n: &str, r: &str, e: Option<&str>| get(&p, &format!("leaparray_{n}"), r, e);
        for (event, ev) in [
            ("pass", leaparray::stats::Event::Pass),
            ("block", leaparray::stats::Event::Block),
            ("exception", leaparray::stats::Event::Exception),
            ("success", leaparray::stats::Event::Success),
            ("occupied_pass", leaparray::stats::Event::OccupiedPass),
        ] {
            assert_eq!(
                f("node_second_events", HOSTILE, Some(event)),
                node.second().total(now, ev) as f64
            );
            assert_eq!(
                f("node_minute_events", HOSTILE, Some(event)),
                node.minute().total(now, ev) as f64
            );
        }
        assert_eq!(
            f("node_concurrency", HOSTILE, None),
            node.concurrency() as f64
        );
        assert_eq!(
            f("node_avg_rt_seconds", HOSTILE, None),
            node.avg_rt(now) / 1_000.0
        );
        assert_eq!(
            f("node_min_rt_seconds", HOSTILE, None),
            node.min_rt(now).unwrap() as f64 / 1_000.0
        );
        assert!(!p
            .samples
            .iter()
            .any(|s| s.name.ends_with("min_rt_seconds")
                && s.labels.iter().any(|(_, v)| v == "quiet")));
        for (name, g) in [(HOSTILE, gate.limit()), ("big", big.limit())] {
            assert_eq!(f("gate_limit", name, None), g as f64);
        }
        assert_eq!(f("gate_load", HOSTILE, None), gate.peek(now) as f64);
        assert_eq!(
            f("gate_remaining", HOSTILE, None),
            gate.remaining(now) as f64
        );
        assert_eq!(f("gate_remaining", "big", None), big.remaining(now) as f64);
        let s = table.occupancy(now);
        assert_eq!(f("keyed_resident", HOSTILE, None), s.resident as f64);
        assert_eq!(f("keyed_recyclable", HOSTILE, None), s.recyclable as f64);
        assert_eq!(f("keyed_recycled_total", HOSTILE, None), s.recycled as f64);
        assert_eq!(
            f("keyed_overflowed_total", HOSTILE, None),
            s.overflowed as f64
        );
        assert!(
            s.overflowed > 0,
            "the table overflowed: a counter above 0 is checked"
        );
        assert_eq!(f("keyed_evicted_total", HOSTILE, None), s.evicted as f64);
        assert_eq!(
            f("keyed_remembered_total", HOSTILE, None),
            s.remembered as f64
        );
        assert_eq!(f("keyed_capacity", HOSTILE, None), table.capacity() as f64);
        assert_eq!(f("keyed_limit", HOSTILE, None), 3.0);
    }

    /// The parser itself refuses what the format forbids (so the test
    /// above can fail).
    #[test]
    fn prometheus_parser_refuses_malformed_text() {
        let ok = "# HELP a_b x\n# TYPE a_b gauge\na_b{resource=\"r\"} 1\n";
        assert!(parse(ok).is_ok());
        for bad in [
            "# HELP a_b x\n# TYPE a_b gauge\na_b{resource=\"r\"} 1",
            "# HELP a_b x\n# TYPE a_b gauge\na_b{resource=\"r\\q\"} 1\n",
            "# HELP a_b x\n# TYPE a_b gauge\na_b{resource=\"r\"} 1\na_b{resource=\"r\"} 2\n",
            "# HELP a_b x\n# TYPE a_b counter\na_b{resource=\"r\"} 1\n",
            "# HELP a-b x\n# TYPE a-b gauge\na-b 1\n",
            "a_b 1\n",
            "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na 1\nb 1\na{x=\"1\"} 1\n",
            "# HELP a x\n# TYPE a gauge\na{resource=\"r\" 1\n",
            "# HELP a x\n# TYPE a gauge\na one\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    /// Label values round-trip through the format's escaping.
    #[test]
    fn prometheus_label_escaping_round_trips() {
        let gate = Gate::<2>::new(nz(500), 1);
        for name in ["\\", "\"", "\n", "\\n", "a\\\"b", "}\" 1\nx 2", "ü\u{0}"] {
            let mut e = Exposition::new("t").unwrap();
            e.gate(name, &gate, 0).unwrap();
            let p = parse(&e.to_string()).unwrap();
            for s in &p.samples {
                assert_eq!(s.labels, vec![("resource".to_string(), name.to_string())]);
            }
            assert_eq!(p.samples.len(), 3);
        }
    }

    /// A bad prefix, an empty or repeated name: refused, nothing added.
    #[test]
    fn prometheus_refuses_bad_prefix_empty_and_duplicate_names() {
        for bad in ["", "9a", "a-b", "a b", "ü"] {
            assert_eq!(
                Exposition::new(bad).unwrap_err(),
                ExportError::InvalidPrefix
            );
        }
        for good in ["a", "_a", ":a:b_9"] {
            assert!(Exposition::new(good).is_ok());
        }
        let node = StatisticNode::millis();
        let gate = Gate::<2>::new(nz(500), 1);
        let mut e = Exposition::new("x").unwrap();
        e.node("n", &node, 0).unwrap();
        let before = e.clone();
        assert_eq!(e.node("n", &node, 0).unwrap_err(), ExportError::Duplicate);
        assert_eq!(e.gate("", &gate, 0).unwrap_err(), ExportError::EmptyName);
        assert_eq!(e, before);
        // The same name for a node and a gate is fine: different families.
        e.gate("n", &gate, 0).unwrap();
        assert!(parse(&e.to_string()).is_ok());
    }
}

/// Per-origin lines under a flood of origins into a `ClusterNode<4>`
/// (40 callers over 3 windows): at most 5 origin rows per window (4
/// resident and "other"), and, window by window, the origin lines add up
/// to the resource's own line (Sentinel's parser reads them all).
#[test]
fn origin_lines_are_bounded_by_the_table_and_add_up_to_the_resource() {
    use leaparray::stats::{ClusterNode, Origin};
    use std::collections::BTreeMap;
    let cn = Box::new(ClusterNode::<4>::millis());
    let named: Vec<(Origin, String)> = (0..40)
        .map(|i| (Origin::named(&format!("app{i}")), format!("app{i}")))
        .collect();
    let names = |o: Origin| named.iter().find(|(n, _)| *n == o).map(|(_, s)| s.as_str());
    // Under Miri every 37th step only (37 is prime to 3, 5, 11 and 40:
    // every origin and every kind of record still comes).
    for t in (0..3_000u64).step_by(if cfg!(miri) { 37 } else { 1 }) {
        let (o, _) = &named[(t * 7 % 40) as usize];
        if t % 3 == 0 {
            cn.add_block(Some(*o), t, 1).unwrap();
        } else {
            cn.enter(Some(*o), t, 1).exit(t + 2, t % 5 == 0);
        }
        if t % 11 == 0 {
            cn.add_pass(None, t, 1).unwrap();
        }
    }
    let log = MetricLog::new(nz(1_000));
    let now = 3_000;
    let mut origins = String::new();
    let last = log
        .write_origins(&mut origins, "getOrder", &cn, &names, now, None)
        .unwrap();
    assert_eq!(last, Some(2_000));
    let mut resource = String::new();
    log.write_completed(&mut resource, "getOrder", cn.total().minute(), now, None)
        .unwrap();
    let mut sums: BTreeMap<u64, [u64; 7]> = BTreeMap::new();
    let mut rows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in origins.lines() {
        let (ts, _, name, nums) = parse_line(line, LineFormat::Thin);
        let origin = name.strip_prefix("getOrder@").expect("resource@origin");
        assert!(
            origin == "other" || names(Origin::named(origin)).is_some(),
            "{origin}"
        );
        rows.entry(ts).or_default().push(origin.to_string());
        let s = sums.entry(ts).or_default();
        // Events add up; rt (a mean) and the peak do not.
        for i in [0, 1, 2, 3, 5] {
            s[i] += nums[i];
        }
    }
    assert_eq!(rows.len(), 3);
    for (ts, r) in &rows {
        assert!(r.len() <= 5, "window {ts}: {r:?}");
        assert!(r.iter().filter(|o| *o == "other").count() == 1, "{r:?}");
    }
    for line in resource.lines() {
        let (ts, _, _, nums) = parse_line(line, LineFormat::Thin);
        let s = sums[&ts];
        for i in [0, 1, 2, 3, 5] {
            assert_eq!(s[i], nums[i], "window {ts}, field {i}");
        }
    }
}

/// The exposition's origin rows: one per resident origin and one
/// "other", their passes adding up to the resource's; a name that would
/// break a label or pose as "other" is written as the hash.
#[cfg(feature = "std")]
#[test]
fn exposition_origin_rows_add_up_and_never_pose_as_other() {
    use leaparray::export::Exposition;
    use leaparray::stats::{ClusterNode, Origin};
    let cn = Box::new(ClusterNode::<2>::millis());
    let (a, b, c) = (Origin::named("a"), Origin::named("b"), Origin::named("c"));
    cn.add_pass(Some(a), 0, 1).unwrap();
    cn.add_pass(Some(b), 0, 2).unwrap();
    cn.add_pass(Some(c), 0, 4).unwrap(); // evicts a or b
    let names = |o: Origin| {
        Some(if o == a {
            "a"
        } else if o == b {
            "other"
        } else {
            "c\nd"
        })
    };
    let mut e = Exposition::new("x").unwrap();
    e.cluster("r", &cn, &names, 0).unwrap();
    let text = e.to_string();
    let passes: Vec<(String, u64)> = text
        .lines()
        .filter(|l| l.starts_with("x_origin_second_events{") && l.contains("event=\"pass\""))
        .map(|l| {
            let origin = l
                .split("origin=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (
                origin.to_string(),
                l.rsplit(' ').next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(passes.len(), 3, "{text}");
    assert_eq!(passes.iter().map(|(_, p)| p).sum::<u64>(), 7);
    assert_eq!(passes.iter().filter(|(o, _)| o == "other").count(), 1);
    assert!(
        passes.contains(&(format!("#{:016x}", c.hash()), 4)),
        "{passes:?}"
    );
}

/// Two origins the resolver gives one name: the second row is written by
/// its hash, so no two series of the exposition are one.
#[cfg(feature = "std")]
#[test]
fn exposition_origin_rows_never_share_a_label() {
    use leaparray::export::Exposition;
    use leaparray::stats::{ClusterNode, Origin};
    let cn = Box::new(ClusterNode::<4>::millis());
    cn.add_pass(Some(Origin::named("a")), 0, 1).unwrap();
    cn.add_pass(Some(Origin::named("b")), 0, 1).unwrap();
    let mut e = Exposition::new("x").unwrap();
    e.cluster("r", &cn, &|_| Some("same"), 0).unwrap();
    let text = e.to_string();
    let mut rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("x_origin_concurrency{"))
        .collect();
    let n = rows.len();
    rows.sort();
    rows.dedup();
    assert_eq!((n, rows.len()), (3, 3), "{text}");
}

/// Two origins the resolver gives one name: the second's lines name it by
/// its hash, so no two lines of one window share a resource field.
#[test]
fn origin_lines_never_share_a_resource_field() {
    use leaparray::stats::{ClusterNode, Origin};
    let cn = Box::new(ClusterNode::<4>::millis());
    cn.add_pass(Some(Origin::named("a")), 0, 1).unwrap();
    cn.add_pass(Some(Origin::named("b")), 0, 1).unwrap();
    let mut out = String::new();
    MetricLog::new(nz(1_000))
        .write_origins(&mut out, "r", &cn, &|_| Some("same"), 1_000, None)
        .unwrap();
    let mut fields: Vec<&str> = out.lines().map(|l| l.split('|').nth(1).unwrap()).collect();
    let n = fields.len();
    fields.sort();
    fields.dedup();
    assert_eq!((n, fields.len()), (2, 2), "{out}");
}
