//! The C API called from Rust, as C calls it: bad input of every kind gets
//! its error code, and normal use gives exact counts. Runs under Miri
//! (`cargo +nightly miri test -p leaparray-ffi`), which checks that no bad
//! input reaches undefined behaviour on the Rust side.

use core::ptr::{null, null_mut};
use std::alloc::{alloc_zeroed, dealloc, Layout};

use leaparray_ffi::leap_status_t::*;
use leaparray_ffi::*;

/// Zeroed storage for a `T`, with room for a misaligned copy: `Storage`
/// owns `size_of::<T>() + 2 * align_of::<T>()` bytes aligned to `T`.
struct Storage<T> {
    base: *mut u8,
    layout: Layout,
    _t: core::marker::PhantomData<T>,
}

impl<T> Storage<T> {
    fn zeroed() -> Self {
        let layout = Layout::from_size_align(
            core::mem::size_of::<T>() + 2 * core::mem::align_of::<T>(),
            core::mem::align_of::<T>(),
        )
        .unwrap();
        // SAFETY: the layout is not zero-sized.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null());
        Storage {
            base,
            layout,
            _t: core::marker::PhantomData,
        }
    }

    /// Storage filled with `byte`: initialised bytes that are not an object.
    fn filled(byte: u8) -> Self {
        let s = Self::zeroed();
        // SAFETY: `base` owns `layout.size()` bytes.
        unsafe { s.base.write_bytes(byte, s.layout.size()) };
        s
    }

    /// The aligned object.
    fn ptr(&self) -> *mut T {
        self.base.cast()
    }

    /// `offset` bytes past the aligned object: misaligned for any offset
    /// that is not a multiple of the alignment.
    fn at(&self, offset: usize) -> *mut T {
        self.base.wrapping_add(offset).cast()
    }

    /// Copies the object's bytes into `other` (C's `memcpy`).
    fn copy_to(&self, other: &Storage<T>) {
        // SAFETY: both own at least `size_of::<T>()` bytes, apart.
        unsafe { core::ptr::copy_nonoverlapping(self.base, other.base, core::mem::size_of::<T>()) };
    }
}

impl<T> Drop for Storage<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { dealloc(self.base, self.layout) };
    }
}

const W: u64 = 50;

