//! The examples of `leaparray` are the other `.rs` files of this directory;
//! run one with `cargo run --example boundary` from the repository root.
//! This library is empty: a package needs a target besides its examples.
//! (`no_std`, so that root builds for embedded targets, which build every
//! default member, build it too.)
#![no_std]
