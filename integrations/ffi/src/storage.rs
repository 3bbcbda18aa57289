//! Objects in storage the C program provides: a state word, then the Rust
//! value. Every `unsafe` block of the crate that touches an object is here.
//!
//! # The layout
//!
//! Each C storage type (`leap_gate2_t`, ...) is an array of bytes with the
//! size and alignment the header names. The bytes hold a [`Slot<T>`]: a
//! `repr(C)` struct of an [`AtomicUsize`] state word at offset 0 and the
//! value, a `MaybeUninit<T>` in an `UnsafeCell`, after it. A compile-time
//! assertion per type (`fits`) checks that `Slot<T>` fits the storage in
//! size and alignment on the target being built, that the alignment is at
//! least [`CODES`] (16), and that the type's code is below it, so the
//! header's numbers and the encoding below hold on every target the crate
//! compiles for.
//!
//! The sizes leave room (about a fifth for the gates and counters, 2 KiB
//! for a keyed table's header beside its 48 bytes a slot) so that the
//! core can change its types without changing the ABI; the assertion
//! fails the build if it ever outgrows them.
//!
//! # The state word
//!
//! The state word of the object at address `A` (a multiple of 16: every
//! storage type is aligned to at least [`CODES`], and every call checks
//! the alignment) is one of the sixteen *words of `A`*:
//!
//! ```text
//!  word(A, code) = !(A | code)     code < 16, in the four low bits A leaves zero
//! ```
//!
//! the complement of the address with a [`Code`] in its four low bits:
//!
//! - `Code::Gate2` ... `Code::ShardWriter` (one per type): READY, "a value
//!   of this type initialised at `A`";
//! - `Code::InUse`: the one caller of an exclusive object (a single-writer
//!   table, a shard writer) is running, whatever its type;
//! - `Code::Building`: an `init` is writing the value, or a `take` moving
//!   it out, whatever the type;
//! - two codes are spare: the crate never writes them.
//!
//! A value that is none of `A`'s words means "no object here": zeroed
//! storage, a copy from elsewhere, garbage, and 0, which `take` stores
//! after moving a value out.
//!
//! **The invariant.** While any reference to the value at `A` exists, or
//! is about to be made, the state word is one of `A`'s words; and it is
//! READY of type `T` only if a `T` is initialised there. Every function
//! below keeps it: a reference is made only after reading READY of its own
//! type (`shared`: a load; `exclusive`, `take`: a compare-and-swap from
//! READY to IN_USE or BUILDING, held until the last use), a READY of a
//! shared type is never changed by this crate, and `init` claims the word
//! only from a value that is none of `A`'s words (below). The C program's
//! part: it leaves the bytes alone while an object lives in them.
//!
//! **What the encoding guarantees** (exactly, for every address; the unit
//! test `state_words_are_distinct` checks the cases):
//!
//! - Distinct per address: two addresses `A != B`, both multiples of 16,
//!   share no word (`A | c == B | c'` needs equal high bits, so `A == B`).
//!   So an object memcpy'd to any other address, in any state, is never
//!   an object there, of any type: every call there returns
//!   `LEAP_ERR_UNINIT` and `init` takes it. No address difference can
//!   make one type read as another, because the type sits in the bits no
//!   aligned address difference changes.
//! - Distinct per type: at one address, each type's READY differs from
//!   every other type's and from IN_USE and BUILDING, so another type's
//!   object reads as not initialised (`shared`, `exclusive`), and `init`
//!   recognises every type's object by the high bits alone.
//! - Never zero: `word(A, c) == 0` needs `A | c == usize::MAX`, an object
//!   in the top 16 bytes of the address space, where no storage type (128
//!   bytes or more) fits. Zeroed storage, and storage a value was taken
//!   from (0), hold no object. Nor is any word all ones: that needs `A ==
//!   0`, the null pointer, which every call refuses.
//! - Garbage: bytes the crate never wrote at `A` are taken for a `T`
//!   initialised there only if the word equals the one value `word(A,
//!   code_T)`: for random bits, one value in 2^64 (2^32 on 32-bit targets).
//!   `init` refuses the sixteen words of `A` (one in 2^60; 2^28 on 32-bit),
//!   saying `LEAP_ERR_ALREADY_INIT` or `LEAP_ERR_BUSY`: zero the storage.
//!   Data that is not random (a pointer of the wrong type into the middle
//!   of a live table, whose bytes there may be keys a peer chose) is read
//!   the same way and is not covered by that figure.
//!
//! # The protocol: init racing a use
//!
//! `init` loads the word; if it is one of `A`'s words (any type's object,
//! in any state), it returns at once and writes nothing:
//! `LEAP_ERR_BUSY` for IN_USE and BUILDING, `LEAP_ERR_ALREADY_INIT` for
//! the others. Otherwise it claims the word with a compare-and-swap from
//! the value it read to BUILDING, writes the value with `ptr::write` (no
//! reference to the uninitialised bytes is ever made), then stores READY
//! with `Release`. A use loads the word with `Acquire` and makes a
//! reference to the value only if it reads its own type's READY:
//!
//! ```text
//!  Thread 1: init(p)                         Thread 2: use(p)
//!  ----------------------------------------  ----------------------------------------
//!  state: load 0, CAS 0 -> BUILDING
//!  ptr::write(value, T::new(..))
//!                                            state: load BUILDING (Acquire):
//!                                            -> LEAP_ERR_UNINIT, no reference made
//!  state: store READY (Release)
//!                                            state: load READY (Acquire): the write
//!                                            of the value happens before; &T
//! ```
//!
//! Init racing a use of another type: the storage holds a live gate, and
//! a wrong-typed `leap_array_init` runs beside its calls (another thread,
//! or an interrupt handler). Whichever value the init reads, it cannot
//! write while the gate lives:
//!
//! ```text
//!  Thread 1: leap_gate2_init(p), then        Thread 2: leap_array_init(p)
//!            leap_gate2_try_acquire(p)
//!  ----------------------------------------  ----------------------------------------
//!                                            state: load 0: none of p's words
//!  state: load 0, CAS 0 -> BUILDING(p)
//!  ptr::write(Gate), store READY_gate2(p)
//!  state: load READY_gate2(p); &Gate, decide
//!                                            CAS 0 -> BUILDING(p) fails (the word
//!                                            is READY_gate2(p)): LEAP_ERR_BUSY,
//!                                            nothing written
//!                                            (a later leap_array_init(p): load
//!                                            READY_gate2(p), one of p's words:
//!                                            LEAP_ERR_ALREADY_INIT, no CAS)
//! ```
//!
//! The same holds for an exclusive object mid-call: its word is IN_USE(p),
//! one of `p`'s words, so an init of any type (a handler that interrupted
//! the call included) returns `LEAP_ERR_BUSY` and writes nothing. And for
//! two inits of any types: the second finds BUILDING(p) or a READY (or
//! loses the compare-and-swap) and writes nothing.
//!
//! The compare-and-swap succeeds only if the word still holds the value
//! `init` read, which is none of `p`'s words; by the invariant no
//! reference to the value exists then, and none can be made until `init`
//! stores READY. The word may have left that value and come back to it
//! (a `take` stores 0 after an object's life): the `Acquire` of the swap
//! makes the `take`'s read of the old value happen before the new write.
//!
//! # Exclusive objects
//!
//! A single-writer table and a shard writer are used through `&mut T`. A
//! call swaps the word `READY -> IN_USE` (a compare-and-swap, `Acquire`),
//! runs, and stores its READY (`Release`): two calls can never hold `&mut
//! T` at once. The second (another thread, or an interrupt handler that
//! interrupted the owner mid-call) finds IN_USE and gets `LEAP_ERR_BUSY`
//! at once: it never waits, so it cannot deadlock in a handler. IN_USE
//! names no type, so an exclusive call of another type on that storage
//! gets `LEAP_ERR_BUSY` too (a call of a shared type, `LEAP_ERR_UNINIT`):
//! either way nothing is done.
//!
//! # What the C program must do (the header says it too)
//!
//! - Pass storage whose bytes are initialised: static storage (zero), or
//!   automatic and heap storage cleared with `= {0}` or `memset` before
//!   `init`. The crate reads the state word before `init` to tell an
//!   initialised object from one that is not (garbage: above), but bytes C
//!   never wrote are indeterminate, which the Rust side cannot check.
//! - Keep the storage alive and leave its bytes alone while it is
//!   initialised (to use the storage again, zero it when no call on it
//!   can run).
//! - Keep a shards object alive while a writer claimed from it is.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr;

