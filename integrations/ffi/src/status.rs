//! [`leap_status_t`]: what every call returns.

use core::ffi::c_char;

/// What a call returns: `LEAP_OK`, a decision (`LEAP_PASS`, `LEAP_BLOCK`),
/// `LEAP_NEVER` (a `retry_after` that can never pass), or an error
/// (negative). A decision call that fails (bad object) returns the error,
/// never `LEAP_PASS`: `== LEAP_PASS` is the check that fails closed.
///
/// An enum: its size is the target's C enum size (4 bytes on x86-64,
/// AArch64 and Linux targets; 1 byte on arm-none-eabi, whose ABI makes an
/// enum as small as its values; the library is built with the target's
/// default). Build every C file that includes this header with the
/// target's default enum size (no `-fshort-enums` / `-fno-short-enums`
/// against it): the `decisions` array of `try_acquire_burst` is an array
/// of this type.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum leap_status_t {
    /// Done (`init`, `add`, `claim`, a value written to `*out`).
    LEAP_OK = 0,
    /// Admitted: the permits are booked.
    LEAP_PASS = 1,
    /// Refused: nothing is booked.
    LEAP_BLOCK = 2,
    /// `retry_after`: the request can never pass (`n` above the limit, or
    /// the room comes back only after `UINT64_MAX`); `*out` is untouched.
    LEAP_NEVER = 3,
    /// A pointer argument is null.
    LEAP_ERR_NULL = -1,
    /// An object or array pointer is not aligned as the header says
    /// (`LEAP_..._ALIGN`, or the element type's alignment).
    LEAP_ERR_MISALIGNED = -2,
    /// `init`: the window is 0 ticks.
    LEAP_ERR_WINDOW = -3,
    /// `init`: the limit is 0 (a gate that admits nothing) or above the
    /// most this type holds (`LEAP_..._MAX_LIMIT`).
    LEAP_ERR_LIMIT = -4,
    /// The storage holds no object of this type initialised at this
    /// address: never initialised, zeroed since, copied from elsewhere, or
    /// another type's.
    LEAP_ERR_UNINIT = -5,
    /// `init`: the storage already holds an initialised object, of this
    /// type or another (nothing was written).
    LEAP_ERR_ALREADY_INIT = -6,
    /// A one-caller object (single-writer table, shard writer) is in a call
    /// right now (another thread, or the code an interrupt handler
    /// interrupted), or an `init` of this storage is running. Given to
    /// every init in that storage (of any type) and every call of a
    /// one-caller type there. Nothing was done; nothing waits.
    LEAP_ERR_BUSY = -7,
    /// The counter index is not below `LEAP_COUNTERS`.
    LEAP_ERR_COUNTER = -8,
    /// `add`: the window of `now` was retired (its bucket holds a newer
    /// window). Nothing was counted.
    LEAP_ERR_STALE = -9,
    /// `add`: the count reached its most (2^47 - 1) and holds it; part of
    /// `n` was not counted.
    LEAP_ERR_SATURATED = -10,
    /// `claim`: no shard with that index (`LEAP_SHARDS`).
    LEAP_ERR_NO_SUCH_SHARD = -11,
    /// `claim`: another writer holds the shard.
    LEAP_ERR_CLAIMED = -12,
    /// `claim`: a shared add is running on the shard right now: retry.
    LEAP_ERR_SHARED = -13,
    /// A shared add: every shard is claimed by a writer. Nothing counted.
    LEAP_ERR_NO_FREE_SHARD = -14,
    /// An error of the Rust core this header does not name (a newer core).
    LEAP_ERR_OTHER = -15,
    /// `init` of an object of 128-bit words (a shared per-key table, a
    /// gate whose limit needs one) on an x86-64 CPU without `cmpxchg16b`:
    /// there such a word is portable-atomic's spin lock, which a signal
    /// handler interrupting a call deadlocks on. Nothing written. A library
    /// built with `portable-atomic-fallback-not-interrupt-safe` accepts it.
    LEAP_ERR_NOT_LOCK_FREE = -16,
}

/// `Ok` where this CPU swaps 128 bits without a lock, or where the build
/// accepts portable-atomic's spin lock by name; else
/// [`LEAP_ERR_NOT_LOCK_FREE`](leap_status_t::LEAP_ERR_NOT_LOCK_FREE). Only
/// x86-64 decides at run time (portable-atomic detects `cmpxchg16b`):
/// AArch64's 128-bit words are lock-free; elsewhere they are masked
/// interrupts on a single-core chip, or the objects that hold one do not
/// build without that feature. Under Miri, which runs portable-atomic's
/// lock in place of the instruction, nothing is refused, so that the tests
/// check these objects there too.
pub(crate) fn wide_words() -> Result<(), leap_status_t> {
    #[cfg(all(
        target_arch = "x86_64",
        not(miri),
        not(feature = "portable-atomic-fallback-not-interrupt-safe")
    ))]
    if !portable_atomic::AtomicU128::is_lock_free() {
        return Err(leap_status_t::LEAP_ERR_NOT_LOCK_FREE);
    }
    Ok(())
}

/// A constant, NUL-terminated English description of `status` (any
/// value: unknown ones get "unknown status").
///
/// Interrupt-safe and lock-free on every target: it reads nothing shared.
#[no_mangle]
pub extern "C" fn leap_status_str(status: i32) -> *const c_char {
    let s: &'static core::ffi::CStr = match status {
        0 => c"ok",
        1 => c"pass",
        2 => c"block",
        3 => c"never: the request can never pass",
        -1 => c"a pointer argument is null",
        -2 => c"a pointer is not aligned as the header says",
        -3 => c"the window is 0 ticks",
        -4 => c"the limit is 0 or above the most this type holds",
        -5 => c"the object is not initialised (at this address, as this type)",
        -6 => c"the object is already initialised",
        -7 => c"the object is in a call right now (one caller at a time)",
        -8 => c"no such counter",
        -9 => c"the window of this time was retired",
        -10 => c"the count saturated",
        -11 => c"no shard with that index",
        -12 => c"another writer holds the shard",
        -13 => c"a shared add is running on the shard: retry",
        -14 => c"every shard is claimed",
        -15 => c"an error this version of the header does not name",
        -16 => c"a 128-bit word on this CPU would be a spin lock (x86-64 without cmpxchg16b)",
        _ => c"unknown status",
    };
    s.as_ptr()
}
