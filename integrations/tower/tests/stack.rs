//! Building a layer needs no more stack than a thread's default: the key
//! table (`48 * CAP` bytes, 768 KiB by default) never passes through the
//! caller's stack, even in an unoptimized build.

use std::time::Duration;

use leaparray_tower::{Key, RateLimitLayer};

/// A thread's default stack (what `std::thread::spawn` and tokio's workers
/// get without `RUST_MIN_STACK`), set explicitly so that the environment
/// cannot raise it.
const THREAD_STACK: usize = 2 * 1024 * 1024;

/// The default layer (16,384 keys) built on a 2 MiB thread.
#[test]
fn the_default_layer_builds_on_a_2_mib_stack() {
    let built = std::thread::Builder::new()
        .stack_size(THREAD_STACK)
        .spawn(|| {
            let layer = RateLimitLayer::builder()
                .per_key("ip", 5, Duration::from_secs(1), Key::peer_ip())
                .build()
                .unwrap();
            layer.occupancy().unwrap().resident
        })
        .unwrap()
        .join();
    assert_eq!(built.ok(), Some(0));
}
