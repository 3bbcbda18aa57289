//! Regression tests from a hostile review of the public slot table,
//! `leaparray::keyed::Table` (`src/keyed/table/mod.rs`): one per defect, each
//! red while its defect is there (`review_defect_*` while not fixed). The
//! `review_control_*` tests run the same harness where the defect cannot
//! happen and are green: they show the harness detects a completion.
//!
//! Run: `cargo test --test review_table`

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use leaparray::keyed::{Policy, Slot, Start, Step, Table, Value};

// ---------------------------------------------------------------------------
// (c) Progress: two new keys on a full probe evict each other forever.
// ---------------------------------------------------------------------------

/// A count per key; a new key starts at 0. `fresh_least`: the rank is the
/// count, so a key just settled (count 0, not decided yet) ranks least, as
/// a fresh gate word does in `KeyedGate`'s policy (demand 0) and a TAT
/// from an empty memory does in `leaparray-governor`'s GCRA policy (TAT
/// 0). Otherwise a fresh key ranks most (the control).
#[derive(Debug)]
struct Counts {
    fresh_least: bool,
}

impl Policy for Counts {
    type Context = ();
    type Rank = u64;
    fn evicts(&self) -> bool {
        true
    }
    fn rank(&self, _: u8, w: u64, _: ()) -> u64 {
        match w {
            0 if !self.fresh_least => u64::MAX,
            c => c,
        }
    }
    fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    fn start(&self, _: u64, _: ()) -> Start {
        Start {
            word: Value::ZERO,
            remembered: false,
        }
    }
}

/// The schedule: whose turn it is to run (1: the thread of key A, 2: the
/// thread of key B), how many times each closure ran, and whether the
/// schedule stopped (a call completed, or the rounds ran out).
#[derive(Default)]
struct Sched {
    turn: u8,
    runs: [usize; 3],
    stop: bool,
    completed_while_scheduled: bool,
}

/// A baton two threads pass: each call of a key's closure hands the turn
/// to the other thread and waits for it to come back. This is a schedule an
/// operating system may choose (preempt a thread between its closure and
/// its swap); the closures themselves are pure.
#[derive(Default)]
pub struct Baton {
    m: Mutex<Sched>,
    cv: Condvar,
}

impl Baton {
    /// One call of `me`'s closure: hands the turn over and waits for it
    /// (until the schedule stops). After `rounds` calls the schedule stops.
    pub fn step(&self, me: u8, rounds: usize) {
        let mut s = self.m.lock().unwrap();
        if s.stop {
            return;
        }
        s.runs[me as usize] += 1;
        if s.runs[me as usize] > rounds {
            s.stop = true;
            self.cv.notify_all();
            return;
        }
        s.turn = 3 - me;
        self.cv.notify_all();
        let (s, timeout) = self
            .cv
            .wait_timeout_while(s, Duration::from_secs(20), |s| s.turn != me && !s.stop)
            .unwrap();
        assert!(!timeout.timed_out(), "the other thread never came back");
        drop(s);
    }

    /// Waits for `me`'s first turn.
    pub fn wait_first(&self, me: u8) {
        let s = self.m.lock().unwrap();
        let _s = self
            .cv
            .wait_timeout_while(s, Duration::from_secs(20), |s| s.turn != me && !s.stop)
            .unwrap();
    }

    /// A call returned: the schedule stops.
    pub fn done(&self) {
        let mut s = self.m.lock().unwrap();
        if !s.stop {
            s.completed_while_scheduled = true;
        }
        s.stop = true;
        self.cv.notify_all();
    }

    /// (closure runs of A, of B, whether a call completed before the rounds
    /// ran out).
    pub fn result(&self) -> (usize, usize, bool) {
        let s = self.m.lock().unwrap();
        (s.runs[1], s.runs[2], s.completed_while_scheduled)
    }
}

