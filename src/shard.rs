//! [`Sharded`]: one array per core or queue, merged by readers.
//!
//! A packet loop cannot afford a contended atomic per packet. A `Sharded`
//! array holds `S` rings, each on its own cache lines, and readers merge
//! them into the same sums and windows a single [`LeapArray`] gives. A
//! shard is written in one of two ways, never both at once:
//!
//! - **claimed** by one writer ([`Sharded::claim`]): its [`ShardWriter`]
//!   adds with one plain store, no read-modify-write (the
//!   single-writer protocol in [`protocol`](crate::protocol)); the handle is
//!   `Send`, not `Clone`, adds through `&mut self`, and dropping it returns
//!   the shard;
//! - **shared** ([`Sharded::add`] with a hint such as a CPU or queue id):
//!   any thread, through the exact compare-and-swap path of `LeapArray::add`.
//!
//! Each shard's state word makes the two exclusive at every moment, and
//! only for that moment: a claim succeeds only while no shared add is in
//! flight on the shard, and a shared add skips a claimed shard. A shard
//! that shared adds used while it was free can be claimed again as soon as
//! they are done, so a queue whose writer restarts gets its fast path back.
//!
//! ```text
//!  Thread 1: claim(0)                        Thread 2: add(hint 0, ..)
//!  ----------------------------------------  ----------------------------------------
//!                                            state 0 -> 1 (fetch_add, acquire:
//!                                            one add in flight)
//!  state 0 -> CLAIMED (CAS): fails, 1
//!  -> Err(ClaimError::Shared): retry later
//!                                            array.add(..) on the CAS path
//!                                            state 1 -> 0 (fetch_sub, release)
//!  state 0 -> CLAIMED (CAS): wins; every
//!  shared add happens before its writes
//! ```
//!
//! Either order is safe: a shared add whose `fetch_add` finds the `CLAIMED`
//! bit set takes its count back without touching the array and moves to the
//! next shard, and the single writer never shares its shard with a
//! compare-and-swap writer. The two protocols leave a bucket in states the
//! other accepts: the single writer resets every cell to its stamp's
//! generation on each roll-over, and a shared roll-over seals every cell.
//!
//! In detail: each shard sits in a `crossbeam_utils::CachePadded` (its
//! padding per target, without std). A second claim of a claimed shard fails
//! with [`ClaimError`]. A claimed shard's writer remembers its current window
//! and the running count of each of its counters there, so the common add is
//! one release store of the count, with no load of the shared word and no
//! division. The running counts are exact because nothing else writes a
//! claimed shard: the writer reads them from the cells when it enters a
//! window (after its claim, whose acquire orders every earlier writer's
//! stores before the reads), and from then on each cell holds what the
//! writer last stored. Shared adds go through
//! [`Sharded::shared`]`(hint)` (or [`Sharded::add`]). Readers merge every
//! shard into the same `sum`/`sums`/`windows` a `LeapArray` gives and stay
//! exact: loom models a reader racing a single writer's roll-over
//! (`loom-tests/tests/shard.rs`). `cargo run --release --example
//! packet_path` runs two queues and checks the merged totals.

use core::num::NonZeroU64;

use crossbeam_utils::CachePadded;

use crate::array::bucket::CellOp;
use crate::array::window::{add_counts, Window};
use crate::array::word::MAX_COUNT;
use crate::array::LeapArray;
use crate::error::AddError;
use crate::sync::{array_of, atomic_u64, const_fn_unless_loom, AtomicU64, Ordering};

/// The bit of a shard's state word that says a [`ShardWriter`] owns it; the
/// bits below count the shared adds in flight on it (including, for a
/// moment, ones that found it claimed and are about to take their count
/// back).
const CLAIMED: u64 = 1 << 63;

/// One ring and its state word. Each lives in a
/// [`crossbeam_utils::CachePadded`], alone on its cache lines, so writers of
/// different shards never share one.
struct Shard<const N: usize, const C: usize> {
    array: LeapArray<N, C>,
    /// The `CLAIMED` bit and the number of shared adds in flight (0: free).
    /// Invariant: while `CLAIMED` is set, only the one `ShardWriter` writes
    /// `array` (a shared add that finds the bit set writes nothing); the bit
    /// is set only by a CAS from 0.
    state: AtomicU64,
}

