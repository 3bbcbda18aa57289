//! Loom models of the flow gate, `leaparray::gate`, in its two shapes that
//! exist under loom, of `GateSet`, and of the metric's exact per-window
//! minimum RT.
//!
//! - The bucket shape (`Gate::in_buckets`: book, read, roll back): two
//!   threads racing for the last permit, an admission racing the roll-over
//!   of its bucket, a prioritized request borrowing the window another
//!   thread rolls into. Each checks that no interval of the two windows
//!   counts more than the limit, that the pass counts are exactly the
//!   decisions (a refusal leaves no booking), and where late callers land
//!   (the newest window). False rejections under contention are allowed in
//!   this shape, and the models see them happen.
//! - The one-word shape (`Gate::<2>::new(W, limit)` with limits 2 and 3,
//!   asserted to be `Shape::Word64`): two or three threads in the same or
//!   adjacent windows racing for the last permits, late callers racing a
//!   caller that moves the word to a new window, a prioritized request
//!   racing a plain one on a full interval. In every schedule the decisions
//!   and the final state (`count` and `peek` at every window) must be those
//!   of the same calls made one at a time in some order, replayed on
//!   `Spec`, the documented rules written out: the word gate is
//!   linearizable, so it never admits over the limit and never refuses
//!   falsely (exactly as many pass as would one at a time). Each model also
//!   states the exact set of outcomes (decisions and where the passes
//!   landed) and checks that every one of them was seen.
//! - `GateSet` of two word gates (limits 1 and 2): a set racing each of its
//!   members used alone (3 threads), and two sets over the same gates in
//!   opposite orders with different sizes (2 threads). No gate counts more
//!   than its limit, each gate counts exactly the permits of the decisions
//!   that passed through it (a set refusal leaves nothing booked), and the
//!   outcomes that only the cancellation of an earlier member's booking can
//!   produce are seen.
//!
//! Bounds: loom explores every interleaving (and the weak-memory outcomes
//! it models) of these small models up to `LOOM_MAX_PREEMPTIONS`
//! preemptions, 5 in CI: at most three threads, each making one decision;
//! windows of 10 ticks, `Gate<2>`, limits of 1 to 3, bookings in windows 0
//! to 2 (so the word's ids modulo `2^T` never wrap, and no caller lags by
//! `2^(T-1)` windows). Loom has no 128-bit atomic, so `Shape::Word128` is
//! not modeled; in the bucket shape a `SeqCst` fence stands for the total
//! order of its `SeqCst` accesses (see `src/gate/bucket_gate.rs`).
//!
//! Run: `RUSTFLAGS="--cfg leaparray_loom" LOOM_MAX_PREEMPTIONS=5 cargo test --release --test gate`
#![cfg(leaparray_loom)]

use std::collections::BTreeMap;

use leaparray::gate::{Member, PriorityDecision, Shape};
use leaparray::stats::{Event, Metric};
use leaparray::MAX_COUNT;
use leaparray::{Decision, Gate, GateSet};
use leaparray_loom_tests::{final_counts, spawn, Seen, W};
use loom::sync::Arc;

fn passed(d: impl Into<PriorityDecision>) -> u64 {
    u64::from(d.into() == PriorityDecision::Pass)
}

// ---------------------------------------------------------------------------
// The bucket shape (`in_buckets`), and the metric's minimum RT.
// ---------------------------------------------------------------------------

/// Two threads race for the last permit: at most one gets it, the pass
/// count is exactly what was admitted, and a refusal leaves nothing behind.
#[test]
fn two_threads_acquire_the_last_permit() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        assert_eq!(g.try_acquire(5, 1), Decision::Pass);
        let (a, b) = (g.clone(), g.clone());
        let t1 = spawn(move || a.try_acquire(5, 1));
        let t2 = spawn(move || b.try_acquire(6, 1));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        let admitted = passed(d1) + passed(d2);
        assert!(admitted <= 1, "both took the last permit: {d1:?} {d2:?}");
        assert_eq!(g.metric().unwrap().pass(6), 1 + admitted);
        assert_eq!(g.metric().unwrap().block(6), 2 - admitted);
        record(admitted);
    });
    // One admitted (the usual case) and none (both saw the other's booking:
    // a false rejection under contention, allowed).
    seen.assert_all(&[0, 1]);
}