/// Keys X (resident, count 100), then A and B, new, race in a table of 2
/// slots (every probe is both slots: the probe is full once A is in).
/// Returns what the baton saw.
fn two_new_keys(fresh_least: bool, rounds: usize) -> (usize, usize, bool) {
    let t = Arc::new(Table::new(
        [const { Slot::new() }; 2],
        Counts { fresh_least },
    ));
    let (x, a, b) = (t.place(1), t.place(2), t.place(3));
    assert_ne!(a.fingerprint(), b.fingerprint());
    let set = |v: u64| {
        move |_: u8, _: u64| Step::Write {
            tag: 0,
            word: Value::new(v).unwrap(),
            out: (),
        }
    };
    assert_eq!(t.update(x, None, (), set(100)), Some(()));
    let baton = Arc::new(Baton::default());
    let bump = |w: u64| Step::Write {
        tag: 0,
        word: Value::new(w + 1).unwrap(),
        out: w,
    };
    let t1 = {
        let (t, baton) = (t.clone(), baton.clone());
        thread::spawn(move || {
            let r = t.update(a, None, (), |_, w| {
                baton.step(1, rounds);
                bump(w)
            });
            baton.done();
            r
        })
    };
    let t2 = {
        let (t, baton) = (t.clone(), baton.clone());
        thread::spawn(move || {
            baton.wait_first(2);
            let r = t.update(b, None, (), |_, w| {
                baton.step(2, rounds);
                bump(w)
            });
            baton.done();
            r
        })
    };
    assert!(t1.join().unwrap().is_some());
    assert!(t2.join().unwrap().is_some());
    baton.result()
}

/// Two new keys A and B on a full probe, on real threads, in the schedule
/// of table.rs's "Progress": each closure hands the turn to the other
/// thread before it returns (a preemption between decision and swap). With
/// a claimer that settled into its start and decided after, B evicted A's
/// fresh slot (it ranks least) before A's swap, A then B's, and so on:
/// after 1,000 rounds no `update` had returned. The claimer settles its
/// claim straight into its decision, so a call completes: red if it did
/// not (a livelock, no call completes within the rounds).
#[test]
fn two_new_keys_on_a_full_probe_both_complete() {
    let (ra, rb, completed) = two_new_keys(true, 1000);
    assert!(
        completed,
        "livelock: A's closure ran {ra} times and B's {rb} times, each run followed by an eviction \
         of its fresh slot by the other key, and no update completed"
    );
}

/// The same harness with a fresh key ranked most: B evicts X, A's swap
/// succeeds, A completes in round 1. Green: the harness detects completion.
#[test]
fn review_control_two_new_keys_complete_when_fresh_is_not_least() {
    let (ra, rb, completed) = two_new_keys(false, 1000);
    assert!(completed, "A ran {ra}, B ran {rb}");
    assert!(ra <= 2 && rb <= 2, "A ran {ra}, B ran {rb}");
}

// ---------------------------------------------------------------------------
// (e) `first` (a `peek` made earlier): "a stale one costs a failed swap".
// ---------------------------------------------------------------------------

/// A count per key, never evicted, never recycled.
#[derive(Debug)]
struct Keep;

impl Policy for Keep {
    type Context = ();
    type Rank = u64;
    fn evicts(&self) -> bool {
        false
    }
    fn rank(&self, _: u8, w: u64, _: ()) -> u64 {
        w
    }
    fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    fn start(&self, _: u64, _: ()) -> Start {
        Start {
            word: Value::ZERO,
            remembered: false,
        }
    }
}

/// `update`'s docs: `first` is "the key's home slot as peek read it
/// earlier, taken as the first read of the probe (a stale one costs a
/// failed swap; an insertion it would lead to rereads it first)". A stale
/// `first` that shows another key makes `update` answer `None` ("no room
/// for the key; nothing was written") for a key that holds a slot: nothing
/// rereads the home slot on the way to `None`. `update` rereads it before
/// it answers `None`: red if it does not.
#[test]
fn a_stale_first_never_says_no_room_for_a_resident_key() {
    let t = Table::new([const { Slot::new() }; 1], Keep);
    let (x, k) = (t.place(1), t.place(2));
    let set = |v: u64| {
        move |_: u8, _: u64| Step::Write {
            tag: 0,
            word: Value::new(v).unwrap(),
            out: v,
        }
    };
    assert_eq!(t.update(x, None, (), set(7)), Some(7));
    let stale = t.peek(k); // X's slot
    t.retain((), |_, _| false); // X goes
    assert_eq!(t.update(k, None, (), set(1)), Some(1)); // K takes the slot
    let r = t.update(k, Some(stale), (), |_, w| Step::Write {
        tag: 0,
        word: Value::new(w + 1).unwrap(),
        out: w,
    });
    assert_eq!(
        r,
        Some(1),
        "K holds the only slot ({:?}) but a stale first made update answer None",
        t.peek(k)
    );
}

