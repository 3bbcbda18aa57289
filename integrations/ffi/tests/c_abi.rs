//! The C side: the committed header is what cbindgen generates, the C
//! compiler lays its types out as Rust does, and the C test program
//! (`tests/c/test.c`, under AddressSanitizer and UBSan) passes. Needs
//! `cbindgen` (`cargo install cbindgen --locked`) and a C compiler (`CC`,
//! or `cc`); not under Miri, which runs no processes.
#![cfg(not(miri))]

use std::path::{Path, PathBuf};
use std::process::Command;

use leaparray_ffi::*;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// The committed header is cbindgen's output for this crate, byte for byte.
/// Regenerate: `cbindgen --config cbindgen.toml --output include/leaparray.h`
/// in `integrations/ffi`.
#[test]
fn header_is_generated() {
    let dir = crate_dir();
    let out = Command::new("cbindgen")
        .current_dir(&dir)
        .args(["--config", "cbindgen.toml", "--quiet"])
        .output()
        .expect("cbindgen: install it with `cargo install cbindgen --locked`");
    assert!(
        out.status.success(),
        "cbindgen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read(dir.join("include/leaparray.h")).unwrap();
    assert!(
        committed == out.stdout,
        "include/leaparray.h is not what cbindgen generates: run \
         `cbindgen --config cbindgen.toml --output include/leaparray.h` in integrations/ffi"
    );
}

/// Each storage type's size and alignment in C (`sizeof`, `_Alignof`, and
/// the header's macros) equal Rust's `size_of` and `align_of`, checked by
/// `_Static_assert` in a C file compiled against the header.
#[test]
fn header_layout_is_rust_layout() {
    use core::mem::{align_of, size_of};
    let mut c = String::from("#include <stddef.h>\n#include \"leaparray.h\"\n");
    let mut check = |name: &str, macro_: Option<&str>, size: usize, align: usize| {
        c += &format!(
            "_Static_assert(sizeof({name}) == {size}, \"{name}: size\");\n\
             _Static_assert(_Alignof({name}) == {align}, \"{name}: alignment\");\n"
        );
        if let Some(m) = macro_ {
            c += &format!("_Static_assert({m}_SIZE == {size} && {m}_ALIGN == {align}, \"{m}\");\n");
        }
    };
    macro_rules! storage {
        ($($t:ident $m:literal),* $(,)?) => {
            $(check(stringify!($t), Some($m), size_of::<$t>(), align_of::<$t>());)*
        };
    }
    storage!(
        leap_gate2_t "LEAP_GATE2", leap_gate4_t "LEAP_GATE4", leap_gate10_t "LEAP_GATE10",
        leap_keyed64_t "LEAP_KEYED64", leap_keyed1k_t "LEAP_KEYED1K",
        leap_keyed16k_t "LEAP_KEYED16K", leap_local64_t "LEAP_LOCAL64",
        leap_local1k_t "LEAP_LOCAL1K", leap_local16k_t "LEAP_LOCAL16K",
        leap_array_t "LEAP_ARRAY", leap_shards_t "LEAP_SHARDS",
        leap_shard_writer_t "LEAP_SHARD_WRITER",
    );
    check(
        "leap_status_t",
        None,
        size_of::<leap_status_t>(),
        align_of::<leap_status_t>(),
    );
    check(
        "leap_request_t",
        None,
        size_of::<leap_request_t>(),
        align_of::<leap_request_t>(),
    );
    c += &format!(
        "_Static_assert(offsetof(leap_request_t, n) == {}, \"leap_request_t.n\");\n\
         _Static_assert(LEAP_COUNTERS == {LEAP_COUNTERS} && LEAP_SHARDS == {LEAP_SHARDS} \
         && LEAP_WINDOWS == {LEAP_WINDOWS}, \"counts\");\n\
         _Static_assert(LEAP_GATE_MAX_LIMIT == {LEAP_GATE_MAX_LIMIT}ULL \
         && LEAP_KEYED_MAX_LIMIT == {LEAP_KEYED_MAX_LIMIT}, \"limits\");\n",
        core::mem::offset_of!(leap_request_t, n),
    );
    let dir = std::env::temp_dir().join(format!("leaparray-ffi-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("layout.c");
    std::fs::write(&file, &c).unwrap();
    let out = Command::new(cc())
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
            "-I",
        ])
        .arg(crate_dir().join("include"))
        .arg(&file)
        .output()
        .expect("a C compiler (CC, or cc)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "the header's layout is not Rust's:\n{}\n{c}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tests/c/run.sh`: the C test program, every bad input and exact counts,
/// under AddressSanitizer and UndefinedBehaviorSanitizer.
#[test]
fn c_program_under_sanitizers() {
    let script = crate_dir().join("tests/c/run.sh");
    let out = Command::new("bash")
        .arg(Path::new(&script))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("FFI C OK"),
        "tests/c/run.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