/// An admission racing a roll-over of its window's bucket: one thread's
/// time is in window 2 (it retires window 0), a lagging one's in window 1.
/// Window 1 is in both intervals (0, 1] and (1, 2]: each must stay within
/// the limit. A laggard that finds window 2 already created is booked into
/// window 2 (late callers book into the newest window), so it may pass
/// there while the request of window 2 is refused (both booked, the latter
/// read both and took its booking back: a false rejection under
/// contention, which the bucket shape allows).
#[test]
fn acquire_racing_a_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        // Window 0 exists (3 blocked: more than the limit), with no passes.
        assert_eq!(g.try_acquire(0, 3), Decision::Block);
        assert_eq!(g.try_acquire(10, 1), Decision::Pass); // window 1
        let (a, b) = (g.clone(), g.clone());
        let ahead = spawn(move || a.try_acquire(20, 1)); // window 2: rolls bucket 0
        let behind = spawn(move || b.try_acquire(15, 1)); // window 1, or 2 once late
        let (d_ahead, d_behind) = (ahead.join().unwrap(), behind.join().unwrap());
        let m = g.metric().unwrap();
        let (in_1, in_2) = (m.window_pass(10), m.window_pass(20));
        assert_eq!(
            in_1 + in_2,
            1 + passed(d_ahead) + passed(d_behind),
            "a pass not counted, or a refusal left its booking: {d_ahead:?} {d_behind:?}"
        );
        assert!(in_1 >= 1 && in_2 >= passed(d_ahead), "booked too early");
        assert!(in_1 <= 2, "interval (0, 1] over the limit");
        assert!(
            in_1 + in_2 <= 2,
            "interval (1, 2] over the limit: {d_ahead:?} {d_behind:?}"
        );
        assert_eq!(final_counts(m.array(), 0)[Event::Pass.index()], 0);
        record((passed(d_ahead), passed(d_behind), in_2));
    });
    // (ahead, behind, passes in window 2): the request of window 2 passes;
    // the laggard passes in window 1, or late in window 2; both refused.
    seen.assert_all(&[(1, 0, 1), (0, 1, 0), (0, 1, 1), (0, 0, 0)]);
}

/// A prioritized request borrows window 2 while another thread's time has
/// reached window 2 (rolling the bucket that window 2 reuses) and acquires
/// there. The borrowed pass and the direct one together stay within the
/// limit of window 2's intervals, the borrowed pass is counted in window 2
/// exactly once, and a borrower that finds window 2 created is booked into
/// it as a late caller, never into the full window 1.
#[test]
fn occupy_racing_the_roll_over_into_the_borrowed_window() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, 2).in_buckets());
        assert_eq!(g.try_acquire(5, 2), Decision::Pass); // window 0 full
        let (a, b) = (g.clone(), g.clone());
        // At 15 (window 1) the interval (-1, 1] is full; window 2 starts in
        // 5 ticks, when window 0 slides out.
        let borrower = spawn(move || a.try_acquire_prioritized(15, 1));
        let direct = spawn(move || b.try_acquire(20, 2));
        let (d_borrow, d_direct) = (borrower.join().unwrap(), direct.join().unwrap());
        // Window 1 is full with window 0's passes, and once the direct
        // thread has created window 2 the borrower is a late caller,
        // booked into window 2: it never passes in window 1.
        let (late, borrowed) = match d_borrow {
            PriorityDecision::Pass => (1, 0),
            PriorityDecision::Wait(5) => (0, 1),
            PriorityDecision::Block => (0, 0),
            other => panic!("unexpected {other:?}"),
        };
        let direct = 2 * passed(d_direct);
        let m = g.metric().unwrap();
        assert!(
            late + borrowed + direct <= 2,
            "interval (1, 2] over the limit: {d_borrow:?} {d_direct:?}"
        );
        assert_eq!(m.window_pass(10), 0, "interval (0, 1] over the limit");
        assert_eq!(m.window_pass(20), late + borrowed + direct);
        assert_eq!(m.pass(20), late + borrowed + direct);
        assert_eq!(m.occupied_pass(15), borrowed);
        record((late, borrowed, direct));
    });
    // Borrowed; the direct request passes; the borrower, late, passes in
    // window 2 while the direct request, which read its booking, is
    // refused (a false rejection under contention).
    seen.assert_all(&[(0, 1, 0), (0, 0, 2), (1, 0, 0)]);
}

