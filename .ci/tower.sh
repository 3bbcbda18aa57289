#!/usr/bin/env bash
# leaparray-tower under a real load: the example server (release) with its
# ledger on a free loopback port, wrk with 64 connections for 3 s spread over
# 6 API keys, one of them hot (1,000 per second each, 4,000 per second in all). Fails unless
#  - every 429 carried Retry-After, and some requests were refused;
#  - the ledger finds 0 intervals of 2 windows over a limit (per key, global);
#  - a request that honours a Retry-After (nothing else arriving) is admitted;
#  - the server, stopped with SIGTERM, checks its ledger again and exits 0;
#  - under a flood of distinct keys, newcomers within their limit are
#    admitted and no key is over its limit (below).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

if ! command -v wrk >/dev/null || ! command -v curl >/dev/null; then
  apt-get update
  apt-get install -y wrk curl
fi

cargo build --release -p leaparray-tower --example server
bin=target/release/examples/server

work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start_server() { # start_server LOG ARGS...: starts the server, sets $pid and $addr
  local log=$1; shift
  "$bin" --port 0 "$@" --ledger >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q '^listening on' "$log" && break
    sleep 0.1
  done
  addr=$(sed -n 's/^listening on //p' "$log")
  [ -n "$addr" ] || { echo "tower: the server did not start"; cat "$log"; exit 1; }
}
start_server "$work/server.log" --per-key 1000 --global 4000 --interval-ms 1000
echo "server on $addr"

