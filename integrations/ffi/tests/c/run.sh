#!/usr/bin/env bash
# Builds the static library, then the C test program (test.c) against it
# and the committed header with AddressSanitizer and UndefinedBehaviorSanitizer,
# and runs it. Exits non-zero on any failure. Run from anywhere:
# `bash integrations/ffi/tests/c/run.sh`; `tests/c_abi.rs` runs it.
# CC picks the compiler (gcc by default; clang works too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../.." && pwd)
root=$(cd "$crate/../.." && pwd)
# A target directory of its own: `cargo test` holds the workspace's while
# this script runs under it.
target=${LEAP_FFI_C_TARGET:-$root/target/ffi-c}
cargo build --quiet --manifest-path "$root/Cargo.toml" -p leaparray-ffi --target-dir "$target"
out=$target/c-test
mkdir -p "$out"
"${CC:-gcc}" -std=c11 -O1 -g -Wall -Wextra -Werror -pedantic \
  -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
  -I "$crate/include" "$here/test.c" "$target/debug/libleaparray_ffi.a" \
  -lpthread -ldl -lm -o "$out/test"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$out/test"
