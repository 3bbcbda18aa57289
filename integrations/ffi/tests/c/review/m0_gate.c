/* Review rev50, D5: the header's Cortex-M0 row from C: the staticlib
 * built with portable-atomic and the single-core cfg links with nothing
 * else (m0_link.sh). */
#include <stdint.h>

#include "leaparray.h"

static leap_gate2_t gate;

int main(void) {
  if (leap_gate2_init(&gate, 50, 10) != LEAP_OK) return 1;
  return leap_gate2_try_acquire(&gate, 0, 1) == LEAP_PASS ? 0 : 1;
}
