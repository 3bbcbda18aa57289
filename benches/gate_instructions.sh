#!/usr/bin/env bash
# Instructions per `Gate<2>::try_acquire` and per governor `check()`
# (benches/bin/gate_instructions.rs) under callgrind, admitted and refused,
# built with cargo's default release profile and with thin LTO and one
# codegen unit: `bash benches/gate_instructions.sh`. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update && apt-get install -y valgrind; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # profile-label binary
  for w in gate_admit gate_wide_admit governor_admit gate_refuse gate_wide_refuse governor_refuse; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$2" "$w" >"$out/log" 2>/dev/null
    read -r _ calls admitted <"$out/log"
    f=$([[ $w == gate* ]] && echo gate_once || echo governor_once)
    callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null |
      awk -v n="$calls" -v a="$admitted" -v w="$w" -v p="$1" -v f="gate_instructions::$f" \
        'index($0, f " [") { gsub(",", "", $1); printf "%-8s %-16s %6.2f instructions per call (%d of %d admitted)\n", p, w, $1 / n, a, n; exit }'
  done
}
build() { # target-dir, then cargo's environment overrides
  local dir=$1; shift
  env "$@" CARGO_TARGET_DIR="$dir" cargo build --release -p leaparray-benches --bin gate_instructions --quiet
  echo "$dir/release/gate_instructions"
}
count default "$(build target)"
count thin "$(build target/thin-lto CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1)"
