//! `KeyedGate` under pressure: small tables (`<2, 4>`, `<3, 16>`, `<1, 2>`,
//! `<2, 1>`, and `<2, 40>`, whose probes are 16 of its 40 slots and wrap),
//! more keys than slots (0, `u64::MAX`, a pool, any key), any window,
//! limit (some too large: the table refuses everything), request size and
//! seed, any [`Overflow`] policy, one caller. Each request reads the
//! key's `remaining`, `retry_after` and the table's `stats`, and then (or
//! not) calls `try_acquire`. A burst goes to a twin table (the same
//! parameters, given every earlier request one call each) as one
//! `try_acquire_burst`, and to the checked table one request at a time:
//! the decisions must agree (each request decided as if alone, in order),
//! and then `stats`, `remaining` and `retry_after` of the burst's keys.
//!
//! With `forward` the clock never goes back (a backward move is reflected
//! forward); otherwise it goes anywhere. What is checked:
//!
//! - Always, at any time: no panic; the reads change nothing; `remaining
//!   <= limit`; `retry_after` is `Some(0)` for `n == 0`, `None` for `n >
//!   limit` (or a table that refuses everything), and otherwise `Some(0)`
//!   exactly when `n <= remaining`, any other wait ending at a window
//!   start; a decision passes exactly when `n <= remaining`, and then takes
//!   `n` off `remaining` (a refusal takes nothing); `n > limit` is refused
//!   and takes no slot; `stats`: `resident <= CAP`, never fewer, counters
//!   that only grow, at most one slot taken (free or recycled) or one
//!   overflow per decision, and (where a probe is the whole table, `CAP <=
//!   PROBE`) an overflow only when no slot is free or recyclable. An
//!   overflow decides by the policy and books nothing.
//! - While every window id in use is within `2^31 - 1 - 2N` windows of
//!   every other (the words keep ids modulo `2^32` or `2^33`), a ledger per
//!   key of the permits the table counted (every pass but an overflow's):
//!   no interval of `N` windows holds more than the limit. A pass's booking
//!   window `b` is read back from `retry_after(key, now, limit)`, which is
//!   the start of window `b + N` (when the permits just booked slide out of
//!   every interval a booking would join); it must be at least the
//!   caller's window and at most the newest any caller reached (the module
//!   docs' late callers and high water), the caller's own with `forward`,
//!   and for a key the call inserted, no earlier than `N` windows before
//!   the newest window of a caller that recycled a slot (the high water).
//!   Where that start is past `u64::MAX`, the permits go in the ledger as
//!   somewhere in that range, and only the intervals that hold all of it
//!   are checked.
//! - With `forward`, in range: the table as the module docs state it. Each
//!   key's own `Gate::<N>::new(window, limit).with_occupy_timeout(0)`
//!   decides its every decision, `remaining` and `retry_after` while the
//!   key has a slot or room. The harness keeps the newest window of each
//!   key's slot word (a pass books in the caller's window; a key is
//!   inserted only by a pass): a key whose word is less than `2N` windows
//!   old certainly holds its slot (no caller has reached a window where it
//!   is recyclable), and `stats`' resident minus recyclable must count
//!   exactly those keys. Where a probe is the whole table, a key has room
//!   exactly when fewer than `CAP` such keys are resident (the others'
//!   slots are free or recyclable): then it must not overflow, and it
//!   must when it has none, with `remaining` 0 or the limit and
//!   `retry_after` the time the first slot becomes recyclable (Refuse) or 0
//!   (Admit). In the 40-slot table, a key cannot overflow while fewer than
//!   16 other keys were ever inserted. A key's own gate is never reset: a
//!   key recycled had all its permits slid out of its gate's interval (its
//!   word was `2N` windows old), so its gate answers as a fresh one, as the
//!   table does after it inserts the key again.
//! - `Overflow::Evict`: the ledger above holds throughout (no key, evicted
//!   or not, over its limit); the gate per key and the room model hold
//!   until the first eviction (then a key may start from an estimate above
//!   what it booked); an evicting decision is judged by the ledger only
//!   (its fold and high water change what the new key starts from).
//! - The local table: a `LocalKeyedGate` of the same parameters and seed
//!   gets every call the checked table gets (bursts as bursts): while every
//!   window id is in range (as above), each of its answers (decisions,
//!   `remaining`, `retry_after`, `occupancy`) must be the `KeyedGate`'s; out of
//!   range it must not panic.
#![no_main]

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::keyed::{KeyedError, LocalKeyedGate, Occupancy, Overflow, PROBE};
use leaparray::KeyedGate;
use leaparray::{Decision, Gate};
use leaparray_fuzz::input::{IdRange, Move, Time, WindowLen};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Table {
    /// `KeyedGate<2, 4>`.
    N2Cap4,
    /// `KeyedGate<3, 16>`: one probe, exactly the table.
    N3Cap16,
    /// `KeyedGate<1, 2>`.
    N1Cap2,
    /// `KeyedGate<2, 1>`: every new key competes for one slot.
    N2Cap1,
    /// `KeyedGate<2, 40>`: probes of 16 that wrap around the end.
    N2Cap40,
}

