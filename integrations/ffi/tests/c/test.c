/* The C API from C: every bad input gets its error code, and normal use
 * gives exact counts. Built with -fsanitize=address,undefined by run.sh;
 * prints "FFI C OK" when every check holds. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leaparray.h"

/* The header's numbers, as the C compiler lays the types out. */
_Static_assert(sizeof(leap_gate2_t) == LEAP_GATE2_SIZE, "gate2 size");
_Static_assert(_Alignof(leap_gate2_t) == LEAP_GATE2_ALIGN, "gate2 align");
_Static_assert(sizeof(leap_keyed64_t) == LEAP_KEYED64_SIZE, "keyed64 size");
_Static_assert(_Alignof(leap_keyed64_t) == LEAP_KEYED64_ALIGN, "keyed64 align");
/* leap_status_t is a C enum: the target's enum size (4 bytes here, 1 on
 * arm-none-eabi), which tests/c_abi.rs checks equals Rust's on the host;
 * on any target it holds the negative errors. */
_Static_assert(sizeof(leap_status_t) <= sizeof(int) && (leap_status_t)LEAP_ERR_OTHER < 0,
               "status: a C enum holding -15");

static int failures;

#define CHECK(expr, want)                                                          \
  do {                                                                             \
    leap_status_t got_ = (expr);                                                   \
    if (got_ != (want)) {                                                          \
      fprintf(stderr, "%s:%d: %s: got %d (%s), want %s\n", __FILE__, __LINE__,     \
              #expr, (int)got_, leap_status_str(got_), #want);                     \
      failures++;                                                                  \
    }                                                                              \
  } while (0)

#define CHECK_EQ(a, b)                                                             \
  do {                                                                             \
    unsigned long long a_ = (a), b_ = (b);                                         \
    if (a_ != b_) {                                                                \
      fprintf(stderr, "%s:%d: %s == %llu, want %llu\n", __FILE__, __LINE__, #a,    \
              a_, b_);                                                             \
      failures++;                                                                  \
    }                                                                              \
  } while (0)

/* `offset` bytes into `base`, as an object pointer: integer-to-pointer,
 * implementation-defined in C (never a misaligned pointer conversion). */
#define AT(type, base, offset) ((type *)(uintptr_t)((unsigned char *)(base) + (offset)))

/* Static storage: zeroed, as the header asks. */
static leap_gate2_t gate;
static leap_gate10_t gate10;
static leap_keyed64_t keyed;
static leap_local1k_t local;
static leap_array_t ring;
static leap_shards_t shards;
static leap_shard_writer_t writers[LEAP_SHARDS];
static struct {
  leap_gate2_t room[2];
} misaligned;

static void bad_input(void) {
  uint64_t out = 0;
  /* Null pointers. */
  CHECK(leap_gate2_init(NULL, 50, 100), LEAP_ERR_NULL);
  CHECK(leap_gate2_try_acquire(NULL, 0, 1), LEAP_ERR_NULL);
  CHECK(leap_keyed64_init(NULL, 50, 10), LEAP_ERR_NULL);
  CHECK(leap_local1k_try_acquire(NULL, 1, 0, 1), LEAP_ERR_NULL);
  CHECK(leap_array_init(NULL, 50), LEAP_ERR_NULL);
  CHECK(leap_shards_claim(NULL, 0, &writers[0]), LEAP_ERR_NULL);
  CHECK(leap_gate2_retry_after(&gate, 0, 1, NULL), LEAP_ERR_NULL);
  /* Misaligned storage: 1 and 8 bytes in. */
  CHECK(leap_gate2_init(AT(leap_gate2_t, &misaligned, 1), 50, 100), LEAP_ERR_MISALIGNED);
  CHECK(leap_gate2_init(AT(leap_gate2_t, &misaligned, 8), 50, 100), LEAP_ERR_MISALIGNED);
  CHECK(leap_gate2_try_acquire(AT(leap_gate2_t, &misaligned, 8), 0, 1), LEAP_ERR_MISALIGNED);
  CHECK(leap_keyed64_init(AT(leap_keyed64_t, &keyed, 64), 50, 10), LEAP_ERR_MISALIGNED);
  /* A window of 0. */
  CHECK(leap_gate2_init(&gate, 0, 100), LEAP_ERR_WINDOW);
  CHECK(leap_keyed64_init(&keyed, 0, 10), LEAP_ERR_WINDOW);
  CHECK(leap_local1k_init(&local, 0, 10), LEAP_ERR_WINDOW);
  CHECK(leap_array_init(&ring, 0), LEAP_ERR_WINDOW);
  CHECK(leap_shards_init(&shards, 0), LEAP_ERR_WINDOW);
  /* Impossible limits: 0, and above what the type holds. */
  CHECK(leap_gate2_init(&gate, 50, 0), LEAP_ERR_LIMIT);
  CHECK(leap_gate2_init(&gate, 50, LEAP_GATE_MAX_LIMIT + 1), LEAP_ERR_LIMIT);
  CHECK(leap_gate2_init(&gate, 50, UINT64_MAX), LEAP_ERR_LIMIT);
  CHECK(leap_keyed64_init(&keyed, 50, LEAP_KEYED_MAX_LIMIT + 1), LEAP_ERR_LIMIT);
  CHECK(leap_local1k_init(&local, 50, 0), LEAP_ERR_LIMIT);
  /* Uninitialised objects: zeroed static storage, ... */
  CHECK(leap_gate2_try_acquire(&gate, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_gate2_retry_after(&gate, 0, 1, &out), LEAP_ERR_UNINIT);
  CHECK(leap_keyed64_try_acquire(&keyed, 1, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_local1k_try_acquire(&local, 1, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_array_add(&ring, 0, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_shards_add(&shards, 0, 0, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_shard_writer_add(&writers[0], 0, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_shard_writer_release(&writers[0]), LEAP_ERR_UNINIT);
  /* ... heap storage full of garbage, ... */
  leap_gate4_t *junk = aligned_alloc(LEAP_GATE4_ALIGN, sizeof *junk);
  if (!junk) abort();
  memset(junk, 0xa5, sizeof *junk);
  CHECK(leap_gate4_try_acquire(junk, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_gate4_init(junk, 50, 3), LEAP_OK);
  CHECK(leap_gate4_try_acquire(junk, 0, 3), LEAP_PASS);
  CHECK(leap_gate4_try_acquire(junk, 0, 1), LEAP_BLOCK);
  /* ... a copy of an initialised object, and another type's object. */
  leap_gate4_t copy;
  memcpy(&copy, junk, sizeof copy);
  CHECK(leap_gate4_try_acquire(&copy, 200, 1), LEAP_ERR_UNINIT);
  CHECK(leap_gate2_try_acquire((leap_gate2_t *)(void *)junk, 0, 1), LEAP_ERR_UNINIT);
  free(junk);
}

/* Two threads race on one gate and one shared table. */
enum { PER_THREAD = 20000 };
static void *racer(void *arg) {
  uint64_t *passes = arg;
  for (uint64_t i = 0; i < PER_THREAD; i++) {
    passes[0] += leap_gate2_try_acquire(&gate, 10, 1) == LEAP_PASS;
    passes[1] += leap_keyed64_try_acquire(&keyed, i % 5, 10, 1) == LEAP_PASS;
  }
  return NULL;
}

static void normal_use(void) {
  uint64_t out = 0;
  CHECK(leap_gate2_init(&gate, 50, 1000), LEAP_OK);
  CHECK(leap_gate2_init(&gate, 50, 1000), LEAP_ERR_ALREADY_INIT);
  CHECK(leap_keyed64_init(&keyed, 50, 300), LEAP_OK);
  uint64_t passes[2][2] = {{0, 0}, {0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, racer, passes[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK_EQ(passes[0][0] + passes[1][0], 1000);    /* the gate's limit */
  CHECK_EQ(passes[0][1] + passes[1][1], 5 * 300); /* 5 keys at their limit */
  CHECK(leap_gate2_try_acquire(&gate, 99, 1), LEAP_BLOCK);
  CHECK(leap_gate2_retry_after(&gate, 60, 1, &out), LEAP_OK);
  CHECK_EQ(out, 40);
  CHECK(leap_gate2_retry_after(&gate, 60, 1001, &out), LEAP_NEVER);
  CHECK(leap_gate2_try_acquire(&gate, 100, 1000), LEAP_PASS);
  CHECK(leap_keyed64_retry_after(&keyed, 4, 10, 1, &out), LEAP_OK);
  CHECK_EQ(out, 90);
  CHECK(leap_keyed64_remaining(&keyed, 5, 10, &out), LEAP_OK);
  CHECK_EQ(out, 300);

  /* A gate of 10 windows: 7 per 100 ticks. */
  CHECK(leap_gate10_init(&gate10, 10, 7), LEAP_OK);
  unsigned pass10 = 0;
  for (uint64_t now = 0; now < 1000; now++) pass10 += leap_gate10_try_acquire(&gate10, now, 1) == LEAP_PASS;
  CHECK_EQ(pass10, 70);

  /* The single-writer table: one key per request, a burst, the limit. */
  CHECK(leap_local1k_init(&local, 50, 2), LEAP_OK);
  leap_request_t reqs[300];
  leap_status_t decisions[300];
  for (unsigned i = 0; i < 300; i++) reqs[i] = (leap_request_t){.key = i % 100, .n = 1};
  CHECK(leap_local1k_try_acquire_burst(&local, 0, reqs, 300, decisions), LEAP_OK);
  unsigned passed = 0, blocked = 0;
  for (unsigned i = 0; i < 300; i++) {
    passed += decisions[i] == LEAP_PASS;
    blocked += decisions[i] == LEAP_BLOCK;
  }
  CHECK_EQ(passed, 200);
  CHECK_EQ(blocked, 100);
  CHECK(leap_local1k_try_acquire(&local, 7, 99, 1), LEAP_BLOCK);
  CHECK(leap_local1k_try_acquire(&local, 7, 100, 2), LEAP_PASS);
  CHECK(leap_local1k_try_acquire_burst(&local, 0, NULL, 1, decisions), LEAP_ERR_NULL);

  /* The ring: four counters over ten windows. */
  CHECK(leap_array_init(&ring, 50), LEAP_OK);
  for (uint64_t t = 0; t < 20; t++) CHECK(leap_array_add(&ring, t * 50, (uint32_t)(t % 4), t), LEAP_OK);
  uint64_t sums[LEAP_COUNTERS];
  CHECK(leap_array_sums(&ring, 19 * 50, sums), LEAP_OK);
  CHECK_EQ(sums[0], 12 + 16);
  CHECK_EQ(sums[3], 11 + 15 + 19);
  CHECK(leap_array_add(&ring, 0, 0, 1), LEAP_ERR_STALE);
  CHECK(leap_array_add(&ring, 0, LEAP_COUNTERS, 1), LEAP_ERR_COUNTER);

  /* Shards: a writer per "queue", shared adds, the merged sums. */
  CHECK(leap_shards_init(&shards, 50), LEAP_OK);
  CHECK(leap_shards_claim(&shards, 0, &writers[0]), LEAP_OK);
  CHECK(leap_shards_claim(&shards, 1, &writers[1]), LEAP_OK);
  CHECK(leap_shards_claim(&shards, 1, &writers[2]), LEAP_ERR_CLAIMED);
  CHECK(leap_shards_claim(&shards, LEAP_SHARDS, &writers[2]), LEAP_ERR_NO_SUCH_SHARD);
  for (uint64_t t = 0; t < 100; t++) {
    CHECK(leap_shard_writer_add(&writers[0], t, 0, 1), LEAP_OK);
    CHECK(leap_shard_writer_add(&writers[1], t, 1, 64), LEAP_OK);
    CHECK(leap_shards_add(&shards, (size_t)t, t, 0, 1), LEAP_OK);
  }
  CHECK(leap_shards_sum(&shards, 99, 0, &out), LEAP_OK);
  CHECK_EQ(out, 200);
  CHECK(leap_shards_sum(&shards, 99, 1, &out), LEAP_OK);
  CHECK_EQ(out, 6400);
  CHECK(leap_shard_writer_release(&writers[0]), LEAP_OK);
  CHECK(leap_shard_writer_release(&writers[1]), LEAP_OK);
  CHECK(leap_shard_writer_add(&writers[0], 99, 0, 1), LEAP_ERR_UNINIT);
  CHECK(leap_shards_claim(&shards, 1, &writers[2]), LEAP_OK);
  CHECK(leap_shard_writer_release(&writers[2]), LEAP_OK);
}

int main(void) {
  bad_input();
  normal_use();
  if (failures) {
    fprintf(stderr, "FFI C FAILED: %d checks\n", failures);
    return 1;
  }
  puts("FFI C OK");
  return 0;
}
