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
//! A `static KeyedGate` limits each *source* on its own (one key each):
//! simulated UART frame addresses, SysTick's own exception number, and
//! devices that come and go. The main loop handles one frame per pass,
//! most from one hot address; the handler asks for the hot address, a
//! shared one, its own source and the current device on every tick. Each
//! context keeps the same (own window, window reached) ledger per source,
//! and the firmware checks, for every source and every interval, that no
//! key was admitted more than its limit, and that each key's booked count
//! (`limit - remaining`) agrees with the ledgers. SysTick's own source asks
//! for 8 per interval, under the limit: it must never be refused, however
//! hard the hot address is hammered. There are more devices over a run
//! than the table has slots, so idle ones are recycled (`stats`), and no
//! request may find the table full.
//!
//! Cortex-M3 (`thumbv7m-none-eabi`, QEMU `lm3s6965evb`) and Cortex-M0
//! (`thumbv6m-none-eabi`, QEMU `microbit`); see `Cargo.toml` for how each
//! gets interrupt-safe 64-bit and 128-bit atomics. Run from this directory:
//! `cargo run --release --target thumbv7m-none-eabi` (or thumbv6m).

#![no_std]
#![no_main]

use core::num::NonZeroU64;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::debug;
use defmt_semihosting as _;
use leaparray::{Decision, Gate};
use leaparray::KeyedGate;
use leaparray::array::Narrow;
use leaparray::{AddError, LeapArray};

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

/// Permits per source per interval of `GATE_WINDOWS` windows, for the
/// per-source gate.
const KEY_LIMIT: u64 = 20;
/// Sources the per-source gate holds at once: fewer than the devices of a
/// run, so idle devices are recycled.
const KEY_SLOTS: usize = 16;
static PER_SOURCE: KeyedGate<GATE_WINDOWS, KEY_SLOTS> = KeyedGate::new(nz(WINDOW), KEY_LIMIT);

/// The per-source gate's sources, as indices of the ledgers; `key` maps
/// them to the gate's keys.
/// - `HOT`, UART address 0x48: 11 main-loop frames in 16, and one request
///   per tick from the handler. Always saturated.
/// - `SHARED`, UART address 0x21: 2 main-loop frames in 16, one request per
///   tick from the handler.
/// - `SYSTICK`, exception number 15: the handler's own source, one request
///   per tick (8 per interval, under the limit): never refused.
/// - `POLLED_A`, `POLLED_B`, UART addresses 0x30 and 0x31: one main-loop
///   frame in 16 each.
/// - `DEVICE`: devices that come and go, a new one every two windows (the
///   key `DEVICE_BASE + window / 2`): one request per tick from the
///   handler, one main-loop frame in 16. One ledger for all of them: the
///   caller's own window names the device.
const HOT: usize = 0;
const SHARED: usize = 1;
const SYSTICK: usize = 2;
const POLLED_A: usize = 3;
const POLLED_B: usize = 4;
const DEVICE: usize = 5;
const SOURCES: usize = 6;
const KEYS: [u64; DEVICE] = [0x48, 0x21, 15, 0x30, 0x31];
const DEVICE_BASE: u64 = 0x1000;

/// The per-source gate's key for `source`, asked by a caller in `window`.
const fn key(source: usize, window: u64) -> u64 {
    if source == DEVICE {
        DEVICE_BASE + window / 2
    } else {
        KEYS[source]
    }
}

// Cortex-M3: portable-atomic's 128-bit word (a `KeyedGate` slot) must be
// the interrupt-masking one, not the global spin lock `fallback` would
// otherwise give a target with 32-bit CAS (it deadlocks against a handler).
// (On the Cortex-M0 it is the critical section, always: no CAS there.)
#[cfg(target_has_atomic = "32")]
const _: () = assert!(
    portable_atomic::AtomicU128::is_always_lock_free(),
    "portable-atomic's AtomicU128 is a spin lock here: enable `unsafe-assume-single-core`"
);

/// Written by the SysTick handler only.
static TICKS: AtomicU32 = AtomicU32::new(0);

/// A count written by one context only (load + store: thumbv6m has no
/// atomic read-modify-write of its own).
trait Counter {
    const ZERO: Self;
    fn get(&self) -> u64;
    fn bump(&self);
}

impl Counter for AtomicU32 {
    #[allow(clippy::declare_interior_mutable_const)] // a fresh counter per use
    const ZERO: Self = AtomicU32::new(0);
    fn get(&self) -> u64 {
        u64::from(self.load(Relaxed))
    }
    fn bump(&self) {
        self.store(self.load(Relaxed) + 1, Relaxed);
    }
}