/// The minimum RT of a window is one exact atomic update: a late RT for
/// window 0 racing the roll-over to window 2 either lands in window 0's
/// final minimum or is refused; window 2's minimum is only its own.
#[test]
fn min_rt_racing_a_roll_over() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let m = Arc::new(Metric::<2>::new(W));
        m.add_rt(0, 50).unwrap();
        let (a, b) = (m.clone(), m.clone());
        let late = spawn(move || a.add_rt(1, 10));
        let roll = spawn(move || b.add_rt(20, 30));
        let late = late.join().unwrap();
        assert_eq!(roll.join().unwrap(), Ok(()));
        assert_eq!(m.min_rt(20), Some(30), "a late RT leaked into window 2");
        // The three updates of one `add_rt` are each exact, not one atomic
        // step: if the window is retired between them, the first may have
        // counted in it and the rest not (the call then reports `Stale`).
        // Whatever landed is in window 0's final counts, nothing in window 2.
        let old = final_counts(m.array(), 0);
        let (old_min, old_success) = (MAX_COUNT - old[6], old[Event::Success.index()]);
        assert!(
            [50, 10].contains(&old_min) && [1, 2].contains(&old_success),
            "{old:?}"
        );
        if late.is_ok() {
            assert_eq!((old_min, old_success), (10, 2));
        }
        if old_min == 10 {
            assert_eq!(old_success, 2, "success is updated before the minimum");
        }
        record(late.is_ok());
    });
    seen.assert_all(&[true, false]);
}

// ---------------------------------------------------------------------------
// The one-word gate (`Shape::Word64`): `Gate::<2>::new(W, limit)` with a
// small limit, so one window id and three 2-bit slots (windows newest - 1,
// newest, and newest + 1 for borrowed permits; occupy timeout one window).
// ---------------------------------------------------------------------------

/// One call of a word model: `try_acquire(at, n)`, or
/// `try_acquire_prioritized(at, n)` if `prioritized`.
#[derive(Clone, Copy, Debug)]
struct Call {
    at: u64,
    n: u64,
    prioritized: bool,
}

const fn plain(at: u64, n: u64) -> Call {
    Call {
        at,
        n,
        prioritized: false,
    }
}

const fn prio(at: u64, n: u64) -> Call {
    Call {
        at,
        n,
        prioritized: true,
    }
}

impl Call {
    fn on(self, g: &Gate<2>) -> PriorityDecision {
        if self.prioritized {
            g.try_acquire_prioritized(self.at, self.n)
        } else {
            g.try_acquire(self.at, self.n).into()
        }
    }
}

/// The word gate's documented rules for `Gate<2>` with windows of `W` ticks
/// and an occupy timeout of one window, one call at a time: the reference
/// the racing calls must linearize to (the gate claims to be linearizable:
/// no rollback, so no false refusal).
#[derive(Clone, Debug)]
struct Spec {
    limit: u64,
    /// The newest window booked (meaningless while every count is 0).
    newest: u64,
    /// Passes per window, for the windows the word still holds.
    counts: BTreeMap<u64, u64>,
}

