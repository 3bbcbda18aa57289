#!/usr/bin/env python3
"""A model of `keyed::KeyedGate<N, CAP>` under a flood of one-shot keys (issue 31).

Deterministic (every random draw comes from a seeded `random.Random`), pure
Python 3.11, no dependencies.

The table (as `src/keyed/{mod,slot}.rs` on the `keyed` branch, single
threaded: every caller is in the current window, no lagging clocks):

* CAP slots; a key's home is `(mix(key ^ seed) * CAP) >> 64` (Lemire), its
  probe is the home and the next `min(16, CAP) - 1` slots, wrapping.
* A slot holds a key's gate word: its newest window and N per-window counts.
  A decision books `n` in the caller's window `c` iff the counts of the live
  windows `c - N + 1 ..= c` plus `n` are at most the limit.
* A key with no slot takes the first slot of its probe that is free or
  recyclable (its newest window is `2N` windows or more before `c`).
  Otherwise the overflow policy applies:
    - `refuse`: refused (today's default);
    - `admit`: admitted, counted nowhere;
    - `evict-demand`: the slot of the probe with the least *demand* goes
      (requests admitted and refused, a saturating counter in the slot,
      halved each window the slot's newest window moves on);
    - `evict-admitted`: the slot with the least admitted count over the
      live windows goes.
  Eviction folds the victim's live counts into the sketch, then the new key
  takes the slot, its counts seeded from the sketch.
* The proposed slot: the key half holds a `FP_BITS`-bit fingerprint of the
  mixed key (its low bits; the home uses the high bits) and a
  `DEMAND_BITS`-bit demand counter (64 = FP_BITS + DEMAND_BITS); the word
  (the gate) is unchanged.  Two keys with one fingerprint in one probe share
  one slot, so they share one limit.
* The sketch: per live window, R rows of W one-byte cells (count-min).
  Folding key k's count x in window w sets each of k's cells in w's plane to
  `max(cell, ceil(x / q))` (conservative update with the key's own total:
  the slot's count already includes the estimate it was seeded with, so
  folding twice never adds twice).  A returning key starts, per live window,
  at `q * min over its rows`.  A cell saturates at 255; `q` is the smallest
  integer with `255 * q > limit` (q = 1 for limit <= 254), so a cell never
  reads below the truth and saturates only above the limit.  A plane leaves
  with its window (the model keeps the N planes of the live windows).

The ledger, apart from the table, counts every admission per key per
window and flags any admission after which some interval of N windows holds
more than the limit for that key.  It reads true keys, never fingerprints.

Observers (class of each slot's true key, per-class tallies) are read by
the metrics only; no decision reads them.

Usage:
    python3 model.py                 # the curve: 4 policies x flood 5/10/20/40 x CAP
    python3 model.py --selftest      # the ledger catches broken tables (mutations)
    python3 model.py --policy evict-demand --flood 10   # one run
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

M64 = (1 << 64) - 1
PROBE = 16
POLICIES = ("refuse", "admit", "evict-demand", "evict-admitted")
ROW_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
             0x27D4EB2F165667C5, 0x85EBCA77C2B2AE63, 0xFF51AFD7ED558CCD)


def mix(h: int) -> int:
    """MurmurHash3's 64-bit finalizer (`keyed/hash.rs`: `mix`)."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


