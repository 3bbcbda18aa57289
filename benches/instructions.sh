#!/usr/bin/env bash
# Instructions per keyed decision (benches/benches/decisions.rs) under
# callgrind, both regimes: `bash benches/instructions.sh`. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update && apt-get install -y valgrind; }
bin=$(cargo bench -p leaparray-benches --bench decisions --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*decisions[^"]*\)".*/\1/p' | tail -1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for regime in hot cold; do
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" "$regime" >"$out/log" 2>/dev/null
  decisions=$(awk '{ print $2 }' "$out/log")
  echo "$(cat "$out/log")"
  callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null |
    awk -v n="$decisions" -v r="$regime" '/decisions::(local|shared|floor)_burst \[/ {
      gsub(",", "", $1); f = ($0 ~ /local_burst/) ? "LocalKeyedGate" : ($0 ~ /floor_burst/) ? "floor (plain single-writer table)" : "KeyedGate";
      printf "  %s %s: %.1f instructions per decision\n", r, f, $1 / n }'
done
