//! The model of a word-shaped `Gate<N>` (`Shape::Word64` / `Word128`), the
//! slow way: a map from window id to the permits counted there, the
//! newest window, and the rules of the gate's documentation. Shared by
//! `tests/gate.rs` and `fuzz/` (the `gate` target). Window ids are exact
//! here: it models the gate while no two ids in use are `2^(T-1)` windows
//! apart or more (the documented limit of ids kept modulo `2^T`).
//!
//! Any time works, `u64::MAX` included: the last window of time
//! (`u64::MAX / window`) has no window after it to borrow, and a window
//! id past it (an interval reaching beyond the end of time) holds nothing;
//! a wait or a retry for a window that would start after `u64::MAX` is
//! never promised (no borrow; `retry_after` is `None`).

use std::collections::{BTreeMap, BTreeSet};

use leaparray::gate::PriorityDecision;
use leaparray::Decision;

/// A word-shaped gate of `N` windows.
#[derive(Debug, Clone)]
pub struct GateModel<const N: usize> {
    /// Window length.
    pub window: u64,
    /// Permits per interval of `N` windows.
    pub limit: u64,
    /// Longest wait a prioritized request may be given, exclusive.
    pub timeout: u64,
    /// Windows after the newest that borrowed permits may go to:
    /// `ceil(timeout / window)`, at most `N`.
    pub future: u64,
    /// Permits counted per window (passes and borrowed ones).
    pub counts: BTreeMap<u64, u64>,
    /// The newest window, once there is one.
    pub newest: Option<u64>,
    /// The bucket shape's rules instead (`Shape::Buckets`, plain requests
    /// only): a refusal records a block in the window of `now`, which
    /// moves the newest window too, and a late caller books into the
    /// newest window even when nothing is counted there.
    pub buckets: bool,
    /// The bucket shape: windows whose bucket was moved to them (a window
    /// is retired, its count gone, once a later window of its bucket is).
    pub touched: BTreeSet<u64>,
}

impl<const N: usize> GateModel<N> {
    /// An empty gate.
    pub fn new(window: u64, limit: u64, timeout: u64) -> Self {
        GateModel {
            window,
            limit,
            timeout,
            future: timeout.div_ceil(window).min(N as u64),
            counts: BTreeMap::new(),
            newest: None,
            buckets: false,
            touched: BTreeSet::new(),
        }
    }

    fn count_in(&self, id: u64) -> u64 {
        self.counts.get(&id).copied().unwrap_or(0)
    }

    /// Permits in the interval of `N` windows ending at window `end`.
    pub fn interval(&self, end: u64) -> u64 {
        self.interval_wide(end.into())
    }

    /// `interval` for an end that may lie past the last window of time
    /// (whose windows hold nothing).
    fn interval_wide(&self, end: u128) -> u64 {
        (end.saturating_sub(N as u128 - 1)..=end)
            .filter_map(|k| u64::try_from(k).ok())
            .map(|k| self.count_in(k))
            .sum()
    }

    /// The window a caller at window `c` books into: `c`, or the newest
    /// window if that is later. (A gate that was never used takes any
    /// window as its newest.)
    pub fn booking_window(&self, c: u64) -> u64 {
        match self.newest {
            Some(w) if w > c => w,
            _ => c,
        }
    }

    /// The fullest interval containing window `id` (those ending at
    /// `id ..= id + N - 1`).
    pub fn peak(&self, id: u64) -> u64 {
        self.peak_wide(id.into())
    }

    fn peak_wide(&self, id: u128) -> u64 {
        (id..=id + (N as u128 - 1))
            .map(|e| self.interval_wide(e))
            .max()
            .unwrap_or(0)
    }

    fn fits(&self, id: u128, n: u64) -> bool {
        u128::from(self.peak_wide(id)) + u128::from(n) <= u128::from(self.limit)
    }

