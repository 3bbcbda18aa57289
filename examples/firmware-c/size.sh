#!/usr/bin/env bash
# Code and RAM of the C firmware image, and who they belong to: the C
# program (main.c, report.c, startup.c), leaparray-ffi's static library
# (leaparray, the FFI layer, and the parts of Rust's core and
# compiler_builtins it pulls in), libgcc. From the linker map the Makefile
# writes beside the ELF.
# Usage: examples/firmware-c/size.sh build/firmware.elf
set -euo pipefail
elf=$1
map=${elf%.elf}.map
arm-none-eabi-size "$elf"
python3 - "$map" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
# Output sections of the image and the input sections placed in each.
sizes = {}
section = None
pending = None
for line in lines:
    m = re.match(r"^(\.\S+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+", line) or re.match(r"^(\.\S+)\s*$", line)
    if m and not line.startswith(" "):
        section = m.group(1)
        continue
    if section not in (".vectors", ".text", ".rodata", ".ARM.exidx", ".data", ".bss"):
        continue
    m = re.match(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)$", line)
    if not m:
        continue
    size, source = int(m.group(3), 16), m.group(4)
    if "libleaparray_ffi.a" in source:
        who = "leaparray-ffi library"
    elif "libgcc.a" in source:
        who = "libgcc"
    else:
        who = "C program"
    kind = {".data": "RAM", ".bss": "RAM", ".rodata": "constants"}.get(section, "code")
    sizes[(who, kind)] = sizes.get((who, kind), 0) + size
for who in ("C program", "leaparray-ffi library", "libgcc"):
    code, constants, ram = (sizes.get((who, k), 0) for k in ("code", "constants", "RAM"))
    print(f"{who}: {code + constants} bytes of flash ({code} code, {constants} constants), "
          f"{ram} bytes of static RAM")
PY
