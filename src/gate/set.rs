//! [`GateSet`]: several limits at once, all or nothing.
//!
//! A set admits a request only if every member gate admits it, and leaves
//! nothing booked in any member when one refuses. It first asks every
//! member for room without booking ([`Gate::remaining`]), so a request
//! that one of them would refuse books nothing and changes nothing
//! anywhere. Then it books in each member in order; if a member refuses
//! (another request took the room in between), it takes back what it
//! booked in the members before (a word it booked into may then have moved
//! on to a newer window, with its counts as they were).
//!
//! Each member's own admission keeps that member's limit, and taking a
//! booking back only lowers counts, so no member ever counts more than its
//! limit. Between a booking and its cancellation, that member's other
//! callers count it:
//!
//! ```text
//!  Thread 1 (set of A and B)         Thread 2 (A alone)     (A: 1 left, B: 1 left)
//!  --------------------------------  ---------------------------------
//!  room in A and B: yes
//!  book in A: Pass
//!                                    A: full, Block
//!  (Thread 3 takes B's last permit)
//!  book in B: Block; cancel in A
//! ```
//!
//! Thread 2's refusal is a false rejection, as in the bucket gate: it can
//! happen only while a set request books in a member and a later member
//! refuses it, so only when those members are both within the size of the
//! concurrent requests of their limits. A set's own decisions are never
//! over any limit and never leave a partial booking behind.
//!
//! Name each gate once. A gate named twice is asked for its `n` twice:
//! the room check sees each `n` alone, the second booking can then be
//! refused, and taking the first back leaves that gate's counts as they
//! were but may have moved its newest window on, so "changes nothing"
//! does not hold for it. (`GateSet::new` is `const` and cannot compare the
//! references: a check would cost every decision.)

use crate::gate::decision::Decision;
use crate::gate::packed::Outcome;
use crate::gate::Gate;

/// The most times [`GateSet::retry_after`] tries: each try after the
/// first starts past a stretch of time in which some member refuses, and
/// from `now` on, with nothing else arriving, a member has at most one
/// such stretch more than the windows it lent ahead (a `Gate<N>` lends at
/// most `N`). So for word-shaped members the sum over the members of
/// (windows lent ahead + 1) tries suffice. A bucket-shaped member's
/// answers at later times are not known to settle that way (a fuzzed set
/// with one kept moving), so the tries are bounded: past 64 the answer is
/// `None`, "no time found", not "never".
///
/// ```
/// assert_eq!(leaparray::gate::SEARCH_STEPS, 64);
/// ```
pub const SEARCH_STEPS: usize = 64;

mod private {
    /// Makes [`Member`](super::Member)'s methods uncallable outside the
    /// crate: only a set books and cancels through them.
    #[derive(Debug, Clone, Copy)]
    pub struct Token;
}

/// A gate that can be part of a [`GateSet`]: every [`Gate<N>`](Gate), of
/// any `N`. Sealed.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::gate::Member;
/// use leaparray::Gate;
/// let per_second: &dyn Member = &Gate::<10>::new(NonZeroU64::new(100).unwrap(), 10);
/// assert_eq!(per_second.limit(), 10);
/// ```
pub trait Member: Sync {
    /// The member's limit.
    fn limit(&self) -> u64;
    /// [`Gate::remaining`].
    fn remaining(&self, now: u64) -> u64;
    /// [`Gate::retry_after`].
    fn retry_after(&self, now: u64, n: u64) -> Option<u64>;
    #[doc(hidden)]
    fn book(&self, token: private::Token, now: u64, n: u64) -> Option<u64>;
    #[doc(hidden)]
    fn cancel(&self, token: private::Token, window: u64, n: u64);
}

