//! leaparray in firmware, under QEMU.
//!
//! A SysTick interrupt handler advances the tick count and, on every tick,
//! records its own events into a `static LeapArray` and asks a `static Gate`
//! for a permit, while the main loop records its events, asks the same gate
//! and reads sums as fast as it can. Both keep a ledger of their `Ok` adds
//! per window and of their granted permits; both also add to a `Narrow`
//! (32-bit word) array. At the end the firmware checks that every
//! window the array still holds contains exactly the ledgers' counts, that
//! no interval of the gate admitted more than its limit, and that the
//! gate's own count agrees with the ledgers, prints the result through
//! defmt over semihosting, and exits QEMU with success or failure.
//!
//! The gate books a late caller (one whose window is older than the newest
//! the gate holds: the main loop, when the handler ticks into a new window
//! between its clock read and its decision) into the newest window. So a
//! permit counts in a window between its caller's own and the newest window
//! any caller had reached when the decision returned (the tick count's
//! window then), and the gate's ledgers record both: for every interval
//! `[a, a + N)`, the permits whose own window is `>= a` and whose reached
//! window is `< a + N` all count in it, and may not exceed the limit. (A
//! ledger by the caller's own window alone may show more in an interval:
//! the late ones count in the next.)
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
use leaparray::{AddError, LeapArray, Limiter, Narrow};

/// The critical-section implementation defmt and portable-atomic use.
use cortex_m as _;

/// Window length in SysTick ticks.
const WINDOW: u64 = 4;
/// Not a multiple of `WINDOW`: the run ends inside a window, so the
/// gate's final count covers more than one window's first tick.
const RUN_TICKS: u32 = 242;
/// Permits per interval of `GATE_WINDOWS` windows.
const LIMIT: u64 = 40;
const GATE_WINDOWS: usize = 2;
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
static GATE: Gate<GATE_WINDOWS> = Gate::new(nz(WINDOW), LIMIT);

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

/// One context's granted permits: `near[d]` by the caller's own window,
/// for those that returned with the tick count `d < GATE_WINDOWS` windows
/// later; `far` by the reached window, for the rest (they bound no
/// interval).
struct PassLedger {
    near: [Ledger; GATE_WINDOWS],
    far: Ledger,
}

impl PassLedger {
    const fn new() -> Self {
        PassLedger {
            near: [const { Ledger::new() }; GATE_WINDOWS],
            far: Ledger::new(),
        }
    }
    /// A permit granted to a caller at window `own`, returned at `reached`.
    fn pass(&self, own: u64, reached: u64) {
        match self.near.get((reached - own) as usize) {
            Some(l) => l.bump(own),
            None => self.far.bump(reached),
        }
    }
    /// Permits with own window `>= first` that returned at window `<= last`.
    fn within(&self, first: u64, last: u64) -> u64 {
        let mut total = 0;
        for (d, l) in self.near.iter().enumerate() {
            let Some(top) = last.checked_sub(d as u64) else {
                continue;
            };
            for own in first..=top {
                total += l.get(own);
            }
        }
        total
    }
    /// Permits that may count in `first ..= last` (own window `<= last`,
    /// reached window `>= first`), given every reached window is `<= last`.
    fn maybe_within(&self, first: u64, last: u64) -> u64 {
        let mut total = 0;
        for (d, l) in self.near.iter().enumerate() {
            for own in first.saturating_sub(d as u64)..=last {
                total += l.get(own);
            }
        }
        total + (first..=last).map(|r| self.far.get(r)).sum::<u64>()
    }
    /// Permits by the caller's own window only, in `first ..= last`.
    fn by_own(&self, first: u64, last: u64) -> u64 {
        let own = |l: &Ledger| (first..=last).map(|k| l.get(k)).sum::<u64>();
        self.near.iter().map(own).sum()
    }
    /// Permits whose caller returned `GATE_WINDOWS` windows late or more.
    fn far(&self) -> u64 {
        (0..WINDOWS as u64).map(|r| self.far.get(r)).sum()
    }
}

static MAIN_ADDS: Ledger = Ledger::new();
static ISR_ADDS: Ledger = Ledger::new();
static MAIN_PASSES: PassLedger = PassLedger::new();
static ISR_PASSES: PassLedger = PassLedger::new();
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
        // No other context runs inside the handler: the tick count is `t`.
        ISR_PASSES.pass(now / WINDOW, u64::from(TICKS.load(Relaxed)) / WINDOW);
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
            // Every window a caller had used is at most the tick count's.
            MAIN_PASSES.pass(now / WINDOW, u64::from(TICKS.load(Relaxed)) / WINDOW);
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
    // Every interval [a, a + N): the permits that must count in it.
    let (n, last) = (GATE_WINDOWS as u64, end / WINDOW);
    let (mut peak, mut peak_by_own) = (0, 0);
    for a in 0..=last {
        let b = a + n - 1;
        let inside = MAIN_PASSES.within(a, b) + ISR_PASSES.within(a, b);
        peak = peak.max(inside);
        peak_by_own = peak_by_own.max(MAIN_PASSES.by_own(a, b) + ISR_PASSES.by_own(a, b));
        if inside > LIMIT {
            defmt::error!("gate admitted {} in windows {} ..= {}", inside, a, b);
            ok = false;
        }
    }
    // The gate's count of the interval ending at `end`: at least the
    // permits that must count there, at most those that may.
    let first = (last + 1).saturating_sub(n);
    let count = GATE.count(end);
    let must = MAIN_PASSES.within(first, last) + ISR_PASSES.within(first, last);
    let may = MAIN_PASSES.maybe_within(first, last) + ISR_PASSES.maybe_within(first, last);
    if count < must || count > may {
        defmt::error!(
            "gate counts {} passes at {}, ledgers {} ..= {}",
            count,
            end,
            must,
            may
        );
        ok = false;
    }
    for w in COUNTS.windows(end) {
        defmt::info!("{}", w);
    }
    defmt::info!(
        "ticks {}, main adds {} ({} stale), handler stale {}, reads {}, windows checked {}",
        end,
        adds,
        stale,
        ISR_STALE.load(Relaxed),
        reads,
        held
    );
    defmt::info!(
        "gate {}: peak {} of {} (by caller's own window {}), count {} in {} ..= {}, {} permits {}+ windows late",
        GATE.shape(),
        peak,
        LIMIT,
        peak_by_own,
        count,
        must,
        may,
        MAIN_PASSES.far() + ISR_PASSES.far(),
        n
    );
    if ok && held >= 4 && adds > 0 {
        defmt::println!(
            "FIRMWARE OK: every held window (64- and 32-bit words) equals its ledgers; the gate never exceeded its limit, and its count agrees"
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
