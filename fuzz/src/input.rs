//! Arbitrary times, counts, window lengths, counter indices and gate
//! shapes, weighted towards the edges (`0`, `u64::MAX`, the widths'
//! `MAX_COUNT`).

use std::num::NonZeroU64;

use arbitrary::Arbitrary;
use leaparray::array::{Narrow, Wide, Width};
use leaparray::gate::Shape;
use leaparray::Gate;
use leaparray::MAX_COUNT;

/// A time: an edge or anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Time {
    /// `0`.
    Zero,
    /// `u64::MAX - k`.
    NearMax(u16),
    /// A small time.
    Small(u16),
    /// Any time.
    Any(u64),
}

impl Time {
    /// The time in ticks.
    pub fn ticks(self) -> u64 {
        match self {
            Time::Zero => 0,
            Time::NearMax(k) => u64::MAX - u64::from(k),
            Time::Small(t) => u64::from(t),
            Time::Any(t) => t,
        }
    }
}

/// A count (or RT, limit, concurrency): small ones mostly, and the edges.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Count {
    /// `0..=255`.
    Small(u8),
    /// `MAX_COUNT - k` of the 64-bit width.
    NearMax(u8),
    /// `Narrow::MAX_COUNT - 1 + k`.
    NearNarrowMax(u8),
    /// `u64::MAX`.
    U64Max,
    /// Anything.
    Any(u64),
}

impl Count {
    /// The value.
    pub fn value(self) -> u64 {
        match self {
            Count::Small(n) => u64::from(n),
            Count::NearMax(k) => MAX_COUNT - u64::from(k % 4),
            Count::NearNarrowMax(k) => Narrow::MAX_COUNT - 1 + u64::from(k % 4),
            Count::U64Max => u64::MAX,
            Count::Any(n) => n,
        }
    }
}

/// A window length (never 0: `NonZeroU64` makes a zero window
/// unrepresentable).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum WindowLen {
    /// `1..=256`.
    Small(u8),
    /// `1`.
    One,
    /// Larger than `u64::MAX / N`: `N * window` overflows.
    Huge(u16),
    /// Anything but 0.
    Any(u64),
}

impl WindowLen {
    /// The length in ticks, `>= 1`.
    pub fn ticks(self) -> u64 {
        match self {
            WindowLen::Small(w) => u64::from(w) + 1,
            WindowLen::One => 1,
            WindowLen::Huge(k) => u64::MAX / 2 - u64::from(k),
            WindowLen::Any(w) => w.max(1),
        }
    }
}

/// A counter index: valid ones mostly, then just out of range, then
/// `usize::MAX`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Counter(u8);

impl Counter {
    /// An index for an array of `c` counters: `0..c + 1`, or `usize::MAX`.
    pub fn index(self, c: usize) -> usize {
        match usize::from(self.0) % (c + 2) {
            i if i == c + 1 => usize::MAX,
            i => i,
        }
    }
}

/// How the fuzzed clock moves between operations.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Move {
    /// Stay.
    Stay,
    /// Forward or backward by a few windows' worth of ticks.
    Shift(i32),
    /// Forward or backward by `k` whole windows.
    Windows(i8),
    /// Anywhere.
    Jump(Time),
}

impl Move {
    /// The clock after the move (saturating at `0` and `u64::MAX`).
    pub fn apply(self, clock: u64, window: u64) -> u64 {
        match self {
            Move::Stay => clock,
            Move::Shift(d) => clock.saturating_add_signed(i64::from(d)),
            Move::Windows(k) => {
                let d = window.saturating_mul(u64::from(k.unsigned_abs()));
                if k < 0 {
                    clock.saturating_sub(d)
                } else {
                    clock.saturating_add(d)
                }
            }
            Move::Jump(t) => t.ticks(),
        }
    }
}

/// Tracks the range of window ids a run has used, for the checks that hold
/// only while every time in use is within `Width::WINDOW_RANGE` windows of
/// every other (the documented range; beyond it ids alias, by design).
#[derive(Debug, Clone, Copy)]
pub struct IdRange {
    lo: u64,
    hi: u64,
    ok: bool,
}

impl IdRange {
    /// The range of one id.
    pub fn new(id: u64) -> Self {
        IdRange {
            lo: id,
            hi: id,
            ok: true,
        }
    }

    /// Adds `id`; false from then on if the ids span `W::WINDOW_RANGE` or more.
    pub fn note<W: Width>(&mut self, id: u64) -> bool {
        self.note_within(id, W::WINDOW_RANGE - 2)
    }

    /// Adds `id`; false from then on if two ids are more than `span`
    /// windows apart.
    pub fn note_within(&mut self, id: u64, span: u64) -> bool {
        self.lo = self.lo.min(id);
        self.hi = self.hi.max(id);
        self.ok &= self.hi - self.lo <= span;
        self.ok
    }

    /// Whether every id so far was within range of every other.
    pub fn ok(&self) -> bool {
        self.ok
    }
}

/// A gate's shape: the one `Gate::new` picks, or one forced.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Pick {
    /// `Gate::new`'s choice.
    Fit,
    /// `in_buckets()`.
    Buckets,
    /// `in_wide_word()`, or `Gate::new`'s choice where no 128-bit word fits.
    WideWord,
}

impl Pick {
    /// A `Gate<N>` of `window` ticks and `limit` (and the occupy timeout,
    /// if given), in this shape. A limit above `MAX_COUNT` must be refused
    /// by `try_new` (and is then taken as `MAX_COUNT`, the largest).
    pub fn gate<const N: usize>(
        self,
        window: NonZeroU64,
        limit: u64,
        timeout: Option<u64>,
    ) -> Gate<N> {
        let limit = match Gate::<N>::try_new(window, limit) {
            Ok(_) => limit,
            Err(e) => {
                assert!(limit > leaparray::MAX_COUNT, "{e}");
                leaparray::MAX_COUNT
            }
        };
        let build = || {
            let g = Gate::<N>::new(window, limit);
            match timeout {
                Some(t) => g.with_occupy_timeout(t),
                None => g,
            }
        };
        match self {
            Pick::Fit => build(),
            Pick::Buckets => build().in_buckets(),
            Pick::WideWord => build().in_wide_word().unwrap_or_else(build),
        }
    }
}

/// The most windows apart two window ids in use may be for a gate of this
/// shape to be exact (and its model to apply): `2^(T-1) - 1` for ids kept
/// modulo `2^T`; the bucket shape, `Wide::WINDOW_RANGE - 2` (as
/// [`IdRange::note`]).
pub fn id_span(shape: Shape) -> u64 {
    match shape {
        Shape::Word64 { id_bits } | Shape::Word128 { id_bits } => {
            assert!((32..=64).contains(&id_bits), "{shape:?}");
            (1u64 << (id_bits - 1)) - 1
        }
        Shape::Buckets => Wide::WINDOW_RANGE - 2,
        _ => panic!("a shape the targets do not know: {shape:?}"),
    }
}
