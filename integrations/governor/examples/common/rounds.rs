//! What the examples of interleaved rounds (`store_vs`, `flood_vs`) share:
//! the `--rounds` argument, the median of a round's times, and the host's
//! load average, printed beside them. (`leaparray-benches` has the same
//! three for its binaries; this crate's examples are published with it and
//! cannot reach that unpublished crate.)

/// The `--rounds R` of the command line, or `default`.
pub fn rounds(default: usize) -> usize {
    std::env::args()
        .skip_while(|a| a != "--rounds")
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// The median of `v` (the upper one of an even count); `v` is not empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The host's load averages (1, 5 and 15 minutes, `/proc/loadavg`), or
/// `unknown`.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
