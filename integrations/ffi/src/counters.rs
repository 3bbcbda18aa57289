//! Counters: a `LeapArray<10, 4>` ring (`leap_array_t`) and
//! `Sharded<10, 4, 8>` shards (`leap_shards_t`) with their single writers
//! (`leap_shard_writer_t`).

use core::num::NonZeroU64;

use leaparray::shard::{ClaimError, ShardWriter, Sharded, SharedAddError};
use leaparray::{AddError, LeapArray};

use crate::gate::storage;
use crate::status::leap_status_t;
use crate::storage::{exclusive, fits, init, put, shared, take, Code, Storage};

/// Windows per interval of a `leap_array_t` and of each shard.
pub const LEAP_WINDOWS: usize = 10;
/// Counters per window (`counter` is `0..LEAP_COUNTERS`).
pub const LEAP_COUNTERS: usize = 4;
/// Shards of a `leap_shards_t`.
pub const LEAP_SHARDS: usize = 8;

/// Bytes of a `leap_array_t`.
pub const LEAP_ARRAY_SIZE: usize = 512;
/// Alignment of a `leap_array_t`.
pub const LEAP_ARRAY_ALIGN: usize = 16;
/// Bytes of a `leap_shards_t`.
pub const LEAP_SHARDS_SIZE: usize = 4608;
/// Alignment of a `leap_shards_t`.
pub const LEAP_SHARDS_ALIGN: usize = 128;
/// Bytes of a `leap_shard_writer_t`.
pub const LEAP_SHARD_WRITER_SIZE: usize = 128;
/// Alignment of a `leap_shard_writer_t`.
pub const LEAP_SHARD_WRITER_ALIGN: usize = 16;

/// Storage for a ring of `LEAP_WINDOWS` windows of `LEAP_COUNTERS`
/// counters. Opaque: pass its address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_array_t {
    opaque: [u8; LEAP_ARRAY_SIZE],
}

/// Storage for `LEAP_SHARDS` rings, one per core or queue, read as one.
/// Opaque: pass its address.
#[repr(C, align(128))]
#[allow(non_camel_case_types)]
pub struct leap_shards_t {
    opaque: [u8; LEAP_SHARDS_SIZE],
}

/// Storage for the single writer of one claimed shard. Opaque: pass its
/// address.
#[repr(C, align(16))]
#[allow(non_camel_case_types)]
pub struct leap_shard_writer_t {
    opaque: [u8; LEAP_SHARD_WRITER_SIZE],
}

type Array = LeapArray<LEAP_WINDOWS, LEAP_COUNTERS>;
type Shards = Sharded<LEAP_WINDOWS, LEAP_COUNTERS, LEAP_SHARDS>;
type Writer = ShardWriter<'static, LEAP_WINDOWS, LEAP_COUNTERS>;

storage!(
    leap_array_t,
    Array,
    LEAP_ARRAY_SIZE,
    LEAP_ARRAY_ALIGN,
    Code::Array,
    false
);
storage!(
    leap_shards_t,
    Shards,
    LEAP_SHARDS_SIZE,
    LEAP_SHARDS_ALIGN,
    Code::Shards,
    false
);
storage!(
    leap_shard_writer_t,
    Writer,
    LEAP_SHARD_WRITER_SIZE,
    LEAP_SHARD_WRITER_ALIGN,
    Code::ShardWriter,
    true
);

fn added(r: Result<(), AddError>) -> leap_status_t {
    match r {
        Ok(()) => leap_status_t::LEAP_OK,
        Err(AddError::Stale) => leap_status_t::LEAP_ERR_STALE,
        Err(AddError::NoSuchCounter) => leap_status_t::LEAP_ERR_COUNTER,
        Err(AddError::Saturated) => leap_status_t::LEAP_ERR_SATURATED,
        Err(_) => leap_status_t::LEAP_ERR_OTHER,
    }
}

fn counter(c: u32) -> Result<usize, leap_status_t> {
    match usize::try_from(c) {
        Ok(c) if c < LEAP_COUNTERS => Ok(c),
        _ => Err(leap_status_t::LEAP_ERR_COUNTER),
    }
}

