/*
** test_keyset.c - the keys of a key search and the batch key filters
** (core/keyset.h): keys compared as bytes (NUL bytes and the empty key
** included, a NULL key never), duplicates kept once, growth past the first
** slots, allocation failures; a filter never says "no" for a key it was
** given, and says "no" for most others (8 bits a key, 3 probes).
*/
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "keyset.h"

static int has(const kl_keyset *s, const void *p, int32_t n) {
  return kl_keyset_has(s, p, n, n >= 0 ? kl_key_hash(p, (size_t)n) : 0);
}

static void test_keys_compare_as_bytes(void **state) {
  (void)state;
  kl_keyset s;
  kl_keyset_init(&s, NULL);
  assert_false(has(&s, "a", 1)); /* empty: matches nothing */
  assert_int_equal(kl_keyset_add(&s, "c42", 3), KL_OK);
  assert_int_equal(kl_keyset_add(&s, "\0x", 2), KL_OK);
  assert_int_equal(kl_keyset_add(&s, "", 0), KL_OK);
  assert_int_equal(kl_keyset_add(&s, "c42", 3), KL_OK);
  assert_int_equal(s.n, 3);
  assert_true(has(&s, "c42", 3));
  assert_true(has(&s, "\0x", 2));
  assert_true(has(&s, "", 0));
  assert_false(has(&s, "c4", 2));
  assert_false(has(&s, "c420", 4));
  assert_false(has(&s, "\0y", 2));
  assert_false(has(&s, NULL, -1)); /* a NULL key */
  kl_keyset_clear(&s);
  assert_false(has(&s, "c42", 3));
  assert_int_equal(kl_keyset_add(&s, "z", 1), KL_OK);
  assert_true(has(&s, "z", 1));
  kl_keyset_free(&s);
  assert_false(has(&s, "z", 1));
}

static void test_many_keys(void **state) {
  (void)state;
  kl_keyset s;
  kl_keyset_init(&s, NULL);
  char k[32];
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(k, sizeof k, "customer-%d", i);
    assert_int_equal(kl_keyset_add(&s, k, (size_t)n), KL_OK);
    assert_int_equal(kl_keyset_add(&s, k, (size_t)n), KL_OK);
  }
  assert_int_equal(s.n, 5000);
  for (int i = 0; i < 10000; i++) {
    int n = snprintf(k, sizeof k, "customer-%d", i);
    assert_int_equal(has(&s, k, n), i < 5000);
  }
  kl_keyset_free(&s);
}

static void test_allocation_failures(void **state) {
  (void)state;
  for (long at = 0; at < 40; at++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, at);
    kl_keyset s;
    kl_keyset_init(&s, env);
    char k[16];
    int added = 0;
    for (int i = 0; i < 20; i++) {
      int n = snprintf(k, sizeof k, "k%d", i);
      if (kl_keyset_add(&s, k, (size_t)n) != KL_OK) break;
      added++;
    }
    /* Whatever was added is there, nothing else. */
    for (int i = 0; i < 20; i++) {
      int n = snprintf(k, sizeof k, "k%d", i);
      assert_int_equal(has(&s, k, n), i < added);
    }
    kl_keyset_free(&s);
    assert_int_equal(fa.live, 0);
  }
}

/* A filter of a batch's keys holds each of them; of 10,000 other keys,
** about 3% pass it. */
static void test_filter_never_misses(void **state) {
  (void)state;
  for (int32_t records = 1; records <= 500; records = records * 3 + 1) {
    size_t w = kl_keyfilter_words(records);
    assert_true(w >= 1 && w * 64 >= (size_t)records * 8);
    uint64_t f[128];
    assert_true(w <= 128);
    memset(f, 0, sizeof f);
    char k[32];
    for (int i = 0; i < records; i++) {
      int n = snprintf(k, sizeof k, "in-%d-%d", records, i);
      kl_keyfilter_add(f, w, kl_key_hash(k, (size_t)n));
    }
    int passed = 0;
    for (int i = 0; i < records; i++) {
      kl_keyset s;
      kl_keyset_init(&s, NULL);
      int n = snprintf(k, sizeof k, "in-%d-%d", records, i);
      assert_int_equal(kl_keyset_add(&s, k, (size_t)n), KL_OK);
      assert_true(kl_keyfilter_may_hold(f, w, &s));
      kl_keyset_free(&s);
    }
    for (int i = 0; i < 10000; i++) {
      kl_keyset s;
      kl_keyset_init(&s, NULL);
      int n = snprintf(k, sizeof k, "out-%d", i);
      assert_int_equal(kl_keyset_add(&s, k, (size_t)n), KL_OK);
      passed += kl_keyfilter_may_hold(f, w, &s);
      kl_keyset_free(&s);
    }
    print_message("  %d records, %zu words: %d of 10000 other keys pass\n", records, w, passed);
    assert_true(passed < 600);
  }
  /* A set passes when one of its keys may be there; an empty set never. */
  uint64_t f[1] = {0};
  kl_keyfilter_add(f, 1, kl_key_hash("here", 4));
  kl_keyset s;
  kl_keyset_init(&s, NULL);
  assert_false(kl_keyfilter_may_hold(f, 1, &s));
  assert_int_equal(kl_keyset_add(&s, "elsewhere", 9), KL_OK);
  assert_int_equal(kl_keyset_add(&s, "here", 4), KL_OK);
  assert_true(kl_keyfilter_may_hold(f, 1, &s));
  kl_keyset_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keys_compare_as_bytes),
      cmocka_unit_test(test_many_keys),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_filter_never_misses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
