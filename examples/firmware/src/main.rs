//! leaparray in firmware, under QEMU.
//!
//! A SysTick interrupt handler advances the tick count and, on every tick,
//! records its own events into a `static LeapArray` and asks a `static Gate`
//! for a permit, while the main loop records its events, asks the same gate
//! and reads sums as fast as it can. Both keep a ledger of their `Ok` adds
//! and granted permits per window; both also add to a `Narrow` (32-bit word)
//! array. At the end the firmware checks that every
//! window the array still holds contains exactly the ledgers' counts and that
//! no interval of the gate admitted more than its limit, prints the result
//! through defmt over semihosting, and exits QEMU with success or failure.
//!
//! Cortex-M3 (`thumbv7m-none-eabi`, QEMU `lm3s6965evb`) and Cortex-M0
//! (`thumbv6m-none-eabi`, QEMU `microbit`); see `Cargo.toml` for how each
//! gets interrupt-safe 64-bit atomics. Run from this directory:
//! `cargo run --release --target thumbv7m-none-eabi` (or thumbv6m).

#![no_std]
#![no_main]

use core::num::NonZeroU64;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::debug;
use defmt_semihosting as _;
use leaparray::gate::{Decision, Gate};
use leaparray::{AddError, LeapArray, Narrow};

/// The critical-section implementation defmt and portable-atomic use.
use cortex_m as _;

/// Window length in SysTick ticks.
const WINDOW: u64 = 4;
const RUN_TICKS: u32 = 240;
/// Permits per interval of 2 windows.
const LIMIT: u64 = 40;
const WINDOWS: usize = RUN_TICKS as usize / WINDOW as usize + 8;
/// Counter indices.
const MAIN: usize = 0;
const ISR: usize = 1;

const fn nz(v: u64) -> NonZeroU64 {
    NonZeroU64::new(v).unwrap()
}

static COUNTS: LeapArray<4, 2> = LeapArray::new(nz(WINDOW));
/// The same counts on 32-bit words: lock-free with plain 32-bit CAS on the
/// Cortex-M3, no interrupt masking.
static NARROW: LeapArray<4, 2, Narrow> = LeapArray::new_narrow(nz(WINDOW));
static GATE: Gate<2> = Gate::new(nz(WINDOW), LIMIT);

/// Written by the SysTick handler only.
static TICKS: AtomicU32 = AtomicU32::new(0);

/// A per-window ledger written by one context only (load + store: thumbv6m
/// has no atomic read-modify-write of its own).
struct Ledger([AtomicU32; WINDOWS]);

impl Ledger {
    const fn new() -> Self {
        Ledger([const { AtomicU32::new(0) }; WINDOWS])
    }
    fn bump(&self, window: u64) {
        if let Some(c) = self.0.get(window as usize) {
            c.store(c.load(Relaxed) + 1, Relaxed);
        }
    }
    fn get(&self, window: u64) -> u64 {
        self.0
            .get(window as usize)
            .map_or(0, |c| c.load(Relaxed) as u64)
    }
}

static MAIN_ADDS: Ledger = Ledger::new();
static ISR_ADDS: Ledger = Ledger::new();
static MAIN_PASSES: Ledger = Ledger::new();
static ISR_PASSES: Ledger = Ledger::new();
static ISR_STALE: AtomicU32 = AtomicU32::new(0);
static MAIN_NARROW: Ledger = Ledger::new();
static ISR_NARROW: Ledger = Ledger::new();

#[exception]
fn SysTick() {
    let t = TICKS.load(Relaxed) + 1;
    TICKS.store(t, Relaxed);
    let now = u64::from(t);
    for _ in 0..3 {
        match COUNTS.add(now, ISR, 1) {
            Ok(()) => ISR_ADDS.bump(now / WINDOW),
            Err(_) => ISR_STALE.store(ISR_STALE.load(Relaxed) + 1, Relaxed),
        }
        if NARROW.add(now, ISR, 1).is_ok() {
            ISR_NARROW.bump(now / WINDOW);
        }
    }
    if GATE.try_acquire(now, 1) == Decision::Pass {
        ISR_PASSES.bump(now / WINDOW);
    }
}