cat >"$work/keys.lua" <<'LUA'
-- k1 asks for 3/8 of the load: over its own limit; all together over the global one.
local keys = { "k1", "k1", "k1", "k2", "k3", "k4", "k5", "k6" }
local i = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; refused = 0; bare = 0; other = 0 end
function request()
  i = i + 1
  return wrk.format("GET", "/", { ["x-api-key"] = keys[i % #keys + 1] })
end
function response(status, headers, body)
  if status == 200 then ok = ok + 1
  elseif status == 429 then
    refused = refused + 1
    if headers["retry-after"] == nil and headers["Retry-After"] == nil then bare = bare + 1 end
  else other = other + 1 end
end
function done(summary, latency, requests)
  for _, t in ipairs(threads) do
    io.write(string.format("RESULT admitted=%d refused=%d refused_without_retry_after=%d other=%d\n",
      t:get("ok"), t:get("refused"), t:get("bare"), t:get("other")))
  end
end
LUA

wrk -t1 -c64 -d3s -s "$work/keys.lua" "http://$addr/" | tee "$work/wrk.log"
result=$(grep '^RESULT' "$work/wrk.log")
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $result"; }
[ "$(field refused)" -gt 0 ] || { echo "tower: nothing was refused: the limits were not reached"; exit 1; }
[ "$(field refused_without_retry_after)" = 0 ] || { echo "tower: a 429 without Retry-After"; exit 1; }
[ "$(field other)" = 0 ] || { echo "tower: answers other than 200 and 429"; exit 1; }

code=$(curl -s -o "$work/ledger.txt" -w '%{http_code}' "http://$addr/__ledger/check")
cat "$work/ledger.txt"
[ "$code" = 200 ] && grep -q '^LEDGER OK' "$work/ledger.txt" || { echo "tower: ledger check failed ($code)"; exit 1; }

# Retry-After honoured: one key until refused (one connection, keep-alive),
# then, after Retry-After seconds with nothing else arriving, admitted.
urls=$(for _ in $(seq 2500); do printf 'http://%s/ ' "$addr"; done)
# shellcheck disable=SC2086
curl -s -D "$work/burst.txt" -H 'x-api-key: follow-up' $urls >/dev/null
retry=$(tr -d '\r' <"$work/burst.txt" | awk 'tolower($1) == "retry-after:" && !seen { print $2; seen = 1 }')
[ -n "$retry" ] || { echo "tower: 2,500 requests of one key were never refused"; exit 1; }
echo "refused with Retry-After: $retry; waiting that long"
sleep "$retry"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'x-api-key: follow-up' "http://$addr/")
[ "$code" = 200 ] || { echo "tower: after Retry-After the request got $code"; exit 1; }
echo "after Retry-After: 200"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
cat "$work/server.log"
[ "$status" = 0 ] || { echo "tower: the server's final ledger check failed ($status)"; exit 1; }

# A flood of one-shot keys (every request a key never seen before) while
# newcomers arrive, each sending 2 requests, within its limit of 10, at 40
# times the table's slots per window of 500 ms. wrk sends as fast as the
# machine lets it, so a first flood of 2 s against a table of 16,384 slots
# measures that rate, and the table of the real flood is sized to it:
# slots = rate per window / 40 (the flood's size per window is printed).
# Fails unless 95% of the newcomers' requests are admitted and the ledger
# finds no key over its limit, at every flood up to about 100 times the
# slots (benches/README.md, "Floods of keys"); a table that refused new
# keys would be full within a second and refuse most of them.
cat >"$work/flood.lua" <<'LUA'
local counter = 0
local threads = {}
local n = 0
function setup(thread) n = n + 1; thread:set("id", n); table.insert(threads, thread) end
function init(args) ok = 0; refused = 0; other = 0 end
function request()
  counter = counter + 1
  return wrk.format("GET", "/", { ["x-api-key"] = string.format("flood-%d-%d", id, counter) })
end
function response(status, headers, body)
  if status == 200 then ok = ok + 1 elseif status == 429 then refused = refused + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  for _, t in ipairs(threads) do
    io.write(string.format("FLOOD admitted=%d refused=%d other=%d\n", t:get("ok"), t:get("refused"), t:get("other")))
  end
end
LUA
flood_server() { # flood_server CAPACITY
  start_server "$work/flood.log" --per-key 10 --global 0 --interval-ms 1000 --capacity "$1"
}
flood_requests() { awk '/^FLOOD/ { split($2, a, "="); split($3, r, "="); n += a[2] + r[2] } END { print n + 0 }' "$1"; }
stop_server() {
  kill -TERM "$pid"
  status=0
  wait "$pid" || status=$?
  pid=
  tail -4 "$work/flood.log"
  [ "$status" = 0 ] || { echo "tower: the flood server's final ledger check failed ($status)"; exit 1; }
}
flood_server 16384
wrk -t1 -c32 -d2s -s "$work/flood.lua" "http://$addr/" >"$work/flood-wrk.log"
rate=$(( $(flood_requests "$work/flood-wrk.log") / 2 ))
stop_server
slots=$(( rate / 2 / 40 ))
[ "$slots" -ge 16 ] || slots=16
echo "flood: wrk sends $rate requests/s here; the flood's table: $slots slots"
flood_server "$slots"
wrk -t1 -c32 -d5s -s "$work/flood.lua" "http://$addr/" >"$work/flood-wrk.log" &
wrk_pid=$!
sleep 1.5
admitted=0
refused=0
for i in $(seq 40); do
  for _ in 1 2; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: newcomer-$i" "http://$addr/")
    if [ "$code" = 200 ]; then admitted=$((admitted + 1)); else refused=$((refused + 1)); fi
  done
  sleep 0.05
done
wait "$wrk_pid"
grep -E '^FLOOD|Requests/sec' "$work/flood-wrk.log"
n=$(flood_requests "$work/flood-wrk.log")
awk -v n="$n" -v s="$slots" 'BEGIN { printf "flood: %d requests in 5 s, %.1fx the %d slots per window of 500 ms\n", n, n / 10 / s, s }'
echo "newcomers during the flood: $admitted admitted, $refused refused"
code=$(curl -s -o "$work/flood-ledger.txt" -w '%{http_code}' "http://$addr/__ledger/check")
tail -4 "$work/flood-ledger.txt"
[ "$code" = 200 ] && grep -q '^LEDGER OK' "$work/flood-ledger.txt" || { echo "tower: flood ledger check failed ($code)"; exit 1; }
[ $((admitted * 100)) -ge $(((admitted + refused) * 95)) ] || { echo "tower: newcomers were locked out by the flood"; exit 1; }
stop_server
echo "tower: OK ($(( $(date +%s) - started )) s)"
