/*
** test_bcache.c - decompressed batches kept for lookups (core/bcache.h):
** found by segment identity, position and size, and only with enough
** bytes; the least recently used go first past the bound, never a pinned
** one (its bytes stay readable until released, even once replaced); the
** memory of an evicted entry comes back for the next decompression; out
** of memory keeps nothing and leaks nothing.
*/
#include "testutil.h"

#include <string.h>

#include "bcache.h"

/* A buffer of n bytes, each the byte tag. */
static kl_buf filled(const kl_env *env, size_t n, uint8_t tag) {
  kl_buf b = {0};
  assert_int_equal(kl_buf_reserve(env, &b, n), KL_OK);
  memset(b.p, tag, n);
  b.len = n;
  return b;
}

static int kept(kl_bcache *c, uint64_t uid, int64_t pos, int32_t size, size_t need, uint8_t tag) {
  size_t len;
  kl_bcache_entry *e;
  const uint8_t *p = kl_bcache_get(c, uid, pos, size, need, &len, &e);
  if (!p) return 0;
  int ok = len >= need && p[0] == tag && p[len - 1] == tag;
  kl_bcache_release(c, e);
  return ok;
}

static void test_found_by_identity_and_length(void **state) {
  (void)state;
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  kl_bcache *c = kl_bcache_new(env, 1 << 20);
  assert_non_null(c);
  kl_buf b = filled(env, 1000, 'a');
  kl_bcache_entry *e;
  const uint8_t *p = kl_bcache_adopt(c, 7, 4096, 300, &b, 0, &e);
  assert_non_null(p);
  assert_null(b.p); /* nothing was evicted: no memory comes back */
  kl_bcache_release(c, e);
  assert_true(kept(c, 7, 4096, 300, 1000, 'a'));
  assert_true(kept(c, 7, 4096, 300, 1, 'a'));
  assert_false(kept(c, 7, 4096, 300, 1001, 'a')); /* too short */
  assert_false(kept(c, 8, 4096, 300, 1, 'a'));    /* another segment */
  assert_false(kept(c, 7, 4097, 300, 1, 'a'));    /* another batch */
  assert_false(kept(c, 7, 4096, 301, 1, 'a'));    /* a batch since replaced */
  size_t len;
  assert_null(kl_bcache_get(c, 7, 4096, 300, 1001, &len, &e));
  assert_int_equal(len, 1000);
  assert_null(e);
  /* A longer prefix replaces it. */
  b = filled(env, 2000, 'b');
  assert_non_null(kl_bcache_adopt(c, 7, 4096, 300, &b, 0, &e));
  kl_bcache_release(c, e);
  assert_true(kept(c, 7, 4096, 300, 2000, 'b'));
  assert_int_equal(kl_bcache_count(c), 1);
  kl_bcache_free(c);
  kl_buf_free(env, &b);
  assert_int_equal(fa.live, 0);
}

/* Past the bound the least recently used go, and their memory is given
** back; a pinned entry stays, readable, until released. */
static void test_bound_evicts_least_recent_unpinned(void **state) {
  (void)state;
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  const size_t bound = 64 << 10;
  kl_bcache *c = kl_bcache_new(env, bound);
  kl_bcache_entry *pinned, *e;
  kl_buf b = filled(env, 4000, 0);
  const uint8_t *p0 = kl_bcache_adopt(c, 1, 0, 10, &b, 0, &pinned); /* kept pinned */
  assert_non_null(p0);
  int back = 0;
  for (int i = 1; i <= 64; i++) {
    kl_buf_free(env, &b);
    b = filled(env, 4000, (uint8_t)i);
    assert_non_null(kl_bcache_adopt(c, 1, i * 100, 10, &b, 0, &e));
    kl_bcache_release(c, e);
    if (b.p) back++;
    assert_true(kl_bcache_bytes(c) <= bound + 4096 + 256);
    if (i == 3) assert_true(kept(c, 1, 100, 10, 4000, 1)); /* used: now most recent */
  }
  assert_true(back > 0);
  assert_true(kl_bcache_count(c) < 64);
  assert_true(kept(c, 1, 6400, 10, 4000, 64)); /* the newest stays */
  assert_false(kept(c, 1, 200, 10, 1, 2));     /* an old one went */
  assert_true(kept(c, 1, 0, 10, 4000, 0));     /* the pinned one did not */
  /* Replaced while pinned: the old bytes stay readable, the new are found. */
  kl_buf_free(env, &b);
  b = filled(env, 4000, 'z');
  assert_non_null(kl_bcache_adopt(c, 1, 0, 10, &b, 0, &e));
  kl_bcache_release(c, e);
  assert_int_equal(p0[0], 0);
  assert_int_equal(p0[3999], 0);
  assert_true(kept(c, 1, 0, 10, 4000, 'z'));
  kl_bcache_release(c, pinned);
  kl_buf_free(env, &b);
  /* Too large for the bound (a quarter of it at most): not kept. */
  b = filled(env, bound / 2, 'x');
  assert_null(kl_bcache_adopt(c, 2, 0, 10, &b, 0, &e));
  assert_non_null(b.p); /* still the caller's */
  assert_false(kept(c, 2, 0, 10, 1, 'x'));
  kl_buf_free(env, &b);
  kl_bcache_free(c);
  assert_int_equal(fa.live, 0);
}

