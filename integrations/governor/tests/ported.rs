//! governor's own keyed tests (governor 0.10.4, `governor/tests/keyed*.rs`,
//! `custom_hashers.rs`, `future.rs` and the keyed store
//! test of `src/state/in_memory.rs`), each run against governor's
//! `DashMapStateStore`, its `HashMapStateStore` and this crate's
//! `KeyedStore`: the macro `ported!` instantiates the suite once per store.
//! `PORTED.md` (next to this file) lists what was ported, what was changed
//! and what was left, and why.

use std::hash::Hash;

use governor::state::keyed::{DashMapStateStore, HashMapStateStore};
use leaparray_governor::KeyedStore;

/// Whether a store holds a key: `DashMap::contains_key` in governor's
/// `retained_keys`, `lock().keys()` for the `HashMap`.
trait Holds<K> {
    fn holds(&self, key: &K) -> bool;
}

impl<K: Hash + Eq + Clone> Holds<K> for DashMapStateStore<K> {
    fn holds(&self, key: &K) -> bool {
        self.contains_key(key)
    }
}

impl<K: Hash + Eq + Clone> Holds<K> for HashMapStateStore<K> {
    fn holds(&self, key: &K) -> bool {
        self.lock().contains_key(key)
    }
}

impl<K: Hash + Eq + Clone> Holds<K> for KeyedStore<K> {
    fn holds(&self, key: &K) -> bool {
        self.contains_key(key)
    }
}

