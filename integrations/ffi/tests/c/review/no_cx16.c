/* Review stop55, from C: on an x86-64 CPU without cmpxchg16b a 128-bit
 * word is portable-atomic's spin lock, which a signal handler interrupting
 * a call deadlocks on; init of an object of such words (a shared per-key
 * table, a gate whose limit needs one) returns LEAP_ERR_NOT_LOCK_FREE
 * there, and a gate of one 64-bit word still initialises.
 *
 *   no_cx16 refused   the CPU lacks cmpxchg16b: both refused
 *   no_cx16 accepted  the CPU has it: both initialised, and they decide
 *
 * Exit 0 when every status is the expected one, 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "leaparray.h"

static leap_gate2_t narrow;
static leap_gate2_t wide;
static leap_keyed64_t keyed;

static int failed;

static void expect(const char *what, int got, int want) {
  printf("%s: %s\n", what, leap_status_str(got));
  if (got != want) {
    printf("  expected: %s\n", leap_status_str(want));
    failed = 1;
  }
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "refused") && strcmp(argv[1], "accepted"))) {
    fprintf(stderr, "usage: no_cx16 refused|accepted\n");
    return 2;
  }
  int refused = strcmp(argv[1], "refused") == 0;
  int wide_want = refused ? LEAP_ERR_NOT_LOCK_FREE : LEAP_OK;
  /* A limit of 1,000 fits one 64-bit word; 5,000 needs a 128-bit one. */
  expect("gate2, limit 1000 (a 64-bit word)", leap_gate2_init(&narrow, 100, 1000), LEAP_OK);
  expect("gate2, limit 5000 (a 128-bit word)", leap_gate2_init(&wide, 100, 5000), wide_want);
  expect("keyed64 (128-bit slots)", leap_keyed64_init(&keyed, 100, 10), wide_want);
  expect("gate2, limit 1000, decides", leap_gate2_try_acquire(&narrow, 0, 1), LEAP_PASS);
  if (!refused) {
    expect("gate2, limit 5000, decides", leap_gate2_try_acquire(&wide, 0, 1), LEAP_PASS);
    expect("keyed64 decides", leap_keyed64_try_acquire(&keyed, 7, 0, 1), LEAP_PASS);
  } else {
    expect("the refused gate is no object", leap_gate2_try_acquire(&wide, 0, 1), LEAP_ERR_UNINIT);
  }
  printf(failed ? "no_cx16: FAILED\n" : "no_cx16: ok\n");
  return failed;
}
