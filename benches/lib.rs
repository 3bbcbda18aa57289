//! The benchmarks of `leaparray` live in `benches/` of this crate; see
//! `README.md` here for how to run them and the figures of the last run.
//! This library is empty: a package needs a target besides its benches.