macro_rules! ported {
    ($module:ident, $store:ident) => {
        mod $module {
            use super::*;
            use governor::{
                clock::{Clock, DefaultClock, FakeRelativeClock},
                middleware::NoOpMiddleware,
                Quota, RateLimiter,
            };
            use nonzero_ext::nonzero;
            use std::time::Duration;

            type Store<K> = $store<K>;
            type Lim<K, C> = RateLimiter<K, Store<K>, C, NoOpMiddleware<<C as Clock>::Instant>>;

            fn store<K: Hash + Eq + Clone>() -> Store<K> {
                Store::<K>::default()
            }

            fn with_clock<K: Hash + Eq + Clone>(
                quota: Quota,
                clock: FakeRelativeClock,
            ) -> Lim<K, FakeRelativeClock> {
                RateLimiter::new(quota, store(), clock)
            }

            fn real<K: Hash + Eq + Clone>(quota: Quota) -> Lim<K, DefaultClock> {
                RateLimiter::new(quota, store(), DefaultClock::default())
            }

            const KEYS: &[u32] = &[1u32, 2u32];

            // tests/keyed.rs
            #[test]
            fn default_keyed() {
                let limiter = real::<u32>(Quota::per_second(nonzero!(20u32)));
                assert_eq!(Ok(()), limiter.check_key(&1));
            }

            // tests/keyed_dashmap.rs, tests/keyed_hashmap.rs
            #[test]
            fn accepts_first_cell() {
                let clock = FakeRelativeClock::default();
                let lb = with_clock(Quota::per_second(nonzero!(5u32)), clock.clone());
                for key in KEYS {
                    assert_eq!(Ok(()), lb.check_key(&key), "key {key:?}");
                }
            }

            #[test]
            fn rejects_too_many() {
                let clock = FakeRelativeClock::default();
                let lb = with_clock(Quota::per_second(nonzero!(2u32)), clock.clone());
                let ms = Duration::from_millis(1);

                for key in KEYS {
                    // use up our burst capacity (2 in the first second):
                    assert_eq!(Ok(()), lb.check_key(key), "Now: {:?}", clock.now());
                    clock.advance(ms);
                    assert_eq!(Ok(()), lb.check_key(key), "Now: {:?}", clock.now());

                    clock.advance(ms);
                    assert_ne!(Ok(()), lb.check_key(key), "Now: {:?}", clock.now());

                    // should be ok again in 1s:
                    clock.advance(ms * 1000);
                    assert_eq!(Ok(()), lb.check_key(key), "Now: {:?}", clock.now());
                    clock.advance(ms);
                    assert_eq!(Ok(()), lb.check_key(key));

                    clock.advance(ms);
                    assert_ne!(Ok(()), lb.check_key(key), "{lb:?}");
                }
            }

            fn retained_keys<T: Clone + Hash + Eq + Copy + Ord>(
                keys: &[T],
                limiter: RateLimiter<
                    T,
                    Store<T>,
                    FakeRelativeClock,
                    NoOpMiddleware<<FakeRelativeClock as Clock>::Instant>,
                >,
            ) -> Vec<T> {
                let state = limiter.into_state_store();
                let mut keys: Vec<T> = keys.iter().copied().filter(|&k| state.holds(&k)).collect();
                keys.sort();
                keys
            }

            #[test]
            fn expiration() {
                let clock = FakeRelativeClock::default();
                let ms = Duration::from_millis(1);

                let make_bucket = || {
                    let lim = with_clock(Quota::per_second(nonzero!(1u32)), clock.clone());
                    lim.check_key(&"foo").unwrap();
                    clock.advance(ms * 200);
                    lim.check_key(&"bar").unwrap();
                    clock.advance(ms * 600);
                    lim.check_key(&"baz").unwrap();
                    lim
                };
                let keys = &["bar", "baz", "foo"];

                // clean up all keys that are indistinguishable from unoccupied keys:
                let lim_shrunk = make_bucket();
                lim_shrunk.retain_recent();
                assert_eq!(retained_keys(keys, lim_shrunk), keys);

                let lim_later = make_bucket();
                clock.advance(ms * 1200);
                lim_later.retain_recent();
                assert_eq!(retained_keys(keys, lim_later), vec!["bar", "baz"]);

                let lim_later = make_bucket();
                clock.advance(ms * (1200 + 200));
                lim_later.retain_recent();
                assert_eq!(retained_keys(keys, lim_later), vec!["baz"]);

                let lim_later = make_bucket();
                clock.advance(ms * (1200 + 200 + 600));
                lim_later.retain_recent();
                assert_eq!(retained_keys(keys, lim_later), Vec::<&str>::new());
            }

            #[test]
            fn actual_threadsafety() {
                let clock = FakeRelativeClock::default();
                let lim = with_clock(Quota::per_second(nonzero!(20u32)), clock.clone());
                let ms = Duration::from_millis(1);

                for key in KEYS {
                    std::thread::scope(|scope| {
                        for _i in 0..20 {
                            scope.spawn(|| {
                                assert_eq!(Ok(()), lim.check_key(key));
                            });
                        }
                    });

                    clock.advance(ms * 2);
                    assert_ne!(Ok(()), lim.check_key(key));
                    clock.advance(ms * 998);
                    assert_eq!(Ok(()), lim.check_key(key));
                }
            }

            #[test]
            fn length() {
                let lim = real(Quota::per_second(nonzero!(1u32)));
                assert_eq!(lim.len(), 0);
                assert!(lim.is_empty());

                lim.check_key(&"foo").unwrap();
                assert_eq!(lim.len(), 1);
                assert!(!lim.is_empty(),);

                lim.check_key(&"bar").unwrap();
                assert_eq!(lim.len(), 2);
                assert!(!lim.is_empty());

                lim.check_key(&"baz").unwrap();
                assert_eq!(lim.len(), 3);
                assert!(!lim.is_empty());
            }

            #[test]
            fn shrink_to_fit() {
                let clock = FakeRelativeClock::default();
                // a steady rate of 3ms between elements:
                let lim = with_clock(Quota::per_second(nonzero!(20u32)), clock.clone());
                let ms = Duration::from_millis(1);

                assert_eq!(
                    lim.check_key_n(&"long-lived".to_string(), nonzero!(10_u32)),
                    Ok(Ok(()))
                );
                assert_eq!(lim.check_key(&"short-lived".to_string()), Ok(()));

                // Move the clock forward far enough that the short-lived key gets dropped:
                clock.advance(ms * 300);
                lim.retain_recent();
                lim.shrink_to_fit();

                assert_eq!(lim.len(), 1);
            }

            // tests/custom_hashers.rs: the per-key part of `test_rate_limiter!`
            // with the default hasher (the custom hashers are `custom_hashers`,
            // below the macro).
            #[test]
            fn two_keys_one_second() {
                let clock = FakeRelativeClock::default();
                let lb = with_clock(Quota::per_second(nonzero!(20u32)), clock.clone());

                let key1 = 1u32;
                let key2 = 2u32;

                lb.check_key_n(&key1, nonzero!(20u32)).unwrap().unwrap();
                assert_ne!(lb.check_key(&key1), Ok(()));

                lb.check_key_n(&key2, nonzero!(20u32)).unwrap().unwrap();
                assert_ne!(lb.check_key(&key2), Ok(()));

                // Test reset after 1 second
                clock.advance(Duration::from_secs(1));
                assert_eq!(lb.check_key(&key1), Ok(()));
                assert_eq!(lb.check_key(&key2), Ok(()));

                // Verify remaining capacity tracking
                lb.check_key_n(&key1, nonzero!(19u32)).unwrap().unwrap();
                lb.check_key_n(&key2, nonzero!(19u32)).unwrap().unwrap();
            }

            // tests/future.rs: the keyed tests that check a refused key waits
            // (lower bounds on real time; see PORTED.md for those left).
            #[test]
            fn pauses_keyed() {
                let i = std::time::Instant::now();
                let lim = real::<u32>(Quota::per_second(nonzero!(10u32)));

                // exhaust the limiter:
                loop {
                    if lim.check_key(&1u32).is_err() {
                        break;
                    }
                }

                futures_executor::block_on(lim.until_key_ready(&1u32));
                assert!(i.elapsed() >= Duration::from_millis(100));
            }

            #[test]
            fn pauses_keyed_n() {
                let lim = real::<u32>(Quota::per_second(nonzero!(10u32)));

                // The instant before the six checks (governor takes it
                // after them): the wait is counted from the first cell, so
                // checks slowed by a loaded machine shorten the wait
                // (PORTED.md).
                let i = std::time::Instant::now();
                for _ in 0..6 {
                    lim.check_key(&1u32).unwrap();
                }
                futures_executor::block_on(lim.until_key_n_ready(&1u32, nonzero!(5u32))).unwrap();
                assert!(i.elapsed() >= Duration::from_millis(100));
            }

            #[test]
            fn multiple_keyed() {
                let lim = std::sync::Arc::new(real::<u32>(Quota::per_second(nonzero!(10u32))));
                let mut children = vec![];

                let i = std::time::Instant::now();
                for _i in 0..20 {
                    let lim = std::sync::Arc::clone(&lim);
                    children.push(std::thread::spawn(move || {
                        futures_executor::block_on(lim.until_key_ready(&1u32));
                    }));
                }
                for child in children {
                    child.join().unwrap();
                }
                // by now we've waited for, on average, 10ms; but sometimes the
                // test finishes early; let's assume it takes at least 8ms:
                assert!(i.elapsed() >= Duration::from_millis(8));
            }

            #[test]
            fn errors_on_exceeded_capacity() {
                let lim = real::<u32>(Quota::per_second(nonzero!(10u32)));
                futures_executor::block_on(lim.until_key_n_ready(&1u32, nonzero!(11u32)))
                    .unwrap_err();
            }
        }
    };
}