/// Why [`Sharded::claim`] refused.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::shard::{ClaimError, Sharded};
///
/// let s = Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
/// let _w = s.claim(0).unwrap();
/// assert_eq!(s.claim(0).err(), Some(ClaimError::Claimed));
/// assert_eq!(s.claim(2).err(), Some(ClaimError::NoSuchShard));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ClaimError {
    /// The index is not below `S`.
    NoSuchShard,
    /// Another writer holds the shard.
    Claimed,
    /// A shared add ([`Sharded::add`]) is in flight on the shard right now,
    /// or one that found the shard claimed by the previous writer is still
    /// taking its announcement back; the claim can succeed once it is done
    /// (retry).
    Shared,
}

impl core::fmt::Display for ClaimError {
    /// ```
    /// use leaparray::shard::ClaimError;
    /// assert_eq!(ClaimError::Claimed.to_string(), "another writer holds the shard");
    /// ```
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ClaimError::NoSuchShard => "no shard with that index",
            ClaimError::Claimed => "another writer holds the shard",
            ClaimError::Shared => "a shared add is in flight on the shard (retry)",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ClaimError {}

/// Why a shared add ([`SharedAdder::add`], [`Sharded::add`]) did not
/// count.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::shard::{SharedAddError, Sharded};
/// use leaparray::AddError;
/// let s = Sharded::<2, 1, 1>::new(NonZeroU64::new(10).unwrap());
/// assert_eq!(s.add(0, 0, 1, 1), Err(SharedAddError::Add(AddError::NoSuchCounter)));
/// let _w = s.claim(0).unwrap();
/// assert_eq!(s.add(0, 0, 0, 1), Err(SharedAddError::NoFreeShard));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SharedAddError {
    /// Every shard is claimed by a writer: a shared add has no shard to
    /// go to. Nothing was counted.
    NoFreeShard,
    /// The add itself: see [`AddError`].
    Add(AddError),
}

impl From<AddError> for SharedAddError {
    fn from(e: AddError) -> Self {
        SharedAddError::Add(e)
    }
}

impl core::fmt::Display for SharedAddError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SharedAddError::NoFreeShard => f.write_str("every shard is claimed by a writer"),
            SharedAddError::Add(e) => core::fmt::Display::fmt(e, f),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SharedAddError {}

/// `S` sliding-window arrays of `N` windows and `C` counters, one per core
/// or queue, read as one.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::shard::Sharded;
///
/// // Two queues, packets and bytes, one second of 100 ms windows (µs ticks).
/// static TRAFFIC: Sharded<10, 2, 2> = Sharded::new(NonZeroU64::new(100_000).unwrap());
///
/// let mut q0 = TRAFFIC.claim(0).unwrap();
/// let mut q1 = TRAFFIC.claim(1).unwrap();
/// q0.add(1_000, 0, 1).unwrap();
/// q0.add(1_000, 1, 1_500).unwrap();
/// q1.add(2_000, 0, 1).unwrap();
/// q1.add(2_000, 1, 60).unwrap();
/// assert_eq!(TRAFFIC.sums(2_000), [2, 1_560]);
/// ```
///
/// `S == 0` (like `N == 0` or `C == 0`) is a compile-time error:
///
/// ```compile_fail,E0080
/// # use core::num::NonZeroU64;
/// let s = leaparray::shard::Sharded::<2, 1, 0>::new(NonZeroU64::new(10).unwrap());
/// ```
pub struct Sharded<const N: usize, const C: usize, const S: usize> {
    shards: [CachePadded<Shard<N, C>>; S],
    /// Every shard's window length (kept here too: `CachePadded`'s deref is
    /// not `const`, and `window()` is).
    window: u64,
}

impl<const N: usize, const C: usize, const S: usize> Sharded<N, C, S> {
    const_fn_unless_loom! {
        /// `S` empty shards of `N` windows of `window` ticks (`const`, except
        /// under loom).
        ///
        /// ```
        /// # use core::num::NonZeroU64;
        /// let s = leaparray::shard::Sharded::<2, 1, 4>::new(NonZeroU64::new(10).unwrap());
        /// assert_eq!((s.shards(), s.interval()), (4, 20));
        /// ```
        #[must_use]
        pub fn new(window: NonZeroU64) -> Self {
            const { assert!(S > 0, "Sharded<N, C, S> needs S >= 1 shards") };
            // Shards have no drop glue, so a const fn may overwrite them.
            let mut shards: [CachePadded<Shard<N, C>>; S] =
                array_of!(S, CachePadded::new(Shard::new(NonZeroU64::MIN)));
            let mut i = 0;
            while i < S {
                shards[i] = CachePadded::new(Shard::new(window));
                i += 1;
            }
            Sharded {
                shards,
                window: window.get(),
            }
        }
    }