/// A quarter of the RAM, for the per-source gate's twelve pass ledgers
/// (each count is one context's permits for one source in one window: a
/// few dozen at most unless the gate is wrong). Saturating at 255, so that
/// a gate that is wrong still reads as over its limit.
impl Counter for AtomicU8 {
    #[allow(clippy::declare_interior_mutable_const)] // a fresh counter per use
    const ZERO: Self = AtomicU8::new(0);
    fn get(&self) -> u64 {
        u64::from(self.load(Relaxed))
    }
    fn bump(&self) {
        self.store(self.load(Relaxed).saturating_add(1), Relaxed);
    }
}

/// A per-window ledger written by one context only.
struct Ledger<C: Counter = AtomicU32>([C; WINDOWS]);

impl<C: Counter> Ledger<C> {
    const fn new() -> Self {
        Ledger([const { C::ZERO }; WINDOWS])
    }
    fn bump(&self, window: u64) {
        if let Some(c) = self.0.get(window as usize) {
            c.bump();
        }
    }
    fn get(&self, window: u64) -> u64 {
        self.0.get(window as usize).map_or(0, C::get)
    }
}

/// One context's granted permits: `near[d]` by the caller's own window,
/// for those that returned with the tick count `d < GATE_WINDOWS` windows
/// later; `far` by the reached window, for the rest (they bound no
/// interval).
struct PassLedger<C: Counter = AtomicU32> {
    near: [Ledger<C>; GATE_WINDOWS],
    far: Ledger<C>,
}

