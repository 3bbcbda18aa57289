/* leaparray from C firmware, under QEMU (Cortex-M3, lm3s6965evb).
 *
 * The C twin of examples/firmware (Rust): a SysTick interrupt handler
 * advances the tick count and, on every tick, adds its own events to a
 * static ring (leap_array_t), asks a static gate (leap_gate2_t) for a permit
 * and asks a static per-source table (leap_keyed64_t) for four sources,
 * while the main loop adds its events, asks the same gate, asks the table
 * for one simulated UART frame and reads the ring's sums as fast as it can.
 * Every object is in static storage, initialised by the library's init
 * functions; nothing masks SysTick around a call (the library is built
 * with portable-atomic's single-core setting: its 64- and 128-bit atomic
 * operations mask interrupts for one instruction sequence, no lock).
 *
 * Each context keeps ledgers (written by that context only, read after
 * SysTick is stopped): its successful adds per window, and its permits
 * from the gate and, per source, from the table. At the end the firmware
 * checks:
 * - the ring: every window it still holds has exactly the ledgers' adds,
 *   per counter (the sums at each held window's start pin each window:
 *   the sum at the oldest held window is that window alone, each next one
 *   adds one window), and windows it retired read 0;
 * - the gate: no interval of two windows admitted more than the limit, and
 *   the gate's own count at the end (limit - remaining) lies between the
 *   permits that must count in its interval and those that may;
 * - the table: the same per source and per key, the booked count of each
 *   source's current key, retry_after agreeing with remaining, SysTick's
 *   own source (under its limit) never refused;
 * - that the checks were worth something: the gate and the hot source
 *   reached their limits, the hot source with permits from both contexts.
 * It prints FIRMWARE OK and exits QEMU with 0, or what failed and 1.
 *
 * Late callers. The gate books a caller whose window is older than the
 * newest it holds (the main loop, when the handler ticks into a new window
 * between its clock read and its decision) into the newest window. So a
 * permit counts in a window between its caller's own and the one the tick
 * count had reached when the decision returned, and the ledgers record
 * both: for every interval [a, a + 2), the permits whose own window is
 * >= a and whose reached window is < a + 2 all count in it, and may not
 * exceed the limit (examples/firmware/src/main.rs argues the same).
 *
 * The table's sources (as examples/firmware, except that a device lives
 * one window, not two: 66 keys over a run in 64 slots, so idle keys must
 * make room):
 * - HOT, UART address 0x48: 11 main-loop frames in 16 and one request per
 *   tick from the handler. Always saturated.
 * - SHARED, UART address 0x21: 2 frames in 16, one request per tick.
 * - SYSTICK, exception number 15: one request per tick from the handler
 *   (8 per interval, under the limit of 20): never refused.
 * - POLLED_A, POLLED_B, UART addresses 0x30 and 0x31: 1 frame in 16 each.
 * - DEVICE: a new key every window (DEVICE_BASE + window): one request per
 *   tick from the handler, 1 frame in 16.
 */
#include <stdbool.h>
#include <stdint.h>

#include "board.h"
#include "leaparray.h"
#include "report.h"

/* Window length in SysTick ticks. */
#define WINDOW 4u
/* Not a multiple of WINDOW: the run ends inside a window. */
#define RUN_TICKS 242u
/* Gate: permits per interval of GATE_WINDOWS windows (leap_gate2_t). */
#define LIMIT 40u
#define GATE_WINDOWS 2u
/* Per-source table: permits per source per interval. */
#define KEY_LIMIT 20u
#define KEY_SLOTS 64u
/* Windows the ledgers hold: every window of the run, and a margin. */
#define WINDOWS (RUN_TICKS / WINDOW + 8u)
/* Ring counters. */
#define MAIN 0u
#define ISR 1u

enum { HOT, SHARED, SYSTICK, POLLED_A, POLLED_B, DEVICE, SOURCES };
static const uint64_t KEYS[DEVICE] = {0x48, 0x21, 15, 0x30, 0x31};
#define DEVICE_BASE 0x1000u

static leap_array_t counts;
static leap_gate2_t gate;
static leap_keyed64_t per_source;

/* Written by the SysTick handler only. */
static volatile uint32_t ticks;