    /// The number of shards, `S`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::shard::Sharded::<2, 1, 3>::new(NonZeroU64::new(1).unwrap()).shards(), 3);
    /// ```
    #[must_use]
    pub const fn shards(&self) -> usize {
        S
    }

    /// The window length in ticks.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::shard::Sharded::<2, 1, 3>::new(NonZeroU64::new(7).unwrap()).window(), 7);
    /// ```
    #[must_use]
    pub const fn window(&self) -> u64 {
        self.window
    }

    /// The sliding interval, `N * window` (saturating).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// assert_eq!(leaparray::shard::Sharded::<2, 1, 3>::new(NonZeroU64::new(7).unwrap()).interval(), 14);
    /// ```
    #[must_use]
    pub const fn interval(&self) -> u64 {
        (N as u64).saturating_mul(self.window)
    }

    /// Claims shard `index` for one writer. The returned handle adds without
    /// any read-modify-write; dropping it (or [`ShardWriter::release`])
    /// returns the shard. Fails if the shard is held, if a shared add is in
    /// flight on it at this moment ([`ClaimError::Shared`]: retry), or if it
    /// does not exist; never blocks. Shared adds that used the shard earlier
    /// do not stand in the way: their counts stay, and the writer adds on.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::shard::{ClaimError, Sharded};
    /// let s = Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
    /// let w = s.claim(1).unwrap();
    /// assert_eq!(w.index(), 1);
    /// drop(w);
    /// assert!(s.claim(1).is_ok(), "returned on drop");
    /// s.add(0, 5, 0, 1).unwrap(); // a shared add in shard 0
    /// let mut w = s.claim(0).unwrap(); // done: shard 0 can be claimed
    /// w.add(5, 0, 1).unwrap();
    /// assert_eq!(s.sum(5, 0), 2);
    /// ```
    pub fn claim(&self, index: usize) -> Result<ShardWriter<'_, N, C>, ClaimError> {
        let shard = self.shards.get(index).ok_or(ClaimError::NoSuchShard)?;
        // ORDERING: Acquire pairs with the Release of the previous writer's
        // `Drop` and of every shared add's decrement (a release sequence:
        // all of them read-modify-write the word), so their adds happen
        // before ours.
        let won = shard
            .state
            .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed);
        match won {
            Ok(_) => Ok(ShardWriter {
                shard,
                index,
                cursor: Cursor {
                    start: 0,
                    len: 0,
                    // Any bucket's cells: `len` 0 matches no time.
                    cells: shard.array.cells_of(0),
                    tag: 0,
                    running: [0; C],
                },
            }),
            Err(state) if state & CLAIMED != 0 => Err(ClaimError::Claimed),
            Err(_) => Err(ClaimError::Shared),
        }
    }

    /// A handle for shared adds from any thread, starting at shard
    /// `hint % S` (a CPU or queue id spreads threads over the shards): the
    /// counterpart of [`claim`](Self::claim) for threads that own no shard.
    /// `Copy`, and it claims nothing: it only names where its adds start.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 4>::new(NonZeroU64::new(10).unwrap());
    /// let cpu3 = s.shared(3);
    /// cpu3.add(7, 0, 2).unwrap(); // shard 3
    /// s.shared(1).add(8, 0, 3).unwrap(); // shard 1
    /// assert_eq!(s.sum(8, 0), 5);
    /// ```
    #[must_use]
    pub const fn shared(&self, hint: usize) -> SharedAdder<'_, N, C, S> {
        SharedAdder {
            sharded: self,
            hint,
        }
    }

    /// Shared add: the same as `self.shared(hint).add(now, counter, n)`
    /// ([`SharedAdder::add`]).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 4>::new(NonZeroU64::new(10).unwrap());
    /// s.add(7, 0, 0, 2).unwrap(); // shard 3
    /// s.add(8, 1, 0, 3).unwrap(); // shard 0
    /// assert_eq!(s.sum(1, 0), 5);
    /// ```
    pub fn add(&self, hint: usize, now: u64, counter: usize, n: u64) -> Result<(), SharedAddError> {
        self.shared(hint).add(now, counter, n)
    }

    /// Total of `counter` over the live windows at `now`, all shards.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
    /// let mut w = s.claim(0).unwrap();
    /// w.add(3, 0, 4).unwrap();
    /// s.add(1, 5, 0, 1).unwrap();
    /// assert_eq!(s.sum(9, 0), 5);
    /// ```
    #[must_use]
    pub fn sum(&self, now: u64, counter: usize) -> u64 {
        self.shards
            .iter()
            .map(|s| s.array.sum(now, counter))
            .fold(0, u64::saturating_add)
    }

    /// Totals of every counter over the live windows at `now`, all shards.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 2, 2>::new(NonZeroU64::new(10).unwrap());
    /// s.add(0, 1, 1, 9).unwrap();
    /// assert_eq!(s.sums(1), [0, 9]);
    /// ```
    #[must_use]
    pub fn sums(&self, now: u64) -> [u64; C] {
        let mut totals = [0u64; C];
        for shard in &self.shards {
            add_counts(&mut totals, shard.array.sums(now));
        }
        totals
    }

    /// The live windows at `now` that any shard holds, oldest first, each
    /// with the counts of all shards added up.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
    /// s.add(0, 3, 0, 1).unwrap();
    /// s.add(1, 14, 0, 2).unwrap();
    /// s.add(0, 15, 0, 3).unwrap();
    /// let w = s.windows(15);
    /// assert_eq!((w[0].start, w[0].counts, w[1].start, w[1].counts), (0, [1], 10, [5]));
    /// ```
    #[must_use]
    pub fn windows(&self, now: u64) -> heapless::Vec<Window<C>, N> {
        let mut out: heapless::Vec<Window<C>, N> = heapless::Vec::new();
        for id in self.shards[0].array.live(now) {
            let mut merged: Option<Window<C>> = None;
            for shard in &self.shards {
                if let Some(w) = shard.array.read_window(id) {
                    let m = merged.get_or_insert(Window {
                        start: w.start,
                        counts: [0; C],
                    });
                    add_counts(&mut m.counts, w.counts);
                }
            }
            if let Some(w) = merged {
                // At most N live ids: never over capacity.
                let _ = out.push(w);
            }
        }
        out
    }
}

