//! Gates: `Gate<2>`, `Gate<4>`, `Gate<10>` (`leap_gate2_t`, ...).

use core::num::NonZeroU64;

use leaparray::gate::Shape;
use leaparray::{Decision, Gate};

use crate::status::{leap_status_t, wide_words};
use crate::storage::{fits, init, put, shared, Code, Storage};

/// The largest limit a gate takes (2^47 - 1, the most a count holds).
pub const LEAP_GATE_MAX_LIMIT: u64 = 140_737_488_355_327;
const _: () = assert!(LEAP_GATE_MAX_LIMIT == leaparray::MAX_COUNT);

/// Bytes of a `leap_gate2_t`.
pub const LEAP_GATE2_SIZE: usize = 512;
/// Alignment of a `leap_gate2_t`.
pub const LEAP_GATE2_ALIGN: usize = 16;
/// Bytes of a `leap_gate4_t`.
pub const LEAP_GATE4_SIZE: usize = 768;
/// Alignment of a `leap_gate4_t`.
pub const LEAP_GATE4_ALIGN: usize = 16;
/// Bytes of a `leap_gate10_t`.
pub const LEAP_GATE10_SIZE: usize = 1536;
/// Alignment of a `leap_gate10_t`.
pub const LEAP_GATE10_ALIGN: usize = 16;

/// Storage for a gate of 2 windows per interval. Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_gate2_t {
    opaque: [u8; LEAP_GATE2_SIZE],
}

/// Storage for a gate of 4 windows per interval. Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_gate4_t {
    opaque: [u8; LEAP_GATE4_SIZE],
}

/// Storage for a gate of 10 windows per interval. Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_gate10_t {
    opaque: [u8; LEAP_GATE10_SIZE],
}

macro_rules! storage {
    ($s:ty, $v:ty, $size:expr, $align:expr, $code:expr, $exclusive:expr) => {
        // SAFETY: `repr(C)` bytes; the assertion below checks the sizes
        // and alignments `Storage` requires.
        unsafe impl Storage for $s {
            type Value = $v;
            const ALIGN: usize = $align;
            const EXCLUSIVE: bool = $exclusive;
            const CODE: crate::storage::Code = $code;
        }
        const _: () = assert!(
            fits::<$v>($size, $align, $code)
                && core::mem::size_of::<$s>() == $size
                && core::mem::align_of::<$s>() == $align,
            concat!(
                stringify!($s),
                ": the value does not fit the header's size and alignment on this target, or its code is not a type's"
            )
        );
    };
}
pub(crate) use storage;

storage!(
    leap_gate2_t,
    Gate<2>,
    LEAP_GATE2_SIZE,
    LEAP_GATE2_ALIGN,
    Code::Gate2,
    false
);
storage!(
    leap_gate4_t,
    Gate<4>,
    LEAP_GATE4_SIZE,
    LEAP_GATE4_ALIGN,
    Code::Gate4,
    false
);
storage!(
    leap_gate10_t,
    Gate<10>,
    LEAP_GATE10_SIZE,
    LEAP_GATE10_ALIGN,
    Code::Gate10,
    false
);

/// The window and limit checks of every gate's init.
fn parameters(window: u64, limit: u64, max: u64) -> Result<NonZeroU64, leap_status_t> {
    let window = NonZeroU64::new(window).ok_or(leap_status_t::LEAP_ERR_WINDOW)?;
    if limit == 0 || limit > max {
        return Err(leap_status_t::LEAP_ERR_LIMIT);
    }
    Ok(window)
}

unsafe fn gate_init<S: Storage<Value = Gate<N>>, const N: usize>(
    gate: *mut S,
    window: u64,
    limit: u64,
) -> leap_status_t {
    let check = || {
        let window = parameters(window, limit, LEAP_GATE_MAX_LIMIT)?;
        // `limit <= MAX_COUNT`: `new` does not panic.
        if matches!(Gate::<N>::new(window, limit).shape(), Shape::Word128 { .. }) {
            wide_words()?;
        }
        Ok(window)
    };
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            gate,
            check,
            // `limit <= MAX_COUNT`: `new` does not panic.
            |window| Gate::new(window, limit),
        )
    }
}

pub(crate) fn decision(d: Decision) -> leap_status_t {
    match d {
        Decision::Pass => leap_status_t::LEAP_PASS,
        Decision::Block => leap_status_t::LEAP_BLOCK,
    }
}

unsafe fn gate_try_acquire<S: Storage<Value = Gate<N>>, const N: usize>(
    gate: *const S,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s.
    match unsafe { shared(gate) } {
        Ok(g) => decision(g.try_acquire(now, n)),
        Err(e) => e,
    }
}

unsafe fn gate_retry_after<S: Storage<Value = Gate<N>>, const N: usize>(
    gate: *const S,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    if out.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    // SAFETY: the caller's contract is `shared`'s.
    let g = match unsafe { shared(gate) } {
        Ok(g) => g,
        Err(e) => return e,
    };
    match g.retry_after(now, n) {
        // SAFETY: `out` is null or the caller's `uint64_t`.
        Some(t) => unsafe { put(out, t) },
        None => leap_status_t::LEAP_NEVER,
    }
}

