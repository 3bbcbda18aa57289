#!/usr/bin/env bash
# C firmware under QEMU (examples/firmware-c): a C program for the LM3S6965
# (Cortex-M3) linking leaparray-ffi's static library built for
# thumbv7m-none-eabi; its SysTick handler and main loop race on a static
# ring, gate and per-source table, and it checks every window against its
# ledgers. Passes when QEMU exits 0 (the firmware's verdict, through
# semihosting) and the output says FIRMWARE OK. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
need=""
command -v arm-none-eabi-gcc >/dev/null || need="$need gcc-arm-none-eabi"
[ -f /usr/lib/arm-none-eabi/lib/thumb/v7-m/nofp/libc.a ] || need="$need libnewlib-arm-none-eabi"
command -v qemu-system-arm >/dev/null || need="$need qemu-system-arm"
if [ -n "$need" ]; then
  apt-get update
  # shellcheck disable=SC2086 # one package per word
  apt-get install -y $need
fi
rustup target add thumbv7m-none-eabi
cd examples/firmware-c
make clean
make
timeout 60 make -s run | tee /tmp/firmware-c.log
grep -q "^FIRMWARE OK" /tmp/firmware-c.log
./size.sh build/firmware.elf
