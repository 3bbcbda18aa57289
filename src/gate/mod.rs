//! The flow gate: Sentinel's `DefaultController`, exact, in one atomic word
//! where the shape fits.
//!
//! # Shapes
//!
//! [`Gate::new`] picks the representation from `N`, the limit and the
//! occupy timeout ([`Gate::shape`] tells which):
//!
//! | shape | when | a decision |
//! |---|---|---|
//! | [`Shape::Word64`] | `(N + F) * b + 33 <= 64` | one load, one compare-and-swap of an `AtomicU64` |
//! | [`Shape::Word128`] | else `(N + F) * b + 33 <= 128`, on x86-64 and AArch64 | the same on an `AtomicU128` (`cmpxchg16b`, `ldxp`/`stxp` or `casp`, through portable-atomic) |
//! | [`Shape::Buckets`] | else | a [`Metric`]'s buckets: book, read, take back on refusal (see "The bucket shape") |
//!
//! (33: at least 32 bits of window id and a bit that marks a used word.)
//! In this condition `b` is the number of bits of the limit, at least 1
//! (`limit < 2^b`; a word's slots are then as wide as the shape allows), `F` the number
//! of windows after the newest that prioritized requests may borrow:
//! `ceil(occupy_timeout / window)`, at most `N` (1 by default, 0 with
//! [`with_occupy_timeout(0)`](Gate::with_occupy_timeout)). So with the
//! default timeout a `Gate<2>` is one 64-bit word for limits up to
//! 1,023 (ids of 33 bits or more), 32,767 with no prioritized requests,
//! and one 128-bit word up to 2^31 - 1; a `Gate<10>` one 64-bit word up to
//! a limit of 3 and one 128-bit word up to 255.
//!
//! # The word shapes
//!
//! The window id and the pass counts of the `N + F` windows that matter are
//! one atomic word; a decision loads it, slides it to the caller's window,
//! checks every interval that contains the booking window, and books with
//! one compare-and-swap. The word's layout, the argument that this is
//! exact under any interleaving (it is linearizable, with no rollback),
//! and the limits of keeping ids modulo `2^T` (`T >= 32`: exact while no
//! caller's clock lags the newest window by `2^(T-1)` windows) are in
//! the module `packed` (source: `src/gate/packed/`), whose rules
//! [`guarantees`](crate::guarantees) restates.
//!
//! # The bucket shape
//!
//! Too many windows or too large a limit for one word: the gate books into
//! a [`Metric`]'s bucket, reads the load of every interval containing it,
//! and takes the booking back if one exceeds the limit (its protocol is
//! argued in `src/gate/bucket_gate.rs`). Exact too, with two differences: a
//! request may be refused falsely while other requests' bookings, which
//! they then take back, push the load over the limit (never when one
//! thread calls at a time); and its proof rests on `SeqCst` orderings.
//!
//! # Late callers
//!
//! A caller whose window is older than the newest window the gate holds is
//! booked into the newest window: its permits count from there on, so it
//! is refused only when that window's intervals are full, never for being
//! late. So every permit of a pass is counted in a window no earlier than
//! its caller's own and no later than the newest window any caller had
//! passed when it returned (a [`Wait`](PriorityDecision::Wait)'s permits in
//! the later window it was told to wait for), and every interval of `N`
//! windows counts at most `limit` permits.
//!
//! # Statistics
//!
//! The pass counts are the gate's state. Blocks, occupied passes and the
//! rest of Sentinel's statistics are the caller's choice: pass a
//! [`Metric`] to [`try_acquire_metered`](Gate::try_acquire_metered), or
//! record what you need yourself.
//!
//! # Spans that cut a window
//!
//! A sliding window of `N` windows bounds every span made of whole windows.
//! A 1-second span that starts in the middle of a window can hold more
//! (Sentinel issue #2859): in `cargo run --example boundary`, 115 for
//! 2 x 500 ms, 103 for 10 x 100 ms, against 160 for a fixed window. Use more,
//! shorter windows where that matters.

pub(crate) mod bucket_gate;
pub(crate) mod decision;
pub(crate) mod divide;
pub(crate) mod packed;
pub(crate) mod set;
mod shape;

use core::num::NonZeroU64;

use crate::array::word::MAX_COUNT;
use crate::error::AddError;
use crate::gate::bucket_gate::BucketGate;
use crate::gate::divide::Divisor;
use crate::gate::packed::{Answer, Layout, Outcome, WordGate};
#[cfg(target_pointer_width = "64")]
use crate::gate::packed::{Fixed, Geometry, WordCell};
use crate::stats::event::Event;
use crate::stats::metric::{Metric, ReadOnly};
#[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
use crate::sync::Ordering::Relaxed;
use crate::sync::{atomic_u64, const_fn_unless_loom, AtomicU64};