/* The table's key for `source`, asked by a caller in window `window`. */
static uint64_t key(unsigned source, uint64_t window)
{
    return source == DEVICE ? DEVICE_BASE + window : KEYS[source];
}

/* Adds per window, of one context. */
typedef struct {
    uint32_t n[WINDOWS];
} ledger_t;

/* One context's permits: near[d][own] by the caller's own window, for the
 * permits that returned with the tick count d < GATE_WINDOWS windows
 * later; far[reached] for the rest (they bound no interval). Saturating
 * at 255 (a context gets at most the limit per window unless the gate is
 * wrong, and a wrong gate still reads as over its limit). */
typedef struct {
    uint8_t near[GATE_WINDOWS][WINDOWS];
    uint8_t far[WINDOWS];
} passes_t;

static void bump8(uint8_t *c)
{
    if (*c != UINT8_MAX) {
        (*c)++;
    }
}

static void add_to(ledger_t *l, uint64_t window)
{
    if (window < WINDOWS) {
        l->n[window]++;
    }
}

static uint64_t adds_in(const ledger_t *l, uint64_t window)
{
    return window < WINDOWS ? l->n[window] : 0;
}

/* A permit granted to a caller at window `own`, returned at `reached`. */
static void pass(passes_t *p, uint64_t own, uint64_t reached)
{
    uint64_t d = reached - own;
    if (d < GATE_WINDOWS) {
        if (own < WINDOWS) {
            bump8(&p->near[d][own]);
        }
    } else if (reached < WINDOWS) {
        bump8(&p->far[reached]);
    }
}

/* Which own windows a sum covers: all (source < 0), or those whose key for
 * `source` is `k`. */
typedef struct {
    int source;
    uint64_t k;
} filter_t;

static const filter_t ALL = {-1, 0};

static bool mine(filter_t f, uint64_t own)
{
    return f.source < 0 || key((unsigned)f.source, own) == f.k;
}

static uint64_t near_at(const passes_t *p, unsigned d, uint64_t own)
{
    return own < WINDOWS ? p->near[d][own] : 0;
}

/* Permits with own window >= first that returned at window <= last. */
static uint64_t within(const passes_t *p, uint64_t first, uint64_t last, filter_t f)
{
    uint64_t total = 0;
    for (unsigned d = 0; d < GATE_WINDOWS; d++) {
        if (last < d) {
            continue;
        }
        for (uint64_t own = first; own <= last - d; own++) {
            if (mine(f, own)) {
                total += near_at(p, d, own);
            }
        }
    }
    return total;
}

/* Permits that may count in first ..= last (own window <= last, reached
 * window >= first), given every reached window is <= last; every `far`
 * permit in the range counts (its own window is not recorded). */
static uint64_t maybe_within(const passes_t *p, uint64_t first, uint64_t last, filter_t f)
{
    uint64_t total = 0;
    for (unsigned d = 0; d < GATE_WINDOWS; d++) {
        for (uint64_t own = first < d ? 0 : first - d; own <= last; own++) {
            if (mine(f, own)) {
                total += near_at(p, d, own);
            }
        }
    }
    for (uint64_t r = first; r <= last && r < WINDOWS; r++) {
        total += p->far[r];
    }
    return total;
}

/* Permits by the caller's own window only, in first ..= last. */
static uint64_t by_own(const passes_t *p, uint64_t first, uint64_t last)
{
    uint64_t total = 0;
    for (unsigned d = 0; d < GATE_WINDOWS; d++) {
        for (uint64_t own = first; own <= last; own++) {
            total += near_at(p, d, own);
        }
    }
    return total;
}

static ledger_t main_adds, isr_adds;
static passes_t main_passes, isr_passes;
static passes_t main_keyed[SOURCES], isr_keyed[SOURCES];
static uint32_t isr_stale;
/* SysTick's own source refused (it asks under the limit: must stay 0). */
static uint32_t systick_refused;
/* Calls of the handler that returned an error (must stay 0), and the first. */
static uint32_t isr_errors;
static int isr_first_error;

static void isr_error(int status)
{
    if (isr_errors++ == 0) {
        isr_first_error = status;
    }
}

static void fail(const char *what, int status)
{
    say("FIRMWARE FAILED: %s: %s", what, leap_status_str(status));
    board_exit(0);
}