unsafe fn gate_remaining<S: Storage<Value = Gate<N>>, const N: usize>(
    gate: *const S,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s; `out` is null or the
    // caller's `uint64_t`.
    unsafe {
        match shared(gate) {
            Ok(g) => put(out, g.remaining(now)),
            Err(e) => e,
        }
    }
}

/// Initialises a gate admitting at most `limit` permits per interval of
/// 2 windows of `window` ticks, in the storage at `gate`. `LEAP_OK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0),
/// `LEAP_ERR_LIMIT` (0 or above `LEAP_GATE_MAX_LIMIT`),
/// `LEAP_ERR_ALREADY_INIT` (an object of any type lives there),
/// `LEAP_ERR_BUSY` (an init, or a one-caller object's call, is running there).
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate2_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_gate2_init(
    gate: *mut leap_gate2_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_init(gate, window, limit) }
}

/// Books `n` permits at time `now` if every interval of 2 windows that
/// contains the booking window stays within the limit: `LEAP_PASS` (booked)
/// or `LEAP_BLOCK` (nothing booked); or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`. `n == 0` passes and books
/// nothing; `n` above the limit never passes.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate2_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate2_try_acquire(
    gate: *const leap_gate2_t,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_try_acquire(gate, now, n) }
}

/// Ticks from `now` until `n` permits would pass if nothing else arrived,
/// into `*out`: `LEAP_OK` (0: now), or `LEAP_NEVER` (`n` above the limit;
/// `*out` untouched); or an error. The `Retry-After` of a `LEAP_BLOCK`.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate2_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate2_retry_after(
    gate: *const leap_gate2_t,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_retry_after(gate, now, n, out) }
}

/// Permits a request at `now` could still get, into `*out`: `LEAP_OK` or
/// an error. Books nothing.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate2_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate2_remaining(
    gate: *const leap_gate2_t,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_remaining(gate, now, out) }
}

/// Initialises a gate admitting at most `limit` permits per interval of
/// 4 windows of `window` ticks, in the storage at `gate`. `LEAP_OK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0),
/// `LEAP_ERR_LIMIT` (0 or above `LEAP_GATE_MAX_LIMIT`),
/// `LEAP_ERR_ALREADY_INIT` (an object of any type lives there),
/// `LEAP_ERR_BUSY` (an init, or a one-caller object's call, is running there).
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate4_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_gate4_init(
    gate: *mut leap_gate4_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_init(gate, window, limit) }
}

/// Books `n` permits at time `now` if every interval of 4 windows that
/// contains the booking window stays within the limit: `LEAP_PASS` (booked)
/// or `LEAP_BLOCK` (nothing booked); or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`. `n == 0` passes and books
/// nothing; `n` above the limit never passes.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate4_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate4_try_acquire(
    gate: *const leap_gate4_t,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_try_acquire(gate, now, n) }
}

/// Ticks from `now` until `n` permits would pass if nothing else arrived,
/// into `*out`: `LEAP_OK` (0: now), or `LEAP_NEVER` (`n` above the limit;
/// `*out` untouched); or an error. The `Retry-After` of a `LEAP_BLOCK`.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate4_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate4_retry_after(
    gate: *const leap_gate4_t,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_retry_after(gate, now, n, out) }
}

/// Permits a request at `now` could still get, into `*out`: `LEAP_OK` or
/// an error. Books nothing.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate4_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate4_remaining(
    gate: *const leap_gate4_t,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_remaining(gate, now, out) }
}

/// Initialises a gate admitting at most `limit` permits per interval of
/// 10 windows of `window` ticks, in the storage at `gate`. `LEAP_OK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0),
/// `LEAP_ERR_LIMIT` (0 or above `LEAP_GATE_MAX_LIMIT`),
/// `LEAP_ERR_ALREADY_INIT` (an object of any type lives there),
/// `LEAP_ERR_BUSY` (an init, or a one-caller object's call, is running there).
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate10_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_gate10_init(
    gate: *mut leap_gate10_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_init(gate, window, limit) }
}

/// Books `n` permits at time `now` if every interval of 10 windows that
/// contains the booking window stays within the limit: `LEAP_PASS` (booked)
/// or `LEAP_BLOCK` (nothing booked); or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`. `n == 0` passes and books
/// nothing; `n` above the limit never passes.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate10_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate10_try_acquire(
    gate: *const leap_gate10_t,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_try_acquire(gate, now, n) }
}

/// Ticks from `now` until `n` permits would pass if nothing else arrived,
/// into `*out`: `LEAP_OK` (0: now), or `LEAP_NEVER` (`n` above the limit;
/// `*out` untouched); or an error. The `Retry-After` of a `LEAP_BLOCK`.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate10_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate10_retry_after(
    gate: *const leap_gate10_t,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_retry_after(gate, now, n, out) }
}

/// Permits a request at `now` could still get, into `*out`: `LEAP_OK` or
/// an error. Books nothing.
///
/// # Safety
///
/// `gate` is null or points to a `leap_gate10_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_gate10_remaining(
    gate: *const leap_gate10_t,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { gate_remaining(gate, now, out) }
}
