/* Review rev50, D5: the header's Cortex-M0 row ("--features
 * portable-atomic-critical-section (and link a critical-section
 * implementation)") from C. The staticlib then needs the Rust-ABI symbols
 * `_critical_section_1_0_acquire` / `_release` of the critical-section
 * crate (declared `extern "Rust"`), which a C program cannot define
 * soundly, and the header does not name them: the link fails
 * (m0_link.sh). */
#include <stdint.h>

#include "leaparray.h"

static leap_gate2_t gate;

int main(void) {
  if (leap_gate2_init(&gate, 50, 10) != LEAP_OK) return 1;
  return leap_gate2_try_acquire(&gate, 0, 1) == LEAP_PASS ? 0 : 1;
}
