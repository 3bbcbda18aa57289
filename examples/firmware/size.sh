#!/usr/bin/env bash
# Code size of a built firmware image: .text, and the bytes of leaparray's
# own out-of-line functions (what inlining put into callers is not counted).
# Usage: examples/firmware/size.sh <path to the ELF>
set -euo pipefail
elf=$1
bin=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin
text=$("$bin/llvm-size" -A "$elf" | awk '$1 == ".text" { print $2 }')
own=$("$bin/llvm-nm" --radix=d --size-sort -S -C "$elf" | awk 'tolower($3) == "t" && $4 ~ /^leaparray::/ { s += $2 } END { print s + 0 }')
div=$("$bin/llvm-nm" --radix=d --size-sort -S -C "$elf" | awk 'tolower($3) == "t" && $4 ~ /u64_div_rem|__udivmoddi4|__aeabi_uldivmod/ { s += $2 } END { print s + 0 }')
echo "$elf: .text $text bytes; leaparray's own functions $own bytes; 64-bit division helpers $div bytes"
