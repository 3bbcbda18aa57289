#!/usr/bin/env python3
"""A model of `keyed::KeyedGate<N, CAP>` under floods of keys, with
`Overflow::Evict` and its memory of evicted keys as `src/keyed/` builds them.

Deterministic, pure Python 3.11, no dependencies. It runs one thread and one
clock, so it models `LocalKeyedGate` (`src/keyed/local.rs`, `book` and
`insert`) and a `KeyedGate` driven by one thread, which decide alike.

The table (`src/keyed/{slot,local}.rs`, `table/value.rs`):

* A key's hash is `mix(key ^ seed)` (`hash.rs`), seed `0x243f6a8885a308d3`.
  Its home is `(hash * CAP) >> 64`, its fingerprint the top 56 bits of
  `hash * 0x9e3779b97f4a7c15` (`place_of`); its probe is the home and the
  next `min(16, CAP) - 1` slots, wrapping.
* A slot holds the fingerprint, an 8-bit demand counter and a gate word:
  its newest window and N counts. A decision for `n` by a caller in window
  `c` books in `c` iff the counts of `c - N + 1 ..= c` plus `n` are at most
  the limit; a booking halves the demand once per window the word moves on
  (at most 8) and adds `n` (`bumped`); a refusal under eviction adds `n`
  to the demand and leaves the word alone.
* A key with no slot takes the first slot of its probe that is free or
  recyclable (newest window `2N` or more before `c`; recycling raises the
  high water to `c`). Otherwise, under `evict`, the slot with the least
  rank goes (`value_of`): `(demand >> d, demand, newest window, probe
  position)` with `d` = windows from the word's newest to `c`, at most 8.
  The evictor raises the high water to `max(c, victim's newest)` and folds
  the victim's N counts (windows `newest - k`) into the memory, then the
  new key takes the slot with demand 0 and the word `start` gives.
* The memory (`memory.rs`): `4 * CAP` words in `P = N` planes; window `w`
  lives in plane `w mod P`, which has a plane id (the latest window folded
  into it). A word holds 16 cells of 3 bits and a 16-bit tag (the window
  its cells count for). A key has `ROWS = 2` cells per plane, at
  `(mix(fp ^ 0x9e3779b97f4a7c15 * (r + 1)) * cells_per_plane) >> 64`. A
  cell holds a code 0..7 read through the ladder `0, 1, 2, 3, 4,
  max(5, ceil(L/4)), max(6, ceil(L/2)), L`, each capped at L; a count is
  stored as the least code reading at least it.
  - Fold (fp, w, x > 0): raise the plane id to w, drop the fold if it was
    later; per cell, if the word's tag is w raise the cell, else reset the
    word to tag w holding only this cell.
  - Estimate (fp, w): plane id later than w reads L, earlier reads 0;
    else the least of the key's cells (a cell of a word tagged otherwise
    reads 0), through the ladder.
* `start` (fp, c): `h = max(c, high water)`. If no plane id reaches any of
  the 2N windows ending at h (`may_estimate`), or every estimate of those
  windows is 0, the key starts empty with newest window `h - N` (`fresh`).
  Else it starts at newest window h with its estimates of `h - k`
  (`k < N`) capped newest first so that they sum to at most L.

The traffic is `tests/common/flood.rs`'s `run`, port for port: its
xorshift64* (`rng.rs`) draws the same keys in the same order, requests are
shuffled and spaced over each window the same way, and the flood's keys are
merged in by time. So the model and the Rust example see the same requests.
The ledger is `run`'s: per (key, window), an admission after which the
window and its neighbour hold more than the limit is over the limit.

Options kept from earlier models: `--policy evict-admitted` (rank by the
count of the live windows instead of demand), `refuse`, `admit`;
`--rows`, `--words-per-slot`. Mutations (`--selftest`) break one rule each.

Usage:
    python3 model.py --selftest                 # the ledger catches broken tables
    python3 model.py --flood 20 --flood 40      # KeyedGate<2, 4096>, issue 46's traffic
    python3 model.py --flood 100 --measured 3   # shorter
"""

from __future__ import annotations

import argparse
import sys
import time

