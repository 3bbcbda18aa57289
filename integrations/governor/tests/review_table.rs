//! Regression tests from a hostile review of `KeyedStore` on leaparray's
//! slot table (`leaparray::keyed::Table`): each red while its defect is
//! there.
//!
//! Run: `cargo test -p leaparray-governor --test review_table`

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use governor::nanos::Nanos;
use governor::state::StateStore;
use leaparray_governor::KeyedStore;

mod common;
use common::Id;

#[derive(Default)]
struct Sched {
    turn: u8,
    runs: [usize; 3],
    stop: bool,
    completed_while_scheduled: bool,
}

/// Two threads pass a baton: each call of a key's closure hands the turn to
/// the other thread and waits for it to come back (a preemption between
/// governor's closure and the store's swap, which an operating system may
/// choose; the decision itself is governor's GCRA, pure).
#[derive(Default)]
struct Baton {
    m: Mutex<Sched>,
    cv: Condvar,
}

impl Baton {
    fn step(&self, me: u8, rounds: usize) {
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
        let (_s, timeout) = self
            .cv
            .wait_timeout_while(s, Duration::from_secs(20), |s| s.turn != me && !s.stop)
            .unwrap();
        assert!(!timeout.timed_out(), "the other thread never came back");
    }
    fn wait_first(&self, me: u8) {
        let s = self.m.lock().unwrap();
        let _s = self
            .cv
            .wait_timeout_while(s, Duration::from_secs(20), |s| s.turn != me && !s.stop)
            .unwrap();
    }
    fn done(&self) {
        let mut s = self.m.lock().unwrap();
        if !s.stop {
            s.completed_while_scheduled = true;
        }
        s.stop = true;
        self.cv.notify_all();
    }
    fn result(&self) -> (usize, usize, bool) {
        let s = self.m.lock().unwrap();
        (s.runs[1], s.runs[2], s.completed_while_scheduled)
    }
}

/// governor's GCRA (cell time 10 ns, tolerance 10 ns) at `now = 100`.
fn gcra(tat: Option<Nanos>) -> Result<((), Nanos), ()> {
    let now = 100;
    let tat = tat.map_or(now, Nanos::as_u64);
    if now < tat.saturating_sub(10) {
        Err(())
    } else {
        Ok(((), Nanos::from(tat.max(now) + 10)))
    }
}

/// Keys A and B, new, race in `store` after `residents` (each at TAT
/// `resident_tat`) filled all but one slot of their probe. Returns what the
/// baton saw: (A's closure runs, B's, whether a call completed while
/// scheduled).
fn two_new_keys(cap: usize, residents: &[u64], resident_tat: u64) -> (usize, usize, bool) {
    let rounds = 1000;
    let store = Arc::new(KeyedStore::<u64, Id>::with_capacity_and_hasher(cap, Id));
    let (a, b) = (2u64, 3u64);
    for x in residents {
        store
            .measure_and_replace(x, |_| Ok::<_, ()>(((), Nanos::from(resident_tat))))
            .unwrap();
    }
    let baton = Arc::new(Baton::default());
    let t1 = {
        let (store, baton) = (store.clone(), baton.clone());
        thread::spawn(move || {
            let r = store.measure_and_replace(&a, |tat| {
                baton.step(1, rounds);
                gcra(tat)
            });
            baton.done();
            r
        })
    };
    let t2 = {
        let (store, baton) = (store.clone(), baton.clone());
        thread::spawn(move || {
            baton.wait_first(2);
            let r = store.measure_and_replace(&b, |tat| {
                baton.step(2, rounds);
                gcra(tat)
            });
            baton.done();
            r
        })
    };
    assert!(t1.join().unwrap().is_ok());
    assert!(t2.join().unwrap().is_ok());
    baton.result()
}

/// Two new keys A and B in a store of 2 slots whose other slot holds key X
/// (TAT far ahead): the probe is full once A is in. Each closure is
/// governor's GCRA decision, and hands the turn to the other thread before
/// it returns (a preemption between decision and swap). A table whose
/// claimer settled into the start (TAT 0) and decided after let B evict A
/// (the earliest TAT: 0) before A's swap, A then B, and so on: no
/// `measure_and_replace` returned within 1,000 rounds (leaparray's
/// table.rs, "Progress"). The claimer settles its claim straight into its
/// decision, so a call completes; red if none does within the rounds.
#[test]
fn keyed_store_two_new_keys_on_a_full_probe_both_complete() {
    let (ra, rb, completed) = two_new_keys(2, &[1], 1_000_000_000);
    assert!(
        completed,
        "livelock: A's closure ran {ra} times and B's {rb} times, each run followed by an eviction \
         of its fresh slot by the other key, and no measure_and_replace completed"
    );
}

/// The same in a store of 64 slots whose probe of 16 (keys 10 to 24, all
/// homed at slot 0 by the identity hash) holds 15 keys with TATs ahead: a
/// full probe of the real size, not an artefact of a tiny table.
#[test]
fn keyed_store_two_new_keys_on_a_full_probe_of_16_both_complete() {
    let residents: Vec<u64> = (10..25).collect();
    let (ra, rb, completed) = two_new_keys(64, &residents, 1_000_000_000);
    assert!(
        completed,
        "livelock: A's closure ran {ra} times and B's {rb} times, and no measure_and_replace completed"
    );
}

/// Control: the resident X ranks with the fresh keys (TAT 0, first in the
/// probe): B evicts X instead of A, A's swap succeeds and A completes in
/// round 1. Green: the harness sees a completion when there is one.
#[test]
fn review_control_keyed_store_completes_when_a_resident_ranks_least() {
    let (ra, rb, completed) = two_new_keys(2, &[1], 0);
    assert!(completed, "A ran {ra}, B ran {rb}");
    assert!(ra <= 2 && rb <= 2, "A ran {ra}, B ran {rb}");
}
