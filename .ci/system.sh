#!/usr/bin/env bash
# Adaptive system protection (src/system.rs): the simulated server of
# examples/adaptive.rs. The example asserts what the module docs claim:
# under rising load the guard keeps requests in flight and latency near
# capacity, admits within 3% of capacity every saturated second, and no
# second's admitted load moves by more than 10% from the second before.
# Exits non-zero otherwise. A debug build; the run takes a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo run --example adaptive | tee "$log" | tail -n 12
if grep -q "^ADAPTIVE OK$" "$log"; then
  echo "system: adaptive protection holds (examples/adaptive.rs)"
else
  echo "system: FAILED (see the table above)"; exit 1
fi