/// Shared adds into a [`Sharded`] array, from any thread, starting at one
/// shard ([`Sharded::shared`]).
///
/// ```
/// # use core::num::NonZeroU64;
/// let s = leaparray::shard::Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
/// let a = s.shared(0);
/// let b = a; // Copy
/// a.add(1, 0, 1).unwrap();
/// b.add(2, 0, 1).unwrap();
/// assert_eq!((a.hint(), s.sum(2, 0)), (0, 2));
/// ```
#[derive(Clone, Copy)]
pub struct SharedAdder<'a, const N: usize, const C: usize, const S: usize> {
    sharded: &'a Sharded<N, C, S>,
    hint: usize,
}

impl<const N: usize, const C: usize, const S: usize> SharedAdder<'_, N, C, S> {
    /// The hint this handle was made with.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 2>::new(NonZeroU64::new(10).unwrap());
    /// assert_eq!(s.shared(5).hint(), 5);
    /// ```
    #[must_use]
    pub const fn hint(&self) -> usize {
        self.hint
    }

    /// Adds `n` to `counter` in the window of `now`, in the shard
    /// `hint % S`, or the next one not claimed by a writer. The exact
    /// compare-and-swap path of [`LeapArray::add`], with its errors;
    /// [`SharedAddError::NoFreeShard`] if every shard is claimed. While it runs, a
    /// claim of its shard fails with [`ClaimError::Shared`]: it announces
    /// itself on the shard's state word with a `fetch_add` before the add and
    /// a `fetch_sub` after it, two atomic read-modify-writes more than
    /// `LeapArray::add` (`benches/README.md` compares the two). A
    /// thread that adds all the time should claim a shard instead.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// use leaparray::shard::{SharedAddError, Sharded};
    /// let s = Sharded::<2, 1, 1>::new(NonZeroU64::new(10).unwrap());
    /// s.shared(0).add(1, 0, 1).unwrap();
    /// let _w = s.claim(0).unwrap();
    /// assert_eq!(s.shared(0).add(1, 0, 1), Err(SharedAddError::NoFreeShard));
    /// ```
    pub fn add(&self, now: u64, counter: usize, n: u64) -> Result<(), SharedAddError> {
        for k in 0..S {
            let shard = &self.sharded.shards[(self.hint % S + k) % S];
            // ORDERING: Acquire pairs with the Release of a writer's `Drop`
            // (its adds happen before ours).
            let state = shard.state.fetch_add(1, Ordering::Acquire);
            if state & CLAIMED == 0 {
                let added = shard.array.add(now, counter, n);
                // ORDERING: Release pairs with the Acquire of the next
                // `claim`: this add happens before its writes.
                shard.state.fetch_sub(1, Ordering::Release);
                return Ok(added?);
            }
            // Claimed: take the announcement back, try the next shard.
            shard.state.fetch_sub(1, Ordering::Relaxed);
        }
        Err(SharedAddError::NoFreeShard)
    }
}