use portable_atomic::AtomicUsize;
use portable_atomic::Ordering::{Acquire, Relaxed, Release};

use crate::status::leap_status_t;

/// What C storage holds: the state word, then the value.
#[repr(C)]
pub(crate) struct Slot<T> {
    state: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// The codes a state word holds in its low bits (module docs, "The state
/// word"): one READY per storage type, and IN_USE and BUILDING for all.
/// Distinct by construction (a repeated discriminant does not compile);
/// each type's is checked below [`CODES`] by its [`fits`] assertion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(usize)]
pub(crate) enum Code {
    /// An exclusive object's one caller is running.
    InUse = 0,
    /// `init` is writing the value, or `take` moving it out.
    Building,
    Gate2,
    Gate4,
    Gate10,
    Keyed64,
    Keyed1k,
    Keyed16k,
    Local64,
    Local1k,
    Local16k,
    Array,
    Shards,
    ShardWriter,
}

/// How many codes the low bits of a state word hold: the least alignment
/// of every storage type, so that no two aligned addresses share a word.
pub(crate) const CODES: usize = 16;

/// The state word that says `code` for the object at `addr` (a multiple of
/// [`CODES`]): the complement of the address with the code in its low bits.
const fn word(addr: usize, code: Code) -> usize {
    !(addr | code as usize)
}

/// Whether `seen` is one of the words of `addr` (any type's object, in any
/// state, or a spare code): its code if so.
fn code_at(seen: usize, addr: usize) -> Option<usize> {
    let code = !seen ^ addr;
    (code < CODES).then_some(code)
}

/// A C storage type and the Rust value its bytes hold.
///
/// # Safety
///
/// `Self` is a `repr(C)` array of bytes with `ALIGN` its alignment, at
/// least `Slot<Value>`'s size, and `ALIGN` at least `Slot<Value>`'s
/// alignment and at least [`CODES`]; `CODE` is this type's alone (each
/// implementation asserts it at compile time with [`fits`]).
pub(crate) unsafe trait Storage {
    /// The Rust value.
    type Value;
    /// The alignment the header names (`LEAP_..._ALIGN`).
    const ALIGN: usize;
    /// Whether the value is used through `&mut` ([`exclusive`], [`take`]),
    /// one caller at a time; else through `&` ([`shared`]). Never both:
    /// each of those functions refuses the other kind at compile time.
    const EXCLUSIVE: bool;
    /// This type's READY code: the state word `word(address, CODE)` says
    /// "a value of this type initialised at this address".
    const CODE: Code;
}

/// Whether `Slot<T>` fits `size` bytes aligned to `align`, and `code` is a
/// type's code that fits a state word's low bits: the compile-time check
/// behind each [`Storage`] implementation.
pub(crate) const fn fits<T>(size: usize, align: usize, code: Code) -> bool {
    core::mem::size_of::<Slot<T>>() <= size
        && core::mem::align_of::<Slot<T>>() <= align
        && size.is_multiple_of(align)
        && align >= CODES
        && (code as usize) < CODES
        && !matches!(code, Code::InUse | Code::Building)
}

/// The checks every call makes on its object pointer: not null, aligned
/// as the header says.
fn checked<S: Storage>(p: *const S) -> Result<*const Slot<S::Value>, leap_status_t> {
    if p.is_null() {
        return Err(leap_status_t::LEAP_ERR_NULL);
    }
    if !p.addr().is_multiple_of(S::ALIGN) {
        return Err(leap_status_t::LEAP_ERR_MISALIGNED);
    }
    Ok(p.cast())
}

/// The state word of the slot at `slot`.
///
/// # Safety
///
/// `slot` comes from [`checked`] (not null, aligned for `Slot<S::Value>`)
/// and points to `size_of::<S>()` bytes the caller may read and that are
/// initialised (the module docs' contract with C), valid for `'a`.
unsafe fn state<'a, T>(slot: *const Slot<T>) -> &'a AtomicUsize {
    // SAFETY: `slot` is aligned for `Slot<T>`, so its first field, an
    // `AtomicUsize` at offset 0 (`repr(C)`), is aligned; its bytes are
    // readable and initialised (the caller's contract). An `AtomicUsize`
    // has every bit pattern valid, and it is only ever accessed atomically
    // by this crate (C leaves the bytes alone while the object is in use),
    // so a shared reference to it is sound even while other threads use
    // the same word. `addr_of!` takes the field's address without making a
    // reference to the whole slot, whose value may be uninitialised.
    unsafe { &*ptr::addr_of!((*slot).state) }
}

/// Checks the arguments with `check`, then writes `build`'s value into the
/// storage at `p`: `LEAP_OK`, or why not (nothing written). The value is
/// built in its own call, straight into the storage's `write`, so that
/// the stack holds as few copies of it as the build profile allows.
///
/// # Safety
///
/// `p` is null, or points to `size_of::<S>()` bytes, initialised, that
/// the C program gave this object (the module docs' contract).
pub(crate) unsafe fn init<S: Storage, P>(
    p: *mut S,
    check: impl FnOnce() -> Result<P, leap_status_t>,
    build: impl FnOnce(P) -> S::Value,
) -> leap_status_t {
    let slot = match checked(p.cast_const()) {
        Ok(slot) => slot.cast_mut(),
        Err(e) => return e,
    };
    let addr = slot.addr();
    // SAFETY: `slot` is checked, and points to the object's bytes.
    let state = unsafe { state(slot) };
    let seen = state.load(Acquire);
    // Any type's object here, in any state: refused, nothing written.
    match code_at(seen, addr) {
        None => {}
        Some(c) if c == Code::InUse as usize || c == Code::Building as usize => {
            return leap_status_t::LEAP_ERR_BUSY
        }
        Some(_) => return leap_status_t::LEAP_ERR_ALREADY_INIT,
    }
    let parameters = match check() {
        Ok(parameters) => parameters,
        Err(e) => return e,
    };
    // ORDERING: Acquire: if another init or a `take` ran here before, its
    // accesses to the value happen before our write.
    if state
        .compare_exchange(seen, word(addr, Code::Building), Acquire, Relaxed)
        .is_err()
    {
        return leap_status_t::LEAP_ERR_BUSY;
    }
    // SAFETY: the value field is inside the object's bytes and aligned
    // (`Slot` is `repr(C)`, `slot` aligned for it). We won the state word
    // from a value that is none of this address's words, so no caller of
    // any type holds a reference to the value (the module docs'
    // invariant) and no other init writes it (it would have to win the
    // same word, now BUILDING). `ptr::write` does not read or drop the old
    // bytes, and `UnsafeCell::raw_get` makes no reference to them.
    unsafe {
        UnsafeCell::raw_get(ptr::addr_of!((*slot).value))
            .cast::<S::Value>()
            .write(build(parameters))
    };
    // ORDERING: Release pairs with the Acquire load of every use: the write
    // above happens before any reference a use makes.
    state.store(word(addr, S::CODE), Release);
    leap_status_t::LEAP_OK
}

/// The value at `p`, shared: for objects any thread or handler may use at
/// once (`T: Sync`).
///
/// # Safety
///
/// As for [`init`]; and the storage stays valid and untouched by C for
/// `'a` (the call that uses the reference).
pub(crate) unsafe fn shared<'a, S: Storage>(p: *const S) -> Result<&'a S::Value, leap_status_t>
where
    S::Value: Sync,
{
    const { assert!(!S::EXCLUSIVE, "an exclusive object used through `&`") };
    let slot = checked(p)?;
    // SAFETY: `slot` is checked, and points to the object's bytes.
    let state = unsafe { state(slot) };
    // ORDERING: Acquire pairs with init's Release store: the value's write
    // happens before the reference below.
    if state.load(Acquire) != word(slot.addr(), S::CODE) {
        return Err(leap_status_t::LEAP_ERR_UNINIT);
    }
    // SAFETY: this type's READY at this address means init wrote a `T`
    // here (address and code both match, and init writes READY only after
    // the value), and nothing writes the value again while it is READY:
    // init refuses every word of this address, and `exclusive` and `take`
    // are used only with exclusive types (`S::EXCLUSIVE`, checked at
    // compile time in each), whose codes differ from every shared type's.
    // So a shared reference is valid; `T: Sync` lets other threads hold
    // one at the same time.
    Ok(unsafe { (*UnsafeCell::raw_get(ptr::addr_of!((*slot).value))).assume_init_ref() })
}

/// Runs `f` on the value at `p`, exclusively: for objects with one caller
/// at a time. `LEAP_ERR_BUSY` (and `f` not run) if a call is running on it.
///
/// # Safety
///
/// As for [`shared`].
pub(crate) unsafe fn exclusive<S: Storage, R>(
    p: *mut S,
    f: impl FnOnce(&mut S::Value) -> R,
) -> Result<R, leap_status_t>
where
    S::Value: Send,
{
    const { assert!(S::EXCLUSIVE, "a shared object used through `&mut`") };
    let slot = checked(p.cast_const())?.cast_mut();
    let (ready, in_use) = (word(slot.addr(), S::CODE), word(slot.addr(), Code::InUse));
    // SAFETY: `slot` is checked, and points to the object's bytes.
    let state = unsafe { state(slot) };
    // ORDERING: Acquire pairs with the Release store that ended the last
    // call (or init): its accesses to the value happen before ours.
    match state.compare_exchange(ready, in_use, Acquire, Relaxed) {
        Ok(_) => {}
        Err(seen) if seen == in_use => return Err(leap_status_t::LEAP_ERR_BUSY),
        Err(_) => return Err(leap_status_t::LEAP_ERR_UNINIT),
    }
    // SAFETY: READY at this address means init wrote a `T` here (see
    // `shared`), and our compare-and-swap from READY to IN_USE makes this
    // call the only one holding a reference to it until we store READY
    // again: every other call's compare-and-swap fails (IN_USE), `shared`
    // refuses exclusive types at compile time, and init refuses IN_USE.
    // `T: Send`: the calls may come from different threads, one at a time.
    let value = unsafe { (*UnsafeCell::raw_get(ptr::addr_of!((*slot).value))).assume_init_mut() };
    let r = f(value);
    // ORDERING: Release pairs with the next call's Acquire.
    state.store(ready, Release);
    Ok(r)
}

/// Moves the value out of the storage at `p` and marks it not initialised:
/// `LEAP_ERR_BUSY` if a call is running on it.
///
/// # Safety
///
/// As for [`shared`].
pub(crate) unsafe fn take<S: Storage>(p: *mut S) -> Result<S::Value, leap_status_t>
where
    S::Value: Send,
{
    const { assert!(S::EXCLUSIVE, "a shared object moved out") };
    let slot = checked(p.cast_const())?.cast_mut();
    let addr = slot.addr();
    // SAFETY: `slot` is checked, and points to the object's bytes.
    let state = unsafe { state(slot) };
    match state.compare_exchange(
        word(addr, S::CODE),
        word(addr, Code::Building),
        Acquire,
        Relaxed,
    ) {
        Ok(_) => {}
        Err(seen) if seen == word(addr, Code::InUse) || seen == word(addr, Code::Building) => {
            return Err(leap_status_t::LEAP_ERR_BUSY)
        }
        Err(_) => return Err(leap_status_t::LEAP_ERR_UNINIT),
    }
    // SAFETY: as in `exclusive`, we hold the value alone (BUILDING refuses
    // every other call); `ptr::read` moves it out, and the state stored
    // next says the bytes hold no value, so it is never read or dropped
    // again.
    let value = unsafe {
        UnsafeCell::raw_get(ptr::addr_of!((*slot).value))
            .read()
            .assume_init()
    };
    // ORDERING: Release pairs with a later init's Acquire. 0 is no
    // address's word (module docs): the storage reads as zeroed.
    state.store(0, Release);
    Ok(value)
}

/// Writes `v` to `*out`: `LEAP_OK`, or `LEAP_ERR_NULL` / `LEAP_ERR_MISALIGNED`
/// (nothing written).
///
/// # Safety
///
/// `out` is null or points to a `T` the caller may write (initialised or
/// not: nothing is read).
pub(crate) unsafe fn put<T>(out: *mut T, v: T) -> leap_status_t {
    if out.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    if !out.addr().is_multiple_of(core::mem::align_of::<T>()) {
        return leap_status_t::LEAP_ERR_MISALIGNED;
    }
    // SAFETY: not null, aligned, and writable (the caller's contract);
    // `write` neither reads nor drops the old bytes.
    unsafe { out.write(v) };
    leap_status_t::LEAP_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{leap_gate2_t, leap_local64_t};
    use leaparray::keyed::LocalKeyedGate;
    use leaparray::Gate;
    use std::boxed::Box;

    fn zeroed<T>() -> Box<T> {
        let layout = std::alloc::Layout::new::<T>();
        // SAFETY: the storage types are byte arrays (not zero-sized): all
        // zeros is a valid value, and `Box` frees with the same layout.
        unsafe { Box::from_raw(std::alloc::alloc_zeroed(layout).cast::<T>()) }
    }

    fn window() -> core::num::NonZeroU64 {
        core::num::NonZeroU64::new(50).unwrap()
    }

    /// An exclusive call while another runs on the same object gets
    /// `LEAP_ERR_BUSY` and does not run (the second `&mut` is never made);
    /// once the first is done, calls run again.
    #[test]
    fn exclusive_refuses_a_second_caller() {
        let mut t = zeroed::<leap_local64_t>();
        let p: *mut leap_local64_t = &mut *t;
        // SAFETY: `p` is zeroed storage of its type, alive for the test.
        unsafe {
            assert_eq!(
                init(p, || Ok(()), |()| LocalKeyedGate::<2, 64>::new(window(), 3)),
                leap_status_t::LEAP_OK
            );
            let inner = exclusive(p, |_| exclusive(p, |_| unreachable!("a second &mut")));
            assert_eq!(inner, Ok(Err(leap_status_t::LEAP_ERR_BUSY)));
            let took = exclusive(p, |g| g.try_acquire(1, 0, 3));
            assert_eq!(took, Ok(leaparray::Decision::Pass));
            // A shared type's use of this storage finds another type's tag.
            assert_eq!(
                shared(p.cast_const().cast::<leap_gate2_t>()).err(),
                Some(leap_status_t::LEAP_ERR_UNINIT)
            );
        }
    }

    /// Two inits of one storage: the one that builds second but claims the
    /// word first wins; the other writes nothing and says `LEAP_ERR_BUSY`.
    /// Then init refuses the initialised object.
    #[test]
    fn racing_inits_write_once() {
        let mut g = zeroed::<leap_gate2_t>();
        let p: *mut leap_gate2_t = &mut *g;
        // SAFETY: `p` is zeroed storage of its type, alive for the test.
        unsafe {
            let outer = init(
                p,
                || {
                    // Another init runs between this one's check and its claim.
                    assert_eq!(
                        init(p, || Ok(()), |()| Gate::<2>::new(window(), 7)),
                        leap_status_t::LEAP_OK
                    );
                    Ok(())
                },
                |()| Gate::<2>::new(window(), 1),
            );
            assert_eq!(outer, leap_status_t::LEAP_ERR_BUSY);
            assert_eq!(shared(p.cast_const()).map(|g| g.limit()), Ok(7));
            assert_eq!(
                init(p, || Ok(()), |()| Gate::<2>::new(window(), 1)),
                leap_status_t::LEAP_ERR_ALREADY_INIT
            );
        }
    }

    /// Review (rev50), D1: an interrupt handler (modelled by a call nested
    /// in the first) inits a shared table in the storage of a single-writer
    /// table whose call it interrupted. The header promises
    /// LEAP_ERR_BUSY; init reads the local table's IN_USE as "not
    /// initialised" (another type's tag), wins the word and `ptr::write`s
    /// a `KeyedGate` under the live `&mut LocalKeyedGate` (Miri: a
    /// Stacked Borrows violation); then the outer call stores the local
    /// table's READY over the keyed table's bytes.
    #[test]
    fn wrong_type_init_inside_an_exclusive_call_is_refused() {
        use crate::leap_keyed64_t;
        use leaparray::KeyedGate;
        // 128-aligned, 5120 bytes: storage for either type.
        let mut t = zeroed::<leap_keyed64_t>();
        let k: *mut leap_keyed64_t = &mut *t;
        let l: *mut leap_local64_t = k.cast();
        // SAFETY: `k` is zeroed storage of both types' size and alignment.
        unsafe {
            assert_eq!(
                init(l, || Ok(()), |()| LocalKeyedGate::<2, 64>::new(window(), 3)),
                leap_status_t::LEAP_OK
            );
            let inner = exclusive(l, |g| {
                let _ = g.try_acquire(1, 0, 1);
                let r = init(k, || Ok(()), |()| KeyedGate::<2, 64>::new(window(), 3));
                let _ = g.try_acquire(1, 0, 1);
                r
            });
            assert_eq!(inner, Ok(leap_status_t::LEAP_ERR_BUSY));
        }
    }

    /// Review (rev50), D1: two inits of different types on one storage,
    /// the second running while the first writes its value (between its
    /// claim and its READY: another thread, or a handler). The module docs:
    /// "Two inits race on the compare-and-swap: one wins, the other finds
    /// BUILDING or READY ... and writes nothing". Here the second reads
    /// the first's BUILDING as "not initialised", wins too, and both write
    /// (concurrently: a data race) and both return LEAP_OK.
    #[test]
    fn racing_inits_of_two_types_write_once() {
        use crate::leap_array_t;
        use leaparray::LeapArray;
        let mut g = zeroed::<leap_gate2_t>();
        let p: *mut leap_gate2_t = &mut *g;
        // SAFETY: zeroed storage of both types' size and alignment (512, 16).
        unsafe {
            let mut inner = None;
            let outer = init(
                p,
                || Ok(()),
                |()| {
                    inner = Some(init(
                        p.cast::<leap_array_t>(),
                        || Ok(()),
                        |()| LeapArray::<10, 4>::new(window()),
                    ));
                    Gate::<2>::new(window(), 7)
                },
            );
            let one_wrote = matches!(
                (outer, inner),
                (leap_status_t::LEAP_OK, Some(leap_status_t::LEAP_ERR_BUSY))
            );
            assert!(one_wrote, "outer {outer:?}, inner {inner:?}");
        }
    }

    /// The encoding's guarantees (module docs, "The state word"): at each
    /// address, the sixteen words are distinct and never zero; no two
    /// addresses 16 apart or more (all multiples of 16, the distances the
    /// review found, and addresses that differ only in high bits) share a
    /// word, whatever the codes.
    #[test]
    fn state_words_are_distinct() {
        use Code::*;
        let codes = [
            InUse,
            Building,
            Gate2,
            Gate4,
            Gate10,
            Keyed64,
            Keyed1k,
            Keyed16k,
            Local64,
            Local1k,
            Local16k,
            Array,
            Shards,
            ShardWriter,
        ];
        let addrs = [
            16usize,
            0x100,
            0x200,
            0xf00,
            0x1f00,
            0x2100,
            0x3f00,
            0x2000_0000,
            0x2000_1f00,
            usize::MAX / 2 + 1,
            usize::MAX & !127,
        ];
        for (i, &a) in addrs.iter().enumerate() {
            let words: std::vec::Vec<usize> = codes.iter().map(|&c| word(a, c)).collect();
            for (k, &w) in words.iter().enumerate() {
                assert_ne!(w, 0, "address {a:#x}");
                assert_eq!(code_at(w, a), Some(codes[k] as usize), "address {a:#x}");
                assert!(!words[k + 1..].contains(&w), "address {a:#x}");
            }
            for &b in &addrs[i + 1..] {
                for w in &words {
                    assert_eq!(code_at(*w, b), None, "{a:#x} and {b:#x}");
                }
            }
        }
        assert_eq!(word(0x1f00, Code::Gate2), !0x1f00 ^ Code::Gate2 as usize);
    }
}
