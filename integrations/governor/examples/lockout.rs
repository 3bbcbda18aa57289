//! First-time users under a flood of new keys (issue 47, item 3), with
//! this crate's `KeyedStore` and with governor's `DashMapStateStore`, in
//! one run: per-minute quotas of burst 1 and 5, floods of 10x and 100x the
//! table per minute and one new key every microsecond (about 915x for
//! 65,536 slots), 16,000,000 flood keys each (`LOCKOUT_KEYS` to change).
//!
//! `cargo run --release -p leaparray-governor --example lockout` (exit
//! code 1 if a returning flood key was admitted past its quota).

#[path = "../tests/common/lockout.rs"]
mod lockout;

use std::process::ExitCode;
use std::time::Duration;

use governor::state::keyed::DashMapStateStore;
use leaparray_governor::KeyedStore;
use lockout::{run, Outcome, Scenario};

const CAP: usize = 65_536;
/// The memories of evicted keys tried: 32 bytes a slot (the default), 256
/// and 1,024 (`KeyedStore::with_memory`).
const MEMORY: [usize; 3] = [32 * CAP, 256 * CAP, 1024 * CAP];

fn main() -> ExitCode {
    let mut over = 0;
    let keys: u64 = std::env::var("LOCKOUT_KEYS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(16_000_000);
    println!(
        "flood per minute | burst | legit admitted, KeyedStore ({CAP} slots) with 32 B / 256 B / 1 KiB of memory a slot | DashMap | over (returning keys admitted)"
    );
    for burst in [1, 5] {
        for (name, s) in [
            ("10x", Scenario::times_table(10, CAP, keys, burst)),
            ("100x", Scenario::times_table(100, CAP, keys, burst)),
            (
                "1/us (915x)",
                Scenario {
                    gap: Duration::from_micros(1),
                    ..Scenario::times_table(1, CAP, keys, burst)
                },
            ),
        ] {
            let ours = MEMORY.map(|bytes| {
                let store = KeyedStore::<u64>::with_capacity(CAP)
                    .with_quota(s.quota())
                    .with_memory(bytes);
                run(&s, store)
            });
            let theirs = run(&s, DashMapStateStore::<u64>::default());
            let share = |o: &Outcome| 100.0 * o.legit_admitted as f64 / o.legit_asked as f64;
            over += ours.iter().map(|o| o.over).sum::<u64>();
            println!(
                "{name:>16} | {burst} | {:.1}% / {:.1}% / {:.1}% of {} | {:.1}% | {} / {} / {} ({} / {} / {}); DashMap over {}",
                share(&ours[0]),
                share(&ours[1]),
                share(&ours[2]),
                ours[0].legit_asked,
                share(&theirs),
                ours[0].over,
                ours[1].over,
                ours[2].over,
                ours[0].returns_admitted,
                ours[1].returns_admitted,
                ours[2].returns_admitted,
                theirs.over,
            );
        }
    }
    if over > 0 {
        eprintln!("{over} admissions past a key's quota");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