/// Every bad input of a gate's init and calls, then exact counts: 100 of
/// 150 pass in one interval, and the exact `retry_after`.
#[test]
fn gate_bad_input_and_exact_counts() {
    let g = Storage::<leap_gate2_t>::zeroed();
    let mut out = 0u64;
    // SAFETY (this and every block below): the pointers are null, or point
    // into storage this test owns, as the header's contract allows.
    unsafe {
        assert_eq!(leap_gate2_init(null_mut(), W, 100), LEAP_ERR_NULL);
        assert_eq!(leap_gate2_init(g.at(8), W, 100), LEAP_ERR_MISALIGNED);
        assert_eq!(leap_gate2_init(g.at(1), W, 100), LEAP_ERR_MISALIGNED);
        assert_eq!(leap_gate2_init(g.ptr(), 0, 100), LEAP_ERR_WINDOW);
        assert_eq!(leap_gate2_init(g.ptr(), W, 0), LEAP_ERR_LIMIT);
        assert_eq!(
            leap_gate2_init(g.ptr(), W, LEAP_GATE_MAX_LIMIT + 1),
            LEAP_ERR_LIMIT
        );
        assert_eq!(leap_gate2_init(g.ptr(), W, u64::MAX), LEAP_ERR_LIMIT);
        // Zeroed, never initialised.
        assert_eq!(leap_gate2_try_acquire(g.ptr(), 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_gate2_remaining(g.ptr(), 0, &mut out), LEAP_ERR_UNINIT);
        assert_eq!(leap_gate2_try_acquire(null(), 0, 1), LEAP_ERR_NULL);
        assert_eq!(leap_gate2_try_acquire(g.at(4), 0, 1), LEAP_ERR_MISALIGNED);

        assert_eq!(leap_gate2_init(g.ptr(), W, 100), LEAP_OK);
        assert_eq!(leap_gate2_init(g.ptr(), W, 100), LEAP_ERR_ALREADY_INIT);
        let passed = (0..150)
            .filter(|_| leap_gate2_try_acquire(g.ptr(), 10, 1) == LEAP_PASS)
            .count();
        assert_eq!(passed, 100);
        assert_eq!(leap_gate2_try_acquire(g.ptr(), 99, 1), LEAP_BLOCK);
        assert_eq!(leap_gate2_retry_after(g.ptr(), 60, 1, &mut out), LEAP_OK);
        assert_eq!(out, 40); // the 100 of [0, 50) leave at 100
        assert_eq!(
            leap_gate2_retry_after(g.ptr(), 60, 101, &mut out),
            LEAP_NEVER
        );
        assert_eq!(
            leap_gate2_retry_after(g.ptr(), 60, 1, null_mut()),
            LEAP_ERR_NULL
        );
        let odd = (&mut out as *mut u64)
            .cast::<u8>()
            .wrapping_add(1)
            .cast::<u64>();
        assert_eq!(
            leap_gate2_retry_after(g.ptr(), 60, 1, odd),
            LEAP_ERR_MISALIGNED
        );
        assert_eq!(leap_gate2_remaining(g.ptr(), 100, &mut out), LEAP_OK);
        assert_eq!(out, 100);
        assert_eq!(leap_gate2_try_acquire(g.ptr(), 100, 100), LEAP_PASS);

        // A copy elsewhere is not an object; nor is another type's storage.
        let copy = Storage::<leap_gate2_t>::zeroed();
        g.copy_to(&copy);
        assert_eq!(leap_gate2_try_acquire(copy.ptr(), 100, 1), LEAP_ERR_UNINIT);
        let g4 = Storage::<leap_gate4_t>::zeroed();
        assert_eq!(leap_gate4_init(g4.ptr(), W, 3), LEAP_OK);
        assert_eq!(
            leap_gate2_try_acquire(g4.ptr().cast(), 0, 1),
            LEAP_ERR_UNINIT
        );
        assert_eq!(leap_gate4_try_acquire(g4.ptr(), 0, 3), LEAP_PASS);
        assert_eq!(leap_gate4_try_acquire(g4.ptr(), 199, 1), LEAP_BLOCK);
        assert_eq!(leap_gate4_try_acquire(g4.ptr(), 200, 3), LEAP_PASS);
    }
}

/// Garbage (initialised bytes that are no object) is not an object, and
/// init still takes it.
#[test]
fn garbage_is_not_an_object() {
    let g = Storage::<leap_gate10_t>::filled(0xa5);
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_gate10_try_acquire(g.ptr(), 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_gate10_init(g.ptr(), W, 7), LEAP_OK);
        let passed = (0..9)
            .filter(|_| leap_gate10_try_acquire(g.ptr(), 0, 1) == LEAP_PASS)
            .count();
        assert_eq!(passed, 7);
    }
}

