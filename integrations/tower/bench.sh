#!/usr/bin/env bash
# One axum handler behind no layer, leaparray-tower's layer and
# tower_governor's, at a limit never reached (examples/bench_server.rs).
# Not in CI. Holds the machine-wide benchmark lock.
#
#   bash integrations/tower/bench.sh               # throughput (wrk)
#   bash integrations/tower/bench.sh instructions  # instructions per request
#
# Throughput: on 2 cores, the server on core 0 (its tokio runtime's 2
# workers share it), wrk on core 1; rounds interleave the servers; prints
# every run (req/s, p99, the server's CPU time per request) and the medians,
# with each server's change against the first one as the median of the
# rounds' paired changes (a round's servers run seconds apart, so drift in
# the machine's load cancels out of a pair).
# Instructions: the server under callgrind (user space, all threads),
# wrk for SECS seconds after a second of warm-up; instructions per request.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-throughput}
command -v wrk >/dev/null || { apt-get update && apt-get install -y wrk; }
if [ "$mode" = instructions ]; then
  command -v valgrind >/dev/null || { apt-get update && apt-get install -y valgrind; }
fi
cargo build --release -p leaparray-tower --example bench_server
bin=target/release/examples/bench_server
servers=${SERVERS:-none noop leaparray leaparray-quiet governor governor-headers}
rounds=${ROUNDS:-5} secs=${SECS:-3}
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
tck=$(getconf CLK_TCK)
start() { # start <which> [launcher...]: the server, its address in $addr
  local which=$1; shift
  "$@" "$bin" "$which" 0 >"$out/srv.log" 2>"$out/srv.err" &
  pid=$!
  for _ in $(seq 600); do grep -q '^listening on' "$out/srv.log" && break; sleep 0.05; done
  addr=$(sed -n 's/^listening on //p' "$out/srv.log")
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
throughput() {
  local which=$1 round=$2 t0 t1
  start "$which" taskset -c 0
  t0=$(cpu)
  taskset -c 1 wrk -t1 -c64 -d"${secs}s" --latency "http://$addr/" >"$out/wrk.log"
  t1=$(cpu)
  stop
  local rps reqs p99 us
  rps=$(awk '/^Requests\/sec/ { print $2 }' "$out/wrk.log")
  reqs=$(awk '/requests in/ { print $1 }' "$out/wrk.log")
  p99=$(awk '$1 == "99%" { print $2 }' "$out/wrk.log")
  us=$(awk -v t="$((t1 - t0))" -v k="$tck" -v r="$reqs" 'BEGIN { printf "%.2f", t / k / r * 1e6 }')
  echo "$which round $round: $rps req/s, p99 $p99, server CPU $us us/request" | tee -a "$out/all"
}
instructions() {
  local which=$1
  start "$which" valgrind --tool=callgrind --callgrind-out-file="$out/cg.out"
  wrk -t1 -c64 -d1s "http://$addr/" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  wrk -t1 -c64 -d"${secs}s" "http://$addr/" >"$out/wrk.log"
  callgrind_control -d "$pid" >/dev/null 2>&1
  stop
  local reqs ir
  reqs=$(awk '/requests in/ { print $1 }' "$out/wrk.log")
  ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$out/cg.out.1")
  rm -f "$out"/cg.out*
  awk -v i="$ir" -v r="$reqs" -v w="$which" 'BEGIN { printf "%s: %d requests, %.0f instructions per request\n", w, r, i / r }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
exec 9>/tmp/leaparray-bench.lock
flock 9
if [ "$mode" = instructions ]; then
  for which in $servers; do instructions "$which"; done
  exit 0
fi
for r in $(seq "$rounds"); do
  for which in $servers; do throughput "$which" "$r"; done
done
echo "medians (change: the median over rounds of each round's req/s against the first server's in the same round):"
first=${servers%% *}
for which in $servers; do
  rps=$(grep "^$which round" "$out/all" | awk '{ print $4 }' | median)
  p99=$(grep "^$which round" "$out/all" | sed 's/.*p99 \([^,]*\),.*/\1/' |
    awk '/us$/ { print $1 + 0; next } /ms$/ { print $1 * 1000; next } /s$/ { print $1 * 1e6 }' |
    median | awk '{ printf "%.2f ms", $1 / 1000 }')
  us=$(grep "^$which round" "$out/all" | sed 's/.*CPU \([0-9.]*\) us.*/\1/' | median)
  change=$(paste <(grep "^$first round" "$out/all" | awk '{ print $4 }') \
    <(grep "^$which round" "$out/all" | awk '{ print $4 }') |
    awk '{ printf "%.4f\n", ($2 / $1 - 1) * 100 }' | median)
  echo "$which: $rps req/s (change $change%), p99 $p99, server CPU $us us/request"
done
