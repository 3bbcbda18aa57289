//! Per-key tables: the shared `KeyedGate<2, CAP>` (`leap_keyed64_t`, ...)
//! and the single-writer `LocalKeyedGate<2, CAP>` (`leap_local64_t`, ...),
//! for `CAP` 64, 1,024 and 16,384 keys.

use leaparray::keyed::LocalKeyedGate;
use leaparray::{Decision, KeyedGate};

use crate::gate::{decision, storage};
use crate::status::{leap_status_t, wide_words};
use crate::storage::{exclusive, fits, init, put, shared, Code, Storage};

/// The largest per-key limit of a table (2 windows per interval: 15 bits
/// per window's count).
pub const LEAP_KEYED_MAX_LIMIT: u64 = 32_767;
const _: () = assert!(
    LEAP_KEYED_MAX_LIMIT == KeyedGate::<2, 1>::max_limit()
        && LEAP_KEYED_MAX_LIMIT == LocalKeyedGate::<2, 1>::max_limit()
);

/// One request of a burst (`leap_local..._try_acquire_burst`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct leap_request_t {
    /// The key (hash a flow's 5-tuple, an address, ... to 64 bits first).
    pub key: u64,
    /// The permits asked for.
    pub n: u64,
}

/// Bytes of a `leap_keyed64_t`.
pub const LEAP_KEYED64_SIZE: usize = 5120;
/// Alignment of a `leap_keyed64_t`.
pub const LEAP_KEYED64_ALIGN: usize = 128;
/// Bytes of a `leap_local64_t`.
pub const LEAP_LOCAL64_SIZE: usize = 5120;
/// Alignment of a `leap_local64_t`.
pub const LEAP_LOCAL64_ALIGN: usize = 16;

/// Storage for a shared table of 64 keys (any thread or interrupt
/// handler). Opaque: pass its address.
#[repr(C, align(128))]
#[allow(non_camel_case_types)]
pub struct leap_keyed64_t {
    opaque: [u8; LEAP_KEYED64_SIZE],
}

/// Storage for a single-writer table of 64 keys (one caller at a time).
/// Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_local64_t {
    opaque: [u8; LEAP_LOCAL64_SIZE],
}

/// Bytes of a `leap_keyed1k_t`.
pub const LEAP_KEYED1K_SIZE: usize = 51200;
/// Alignment of a `leap_keyed1k_t`.
pub const LEAP_KEYED1K_ALIGN: usize = 128;
/// Bytes of a `leap_local1k_t`.
pub const LEAP_LOCAL1K_SIZE: usize = 51200;
/// Alignment of a `leap_local1k_t`.
pub const LEAP_LOCAL1K_ALIGN: usize = 16;

/// Storage for a shared table of 1024 keys (any thread or interrupt
/// handler). Opaque: pass its address.
#[repr(C, align(128))]
#[allow(non_camel_case_types)]
pub struct leap_keyed1k_t {
    opaque: [u8; LEAP_KEYED1K_SIZE],
}

/// Storage for a single-writer table of 1024 keys (one caller at a time).
/// Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_local1k_t {
    opaque: [u8; LEAP_LOCAL1K_SIZE],
}

/// Bytes of a `leap_keyed16k_t`.
pub const LEAP_KEYED16K_SIZE: usize = 788480;
/// Alignment of a `leap_keyed16k_t`.
pub const LEAP_KEYED16K_ALIGN: usize = 128;
/// Bytes of a `leap_local16k_t`.
pub const LEAP_LOCAL16K_SIZE: usize = 788480;
/// Alignment of a `leap_local16k_t`.
pub const LEAP_LOCAL16K_ALIGN: usize = 16;

/// Storage for a shared table of 16384 keys (any thread or interrupt
/// handler). Opaque: pass its address.
#[repr(C, align(128))]
#[allow(non_camel_case_types)]
pub struct leap_keyed16k_t {
    opaque: [u8; LEAP_KEYED16K_SIZE],
}

/// Storage for a single-writer table of 16384 keys (one caller at a time).
/// Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_local16k_t {
    opaque: [u8; LEAP_LOCAL16K_SIZE],
}
storage!(leap_keyed64_t, KeyedGate<2, 64>, LEAP_KEYED64_SIZE, LEAP_KEYED64_ALIGN, Code::Keyed64, false);
storage!(leap_local64_t, LocalKeyedGate<2, 64>, LEAP_LOCAL64_SIZE, LEAP_LOCAL64_ALIGN, Code::Local64, true);
storage!(leap_keyed1k_t, KeyedGate<2, 1024>, LEAP_KEYED1K_SIZE, LEAP_KEYED1K_ALIGN, Code::Keyed1k, false);
storage!(leap_local1k_t, LocalKeyedGate<2, 1024>, LEAP_LOCAL1K_SIZE, LEAP_LOCAL1K_ALIGN, Code::Local1k, true);
storage!(leap_keyed16k_t, KeyedGate<2, 16384>, LEAP_KEYED16K_SIZE, LEAP_KEYED16K_ALIGN, Code::Keyed16k, false);
storage!(leap_local16k_t, LocalKeyedGate<2, 16384>, LEAP_LOCAL16K_SIZE, LEAP_LOCAL16K_ALIGN, Code::Local16k, true);

