/* Review rev50, D2 from C: the header says a call on storage that holds no
 * object "initialised at that address, as that type" returns
 * LEAP_ERR_UNINIT, objects "copied elsewhere with memcpy, or another
 * type's" included. A state word of TAG ^ address, with tags of two types
 * that differed only in bits 8..13, read an object of type X copied to
 * address A ^ ((id_X ^ id_Y) << 8) as an initialised type Y object; the
 * distances below are those of the old ids.
 *
 * Case 1: a leap_array_t (id 30) memcpy'd 0x1f00 bytes away is taken for a
 * leap_gate2_t (id 1): a decision on a ring's bytes, LEAP_OK.
 * Case 2 (crashes): a leap_gate2_t (id 1) memcpy'd 0x2100 bytes away is
 * taken for a leap_shard_writer_t (id 32): the Rust side follows a
 * `&Shard` made of the gate's bytes. Run with argument 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leaparray.h"

static _Alignas(0x4000) unsigned char pool[0x4000];

#define AT(type, off) ((type *)(void *)(pool + (off)))

int main(int argc, char **argv) {
  int which = argc > 1 ? atoi(argv[1]) : 1;
  if (which == 1) {
    leap_array_t *a = AT(leap_array_t, 0);
    leap_gate2_t *g = AT(leap_gate2_t, 0x1f00);
    uint64_t out = 12345;
    if (leap_array_init(a, 50) != LEAP_OK) return 2;
    leap_status_t before = leap_gate2_remaining(g, 0, &out);
    memcpy(g, a, sizeof *a);
    leap_status_t s = leap_gate2_remaining(g, 0, &out);
    leap_status_t d = leap_gate2_try_acquire(g, 0, 1);
    printf("case 1: zeroed %d; after the copy remaining -> %d (%s), out %llu; try_acquire -> %d (%s)\n",
           (int)before, (int)s, leap_status_str(s), (unsigned long long)out, (int)d,
           leap_status_str(d));
    if (s != LEAP_ERR_UNINIT) {
      printf("DEFECT case 1: a leap_array_t copied to another address is used as a leap_gate2_t\n");
      return 1;
    }
    return 0;
  }
  leap_gate2_t *g = AT(leap_gate2_t, 0);
  leap_shard_writer_t *w = AT(leap_shard_writer_t, 0x2100);
  if (leap_gate2_init(g, 50, 10) != LEAP_OK) return 2;
  memcpy(w, g, sizeof *w);
  printf("case 2: a gate's first %zu bytes copied to writer storage 0x2100 away; add:\n",
         sizeof *w);
  fflush(stdout);
  leap_status_t s = leap_shard_writer_add(w, 0, 0, 1);
  printf("case 2: add -> %d (%s)\n", (int)s, leap_status_str(s));
  if (s != LEAP_ERR_UNINIT) {
    printf("DEFECT case 2\n");
    return 1;
  }
  return 0;
}