impl<const N: usize, const C: usize, const S: usize> core::fmt::Debug for SharedAdder<'_, N, C, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedAdder")
            .field("hint", &self.hint)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const C: usize, const S: usize> defmt::Format for SharedAdder<'_, N, C, S> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "SharedAdder {{ hint: {=usize} }}", self.hint);
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const C: usize, const S: usize> defmt::Format for Sharded<N, C, S> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Sharded {{ shards: {=usize}, buckets: {=usize}, counters: {=usize}, window: {=u64} }}",
            S,
            N,
            C,
            self.window
        );
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const C: usize> defmt::Format for ShardWriter<'_, N, C> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ShardWriter {{ index: {=usize} }}", self.index);
    }
}

impl<const N: usize, const C: usize> Shard<N, C> {
    const_fn_unless_loom! {
        fn new(window: NonZeroU64) -> Self {
            Shard {
                array: LeapArray::new(window),
                state: atomic_u64(0),
            }
        }
    }
}

/// The single writer of one claimed shard. `Send` (move it to the thread
/// that owns the queue), not `Clone`, and it adds through `&mut self`:
/// exactly one thread can add through it, and the compiler can keep its
/// window and running counts in registers across a loop. Dropping it
/// returns the shard.
///
/// ```compile_fail,E0596
/// # use core::num::NonZeroU64;
/// let s = leaparray::shard::Sharded::<2, 1, 1>::new(NonZeroU64::new(1).unwrap());
/// let w = s.claim(0).unwrap();
/// let shared = &w;
/// shared.add(1, 0, 1).unwrap(); // adds need the handle itself (`&mut`)
/// ```
pub struct ShardWriter<'a, const N: usize, const C: usize> {
    shard: &'a Shard<N, C>,
    index: usize,
    /// The window this writer last added to, and its running counts.
    cursor: Cursor<'a, C>,
}

/// The writer's current window, its cells and their counts. Only this
/// writer moves the shard's stamps, so while `now` stays in that window the
/// add needs no division and no stamp load. A plain value, passed to and
/// returned from the slow path (never by reference), so that a loop that
/// owns its writer can keep it in registers.
#[derive(Clone, Copy)]
struct Cursor<'a, const C: usize> {
    /// The first tick of the window.
    start: u64,
    /// Its ticks: `now` is in the window iff `now - start < len` (wrapping).
    /// The window length, except for the last window of the `u64` range,
    /// cut at `2^64 - start` (no tick after `u64::MAX` belongs to it); 0
    /// matches no time.
    len: u64,
    /// The cells of the window's bucket.
    cells: &'a [AtomicU64; C],
    /// The window's open generation tag (`CellWord::new(gen, false, 0)`).
    tag: u64,
    /// Invariant: while `now` is in the window, `running[i]` is the count
    /// of cell `i` of that window, and the cell holds exactly
    /// `tag | running[i]`: the writer read the counts when it entered the
    /// window (`Bucket::enter_single_writer`), and since then only it has
    /// written the cells (the shard is claimed). So an add stores the new
    /// count without loading the cell.
    running: [u64; C],
}