impl<C: Counter> PassLedger<C> {
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
        self.within_if(first, last, |_| true)
    }
    /// `within`, of the callers whose own window passes `mine`.
    fn within_if(&self, first: u64, last: u64, mine: impl Fn(u64) -> bool) -> u64 {
        let mut total = 0;
        for (d, l) in self.near.iter().enumerate() {
            let Some(top) = last.checked_sub(d as u64) else {
                continue;
            };
            for own in (first..=top).filter(|&own| mine(own)) {
                total += l.get(own);
            }
        }
        total
    }
    /// Permits that may count in `first ..= last` (own window `<= last`,
    /// reached window `>= first`), given every reached window is `<= last`.
    fn maybe_within(&self, first: u64, last: u64) -> u64 {
        self.maybe_within_if(first, last, |_| true)
    }
    /// `maybe_within`, of the callers whose own window passes `mine` (and
    /// every `far` permit: their own window is not recorded).
    fn maybe_within_if(&self, first: u64, last: u64, mine: impl Fn(u64) -> bool) -> u64 {
        let mut total = 0;
        for (d, l) in self.near.iter().enumerate() {
            for own in (first.saturating_sub(d as u64)..=last).filter(|&own| mine(own)) {
                total += l.get(own);
            }
        }
        total + (first..=last).map(|r| self.far.get(r)).sum::<u64>()
    }
    /// Every permit recorded.
    fn total(&self) -> u64 {
        self.maybe_within(0, WINDOWS as u64)
    }
    /// Permits by the caller's own window only, in `first ..= last`.
    fn by_own(&self, first: u64, last: u64) -> u64 {
        let own = |l: &Ledger<C>| (first..=last).map(|k| l.get(k)).sum::<u64>();
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
/// The per-source gate's permits, by source.
static MAIN_KEYED: [PassLedger<AtomicU8>; SOURCES] = [const { PassLedger::new() }; SOURCES];
static ISR_KEYED: [PassLedger<AtomicU8>; SOURCES] = [const { PassLedger::new() }; SOURCES];
/// SysTick's own source refused (it asks under the limit: must stay 0).
static SYSTICK_REFUSED: AtomicU32 = AtomicU32::new(0);

/// Asks the per-source gate for one permit for `source` at `now`, and
/// records a pass in the caller's `ledgers`. Out of line: one copy of the
/// gate's decision serves the handler and the main loop.
#[inline(never)]
fn ask(ledgers: &[PassLedger<AtomicU8>; SOURCES], source: usize, now: u64) -> Decision {
    let own = now / WINDOW;
    let d = PER_SOURCE.try_acquire(key(source, own), now, 1);
    if d == Decision::Pass {
        // As for the gate: the reached window bounds the booked one.
        ledgers[source].pass(own, u64::from(TICKS.load(Relaxed)) / WINDOW);
    }
    d
}

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
    for source in [HOT, SHARED, SYSTICK, DEVICE] {
        if ask(&ISR_KEYED, source, now) == Decision::Block && source == SYSTICK {
            SYSTICK_REFUSED.store(SYSTICK_REFUSED.load(Relaxed) + 1, Relaxed);
        }
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
    defmt::info!(
        "per-source gate: KeyedGate {{ windows: {}, slots: {}, window: {}, limit: {} }}",
        GATE_WINDOWS,
        PER_SOURCE.capacity(),
        PER_SOURCE.window(),
        PER_SOURCE.limit()
    );
    let mut syst = p.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(40_000);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();

    let (mut adds, mut stale, mut reads) = (0u32, 0u32, 0u32);
    let mut frames = 0u32;
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
        // One simulated UART frame per pass, from its source's address.
        let source = match frames % 16 {
            0 => POLLED_A,
            8 => POLLED_B,
            4 | 12 => SHARED,
            2 => DEVICE,
            _ => HOT,
        };
        frames += 1;
        let _ = ask(&MAIN_KEYED, source, now);
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
    let keyed = check_sources(end);
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
    if ok && keyed && held >= 4 && adds > 0 {
        defmt::println!(
            "FIRMWARE OK: every held window (64- and 32-bit words) equals its ledgers; the gate never exceeded its limit, and its count agrees; no source of the per-source gate exceeded its limit in any interval, each one's count agrees, SysTick's own source was never refused"
        );
        finish(true)
    }
    defmt::println!("FIRMWARE FAILED");
    finish(false)
}

/// Checks the per-source gate against the ledgers after a run that ended
/// at tick `end` (module docs), printing what it found: whether all held.
/// Out of line, so that `size.sh` shows what the checks cost.
#[inline(never)]
fn check_sources(end: u64) -> bool {
    let (n, last) = (GATE_WINDOWS as u64, end / WINDOW);
    let first = (last + 1).saturating_sub(n);
    let mut good = true;
    for source in 0..SOURCES {
        let (main, isr) = (&MAIN_KEYED[source], &ISR_KEYED[source]);
        // Every interval [a, a + N), for each key asked in it (a device's
        // key changes every two windows; every other source has one key).
        let mut peak = 0;
        for a in 0..=last {
            let b = a + n - 1;
            let (ka, kb) = (key(source, a), key(source, b));
            for k in [ka, kb].into_iter().take(if ka == kb { 1 } else { 2 }) {
                let mine = |own| key(source, own) == k;
                let inside = main.within_if(a, b, mine) + isr.within_if(a, b, mine);
                peak = peak.max(inside);
                if inside > KEY_LIMIT {
                    defmt::error!(
                        "source {=u64:#x}: admitted {} in windows {} ..= {}",
                        k,
                        inside,
                        a,
                        b
                    );
                    good = false;
                }
            }
        }
        // The current key's booked count in the interval ending at `end`:
        // at least the permits that must count there, at most those that may.
        let k = key(source, last);
        let mine = |own| key(source, own) == k;
        let remaining = PER_SOURCE.remaining(k, end);
        let booked = PER_SOURCE.limit().saturating_sub(remaining);
        let must = main.within_if(first, last, mine) + isr.within_if(first, last, mine);
        let may = main.maybe_within_if(first, last, mine) + isr.maybe_within_if(first, last, mine);
        if booked < must || booked > may {
            defmt::error!(
                "source {=u64:#x}: booked {} at {}, ledgers {} ..= {}",
                k,
                booked,
                end,
                must,
                may
            );
            good = false;
        }
        let retry = PER_SOURCE.retry_after(k, end, 1);
        if (retry == Some(0)) != (remaining > 0) {
            defmt::error!(
                "source {=u64:#x}: {} remaining but retry after {}",
                k,
                remaining,
                retry
            );
            good = false;
        }
        let (by_main, by_isr) = (main.total(), isr.total());
        defmt::info!(
            "source {=u64:#x}: peak {} of {}, admitted main {} + handler {}, booked {} in {} ..= {}, retry after {}",
            k,
            peak,
            KEY_LIMIT,
            by_main,
            by_isr,
            booked,
            must,
            may,
            retry
        );
        // The checks above are only worth something if the hot address hit
        // its limit from both contexts.
        if source == HOT && (peak < KEY_LIMIT || by_main == 0 || by_isr == 0) {
            defmt::error!("the hot source never reached its limit from both contexts");
            good = false;
        }
        if source == SYSTICK && (by_isr != end || SYSTICK_REFUSED.load(Relaxed) != 0) {
            defmt::error!(
                "SysTick's own source: {} of {} ticks admitted, {} refused",
                by_isr,
                end,
                SYSTICK_REFUSED.load(Relaxed)
            );
            good = false;
        }
    }
    // More devices than slots: idle ones must have made room, and no
    // request may have found the table full.
    let stats = PER_SOURCE.occupancy(end);
    let keys = (KEYS.len() as u64 + key(DEVICE, last) - DEVICE_BASE + 1) as usize;
    let must_recycle = keys.saturating_sub(KEY_SLOTS) as u64;
    defmt::info!(
        "per-source gate: {} keys over the run in {} slots: {}",
        keys,
        KEY_SLOTS,
        stats
    );
    if stats.overflowed != 0 || stats.recycled < must_recycle || stats.resident > KEY_SLOTS {
        defmt::error!(
            "per-source gate: {} keys need {} recycled, none overflowed",
            keys,
            must_recycle
        );
        good = false;
    }
    good
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    finish(false)
}