/* A batch cheap to decompress again goes behind the others: the next
** entry evicts it rather than the least recent costly one, unless it was
** found again in between. */
static void test_cheap_entries_go_first(void **state) {
  (void)state;
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  kl_bcache *c = kl_bcache_new(env, 64 << 10);
  kl_bcache_entry *e;
  int i = 0;
  kl_buf b = {0};
  while (kl_bcache_bytes(c) + 2 * (4096 + 256) <= (64 << 10)) { /* full of costly ones */
    b = filled(env, 4000, 'c');
    assert_non_null(kl_bcache_adopt(c, 1, ++i, 10, &b, 0, &e));
    kl_bcache_release(c, e);
    kl_buf_free(env, &b);
  }
  b = filled(env, 4000, 'l');
  assert_non_null(kl_bcache_adopt(c, 2, 0, 10, &b, 1, &e)); /* cheap */
  kl_bcache_release(c, e);
  kl_buf_free(env, &b);
  for (int k = 0; k < 2; k++) {
    b = filled(env, 4000, 'c');
    assert_non_null(kl_bcache_adopt(c, 1, ++i, 10, &b, 0, &e));
    kl_bcache_release(c, e);
    kl_buf_free(env, &b);
  }
  assert_false(kept(c, 2, 0, 10, 1, 'l')); /* the cheap one went first */
  assert_true(kept(c, 1, 2, 10, 1, 'c'));  /* not the second oldest costly */
  /* Found again, a cheap entry is as recent as any. */
  b = filled(env, 4000, 'l');
  assert_non_null(kl_bcache_adopt(c, 2, 0, 10, &b, 1, &e));
  kl_bcache_release(c, e);
  kl_buf_free(env, &b);
  assert_true(kept(c, 2, 0, 10, 1, 'l'));
  for (int k = 0; k < 2; k++) {
    b = filled(env, 4000, 'c');
    assert_non_null(kl_bcache_adopt(c, 1, ++i, 10, &b, 0, &e));
    kl_bcache_release(c, e);
    kl_buf_free(env, &b);
  }
  assert_true(kept(c, 2, 0, 10, 1, 'l'));
  kl_bcache_free(c);
  assert_int_equal(fa.live, 0);
}

/* Every allocation failing in turn: nothing kept, nothing leaked, and
** what was kept before is still found. */
static void test_out_of_memory_keeps_nothing(void **state) {
  (void)state;
  for (long at = 1; at <= 8; at++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, 0);
    kl_bcache *c = kl_bcache_new(env, 1 << 20);
    if (!c) continue;
    kl_buf b = filled(env, 100, 'a');
    kl_bcache_entry *e;
    assert_non_null(kl_bcache_adopt(c, 1, 0, 10, &b, 0, &e));
    kl_bcache_release(c, e);
    fa.fail_at = fa.calls + at;
    for (int i = 1; i < 200; i++) {
      kl_buf x = {0};
      if (kl_buf_reserve(env, &x, 100) != KL_OK) continue;
      x.len = 100;
      memset(x.p, 'b', 100);
      if (kl_bcache_adopt(c, 1, i * 10, 10, &x, 0, &e)) kl_bcache_release(c, e);
      kl_buf_free(env, &x);
    }
    assert_true(kept(c, 1, 0, 10, 100, 'a'));
    kl_bcache_free(c);
    assert_int_equal(fa.live, 0);
  }
}

/* A lower bound evicts at once, least recent first, but never a pinned
** entry, which stays readable until released; a higher one keeps more. */
static void test_lower_bound_evicts_at_once(void **state) {
  (void)state;
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  kl_bcache *c = kl_bcache_new(env, 1 << 20);
  kl_bcache_entry *pinned = NULL, *e;
  for (int i = 0; i < 8; i++) {
    kl_buf b = filled(env, 8000, (uint8_t)('a' + i));
    assert_non_null(kl_bcache_adopt(c, 1, i * 100, 50, &b, 0, i == 0 ? &pinned : &e));
    if (i) kl_bcache_release(c, e);
    kl_buf_free(env, &b);
  }
  assert_int_equal(kl_bcache_count(c), 8);
  kl_bcache_set_bound(c, 20000);
  assert_int_equal(kl_bcache_bound(c), 20000);
  /* The pinned (oldest) entry stays; of the rest only the newest fits. */
  assert_true(kl_bcache_bytes(c) <= 20000 + 9000);
  assert_true(kept(c, 1, 0, 50, 8000, 'a'));
  assert_true(kept(c, 1, 700, 50, 8000, 'h'));
  assert_false(kept(c, 1, 100, 50, 1, 'b'));
  kl_bcache_release(c, pinned);
  kl_bcache_set_bound(c, 0); /* nothing kept */
  assert_int_equal(kl_bcache_count(c), 0);
  assert_int_equal(kl_bcache_bytes(c), 0);
  kl_buf b = filled(env, 100, 'z');
  assert_null(kl_bcache_adopt(c, 1, 0, 50, &b, 0, &e));
  kl_buf_free(env, &b);
  kl_bcache_free(c);
  assert_int_equal(fa.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_found_by_identity_and_length),
      cmocka_unit_test(test_bound_evicts_least_recent_unpinned),
      cmocka_unit_test(test_cheap_entries_go_first),
      cmocka_unit_test(test_out_of_memory_keeps_nothing),
      cmocka_unit_test(test_lower_bound_evicts_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
