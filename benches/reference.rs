//! A one-word sliding-window gate written for the comparison in
//! `bin/gate_vs.rs` (not the crate's): a window id and two 24-bit counts in
//! one `AtomicU64`, one compare-and-swap, exact over two windows, `n`
//! permits, late callers booked into the newest window. What it leaves out
//! against `Gate<2>`: prioritized requests (no future window), limits above
//! 2^24 - 1, and a window id of 16 bits (the gate keeps at least 32), so a
//! caller whose clock lags the newest window by 2^15 windows or more is
//! read as ahead.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};

const COUNT: u64 = (1 << 24) - 1;
const ID: u64 = (1 << 16) - 1;

/// `id (16) | previous window's count (24) | newest window's count (24)`;
/// 0 only when never used (every write books at least one permit).
#[derive(Debug)]
pub struct RefGate {
    word: AtomicU64,
    window: u64,
    limit: u64,
}

impl RefGate {
    /// At most `limit` (below 2^24) permits per two windows of `window`.
    pub const fn new(window: NonZeroU64, limit: u64) -> Self {
        assert!(limit <= COUNT, "limit above 2^24 - 1");
        RefGate {
            word: AtomicU64::new(0),
            window: window.get(),
            limit,
        }
    }

    /// Admits `n` at `now` if the two windows ending at the booking window
    /// then hold at most `limit`.
    #[inline]
    pub fn try_acquire(&self, now: u64, n: u64) -> bool {
        if n > self.limit {
            return false;
        }
        let c = (now / self.window) & ID;
        let mut w = self.word.load(Acquire);
        loop {
            let (id, prev, cur) = (w >> 48, (w >> 24) & COUNT, w & COUNT);
            let d = c.wrapping_sub(id) & ID;
            // Same window, or late (read as 2^15 or more behind): the
            // newest window as it is; one on: the newest becomes the
            // previous; further on, or never used: empty.
            let (id, prev, cur) = if d == 0 || (d > ID >> 1 && w != 0) {
                (id, prev, cur)
            } else if d == 1 {
                (c, cur, 0)
            } else {
                (c, 0, 0)
            };
            if prev + cur + n > self.limit {
                return false;
            }
            let new = id << 48 | prev << 24 | (cur + n);
            match self.word.compare_exchange_weak(w, new, Release, Acquire) {
                Ok(_) => return true,
                Err(actual) => w = actual,
            }
        }
    }
}
