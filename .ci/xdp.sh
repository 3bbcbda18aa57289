#!/usr/bin/env bash
# The AF_XDP packet path (examples/xdp): 3 s of UDP flows over a veth pair
# between two private network namespaces, received through AF_XDP in copy
# mode, counted in a shard and policed per flow by the queue's LocalKeyedGate, then
# by a shared KeyedGate. The example
# checks exact counting and policing against its ledgers (`--check`, exit 1
# on any violation); this script also checks that no namespace or veth is
# left behind. Needs root (namespaces, BPF, AF_XDP).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ip >/dev/null; then
  apt-get update
  apt-get install -y iproute2
fi
cleanup() { ip netns del leaparray-xdp-tx 2>/dev/null || true; ip netns del leaparray-xdp-rx 2>/dev/null || true; }
trap cleanup EXIT
cargo build --release --locked -p leaparray-xdp
# Unit tests in debug: a release test build would compile criterion (the
# benchmark's dev-dependency) in release, about 2.5 minutes from cold.
cargo test --locked -p leaparray-xdp --lib
# The queue's own LocalKeyedGate (the default), then one shared KeyedGate.
./target/release/leaparray-xdp --duration 3 --check | tee /tmp/xdp.log
grep -q "^verdict: OK" /tmp/xdp.log
./target/release/leaparray-xdp --duration 3 --check --shared-gate | tee /tmp/xdp.log
grep -q "^verdict: OK" /tmp/xdp.log
# 1,000,000 flows resident (a 32 MiB table on huge pages), the owned gate.
./target/release/leaparray-xdp --duration 2 --check --flows 1000000 | tee /tmp/xdp.log
grep -q "^verdict: OK" /tmp/xdp.log
# Cleanup, seen from outside the process.
if ip netns list | grep -q '^leaparray-xdp-'; then
  echo "FAIL: a namespace was left behind"; ip netns list; exit 1
fi
if ip link show lpxdp0 >/dev/null 2>&1 || ip link show lpxdp1 >/dev/null 2>&1; then
  echo "FAIL: a veth was left behind"; exit 1
fi
echo "xdp: OK (exact counting, policing, cleanup)"