/// The window and limit checks of a table's init.
fn parameters(window: u64, limit: u64) -> Result<core::num::NonZeroU64, leap_status_t> {
    let window = core::num::NonZeroU64::new(window).ok_or(leap_status_t::LEAP_ERR_WINDOW)?;
    if limit == 0 || limit > LEAP_KEYED_MAX_LIMIT {
        return Err(leap_status_t::LEAP_ERR_LIMIT);
    }
    Ok(window)
}

unsafe fn keyed_init<S: Storage<Value = KeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            t,
            || {
                let window = parameters(window, limit)?;
                wide_words()?;
                Ok(window)
            },
            // `limit <= max_limit()`: `new` does not panic.
            |window| KeyedGate::new(window, limit),
        )
    }
}

unsafe fn keyed_try_acquire<S: Storage<Value = KeyedGate<2, CAP>>, const CAP: usize>(
    t: *const S,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s.
    match unsafe { shared(t) } {
        Ok(t) => decision(t.try_acquire(key, now, n)),
        Err(e) => e,
    }
}

unsafe fn keyed_retry_after<S: Storage<Value = KeyedGate<2, CAP>>, const CAP: usize>(
    t: *const S,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    if out.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    // SAFETY: the caller's contract is `shared`'s and `put`'s.
    unsafe {
        match shared(t).map(|t| t.retry_after(key, now, n)) {
            Ok(Some(ticks)) => put(out, ticks),
            Ok(None) => leap_status_t::LEAP_NEVER,
            Err(e) => e,
        }
    }
}

unsafe fn keyed_remaining<S: Storage<Value = KeyedGate<2, CAP>>, const CAP: usize>(
    t: *const S,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s and `put`'s.
    unsafe {
        match shared(t) {
            Ok(t) => put(out, t.remaining(key, now)),
            Err(e) => e,
        }
    }
}

unsafe fn local_init<S: Storage<Value = LocalKeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            t,
            || parameters(window, limit),
            // `limit <= max_limit()`: `new` does not panic.
            |window| LocalKeyedGate::new(window, limit),
        )
    }
}

unsafe fn local_try_acquire<S: Storage<Value = LocalKeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `exclusive`'s.
    match unsafe { exclusive(t, |t| t.try_acquire(key, now, n)) } {
        Ok(d) => decision(d),
        Err(e) => e,
    }
}

/// Requests decided per call of the core's burst (its prefetch runs 16
/// requests ahead within one call).
const CHUNK: usize = 64;

/// The prefetch a burst hands the core: `prefetcht0` on x86-64, nothing
/// elsewhere (and under Miri).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is a hint: it reads nothing and cannot fault,
    // whatever the address; SSE is in every x86-64 target's baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

unsafe fn local_burst<S: Storage<Value = LocalKeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    now: u64,
    requests: *const leap_request_t,
    count: usize,
    decisions: *mut leap_status_t,
) -> leap_status_t {
    if requests.is_null() || decisions.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    if !requests
        .addr()
        .is_multiple_of(core::mem::align_of::<leap_request_t>())
        || !decisions
            .addr()
            .is_multiple_of(core::mem::align_of::<leap_status_t>())
    {
        return leap_status_t::LEAP_ERR_MISALIGNED;
    }
    let run = |t: &mut LocalKeyedGate<2, CAP>| {
        let mut done = 0;
        while done < count {
            let k = CHUNK.min(count - done);
            let mut chunk = [(0u64, 0u64); CHUNK];
            for (j, slot) in chunk[..k].iter_mut().enumerate() {
                // SAFETY: `requests` points to `count` requests (the
                // caller's contract), aligned (checked); `done + j < count`.
                let r = unsafe { requests.add(done + j).read() };
                *slot = (r.key, r.n);
            }
            let mut out = [Decision::Block; CHUNK];
            let _ = t.try_acquire_burst(now, &chunk[..k], &mut out[..k], prefetch);
            for (j, d) in out[..k].iter().enumerate() {
                // SAFETY: `decisions` points to `count` writable statuses
                // (the caller's contract), aligned (checked); `write` reads
                // nothing there.
                unsafe { decisions.add(done + j).write(decision(*d)) };
            }
            done += k;
        }
    };
    // SAFETY: the caller's contract is `exclusive`'s.
    match unsafe { exclusive(t, run) } {
        Ok(()) => leap_status_t::LEAP_OK,
        Err(e) => e,
    }
}