type Ours<K> = KeyedStore<K>;

ported!(dashmap, DashMapStateStore);
ported!(hashmap, HashMapStateStore);
ported!(keyed_store, Ours);

/// `src/state/in_memory.rs`, `stresstest_collisions`, on one key of a keyed
/// store: not for `HashMapStateStore`, whose mutex runs each closure once
/// (no collision to trigger).
macro_rules! collisions {
    ($module:ident, $store:ident) => {
        mod $module {
            use super::*;
            use governor::{nanos::Nanos, state::StateStore};

            fn store<K: Hash + Eq + Clone>() -> $store<K> {
                $store::<K>::default()
            }

            // src/state/in_memory.rs, stresstest_collisions (on one key of the
            // keyed store): threads incrementing one value through
            // `measure_and_replace` collide (the closure runs again), and the
            // value counts every increment exactly once.
            fn try_triggering_collisions(n_threads: u64, tries_per_thread: u64) -> (u64, u64) {
                let state = store::<u32>();
                let hits: u64 = std::thread::scope(|s| {
                    let threads: Vec<_> = (0..n_threads)
                        .map(|_| {
                            s.spawn(|| {
                                let hits = std::cell::Cell::new(0u64);
                                for _ in 0..tries_per_thread {
                                    assert!(state
                                        .measure_and_replace(&7, |old| {
                                            hits.set(hits.get() + 1);
                                            Ok::<((), Nanos), ()>((
                                                (),
                                                Nanos::from(
                                                    old.map(Nanos::as_u64).unwrap_or(0) + 1,
                                                ),
                                            ))
                                        })
                                        .is_ok());
                                }
                                hits.get()
                            })
                        })
                        .collect();
                    threads.into_iter().map(|t| t.join().unwrap()).sum()
                });
                let value = state
                    .measure_and_replace(&7, |old| Ok::<_, ()>((old, old.unwrap_or_default())))
                    .unwrap()
                    .map_or(0, Nanos::as_u64);
                (value, hits)
            }

            #[test]
            fn stresstest_collisions() {
                const THREADS: u64 = 8;
                const MAX_TRIES: u64 = 20_000_000;
                let (mut value, mut hits) = (0, 0);
                for tries in (0..MAX_TRIES).step_by((MAX_TRIES / 100) as usize) {
                    let attempt = try_triggering_collisions(THREADS, tries);
                    value = attempt.0;
                    hits = attempt.1;
                    assert_eq!(value, tries * THREADS);
                    if hits > value {
                        break;
                    }
                    println!("Didn't trigger a collision in {tries} iterations");
                }
                assert!(hits > value, "{hits} > {value}");
            }
        }
    };
}

