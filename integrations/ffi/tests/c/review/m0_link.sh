#!/usr/bin/env bash
# Review rev50, D5: a C program for Cortex-M0 (thumbv6m-none-eabi) linking
# the staticlib built as the header's Cortex-M0 row says (portable-atomic,
# single core: interrupts masked). Exits 1 (and prints the linker's
# undefined references) if the link fails. (The row named
# portable-atomic-critical-section, whose Rust-ABI critical-section symbols
# a C program cannot define: the link failed with 123 + 133 undefined
# references.)
#   bash integrations/ffi/tests/c/review/m0_link.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../../.." && pwd)
root=$(cd "$crate/../.." && pwd)
target=$root/target/rev50-m0
RUSTFLAGS="--cfg portable_atomic_unsafe_assume_single_core" \
  cargo build -q --release --manifest-path "$root/Cargo.toml" -p leaparray-ffi \
  --target thumbv6m-none-eabi --features portable-atomic --target-dir "$target" || exit 2
rm -f "$target/m0_gate.elf"
arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -Os -std=c11 -I "$crate/include" --specs=nosys.specs \
  -Wl,--gc-sections "$here/m0_gate.c" "$target/thumbv6m-none-eabi/release/libleaparray_ffi.a" \
  -o "$target/m0_gate.elf" 2>&1 | grep -oE "undefined reference to \`[^']*'" | sort | uniq -c
if [ -f "$target/m0_gate.elf" ]; then echo "m0: linked"; exit 0; fi
echo "DEFECT D5: the Cortex-M0 build of the header's table does not link from C"
exit 1
