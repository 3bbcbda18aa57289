//! The one place that names an atomic implementation.
//!
//! Everything else in the crate imports `crate::sync`, so the same source is
//! built against:
//! - `core::sync::atomic` (default, targets with native 64-bit atomics),
//! - `portable_atomic` (feature `portable-atomic`, targets without them),
//! - `loom` (`RUSTFLAGS="--cfg leaparray_loom"`, model checking in `loom-tests/`).
//!
//! It also holds [`AtomicWord`], the one interface through which bucket
//! words of either width are read and written.

#[cfg(leaparray_loom)]
#[allow(unused_imports)] // AtomicBool: only the std clocks use it
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Loom builds only: the mutex behind the retirement log that lets the
/// models check the final count of every retired window.
#[cfg(leaparray_loom)]
pub(crate) use loom::sync::Mutex;

#[cfg(all(not(leaparray_loom), feature = "portable-atomic"))]
#[allow(unused_imports)] // AtomicBool: only the std clocks use it
pub(crate) use portable_atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

#[cfg(all(not(leaparray_loom), not(feature = "portable-atomic")))]
#[allow(unused_imports)] // AtomicBool: only the std clocks use it
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The 128-bit word of [`Shape::Word128`](crate::gate::Shape::Word128)
/// gates, on the targets where portable-atomic implements it with
/// lock-free instructions (x86-64 `cmpxchg16b`, detected at run time unless
/// the build enables it; AArch64 `ldxp`/`stxp` or `casp`). Loom has no
/// 128-bit atomic: under loom every gate that would use it uses buckets.
#[cfg(all(
    not(leaparray_loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(crate) use portable_atomic::AtomicU128;

/// Elsewhere (and under loom): a 128-bit word that cannot exist, so that
/// code matching on a gate's shapes needs no `cfg` (no gate takes that
/// shape there).
#[cfg(not(all(
    not(leaparray_loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(crate) enum AtomicU128 {}

/// A 128-bit atomic on every target: portable-atomic's (lock-free on
/// x86-64 and AArch64; on other targets see the `portable-atomic`
/// dependency in `Cargo.toml` and [`PORTABLE_U128_INTERRUPT_SAFE`]). Unlike
/// [`AtomicU128`], which exists only where it is lock-free, this one
/// always exists; a user that may run in an interrupt or signal handler
/// checks [`PORTABLE_U128_INTERRUPT_SAFE`] at compile time. What its 128
/// bits mean is its user's: the keyed tables' slots
/// (`crate::keyed::slot::Slot`), the circuit breaker's state word.
#[cfg(not(leaparray_loom))]
pub(crate) use portable_atomic::AtomicU128 as PortableAtomicU128;

/// Whether a [`PortableAtomicU128`] may be used where an interrupt or
/// signal handler can interrupt its user: lock-free (x86-64, where
/// portable-atomic uses `cmpxchg16b`, detected at run time: a CPU without
/// it gets portable-atomic's spin lock, which this compile-time answer
/// cannot see (GUARANTEES.md, section 4); AArch64; any
/// target where portable-atomic says so, which includes masking interrupts
/// on single-core chips with `unsafe-assume-single-core`), a critical
/// section on targets without CAS (`portable-atomic-critical-section`), or
/// accepted by name with `portable-atomic-fallback-not-interrupt-safe`.
/// Elsewhere it is portable-atomic's global spin lock, and its users'
/// constructors do not compile.
#[cfg(not(leaparray_loom))]
pub(crate) const PORTABLE_U128_INTERRUPT_SAFE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
        || PortableAtomicU128::is_always_lock_free()
        // No CAS at all: portable-atomic goes through `critical-section`
        // for every width (an interrupt-safe critical section, by that
        // crate's contract).
        || cfg!(all(
            feature = "portable-atomic-critical-section",
            not(target_has_atomic = "ptr")
        ))
        || cfg!(feature = "portable-atomic-fallback-not-interrupt-safe");

/// Loom builds: the modelled word holds no lock a handler could meet.
#[cfg(leaparray_loom)]
pub(crate) const PORTABLE_U128_INTERRUPT_SAFE: bool = true;

/// Loom builds: loom has no 128-bit atomic, so [`PortableAtomicU128`] is a
/// word behind a loom mutex. Each operation is one critical section, so it
/// is as atomic as a real compare-and-swap, and lock/unlock give it
/// acquire/release: the protocols built on it (`crate::keyed::slot`, the
/// breaker) need no more than that, and loom explores every interleaving
/// of these sections.
#[cfg(leaparray_loom)]
pub(crate) struct PortableAtomicU128(loom::sync::Mutex<u128>);

#[cfg(leaparray_loom)]
impl PortableAtomicU128 {
    pub(crate) fn new(v: u128) -> Self {
        PortableAtomicU128(loom::sync::Mutex::new(v))
    }

    pub(crate) fn load(&self, _: Ordering) -> u128 {
        *self.0.lock().unwrap()
    }

    pub(crate) fn compare_exchange(
        &self,
        cur: u128,
        new: u128,
        _: Ordering,
        _: Ordering,
    ) -> Result<u128, u128> {
        let mut v = self.0.lock().unwrap();
        if *v == cur {
            *v = new;
            Ok(cur)
        } else {
            Err(*v)
        }
    }
}

#[cfg(all(
    not(leaparray_loom),
    not(feature = "portable-atomic"),
    not(target_has_atomic = "64")
))]
compile_error!(
    "leaparray: this target has no native 64-bit atomics. Enable the `portable-atomic` \
     feature; on targets without compare-and-swap (e.g. thumbv6m-none-eabi, \
     riscv32imc-unknown-none-elf) enable `portable-atomic-critical-section` and link a \
     `critical-section` implementation."
);