fn finish(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::bkpt();
    }
}

#[entry]
fn main() -> ! {
    let Some(p) = cortex_m::Peripherals::take() else {
        finish(false)
    };
    defmt::info!("{} and {}", COUNTS, GATE);
    let mut syst = p.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(40_000);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();

    let (mut adds, mut stale, mut reads) = (0u32, 0u32, 0u32);
    loop {
        let t = TICKS.load(Relaxed);
        if t >= RUN_TICKS {
            break;
        }
        let now = u64::from(t);
        match COUNTS.add(now, MAIN, 1) {
            Ok(()) => {
                MAIN_ADDS.bump(now / WINDOW);
                adds += 1;
            }
            Err(AddError::Stale) => stale += 1,
            Err(e) => {
                defmt::error!("main loop add failed: {}", e);
                finish(false);
            }
        }
        if GATE.try_acquire(now, 1) == Decision::Pass {
            MAIN_PASSES.bump(now / WINDOW);
        }
        if NARROW.add(now, MAIN, 1).is_ok() {
            MAIN_NARROW.bump(now / WINDOW);
        }
        let [m, i] = COUNTS.sums(now);
        if m == 0 && i == 0 && adds > 0 && now % WINDOW != 0 {
            defmt::error!("sum lost the current window at {}", now);
            finish(false);
        }
        reads += 1;
    }
    syst.disable_interrupt();
    syst.disable_counter();

    let end = u64::from(TICKS.load(Relaxed));
    let mut ok = true;
    let mut held = 0;
    for id in 0..=end / WINDOW {
        if let Some(w) = COUNTS.window_at(id * WINDOW) {
            held += 1;
            let want = [MAIN_ADDS.get(id), ISR_ADDS.get(id)];
            if w.counts != want {
                defmt::error!(
                    "window {}: array {} but ledgers {}",
                    w.start,
                    w.counts,
                    want
                );
                ok = false;
            }
        } else if id + 4 > end / WINDOW && MAIN_ADDS.get(id) + ISR_ADDS.get(id) > 0 {
            defmt::error!("live window {} missing", id * WINDOW);
            ok = false;
        }
        if let Some(w) = NARROW.window_at(id * WINDOW) {
            let want = [MAIN_NARROW.get(id), ISR_NARROW.get(id)];
            if w.counts != want {
                defmt::error!(
                    "narrow window {}: array {} but ledgers {}",
                    w.start,
                    w.counts,
                    want
                );
                ok = false;
            }
        }
    }
    let mut peak = 0;
    for id in 1..=end / WINDOW {
        let interval: u64 = (id - 1..=id)
            .map(|k| MAIN_PASSES.get(k) + ISR_PASSES.get(k))
            .sum();
        peak = peak.max(interval);
        if interval > LIMIT {
            defmt::error!(
                "gate admitted {} in the interval ending at window {}",
                interval,
                id
            );
            ok = false;
        }
    }
    let gate_live = GATE.metric().pass(end);
    let ledger_live: u64 = (end / WINDOW - 1..=end / WINDOW)
        .map(|k| MAIN_PASSES.get(k) + ISR_PASSES.get(k))
        .sum();
    if gate_live != ledger_live {
        defmt::error!("gate counts {} passes, ledgers {}", gate_live, ledger_live);
        ok = false;
    }
    for w in COUNTS.windows(end) {
        defmt::info!("{}", w);
    }
    defmt::info!(
        "ticks {}, main adds {} ({} stale), handler stale {}, reads {}, windows checked {}, gate peak {} of {}",
        end,
        adds,
        stale,
        ISR_STALE.load(Relaxed),
        reads,
        held,
        peak,
        LIMIT
    );
    if ok && held >= 4 && adds > 0 {
        defmt::println!(
            "FIRMWARE OK: every held window (64- and 32-bit words) equals its ledgers; the gate never exceeded its limit"
        );
        finish(true)
    }
    defmt::println!("FIRMWARE FAILED");
    finish(false)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    finish(false)
}
