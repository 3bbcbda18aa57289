//! What governor 0.10's users write, each pattern beside its counterpart
//! on this crate's store, compiled and run: the drop-in, shown. Each test
//! names governor's line first, then the one that replaces it.
//!
//! Run: `cargo test -p leaparray-governor --test dropin`

use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use governor::middleware::{NoOpMiddleware, StateInformationMiddleware};
use governor::{DefaultKeyedRateLimiter, Jitter, Quota, RateLimiter};
use leaparray_governor::{KeyedRateLimiter, KeyedStore, LeapArrayKeyed};
use nonzero_ext::nonzero;

fn quota() -> Quota {
    Quota::per_second(nonzero!(3u32))
}

/// The first four decisions on one key: three admitted, one refused.
fn four<K: Clone>(check: impl Fn(&K) -> bool, key: K) -> [bool; 4] {
    [0; 4].map(|_| check(&key))
}

/// `RateLimiter::keyed(quota)`.
#[test]
fn keyed() {
    let theirs = RateLimiter::keyed(quota());
    let ours = RateLimiter::leaparray(quota());
    let ip: IpAddr = "192.0.2.1".parse().unwrap();
    let want = four(|k| theirs.check_key(k).is_ok(), ip);
    assert_eq!(want, [true, true, true, false]);
    assert_eq!(four(|k| ours.check_key(k).is_ok(), ip), want);
}

/// `RateLimiter::dashmap(quota)`, with the capacity from configuration.
#[test]
fn dashmap() {
    let slots: usize = "4096".parse().unwrap();
    let theirs = RateLimiter::dashmap(quota());
    let ours = RateLimiter::leaparray_with_capacity(quota(), slots);
    let want = four(|k| theirs.check_key(k).is_ok(), "alice");
    assert_eq!(four(|k| ours.check_key(k).is_ok(), "alice"), want);
    assert_eq!(ours.into_state_store().capacity(), slots);
}

/// `RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>()`.
#[test]
fn with_middleware_chained_on_the_constructor() {
    let theirs = RateLimiter::keyed(quota()).with_middleware::<StateInformationMiddleware>();
    let ours = RateLimiter::leaparray(quota()).with_middleware::<StateInformationMiddleware>();
    for _ in 0..3 {
        assert_eq!(
            ours.check_key(&7u64).unwrap().remaining_burst_capacity(),
            theirs.check_key(&7u64).unwrap().remaining_burst_capacity()
        );
    }
    assert!(ours.check_key(&7u64).is_err() && theirs.check_key(&7u64).is_err());
}

/// A struct field naming the limiter: `DefaultKeyedRateLimiter<K, MW>`
/// becomes `KeyedRateLimiter<K, MW>`, in an `Arc` shared by threads.
#[test]
fn a_struct_field_naming_the_limiter() {
    struct Theirs {
        plain: Arc<DefaultKeyedRateLimiter<IpAddr>>,
        headers: DefaultKeyedRateLimiter<IpAddr, StateInformationMiddleware>,
    }
    struct Ours {
        plain: Arc<KeyedRateLimiter<IpAddr>>,
        headers: KeyedRateLimiter<IpAddr, StateInformationMiddleware>,
    }
    let theirs = Theirs {
        plain: Arc::new(RateLimiter::keyed(quota())),
        headers: RateLimiter::keyed(quota()).with_middleware(),
    };
    let ours = Ours {
        plain: Arc::new(RateLimiter::leaparray(quota())),
        headers: RateLimiter::leaparray(quota()).with_middleware(),
    };
    let ip: IpAddr = "2001:db8::1".parse().unwrap();
    let plain = Arc::clone(&ours.plain);
    let admitted =
        std::thread::spawn(move || (0..5).filter(|_| plain.check_key(&ip).is_ok()).count());
    assert_eq!(admitted.join().unwrap(), 3);
    assert!(ours.plain.check_key(&ip).is_err() && theirs.plain.check_key(&ip).is_ok());
    assert_eq!(
        ours.headers
            .check_key(&ip)
            .unwrap()
            .remaining_burst_capacity(),
        theirs
            .headers
            .check_key(&ip)
            .unwrap()
            .remaining_burst_capacity()
    );
}

/// `until_key_ready_with_jitter` in tokio tasks: 10 tasks on 2 keys, a
/// burst of 3 each and one more every 20 ms, so the fifth on a key waits
/// for two refills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_key_ready_with_jitter_in_tokio_tasks() {
    let q = Quota::with_period(Duration::from_millis(20))
        .unwrap()
        .allow_burst(nonzero!(3u32));
    let limiter: Arc<KeyedRateLimiter<u32>> = Arc::new(RateLimiter::leaparray(q));
    let start = tokio::time::Instant::now();
    let tasks: Vec<_> = (0..10u32)
        .map(|i| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move {
                limiter
                    .until_key_ready_with_jitter(&(i % 2), Jitter::up_to(Duration::from_millis(5)))
                    .await;
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    // The fifth request on a key waits for two refills (40 ms; 1 ms for
    // the two clocks, governor's and tokio's, read apart).
    assert!(start.elapsed() >= Duration::from_millis(39));
    assert!(limiter.check_key(&0).is_err());
}

/// A custom hasher: `RateLimiter::dashmap_with_hasher(quota, hasher)`.
#[test]
fn a_custom_hasher() {
    #[derive(Clone, Default)]
    struct Fnv;
    struct FnvHasher(u64);
    impl Hasher for FnvHasher {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    impl BuildHasher for Fnv {
        type Hasher = FnvHasher;
        fn build_hasher(&self) -> FnvHasher {
            FnvHasher(0xcbf2_9ce4_8422_2325)
        }
    }
    let theirs: DefaultKeyedRateLimiter<u64, NoOpMiddleware, Fnv> =
        RateLimiter::dashmap_with_hasher(quota(), Fnv);
    let ours: KeyedRateLimiter<u64, NoOpMiddleware, Fnv> =
        RateLimiter::leaparray_with_hasher(quota(), 1024, Fnv);
    let want = four(|k| theirs.check_key(k).is_ok(), 99);
    assert_eq!(four(|k| ours.check_key(k).is_ok(), 99), want);
    // The store built alone takes the hasher the same way.
    let _store: KeyedStore<u64, Fnv> = KeyedStore::with_capacity_and_hasher(64, Fnv);
}
