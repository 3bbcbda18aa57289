/* Review rev50, D1 with threads: one thread decides on a live gate while
 * another inits a leap_array_t (same size and alignment) in the gate's
 * storage. The header: init on an initialised object returns
 * LEAP_ERR_ALREADY_INIT. It returns LEAP_OK and ptr::writes the ring over
 * the gate that the first thread is reading: a data race, which
 * ThreadSanitizer reports when both the C and the Rust side are
 * instrumented (tsan.sh). Exit 1 if the init was accepted. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "leaparray.h"

static leap_gate2_t gate;
static atomic_int go, calls;

static void *decider(void *arg) {
  (void)arg;
  while (!atomic_load(&go)) {}
  for (int i = 0; i < 200000; i++) {
    (void)leap_gate2_try_acquire(&gate, (uint64_t)i, 1);
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  }
  return NULL;
}

int main(void) {
  if (leap_gate2_init(&gate, 50, 1000000) != LEAP_OK) return 2;
  pthread_t t;
  pthread_create(&t, NULL, decider, NULL);
  atomic_store(&go, 1);
  /* Init while the other thread is deciding on the gate. */
  while (atomic_load_explicit(&calls, memory_order_relaxed) < 1000) {}
  leap_status_t s = leap_array_init((leap_array_t *)(void *)&gate, 50);
  pthread_join(t, NULL);
  printf("leap_array_init on a live leap_gate2_t, while another thread decides on it: %d (%s)\n",
         (int)s, leap_status_str(s));
  if (s == LEAP_OK) {
    printf("DEFECT: accepted (want LEAP_ERR_ALREADY_INIT)\n");
    return 1;
  }
  return 0;
}