class Table:
    """One `KeyedGate<N, CAP>` with an overflow policy, and its sketch."""

    def __init__(self, cap, n, limit, policy, seed=0x243F6A8885A308D3,
                 fp_bits=56, demand_bits=8, rows=3, width=None, mutate=None):
        assert policy in POLICIES
        self.cap, self.n, self.limit, self.policy = cap, n, limit, policy
        self.seed = seed
        self.p = min(PROBE, cap)
        self.fp_mask = (1 << fp_bits) - 1
        self.dmax = (1 << demand_bits) - 1
        self.demand_bits = demand_bits
        self.rows = rows
        self.width = width if width is not None else 2 * cap
        self.q = limit // 255 + 1  # 255 * q > limit
        self.mutate = mutate
        self.evicting = policy.startswith("evict")
        # The slots: fingerprint (None: free), newest window, counts
        # (cnt[i] is the count of window newest - i), demand.
        self.fp = [None] * cap
        self.nw = [0] * cap
        self.cnt = [[0] * n for _ in range(cap)]
        self.dem = [0] * cap
        self.where = {}  # fingerprint -> slots holding it (a lookup aid: same answer as a probe scan)
        self.planes = {}  # window -> R bytearrays of W cells
        # Observers only.
        self.owner = [None] * cap
        self.evicted_by_class = {}
        self.recycled = 0
        self.overflowed = 0
        self.evictions = 0

    # -- windows ---------------------------------------------------------
    def new_window(self, c):
        if self.evicting:
            self.planes[c] = [bytearray(self.width) for _ in range(self.rows)]
            for w in [w for w in self.planes if w <= c - self.n]:
                del self.planes[w]  # cells expire with their window

    def sketch_bytes(self):
        return self.n * self.rows * self.width

    # -- the sketch ------------------------------------------------------
    def cells(self, f):
        wd = self.width
        return [(mix(f ^ ROW_SEEDS[r]) * wd) >> 64 for r in range(self.rows)]

    def estimate(self, f, w, cells=None):
        plane = self.planes.get(w)
        if plane is None:
            return 0
        cells = cells or self.cells(f)
        return self.q * min(plane[r][h] for r, h in enumerate(cells))

    def fold(self, j, c):
        """Folds slot j's live counts into the planes of their windows."""
        if self.mutate == "nofold":
            return
        f = self.fp[j]
        cells = None
        for i in range(self.n):
            w = self.nw[j] - i
            x = self.cnt[j][i]
            if x == 0 or w <= c - self.n or w not in self.planes:
                continue
            cells = cells or self.cells(f)
            v = min(255, -(-x // self.q))
            plane = self.planes[w]
            for r, h in enumerate(cells):
                if self.mutate == "overwrite":
                    plane[r][h] = v  # BUG on purpose: may lower a cell
                elif plane[r][h] < v:
                    plane[r][h] = v

    # -- the slot ----------------------------------------------------------
    def load(self, j, c):
        nw, cnt = self.nw[j], self.cnt[j]
        return sum(cnt[i] for i in range(self.n) if nw - i > c - self.n)

    def advance(self, j, c):
        """Moves slot j's newest window to c: counts slide, demand halves per window."""
        d = c - self.nw[j]
        if d <= 0:
            return
        cnt = self.cnt[j]
        self.cnt[j] = ([0] * min(d, self.n) + cnt)[: self.n]
        self.dem[j] = self.dem[j] >> d if d < self.demand_bits else 0
        self.nw[j] = c

    def value(self, j, c):
        if self.policy == "evict-demand":
            d = c - self.nw[j]
            return self.dem[j] >> d if d < self.demand_bits else 0
        return self.load(j, c)

    def recyclable(self, j, c):
        return c - self.nw[j] >= 2 * self.n

    def install(self, j, f, c, key, cls):
        if self.fp[j] is not None:
            self.where[self.fp[j]].remove(j)
        self.fp[j] = f
        self.where.setdefault(f, []).append(j)
        self.nw[j] = c
        self.dem[j] = 0
        if self.evicting and self.mutate != "noseed":
            cells = self.cells(f)
            self.cnt[j] = [self.estimate(f, c - i, cells) for i in range(self.n)]
        else:
            self.cnt[j] = [0] * self.n
        self.owner[j] = cls

    # -- a decision ------------------------------------------------------
    def acquire(self, key, c, cls, n=1):
        """True iff admitted. `cls` is an observer's label, never read by decisions."""
        m = mix(key ^ self.seed)
        home = (m * self.cap) >> 64
        f = m & self.fp_mask
        j = None
        best = self.p
        for s in self.where.get(f, ()):
            d = (s - home) % self.cap
            if d < best:
                j, best = s, d
        if j is None:
            room = None
            for i in range(self.p):
                s = (home + i) % self.cap
                if self.fp[s] is None:
                    room = s
                    break
                if self.recyclable(s, c):
                    room = s
                    self.recycled += 1
                    break
            if room is None:
                self.overflowed += 1
                if self.policy == "refuse":
                    return False
                if self.policy == "admit":
                    return True
                best_v = None
                for i in range(self.p):
                    s = (home + i) % self.cap
                    v = (self.value(s, c), self.nw[s], i)
                    if best_v is None or v < best_v:
                        best_v, room = v, s
                self.fold(room, c)  # before the slot changes hands
                self.evictions += 1
                oc = self.owner[room]
                self.evicted_by_class[oc] = self.evicted_by_class.get(oc, 0) + 1
            self.install(room, f, c, key, cls)
            j = room
        if n > self.limit:
            return False
        if self.policy == "evict-demand":
            # A refusal writes too: the demand counts it.
            self.advance(j, c)
            self.dem[j] = min(self.dmax, self.dem[j] + n)
        if self.load(j, c) + n > self.limit:
            return False
        self.advance(j, c)
        self.cnt[j][0] += n
        return True


class Ledger:
    """Admissions per key per window, apart from the table."""

    def __init__(self, n, limit):
        self.n, self.limit = n, limit
        self.per = {}
        self.over = 0

    def new_window(self, c):
        self.per[c] = {}
        for w in [w for w in self.per if w <= c - self.n]:
            del self.per[w]

    def admit(self, key, c, n=1):
        total = n + sum(self.per[w].get(key, 0) for w in range(c - self.n + 1, c + 1) if w in self.per)
        if total > self.limit:
            self.over += 1
        self.per[c][key] = self.per[c].get(key, 0) + n


def run(policy, flood_x, *, cap=4096, n=2, limit=10, seed=1, established=500, newcomers=200,
        abusers=50, abuse_x=3, calm=2, warm=2, measured=8, fp_bits=56, demand_bits=8, rows=3,
        width=None, mutate=None, probe_noise=2000):
    """One scenario; returns a dict of metrics over the measured windows."""
    traffic = random.Random(seed)  # the same traffic for every policy
    t = Table(cap, n, limit, policy, fp_bits=fp_bits, demand_bits=demand_bits, rows=rows,
              width=width, mutate=mutate)
    ledger = Ledger(n, limit)
    est_keys = [traffic.getrandbits(64) for _ in range(established)]
    abu_keys = [traffic.getrandbits(64) for _ in range(abusers)]
    per_window = limit // n  # an established key sends its limit every interval
    abuse_per_window = abuse_x * limit // n
    pending = []  # newcomers' second halves
    first_measured = calm + warm
    total = calm + warm + measured
    sent = {"new": 0, "est": 0, "flood": 0, "abuse": 0}
    adm = {"new": 0, "est": 0, "flood": 0, "abuse": 0}
    est_win = {}  # window -> key -> admitted (established)
    abu_win = {}
    noise = []
    evictions0 = {}
    t0 = time.process_time()
    for c in range(total):
        t.new_window(c)
        ledger.new_window(c)
        ev = []
        for k in est_keys:
            ev.extend([("est", k)] * per_window)
        for k in abu_keys:
            ev.extend([("abuse", k)] * abuse_per_window)
        ev.extend(pending)
        pending = []
        for _ in range(newcomers):
            k = traffic.getrandbits(64)
            reqs = traffic.randint(2, 6)  # within the limit over its two windows
            first = (reqs + 1) // 2
            ev.extend([("new", k)] * first)
            pending.extend([("new", k)] * (reqs - first))
        if c >= calm:
            ev.extend(("flood", traffic.getrandbits(64)) for _ in range(flood_x * cap))
        traffic.shuffle(ev)
        if c == first_measured:
            evictions0 = dict(t.evicted_by_class)
        m = c >= first_measured
        ew = est_win.setdefault(c, {}) if m else None
        aw = abu_win.setdefault(c, {}) if m else None
        for cls, k in ev:
            ok = t.acquire(k, c, cls)
            if ok:
                ledger.admit(k, c)
            if m:
                sent[cls] += 1
                if ok:
                    adm[cls] += 1
                    if cls == "est":
                        ew[k] = ew.get(k, 0) + 1
                    elif cls == "abuse":
                        aw[k] = aw.get(k, 0) + 1
        if m and t.evicting:
            # The sketch's noise at the window's end: what a key never seen starts from
            r = random.Random(seed * 1_000_003 + c)
            # (a new key's seeded load: the sum over the live windows' planes)
            vals = [sum(t.estimate(f, c - i) for i in range(n))
                    for f in (r.getrandbits(64) & t.fp_mask for _ in range(probe_noise))]
            noise.append((sum(vals) / len(vals), sum(v >= limit for v in vals) / len(vals)))
    cpu = time.process_time() - t0
    fr = []
    for c in range(first_measured + 1, total):
        for k in est_keys:
            fr.append((est_win[c - 1].get(k, 0) + est_win[c].get(k, 0)) / limit)
    fr.sort()
    abu_max = max((abu_win[c - 1].get(k, 0) + abu_win[c].get(k, 0))
                  for c in range(first_measured + 1, total) for k in abu_keys) if abusers else 0
    ev_meas = {k: v - evictions0.get(k, 0) for k, v in t.evicted_by_class.items()}
    pct = lambda a, b: 100.0 * a / b if b else float("nan")
    return {
        "policy": policy, "flood_x": flood_x, "mutate": mutate,
        "new_pct": pct(adm["new"], sent["new"]),
        "est_pct": 100.0 * sum(fr) / len(fr) if fr else float("nan"),
        "est_p5": 100.0 * fr[len(fr) // 20] if fr else float("nan"),
        "est_min": 100.0 * fr[0] if fr else float("nan"),
        "flood_pct": pct(adm["flood"], sent["flood"]),
        "abuse_max": abu_max,
        "over": ledger.over,
        "evict_per_window": {k: v / measured for k, v in sorted(ev_meas.items())},
        "noise_mean": sum(x for x, _ in noise) / len(noise) if noise else 0.0,
        "noise_ge_limit": sum(y for _, y in noise) / len(noise) if noise else 0.0,
        "sketch_bytes": t.sketch_bytes() if t.evicting else 0,
        "cpu_s": cpu,
    }


def fmt_row(r):
    ev = ", ".join(f"{k} {v:.0f}" for k, v in r["evict_per_window"].items()) or "-"
    return (f"| {r['policy']} | {r['flood_x']}x | {r['new_pct']:.1f} | {r['est_pct']:.1f} "
            f"(p5 {r['est_p5']:.0f}, min {r['est_min']:.0f}) | {r['over']} | {r['abuse_max']} | "
            f"{r['flood_pct']:.1f} | {r['noise_mean']:.2f} / {100 * r['noise_ge_limit']:.1f}% | {ev} | {r['cpu_s']:.0f} |")


HEADER = ("| policy | flood / window | legit newcomers admitted % | established: % of limit kept per interval "
          "| over-limit admissions (ledger) | abusers' most in an interval | flood admitted % "
          "| new key's seeded load at window end: mean / share >= limit | evictions per window by victim class | CPU s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def selftest(seed):
    """The ledger must see over-limit admissions from broken tables, and none from sound ones.

    A small table (CAP 64) where every key is an abuser (2x its limit), so
    keys are evicted and come back all the time."""
    kw = dict(cap=64, established=0, newcomers=20, abusers=120, abuse_x=2, calm=1, warm=1,
              measured=6, seed=seed, probe_noise=10)
    cases = [
        ("evict-demand", None, False), ("evict-admitted", None, False), ("refuse", None, False),
        ("evict-demand", "nofold", True), ("evict-demand", "noseed", True),
        ("evict-demand", "overwrite", True), ("evict-admitted", "nofold", True),
        ("admit", None, True),
    ]
    ok = True
    for policy, mutate, expect_over in cases:
        r = run(policy, 2, **kw, mutate=mutate)
        good = (r["over"] > 0) == expect_over
        ok &= good
        print(f"{'ok ' if good else 'BAD'} {policy:15} mutate={str(mutate):9} over-limit={r['over']:6} "
              f"abusers' most={r['abuse_max']} (expect {'>0' if expect_over else '0'})")
    # Fingerprint collisions (8 bits at CAP 64: many) share a limit: refuse more, never admit more.
    r = run("evict-demand", 2, **kw, fp_bits=8, demand_bits=8)
    good = r["over"] == 0
    ok &= good
    print(f"{'ok ' if good else 'BAD'} evict-demand    fp_bits=8     over-limit={r['over']:6} (expect 0)")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--policy", choices=POLICIES, action="append")
    ap.add_argument("--flood", type=int, action="append", help="flood keys per window, in units of CAP")
    ap.add_argument("--measured", type=int, default=8)
    ap.add_argument("--rows", type=int, default=3)
    ap.add_argument("--width", type=int, default=None, help="cells per row (default 2 x CAP)")
    ap.add_argument("--demand-bits", type=int, default=8)
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(0 if selftest(a.seed) else 1)
    policies = a.policy or list(POLICIES)
    floods = a.flood or [5, 10, 20, 40]
    t0 = time.time()
    print(f"seed {a.seed}; KeyedGate<2, 4096>, limit 10; sketch {a.rows} x {a.width or 8192} one-byte cells "
          f"per live window; demand {a.demand_bits} bits, fingerprint {64 - a.demand_bits} bits; "
          f"{a.measured} measured windows after 2 calm + 2 flood warm-up")
    print(HEADER)
    for fx in floods:
        for p in policies:
            r = run(p, fx, seed=a.seed, measured=a.measured, rows=a.rows, width=a.width,
                    demand_bits=a.demand_bits, fp_bits=64 - a.demand_bits)
            print(fmt_row(r), flush=True)
    print(f"wall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