unsafe fn local_retry_after<S: Storage<Value = LocalKeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    if out.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    // SAFETY: the caller's contract is `exclusive`'s and `put`'s.
    unsafe {
        match exclusive(t, |t| t.retry_after(key, now, n)) {
            Ok(Some(ticks)) => put(out, ticks),
            Ok(None) => leap_status_t::LEAP_NEVER,
            Err(e) => e,
        }
    }
}

unsafe fn local_remaining<S: Storage<Value = LocalKeyedGate<2, CAP>>, const CAP: usize>(
    t: *mut S,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    if out.is_null() {
        return leap_status_t::LEAP_ERR_NULL;
    }
    // SAFETY: the caller's contract is `exclusive`'s and `put`'s.
    unsafe {
        match exclusive(t, |t| t.remaining(key, now)) {
            Ok(left) => put(out, left),
            Err(e) => e,
        }
    }
}

/// Initialises a shared table of 64 keys, each admitted at most `limit`
/// permits per interval of 2 windows of `window` ticks (a key with no room
/// evicts the key its probe values least, remembering its counts: no key
/// is ever admitted beyond its limit). `LEAP_OK`; or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0), `LEAP_ERR_LIMIT` (0 or above
/// `LEAP_KEYED_MAX_LIMIT`), `LEAP_ERR_ALREADY_INIT`, `LEAP_ERR_BUSY`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed64_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_keyed64_init(
    table: *mut leap_keyed64_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed64_try_acquire(
    table: *const leap_keyed64_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_try_acquire(table, key, now, n) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed64_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed64_retry_after(
    table: *const leap_keyed64_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed64_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed64_remaining(
    table: *const leap_keyed64_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_remaining(table, key, now, out) }
}

/// Initialises a single-writer table of 64 keys: the same decisions as
/// a `leap_keyed64_t`, for one caller at a time (a receive queue's
/// loop), with plain loads and stores. `LEAP_OK` or the errors of
/// `leap_keyed64_init`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local64_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_local64_init(
    table: *mut leap_local64_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_BUSY` (a call on this table is running), `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local64_try_acquire(
    table: *mut leap_local64_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_try_acquire(table, key, now, n) }
}

/// Decides `count` requests at one `now`, in order, each as
/// `leap_local64_try_acquire` would: `decisions[i]` gets `LEAP_PASS` or
/// `LEAP_BLOCK` for `requests[i]`. Home slots are prefetched 16 requests
/// ahead (x86-64). `LEAP_OK`, or an error (then no decision was made).
///
/// # Safety
///
/// `table` is null or points to a `leap_local64_t`; `requests` is null or points to
/// `count` requests, `decisions` null or to `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn leap_local64_try_acquire_burst(
    table: *mut leap_local64_t,
    now: u64,
    requests: *const leap_request_t,
    count: usize,
    decisions: *mut leap_status_t,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_burst(table, now, requests, count, decisions) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_local64_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local64_retry_after(
    table: *mut leap_local64_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_local64_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local64_remaining(
    table: *mut leap_local64_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_remaining(table, key, now, out) }
}

/// Initialises a shared table of 1024 keys, each admitted at most `limit`
/// permits per interval of 2 windows of `window` ticks (a key with no room
/// evicts the key its probe values least, remembering its counts: no key
/// is ever admitted beyond its limit). `LEAP_OK`; or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0), `LEAP_ERR_LIMIT` (0 or above
/// `LEAP_KEYED_MAX_LIMIT`), `LEAP_ERR_ALREADY_INIT`, `LEAP_ERR_BUSY`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed1k_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_keyed1k_init(
    table: *mut leap_keyed1k_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed1k_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed1k_try_acquire(
    table: *const leap_keyed1k_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_try_acquire(table, key, now, n) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed1k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed1k_retry_after(
    table: *const leap_keyed1k_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed1k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed1k_remaining(
    table: *const leap_keyed1k_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_remaining(table, key, now, out) }
}

/// Initialises a single-writer table of 1024 keys: the same decisions as
/// a `leap_keyed1k_t`, for one caller at a time (a receive queue's
/// loop), with plain loads and stores. `LEAP_OK` or the errors of
/// `leap_keyed1k_init`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local1k_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_local1k_init(
    table: *mut leap_local1k_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_BUSY` (a call on this table is running), `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local1k_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local1k_try_acquire(
    table: *mut leap_local1k_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_try_acquire(table, key, now, n) }
}