/// Windows per interval and windows after the newest that can be borrowed.
const LIVE: u64 = 2;
const FUTURE: u64 = 1;

impl Spec {
    fn new(limit: u64) -> Self {
        Spec {
            limit,
            newest: 0,
            counts: BTreeMap::new(),
        }
    }

    fn empty(&self) -> bool {
        self.counts.values().all(|&c| c == 0)
    }

    /// The window a call at window `c` books into: its own, or the newest
    /// if that is later (a late caller); an empty word takes any window.
    fn booking_window(&self, c: u64) -> u64 {
        if self.empty() {
            c
        } else {
            c.max(self.newest)
        }
    }

    fn held(&self, w: u64) -> u64 {
        self.counts.get(&w).copied().unwrap_or(0)
    }

    /// Passes of the interval ending at window `end`, counting only
    /// windows from `from` on (older ones have slid out of the word).
    fn interval(&self, end: u64, from: u64) -> u64 {
        (end.saturating_sub(LIVE - 1).max(from)..=end)
            .map(|w| self.held(w))
            .sum()
    }

    /// The fullest interval containing window `w`, with `b` the newest.
    fn peak(&self, w: u64, b: u64) -> u64 {
        let from = (b + 1).saturating_sub(LIVE);
        (w..=(w + LIVE - 1).min(b + FUTURE))
            .map(|end| self.interval(end, from))
            .max()
            .unwrap_or(0)
    }

    fn book(&mut self, w: u64, n: u64, b: u64) {
        self.newest = b;
        let from = (b + 1).saturating_sub(LIVE);
        self.counts.retain(|&k, _| k >= from);
        *self.counts.entry(w).or_insert(0) += n;
    }

    fn acquire(&mut self, call: Call) -> PriorityDecision {
        let b = self.booking_window(call.at / W.get());
        if self.peak(b, b) + call.n <= self.limit {
            self.book(b, call.n, b);
            return PriorityDecision::Pass;
        }
        if call.prioritized {
            for ahead in 1..=FUTURE {
                let w = b + ahead;
                let wait = (w * W.get()).saturating_sub(call.at);
                if wait >= W.get() {
                    break;
                }
                if self.peak(w, b) + call.n <= self.limit {
                    self.book(w, call.n, b);
                    return PriorityDecision::Wait(wait);
                }
            }
        }
        PriorityDecision::Block
    }

    /// `Gate::count` at `now`.
    fn count(&self, now: u64) -> u64 {
        if self.empty() {
            return 0;
        }
        let c = now / W.get();
        self.interval(c, (c.max(self.newest) + 1).saturating_sub(LIVE))
    }

    /// `Gate::peek` at `now`.
    fn peek(&self, now: u64) -> u64 {
        if self.empty() {
            return 0;
        }
        let b = self.booking_window(now / W.get());
        self.peak(b, b)
    }

    /// The windows with passes, as `w1=1 w2=2`.
    fn windows(&self) -> String {
        let held: Vec<_> = (self.counts.iter())
            .filter(|(_, &c)| c > 0)
            .map(|(w, c)| format!("w{w}={c}"))
            .collect();
        held.join(" ")
    }
}

/// The times at which the models compare the gate's `count` and `peek`
/// with the reference's, and check every interval against the limit.
const PROBES: [u64; 11] = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50];

/// `count` and `peek` at every probe.
fn observe(count: impl Fn(u64) -> u64, peek: impl Fn(u64) -> u64) -> Vec<(u64, u64, u64)> {
    PROBES.iter().map(|&t| (t, count(t), peek(t))).collect()
}

/// The reference state after `pre`, then `calls` in the order `order`, if
/// it gives the decisions `got` and the state `seen` (`observe`).
fn replay(
    limit: u64,
    pre: &[Call],
    calls: &[Call],
    order: &[usize],
    got: &[PriorityDecision],
    seen: &[(u64, u64, u64)],
) -> Option<Spec> {
    let mut s = Spec::new(limit);
    for &c in pre {
        let _ = s.acquire(c);
    }
    for &i in order {
        if s.acquire(calls[i]) != got[i] {
            return None;
        }
    }
    (observe(|t| s.count(t), |t| s.peek(t)) == seen).then_some(s)
}