/* Asks the table for one permit for `source` at `now`, recording a pass in
 * the caller's ledgers. */
static int ask(passes_t ledgers[SOURCES], unsigned source, uint64_t now)
{
    uint64_t own = now / WINDOW;
    int d = leap_keyed64_try_acquire(&per_source, key(source, own), now, 1);
    if (d == LEAP_PASS) {
        /* As for the gate: the reached window bounds the booked one. */
        pass(&ledgers[source], own, ticks / WINDOW);
    }
    return d;
}

void systick_handler(void)
{
    uint32_t t = ticks + 1;
    ticks = t;
    uint64_t now = t;
    for (int i = 0; i < 3; i++) {
        int s = leap_array_add(&counts, now, ISR, 1);
        if (s == LEAP_OK) {
            add_to(&isr_adds, now / WINDOW);
        } else if (s == LEAP_ERR_STALE) {
            isr_stale++;
        } else {
            isr_error(s);
        }
    }
    int g = leap_gate2_try_acquire(&gate, now, 1);
    if (g == LEAP_PASS) {
        /* No other context runs inside the handler: the tick count is t. */
        pass(&isr_passes, now / WINDOW, ticks / WINDOW);
    } else if (g != LEAP_BLOCK) {
        isr_error(g);
    }
    static const unsigned asks[] = {HOT, SHARED, SYSTICK, DEVICE};
    for (unsigned i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        int d = ask(isr_keyed, asks[i], now);
        if (d == LEAP_BLOCK && asks[i] == SYSTICK) {
            systick_refused++;
        } else if (d != LEAP_PASS && d != LEAP_BLOCK) {
            isr_error(d);
        }
    }
}

static bool check_ring(uint64_t end);
static bool check_gate(uint64_t end);
static bool check_sources(uint64_t end);

int main(void)
{
    int s;
    if ((s = leap_array_init(&counts, WINDOW)) != LEAP_OK) {
        fail("leap_array_init", s);
    }
    if ((s = leap_gate2_init(&gate, WINDOW, LIMIT)) != LEAP_OK) {
        fail("leap_gate2_init", s);
    }
    if ((s = leap_keyed64_init(&per_source, WINDOW, KEY_LIMIT)) != LEAP_OK) {
        fail("leap_keyed64_init", s);
    }
    say("ring of %u windows of %u ticks; gate %u per %u windows; per-source table: %u slots, %u per source per %u windows; stack used by the inits %u bytes",
        LEAP_WINDOWS, WINDOW, LIMIT, GATE_WINDOWS, KEY_SLOTS, KEY_LIMIT, GATE_WINDOWS,
        board_stack_used());

    SYST_RVR = 40000u - 1u;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_CLKSOURCE_CORE | SYST_CSR_TICKINT | SYST_CSR_ENABLE;

    uint32_t adds = 0, stale = 0, reads = 0, frames = 0;
    for (;;) {
        uint32_t t = ticks;
        if (t >= RUN_TICKS) {
            break;
        }
        uint64_t now = t;
        s = leap_array_add(&counts, now, MAIN, 1);
        if (s == LEAP_OK) {
            add_to(&main_adds, now / WINDOW);
            adds++;
        } else if (s == LEAP_ERR_STALE) {
            stale++;
        } else {
            fail("main loop add", s);
        }
        s = leap_gate2_try_acquire(&gate, now, 1);
        if (s == LEAP_PASS) {
            /* Every window a caller had used is at most the tick count's. */
            pass(&main_passes, now / WINDOW, ticks / WINDOW);
        } else if (s != LEAP_BLOCK) {
            fail("main loop gate", s);
        }
        /* One simulated UART frame per pass, from its source's address. */
        unsigned source;
        switch (frames % 16) {
        case 0: source = POLLED_A; break;
        case 8: source = POLLED_B; break;
        case 4: case 12: source = SHARED; break;
        case 2: source = DEVICE; break;
        default: source = HOT; break;
        }
        frames++;
        s = ask(main_keyed, source, now);
        if (s != LEAP_PASS && s != LEAP_BLOCK) {
            fail("main loop table", s);
        }
        uint64_t sums[LEAP_COUNTERS];
        if ((s = leap_array_sums(&counts, now, sums)) != LEAP_OK) {
            fail("main loop sums", s);
        }
        if (sums[MAIN] == 0 && sums[ISR] == 0 && adds > 0 && now % WINDOW != 0) {
            say("FIRMWARE FAILED: the sums lost the current window at %U", now);
            board_exit(0);
        }
        reads++;
    }
    SYST_CSR = 0;
    /* The handler's ledgers are read from here on: no access moves above. */
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    uint64_t end = ticks;
    bool ok = true;
    if (isr_errors != 0) {
        say("handler: %u calls returned an error, the first %s", isr_errors,
            leap_status_str(isr_first_error));
        ok = false;
    }
    ok &= check_ring(end);
    ok &= check_gate(end);
    ok &= check_sources(end);
    say("ticks %U, main adds %u (%u stale), handler stale %u, reads %u; stack used %u bytes", end,
        adds, stale, isr_stale, reads, board_stack_used());
    if (ok && adds > 0) {
        say("FIRMWARE OK: every held window equals its ledgers; the gate never exceeded its limit, "
            "and its count agrees; no source of the per-source table exceeded its limit in any "
            "interval, each one's count agrees, SysTick's own source was never refused");
        return 0;
    }
    say("FIRMWARE FAILED");
    return 1;
}