collisions!(dashmap_collisions, DashMapStateStore);
collisions!(keyed_store_collisions, Ours);

/// tests/custom_hashers.rs, with its two hashers.
mod custom_hashers {
    use std::hash::{BuildHasher, Hasher};
    use std::time::Duration;

    use governor::{
        clock::FakeRelativeClock, middleware::NoOpMiddleware, nanos::Nanos,
        state::keyed::DashMapStateStore, Quota, RateLimiter,
    };
    use leaparray_governor::KeyedStore;
    use nonzero_ext::nonzero;

    #[derive(Clone, Default, Debug)]
    struct BadHasher;

    impl Hasher for BadHasher {
        fn finish(&self) -> u64 {
            4 // chosen by fair dice roll
        }

        fn write(&mut self, _: &[u8]) {}
    }

    #[derive(Clone, Default, Debug)]
    struct BadHasherBuilder;

    impl BuildHasher for BadHasherBuilder {
        type Hasher = BadHasher;

        fn build_hasher(&self) -> Self::Hasher {
            BadHasher
        }
    }

    #[derive(Clone, Default, Debug)]
    struct CustomHasher {
        value: u64,
    }

    impl Hasher for CustomHasher {
        fn finish(&self) -> u64 {
            self.value.wrapping_mul(0x517cc1b727220a95)
        }

        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.value = self.value.wrapping_add(b as u64);
            }
        }
    }

    #[derive(Clone, Default, Debug)]
    struct CustomHasherBuilder;

    impl BuildHasher for CustomHasherBuilder {
        type Hasher = CustomHasher;

        fn build_hasher(&self) -> Self::Hasher {
            CustomHasher::default()
        }
    }

    macro_rules! test_rate_limiter {
        ($make:expr, $test_name:ident) => {
            #[test]
            fn $test_name() {
                let clock = FakeRelativeClock::default();
                let lb: RateLimiter<u32, _, FakeRelativeClock, NoOpMiddleware<Nanos>> =
                    RateLimiter::new(Quota::per_second(nonzero!(20u32)), $make, clock.clone());

                let key1 = 1u32;
                let key2 = 2u32;

                lb.check_key_n(&key1, nonzero!(20u32)).unwrap().unwrap();
                assert_ne!(lb.check_key(&key1), Ok(()));

                lb.check_key_n(&key2, nonzero!(20u32)).unwrap().unwrap();
                assert_ne!(lb.check_key(&key2), Ok(()));

                // Test reset after 1 second
                clock.advance(Duration::from_secs(1));
                assert_eq!(lb.check_key(&key1), Ok(()));
                assert_eq!(lb.check_key(&key2), Ok(()));

                // Verify remaining capacity tracking
                lb.check_key_n(&key1, nonzero!(19u32)).unwrap().unwrap();
                lb.check_key_n(&key2, nonzero!(19u32)).unwrap().unwrap();
            }
        };
    }

    test_rate_limiter!(
        DashMapStateStore::<u32, _>::with_hasher(BadHasherBuilder),
        test_dashmap_with_identity_hasher
    );
    test_rate_limiter!(
        DashMapStateStore::<u32, _>::with_hasher(CustomHasherBuilder),
        test_dashmap_with_custom_hasher
    );
    test_rate_limiter!(
        KeyedStore::<u32, _>::with_capacity_and_hasher(64, CustomHasherBuilder),
        test_keyed_store_with_custom_hasher
    );

    /// The identity-hasher case changed for `KeyedStore`, whose keys are
    /// their hashes: with a constant hash every key is one fingerprint, so
    /// the two keys share one limit (refused more, never admitted more).
    #[test]
    fn test_keyed_store_with_identity_hasher_shares_one_limit() {
        let clock = FakeRelativeClock::default();
        let lb: RateLimiter<u32, _, FakeRelativeClock, NoOpMiddleware<Nanos>> = RateLimiter::new(
            Quota::per_second(nonzero!(20u32)),
            KeyedStore::<u32, _>::with_capacity_and_hasher(64, BadHasherBuilder),
            clock.clone(),
        );
        lb.check_key_n(&1u32, nonzero!(20u32)).unwrap().unwrap();
        assert_ne!(lb.check_key(&1u32), Ok(()));
        // key 2 is key 1's fingerprint: its burst is spent.
        assert_ne!(lb.check_key(&2u32), Ok(()));
        clock.advance(Duration::from_secs(1));
        lb.check_key_n(&2u32, nonzero!(20u32)).unwrap().unwrap();
        assert_ne!(lb.check_key(&1u32), Ok(()));
    }
}