/// Every order of `0..k`.
fn orders(k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![vec![]];
    }
    let mut all = Vec::new();
    for rest in orders(k - 1) {
        for at in 0..=rest.len() {
            let mut o = rest.clone();
            o.insert(at, k - 1);
            all.push(o);
        }
    }
    all
}

/// The outcome of one schedule: the decisions, in call order, and the
/// windows holding passes, e.g. `Pass Block | w0=2`.
fn outcome(got: &[PriorityDecision], s: &Spec) -> String {
    let ds: Vec<_> = got.iter().map(|d| format!("{d:?}")).collect();
    format!("{} | {}", ds.join(" "), s.windows())
}

/// A model of the word gate: a `Gate<2>` of `limit` takes the calls `pre`
/// one at a time, then each of `calls` races in its own thread. In every
/// schedule: each call's decision and the final state (`count` and `peek`
/// at every probe) are those of the calls run one at a time in some order
/// (the gate is linearizable: it never admits over the limit and never
/// refuses falsely), no interval counts more than `limit`, and `check`
/// holds. Across the schedules the outcomes seen are exactly `expect`.
fn word_model(
    limit: u64,
    pre: &[Call],
    calls: &[Call],
    check: fn(&Gate<2>, &[PriorityDecision]),
    expect: &'static [&'static str],
) {
    let seen = Seen::new();
    let record = seen.recorder();
    let (pre, calls) = (pre.to_vec(), calls.to_vec());
    loom::model(move || {
        let g = Arc::new(Gate::<2>::new(W, limit));
        assert!(matches!(g.shape(), Shape::Word64 { .. }), "{:?}", g.shape());
        for &c in &pre {
            assert_eq!(c.on(&g), PriorityDecision::Pass, "setup {c:?}");
        }
        let threads: Vec<_> = (calls.iter())
            .map(|&c| {
                let g = g.clone();
                spawn(move || c.on(&g))
            })
            .collect();
        let got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let state = observe(|t| g.count(t), |t| g.peek(t));
        for &(t, count, peek) in &state {
            assert!(
                count <= limit && peek <= limit,
                "over the limit at {t}: {got:?}, (at, count, peek) {state:?}"
            );
        }
        let s = (orders(calls.len()).iter())
            .find_map(|o| replay(limit, &pre, &calls, o, &got, &state))
            .unwrap_or_else(|| {
                panic!("no order of the calls gives {got:?} and (at, count, peek) {state:?}")
            });
        check(&g, &got);
        let outcome = outcome(&got, &s);
        assert!(
            expect.contains(&outcome.as_str()),
            "unexpected outcome {outcome}"
        );
        record(outcome);
    });
    let expect: Vec<String> = expect.iter().map(|e| e.to_string()).collect();
    seen.assert_all(&expect);
}

/// Limit 2, one permit booked at 5: two threads in window 0 ask for the
/// last one. Exactly one gets it in every schedule (never none: no false
/// refusal), and either can.
#[test]
fn word_last_permit_same_window() {
    word_model(
        2,
        &[plain(5, 1)],
        &[plain(5, 1), plain(6, 1)],
        |g, _| assert_eq!((g.count(5), g.remaining(5)), (2, 0)),
        &["Pass Block | w0=2", "Block Pass | w0=2"],
    );
}

/// Limit 2, one permit booked at 5: a thread in window 0 and one in window
/// 1 ask for the last permit of the interval (0, 1]. Exactly one gets it;
/// when the thread of window 1 books first, the other is a late caller,
/// booked into window 1 and refused because (0, 1] is full.
#[test]
fn word_last_permit_adjacent_windows() {
    word_model(
        2,
        &[plain(5, 1)],
        &[plain(5, 1), plain(15, 1)],
        |g, _| assert_eq!(g.count(15), 2),
        &["Pass Block | w0=2", "Block Pass | w0=1 w1=1"],
    );
}

