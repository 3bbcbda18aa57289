//! The model of one `LeapArray<N, C, W>`, and the check of every query
//! against it. Shared by `tests/model.rs` (proptest) and `fuzz/` (the
//! `array` target, and under the metric and shard models).

use leaparray::array::{SpanError, Width, Window};
use leaparray::{AddError, LeapArray};

/// What an update does to a count.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// `add`: `+ n`, clamped at the width's `MAX_COUNT` (then `Saturated`).
    Add(u64),
    /// `sub`: `- n`, clamped at 0 (then `Saturated`).
    Sub(u64),
    /// `update_max`: `max(count, v)`; `v > MAX_COUNT` stores `MAX_COUNT`
    /// and says `Saturated`.
    Max(u64),
}

/// Each bucket holds at most one window: its full id and its counts.
#[derive(Debug, Clone)]
pub struct ArrayModel<const N: usize, const C: usize> {
    /// Window length in ticks.
    pub window: u64,
    max: u64,
    bits: u32,
    slots: [Option<(u64, [u64; C])>; N],
}

impl<const N: usize, const C: usize> ArrayModel<N, C> {
    /// An empty model of an array of width `W`.
    pub fn new<W: Width>(window: u64) -> Self {
        ArrayModel {
            window,
            max: W::MAX_COUNT,
            // Ids are kept modulo twice the range two times may span.
            bits: W::WINDOW_RANGE.trailing_zeros() + 1,
            slots: [None; N],
        }
    }

    /// `id - held` as the documented signed difference modulo `2^bits`:
    /// 0 when the bucket holds `id`, negative when it holds a newer window.
    fn diff(&self, id: u64, held: u64) -> i64 {
        let unused = 64 - self.bits;
        ((id.wrapping_sub(held) << unused) as i64) >> unused
    }

    fn slot(id: u64) -> usize {
        (id % N as u64) as usize
    }

    /// Applies `op` to `counter` of the window of `now`.
    pub fn update(&mut self, now: u64, counter: usize, op: Op) -> Result<(), AddError> {
        if counter >= C {
            return Err(AddError::NoSuchCounter);
        }
        let id = now / self.window;
        let max = self.max;
        let held = self.slots[Self::slot(id)].map(|(h, _)| self.diff(id, h));
        match held {
            Some(d) if d < 0 => return Err(AddError::Stale),
            Some(0) => {}
            _ => self.slots[Self::slot(id)] = Some((id, [0; C])),
        }
        let count = &mut self.slots[Self::slot(id)].as_mut().expect("just set").1[counter];
        let (v, clamped) = match op {
            Op::Add(n) => {
                let s = u128::from(*count) + u128::from(n);
                if s > u128::from(max) {
                    (max, true)
                } else {
                    (s as u64, false)
                }
            }
            Op::Sub(n) => match count.checked_sub(n) {
                Some(v) => (v, false),
                None => (0, true),
            },
            Op::Max(v) if v > max => (max, true),
            Op::Max(v) => ((*count).max(v), false),
        };
        *count = v;
        if clamped {
            Err(AddError::Saturated)
        } else {
            Ok(())
        }
    }

    /// Window `id`, if its bucket holds it.
    pub fn get(&self, id: u64) -> Option<Window<C>> {
        match self.slots[Self::slot(id)] {
            Some((held, counts)) if self.diff(id, held) == 0 => Some(Window {
                start: id.saturating_mul(self.window),
                counts,
            }),
            _ => None,
        }
    }

    /// Whether window `id` has been retired: its bucket holds a newer one.
    pub fn retired(&self, id: u64) -> bool {
        self.slots[Self::slot(id)].is_some_and(|(held, _)| self.diff(id, held) < 0)
    }

    /// The count of `counter` in window `id` (0 if not held).
    pub fn count(&self, id: u64, counter: usize) -> u64 {
        self.get(id).map_or(0, |w| w.counts[counter])
    }

    /// The ids of the last `k` windows up to `now`'s, oldest first, none
    /// below 0.
    pub fn last(&self, now: u64, k: u64) -> Vec<u64> {
        let cur = now / self.window;
        (0..k)
            .rev()
            .filter_map(|back| cur.checked_sub(back))
            .collect()
    }

    /// Held live windows, oldest first.
    pub fn windows(&self, now: u64) -> Vec<Window<C>> {
        self.last(now, N as u64)
            .into_iter()
            .filter_map(|id| self.get(id))
            .collect()
    }

    /// `counter` summed over the last `k` windows.
    pub fn sum_last(&self, now: u64, k: u64, counter: usize) -> u64 {
        self.last(now, k)
            .into_iter()
            .map(|id| self.count(id, counter))
            .sum()
    }

    /// `sum_span` as documented: errors checked in the documented order.
    pub fn sum_span(&self, now: u64, span: u64, counter: usize) -> Result<u64, SpanError> {
        if span == 0 {
            Err(SpanError::Zero)
        } else if !span.is_multiple_of(self.window) {
            Err(SpanError::NotMultiple)
        } else if span / self.window > N as u64 {
            Err(SpanError::TooLong)
        } else if counter >= C {
            Err(SpanError::NoSuchCounter)
        } else {
            Ok(self.sum_last(now, span / self.window, counter))
        }
    }
}

/// Checks every query of `a` at `now` (and at `probe`, any other time)
/// against the model. Panics on the first difference.
pub fn check<const N: usize, const C: usize, W: Width>(
    a: &LeapArray<N, C, W>,
    m: &ArrayModel<N, C>,
    now: u64,
    probe: u64,
) {
    let w = m.window;
    assert_eq!(a.window(), w);
    assert_eq!(a.interval(), (N as u64).saturating_mul(w));
    for t in [now, probe] {
        assert_eq!(a.window_start(t), t / w * w, "window_start({t})");
        assert_eq!(a.window_index(t), (t / w % N as u64) as usize);
        assert_eq!(a.window_at(t), m.get(t / w), "window_at({t})");
    }
    let expected = m.windows(now);
    assert_eq!(
        a.windows(now).as_slice(),
        expected.as_slice(),
        "windows({now})"
    );
    for c in 0..C {
        assert_eq!(
            a.sum(now, c),
            m.sum_last(now, N as u64, c),
            "sum({now}, {c})"
        );
    }
    assert_eq!(a.sum(now, C), 0);
    assert_eq!(a.sum(now, usize::MAX), 0);
    let sums: [u64; C] = core::array::from_fn(|c| m.sum_last(now, N as u64, c));
    assert_eq!(a.sums(now), sums);
    let cur = now / w;
    assert_eq!(a.previous(now), cur.checked_sub(1).and_then(|id| m.get(id)));
    assert_eq!(
        a.head(now),
        cur.checked_sub(N as u64 - 1).and_then(|id| m.get(id))
    );
    // A predicate on the start: only windows starting at or after `probe`.
    let after: Vec<_> = expected
        .iter()
        .copied()
        .filter(|x| x.start >= probe)
        .collect();
    assert_eq!(
        a.windows_where(now, |s| s >= probe).as_slice(),
        after.as_slice()
    );
    let spans = (1..=N as u64 + 1).filter_map(|k| w.checked_mul(k)).chain([
        0,
        1,
        w.saturating_add(1),
        probe,
        u64::MAX,
    ]);
    for span in spans {
        for c in [0, C - 1, C] {
            assert_eq!(
                a.sum_span(now, span, c),
                m.sum_span(now, span, c),
                "sum_span({now}, {span}, {c})"
            );
        }
    }
}
