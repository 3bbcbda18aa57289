#!/usr/bin/env bash
# leaparray-redis against a real Redis: its tests start their own
# redis-server processes on free loopback ports (and kill them, a restart
# included, and the fault tests of tests/faults.rs: RDB and AOF restarts,
# FLUSHALL, SIGSTOP, maxmemory, an evicting policy, a caller's clock ahead;
# tests/restart_regressions.rs: ACL users, request errors, the fence; and
# the Redis Cluster tests of tests/cluster.rs and cluster_regressions.rs:
# 3 masters, + 1 replica each, made with redis-cli --cluster create), so
# this script only makes sure redis-server (and redis-cli, which comes with
# it) is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt-get update
  apt-get install -y redis-server
  # Debian starts a system instance on 6379; the tests use their own ports.
fi
redis-server --version
started=$(date +%s)
if cargo test -p leaparray-redis; then
  echo "leaparray-redis: PASS ($(( $(date +%s) - started ))s)"
else
  echo "leaparray-redis: FAIL"
  exit 1
fi