/// Limit 3, one permit booked at 5: the same two threads both pass in
/// every schedule; the late one books into window 1 if it comes second.
#[test]
fn word_room_for_both() {
    word_model(
        3,
        &[plain(5, 1)],
        &[plain(5, 1), plain(15, 1)],
        |g, _| assert_eq!((g.count(15), g.remaining(15)), (3, 0)),
        &["Pass Pass | w0=2 w1=1", "Pass Pass | w0=1 w1=2"],
    );
}

/// Limit 3, one permit booked at 5, three threads (windows 0, 1, 1) ask
/// for one each: exactly two pass in every schedule, and any of the three
/// can be the one refused (the third to book). The thread of window 0
/// books into window 0 if it comes first, else late into window 1.
#[test]
fn word_three_threads_two_permits() {
    word_model(
        3,
        &[plain(5, 1)],
        &[plain(5, 1), plain(15, 1), plain(16, 1)],
        |g, _| assert_eq!(g.count(15), 3),
        &[
            "Pass Pass Block | w0=2 w1=1",
            "Pass Block Pass | w0=2 w1=1",
            "Pass Pass Block | w0=1 w1=2",
            "Pass Block Pass | w0=1 w1=2",
            "Block Pass Pass | w0=1 w1=2",
        ],
    );
}

/// Limit 2, one permit booked at 15 (window 1 is the newest): a thread at
/// 25 moves the word to window 2 while a late caller at 5 (window 0) asks
/// for one. The late caller is booked into the newest window of the moment
/// it decides, never into window 0: into window 1 if it comes first
/// (then (1, 2] is full and the mover is refused), else into window 2
/// (where (1, 2] would hold 3: refused). Exactly one passes.
#[test]
fn word_late_caller_booked_into_the_newest_window() {
    word_model(
        2,
        &[plain(15, 1)],
        &[plain(25, 1), plain(5, 1)],
        |g, d| {
            assert_eq!(g.count(5), 0, "a late permit counted in window 0");
            assert_eq!(g.count(25), 1 + passed(d[0]) + passed(d[1]));
            assert_eq!(g.count(35), passed(d[0]), "window 2 holds the mover's only");
            assert_eq!(g.peek(25), 2);
        },
        &["Pass Block | w1=1 w2=1", "Block Pass | w1=2"],
    );
}

/// Limit 2, one permit booked at 5: a caller at 15 (window 1, the newest
/// when it starts) races one at 25 that moves the word to window 2 (window
/// 0 slides out). Both pass in every schedule; the caller at 15 books
/// into window 1 if it comes first, else late into window 2.
#[test]
fn word_late_caller_racing_a_move_to_a_new_window() {
    word_model(
        2,
        &[plain(5, 1)],
        &[plain(25, 1), plain(15, 1)],
        |g, _| {
            assert_eq!(g.count(25), 2, "the interval (1, 2] holds both");
            assert_eq!((g.peek(25), g.remaining(25)), (2, 0));
        },
        &["Pass Pass | w1=1 w2=1", "Pass Pass | w2=2"],
    );
}

/// Limit 2, one permit booked at 5 and one at 15: the interval (0, 1] is
/// full. A prioritized request at 15 (which may borrow window 2, 5 ticks
/// ahead) races a plain one at 25 (window 2) for the one permit window 2
/// has. Exactly one gets it: the borrower waits 5 ticks and the plain one
/// is refused, or the plain one passes and the borrower, now late, finds
/// window 2 full and window 3 beyond its timeout.
#[test]
fn word_prioritized_racing_a_plain_acquire() {
    word_model(
        2,
        &[plain(5, 1), plain(15, 1)],
        &[prio(15, 1), plain(25, 1)],
        |g, _| assert_eq!((g.count(25), g.count(35)), (2, 1)),
        &["Wait(5) Block | w0=1 w1=1 w2=1", "Block Pass | w1=1 w2=1"],
    );
}

