#!/usr/bin/env bash
# leaparray-redis against a real Redis: its tests start their own
# redis-server processes on free loopback ports (and kill them, a restart
# included, and the fault tests of tests/faults.rs: RDB and AOF restarts,
# FLUSHALL, SIGSTOP, maxmemory, an evicting policy, a caller's clock ahead;
# tests/restart_regressions.rs: ACL users, request errors, the fence; and
# the Redis Cluster tests of tests/cluster.rs and cluster_regressions.rs:
# 3 masters, + 1 replica each, made with redis-cli --cluster create;
# tests/replication.rs: a master and its replica, roles swapped with
# REPLICAOF; tests/sentinel.rs: a master, its replica and one sentinel,
# `redis-server <conf> --sentinel`, quorum 1, each test its own;
# tests/eviction.rs: the maxmemory-policy switched at run time with
# another writer; tests/slow_link.rs: a proxy of the test's own on
# loopback adding 50 ms each way; tests/split_brain.rs: a master, its
# replica cut off by such a proxy and promoted, min-replicas-to-write;
# tests/review45.rs: a hostile review's reproducers (a far and a near
# process across a restart through such a proxy, refused passwords,
# databases and Sentinel master names, keys deleted, two sentinels);
# tests/tls.rs, with the feature `tls`:
# redis-server and a sentinel with --tls-port, certificates made by the
# test), so this
# script only makes sure redis-server (with redis-cli) and redis-sentinel
# are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null \
  || ! command -v redis-sentinel >/dev/null; then
  apt-get update
  apt-get install -y redis-server redis-sentinel
  # Debian starts system instances on 6379 and 26379 where systemd runs;
  # the tests use their own ports.
fi
redis-server --version
redis-sentinel --version
started=$(date +%s)
# `cargo test -p leaparray-redis`, its test binaries in three groups side
# by side: they spend their time waiting on Redis (restarts, leases, cluster
# fail-overs) and each test takes its own servers on free loopback ports,
# so groups do not share a server. Within a group, as in one binary, one
# test at a time. tests/faults.rs runs alone after them: its AOF restart
# (`appendfsync everysec`) only keeps what Redis wrote before the kill,
# and Redis defers that write while a slow fsync is pending, so it needs
# the disk to itself. Every test target the build lists is run (a new
# tests/*.rs joins the third group); any other kind of target fails the step.
# Logs of this run only (a second run at the same time has its own).
log=target/redis-logs/$$
mkdir -p "$log"
cargo test -p leaparray-redis --no-run >"$log/build.log" 2>&1 || { cat "$log/build.log"; exit 1; }
cat "$log/build.log"
# The feature `tls` (rustls): its unit tests and tests/tls.rs, run in the
# first group (tests/tls.rs also runs without it, in the third: a
# rediss:// URL is then a clear configuration error).
tls="--features tls --lib --test tls"
# shellcheck disable=SC2086
cargo test -p leaparray-redis $tls --no-run
targets=$(sed -n 's/^ *Executable \(.*\) (.*/\1/p' "$log/build.log")
if printf '%s\n' "$targets" | grep -vE '^(unittests src/lib\.rs|unittests src/bin/[a-z0-9_]+\.rs|tests/[a-z0-9_]+\.rs)$'; then
  echo "leaparray-redis: a test target (above) that no group runs"; exit 1
fi
group1="cluster_regressions"
# tests/eviction.rs, slow_link.rs (8 s each) and split_brain.rs (12 s)
# here: the third group
# is the longest without them.
group2="cluster cluster_operations eviction slow_link split_brain"
alone="faults"
group3=""
for t in $(printf '%s\n' "$targets" | sed -n 's|^tests/\(.*\)\.rs$|\1|p'); do
  case " $group1 $group2 $alone " in *" $t "*) ;; *) group3="$group3 $t" ;; esac
done
tests() { printf -- ' --test %s' "$@"; }
# shellcheck disable=SC2046,SC2086
(cargo test -p leaparray-redis $(tests $group1) && cargo test -p leaparray-redis $tls) >"$log/1.log" 2>&1 &
pid_1=$!
# shellcheck disable=SC2046,SC2086
cargo test -p leaparray-redis $(tests $group2) >"$log/2.log" 2>&1 &
pid_2=$!
# shellcheck disable=SC2046,SC2086
(cargo test -p leaparray-redis --lib --bins $(tests $group3) && cargo test -p leaparray-redis --doc) >"$log/3.log" 2>&1 &
pid_3=$!
failed=0
for g in 1 2 3; do
  pid_var="pid_$g"
  if wait "${!pid_var}"; then r=ok; else r=FAILED; failed=1; fi
  printf '\n--- leaparray-redis group %s: %s\n' "$g" "$r"
  cat "$log/$g.log"
done
if [ "$failed" = 0 ]; then
  # shellcheck disable=SC2046,SC2086
  cargo test -p leaparray-redis $(tests $alone) || failed=1
fi
if [ "$failed" = 0 ]; then
  echo "leaparray-redis: PASS ($(( $(date +%s) - started ))s)"
else
  echo "leaparray-redis: FAIL"
  exit 1
fi