#[derive(Arbitrary, Debug)]
struct Input {
    table: Table,
    window: WindowLen,
    limit: Limit,
    /// The overflow policy: `Evict`, `Refuse` or `Admit` (modulo 3).
    policy: u8,
    seed: Option<u64>,
    /// The pool's keys besides 0 and `u64::MAX`.
    salt: u64,
    /// The clock never goes back: the table is compared with a gate per key.
    forward: bool,
    start: Time,
    steps: Vec<(Move, Op)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Limit {
    /// `0..16`.
    Small(u8),
    /// `0..=255`.
    Byte(u8),
    /// `max_limit() - 1 ..= max_limit() + 2`: the last two that fit, the
    /// first two that do not.
    NearMax(u8),
    /// Anything (mostly too large).
    Any(u64),
}

impl Limit {
    fn value(self, max: u64) -> u64 {
        match self {
            Limit::Small(v) => u64::from(v % 16),
            Limit::Byte(v) => u64::from(v),
            Limit::NearMax(k) => (max - 1).saturating_add(u64::from(k % 4)),
            Limit::Any(v) => v,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Amount {
    /// `0..8`.
    Small(u8),
    /// `limit - 2 ..= limit + 2`.
    Near(i8),
    /// `u64::MAX`.
    Max,
    /// Anything.
    Any(u64),
}

impl Amount {
    fn value(self, limit: u64) -> u64 {
        match self {
            Amount::Small(v) => u64::from(v % 8),
            Amount::Near(k) => limit.saturating_add_signed(i64::from(k % 3)),
            Amount::Max => u64::MAX,
            Amount::Any(v) => v,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum KeyPick {
    /// One of `min(CAP, PROBE) + 3` keys: 0, `u64::MAX`, `salt + i`.
    Pool(u8),
    /// Any key.
    Any(u64),
}

impl KeyPick {
    fn key(self, pool: usize, salt: u64) -> u64 {
        match self {
            KeyPick::Pool(i) => match usize::from(i) % pool {
                0 => 0,
                1 => u64::MAX,
                i => salt.wrapping_add(i as u64),
            },
            KeyPick::Any(k) => k,
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum Op {
    /// Read, then `try_acquire(key, now, n)`.
    Acquire(KeyPick, Amount),
    /// Read only (`remaining`, `retry_after(key, now, n)`, `stats`).
    Query(KeyPick, Amount),
    /// `try_acquire_burst` on the twin, with room for all the decisions,
    /// one more, one fewer or half (by the `u8`); each request read and
    /// decided on `t` as an `Acquire`.
    Burst(Vec<(KeyPick, Amount)>, u8),
}

fuzz_target!(|input: Input| match input.table {
    Table::N2Cap4 => run::<2, 4>(&input),
    Table::N3Cap16 => run::<3, 16>(&input),
    Table::N1Cap2 => run::<1, 2>(&input),
    Table::N2Cap1 => run::<2, 1>(&input),
    Table::N2Cap40 => run::<2, 40>(&input),
});

/// Permits the table counted for one key: booking windows from `lo`
/// (the caller's) to at most the `hi` of each entry, by `lo`.
type Ledger = BTreeMap<u64, Vec<(u64, u64)>>;

/// Records `n` permits booked somewhere in windows `lo ..= hi`; every
/// interval of `N` windows that surely holds them (and the others summed)
/// must hold at most `limit`.
fn book<const N: usize>(ledger: &mut Ledger, lo: u64, hi: u64, n: u64, limit: u64) {
    ledger.entry(lo).or_default().push((hi, n));
    let n_ = N as u64;
    if hi - lo >= n_ {
        return;
    }
    for end in hi..=lo.saturating_add(n_ - 1) {
        let start = end.saturating_sub(n_ - 1);
        let total: u128 = ledger
            .range(start..=end)
            .flat_map(|(_, v)| v)
            .filter(|&&(h, _)| h <= end)
            .map(|&(_, n)| u128::from(n))
            .sum();
        assert!(
            total <= u128::from(limit),
            "{total} counted in windows {start}..={end} (limit {limit})"
        );
    }
}

/// One table, the harness's knowledge of it, and the checks.
struct Harness<const N: usize, const CAP: usize> {
    t: KeyedGate<N, CAP>,
    window: u64,
    len: NonZeroU64,
    limit: u64,
    policy: Overflow,
    forward: bool,
    range: Option<IdRange>,
    /// Every window id so far within range of every other.
    in_range: bool,
    /// The newest window any caller reached.
    top: u64,
    /// The newest window of a caller that recycled a slot (0 if none):
    /// the table's high water, at least.
    high: u64,
    /// `stats` after the last call.
    prev: Occupancy,
    /// With `forward`: each key's own gate, and the newest window of the
    /// slot word of each key ever inserted.
    gates: HashMap<u64, Gate<N>>,
    newest: HashMap<u64, u64>,
    ledgers: HashMap<u64, Ledger>,
}

/// A table of `len` windows and `limit`, under `policy`, seeded with `seed`.
fn table<const N: usize, const CAP: usize>(
    len: NonZeroU64,
    limit: u64,
    policy: Overflow,
    seed: Option<u64>,
) -> KeyedGate<N, CAP> {
    let t = KeyedGate::<N, CAP>::new(len, limit).with_overflow(policy);
    match seed {
        Some(seed) => t.with_seed(seed),
        None => t,
    }
}

fn run<const N: usize, const CAP: usize>(input: &Input) {
    let window = input.window.ticks();
    let len = NonZeroU64::new(window).expect("never 0");
    let max = KeyedGate::<N, CAP>::max_limit();
    let limit = input.limit.value(max);
    let policy =
        [Overflow::Evict, Overflow::Refuse, Overflow::Admit][usize::from(input.policy % 3)];
    // A limit that does not fit builds no table of either kind, and says
    // which limit would.
    let error = (limit > max).then_some(KeyedError::LimitTooLarge { max });
    assert_eq!(KeyedGate::<N, CAP>::try_new(len, limit).err(), error);
    assert_eq!(LocalKeyedGate::<N, CAP>::try_new(len, limit).err(), error);
    if error.is_some() {
        return;
    }
    let t = table::<N, CAP>(len, limit, policy, input.seed);
    assert_eq!(
        (t.window(), t.limit(), t.capacity(), t.overflow()),
        (window, limit, CAP, policy)
    );
    let mut clock = input.start.ticks();
    let prev = t.occupancy(clock);
    assert_eq!(prev, Occupancy::default());
    let mut h = Harness {
        t,
        window,
        len,
        limit,
        policy,
        forward: input.forward,
        range: None,
        in_range: true,
        top: 0,
        high: 0,
        prev,
        gates: HashMap::new(),
        newest: HashMap::new(),
        ledgers: HashMap::new(),
    };
    let pool = CAP.min(PROBE) + 3;
    let key = |k: KeyPick| k.key(pool, input.salt);
    // The same table, given every request `t` had one call each, and the
    // bursts as bursts (`t` gets their requests one call each): it must
    // stay in `t`'s state.
    let twin = table::<N, CAP>(len, limit, policy, input.seed);
    let mut owned = LocalKeyedGate::<N, CAP>::new(len, limit).with_overflow(policy);
    if let Some(seed) = input.seed {
        owned = owned.with_seed(seed);
    }
    assert_eq!(
        (owned.window(), owned.limit(), owned.overflow()),
        (window, limit, policy)
    );
    // The owned table's reads match the checked table's while in range.
    let same_reads = |owned: &LocalKeyedGate<N, CAP>, t: &KeyedGate<N, CAP>, key, now, n| {
        assert_eq!(owned.remaining(key, now), t.remaining(key, now), "owned");
        assert_eq!(
            owned.retry_after(key, now, n),
            t.retry_after(key, now, n),
            "owned"
        );
        assert_eq!(owned.occupancy(now), t.occupancy(now), "owned stats");
    };

    for (mv, op) in &input.steps {
        let moved = mv.apply(clock, window);
        clock = if input.forward && moved < clock {
            clock.saturating_add(clock - moved)
        } else {
            moved
        };
        let now = clock;
        h.at(now);
        match op {
            &Op::Acquire(k, a) => {
                let (key, n) = (key(k), a.value(limit));
                if h.in_range {
                    same_reads(&owned, &h.t, key, now, n);
                }
                let got = h.check(now, key, n, true);
                assert_eq!(Some(twin.try_acquire(key, now, n)), got, "the twin");
                let mine = owned.try_acquire(key, now, n);
                if h.in_range {
                    assert_eq!(Some(mine), got, "the owned table");
                }
            }
            &Op::Query(k, a) => {
                let (key, n) = (key(k), a.value(limit));
                if h.in_range {
                    same_reads(&owned, &h.t, key, now, n);
                }
                h.check(now, key, n, false);
            }
            Op::Burst(requests, size) => {
                let requests: Vec<(u64, u64)> = requests
                    .iter()
                    .map(|&(k, a)| (key(k), a.value(limit)))
                    .collect();
                let size = match size % 4 {
                    0 => requests.len(),
                    1 => requests.len() + 1,
                    2 => requests.len().saturating_sub(1),
                    _ => requests.len() / 2,
                };
                assert_eq!(
                    twin.occupancy(now),
                    h.t.occupancy(now),
                    "the twin before the burst"
                );
                // A fill that marks what was not decided: a decision written
                // past the decided ones differs from it with probability
                // 1/2 (the keys' salt picks it).
                let untouched: Vec<Decision> = (0..size)
                    .map(|i| {
                        if (input.salt >> (i % 64)) & 1 == 0 {
                            Decision::Pass
                        } else {
                            Decision::Block
                        }
                    })
                    .collect();
                let mut decisions = untouched.clone();
                let decided = twin.try_acquire_burst(now, &requests, &mut decisions);
                assert_eq!(decided, size.min(requests.len()), "decided of {size}");
                let mut mine = untouched.clone();
                let mut hints = 0;
                let d = owned.try_acquire_burst(now, &requests, &mut mine, |_| hints += 1);
                assert_eq!((d, hints), (decided, decided), "owned: decided, prefetched");
                if h.in_range {
                    assert_eq!(mine, decisions, "the owned table's burst");
                }
                assert_eq!(decisions[decided..], untouched[decided..]);
                // Each as if alone, in order.
                for (i, &(key, n)) in requests[..decided].iter().enumerate() {
                    let got = h.check(now, key, n, true);
                    assert_eq!(
                        Some(decisions[i]),
                        got,
                        "request {i} of the burst: {key}, {n}"
                    );
                }
                // The same keys in the same slots with the same words.
                assert_eq!(twin.occupancy(now), h.t.occupancy(now), "after the burst");
                for &(key, n) in &requests {
                    assert_eq!(twin.remaining(key, now), h.t.remaining(key, now));
                    assert_eq!(twin.retry_after(key, now, n), h.t.retry_after(key, now, n));
                    if h.in_range {
                        same_reads(&owned, &h.t, key, now, n);
                    }
                }
            }
        }
    }
}

impl<const N: usize, const CAP: usize> Harness<N, CAP> {
    const N_: u64 = N as u64;

    /// Notes a call at `now`.
    fn at(&mut self, now: u64) {
        // Ids within this many windows of each other are read exactly by
        // the words (`2^31 - 1` for the narrowest, `N = 1`), with the `N`
        // windows an inserted word starts before its caller.
        let span = (1u64 << 31) - 1 - 2 * Self::N_;
        let c = now / self.window;
        self.top = self.top.max(c);
        self.in_range = self
            .range
            .get_or_insert_with(|| IdRange::new(c))
            .note_within(c, span);
    }

    /// Reads `key`'s `remaining` and `retry_after(n)` at `now`, and then
    /// (if `acquire`) calls `try_acquire(key, now, n)`, checking them all.
    /// Returns the decision (`None` for a read).
    fn check(&mut self, now: u64, key: u64, n: u64, acquire: bool) -> Option<Decision> {
        let n_ = Self::N_;
        let (t, window, limit, policy) = (&self.t, self.window, self.limit, self.policy);
        let (in_range, top) = (self.in_range, self.top);
        let c = now / window;
        // Under `Evict`, once a key was evicted a key may start from an
        // estimate above what it booked: the ledger only, from then on.
        let exact = self.forward && in_range && self.prev.evicted == 0;
        // A probe is the whole table: room is a count.
        let whole = CAP <= PROBE;

        // The reads, which change nothing.
        let before = t.occupancy(now);
        let rem = t.remaining(key, now);
        let retry = t.retry_after(key, now, n);
        assert_eq!(t.occupancy(now), before, "a read changed the table");
        assert_eq!(t.remaining(key, now), rem);

        // Occupancy, always.
        let prev = self.prev;
        assert!(before.resident <= CAP, "{before:?}");
        assert!(before.recyclable <= before.resident, "{before:?}");
        assert_eq!(before.resident, prev.resident, "a read took a slot");
        assert_eq!(before.recycled, prev.recycled, "a read recycled");
        assert_eq!(before.overflowed, prev.overflowed, "a read overflowed");
        assert_eq!(before.evicted, prev.evicted, "a read evicted");
        assert_eq!(before.remembered, prev.remembered, "a read remembered");

        // The reads, always.
        {
            assert!(rem <= limit, "remaining {rem}, limit {limit}");
            if n == 0 {
                assert_eq!(retry, Some(0), "retry_after(0)");
            } else if n > limit {
                assert_eq!(retry, None, "retry_after({n}), limit {limit}");
            } else {
                assert_eq!(
                    retry == Some(0),
                    n <= rem,
                    "retry_after({key}, {now}, {n}) = {retry:?}, remaining {rem}"
                );
                match retry {
                    Some(0) => {}
                    Some(wait) => {
                        let at = now.checked_add(wait).expect("a wait ends within time");
                        assert_eq!(at % window, 0, "a wait of {wait} at {now}");
                    }
                    // Only where the window room comes back in would start
                    // after `u64::MAX` (it is at most 2N after the newest).
                    None => assert!(
                        !in_range
                            || (u128::from(top) + 2 * u128::from(n_)) * u128::from(window)
                                > u128::from(u64::MAX),
                        "retry_after({key}, {now}, {n}) = None, newest window {top}"
                    ),
                }
            }
        }

        // The table as a gate per key, with `forward` and in range.
        let certain = |x: &u64| u128::from(*x) + 2 * u128::from(n_) > u128::from(c);
        // Keys certainly resident (their words are not recyclable yet).
        let live = self.newest.values().filter(|x| certain(x)).count();
        let holds = self.newest.get(&key).is_some_and(certain);
        // Whether the key holds a slot or has room for one, if known.
        let room = if holds {
            Some(true)
        } else if whole {
            Some(live < CAP)
        } else if self.newest.keys().filter(|&&k| k != key).count() < PROBE {
            Some(true)
        } else {
            None
        };
        let full_rem = match policy {
            Overflow::Refuse => 0,
            // (Evict: nothing remembered yet, while `exact`.)
            Overflow::Admit | Overflow::Evict => limit,
        };
        if exact {
            assert_eq!(
                before.resident - before.recyclable,
                live,
                "keys certainly resident at {now} (window {c}): {:?}",
                self.newest
            );
            let len = self.len;
            let gate = self
                .gates
                .entry(key)
                .or_insert_with(|| Gate::<N>::new(len, limit).with_occupy_timeout(0));
            match room {
                Some(true) => {
                    assert_eq!(rem, gate.remaining(now), "remaining({key}, {now})");
                    assert_eq!(
                        retry,
                        gate.retry_after(now, n),
                        "retry_after({key}, {now}, {n})"
                    );
                }
                Some(false) => {
                    assert_eq!(rem, full_rem, "remaining({key}, {now}), no room");
                    let want = if n == 0 {
                        Some(0)
                    } else if n > limit {
                        None
                    } else {
                        match policy {
                            Overflow::Admit | Overflow::Evict => Some(0),
                            // When the first slot becomes recyclable.
                            Overflow::Refuse => self
                                .newest
                                .values()
                                .filter(|x| certain(x))
                                .filter_map(|&x| x.checked_add(2 * n_)?.checked_mul(window))
                                .min()
                                .map(|at| at.saturating_sub(now)),
                        }
                    };
                    assert_eq!(retry, want, "retry_after({key}, {now}, {n}), no room");
                }
                None => assert!(
                    rem == gate.remaining(now) || rem == full_rem,
                    "remaining({key}, {now}) = {rem}"
                ),
            }
        }

        if !acquire {
            self.prev = before;
            return None;
        }
        let got = t.try_acquire(key, now, n);
        let after = t.occupancy(now);
        self.prev = after;
        let rem_after = t.remaining(key, now);
        assert!(
            after.resident >= before.resident,
            "{before:?} then {after:?}"
        );
        let grew = (after.resident - before.resident) as u64;
        let recycled = after.recycled - before.recycled;
        let overflowed = after.overflowed - before.overflowed;
        let evicted = after.evicted - before.evicted;
        assert!(
            grew + recycled + overflowed + evicted <= 1,
            "{before:?} then {after:?}"
        );
        assert!(policy == Overflow::Evict || evicted == 0);
        let inserted = grew + recycled + evicted == 1;
        if recycled + evicted == 1 {
            self.high = self.high.max(c);
        }
        if n == 0 || n > limit {
            // Nothing to book, or never admitted: no slot taken, no
            // overflow either.
            let want = if n == 0 {
                Decision::Pass
            } else {
                Decision::Block
            };
            assert_eq!(got, want, "try_acquire({key}, {now}, {n})");
            assert_eq!(after, before);
            assert_eq!(rem_after, rem);
            return Some(got);
        }
        if whole {
            // A probe is the whole table: no room is no free slot and no
            // recyclable one (and then no slot of the key's).
            if before.resident < CAP || before.recyclable > 0 {
                assert_eq!(overflowed, 0, "overflow with room: {before:?}");
            }
        }
        if overflowed == 1 {
            if whole {
                assert_eq!((before.resident, before.recyclable), (CAP, 0));
            }
            assert_eq!(rem, full_rem, "remaining({key}, {now}) before an overflow");
            let want = match policy {
                // (Evict overflows only when its memory holds nothing.)
                Overflow::Refuse | Overflow::Evict => Decision::Block,
                Overflow::Admit => Decision::Pass,
            };
            assert_eq!(got, want, "an overflow under {policy:?}");
            assert_eq!(rem_after, rem, "an overflow books nothing");
        } else {
            // An eviction folds its victim and raises the high water before
            // the new key reads its estimate: it may start from more than
            // `remaining` (read before) said, or later with less. The
            // ledger judges it.
            if evicted == 0 {
                assert_eq!(
                    got == Decision::Pass,
                    n <= rem,
                    "try_acquire({key}, {now}, {n}) = {got:?}, remaining {rem}"
                );
                let want_rem = if got == Decision::Pass { rem - n } else { rem };
                assert_eq!(rem_after, want_rem, "remaining({key}, {now}) after {got:?}");
            }
            if got == Decision::Pass && in_range {
                // The booking window: the newest of the key's word now,
                // whose permits slide out of every interval a booking
                // would join `N` windows after it, when `limit` fits again.
                let (lo, hi) = match t.retry_after(key, now, limit) {
                    Some(wait) => {
                        let end = now.checked_add(wait).expect("a wait ends within time");
                        assert_eq!(end % window, 0, "retry_after({key}, {now}, {limit})");
                        let b = (end / window).checked_sub(n_).expect("N windows after it");
                        assert!(
                            (c..=top).contains(&b),
                            "booked {n} at {now} into window {b}: not in {c}..={top}"
                        );
                        if self.forward {
                            assert_eq!(b, c, "booked {n} at {now} into window {b}");
                        }
                        // A key inserted: no earlier than `N` windows before
                        // the high water (module docs, "Recycling").
                        let floor = self.high.saturating_sub(n_);
                        assert!(
                            !inserted || b >= floor,
                            "{key} inserted at {now} into window {b}, high water {}",
                            self.high
                        );
                        (b, b)
                    }
                    // It slides out after the end of time.
                    None => (c, top),
                };
                book::<N>(self.ledgers.entry(key).or_default(), lo, hi, n, limit);
            }
        }

        if exact {
            match room {
                Some(true) => assert_eq!(overflowed, 0, "{key} at {now} had room"),
                Some(false) => assert_eq!(overflowed + evicted, 1, "{key} at {now} had no room"),
                None => {}
            }
            if overflowed + evicted == 0 {
                let gate = self.gates.get(&key).expect("inserted above");
                assert_eq!(
                    got,
                    gate.try_acquire(now, n),
                    "try_acquire({key}, {now}, {n})"
                );
                if holds {
                    assert!(!inserted, "{key} held a slot: {before:?} then {after:?}");
                }
                if !self.newest.contains_key(&key) {
                    assert!(inserted, "{key} had no slot: {before:?} then {after:?}");
                }
                // A key inserted has nothing counted: `n <= limit` passes.
                if inserted {
                    assert_eq!(got, Decision::Pass, "{key} inserted at {now}");
                }
                if got == Decision::Pass {
                    self.newest.insert(key, c);
                }
            }
            let live = self.newest.values().filter(|x| certain(x)).count();
            assert!(
                evicted == 1 || after.resident - after.recyclable == live,
                "keys certainly resident at {now} (window {c}): {:?}",
                self.newest
            );
        }
        Some(got)
    }
}