// portable-atomic's `AtomicU64` on a target that has 32-bit compare-and-swap
// but no 64-bit atomics (thumbv7m, thumbv7em, riscv32imac) is, by default, a
// global spin lock: an interrupt handler that touches the array while the
// code it interrupted holds the lock spins forever (reproduced in QEMU).
// Refuse to build that unless the binary made it interrupt-safe or the user
// says, by name, that no interrupt handler uses the crate.
#[cfg(all(
    not(leaparray_loom),
    feature = "portable-atomic",
    target_has_atomic = "32",
    not(feature = "portable-atomic-fallback-not-interrupt-safe")
))]
const _: () = assert!(
    AtomicU64::is_always_lock_free(),
    "leaparray: on this target portable-atomic's AtomicU64 is a global spin lock, and an \
     interrupt handler that uses the array while the interrupted code holds the lock \
     deadlocks. In the final binary enable portable-atomic's `unsafe-assume-single-core` \
     feature (single-core chips in privileged mode: operations mask interrupts instead) or \
     `unsafe-assume-privileged`; or, if no interrupt handler ever uses leaparray, enable \
     leaparray's `portable-atomic-fallback-not-interrupt-safe` feature."
);

/// A bucket word: an `AtomicU64` or, for 32-bit words, an `AtomicU32`,
/// read and written as `u64` values (a 32-bit word's values always fit in
/// 32 bits). `pub` in this private module: nameable by the sealed `Width`
/// trait, reachable by no one outside. Each method forwards its orderings
/// unchanged; the protocol that chooses them is argued in `crate::array::bucket`.
pub trait AtomicWord: Send + Sync {
    fn load_word(&self, o: Ordering) -> u64;
    fn store_word(&self, v: u64, o: Ordering);
    fn cas_word(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64>;
    fn cas_word_weak(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64>;
}

impl AtomicWord for AtomicU64 {
    #[inline(always)]
    fn load_word(&self, o: Ordering) -> u64 {
        self.load(o)
    }
    #[inline(always)]
    fn store_word(&self, v: u64, o: Ordering) {
        self.store(v, o);
    }
    #[inline(always)]
    fn cas_word(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        self.compare_exchange(cur, new, s, f)
    }
    #[inline(always)]
    fn cas_word_weak(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        self.compare_exchange_weak(cur, new, s, f)
    }
}

impl AtomicWord for AtomicU32 {
    #[inline(always)]
    fn load_word(&self, o: Ordering) -> u64 {
        u64::from(self.load(o))
    }
    #[inline(always)]
    fn store_word(&self, v: u64, o: Ordering) {
        self.store(v as u32, o);
    }
    #[inline(always)]
    fn cas_word(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        self.compare_exchange(cur as u32, new as u32, s, f)
            .map(u64::from)
            .map_err(u64::from)
    }
    #[inline(always)]
    fn cas_word_weak(&self, cur: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
        self.compare_exchange_weak(cur as u32, new as u32, s, f)
            .map(u64::from)
            .map_err(u64::from)
    }
}

/// `AtomicU64::new`, usable in a `const fn` outside loom (loom's atomics
/// are not const-constructible).
#[cfg(not(leaparray_loom))]
pub(crate) const fn atomic_u64(v: u64) -> AtomicU64 {
    AtomicU64::new(v)
}

/// `AtomicU64::new` for loom.
#[cfg(leaparray_loom)]
pub(crate) fn atomic_u64(v: u64) -> AtomicU64 {
    AtomicU64::new(v)
}

/// `AtomicU32::new`, usable in a `const fn` outside loom.
#[cfg(not(leaparray_loom))]
pub(crate) const fn atomic_u32(v: u32) -> AtomicU32 {
    AtomicU32::new(v)
}

/// `AtomicU32::new` for loom.
#[cfg(leaparray_loom)]
pub(crate) fn atomic_u32(v: u32) -> AtomicU32 {
    AtomicU32::new(v)
}

/// Declares a `const fn`, or a plain `fn` under loom (whose atomics are not
/// const-constructible), from one body.
macro_rules! const_fn_unless_loom {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[cfg(not(leaparray_loom))]
        $vis const fn $name($self $(, $arg: $ty)*) -> $ret $body

        $(#[$meta])*
        #[cfg(leaparray_loom)]
        $vis fn $name($self $(, $arg: $ty)*) -> $ret $body
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[cfg(not(leaparray_loom))]
        $vis const fn $name($($arg: $ty),*) -> $ret $body

        $(#[$meta])*
        #[cfg(leaparray_loom)]
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident<const $g:ident: $gt:ty>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[cfg(not(leaparray_loom))]
        $vis const fn $name<const $g: $gt>($($arg: $ty),*) -> $ret $body

        $(#[$meta])*
        #[cfg(leaparray_loom)]
        $vis fn $name<const $g: $gt>($($arg: $ty),*) -> $ret $body
    };
}
pub(crate) use const_fn_unless_loom;

/// `[$e; $n]` for a non-`Copy` element: an inline-`const` repeat outside
/// loom (so a `const fn` can build it), `core::array::from_fn` under loom
/// (whose atomics are not const-constructible).
macro_rules! array_of {
    ($n:expr, $e:expr) => {{
        #[cfg(not(leaparray_loom))]
        let array = [const { $e }; $n];
        #[cfg(leaparray_loom)]
        let array = core::array::from_fn(|_| $e);
        array
    }};
}
pub(crate) use array_of;

/// Loom builds only: a `SeqCst` fence standing for the total order that the
/// protocol's `SeqCst` accesses provide on real targets, which loom models
/// as acquire/release only (loom issue #180). Elsewhere: nothing.
#[inline(always)]
pub(crate) fn loom_sc_order() {
    #[cfg(leaparray_loom)]
    fence(Ordering::SeqCst);
}