impl<const N: usize> Member for Gate<N> {
    fn limit(&self) -> u64 {
        Gate::limit(self)
    }
    fn remaining(&self, now: u64) -> u64 {
        Gate::remaining(self, now)
    }
    fn retry_after(&self, now: u64, n: u64) -> Option<u64> {
        Gate::retry_after(self, now, n)
    }
    fn book(&self, _: private::Token, now: u64, n: u64) -> Option<u64> {
        match Gate::book(self, now, n, false) {
            Outcome::Booked(window) => Some(window),
            _ => None,
        }
    }
    fn cancel(&self, _: private::Token, window: u64, n: u64) {
        Gate::cancel(self, window, n);
    }
}

/// `K` gates that admit together or not at all: 10 per second and 1,000
/// per minute; requests and bytes.
///
/// ```
/// use core::num::NonZeroU64;
/// use leaparray::{Decision, Gate, GateSet};
///
/// // Time in ms: 10 per second (10 windows of 100 ms), 15 per minute.
/// static PER_SECOND: Gate<10> = Gate::new(NonZeroU64::new(100).unwrap(), 10);
/// static PER_MINUTE: Gate<6> = Gate::new(NonZeroU64::new(10_000).unwrap(), 15);
/// static BOTH: GateSet<'static, 2> = GateSet::new([&PER_SECOND, &PER_MINUTE]);
///
/// assert_eq!(BOTH.try_acquire(0, 10), Decision::Pass);
/// assert_eq!(BOTH.try_acquire(500, 1), Decision::Block); // the second is full
/// assert_eq!(BOTH.try_acquire(1_000, 6), Decision::Block); // the minute is not
/// assert_eq!(PER_SECOND.remaining(1_000), 10, "the refusal left nothing booked");
/// assert_eq!(BOTH.try_acquire(1_000, 5), Decision::Pass);
/// assert_eq!(BOTH.retry_after(1_000, 1), Some(59_000));
/// ```
#[derive(Clone, Copy)]
pub struct GateSet<'a, const K: usize> {
    gates: [&'a dyn Member; K],
}

impl<'a, const K: usize> GateSet<'a, K> {
    /// The set of `gates` (`const`, so it can live in a `static`).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Gate, GateSet};
    /// let (a, b) = (Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3), Gate::<4>::new(NonZeroU64::new(250).unwrap(), 5));
    /// let set = GateSet::new([&a as &dyn leaparray::gate::Member, &b]);
    /// assert_eq!(set.len(), 2);
    /// ```
    #[must_use]
    pub const fn new(gates: [&'a dyn Member; K]) -> Self {
        GateSet { gates }
    }

    /// The number of gates.
    ///
    /// ```
    /// # use leaparray::GateSet;
    /// assert_eq!(GateSet::<0>::new([]).len(), 0);
    /// ```
    #[must_use]
    pub const fn len(&self) -> usize {
        K
    }

    /// Whether the set has no gates (it then admits everything).
    ///
    /// ```
    /// # use leaparray::GateSet;
    /// assert!(GateSet::<0>::new([]).is_empty());
    /// ```
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        K == 0
    }

    /// Admits `n` permits in every gate, or in none.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Gate, GateSet};
    /// let (a, b) = (Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3), Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5));
    /// let set = GateSet::new([&a as &dyn leaparray::gate::Member, &b]);
    /// assert_eq!(set.try_acquire(0, 3), Decision::Pass);
    /// assert_eq!(set.try_acquire(0, 1), Decision::Block);
    /// assert_eq!((a.remaining(0), b.remaining(0)), (0, 2));
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire(&self, now: u64, n: u64) -> Decision {
        self.try_acquire_each(now, [n; K])
    }

