#!/usr/bin/env bash
# The commands README.md's "Around the core" table gives, as written, in the
# debug profile where they name none. Each row's command is checked to be
# one of these, so a README change that CI does not run fails here:
#  - `cargo run -p leaparray-tower --example server`: started here, one
#    request answered 200, stopped;
#  - `cargo test -p leaparray-redis`: .ci/redis.sh (its test binaries in
#    groups, beside the servers they start);
#  - `cargo test -p leaparray-governor`: the workspace's debug tests;
#  - `cargo run --release -p leaparray-xdp -- --check`: .ci/xdp.sh (it
#    needs network namespaces);
#  - `cargo test -p leaparray-ffi`: the workspace's debug tests.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=$(sed -n '/^## Around the core/,/^## /p' README.md | grep -oE '\| `cargo [^`]*` \|$' | sed 's/^| `//; s/` |$//')
expected='cargo run -p leaparray-tower --example server
cargo test -p leaparray-redis
cargo test -p leaparray-governor
cargo run --release -p leaparray-xdp -- --check
cargo test -p leaparray-ffi'
if [ "$rows" != "$expected" ]; then
  printf 'README.md "Around the core" gives:\n%s\nCI runs:\n%s\n' "$rows" "$expected"; exit 1
fi
command -v curl >/dev/null || { apt-get update; apt-get install -y curl; }
log=$(mktemp)
pid=
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -f "$log"; }
trap cleanup EXIT
cargo build -p leaparray-tower --example server
cargo run -p leaparray-tower --example server >"$log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q '^listening on' "$log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$log")
[ -n "$addr" ] || { echo "the tower example did not start"; cat "$log"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'x-api-key: readme' "http://$addr/")
[ "$code" = 200 ] || { echo "the tower example answered $code, not 200"; cat "$log"; exit 1; }
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
echo "README commands: the tower example (debug) answered 200 on $addr"