/// A shared table and a single-writer one: bad input, the per-key limit
/// exactly, the burst deciding as single calls do.
#[test]
fn keyed_tables_bad_input_and_exact_counts() {
    let k = Storage::<leap_keyed64_t>::zeroed();
    let l = Storage::<leap_local64_t>::zeroed();
    let mut out = 0u64;
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_keyed64_init(null_mut(), W, 3), LEAP_ERR_NULL);
        assert_eq!(leap_keyed64_init(k.at(16), W, 3), LEAP_ERR_MISALIGNED);
        assert_eq!(leap_keyed64_init(k.ptr(), 0, 3), LEAP_ERR_WINDOW);
        assert_eq!(leap_keyed64_init(k.ptr(), W, 0), LEAP_ERR_LIMIT);
        assert_eq!(
            leap_keyed64_init(k.ptr(), W, LEAP_KEYED_MAX_LIMIT + 1),
            LEAP_ERR_LIMIT
        );
        assert_eq!(leap_keyed64_try_acquire(k.ptr(), 1, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_local64_init(l.at(8), W, 3), LEAP_ERR_MISALIGNED);
        assert_eq!(
            leap_local64_init(l.ptr(), W, LEAP_KEYED_MAX_LIMIT + 1),
            LEAP_ERR_LIMIT
        );
        assert_eq!(leap_local64_try_acquire(l.ptr(), 1, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_local64_try_acquire(null_mut(), 1, 0, 1), LEAP_ERR_NULL);

        assert_eq!(leap_keyed64_init(k.ptr(), W, 3), LEAP_OK);
        assert_eq!(leap_local64_init(l.ptr(), W, 3), LEAP_OK);
        assert_eq!(leap_local64_init(l.ptr(), W, 3), LEAP_ERR_ALREADY_INIT);
        // The single-writer storage is not a shared table, nor the reverse
        // (a shared table's alignment is 128, which the local's may lack).
        let expect = if (l.ptr() as usize).is_multiple_of(LEAP_KEYED64_ALIGN) {
            LEAP_ERR_UNINIT
        } else {
            LEAP_ERR_MISALIGNED
        };
        assert_eq!(leap_keyed64_try_acquire(l.ptr().cast(), 1, 0, 1), expect);
        assert_eq!(
            leap_local64_try_acquire(k.ptr().cast(), 1, 0, 1),
            LEAP_ERR_UNINIT
        );

        for key in 0..20u64 {
            let passed = (0..5)
                .filter(|_| leap_keyed64_try_acquire(k.ptr(), key, 10, 1) == LEAP_PASS)
                .count();
            assert_eq!(passed, 3, "shared table, key {key}");
            let passed = (0..5)
                .filter(|_| leap_local64_try_acquire(l.ptr(), key, 10, 1) == LEAP_PASS)
                .count();
            assert_eq!(passed, 3, "single-writer table, key {key}");
        }
        assert_eq!(
            leap_keyed64_retry_after(k.ptr(), 1, 60, 1, &mut out),
            LEAP_OK
        );
        assert_eq!(out, 40);
        assert_eq!(
            leap_local64_retry_after(l.ptr(), 1, 60, 1, &mut out),
            LEAP_OK
        );
        assert_eq!(out, 40);
        assert_eq!(
            leap_keyed64_retry_after(k.ptr(), 1, 60, 4, &mut out),
            LEAP_NEVER
        );
        assert_eq!(
            leap_local64_retry_after(l.ptr(), 1, 60, 4, &mut out),
            LEAP_NEVER
        );
        assert_eq!(leap_keyed64_remaining(k.ptr(), 99, 60, &mut out), LEAP_OK);
        assert_eq!(out, 3);
        assert_eq!(leap_local64_remaining(l.ptr(), 1, 100, &mut out), LEAP_OK);
        assert_eq!(out, 3);

        // A burst decides as the single calls of a shared table do: the
        // same requests, in order, into a fresh pair of tables.
        let k2 = Storage::<leap_keyed64_t>::zeroed();
        let l2 = Storage::<leap_local64_t>::zeroed();
        assert_eq!(leap_keyed64_init(k2.ptr(), W, 3), LEAP_OK);
        assert_eq!(leap_local64_init(l2.ptr(), W, 3), LEAP_OK);
        let requests: Vec<leap_request_t> = (0..150u64)
            .map(|i| leap_request_t {
                key: i % 7,
                n: 1 + i % 2,
            })
            .collect();
        let mut decisions = vec![LEAP_ERR_OTHER; requests.len()];
        let r = leap_local64_try_acquire_burst(
            l2.ptr(),
            5,
            requests.as_ptr(),
            requests.len(),
            decisions.as_mut_ptr(),
        );
        assert_eq!(r, LEAP_OK);
        for (req, d) in requests.iter().zip(&decisions) {
            assert_eq!(*d, leap_keyed64_try_acquire(k2.ptr(), req.key, 5, req.n));
        }
        assert_eq!(decisions.iter().filter(|d| **d == LEAP_PASS).count(), 14); // 7 keys: 1 + 2
        let r = leap_local64_try_acquire_burst(l2.ptr(), 5, null(), 1, decisions.as_mut_ptr());
        assert_eq!(r, LEAP_ERR_NULL);
        let odd = decisions.as_mut_ptr().cast::<u8>().wrapping_add(2).cast();
        let r = leap_local64_try_acquire_burst(l2.ptr(), 5, requests.as_ptr(), 1, odd);
        assert_eq!(r, LEAP_ERR_MISALIGNED);
    }
}