M64 = (1 << 64) - 1
PROBE = 16
SEED = 0x243F6A8885A308D3
GOLDEN = 0x9E3779B97F4A7C15
CELLS = 16  # 3-bit cells per word (48 bits; the top 16 are the tag)
TOP = 7
POLICIES = ("evict", "evict-admitted", "refuse", "admit")
MUTATIONS = (
    "nofold",          # eviction folds nothing
    "noseed",          # a key inserted starts empty (fresh), whatever the memory holds
    "overwrite",       # a fold stores its code instead of the maximum (may lower a cell)
    "code-floor",      # a count is stored as the greatest code reading at most it
    "cap-oldest",      # start caps the estimates oldest window first
    "clamp",           # estimates summing above the limit start the key at the whole limit
)


def mix(h: int) -> int:
    """MurmurHash3's 64-bit finalizer (`src/keyed/hash.rs`)."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


class Rng:
    """xorshift64* (`tests/common/rng.rs`)."""

    def __init__(self, seed: int):
        self.s = seed

    def next(self) -> int:
        s = self.s
        s ^= s >> 12
        s = (s ^ (s << 25)) & M64
        s ^= s >> 27
        self.s = s
        return (s * 0x2545F4914F6CDD1D) & M64

    def below(self, n: int) -> int:
        return self.next() % n


class Memory:
    """The memory of evicted keys (`src/keyed/memory.rs`)."""

    def __init__(self, n, cap, limit, rows=2, words_per_slot=4, mutate=None):
        total = words_per_slot * cap
        self.planes = n if total >= n and n <= 31 else 0
        self.words = total // self.planes if self.planes else 0
        self.ncells = self.words * CELLS
        self.rows, self.limit, self.mutate = rows, limit, mutate
        l = limit
        self.ladder = [0, min(1, l), min(2, l), min(3, l), min(4, l),
                       min(max(5, -(-l // 4)), l), min(max(6, -(-l // 2)), l), l]
        self.ids = [0] * max(self.planes, 1)
        self.cells = [bytearray(self.ncells) for _ in range(self.planes)]
        self.tags = [[0] * self.words for _ in range(self.planes)]
        self._row_seeds = [(GOLDEN * (r + 1)) & M64 for r in range(rows)]

    def remembers(self):
        return self.planes != 0

    def code_of(self, x):
        lad = self.ladder
        if self.mutate == "code-floor":
            c = TOP
            while c > 0 and lad[c] > x:
                c -= 1
            return c
        c = 0
        while c < TOP and lad[c] < x:
            c += 1
        return c

    def where(self, fp):
        """The key's cell indices in a plane (the same in every plane)."""
        n = self.ncells
        return [(mix(fp ^ s) * n) >> 64 for s in self._row_seeds]

    def fold(self, at, w, x):
        if x == 0 or not self.planes or self.mutate == "nofold":
            return
        p = w % self.planes
        old = self.ids[p]
        if old > w:
            return  # a later window owns the plane
        self.ids[p] = w
        val = self.code_of(x)
        t = w & 0xFFFF
        cells, tags = self.cells[p], self.tags[p]
        for i in at:
            wi = i // CELLS
            if tags[wi] == t:
                if self.mutate == "overwrite":
                    cells[i] = val
                elif cells[i] < val:
                    cells[i] = val
            else:
                tags[wi] = t
                base = wi * CELLS
                cells[base:base + CELLS] = bytes(CELLS)
                cells[i] = val

    def may_estimate(self, h, windows):
        planes, ids = self.planes, self.ids
        for k in range(windows):
            w = h - k
            if w < 0:
                break
            if ids[w % planes] >= w:
                return True
        return False

    def estimate(self, at, w):
        if not self.planes:
            return 0
        p = w % self.planes
        pid = self.ids[p]
        if pid > w:
            return self.limit
        if pid < w:
            return 0
        t = w & 0xFFFF
        cells, tags = self.cells[p], self.tags[p]
        least = TOP
        for i in at:
            v = cells[i] if tags[i // CELLS] == t else 0
            if v < least:
                least = v
        return self.ladder[least]


class Table:
    """One `LocalKeyedGate<N, CAP>` (one thread, one clock)."""

    def __init__(self, cap, n, limit, policy="evict", rows=2, words_per_slot=4, mutate=None,
                 seed=SEED):
        assert policy in POLICIES
        self.cap, self.n, self.limit, self.policy, self.mutate = cap, n, limit, policy, mutate
        self.seed = seed
        self.p = min(PROBE, cap)
        self.mem = Memory(n, cap, limit, rows, words_per_slot, mutate)
        self.evicting = policy.startswith("evict") and self.mem.remembers()
        self.fp = [None] * cap      # None: free
        self.dem = [0] * cap        # demand (8 bits)
        self.nw = [0] * cap         # newest window of the gate word
        self.cnt = [None] * cap     # counts: cnt[j][k] is window nw - k
        self.high_water = 0
        self.recycled = self.evicted = self.remembered = self.overflowed = 0

    def start(self, fp, c):
        """`slot.rs`'s `start`: (newest window, counts, remembered)."""
        n, mem, limit = self.n, self.mem, self.limit
        h = max(c, self.high_water)
        fresh = (max(h - n, 0), [0] * n, False)
        if not mem.remembers() or self.mutate == "noseed" or not mem.may_estimate(h, 2 * n):
            return fresh
        at = mem.where(fp)
        est = []
        for k in range(2 * n):
            if h - k < 0:
                break
            est.append(mem.estimate(at, h - k))
        if not any(est):
            return fresh
        live = est[:n] + [0] * (n - len(est[:n]))
        kept = [0] * n
        room = limit
        order = range(n - 1, -1, -1) if self.mutate == "cap-oldest" else range(n)
        for k in order:
            kept[k] = min(live[k], room)
            room -= kept[k]
        if self.mutate == "clamp" and sum(live) > limit:
            kept = [limit] + [0] * (n - 1)
        return (h, kept, any(live))

    def rank(self, j, c, i):
        d = min(max(c - self.nw[j], 0), 8)
        if self.policy == "evict-admitted":
            return (self.load(j, c), self.nw[j], i)
        dem = self.dem[j]
        return (dem >> d, dem, self.nw[j], i)

    def load(self, j, c):
        return self.load_of(self.nw[j], self.cnt[j], c)

    def load_of(self, nw, cnt, c):
        n = self.n
        return sum(cnt[k] for k in range(n) if nw - k > c - n)

    def locate(self, key):
        h = mix(key ^ self.seed)
        return (h * self.cap) >> 64, ((h * GOLDEN) & M64) >> 8

    def remaining(self, key, c):
        """`remaining` (`slot.rs`: `remaining_from`) under `evict`, without writing."""
        home, fp = self.locate(key)
        for i in range(self.p):
            s = (home + i) % self.cap
            if self.fp[s] is None:
                break
            if self.fp[s] == fp:
                return self.limit - self.load(s, c)
        nw, cnt, remembered = self.start(fp, c)
        return self.limit - self.load_of(nw, cnt, c) if remembered else self.limit

    def install(self, j, fp, c):
        nw, cnt, rem = self.start(fp, c)
        self.fp[j], self.dem[j], self.nw[j], self.cnt[j] = fp, 0, nw, cnt
        self.remembered += rem

    def acquire(self, key, c, n=1):
        """True iff admitted (`local.rs`: `acquire_noting`, `book`, `insert`)."""
        limit = self.limit
        if n == 0:
            return True
        if n > limit:
            return False
        cap = self.cap
        home, fp = self.locate(key)
        fps, nws = self.fp, self.nw
        j = None
        room = None
        for i in range(self.p):
            s = home + i
            if s >= cap:
                s -= cap
            f = fps[s]
            if f is None:
                if room is None:
                    room = s
                break  # no key lives past a free slot
            if f == fp:
                j = s
                break
            if room is None and c - nws[s] >= 2 * self.n:
                room = s
        if j is None:
            if room is not None:
                if fps[room] is not None:
                    self.high_water = max(self.high_water, c)
                    self.recycled += 1
                self.install(room, fp, c)
                j = room
            elif self.evicting:
                best = None
                for i in range(self.p):
                    s = home + i
                    if s >= cap:
                        s -= cap
                    r = self.rank(s, c, i)
                    if best is None or r < best:
                        best, j = r, s
                newest = nws[j]
                self.high_water = max(self.high_water, c, newest)
                mem = self.mem
                at = mem.where(fps[j])
                cnt = self.cnt[j]
                for k in range(self.n):
                    if newest - k >= 0:
                        mem.fold(at, newest - k, cnt[k])
                self.evicted += 1
                self.install(j, fp, c)
            else:
                self.overflowed += 1
                return self.policy == "admit"
        # One decision on the slot's word (`decide`, `bumped`).
        nw, cnt, N = nws[j], self.cnt[j], self.n
        assert c >= nw, "late callers are not modelled (one clock)"
        d = c - nw
        load = sum(cnt[k] for k in range(N - d)) if d < N else 0
        if load + n > limit:
            if self.evicting:
                self.dem[j] = min(255, self.dem[j] + n)
            return False
        if d:
            self.cnt[j] = cnt = ([0] * min(d, N) + cnt)[:N]
            nws[j] = c
        cnt[0] += n
        self.dem[j] = min(255, (self.dem[j] >> min(d, 8)) + n)
        return True


def run(flood, *, policy="evict", cap=4096, n=2, limit=10, seed=1, established=50, abusers=0,
        newcomers=200, flood_n=1, flood_head=1, calm=2, warmup=2, measured=6, rows=2,
        words_per_slot=4, mutate=None, window=1000):
    """`tests/common/flood.rs`'s `run` (no lag); returns what it measured."""
    assert n == 2, "the traffic (and its ledger) is for intervals of two windows"
    t = Table(cap, n, limit, policy, rows, words_per_slot, mutate)
    rng = Rng(seed | 1)
    ledger = {}
    out = {"new": [0, 0], "est": [0, 0], "flood": [0, 0], "over": 0, "permits": 0}
    est_keys = [rng.next() for _ in range(established)]
    abu_keys = [rng.next() for _ in range(abusers)]
    pending = []
    windows = calm + warmup + measured
    t0 = time.process_time()
    for w in range(windows):
        is_measured = w >= calm + warmup
        flooding = w >= calm
        req = []
        for k in est_keys:
            req.extend([(k, "est")] * (limit // 2))
        for k in abu_keys:
            req.extend([(k, "abuse")] * (3 * limit // 2))
        for k, rest in pending:
            req.extend([(k, "new")] * rest)
        pending = []
        for _ in range(newcomers):
            k = rng.next()
            total = 2 + rng.below(5)
            req.extend([(k, "new")] * (total // 2))
            pending.append((k, total - total // 2))
        for i in range(len(req) - 1, 0, -1):
            jx = rng.below(i + 1)
            req[i], req[jx] = req[jx], req[i]
        m = len(req)
        timed = [(w * window + (i * window) // m, k, kind) for i, (k, kind) in enumerate(req)]
        if flooding:
            f = flood * cap
            span = window // max(flood_head, 1)
            timed.extend((w * window + (i * span) // f, rng.next(), "flood") for i in range(f))
            timed.sort(key=lambda e: e[0])  # stable, as Rust's sort_by_key
        for tm, key, kind in timed:
            asked = flood_n if kind == "flood" else 1
            cw = tm // window
            ok = t.acquire(key, cw, asked)
            if ok:
                out["permits"] += asked
                here = ledger.get((key, cw), 0) + asked
                ledger[(key, cw)] = here
                before = ledger.get((key, cw - 1), 0) if cw else 0
                after = ledger.get((key, cw + 1), 0)
                if here + before > limit or here + after > limit:
                    out["over"] += 1
            if is_measured and kind != "abuse":
                out[kind][0] += 1
                out[kind][1] += ok
    out["cpu_s"] = time.process_time() - t0
    out["evicted"], out["remembered"] = t.evicted, t.remembered
    out["ledger"] = sum(ledger.values())
    assert out["ledger"] == out["permits"]
    return out


def pct(sa):
    s, a = sa
    return 100.0 * a / s if s else 100.0


def scripted(mutate=None):
    """Two keys A, B in `LocalKeyedGate<2, 1>` (one slot), limit 10.

    A books 7 in window 1 and 1 in window 2; B evicts A in window 2 (A's
    estimates read 1 and 10: 7 reads up the ladder as the limit); A comes
    back in window 2 and is refused (its estimates, capped newest first,
    fill its interval). Then (a) A asks 10 in window 3: refused, or the
    ledger sees 11 in windows 2..3 (its 1 in window 2 must still count);
    (b) in a copy, B evicts A again in window 2 and A's `remaining` in
    window 3 is 9: a refused key folds back no more than it booked, so it
    does not lock itself out. Gives (over-limit admissions, remaining)."""
    A, B = 11, 12
    out = []
    for again in (False, True):
        t = Table(1, 2, 10, "evict", mutate=mutate)
        led = {}
        over = 0
        steps = [(A, 1, 7), (A, 2, 1), (B, 2, 1), (A, 2, 1)] + ([(B, 2, 1)] if again else [(A, 3, 10)])
        for key, c, n in steps:
            if t.acquire(key, c, n):
                led[(key, c)] = led.get((key, c), 0) + n
                if led[(key, c)] + led.get((key, c - 1), 0) > 10:
                    over += 1
        out.append(over if not again else t.remaining(A, 3))
    return tuple(out)


def selftest():
    """The ledger sees over-limit admissions from each broken table, none from sound ones.

    A scripted run in one slot (`scripted`) catches the cap's order and the
    clamp. Then a small table (CAP 64: 256 memory words, 2 planes of 2,048 cells) with
    120 abusers at 3/2 of their limit a window and a 2x flood, so keys are
    evicted and come back all the time."""
    kw = dict(cap=64, established=0, abusers=120, newcomers=20, calm=1, warmup=1, measured=6)
    cases = [("evict", None, False), ("evict-admitted", None, False), ("refuse", None, False),
             ("admit", None, True)] + [
        ("evict", m, True) for m in ("nofold", "noseed", "overwrite", "code-floor")]
    ok = True
    # The scripted run: sound (0 over, 9 left); each of these breaks one of the two.
    for mutate in (None, "cap-oldest", "clamp"):
        over, left = scripted(mutate)
        good = (over, left) == (0, 9) if mutate is None else (over, left) != (0, 9)
        ok &= good
        print(f"{'ok ' if good else 'BAD'} scripted CAP 1  mutate={str(mutate):12} over-limit={over} "
              f"remaining={left} (expect {'0, 9' if mutate is None else 'over > 0 or remaining < 9'})",
              flush=True)
    for policy, mutate, expect_over in cases:
        r = run(2, policy=policy, mutate=mutate, **kw)
        good = (r["over"] > 0) == expect_over
        ok &= good
        print(f"{'ok ' if good else 'BAD'} {policy:15} mutate={str(mutate):12} over-limit={r['over']:6} "
              f"(expect {'>0' if expect_over else '0'})", flush=True)
    return ok


HEADER = ("| flood per window | policy | newcomers admitted % | established kept % | flood admitted % "
          "| over the limit | evicted | remembered | CPU s |\n|---|---|---|---|---|---|---|---|---|")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--policy", choices=POLICIES, action="append")
    ap.add_argument("--flood", type=int, action="append", help="flood keys per window, in units of CAP")
    ap.add_argument("--flood-n", type=int, default=1, help="permits each flood key asks for")
    ap.add_argument("--flood-head", type=int, default=1, help="flood in the first 1/H of each window")
    ap.add_argument("--established", type=int, default=50)
    ap.add_argument("--newcomers", type=int, default=200)
    ap.add_argument("--abusers", type=int, default=0)
    ap.add_argument("--measured", type=int, default=6)
    ap.add_argument("--rows", type=int, default=2)
    ap.add_argument("--words-per-slot", type=int, default=4)
    ap.add_argument("--mutate", choices=MUTATIONS)
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(0 if selftest() else 1)
    policies = a.policy or ["evict"]
    floods = a.flood or [20, 40, 100]
    print(f"model of KeyedGate<2, 4096>, limit 10 per 2 windows; {a.established} established keys, "
          f"{a.newcomers} newcomers a window, {a.abusers} abusers; flood keys asking {a.flood_n}, "
          f"in the first 1/{a.flood_head} of each window; seed {a.seed}; {a.measured} measured windows "
          f"after 2 calm + 2 flood warm-up; memory {a.words_per_slot} words a slot, {a.rows} rows")
    print()
    print(HEADER)
    for fx in floods:
        for p in policies:
            r = run(fx, policy=p, seed=a.seed, established=a.established, abusers=a.abusers,
                    newcomers=a.newcomers, flood_n=a.flood_n, flood_head=a.flood_head,
                    measured=a.measured, rows=a.rows, words_per_slot=a.words_per_slot, mutate=a.mutate)
            print(f"| {fx}x | {p} | {pct(r['new']):.1f} | {pct(r['est']):.1f} | {pct(r['flood']):.1f} "
                  f"| {r['over']} | {r['evicted']} | {r['remembered']} | {r['cpu_s']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