impl<const N: usize, const C: usize> ShardWriter<'_, N, C> {
    /// Adds `n` to `counter` of the window of `now` in this shard, with one
    /// plain store: no read-modify-write, and no load of the shared word
    /// (the writer keeps each counter's running count of its current
    /// window). The same results as [`LeapArray::add`]: `Stale` if the shard
    /// already holds a newer window in that bucket, `NoSuchCounter`,
    /// `Saturated`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 1>::new(NonZeroU64::new(10).unwrap());
    /// let mut w = s.claim(0).unwrap();
    /// w.add(25, 0, 1).unwrap();
    /// assert_eq!(w.add(5, 0, 1), Err(leaparray::AddError::Stale));
    /// assert_eq!(s.sum(25, 0), 1);
    /// ```
    #[inline(always)]
    pub fn add(&mut self, now: u64, counter: usize, n: u64) -> Result<(), AddError> {
        let c = &mut self.cursor;
        if now.wrapping_sub(c.start) < c.len {
            if let (Some(cell), Some(running)) = (c.cells.get(counter), c.running.get_mut(counter))
            {
                let have = *running;
                if n <= MAX_COUNT - have {
                    *running = have + n;
                    // ORDERING: Release, as every cell store: a reader that
                    // sees this count sees the stamp of its window.
                    cell.store(c.tag | (have + n), Ordering::Release);
                    return Ok(());
                }
            }
        }
        let (cursor, added) = Self::add_slow(self.shard, self.cursor, now, counter, n);
        self.cursor = cursor;
        added
    }

    /// `add` when `now` is not in the writer's current window (find, and if
    /// needed roll to, its window and enter it), when `counter` does not
    /// exist, or when the count would pass `MAX_COUNT`.
    #[cold]
    #[inline(never)]
    fn add_slow<'a>(
        shard: &'a Shard<N, C>,
        mut c: Cursor<'a, C>,
        now: u64,
        counter: usize,
        n: u64,
    ) -> (Cursor<'a, C>, Result<(), AddError>) {
        if counter >= C {
            return (c, Err(AddError::NoSuchCounter));
        }
        if now.wrapping_sub(c.start) >= c.len {
            let window = shard.array.window();
            let id = now / window;
            let entered = match shard.array.enter_single_writer(id) {
                Ok(entered) => entered,
                Err(e) => return (c, Err(e)),
            };
            let start = id * window;
            c = Cursor {
                start,
                len: match start.checked_add(window) {
                    Some(_) => window,
                    None => start.wrapping_neg(),
                },
                cells: entered.cells,
                tag: entered.tag,
                running: entered.counts,
            };
        }
        let (count, saturated) = CellOp::Add(n).apply(c.running[counter], MAX_COUNT);
        c.running[counter] = count;
        c.cells[counter].store(c.tag | count, Ordering::Release);
        let added = if saturated {
            Err(AddError::Saturated)
        } else {
            Ok(())
        };
        (c, added)
    }

    /// The index of the claimed shard.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 2>::new(NonZeroU64::new(1).unwrap());
    /// assert_eq!(s.claim(1).unwrap().index(), 1);
    /// ```
    #[must_use]
    pub const fn index(&self) -> usize {
        self.index
    }

    /// Returns the shard (the same as dropping the handle).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// let s = leaparray::shard::Sharded::<2, 1, 1>::new(NonZeroU64::new(1).unwrap());
    /// s.claim(0).unwrap().release();
    /// assert!(s.claim(0).is_ok());
    /// ```
    pub fn release(self) {}
}

impl<const N: usize, const C: usize> Drop for ShardWriter<'_, N, C> {
    fn drop(&mut self) {
        // ORDERING: Release, pairs with the Acquire of the next `claim` or
        // shared add: this writer's adds happen before theirs. Only the bit
        // is cleared: shared adds that found the shard claimed may still
        // hold a count they are about to take back.
        self.shard.state.fetch_sub(CLAIMED, Ordering::Release);
    }
}

impl<const N: usize, const C: usize> core::fmt::Debug for ShardWriter<'_, N, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShardWriter")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<const N: usize, const C: usize, const S: usize> core::fmt::Debug for Sharded<N, C, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sharded")
            .field("shards", &S)
            .field("buckets", &N)
            .field("counters", &C)
            .field("window", &self.window())
            .finish_non_exhaustive()
    }
}
