#!/usr/bin/env bash
# Miri (strict provenance) on the whole host test suite: unit, integration
# and doc tests, in two halves side by side (Miri interprets on one core).
# The halves together name every test target: `--lib` of each default
# member, each tests/*.rs, and the doc tests. Any other kind of target
# fails the run. Exits non-zero if either half fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="-Zmiri-strict-provenance"
# Logs of this run only (a second run at the same time has its own).
log=target/miri-logs/$$
mkdir -p "$log"
cargo +nightly miri test --lib --tests --no-run >"$log/build.log" 2>&1 || { cat "$log/build.log"; exit 1; }
cat "$log/build.log"
miri_targets=$(sed -n 's/^ *Executable \(.*\) (.*/\1/p' "$log/build.log")
# Half a: the libraries' unit tests and the longest integration tests under
# Miri; half b: every other integration test target `--tests` built, so a
# new test file is always run.
miri_a="keyed shard local local_burst stress api"
miri_b=""
for t in $(printf '%s\n' "$miri_targets" | sed -n 's|^tests/\(.*\)\.rs$|\1|p'); do
  case " $miri_a " in *" $t "*) ;; *) miri_b="$miri_b --test $t" ;; esac
done
if printf '%s\n' "$miri_targets" | grep -vE '^(unittests (src/)?lib\.rs|tests/[a-z0-9_]+\.rs)$'; then
  echo "Miri: a test target (above) that neither half runs"; exit 1
fi
# Each half's output goes to its own log, printed whole once both are done.
# shellcheck disable=SC2046,SC2086
cargo +nightly miri test --lib $(printf -- ' --test %s' $miri_a) >"$log/a.log" 2>&1 &
pid_a=$!
# shellcheck disable=SC2086
(cargo +nightly miri test $miri_b && cargo +nightly miri test --doc) >"$log/b.log" 2>&1 &
pid_b=$!
failed=0
for half in a b; do
  pid_var="pid_$half"
  if wait "${!pid_var}"; then r=ok; else r=FAILED; failed=1; fi
  printf '\n--- Miri half %s: %s\n' "$half" "$r"
  cat "$log/$half.log"
done
[ "$failed" = 0 ]
