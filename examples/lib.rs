//! The examples of `leaparray` are the other `.rs` files of this directory;
//! run one with `cargo run --example boundary` from the repository root.
//! This library is empty: a package needs a target besides its examples.
