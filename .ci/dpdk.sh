#!/usr/bin/env bash
# examples/dpdk: per-flow policing on DPDK's receive path with the
# leaparray-ffi staticlib beside DPDK's rte_meter, checked against the
# app's per-flow ledger (exit 1 and `verdict: FAIL` on any violation).
# No NIC, no hugepages: net_null and net_pcap (a pcap of 4,096 flows,
# replayed with infinite_rx=1) as vdevs, --no-huge --no-pci. Installs
# Debian's dpdk/dpdk-dev (22.11) if missing. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! pkg-config --exists libdpdk 2>/dev/null || ! command -v make >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y dpdk dpdk-dev pkg-config make gcc python3
fi
make -C examples/dpdk
app=examples/dpdk/build/leap-dpdk
pcap=examples/dpdk/build/flows.pcap
eal="--no-huge -m 1024 --no-pci --no-telemetry --log-level=warning --vdev=net_null0"
# One lcore: every mode on both ports, interleaved (what the README's table shows).
$app -l 0 $eal --vdev="net_pcap0,rx_pcap=$pcap,infinite_rx=1" \
  -- --duration 0.3 --rounds 3 --check-duration 1 | tee /tmp/dpdk.log
grep -q "^verdict: OK" /tmp/dpdk.log
# Two lcores, a queue each: each queue's own table, shard and ledger.
$app -l 0-1 $eal --vdev="net_pcap0,rx_pcap=$pcap,rx_pcap=$pcap,infinite_rx=1" \
  -- --duration 0.3 --rounds 1 --check-duration 1 | tee /tmp/dpdk.log
grep -q "^verdict: OK" /tmp/dpdk.log
# One flow, new to every table in the first burst, which holds it 32 times:
# each meter is configured once (a second configuration would refill the
# bucket, and the interval would pass rte_meter's bound).
$app -l 0 $eal --vdev="net_pcap0,rx_pcap=examples/dpdk/build/one-flow.pcap,infinite_rx=1" \
  -- --duration 0.1 --rounds 1 --check-duration 1 | tee /tmp/dpdk.log
grep -q "^verdict: OK" /tmp/dpdk.log
echo "dpdk: OK (leaparray and rte_meter checked against the ledger; counting exact)"
