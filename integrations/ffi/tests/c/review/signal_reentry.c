/* Review rev50, D1 from C: a signal handler interrupts calls on a
 * single-writer table (SIGALRM from an interval timer, as an interrupt
 * would on firmware).
 *
 * Part 1 (holds): the handler calls the same table: LEAP_ERR_BUSY while the
 * main loop is inside a call, a decision otherwise; never a second &mut.
 *
 * Part 2: the handler inits a leap_keyed64_t in the table's storage (a
 * wrong-typed pointer). The header promises init on storage holding an
 * object of any type LEAP_ERR_ALREADY_INIT, and a second caller of a
 * one-caller object mid-call LEAP_ERR_BUSY ("never a corrupted table").
 * Exit 1 and "DEFECT" if the init returns LEAP_OK (it then writes a
 * KeyedGate under the interrupted call's &mut LocalKeyedGate: with the
 * debug staticlib the interrupted call usually trips one of the core's
 * debug assertions and aborts; a release build runs on, on corrupt state),
 * or if no init ever landed inside a call. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "leaparray.h"

/* 128-aligned: storage of the size and alignment of either type. */
static _Alignas(LEAP_KEYED64_ALIGN) leap_local64_t table;

static volatile sig_atomic_t part, handled, busy, decided, init_ok, in_call, inits, init_busy;
static volatile int init_status = 99;

static void on_alarm(int sig) {
  (void)sig;
  handled++;
  if (part == 1) {
    leap_status_t s = leap_local64_try_acquire(&table, 7, 0, 1);
    if (s == LEAP_ERR_BUSY) busy++;
    else if (s == LEAP_PASS || s == LEAP_BLOCK) decided++;
    else { fprintf(stderr, "part 1: unexpected %d\n", (int)s); abort(); }
  } else if (part == 2 && in_call && !init_ok) {
    leap_status_t s = leap_keyed64_init((leap_keyed64_t *)(void *)&table, 50, 5);
    init_status = s;
    inits++;
    if (s == LEAP_ERR_BUSY) init_busy++;
    if (s == LEAP_OK) {
      static const char m[] = "DEFECT part 2: in the handler, leap_keyed64_init on the interrupted "
                              "single-writer table's storage returned LEAP_OK (want "
                              "LEAP_ERR_ALREADY_INIT or LEAP_ERR_BUSY)\n";
      ssize_t w = write(1, m, sizeof m - 1);
      (void)w;
      init_ok = 1;
    }
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  leap_request_t req[256];
  leap_status_t dec[256];
  for (int i = 0; i < 256; i++) { req[i].key = (uint64_t)i; req[i].n = 1; }
  if (leap_local64_init(&table, 50, 1000) != LEAP_OK) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &it, NULL);

  part = 1;
  while (busy == 0 || handled < 200) {
    leap_status_t s = leap_local64_try_acquire_burst(&table, 1, req, 256, dec);
    if (s != LEAP_OK && s != LEAP_ERR_BUSY) { fprintf(stderr, "burst: %d\n", (int)s); return 2; }
  }
  printf("part 1 (same table from the handler): %d handled, %d BUSY, %d decided: holds\n",
         (int)handled, (int)busy, (int)decided);

  part = 2;
  /* Until the handler's init has run 1,000 times, 100 of them inside a
   * call (LEAP_ERR_BUSY once fixed), or returned LEAP_OK once. */
  for (uint64_t now = 2; !init_ok && (inits < 1000 || init_busy < 100) && now < 2000000; now++) {
    in_call = 1; /* the handler acts only while a call may be running */
    (void)leap_local64_try_acquire_burst(&table, now, req, 256, dec);
    in_call = 0;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  if (!init_ok) {
    printf("part 2: the handler's init ran %d times, %d of them LEAP_ERR_BUSY (mid-call), never "
           "LEAP_OK (last %d): holds\n", (int)inits, (int)init_busy, init_status);
    if (init_busy == 0) return 1; /* never interrupted a call: proves nothing */
    return 0;
  }
  /* What the main loop finds next: the storage says leap_local64_t again
   * (the interrupted call stored its READY back) over a KeyedGate's bytes. */
  fflush(stdout);
  leap_status_t s = leap_local64_try_acquire_burst(&table, 5000000, req, 256, dec);
  printf("the next burst on the table: %d (%s)\n", (int)s, leap_status_str(s));
  uint64_t out = 0;
  s = leap_keyed64_remaining((leap_keyed64_t *)(void *)&table, 1, 5000000, &out);
  printf("and as the keyed table the handler made: %d (%s)\n", (int)s, leap_status_str(s));
  return 1;
}