/// The same with limit 3 and two permits booked at 5: window 2 has room
/// for both. Both are admitted in every schedule: the borrower waits for
/// window 2 if it comes first, else it is a late caller booked into
/// window 2 at once.
#[test]
fn word_prioritized_and_plain_both_fit() {
    word_model(
        3,
        &[plain(5, 2), plain(15, 1)],
        &[prio(15, 1), plain(25, 1)],
        |g, _| assert_eq!((g.count(25), g.count(35)), (3, 2)),
        &["Wait(5) Pass | w1=1 w2=2", "Pass Pass | w1=1 w2=2"],
    );
}

// ---------------------------------------------------------------------------
// `GateSet`: two word gates, admitted in both or in neither.
// ---------------------------------------------------------------------------

/// Gates `a` (limit 1) and `b` (limit 2), both one word.
fn two_gates() -> (Arc<Gate<2>>, Arc<Gate<2>>) {
    let (a, b) = (Gate::<2>::new(W, 1), Gate::<2>::new(W, 2));
    assert!(matches!(a.shape(), Shape::Word64 { .. }));
    assert!(matches!(b.shape(), Shape::Word64 { .. }));
    (Arc::new(a), Arc::new(b))
}

/// The race of the `GateSet` docs. `b` has one permit booked at 5, so each
/// gate has one left. Thread 1 asks the set of `a` then `b` for one;
/// thread 2 asks `a` alone, thread 3 `b` alone. No gate ever counts more
/// than its limit, and each gate's count is exactly the permits of the
/// decisions that passed through it: a set refusal leaves nothing booked.
/// Thread 3 can take `b` between the set's check and its booking there,
/// after the set booked `a`: the set then cancels its booking in `a`, and
/// thread 2, which saw that booking, was refused although `a` ends empty
/// (the false rejection the docs describe). That outcome only arises
/// through the cancellation, so seeing it shows the path ran.
#[test]
fn set_racing_its_members_alone() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let (a, b) = two_gates();
        assert_eq!(b.try_acquire(5, 1), Decision::Pass);
        let (a1, b1, a2, b3) = (a.clone(), b.clone(), a.clone(), b.clone());
        let t1 = spawn(move || GateSet::new([&*a1 as &dyn Member, &*b1]).try_acquire(5, 1));
        let t2 = spawn(move || a2.try_acquire(5, 1));
        let t3 = spawn(move || b3.try_acquire(6, 1));
        let (d1, d2, d3) = (t1.join().unwrap(), t2.join().unwrap(), t3.join().unwrap());
        let (set, alone_a, alone_b) = (passed(d1), passed(d2), passed(d3));
        assert_eq!(a.count(5), set + alone_a, "a: {d1:?} {d2:?} {d3:?}");
        assert_eq!(b.count(5), 1 + set + alone_b, "b: {d1:?} {d2:?} {d3:?}");
        assert!(a.count(5) <= 1 && b.count(5) <= 2, "over a limit");
        assert_eq!((a.peek(5), b.peek(5)), (a.count(5), b.count(5)));
        let outcome = (set, alone_a, alone_b);
        assert!(
            [(1, 0, 0), (0, 1, 1), (0, 0, 1)].contains(&outcome),
            "{d1:?} {d2:?} {d3:?}: a gate refused with room left"
        );
        record(outcome);
    });
    // The set gets both; each member alone gets its own; the set booked
    // `a`, lost `b` to thread 3 and cancelled, refusing thread 2 meanwhile.
    seen.assert_all(&[(1, 0, 0), (0, 1, 1), (0, 0, 1)]);
}