/// The 1,024-key tables: the per-key limit for more keys than a probe.
#[test]
fn keyed_1k_exact() {
    let k = Storage::<leap_keyed1k_t>::zeroed();
    let l = Storage::<leap_local1k_t>::zeroed();
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_keyed1k_init(k.ptr(), W, 2), LEAP_OK);
        assert_eq!(leap_local1k_init(l.ptr(), W, 2), LEAP_OK);
        let keys = if cfg!(miri) { 40 } else { 500 };
        for key in 0..keys {
            for (name, pass) in [
                ("shared", leap_keyed1k_try_acquire(k.ptr(), key, 0, 2)),
                ("local", leap_local1k_try_acquire(l.ptr(), key, 0, 2)),
            ] {
                assert_eq!(pass, LEAP_PASS, "{name}, key {key}");
            }
            assert_eq!(leap_keyed1k_try_acquire(k.ptr(), key, 0, 1), LEAP_BLOCK);
            assert_eq!(leap_local1k_try_acquire(l.ptr(), key, 0, 1), LEAP_BLOCK);
        }
    }
}

/// The 16,384-key tables build and decide (not under Miri: 768 KiB each).
/// On a thread with room for init's copies of a table (a debug build's
/// constructors make several on the stack; README, "Stack").
#[test]
#[cfg_attr(miri, ignore = "768 KiB tables: slow under Miri")]
fn keyed_16k_exact() {
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(keyed_16k)
        .unwrap()
        .join()
        .unwrap();
}

fn keyed_16k() {
    let k = Storage::<leap_keyed16k_t>::zeroed();
    let l = Storage::<leap_local16k_t>::zeroed();
    let mut out = 0;
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_keyed16k_init(k.ptr(), W, 5), LEAP_OK);
        assert_eq!(leap_local16k_init(l.ptr(), W, 5), LEAP_OK);
        assert_eq!(leap_keyed16k_try_acquire(k.ptr(), 9, 0, 5), LEAP_PASS);
        assert_eq!(leap_keyed16k_try_acquire(k.ptr(), 9, 0, 1), LEAP_BLOCK);
        assert_eq!(leap_local16k_try_acquire(l.ptr(), 9, 0, 5), LEAP_PASS);
        assert_eq!(leap_local16k_try_acquire(l.ptr(), 9, 0, 1), LEAP_BLOCK);
        assert_eq!(leap_keyed16k_remaining(k.ptr(), 9, 100, &mut out), LEAP_OK);
        assert_eq!(out, 5);
        assert_eq!(
            leap_local16k_retry_after(l.ptr(), 9, 10, 1, &mut out),
            LEAP_OK
        );
        assert_eq!(out, 90);
    }
}

