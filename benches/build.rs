//! The commit the benchmarks are built from, for the scaling chart's title:
//! `LEAPARRAY_COMMIT`, the output of `git rev-parse --short HEAD`, or
//! `unknown` outside the workspace's own git checkout (a source tarball,
//! even one unpacked inside another checkout) or without git.

use std::process::Command;

/// `git` with `args` in this package's directory: its trimmed output, if it
/// ran and succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

/// Whether the git checkout git finds is this workspace's own (the
/// directory above this package), not one that a copy of the source was
/// unpacked inside.
fn own_checkout() -> bool {
    let top = git(&["rev-parse", "--show-toplevel"]).and_then(|t| std::fs::canonicalize(t).ok());
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(|w| std::fs::canonicalize(w).ok());
    top.is_some() && top == workspace
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if !own_checkout() {
        println!("cargo:rustc-env=LEAPARRAY_COMMIT=unknown");
        return;
    }
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LEAPARRAY_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout) and the branch it
    // names (a commit). In a worktree both live in the main checkout's
    // `.git`, which `--git-path` finds. A branch whose ref is packed has no
    // file of its own: a path that does not exist makes cargo run this
    // script on every build, which is cheap.
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={}", abs(&head));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={}", abs(&path));
        }
    }
}

/// `--git-path` answers relative to the directory git ran in.
fn abs(path: &str) -> String {
    let p = std::path::Path::new(path);
    if p.is_absolute() {
        path.to_owned()
    } else {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(p)
            .display()
            .to_string()
    }
}