/// A closure that answers `Step::Keep` on a stale `first` returns its
/// answer from a value the slot no longer holds: no swap fails, nothing
/// rereads. The returned value is not the slot's at any time during the
/// call. `update` rereads the home slot before it answers a `Keep` made
/// on `first`, and decides again if it changed: red if it does not.
#[test]
fn a_stale_first_keep_answers_from_the_slot_as_it_is() {
    let t = Table::new([const { Slot::new() }; 1], Keep);
    let k = t.place(2);
    let set = |v: u64| {
        move |_: u8, _: u64| Step::Write {
            tag: 0,
            word: Value::new(v).unwrap(),
            out: (),
        }
    };
    assert_eq!(t.update(k, None, (), set(1)), Some(()));
    let stale = t.peek(k);
    assert_eq!(t.update(k, None, (), set(2)), Some(()));
    let read = t.update(k, Some(stale), (), |_, w| Step::<u64>::Keep(w));
    assert_eq!(
        read,
        Some(2),
        "update read the slot as it was before the call"
    );
}

// ---------------------------------------------------------------------------
// (d) Panics reachable from public inputs.
// ---------------------------------------------------------------------------

/// `Place` is public and `Copy`, and not tied to the table that made it. A
/// place from a larger table (home 63 in a table of 4) is reduced to the
/// table's slots: `peek`, `update`, `find` and `probe` answer, none
/// panics ("Bad input gets a clear error, never a panic"). Red if any
/// indexes out of bounds.
#[test]
fn a_place_of_another_table_does_not_panic() {
    let big = Table::new([const { Slot::new() }; 64], Keep);
    let small = Table::new([const { Slot::new() }; 4], Keep);
    let p = big.place(u64::MAX);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _ = small.find(p, ());
        let _ = small.update(p, None, (), |_, w| Step::Write {
            tag: 0,
            word: Value::new(w).unwrap(),
            out: (),
        });
        let _ = small.probe(p).count();
        small.peek(p)
    }));
    assert!(r.is_ok(), "a place from another table panics the table");
}

/// A table of 0 slots on the heap (`[Slot; 0]` does not compile: the
/// `compile_fail` example of `Table::new`) answers as a full one: `peek`
/// a free slot, `update` no room, `find` absent without room. Red if
/// `peek` indexes the empty slice.
#[test]
fn an_empty_table_answers_without_panicking() {
    let t: Table<Keep, Box<[Slot]>> = Table::new(Vec::new().into_boxed_slice(), Keep);
    let r = catch_unwind(AssertUnwindSafe(|| t.peek(t.place(1))));
    assert!(r.is_ok(), "an empty table builds, and peek panics");
    assert!(r.unwrap().is_free());
    let set = |_: u8, _: u64| Step::Write {
        tag: 0,
        word: Value::new(1).unwrap(),
        out: (),
    };
    assert_eq!(t.update(t.place(1), None, (), set), None);
    assert_eq!(
        t.find(t.place(1), ()),
        leaparray::keyed::Found::Absent { room: false }
    );
}

/// The same table, updated with an earlier read of its home slot (what a
/// burst passes, from `peek`): no room, no panic. Red if the check that
/// the earlier read is still current indexes the empty slice (found by a
/// hostile review).
#[test]
fn an_empty_table_answers_an_update_with_an_earlier_read_without_panicking() {
    let t: Table<Keep, Box<[Slot]>> = Table::new(Vec::new().into_boxed_slice(), Keep);
    for h in [0u64, 1, u64::MAX, 1 << 63] {
        let place = t.place(h);
        let r = catch_unwind(AssertUnwindSafe(|| {
            t.update(place, Some(t.peek(place)), (), |_, _| Step::Keep(()))
        }));
        assert_eq!(r.ok(), Some(None), "hash {h}: no room, without a panic");
    }
}

// ---------------------------------------------------------------------------
// (d) The word's top bit.
// ---------------------------------------------------------------------------