    /// Admits `n[i]` permits in gate `i`, for every `i`, or nothing
    /// anywhere (requests in one gate, bytes in another).
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Decision, Gate, GateSet};
    /// let requests = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 100);
    /// let bytes = Gate::<2>::new(NonZeroU64::new(500).unwrap(), 4_096);
    /// let set = GateSet::new([&requests as &dyn leaparray::gate::Member, &bytes]);
    /// assert_eq!(set.try_acquire_each(0, [1, 4_000]), Decision::Pass);
    /// assert_eq!(set.try_acquire_each(0, [1, 100]), Decision::Block);
    /// assert_eq!(requests.remaining(0), 99);
    /// ```
    #[must_use = "a Pass has already booked its permits"]
    pub fn try_acquire_each(&self, now: u64, n: [u64; K]) -> Decision {
        let token = private::Token;
        // Every member first, the first one too: a request that one of them
        // would refuse changes nothing anywhere (a booking taken back
        // could have moved a member's newest window on).
        if self.gates.iter().zip(n).any(|(g, n)| g.remaining(now) < n) {
            return Decision::Block;
        }
        let mut booked = [0u64; K];
        for (i, (gate, &ni)) in self.gates.iter().zip(&n).enumerate() {
            match gate.book(token, now, ni) {
                Some(window) => booked[i] = window,
                None => {
                    for j in (0..i).rev() {
                        self.gates[j].cancel(token, booked[j], n[j]);
                    }
                    return Decision::Block;
                }
            }
        }
        Decision::Pass
    }

    /// Ticks until `n` permits would pass in every gate at once if nothing
    /// else arrived: the first such time, `None` if some gate never admits
    /// `n` (or no such time is found in [`SEARCH_STEPS`] steps, each past a
    /// time when some gate refuses). Often the longest of the gates' [`Gate::retry_after`], but
    /// not always: a gate that lent permits to a future window
    /// ([`Gate::try_acquire_prioritized`]) can have room now and none when
    /// that window starts.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Gate, GateSet};
    /// let (a, b) = (Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3), Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5));
    /// let set = GateSet::new([&a as &dyn leaparray::gate::Member, &b]);
    /// assert_eq!(set.retry_after(0, 4), None);
    /// ```
    #[must_use]
    pub fn retry_after(&self, now: u64, n: u64) -> Option<u64> {
        self.retry_after_each(now, [n; K])
    }

    /// [`retry_after`](Self::retry_after) with `n[i]` permits in gate `i`.
    ///
    /// ```
    /// # use core::num::NonZeroU64;
    /// # use leaparray::{Gate, GateSet};
    /// let (a, b) = (Gate::<2>::new(NonZeroU64::new(500).unwrap(), 3), Gate::<2>::new(NonZeroU64::new(500).unwrap(), 5));
    /// let set = GateSet::new([&a as &dyn leaparray::gate::Member, &b]);
    /// assert_eq!(set.retry_after_each(0, [3, 5]), Some(0));
    /// ```
    #[must_use]
    pub fn retry_after_each(&self, now: u64, n: [u64; K]) -> Option<u64> {
        // Room in a member need not last: one that borrowed has room now,
        // none when the borrowed window starts, and room again after it.
        // So the answer is the first time at which every member has room.
        // From a time `t` at which some member refuses, no time before
        // `t + wait` can pass (`wait` the longest of the members' first
        // times with room from `t`), so that is the next time to try; `t`
        // only grows, and once every borrowed window has slid out room only
        // grows: a step per window a member lent ahead of `now`, plus one.
        // The steps are bounded all the same ([`SEARCH_STEPS`]), so a
        // decision's cost stays bounded whatever the members answer.
        let mut t = now;
        for _ in 0..SEARCH_STEPS {
            let mut wait = 0;
            for (g, &n) in self.gates.iter().zip(&n) {
                wait = wait.max(g.retry_after(t, n)?);
            }
            if wait == 0 {
                return Some(t - now);
            }
            t = t.checked_add(wait)?;
        }
        None
    }
}

impl<const K: usize> core::fmt::Debug for GateSet<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut l = f.debug_list();
        for g in &self.gates {
            l.entry(&format_args!("limit {}", g.limit()));
        }
        l.finish()
    }
}
