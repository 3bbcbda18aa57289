#!/usr/bin/env python3
"""Writes the pcap net_pcap replays (infinite_rx=1): UDP/IPv4 frames of 60
bytes from FLOWS flows (default 4,096), flow i from 10.0.(i >> 8).(i & 255):(1024 + i) to
192.168.0.1:9. Half of the frames come from 16 heavy flows (every FLOWS/16-th;
with fewer than 16 flows, every flow is heavy), half from all flows uniformly;
a fixed seed, so every build writes the same file. The pcap format is written directly (no scapy).

usage: mkpcap.py OUT [--frames N] [--flows N]
"""
import argparse
import random
import struct

def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(i):
    src = bytes([10, 0, (i >> 8) & 255, i & 255])
    dst = bytes([192, 168, 0, 1])
    payload = bytes(60 - 14 - 20 - 8)
    udp = struct.pack("!HHHH", 1024 + i, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    return eth + ip + udp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=32768)
    ap.add_argument("--flows", type=int, default=4096)
    a = ap.parse_args()
    if not 1 <= a.flows <= 65536 or (a.flows >= 16 and a.flows % 16):
        ap.error("--flows: 1..15, or a multiple of 16 in 16..65536")
    rng = random.Random(50)
    heavy = list(range(0, a.flows, max(a.flows // 16, 1)))
    frames = [frame(i) for i in range(a.flows)]
    with open(a.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n in range(a.frames):
            i = rng.choice(heavy) if rng.random() < 0.5 else rng.randrange(a.flows)
            b = frames[i]
            f.write(struct.pack("<IIII", n // 1000000, n % 1000000, len(b), len(b)))
            f.write(b)


if __name__ == "__main__":
    main()
