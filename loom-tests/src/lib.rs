//! Loom models of leaparray live in `tests/`; run them with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release`.
