/* The board: semihosting output and exit, SysTick's registers. */
#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

/* Writes a NUL-terminated string to the host (semihosting SYS_WRITE0). */
void board_write(const char *s);
/* Exits QEMU: status 0 if `ok`, 1 otherwise. */
void board_exit(int ok) __attribute__((noreturn));
/* The most stack used since reset, in bytes (the free RAM is painted at
 * reset; the highest word changed since bounds the stack's depth). */
uint32_t board_stack_used(void);

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_CSR_ENABLE 1u
#define SYST_CSR_TICKINT 2u
#define SYST_CSR_CLKSOURCE_CORE 4u

#endif
