/* Start-up for the LM3S6965 (Cortex-M3): the vector table, the reset
 * handler (copy .data, zero .bss, call main), semihosting output and exit
 * (QEMU: -semihosting-config enable=on,target=native). */
#include <stdint.h>

#include "board.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _stack_top;
extern int main(void);

#define STACK_PAINT 0xA5A5A5A5u

/* Semihosting: a `bkpt 0xAB` with the operation in r0 and its argument in r1. */
static uint32_t semihost(uint32_t op, uint32_t arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register uint32_t r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void board_write(const char *s)
{
    semihost(0x04 /* SYS_WRITE0 */, (uint32_t)(uintptr_t)s);
}

void board_exit(int ok)
{
    /* SYS_EXIT: QEMU exits 0 for ADP_Stopped_ApplicationExit, 1 otherwise. */
    semihost(0x18, ok ? 0x20026u /* ApplicationExit */ : 0x20023u /* RunTimeErrorUnknown */);
    for (;;) {
        __asm__ volatile("bkpt 0");
    }
}

void reset_handler(void)
{
    uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0;
    }
    /* Paint the free RAM below this frame, for board_stack_used. */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *dst = &_ebss; dst < sp - 16;) {
        *dst++ = STACK_PAINT;
    }
    board_exit(main() == 0);
}

uint32_t board_stack_used(void)
{
    const uint32_t *p = &_ebss;
    while (p < &_stack_top && *p == STACK_PAINT) {
        p++;
    }
    return (uint32_t)((uintptr_t)&_stack_top - (uintptr_t)p);
}

static void fault_handler(void)
{
    board_write("FIRMWARE FAILED: fault exception\n");
    board_exit(0);
}

void systick_handler(void);

/* The core's 16 exception vectors (the chip's interrupts are not used). */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&_stack_top,
    reset_handler,
    fault_handler, /* NMI */
    fault_handler, /* HardFault */
    fault_handler, /* MemManage */
    fault_handler, /* BusFault */
    fault_handler, /* UsageFault */
    0, 0, 0, 0,
    fault_handler, /* SVCall */
    fault_handler, /* DebugMonitor */
    0,
    fault_handler, /* PendSV */
    systick_handler,
};