/// Decides `count` requests at one `now`, in order, each as
/// `leap_local1k_try_acquire` would: `decisions[i]` gets `LEAP_PASS` or
/// `LEAP_BLOCK` for `requests[i]`. Home slots are prefetched 16 requests
/// ahead (x86-64). `LEAP_OK`, or an error (then no decision was made).
///
/// # Safety
///
/// `table` is null or points to a `leap_local1k_t`; `requests` is null or points to
/// `count` requests, `decisions` null or to `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn leap_local1k_try_acquire_burst(
    table: *mut leap_local1k_t,
    now: u64,
    requests: *const leap_request_t,
    count: usize,
    decisions: *mut leap_status_t,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_burst(table, now, requests, count, decisions) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_local1k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local1k_retry_after(
    table: *mut leap_local1k_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_local1k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local1k_remaining(
    table: *mut leap_local1k_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_remaining(table, key, now, out) }
}

/// Initialises a shared table of 16384 keys, each admitted at most `limit`
/// permits per interval of 2 windows of `window` ticks (a key with no room
/// evicts the key its probe values least, remembering its counts: no key
/// is ever admitted beyond its limit). `LEAP_OK`; or `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_WINDOW` (0), `LEAP_ERR_LIMIT` (0 or above
/// `LEAP_KEYED_MAX_LIMIT`), `LEAP_ERR_ALREADY_INIT`, `LEAP_ERR_BUSY`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed16k_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_keyed16k_init(
    table: *mut leap_keyed16k_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed16k_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed16k_try_acquire(
    table: *const leap_keyed16k_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_try_acquire(table, key, now, n) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed16k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed16k_retry_after(
    table: *const leap_keyed16k_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_keyed16k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_keyed16k_remaining(
    table: *const leap_keyed16k_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { keyed_remaining(table, key, now, out) }
}

/// Initialises a single-writer table of 16384 keys: the same decisions as
/// a `leap_keyed16k_t`, for one caller at a time (a receive queue's
/// loop), with plain loads and stores. `LEAP_OK` or the errors of
/// `leap_keyed16k_init`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local16k_t` (zeroed before the first init).
#[no_mangle]
pub unsafe extern "C" fn leap_local16k_init(
    table: *mut leap_local16k_t,
    window: u64,
    limit: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_init(table, window, limit) }
}

/// Books `n` permits for `key` at `now`: `LEAP_PASS` or `LEAP_BLOCK`; or
/// `LEAP_ERR_BUSY` (a call on this table is running), `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `table` is null or points to a `leap_local16k_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local16k_try_acquire(
    table: *mut leap_local16k_t,
    key: u64,
    now: u64,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_try_acquire(table, key, now, n) }
}

/// Decides `count` requests at one `now`, in order, each as
/// `leap_local16k_try_acquire` would: `decisions[i]` gets `LEAP_PASS` or
/// `LEAP_BLOCK` for `requests[i]`. Home slots are prefetched 16 requests
/// ahead (x86-64). `LEAP_OK`, or an error (then no decision was made).
///
/// # Safety
///
/// `table` is null or points to a `leap_local16k_t`; `requests` is null or points to
/// `count` requests, `decisions` null or to `count` writable statuses.
#[no_mangle]
pub unsafe extern "C" fn leap_local16k_try_acquire_burst(
    table: *mut leap_local16k_t,
    now: u64,
    requests: *const leap_request_t,
    count: usize,
    decisions: *mut leap_status_t,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_burst(table, now, requests, count, decisions) }
}

/// Ticks from `now` until `n` permits for `key` would pass, into `*out`:
/// `LEAP_OK`, `LEAP_NEVER` (`n` above the limit), or an error.
///
/// # Safety
///
/// `table` is null or points to a `leap_local16k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local16k_retry_after(
    table: *mut leap_local16k_t,
    key: u64,
    now: u64,
    n: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_retry_after(table, key, now, n, out) }
}

/// Permits `key` could still get at `now`, into `*out`: `LEAP_OK` or an
/// error. Books nothing.
///
/// # Safety
///
/// `table` is null or points to a `leap_local16k_t`; `out` is null or points to a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_local16k_remaining(
    table: *mut leap_local16k_t,
    key: u64,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract.
    unsafe { local_remaining(table, key, now, out) }
}