/* The ring at the end of a run that ended at tick `end`. The windows it
 * holds are the LEAP_WINDOWS newest (the handler adds in every window):
 * the sum at the start of held window `id` covers the held windows up to
 * `id`, so these sums equal the ledgers' exactly when every held window
 * does. Windows before them were retired: a sum there reads 0. */
static bool check_ring(uint64_t end)
{
    uint64_t last = end / WINDOW;
    uint64_t oldest = last + 1 < LEAP_WINDOWS ? 0 : last + 1 - LEAP_WINDOWS;
    uint64_t want[2] = {0, 0};
    bool good = true;
    unsigned held = 0;
    for (uint64_t id = oldest < LEAP_WINDOWS ? 0 : oldest - LEAP_WINDOWS; id <= last; id++) {
        if (id >= oldest) {
            want[MAIN] += adds_in(&main_adds, id);
            want[ISR] += adds_in(&isr_adds, id);
            held++;
        }
        uint64_t got[LEAP_COUNTERS];
        int s = leap_array_sums(&counts, id * WINDOW, got);
        if (s != LEAP_OK) {
            fail("leap_array_sums", s);
        }
        if (got[MAIN] != want[MAIN] || got[ISR] != want[ISR]) {
            say("ring: sums at window %U are [%U, %U], ledgers [%U, %U]", id, got[MAIN], got[ISR],
                want[MAIN], want[ISR]);
            good = false;
        }
    }
    say("ring: %u held windows checked, [%U, %U] in them", held, want[MAIN], want[ISR]);
    return good && held == LEAP_WINDOWS;
}

/* The gate at the end of a run that ended at tick `end`. */
static bool check_gate(uint64_t end)
{
    uint64_t last = end / WINDOW;
    uint64_t peak = 0, peak_by_own = 0;
    bool good = true;
    /* Every interval [a, a + N): the permits that must count in it. */
    for (uint64_t a = 0; a <= last; a++) {
        uint64_t b = a + GATE_WINDOWS - 1;
        uint64_t inside = within(&main_passes, a, b, ALL) + within(&isr_passes, a, b, ALL);
        uint64_t own = by_own(&main_passes, a, b) + by_own(&isr_passes, a, b);
        peak = inside > peak ? inside : peak;
        peak_by_own = own > peak_by_own ? own : peak_by_own;
        if (inside > LIMIT) {
            say("gate: admitted %U in windows %U ..= %U", inside, a, b);
            good = false;
        }
    }
    /* The gate's count of the interval ending at `end`: at least the
     * permits that must count there, at most those that may. */
    uint64_t first = last + 1 < GATE_WINDOWS ? 0 : last + 1 - GATE_WINDOWS;
    uint64_t remaining, retry;
    int s = leap_gate2_remaining(&gate, end, &remaining);
    if (s != LEAP_OK) {
        fail("leap_gate2_remaining", s);
    }
    s = leap_gate2_retry_after(&gate, end, 1, &retry);
    if (s != LEAP_OK) {
        fail("leap_gate2_retry_after", s);
    }
    uint64_t count = LIMIT - remaining;
    uint64_t must = within(&main_passes, first, last, ALL) + within(&isr_passes, first, last, ALL);
    uint64_t may = maybe_within(&main_passes, first, last, ALL) +
                   maybe_within(&isr_passes, first, last, ALL);
    if (count < must || count > may) {
        say("gate: counts %U at %U, ledgers %U ..= %U", count, end, must, may);
        good = false;
    }
    if ((retry == 0) != (remaining > 0)) {
        say("gate: %U remaining but retry after %U", remaining, retry);
        good = false;
    }
    /* The check is only worth something if the gate was saturated. */
    if (peak != LIMIT) {
        say("gate: peak %U, not exactly its limit (saturated, never over)", peak);
        good = false;
    }
    say("gate: peak %U of %u (by caller's own window %U), count %U in %U ..= %U, retry after %U",
        peak, LIMIT, peak_by_own, count, must, may, retry);
    return good;
}