/// The ring: bad input, then exact sums per counter and over the interval.
#[test]
fn array_bad_input_and_exact_sums() {
    let a = Storage::<leap_array_t>::zeroed();
    let mut out = 0u64;
    let mut sums = [0u64; LEAP_COUNTERS];
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_array_init(null_mut(), W), LEAP_ERR_NULL);
        assert_eq!(leap_array_init(a.at(8), W), LEAP_ERR_MISALIGNED);
        assert_eq!(leap_array_init(a.ptr(), 0), LEAP_ERR_WINDOW);
        assert_eq!(leap_array_add(a.ptr(), 0, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_array_init(a.ptr(), W), LEAP_OK);
        assert_eq!(
            leap_array_add(a.ptr(), 0, LEAP_COUNTERS as u32, 1),
            LEAP_ERR_COUNTER
        );
        assert_eq!(leap_array_add(a.ptr(), 0, u32::MAX, 1), LEAP_ERR_COUNTER);
        assert_eq!(leap_array_sum(a.ptr(), 0, 4, &mut out), LEAP_ERR_COUNTER);
        for t in 0..20u64 {
            assert_eq!(leap_array_add(a.ptr(), t * W, (t % 4) as u32, t), LEAP_OK);
        }
        // At window 19 the live windows are 10..=19.
        assert_eq!(leap_array_sum(a.ptr(), 19 * W, 0, &mut out), LEAP_OK);
        assert_eq!(out, 12 + 16);
        assert_eq!(leap_array_sums(a.ptr(), 19 * W, sums.as_mut_ptr()), LEAP_OK);
        assert_eq!(sums, [12 + 16, 13 + 17, 10 + 14 + 18, 11 + 15 + 19]);
        assert_eq!(leap_array_add(a.ptr(), 0, 0, 1), LEAP_ERR_STALE);
        assert_eq!(
            leap_array_add(a.ptr(), 19 * W, 1, u64::MAX),
            LEAP_ERR_SATURATED
        );
        assert_eq!(leap_array_sums(a.ptr(), 0, null_mut()), LEAP_ERR_NULL);
    }
}