    /// The bucket shape: whether window `id`'s bucket has moved past it.
    pub fn retired(&self, id: u64) -> bool {
        id.checked_add(1).is_some_and(|next| {
            self.touched
                .range(next..)
                .any(|t| t % N as u64 == id % N as u64)
        })
    }

    fn book(&mut self, newest: u64, id: u64, n: u64) {
        if self.buckets {
            self.touched.insert(id);
        }
        *self.counts.entry(id).or_default() += n;
        self.newest = Some(newest);
    }

    /// `Gate::try_acquire`.
    pub fn try_acquire(&mut self, now: u64, n: u64) -> Decision {
        match self.decide(now, n, false) {
            PriorityDecision::Pass => Decision::Pass,
            PriorityDecision::Block => Decision::Block,
            PriorityDecision::Wait(_) => unreachable!("only a prioritized request borrows"),
        }
    }

    /// `Gate::try_acquire_prioritized`: a pass if it fits now; else a wait
    /// for the first of the `future` windows after the booking window whose
    /// intervals all have room, if it starts less than `timeout` after
    /// `now` (and at all: none starts after the last window of time); else
    /// a block.
    pub fn try_acquire_prioritized(&mut self, now: u64, n: u64) -> PriorityDecision {
        self.decide(now, n, true)
    }

    fn decide(&mut self, now: u64, n: u64, prioritized: bool) -> PriorityDecision {
        if n == 0 {
            return PriorityDecision::Pass;
        }
        let c = now / self.window;
        if n > self.limit {
            return self.block(c);
        }
        let w = self.booking_window(c);
        if self.fits(w.into(), n) {
            self.book(w, w, n);
            return PriorityDecision::Pass;
        }
        if prioritized {
            for ahead in 1..=self.future {
                let id = w.checked_add(ahead);
                // The last window of time has no window after it.
                let Some((id, start)) = id.and_then(|id| Some((id, id.checked_mul(self.window)?)))
                else {
                    break;
                };
                let wait = start.saturating_sub(now);
                if wait >= self.timeout {
                    break;
                }
                if self.fits(id.into(), n) {
                    self.book(w, id, n);
                    return PriorityDecision::Wait(wait);
                }
            }
        }
        self.block(c)
    }

    fn block(&mut self, c: u64) -> PriorityDecision {
        if self.buckets && !self.retired(c) {
            self.touched.insert(c);
            self.newest = Some(self.newest.map_or(c, |w| w.max(c)));
        }
        PriorityDecision::Block
    }

    /// `Gate::peek`.
    pub fn peek(&self, now: u64) -> u64 {
        self.peak(self.booking_window(now / self.window))
    }

    /// `Gate::count`: the interval ending at the window of `now`, of
    /// the windows the gate holds (the word: the `N` up to the newest; the
    /// bucket shape: those not retired).
    pub fn count(&self, now: u64) -> u64 {
        let c = now / self.window;
        if self.buckets {
            return (c.saturating_sub(N as u64 - 1)..=c)
                .filter(|&k| !self.retired(k))
                .map(|k| self.count_in(k))
                .sum();
        }
        let w = self.booking_window(c);
        let oldest = w.saturating_sub(N as u64 - 1);
        (c.saturating_sub(N as u64 - 1).max(oldest)..=c)
            .map(|k| self.count_in(k))
            .sum()
    }

    /// `Gate::retry_after`: until the first window whose intervals have
    /// room starts (`None` if that would be after `u64::MAX`).
    pub fn retry_after(&self, now: u64, n: u64) -> Option<u64> {
        if n > self.limit {
            return None;
        }
        if n == 0 {
            return Some(0);
        }
        let w = u128::from(self.booking_window(now / self.window));
        let j = (0..).find(|&j| self.fits(w + j, n)).unwrap();
        if j == 0 {
            return Some(0);
        }
        let start = u64::try_from((w + j) * u128::from(self.window)).ok()?;
        Some(start - now)
    }
}