/// Initialises a ring of `LEAP_WINDOWS` windows of `window` ticks, every
/// counter 0. `LEAP_OK`; or `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`,
/// `LEAP_ERR_WINDOW` (0), `LEAP_ERR_ALREADY_INIT`, `LEAP_ERR_BUSY`.
///
/// # Safety
///
/// `array` is null or points to a `leap_array_t` (zeroed before the first
/// init).
#[no_mangle]
pub unsafe extern "C" fn leap_array_init(array: *mut leap_array_t, window: u64) -> leap_status_t {
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            array,
            || NonZeroU64::new(window).ok_or(leap_status_t::LEAP_ERR_WINDOW),
            Array::new,
        )
    }
}

/// Adds `n` to `counter` in the window of `now`: `LEAP_OK`; or
/// `LEAP_ERR_STALE` (that window was retired: nothing counted),
/// `LEAP_ERR_COUNTER`, `LEAP_ERR_SATURATED`, `LEAP_ERR_NULL`,
/// `LEAP_ERR_MISALIGNED`, `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `array` is null or points to a `leap_array_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_array_add(
    array: *const leap_array_t,
    now: u64,
    counter: u32,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s.
    let a = match unsafe { shared(array) } {
        Ok(a) => a,
        Err(e) => return e,
    };
    match self::counter(counter) {
        Ok(c) => added(a.add(now, c, n)),
        Err(e) => e,
    }
}

/// The total of `counter` over the `LEAP_WINDOWS` windows ending at the
/// window of `now`, into `*out`: `LEAP_OK` or an error.
///
/// # Safety
///
/// `array` is null or points to a `leap_array_t`; `out` is null or points
/// to a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_array_sum(
    array: *const leap_array_t,
    now: u64,
    counter: u32,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s and `put`'s.
    unsafe {
        match shared(array).and_then(|a| Ok((a, self::counter(counter)?))) {
            Ok((a, c)) => put(out, a.sum(now, c)),
            Err(e) => e,
        }
    }
}

/// The totals of every counter (as `leap_array_sum`), into
/// `out[0..LEAP_COUNTERS]`: `LEAP_OK` or an error.
///
/// # Safety
///
/// `array` is null or points to a `leap_array_t`; `out` is null or points
/// to `LEAP_COUNTERS` `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn leap_array_sums(
    array: *const leap_array_t,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s and `put`'s: `out` is
    // `[u64; LEAP_COUNTERS]`, aligned as a `u64`.
    unsafe {
        match shared(array) {
            Ok(a) => put(out.cast::<[u64; LEAP_COUNTERS]>(), a.sums(now)),
            Err(e) => e,
        }
    }
}

/// Initialises `LEAP_SHARDS` shards of `LEAP_WINDOWS` windows of `window`
/// ticks. `LEAP_OK`; or the errors of `leap_array_init`.
///
/// # Safety
///
/// `shards` is null or points to a `leap_shards_t` (zeroed before the
/// first init).
#[no_mangle]
pub unsafe extern "C" fn leap_shards_init(
    shards: *mut leap_shards_t,
    window: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `init`'s.
    unsafe {
        init(
            shards,
            || NonZeroU64::new(window).ok_or(leap_status_t::LEAP_ERR_WINDOW),
            Shards::new,
        )
    }
}

/// A shared add from any thread or handler: `n` to `counter` in the window
/// of `now`, in shard `hint % LEAP_SHARDS` or the next one no writer holds
/// (a compare-and-swap). `LEAP_OK`; or `LEAP_ERR_NO_FREE_SHARD` (every
/// shard claimed), the errors of `leap_array_add`.
///
/// # Safety
///
/// `shards` is null or points to a `leap_shards_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_shards_add(
    shards: *const leap_shards_t,
    hint: usize,
    now: u64,
    counter: u32,
    n: u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s.
    let s = match unsafe { shared(shards) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    let c = match self::counter(counter) {
        Ok(c) => c,
        Err(e) => return e,
    };
    match s.add(hint, now, c, n) {
        Ok(()) => leap_status_t::LEAP_OK,
        Err(SharedAddError::NoFreeShard) => leap_status_t::LEAP_ERR_NO_FREE_SHARD,
        Err(SharedAddError::Add(e)) => added(Err(e)),
        Err(_) => leap_status_t::LEAP_ERR_OTHER,
    }
}

/// The total of `counter` over every shard's windows ending at the window
/// of `now`, into `*out`: `LEAP_OK` or an error.
///
/// # Safety
///
/// `shards` is null or points to a `leap_shards_t`; `out` is null or points
/// to a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_shards_sum(
    shards: *const leap_shards_t,
    now: u64,
    counter: u32,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s and `put`'s.
    unsafe {
        match shared(shards).and_then(|s| Ok((s, self::counter(counter)?))) {
            Ok((s, c)) => put(out, s.sum(now, c)),
            Err(e) => e,
        }
    }
}