/// Shards: claims and their errors, writer adds, shared adds, exact sums,
/// release and claim again.
#[test]
fn shards_claims_and_exact_sums() {
    let s = Storage::<leap_shards_t>::zeroed();
    let writers: Vec<Storage<leap_shard_writer_t>> =
        (0..=LEAP_SHARDS).map(|_| Storage::zeroed()).collect();
    let w0 = writers[0].ptr();
    let mut out = 0u64;
    let mut sums = [0u64; LEAP_COUNTERS];
    // SAFETY: as above; `s` outlives every writer (released before it drops).
    unsafe {
        assert_eq!(leap_shards_init(s.at(64), W), LEAP_ERR_MISALIGNED);
        assert_eq!(leap_shards_init(s.ptr(), 0), LEAP_ERR_WINDOW);
        assert_eq!(leap_shards_claim(s.ptr(), 0, w0), LEAP_ERR_UNINIT);
        assert_eq!(leap_shards_add(s.ptr(), 0, 0, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_shards_init(s.ptr(), W), LEAP_OK);
        assert_eq!(leap_shard_writer_add(w0, 0, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_shards_claim(s.ptr(), 0, null_mut()), LEAP_ERR_NULL);
        assert_eq!(
            leap_shards_claim(s.ptr(), LEAP_SHARDS, w0),
            LEAP_ERR_NO_SUCH_SHARD
        );
        assert_eq!(leap_shards_claim(s.ptr(), 0, w0), LEAP_OK);
        assert_eq!(leap_shards_claim(s.ptr(), 0, w0), LEAP_ERR_ALREADY_INIT);
        assert_eq!(
            leap_shards_claim(s.ptr(), 0, writers[1].ptr()),
            LEAP_ERR_CLAIMED
        );
        for t in 0..100 {
            assert_eq!(leap_shard_writer_add(w0, t, 0, 1), LEAP_OK);
            assert_eq!(leap_shard_writer_add(w0, t, 3, 1_500), LEAP_OK);
            assert_eq!(leap_shards_add(s.ptr(), t as usize, t, 0, 1), LEAP_OK);
        }
        assert_eq!(leap_shard_writer_add(w0, 0, 4, 1), LEAP_ERR_COUNTER);
        assert_eq!(leap_shards_sum(s.ptr(), 99, 0, &mut out), LEAP_OK);
        assert_eq!(out, 200);
        assert_eq!(leap_shards_sums(s.ptr(), 99, sums.as_mut_ptr()), LEAP_OK);
        assert_eq!(sums, [200, 0, 0, 150_000]);
        // Every shard claimed: a shared add has nowhere to go.
        for (i, w) in writers.iter().enumerate().take(LEAP_SHARDS).skip(1) {
            assert_eq!(leap_shards_claim(s.ptr(), i, w.ptr()), LEAP_OK);
        }
        assert_eq!(
            leap_shards_add(s.ptr(), 0, 99, 0, 1),
            LEAP_ERR_NO_FREE_SHARD
        );
        for w in writers.iter().take(LEAP_SHARDS) {
            assert_eq!(leap_shard_writer_release(w.ptr()), LEAP_OK);
        }
        assert_eq!(leap_shard_writer_release(w0), LEAP_ERR_UNINIT);
        assert_eq!(leap_shard_writer_add(w0, 99, 0, 1), LEAP_ERR_UNINIT);
        assert_eq!(leap_shards_add(s.ptr(), 0, 99, 0, 1), LEAP_OK);
        // Released: the storage takes a new claim, which adds on.
        assert_eq!(leap_shards_claim(s.ptr(), 0, w0), LEAP_OK);
        assert_eq!(leap_shard_writer_add(w0, 99, 0, 1), LEAP_OK);
        assert_eq!(leap_shards_sum(s.ptr(), 99, 0, &mut out), LEAP_OK);
        assert_eq!(out, 202);
        assert_eq!(leap_shard_writer_release(w0), LEAP_OK);
    }
}

/// The two objects' pointers, for threads (C would pass them freely).
#[derive(Clone, Copy)]
struct Both(*mut leap_gate2_t, *mut leap_keyed64_t);

// SAFETY: the objects are shared by design (`Gate` and `KeyedGate` are
// `Sync`); the pointers stay valid while the scoped threads run.
unsafe impl Send for Both {}

impl Both {
    fn get(self) -> (*mut leap_gate2_t, *mut leap_keyed64_t) {
        (self.0, self.1)
    }
}

/// Threads racing on one gate and one shared table: exactly the limit
/// passes, per interval and per key.
#[test]
fn racing_threads_exact() {
    let g = Storage::<leap_gate2_t>::zeroed();
    let k = Storage::<leap_keyed64_t>::zeroed();
    // SAFETY: as above.
    unsafe {
        assert_eq!(leap_gate2_init(g.ptr(), W, 500), LEAP_OK);
        assert_eq!(leap_keyed64_init(k.ptr(), W, 50), LEAP_OK);
    }
    let both = Both(g.ptr(), k.ptr());
    let per = if cfg!(miri) { 60 } else { 2_000 };
    let passes: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(move || {
                    let (g, k) = both.get();
                    let mut n = (0, 0);
                    for i in 0..per {
                        // SAFETY: both objects outlive the scope.
                        unsafe {
                            n.0 += (leap_gate2_try_acquire(g, 10, 1) == LEAP_PASS) as usize;
                            n.1 += (leap_keyed64_try_acquire(k, (i % 3) as u64, 10, 1) == LEAP_PASS)
                                as usize;
                        }
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let gate: usize = passes.iter().map(|p| p.0).sum();
    let keyed: usize = passes.iter().map(|p| p.1).sum();
    assert_eq!(gate, (2 * per).min(500));
    assert_eq!(keyed, (2 * per).min(150));
}

/// Every status has its own description.
#[test]
fn every_status_is_described() {
    let unknown = leap_status_str(i32::MIN);
    let mut seen = std::collections::HashSet::new();
    for s in -16..=3 {
        let p = leap_status_str(s);
        // SAFETY: `leap_status_str` returns a static C string.
        let text = unsafe { std::ffi::CStr::from_ptr(p) };
        assert_ne!(p, unknown, "status {s}");
        assert!(seen.insert(text.to_owned()), "status {s}: {text:?} twice");
    }
    assert_eq!(LEAP_ERR_OTHER as i32, -15);
    assert_eq!(LEAP_ERR_NOT_LOCK_FREE as i32, -16);
    assert_eq!(LEAP_NEVER as i32, 3);
}
