#!/usr/bin/env bash
# Review stop55: init of 128-bit objects on an x86-64 CPU without
# cmpxchg16b returns LEAP_ERR_NOT_LOCK_FREE (no_cx16.c). The release
# staticlib, one C program, run under qemu-x86_64 (user mode) as a CPU
# without the instruction and as one with it, and natively. x86-64 hosts
# only; needs qemu-x86_64 (Debian/Ubuntu: qemu-user).
#   bash integrations/ffi/tests/c/review/no_cx16.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../../.." && pwd)
root=$(cd "$crate/../.." && pwd)
target=${LEAP_FFI_C_TARGET:-$root/target/ffi-c}
[ "$(uname -m)" = x86_64 ] || { echo "no_cx16: not an x86-64 host, nothing to run"; exit 0; }
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p leaparray-ffi --target-dir "$target"
out=$target/c-review
mkdir -p "$out"
"${CC:-gcc}" -std=c11 -O1 -g -Wall -Wextra -Werror -I "$crate/include" "$here/no_cx16.c" \
  "$target/release/libleaparray_ffi.a" -lpthread -ldl -lm -o "$out/no_cx16"
echo "--- qemu-x86_64 -cpu qemu64,-cx16 (no cmpxchg16b)"
qemu-x86_64 -cpu qemu64,-cx16 "$out/no_cx16" refused
echo "--- qemu-x86_64 -cpu qemu64 (cmpxchg16b)"
qemu-x86_64 -cpu qemu64 "$out/no_cx16" accepted
echo "--- this machine"
if grep -qw cx16 /proc/cpuinfo; then "$out/no_cx16" accepted; else "$out/no_cx16" refused; fi