use crate::gate::decision::Decision;
pub use crate::gate::decision::PriorityDecision;
pub use crate::gate::set::{Member, SEARCH_STEPS};
pub use crate::gate::shape::{GateError, Shape};

enum Repr<const N: usize> {
    /// A 64-bit word: [`Gate::word`].
    Word64,
    /// A 128-bit word (on targets without one, its type has no values and
    /// the variant is never built).
    #[allow(dead_code)]
    Word128(WordGate<crate::sync::AtomicU128>),
    Buckets(BucketGate<N>),
}

/// A gate's state as every path but the hot one sees it.
enum State<'a, const N: usize> {
    Word64(&'a WordGate<AtomicU64>),
    Word128(&'a WordGate<crate::sync::AtomicU128>),
    Buckets(&'a BucketGate<N>),
}

/// Discards a gate's old state in a `const fn`, which cannot run drop
/// glue for a generic type (the atomics it holds own nothing).
#[allow(clippy::forget_non_drop)]
const fn discard<const N: usize>(repr: Repr<N>) {
    core::mem::forget(repr);
}

/// At most `limit` permits per sliding interval of `N` windows, decided
/// exactly under any concurrency.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::{Decision, Gate};
///
/// // 100 per second: two windows of 500 ms, time in ms.
/// static GATE: Gate<2> = Gate::new(NonZeroU64::new(500).unwrap(), 100);
///
/// assert_eq!(GATE.try_acquire(0, 80), Decision::Pass);
/// assert_eq!(GATE.try_acquire(600, 30), Decision::Block); // 110 > 100
/// assert_eq!(GATE.try_acquire(600, 20), Decision::Pass);
/// assert_eq!(GATE.retry_after(600, 1), Some(400)); // at 1000 the 80 slide out
/// assert_eq!(GATE.try_acquire(1_000, 80), Decision::Pass);
/// ```
pub struct Gate<const N: usize> {
    layout: Layout,
    /// The word of the 64-bit shape ([`Repr::Word64`]; unused in the
    /// others), outside `repr` so that a decision reaches it without
    /// matching on the shape.
    word: WordGate<AtomicU64>,
    /// `fast[F]` is the limit if `book` decides this gate inline with
    /// constant shifts (a 64-bit word with `F` future windows, `F` 0 or
    /// 1, and a window `start_mask` can check), else 0; the other entry
    /// is 0. So `n - 1 < fast[F]` tests the shape and `1 <= n <= limit`
    /// in one compare.
    #[cfg(target_pointer_width = "64")]
    fast: [u64; 2],
    /// The same for the 128-bit shape ([`Repr::Word128`]), which `book`
    /// tests after the 64-bit word's.
    #[cfg(target_pointer_width = "64")]
    wide: [u64; 2],
    repr: Repr<N>,
    /// The id of a window some caller booked into, so that a caller in
    /// that same window finds its id with one multiply instead of a
    /// division (`book_word`). Any value it holds is the id of a window
    /// that ends by `u64::MAX` (0 at first), and the check is exact
    /// whatever the value: it needs no ordering and decides nothing. Not
    /// in loom builds (`book_word` says why).
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    hint: AtomicU64,
    /// The start of the window `hint` names (stored beside it, so the two
    /// may disagree for a while: each is read alone), for the callers that
    /// want no window back: `now` is in it when `now - start < window`, no
    /// multiply. The same kind of memo as `hint`: any value it holds is the
    /// start of a window that ends by `u64::MAX`, and `start_mask` makes
    /// the check of the word's window exact whatever the value.
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    start: AtomicU64,
    /// `2^(T + k) - 1` for `T` id bits and a window of `2^k * m` ticks, `m`
    /// odd (`WordGate::acquire_started` says why); used only where
    /// `T + k <= 64` (`fast`).
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    start_mask: u64,
}

impl<const N: usize> Gate<N> {
    const_fn_unless_loom! {
        /// A gate admitting at most `limit` permits per interval of `N`
        /// windows of `window` ticks. Prioritized requests may wait up to one
        /// window for a future one (Sentinel's default occupy timeout of
        /// 500 ms with 500 ms windows); see
        /// [`with_occupy_timeout`](Self::with_occupy_timeout).
        ///
        /// # Panics
        ///
        /// If `limit` is above [`MAX_COUNT`] (2^47 - 1), the most a count
        /// holds: in a `static` (a const context) that is a compile error,
        /// at run time a panic with the reason. [`try_new`](Self::try_new)
        /// returns the error instead.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::gate::Shape;
        /// use leaparray::Gate;
        /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100);
        /// assert_eq!((g.limit(), g.occupy_timeout(), g.window()), (100, 500, 500));
        /// let big = Gate::<2>::new(NonZeroU64::new(500).unwrap(), leaparray::MAX_COUNT);
        /// assert_eq!(big.shape(), Shape::Buckets);
        /// ```
        ///
        /// ```compile_fail,E0080
        /// # use core::num::NonZeroU64;
        /// use leaparray::Gate;
        /// static TOO_BIG: Gate<2> = Gate::new(NonZeroU64::new(500).unwrap(), u64::MAX);
        /// ```
        #[must_use]
        #[track_caller]
        pub fn new(window: NonZeroU64, limit: u64) -> Self {
            match Self::try_new(window, limit) {
                Ok(gate) => gate,
                Err(GateError::LimitTooLarge { .. }) => {
                    panic!("Gate::new: the limit is above MAX_COUNT (2^47 - 1), the most a count holds")
                }
            }
        }
    }

    const_fn_unless_loom! {
        /// [`new`](Self::new), or why not: `limit` is above [`MAX_COUNT`].
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::gate::GateError;
        /// use leaparray::Gate;
        /// let w = NonZeroU64::new(500).unwrap();
        /// assert!(Gate::<2>::try_new(w, 100).is_ok());
        /// let e = Gate::<2>::try_new(w, u64::MAX).unwrap_err();
        /// assert_eq!(e, GateError::LimitTooLarge { max: leaparray::MAX_COUNT });
        /// ```
        pub fn try_new(window: NonZeroU64, limit: u64) -> Result<Self, GateError> {
            if limit > MAX_COUNT {
                return Err(GateError::LimitTooLarge { max: MAX_COUNT });
            }
            Ok(Self::build(window, limit, window.get()))
        }
    }

    const_fn_unless_loom! {
        /// The same gate, empty, with prioritized requests waiting less than
        /// `ticks` for a future window (0: never). The timeout sets how many
        /// future windows the gate keeps, so it can change the shape.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::gate::Shape;
        /// use leaparray::Gate;
        /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 4_000);
        /// assert_eq!(g.shape(), Shape::Word128 { id_bits: 34 });
        /// let g = g.with_occupy_timeout(0);
        /// assert_eq!((g.occupy_timeout(), g.shape()), (0, Shape::Word64 { id_bits: 33 }));
        /// ```
        #[must_use]
        pub fn with_occupy_timeout(self, ticks: u64) -> Self {
            let Gate { layout, repr, .. } = self;
            discard(repr);
            Self::build(layout.window.nonzero(), layout.limit, ticks)
        }
    }

    const_fn_unless_loom! {
        /// Requires `limit <= MAX_COUNT` (`try_new` checks it).
        fn build(window: NonZeroU64, limit: u64, timeout: u64) -> Self {
            let div = Divisor::new(window);
            // More windows than any word has slots for fit no word.
            let live = if N > u32::MAX as usize { u32::MAX } else { N as u32 };
            if let Some(layout) = Layout::fit(64, live, div, limit, timeout) {
                return Self::assemble(layout, Repr::Word64);
            }
            #[cfg(all(not(leaparray_loom), any(target_arch = "x86_64", target_arch = "aarch64")))]
            if let Some(layout) = Layout::fit(128, live, div, limit, timeout) {
                return Self::assemble(
                    layout,
                    Repr::Word128(WordGate::new(crate::sync::AtomicU128::new(0))),
                );
            }
            // `fit` only fails for shapes with more bits than a word: the
            // bucket gate keeps the same parameters.
            Self::assemble(
                Layout::unpacked(live, div, limit, timeout),
                Repr::Buckets(BucketGate::new(window)),
            )
        }
    }

    const_fn_unless_loom! {
        /// A gate of this layout and state, its 64-bit word and memos new.
        fn assemble(layout: Layout, repr: Repr<N>) -> Self {
            #[cfg(target_pointer_width = "64")]
            let (fast, wide) = {
                // `acquire_started` needs `T + k <= 64`: windows of a
                // multiple of 2^(65 - T) ticks (2^32 for `Gate<2>`) decide
                // through `book_otherwise`, dividing.
                let checkable = layout.id_bits + layout.window.get().trailing_zeros() <= 64;
                let limit = if checkable { layout.limit } else { 0 };
                let at = match layout.future {
                    0 => [limit, 0],
                    1 => [0, limit],
                    _ => [0, 0],
                };
                match repr {
                    Repr::Word64 => (at, [0, 0]),
                    Repr::Word128(_) => ([0, 0], at),
                    Repr::Buckets(_) => ([0, 0], [0, 0]),
                }
            };
            #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
            let start_mask = {
                let bits = layout.id_bits + layout.window.get().trailing_zeros();
                if bits >= 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                }
            };
            Gate {
                layout,
                word: WordGate::new(atomic_u64(0)),
                #[cfg(target_pointer_width = "64")]
                fast,
                #[cfg(target_pointer_width = "64")]
                wide,
                repr,
                #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
                hint: atomic_u64(0),
                #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
                start: atomic_u64(0),
                #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
                start_mask,
            }
        }
    }

    const_fn_unless_loom! {
        /// The same gate, empty, in the bucket shape whatever fits: for
        /// Sentinel's statistics in [`metric`](Self::metric), or to compare
        /// shapes.
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// use leaparray::gate::Shape;
        /// use leaparray::Gate;
        /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100).in_buckets();
        /// assert_eq!(g.shape(), Shape::Buckets);
        /// ```
        #[must_use]
        pub fn in_buckets(self) -> Self {
            let Gate { layout, repr, .. } = self;
            discard(repr);
            Self::assemble(
                Layout::unpacked(layout.live, layout.window, layout.limit, layout.timeout),
                Repr::Buckets(BucketGate::new(layout.window.nonzero())),
            )
        }
    }

    /// The same gate, empty, in one 128-bit word even if 64 bits would
    /// do; `None` where there is no 128-bit word (targets other than x86-64
    /// and AArch64) or the shape does not fit one.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::gate::Shape;
    /// use leaparray::Gate;
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100).in_wide_word();
    /// # #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    /// assert_eq!(g.unwrap().shape(), Shape::Word128 { id_bits: 34 });
    /// ```
    #[must_use]
    #[cfg(not(leaparray_loom))]
    pub const fn in_wide_word(self) -> Option<Self> {
        let Gate { layout, repr, .. } = self;
        discard(repr);
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if let Some(layout) = Layout::fit(
            128,
            layout.live,
            layout.window,
            layout.limit,
            layout.timeout,
        ) {
            return Some(Self::assemble(
                layout,
                Repr::Word128(WordGate::new(crate::sync::AtomicU128::new(0))),
            ));
        }
        let _ = layout;
        None
    }

    /// The state, the 64-bit variants as one.
    const fn state(&self) -> State<'_, N> {
        match &self.repr {
            Repr::Word64 => State::Word64(&self.word),
            Repr::Word128(w) => State::Word128(w),
            Repr::Buckets(b) => State::Buckets(b),
        }
    }

    /// The most permits admitted per interval.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::Gate::<2>::new(NonZeroU64::new(1).unwrap(), 7).limit(), 7);
    /// ```
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.layout.limit
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::Gate::<2>::new(NonZeroU64::new(9).unwrap(), 7).window(), 9);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.layout.window.get()
    }

    /// How long a prioritized request may be told to wait, exclusive.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::Gate::<2>::new(NonZeroU64::new(9).unwrap(), 7).occupy_timeout(), 9);
    /// ```
    #[must_use]
    pub const fn occupy_timeout(&self) -> u64 {
        self.layout.timeout
    }

    /// How the gate holds its state.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::gate::Shape;
    /// use leaparray::Gate;
    /// let g = Gate::<60>::new(NonZeroU64::new(1_000).unwrap(), 1_000);
    /// assert_eq!(g.shape(), Shape::Buckets);
    /// ```
    #[must_use]
    pub const fn shape(&self) -> Shape {
        match self.state() {
            State::Word64(_) => Shape::Word64 {
                id_bits: self.layout.id_bits,
            },
            State::Word128(_) => Shape::Word128 {
                id_bits: self.layout.id_bits,
            },
            State::Buckets(_) => Shape::Buckets,
        }
    }

    /// The statistics a bucket-shaped gate keeps (passes, blocks, occupied
    /// and borrowed passes), read-only; `None` for the word shapes, whose
    /// state is their pass counts (see "Statistics" in the module docs).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Gate};
    /// let g = Gate::<60>::new(NonZeroU64::new(1_000).unwrap(), 1_000);
    /// assert_eq!(g.try_acquire(0, 1_000), Decision::Pass);
    /// assert_eq!(g.try_acquire(0, 1), Decision::Block);
    /// let m = g.metric().unwrap();
    /// assert_eq!((m.pass(0), m.block(0)), (1_000, 1));
    /// assert!(Gate::<2>::new(NonZeroU64::new(500).unwrap(), 1).metric().is_none());
    /// ```
    #[must_use]
    pub const fn metric(&self) -> Option<&Metric<N, ReadOnly>> {
        match &self.repr {
            Repr::Buckets(b) => Some(b.metric()),
            _ => None,
        }
    }

    /// Admits `n` permits at `now` if every interval of `N` windows that
    /// contains the booking window then holds at most `limit` (all or
    /// nothing): [`Decision::Pass`] or [`Decision::Block`]. The booking
    /// window is the window of `now`, or the newest window the gate holds
    /// if that is later (a late caller). `n == 0` always passes and books
    /// nothing; `n > limit` never passes.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3);
    /// assert_eq!(g.try_acquire(1_000, 2), Decision::Pass);
    /// assert_eq!(g.try_acquire(999, 1), Decision::Pass); // late: counted from 1000
    /// assert_eq!(g.try_acquire(999, 1), Decision::Block); // full
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    #[inline(always)]
    pub fn try_acquire(&self, now: u64, n: u64) -> Decision {
        // A `Decision` from every path (`Answer`): the out-of-line ones
        // are tail calls.
        self.book(now, n, false)
    }

    /// Like [`try_acquire`](Self::try_acquire), but when the interval is
    /// full, borrows room in a future window (Sentinel's prioritized
    /// requests, `tryOccupyNext`): [`PriorityDecision::Wait`] with the
    /// ticks until that window starts, if that is less than the occupy
    /// timeout and every interval containing that window stays within the
    /// limit. The borrowed permits count in that window (its passes
    /// include them when it starts). The word shapes take the first future
    /// window with room; the bucket shape the one Sentinel's formula names.
    /// Either looks at most `N` windows ahead, whatever the timeout: the
    /// gate holds no window further ahead (see
    /// [`with_occupy_timeout`](Self::with_occupy_timeout)).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::gate::PriorityDecision;
    /// # use leaparray::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// assert_eq!(g.try_acquire(100, 7), Decision::Pass); // window [0, 500)
    /// assert_eq!(g.try_acquire(600, 3), Decision::Pass); // full
    /// assert_eq!(g.try_acquire_prioritized(700, 5), PriorityDecision::Wait(300));
    /// // At 1000 the 7 slide out; the 5 borrowed count in [1000, 1500).
    /// assert_eq!(g.try_acquire(1_000, 2), Decision::Pass); // 3 + 5 + 2
    /// assert_eq!(g.try_acquire(1_000, 1), Decision::Block);
    /// ```
    #[must_use = "a Pass or Wait has already booked its permits"]
    pub fn try_acquire_prioritized(&self, now: u64, n: u64) -> PriorityDecision {
        match self.book::<Outcome>(now, n, true) {
            Outcome::Booked(_) => PriorityDecision::Pass,
            Outcome::Borrowed { wait, .. } => PriorityDecision::Wait(wait),
            Outcome::Refused => PriorityDecision::Block,
        }
    }

    /// [`try_acquire`](Self::try_acquire) that also records the decision
    /// into `metric`, Sentinel's statistics: a pass as [`Event::Pass`], a
    /// refusal as [`Event::Block`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::stats::{Event, Metric};
    /// use leaparray::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 1);
    /// let stats = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// assert_eq!(g.try_acquire_metered(&stats, 0, 1), Decision::Pass);
    /// assert_eq!(g.try_acquire_metered(&stats, 0, 1), Decision::Block);
    /// assert_eq!((stats.pass(0), stats.block(0)), (1, 1));
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire_metered<const M: usize>(
        &self,
        metric: &Metric<M>,
        now: u64,
        n: u64,
    ) -> Decision {
        let d = self.try_acquire(now, n);
        let event = match d {
            Decision::Pass => Event::Pass,
            Decision::Block => Event::Block,
        };
        let _ = metric.add(now, event, n);
        d
    }

    /// [`try_acquire_prioritized`](Self::try_acquire_prioritized) that also
    /// records the decision into `metric`: a pass as [`Event::Pass`], a
    /// refusal as [`Event::Block`], borrowed permits as
    /// [`Event::OccupiedPass`] now and as waiting for their window.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::gate::PriorityDecision;
    /// use leaparray::Gate;
    /// use leaparray::stats::Metric;
    /// let g = Gate::<1>::new(NonZeroU64::new(500).unwrap(), 1);
    /// let stats = Metric::<2>::new(NonZeroU64::new(500).unwrap());
    /// let _ = g.try_acquire_prioritized_metered(&stats, 100, 1);
    /// assert_eq!(g.try_acquire_prioritized_metered(&stats, 100, 1), PriorityDecision::Wait(400));
    /// assert_eq!((stats.pass(100), stats.occupied_pass(100), stats.waiting(100)), (1, 1, 1));
    /// ```
    #[must_use = "a Pass or Wait has already booked its permits"]
    pub fn try_acquire_prioritized_metered<const M: usize>(
        &self,
        metric: &Metric<M>,
        now: u64,
        n: u64,
    ) -> PriorityDecision {
        let d = self.try_acquire_prioritized(now, n);
        let _ = match d {
            PriorityDecision::Pass => metric.add(now, Event::Pass, n),
            PriorityDecision::Block => metric.add(now, Event::Block, n),
            PriorityDecision::Wait(wait) => {
                let _ = metric.add_waiting(now, now.saturating_add(wait), n);
                metric.add(now, Event::OccupiedPass, n)
            }
        };
        d
    }

    /// Adds `n` passes at `now` without a check, for work admitted
    /// elsewhere that must still count. In the word shapes every interval
    /// of `N` windows that contains the newest window counts at most
    /// `2^b - 1`, `b` the slot width of the shape (`(W - 33) / (N + F)`
    /// bits of a `W`-bit word, at most 48): the word keeps the total of
    /// such an interval in a slot, and the intervals ending after the
    /// newest window hold the permits borrowed into them. Beyond it, the
    /// passes stop there and the call returns [`AddError::Saturated`].
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// g.record(0, 4).unwrap();
    /// assert_eq!(g.try_acquire(0, 2), Decision::Block); // 4 + 2 > 5
    /// ```
    pub fn record(&self, now: u64, n: u64) -> Result<(), AddError> {
        let ok = match self.state() {
            State::Word64(w) => w.record::<N>(&self.layout, now, n),
            State::Word128(w) => w.record::<N>(&self.layout, now, n),
            State::Buckets(b) => return b.metric().add_event(now, Event::Pass, n),
        };
        if ok {
            Ok(())
        } else {
            Err(AddError::Saturated)
        }
    }

    /// The passes of the interval ending at the window of `now`, of the
    /// windows the gate still holds: for a time before the newest window,
    /// windows that slid out of a word (those `N` or more before the
    /// newest) or whose bucket moved on count 0. Observes without
    /// consuming; what a request could still get is
    /// [`remaining`](Self::remaining), which also counts the intervals
    /// after it.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::Gate;
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5);
    /// let _ = g.try_acquire(100, 3);
    /// assert_eq!((g.count(400), g.count(1_000)), (3, 0));
    /// ```
    #[must_use]
    pub fn count(&self, now: u64) -> u64 {
        match self.state() {
            State::Word64(w) => w.count(&self.layout, now),
            State::Word128(w) => w.count(&self.layout, now),
            State::Buckets(b) => b.metric().pass(now),
        }
    }

    /// The load a booking at `now` would join: the largest pass count of
    /// any interval containing the booking window (borrowed permits
    /// included). Books nothing.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::Gate;
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = g.try_acquire(0, 4);
    /// let _ = g.try_acquire(600, 3);
    /// assert_eq!((g.peek(600), g.peek(1_000), g.peek(1_500)), (7, 3, 0));
    /// ```
    #[must_use]
    pub fn peek(&self, now: u64) -> u64 {
        match self.state() {
            State::Word64(w) => w.load::<N>(&self.layout, now),
            State::Word128(w) => w.load::<N>(&self.layout, now),
            State::Buckets(b) => b.load(now).unwrap_or(self.layout.limit),
        }
    }

    /// How many permits a request at `now` could still get: `limit` less
    /// [`peek`](Self::peek). Books nothing; `try_acquire(now, n)` passes
    /// exactly when `n <= remaining(now)`, if nothing happens in between.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::Gate;
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = g.try_acquire(600, 10);
    /// assert_eq!((g.remaining(400), g.remaining(1_000), g.remaining(1_500)), (0, 0, 10));
    /// ```
    #[must_use]
    pub fn remaining(&self, now: u64) -> u64 {
        self.layout.limit.saturating_sub(self.peek(now))
    }

    /// Ticks from `now` until a request for `n` permits would pass, if
    /// nothing else arrives: `Some(0)` if it would pass now, `None` if it
    /// never can (`n > limit`, or the room comes back only in a window that
    /// would start after `u64::MAX`). The `Retry-After` of a refusal.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Gate};
    /// let g = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 10);
    /// let _ = g.try_acquire(100, 6);
    /// let _ = g.try_acquire(700, 4);
    /// assert_eq!(g.retry_after(800, 1), Some(200)); // the 6 leave at 1000
    /// assert_eq!(g.retry_after(800, 7), Some(700)); // the 4 leave at 1500
    /// assert_eq!(g.retry_after(800, 11), None);
    /// assert_eq!(g.try_acquire(1_000, 1), Decision::Pass);
    /// ```
    #[must_use]
    pub fn retry_after(&self, now: u64, n: u64) -> Option<u64> {
        if n > self.layout.limit {
            return None;
        }
        if n == 0 {
            return Some(0);
        }
        match self.state() {
            State::Word64(w) => w.retry_after::<N>(&self.layout, now, n),
            State::Word128(w) => w.retry_after::<N>(&self.layout, now, n),
            State::Buckets(b) => b.retry_after(self.layout.limit, now, n),
        }
    }

    /// The decision, and where it booked (if the caller wants an
    /// [`Outcome`]; a [`Decision`] says only whether it passed).
    #[inline(always)]
    pub(crate) fn book<R: Answer>(&self, now: u64, n: u64, prioritized: bool) -> R {
        // The common case inline: a 64-bit word and `1 <= n <= limit`.
        // On 64-bit targets, shapes with up to one future window (the
        // default timeout and none) decide with constant shifts and masks;
        // elsewhere (microcontrollers) one copy of the code reads them from
        // the layout: about 2.5 KB less of `.text` on a Cortex-M.
        let l = &self.layout;
        #[cfg(target_pointer_width = "64")]
        {
            // `n = 0` wraps to `u64::MAX`, never below.
            let m = n.wrapping_sub(1);
            let w = &self.word;
            if m < self.fast[1] {
                return self.book_word(w, Fixed::<u64, N, 1>::new(l), now, n, prioritized);
            }
            if m < self.fast[0] {
                return self.book_word(w, Fixed::<u64, N, 0>::new(l), now, n, prioritized);
            }
            if m < self.wide[1] | self.wide[0] {
                return self.book_wide(now, n, prioritized);
            }
        }
        // (A word refuses `n > limit` itself.)
        #[cfg(not(target_pointer_width = "64"))]
        if matches!(self.repr, Repr::Word64) && (n as i64) > 0 {
            return self
                .word
                .acquire::<N, R>(l, l.window.div(now), now, n, prioritized);
        }
        self.book_otherwise(now, n, prioritized)
    }

    /// `book` on the 128-bit word (limits too large for 64 bits), for
    /// `1 <= n <= limit`: the same inline decision, in a function of its
    /// own so that the 64-bit word's stays a leaf that saves no registers
    /// (`now` and `n` first: the call needs no moves).
    #[cfg(target_pointer_width = "64")]
    #[inline(never)]
    fn book_wide<R: Answer>(&self, now: u64, n: u64, prioritized: bool) -> R {
        let l = &self.layout;
        match &self.repr {
            Repr::Word128(w) if self.wide[1] != 0 => {
                self.book_word(w, Fixed::<u128, N, 1>::new(l), now, n, prioritized)
            }
            Repr::Word128(w) => self.book_word(w, Fixed::<u128, N, 0>::new(l), now, n, prioritized),
            _ => self.book_otherwise(now, n, prioritized),
        }
    }

    /// `book` on the word `w` (the 64-bit or 128-bit shape's, `g` its
    /// geometry): the caller's window from the hint when
    /// `now` is in the hinted window (`now - h * window < window`, exact
    /// because the hinted window ends by `u64::MAX`), else by division,
    /// after which the hint moves to a window the word booked into. A
    /// caller that wants no window back tests `now` against `start`
    /// instead, and the word's window against `start` too
    /// (`WordGate::acquire_started`).
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    fn book_word<A: WordCell, G: Geometry, R: Answer>(
        &self,
        w: &WordGate<A>,
        g: G,
        now: u64,
        n: u64,
        prioritized: bool,
    ) -> R {
        #[cfg(not(leaparray_loom))]
        {
            let d = g.window().get();
            if !R::WINDOW {
                debug_assert!(!prioritized);
                let s = self.start.load(Relaxed);
                if now.wrapping_sub(s) < d {
                    return w.acquire_started::<N, R>(g, s, self.start_mask, now, n);
                }
                return self.book_new_window(now, n, w, g, prioritized);
            }
            let h = self.hint.load(Relaxed);
            if now.wrapping_sub(h.wrapping_mul(d)) < d {
                return w.acquire::<N, R>(g, h, now, n, prioritized);
            }
            self.book_new_window(now, n, w, g, prioritized)
        }
        // The models check the word: the hint, a memo of an exact
        // arithmetic fact, would only multiply their schedules.
        #[cfg(leaparray_loom)]
        w.acquire::<N, R>(g, g.window().div(now), now, n, prioritized)
    }

    /// `book_word` when `now` is not in the hinted window (`now` and `n`
    /// first, where `try_acquire`'s caller passes them: no moves).
    #[cfg(all(target_pointer_width = "64", not(leaparray_loom)))]
    #[cold]
    #[inline(never)]
    fn book_new_window<A: WordCell, G: Geometry, R: Answer>(
        &self,
        now: u64,
        n: u64,
        w: &WordGate<A>,
        g: G,
        prioritized: bool,
    ) -> R {
        let d = g.window();
        let c = d.div(now);
        let outcome: Outcome = w.acquire::<N, Outcome>(g, c, now, n, prioritized);
        // Only a window that ends by `u64::MAX` (see `hint`); only when the
        // word booked into the caller's window (a late caller's window
        // would send the callers after it to this path).
        let start = c
            .checked_mul(d.get())
            .filter(|s| s.checked_add(d.get()).is_some());
        if let (Some(start), Outcome::Booked(b)) = (start, outcome) {
            if b == c {
                self.hint.store(c, Relaxed);
                self.start.store(start, Relaxed);
            }
        }
        R::of(outcome)
    }

    /// `book` for the other shapes and sizes.
    #[cold]
    #[inline(never)]
    fn book_otherwise<R: Answer>(&self, now: u64, n: u64, prioritized: bool) -> R {
        R::of(self.book_other(now, n, prioritized))
    }

    /// `book_otherwise`'s decision (one copy whatever the caller wants
    /// back).
    #[inline(never)]
    fn book_other(&self, now: u64, n: u64, prioritized: bool) -> Outcome {
        let l = &self.layout;
        if n == 0 {
            return Outcome::Booked(l.window.div(now));
        }
        if n > l.limit {
            if let State::Buckets(b) = self.state() {
                b.block(now, n);
            }
            return Outcome::Refused;
        }
        match self.state() {
            State::Word64(w) => w.acquire::<N, Outcome>(l, l.window.div(now), now, n, prioritized),
            // Constant shifts for the common shapes, as in `book`.
            #[cfg(target_pointer_width = "64")]
            State::Word128(w) => {
                let c = l.window.div(now);
                match l.future {
                    0 => {
                        w.acquire::<N, Outcome>(Fixed::<u128, N, 0>::new(l), c, now, n, prioritized)
                    }
                    1 => {
                        w.acquire::<N, Outcome>(Fixed::<u128, N, 1>::new(l), c, now, n, prioritized)
                    }
                    _ => w.acquire::<N, Outcome>(l, c, now, n, prioritized),
                }
            }
            #[cfg(not(target_pointer_width = "64"))]
            State::Word128(w) => w.acquire::<N, Outcome>(l, l.window.div(now), now, n, prioritized),
            State::Buckets(b) => {
                if let Some(id) = b.admit(l.limit, now, n) {
                    return Outcome::Booked(id);
                }
                if prioritized {
                    if let Some(wait) = b.borrow(l.limit, l.timeout, now, n) {
                        return Outcome::Borrowed { wait };
                    }
                }
                b.block(now, n);
                Outcome::Refused
            }
        }
    }

    /// Takes back `n` permits booked into `window` (a set member refused).
    pub(crate) fn cancel(&self, window: u64, n: u64) {
        if n == 0 {
            return;
        }
        match self.state() {
            State::Word64(w) => w.cancel(&self.layout, window, n),
            State::Word128(w) => w.cancel(&self.layout, window, n),
            State::Buckets(b) => b.cancel(window, n),
        }
    }
}

impl<const N: usize> core::fmt::Debug for Gate<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Gate")
            .field("windows", &N)
            .field("window", &self.window())
            .field("limit", &self.limit())
            .field("occupy_timeout", &self.occupy_timeout())
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for Gate<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Gate {{ windows: {=usize}, window: {=u64}, limit: {=u64}, occupy_timeout: {=u64}, shape: {} }}",
            N,
            self.window(),
            self.limit(),
            self.occupy_timeout(),
            self.shape()
        );
    }
}