/// A slot's value is a [`Value`], a number below `2^63` (the slot word's
/// top bit marks a value). Two different values written stay two values;
/// a number that does not fit (`2^63 + 5`, `Value::MAX + 1`) is no
/// `Value`, so it cannot be written as another number; and a count at
/// `Value::MAX` bumped the documented way (`checked_add`, then
/// `Value::new`) is refused, not stored as 0. The closure and `peek` see
/// the number written, not the slot word. Red if the table or `Value`
/// let a number of `2^63` or more through as another (as a `Step::Write`
/// of a `u64` did: the table set the top bit over it).
#[test]
fn a_value_of_2_to_the_63_or_more_is_refused_not_aliased() {
    let t = Table::new([const { Slot::new() }; 2], Keep);
    let (a, b) = (t.place(1), t.place(1 << 63));
    assert_ne!(a.home(), b.home());
    let top = 1u64 << 63;
    assert_eq!(Value::new(top + 5), None, "2^63 + 5 is a value");
    assert_eq!(Value::new(Value::MAX.get() + 1), None, "MAX + 1 is a value");
    assert_eq!(
        Value::try_from(top + 5).map(Value::get),
        Err(leaparray::keyed::ValueTooLarge { value: top + 5 })
    );
    let set = |v: Value| {
        move |_: u8, _: u64| Step::Write {
            tag: 0,
            word: v,
            out: (),
        }
    };
    // The largest value and 5 are two values, each read back as written.
    let (five, max) = (Value::new(5).unwrap(), Value::MAX);
    assert_eq!(t.update(a, None, (), set(five)), Some(()));
    assert_eq!(t.update(b, None, (), set(max)), Some(()));
    assert_eq!(t.peek(a).value(), Some(5));
    assert_eq!(t.peek(b).value(), Some(Value::MAX.get()));
    assert_eq!(t.update(a, None, (), |_, w| Step::<u64>::Keep(w)), Some(5));
    assert_eq!(
        t.update(b, None, (), |_, w| Step::<u64>::Keep(w)),
        Some(Value::MAX.get())
    );
    // The count at `Value::MAX`, bumped as the docs bump: refused, and it
    // stays at its largest.
    let bump = |_: u8, w: u64| match w.checked_add(1).and_then(Value::new) {
        Some(v) => Step::Write {
            tag: 0,
            word: v,
            out: Some(v.get()),
        },
        None => Step::Keep(None),
    };
    assert_eq!(t.update(a, None, (), bump), Some(Some(6)));
    assert_eq!(
        t.update(b, None, (), bump),
        Some(None),
        "a count of 2^63 - 1 plus 1 was written"
    );
    assert_eq!(
        t.peek(b).value(),
        Some(Value::MAX.get()),
        "a count of 2^63 - 1 plus 1 is stored as {:?}",
        t.peek(b)
    );
}

// ---------------------------------------------------------------------------
// (e) `Found::Absent { room }`: "whether an insertion would find room
// without evicting".
// ---------------------------------------------------------------------------

/// Never evicts; `start` blocks the first time it is called (on the
/// inserting thread) until told to go on, so a claim stays in flight.
#[derive(Debug)]
struct Slow {
    entered: std::sync::mpsc::SyncSender<()>,
    go: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Policy for Slow {
    type Context = ();
    type Rank = u64;
    fn evicts(&self) -> bool {
        false
    }
    fn rank(&self, _: u8, w: u64, _: ()) -> u64 {
        w
    }
    fn fold(&self, _: u64, _: u8, _: u64, _: ()) {}
    fn start(&self, _: u64, _: ()) -> Start {
        let go = self.go.lock().unwrap().take();
        if let Some(go) = go {
            self.entered.send(()).unwrap();
            go.recv().unwrap();
        }
        Start {
            word: Value::ZERO,
            remembered: false,
        }
    }
}

/// Key X's claim is in flight in the only slot (its settler preempted in
/// `start`). `find` of another key K answers whether a slot of K's probe
/// is free or recyclable; the insertion right after (nothing else in
/// between) settles X's claim and finds no room: `None`. A claim of
/// another key is not room, so `find` says `room: false`: red if it counts
/// the claim as room.
#[test]
fn find_does_not_count_another_keys_claim_as_room() {
    let (entered_tx, entered) = std::sync::mpsc::sync_channel(1);
    let (go, go_rx) = std::sync::mpsc::channel();
    let t = Arc::new(Table::new(
        [const { Slot::new() }; 1],
        Slow {
            entered: entered_tx,
            go: Mutex::new(Some(go_rx)),
        },
    ));
    let (x, k) = (t.place(1), t.place(2));
    let tx = {
        let t = t.clone();
        thread::spawn(move || {
            t.update(x, None, (), |_, w| Step::Write {
                tag: 0,
                word: Value::new(w + 1).unwrap(),
                out: (),
            })
        })
    };
    entered.recv().unwrap(); // X's claim is in the slot
    let found = t.find(k, ());
    let inserted = t.update(k, None, (), |_, w| Step::Write {
        tag: 0,
        word: Value::new(w + 1).unwrap(),
        out: (),
    });
    go.send(()).unwrap();
    let _ = tx.join().unwrap();
    assert_eq!(
        (found, inserted.is_some()),
        (leaparray::keyed::Found::Absent { room: false }, false),
        "find and the insertion right after disagree on room"
    );
}