/* The per-source table at the end of a run that ended at tick `end`. */
static bool check_sources(uint64_t end)
{
    uint64_t last = end / WINDOW;
    uint64_t first = last + 1 < GATE_WINDOWS ? 0 : last + 1 - GATE_WINDOWS;
    bool good = true;
    for (unsigned source = 0; source < SOURCES; source++) {
        const passes_t *m = &main_keyed[source], *i = &isr_keyed[source];
        /* Every interval [a, a + N), for each key asked in it (a device's
         * key changes every window; every other source has one key). */
        uint64_t peak = 0;
        for (uint64_t a = 0; a <= last; a++) {
            uint64_t b = a + GATE_WINDOWS - 1;
            for (uint64_t w = a; w <= b; w++) {
                uint64_t k = key(source, w);
                if (w > a && k == key(source, a)) {
                    continue; /* the same key: counted once */
                }
                filter_t f = {(int)source, k};
                uint64_t inside = within(m, a, b, f) + within(i, a, b, f);
                peak = inside > peak ? inside : peak;
                if (inside > KEY_LIMIT) {
                    say("source %x: admitted %U in windows %U ..= %U", (unsigned)k, inside, a, b);
                    good = false;
                }
            }
        }
        /* The current key's booked count in the interval ending at `end`:
         * at least the permits that must count there, at most those that may. */
        uint64_t k = key(source, last);
        filter_t f = {(int)source, k};
        uint64_t remaining, retry = 0;
        int s = leap_keyed64_remaining(&per_source, k, end, &remaining);
        if (s != LEAP_OK) {
            fail("leap_keyed64_remaining", s);
        }
        s = leap_keyed64_retry_after(&per_source, k, end, 1, &retry);
        if (s != LEAP_OK) {
            fail("leap_keyed64_retry_after", s);
        }
        uint64_t booked = remaining > KEY_LIMIT ? 0 : KEY_LIMIT - remaining;
        uint64_t must = within(m, first, last, f) + within(i, first, last, f);
        uint64_t may = maybe_within(m, first, last, f) + maybe_within(i, first, last, f);
        if (booked < must || booked > may) {
            say("source %x: booked %U at %U, ledgers %U ..= %U", (unsigned)k, booked, end, must, may);
            good = false;
        }
        if ((retry == 0) != (remaining > 0)) {
            say("source %x: %U remaining but retry after %U", (unsigned)k, remaining, retry);
            good = false;
        }
        uint64_t by_main = maybe_within(m, 0, WINDOWS, ALL);
        uint64_t by_isr = maybe_within(i, 0, WINDOWS, ALL);
        say("source %x: peak %U of %u, admitted main %U + handler %U, booked %U in %U ..= %U, retry after %U",
            (unsigned)k, peak, KEY_LIMIT, by_main, by_isr, booked, must, may, retry);
        /* The checks above are only worth something if the hot address hit
         * its limit from both contexts. */
        if (source == HOT && (peak < KEY_LIMIT || by_main == 0 || by_isr == 0)) {
            say("the hot source never reached its limit from both contexts");
            good = false;
        }
        if (source == SYSTICK && (by_isr != end || systick_refused != 0)) {
            say("SysTick's own source: %U of %U ticks admitted, %u refused", by_isr, end,
                systick_refused);
            good = false;
        }
    }
    return good;
}