/// The totals of every counter over every shard, into
/// `out[0..LEAP_COUNTERS]`: `LEAP_OK` or an error.
///
/// # Safety
///
/// `shards` is null or points to a `leap_shards_t`; `out` is null or points
/// to `LEAP_COUNTERS` `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn leap_shards_sums(
    shards: *const leap_shards_t,
    now: u64,
    out: *mut u64,
) -> leap_status_t {
    // SAFETY: as in `leap_array_sums`.
    unsafe {
        match shared(shards) {
            Ok(s) => put(out.cast::<[u64; LEAP_COUNTERS]>(), s.sums(now)),
            Err(e) => e,
        }
    }
}

/// Claims shard `index` for one writer, initialising the writer in the
/// storage at `writer`: its adds are one plain store each. `LEAP_OK`; or
/// `LEAP_ERR_NO_SUCH_SHARD`, `LEAP_ERR_CLAIMED` (another writer holds it),
/// `LEAP_ERR_SHARED` (a shared add is running on it: retry), the errors
/// of an init for `writer` and of a use for `shards`. Release with
/// `leap_shard_writer_release`; the shards must stay initialised and in
/// place until then.
///
/// # Safety
///
/// `shards` is null or points to a `leap_shards_t` that outlives the
/// writer; `writer` is null or points to a `leap_shard_writer_t` (zeroed
/// before the first claim, or released).
#[no_mangle]
pub unsafe extern "C" fn leap_shards_claim(
    shards: *const leap_shards_t,
    index: usize,
    writer: *mut leap_shard_writer_t,
) -> leap_status_t {
    // SAFETY: the caller's contract is `shared`'s for `shards`, for as
    // long as the writer lives: the C program keeps the shards initialised
    // and in place until it releases the writer, so the writer's
    // `'static` borrow of them is valid for the writer's whole life (it
    // is dropped by `leap_shard_writer_release`, or right here if `init`
    // refuses the storage).
    let s: &'static Shards = match unsafe { shared(shards) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    // SAFETY: the caller's contract is `init`'s for `writer`.
    unsafe {
        init(
            writer,
            || {
                s.claim(index).map_err(|e| match e {
                    ClaimError::NoSuchShard => leap_status_t::LEAP_ERR_NO_SUCH_SHARD,
                    ClaimError::Claimed => leap_status_t::LEAP_ERR_CLAIMED,
                    ClaimError::Shared => leap_status_t::LEAP_ERR_SHARED,
                    _ => leap_status_t::LEAP_ERR_OTHER,
                })
            },
            // A claim refused by `init` (the storage is in use) is
            // dropped there: the shard is returned.
            |w| w,
        )
    }
}

/// Adds `n` to `counter` in the window of `now`, in the writer's shard,
/// with one plain store: `LEAP_OK`; or the errors of `leap_array_add`,
/// `LEAP_ERR_BUSY` (a call on this writer is running).
///
/// # Safety
///
/// `writer` is null or points to a `leap_shard_writer_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_shard_writer_add(
    writer: *mut leap_shard_writer_t,
    now: u64,
    counter: u32,
    n: u64,
) -> leap_status_t {
    let c = match self::counter(counter) {
        Ok(c) => c,
        Err(e) => return e,
    };
    // SAFETY: the caller's contract is `exclusive`'s.
    match unsafe { exclusive(writer, |w| w.add(now, c, n)) } {
        Ok(r) => added(r),
        Err(e) => e,
    }
}

/// Returns the writer's shard (another writer, or shared adds, may use it
/// next) and leaves `writer` not initialised: `LEAP_OK`; or
/// `LEAP_ERR_BUSY`, `LEAP_ERR_NULL`, `LEAP_ERR_MISALIGNED`,
/// `LEAP_ERR_UNINIT`.
///
/// # Safety
///
/// `writer` is null or points to a `leap_shard_writer_t`.
#[no_mangle]
pub unsafe extern "C" fn leap_shard_writer_release(
    writer: *mut leap_shard_writer_t,
) -> leap_status_t {
    // SAFETY: the caller's contract is `take`'s.
    match unsafe { take(writer) } {
        Ok(w) => {
            w.release();
            leap_status_t::LEAP_OK
        }
        Err(e) => e,
    }
}