/// Two sets over the same gates in opposite orders and with different
/// sizes: thread 1 asks `[a, b]` for `[1, 1]`, thread 2 asks `[b, a]` for
/// `[2, 1]` (both gates empty; they conflict in both). At most one passes,
/// and the counts are exactly its permits. Both can be refused: each books
/// its first gate, finds its second full with the other's booking, and
/// cancels; both gates then end empty, which only the cancellations can
/// give.
#[test]
fn two_sets_in_opposite_orders() {
    let seen = Seen::new();
    let record = seen.recorder();
    loom::model(move || {
        let (a, b) = two_gates();
        let (a1, b1, a2, b2) = (a.clone(), b.clone(), a.clone(), b.clone());
        let t1 =
            spawn(move || GateSet::new([&*a1 as &dyn Member, &*b1]).try_acquire_each(5, [1, 1]));
        let t2 =
            spawn(move || GateSet::new([&*b2 as &dyn Member, &*a2]).try_acquire_each(5, [2, 1]));
        let (d1, d2) = (t1.join().unwrap(), t2.join().unwrap());
        let (p1, p2) = (passed(d1), passed(d2));
        assert!(p1 + p2 <= 1, "both passed: a would count 2");
        assert_eq!(a.count(5), p1 + p2, "a: {d1:?} {d2:?}");
        assert_eq!(b.count(5), p1 + 2 * p2, "b: {d1:?} {d2:?}");
        record((p1, p2));
    });
    seen.assert_all(&[(1, 0), (0, 1), (0, 0)]);
}

/// Limit 2, one permit booked at 5. A prioritized request at 15 for 2
/// (which does not fit in (0, 1], so it borrows window 2 if that has room)
/// races a plain request at 15 for 1. Exactly one is admitted: if the
/// borrower comes first, the plain request must also check the interval
/// (1, 2], which the 2 borrowed permits fill; if the plain one comes
/// first, (1, 2] has no room for 2 more.
#[test]
fn word_borrowed_permits_racing_a_plain_acquire() {
    word_model(
        2,
        &[plain(5, 1)],
        &[prio(15, 2), plain(15, 1)],
        |g, d| {
            let borrowed = if d[0] == PriorityDecision::Wait(5) {
                2
            } else {
                0
            };
            assert_eq!(g.count(15), 1 + passed(d[1]), "(0, 1]");
            assert_eq!(g.count(25), passed(d[1]) + borrowed, "(1, 2]");
        },
        &["Wait(5) Block | w0=1 w2=2", "Block Pass | w0=1 w1=1"],
    );
}

/// Found in review (regression): a set's first booking slides gate `a`'s
/// word on (window 0, holding `a`'s 2 permits, slides out) and its
/// second member refuses, so the booking is taken back: `a` is a used
/// word with no counts. A late caller (window 1) must still be booked into
/// the newest window (2), so that a caller at window 3 then finds (2, 3]
/// full: whichever window the late permits count in, no interval of 2
/// windows may hold 4. Before the fix, an emptied word took the late
/// caller's own window as its newest.
#[test]
fn set_cancel_then_late_caller() {
    loom::model(|| {
        let w = W.get();
        let a = Arc::new(Gate::<2>::new(W, 2));
        let b = Arc::new(Gate::<2>::new(W, 1));
        assert_eq!(a.try_acquire(0, 2), Decision::Pass);
        let (a1, b1) = (a.clone(), b.clone());
        let t1 = spawn(move || GateSet::new([&*a1 as &dyn Member, &*b1]).try_acquire(2 * w, 1));
        let b2 = b.clone();
        let t2 = spawn(move || b2.try_acquire(2 * w, 1));
        let a3 = a.clone();
        let t3 = spawn(move || a3.try_acquire(w, 2));
        let (d1, _d2, d3) = (t1.join().unwrap(), t2.join().unwrap(), t3.join().unwrap());
        let follow = a.try_acquire(3 * w, 2);
        assert!(
            !(d3 == Decision::Pass && (follow == Decision::Pass || d1 == Decision::Pass)),
            "gate a over its limit: set {d1:?}, late {d3:?}, window 3 {follow:?}"
        );
    });
}
