#!/usr/bin/env bash
# Throughput and p99 of one axum handler behind no layer, leaparray-tower's
# layer and tower_governor's, at a limit never reached (bench_server.rs).
# Not in CI. Holds the machine-wide benchmark lock. On 2 cores: the server
# on core 0 (its tokio runtime's 2 workers share it), wrk on core 1.
# Rounds interleave the three servers; prints every run and the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { apt-get update && apt-get install -y wrk; }
cargo build --release -p leaparray-tower --example bench_server
bin=target/release/examples/bench_server
rounds=${ROUNDS:-3} secs=${SECS:-5}
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
run() {
  local which=$1 round=$2
  taskset -c 0 "$bin" "$which" 0 >"$out/srv.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q '^listening on' "$out/srv.log" && break; sleep 0.05; done
  local addr; addr=$(sed -n 's/^listening on //p' "$out/srv.log")
  taskset -c 1 wrk -t1 -c64 -d"${secs}s" --latency "http://$addr/" >"$out/wrk.log"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  local rps p99 non2xx
  rps=$(awk '/^Requests\/sec/ { print $2 }' "$out/wrk.log")
  p99=$(awk '$1 == "99%" { print $2 }' "$out/wrk.log")
  non2xx=$(awk '/Non-2xx/ { print $NF }' "$out/wrk.log")
  echo "$which round $round: $rps req/s, p99 $p99, non-2xx ${non2xx:-0}" | tee -a "$out/all"
}
flock /tmp/leaparray-bench.lock bash -c "true" # fail early if flock is missing
exec 9>/tmp/leaparray-bench.lock
flock 9
for r in $(seq "$rounds"); do
  for which in none leaparray governor; do run "$which" "$r"; done
done
echo "medians:"
for which in none leaparray governor; do
  rps=$(grep "^$which " "$out/all" | awk '{ print $4 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  p99=$(grep "^$which " "$out/all" | sed 's/.*p99 \([^,]*\),.*/\1/' | sort -h | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  echo "$which: $rps req/s, p99 $p99"
done
