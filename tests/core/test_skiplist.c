/*
** test_skiplist.c - the segment map: Kafka's LogSegmentsTest lookups,
** duplicate and missing keys, extreme keys, a randomized comparison with a
** sorted array, and allocation failure at every allocation.
*/
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "skiplist.h"

/* Key of a node, or a sentinel for NULL so a mismatch prints something. */
#define NOKEY ((int64_t)0x7EADBEEF)
static int64_t key_or(const kl_sknode *n) {
  return n ? kl_sknode_key(n) : NOKEY;
}

/* The reference: keys ascending, values alongside. */
typedef struct ref {
  int64_t key[2048];
  void *val[2048];
  int n;
} ref;

/* Index of the first key >= k. */
static int ref_lb(const ref *r, int64_t k) {
  int lo = 0, hi = r->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (r->key[mid] < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

static int ref_has(const ref *r, int64_t k) {
  int i = ref_lb(r, k);
  return i < r->n && r->key[i] == k;
}

static void ref_insert(ref *r, int64_t k, void *v) {
  int i = ref_lb(r, k);
  memmove(&r->key[i + 1], &r->key[i], (size_t)(r->n - i) * sizeof r->key[0]);
  memmove(&r->val[i + 1], &r->val[i], (size_t)(r->n - i) * sizeof r->val[0]);
  r->key[i] = k;
  r->val[i] = v;
  r->n++;
}

static void ref_remove(ref *r, int64_t k) {
  int i = ref_lb(r, k);
  memmove(&r->key[i], &r->key[i + 1], (size_t)(r->n - i - 1) * sizeof r->key[0]);
  memmove(&r->val[i], &r->val[i + 1], (size_t)(r->n - i - 1) * sizeof r->val[0]);
  r->n--;
}

/* Expected key of each lookup (NOKEY: none). */
static int64_t ref_floor(const ref *r, int64_t k) {
  int i = ref_lb(r, k);
  if (i < r->n && r->key[i] == k) return k;
  return i > 0 ? r->key[i - 1] : NOKEY;
}
static int64_t ref_lower(const ref *r, int64_t k) {
  int i = ref_lb(r, k);
  return i > 0 ? r->key[i - 1] : NOKEY;
}
static int64_t ref_ceiling(const ref *r, int64_t k) {
  int i = ref_lb(r, k);
  return i < r->n ? r->key[i] : NOKEY;
}
static int64_t ref_higher(const ref *r, int64_t k) {
  int i = ref_lb(r, k);
  if (i < r->n && r->key[i] == k) i++;
  return i < r->n ? r->key[i] : NOKEY;
}

/* Every lookup kind at k agrees with the reference. */
static void check_lookups(const kl_skiplist *sl, const ref *r, int64_t k) {
  assert_int_equal(key_or(kl_skiplist_floor(sl, k)), ref_floor(r, k));
  assert_int_equal(key_or(kl_skiplist_lower(sl, k)), ref_lower(r, k));
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, k)), ref_ceiling(r, k));
  assert_int_equal(key_or(kl_skiplist_higher(sl, k)), ref_higher(r, k));
}

/*
** The whole list equals the reference: count, first, last, the forward and
** backward walks (keys and values), next/prev agreeing with each other, and
** every lookup at, just below and just above each key.
*/
static void check_list(const kl_skiplist *sl, const ref *r) {
  assert_int_equal(kl_skiplist_count(sl), (size_t)r->n);
  assert_int_equal(key_or(kl_skiplist_first(sl)), r->n ? r->key[0] : NOKEY);
  assert_int_equal(key_or(kl_skiplist_last(sl)),
                   r->n ? r->key[r->n - 1] : NOKEY);

  int i = 0;
  const kl_sknode *prev = NULL;
  for (kl_sknode *n = kl_skiplist_first(sl); n; n = kl_sknode_next(n), i++) {
    assert_true(i < r->n);
    assert_int_equal(kl_sknode_key(n), r->key[i]);
    assert_ptr_equal(kl_sknode_value(n), r->val[i]);
    assert_ptr_equal(kl_sknode_prev(n), prev);
    prev = n;
  }
  assert_int_equal(i, r->n);

  i = r->n - 1;
  for (kl_sknode *n = kl_skiplist_last(sl); n; n = kl_sknode_prev(n), i--) {
    assert_true(i >= 0);
    assert_int_equal(kl_sknode_key(n), r->key[i]);
    assert_ptr_equal(kl_sknode_value(n), r->val[i]);
  }
  assert_int_equal(i, -1);

  for (i = 0; i < r->n; i++) {
    int64_t k = r->key[i];
    check_lookups(sl, r, k);
    if (k > INT64_MIN) check_lookups(sl, r, k - 1);
    if (k < INT64_MAX) check_lookups(sl, r, k + 1);
  }
  check_lookups(sl, r, INT64_MIN);
  check_lookups(sl, r, INT64_MAX);
}

/* ---------------------------------------------------------------------- */

static void test_empty(void **state) {
  static const int64_t probes[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
  kl_skiplist *sl = kl_skiplist_new(NULL);
  assert_non_null(sl);
  assert_int_equal(kl_skiplist_count(sl), 0);
  assert_null(kl_skiplist_first(sl));
  assert_null(kl_skiplist_last(sl));
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
    assert_null(kl_skiplist_floor(sl, probes[i]));
    assert_null(kl_skiplist_ceiling(sl, probes[i]));
    assert_null(kl_skiplist_lower(sl, probes[i]));
    assert_null(kl_skiplist_higher(sl, probes[i]));
    assert_int_equal(kl_skiplist_remove(sl, probes[i]), KL_NOTFOUND);
  }
  kl_skiplist_free(sl);
  kl_skiplist_free(NULL);   /* a no-op */
}

/* LogSegmentsTest.testClosestMatchOperations: segments at 1, 3, 5, 7. */
static void test_closest_match(void **state) {
  static int seg[8];
  kl_skiplist *sl = kl_skiplist_new(NULL);
  assert_non_null(sl);
  for (int k = 1; k <= 7; k += 2) {
    assert_int_equal(kl_skiplist_insert(sl, k, &seg[k]), KL_OK);
  }
  assert_int_equal(kl_skiplist_count(sl), 4);

  assert_int_equal(key_or(kl_skiplist_floor(sl, 2)), 1);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_floor(sl, 2)), &seg[1]);
  assert_int_equal(key_or(kl_skiplist_floor(sl, 3)), 3);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_floor(sl, 3)), &seg[3]);
  assert_int_equal(key_or(kl_skiplist_lower(sl, 3)), 1);
  assert_int_equal(key_or(kl_skiplist_lower(sl, 4)), 3);
  assert_int_equal(key_or(kl_skiplist_higher(sl, 4)), 5);
  assert_int_equal(key_or(kl_skiplist_higher(sl, 5)), 7);

  assert_int_equal(key_or(kl_skiplist_ceiling(sl, 2)), 3);
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, 3)), 3);
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, 0)), 1);
  assert_null(kl_skiplist_ceiling(sl, 8));

  /* Past either end. */
  assert_null(kl_skiplist_floor(sl, 0));
  assert_null(kl_skiplist_lower(sl, 1));
  assert_null(kl_skiplist_higher(sl, 7));
  assert_int_equal(key_or(kl_skiplist_floor(sl, 100)), 7);
  assert_int_equal(key_or(kl_skiplist_lower(sl, 100)), 7);
  assert_int_equal(key_or(kl_skiplist_higher(sl, -100)), 1);

  assert_int_equal(key_or(kl_skiplist_first(sl)), 1);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_first(sl)), &seg[1]);
  assert_int_equal(key_or(kl_skiplist_last(sl)), 7);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_last(sl)), &seg[7]);
  assert_null(kl_sknode_prev(kl_skiplist_first(sl)));
  assert_null(kl_sknode_next(kl_skiplist_last(sl)));
  kl_skiplist_free(sl);
}

/* Keys in [from, to) by ceiling then next, as LogSegments.values does. */
static int range(const kl_skiplist *sl, int64_t from, int64_t to,
                 int64_t *out) {
  int n = 0;
  for (kl_sknode *x = kl_skiplist_ceiling(sl, from);
       x && kl_sknode_key(x) < to; x = kl_sknode_next(x)) {
    out[n++] = kl_sknode_key(x);
  }
  return n;
}

/* LogSegmentsTest.testSegmentAccess: segments at 1, 2, 3, 4. */
static void test_segment_access(void **state) {
  int64_t got[8];
  kl_skiplist *sl = kl_skiplist_new(NULL);
  assert_non_null(sl);
  for (int64_t k = 1; k <= 4; k++) {
    assert_int_equal(kl_skiplist_insert(sl, k, NULL), KL_OK);
  }
  assert_int_equal(range(sl, 1, 1, got), 0);
  assert_int_equal(range(sl, 1, 2, got), 1);
  assert_int_equal(got[0], 1);
  assert_int_equal(range(sl, 1, 4, got), 3);
  assert_int_equal(got[0], 1);
  assert_int_equal(got[1], 2);
  assert_int_equal(got[2], 3);
  assert_int_equal(range(sl, 2, 4, got), 2);
  assert_int_equal(got[0], 2);
  assert_int_equal(got[1], 3);
  assert_int_equal(range(sl, 4, 5, got), 1);
  assert_int_equal(got[0], 4);

  /* The active segment is the last; the non-active ones from 2 stop there. */
  kl_sknode *active = kl_skiplist_last(sl);
  assert_int_equal(key_or(active), 4);
  assert_int_equal(range(sl, 2, kl_sknode_key(active), got), 2);
  assert_int_equal(got[0], 2);
  assert_int_equal(got[1], 3);
  kl_skiplist_free(sl);
}

/* A duplicate is refused, keeps the old value, and allocates nothing. */
static void test_duplicate(void **state) {
  static int a, b;
  t_failalloc fa;
  kl_skiplist *sl = kl_skiplist_new(t_failenv(&fa, 0));
  assert_non_null(sl);
  assert_int_equal(kl_skiplist_insert(sl, 5, &a), KL_OK);
  assert_int_equal(kl_skiplist_insert(sl, 9, &a), KL_OK);
  long calls = fa.calls;
  assert_int_equal(kl_skiplist_insert(sl, 5, &b), KL_MISUSE);
  assert_int_equal(kl_skiplist_insert(sl, 9, &b), KL_MISUSE);
  assert_int_equal(fa.calls, calls);
  assert_int_equal(kl_skiplist_count(sl), 2);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_floor(sl, 5)), &a);
  assert_ptr_equal(kl_sknode_value(kl_skiplist_floor(sl, 9)), &a);
  assert_int_equal(fa.live, 3);
  kl_skiplist_free(sl);
  assert_int_equal(fa.live, 0);
}

/* Removal: absent keys, the ends, the middle, down to empty and back. */
static void test_remove(void **state) {
  static ref r;
  static int vals[10];
  t_failalloc fa;
  kl_skiplist *sl = kl_skiplist_new(t_failenv(&fa, 0));
  assert_non_null(sl);
  r.n = 0;
  for (int k = 0; k < 10; k++) {
    assert_int_equal(kl_skiplist_insert(sl, k * 10, &vals[k]), KL_OK);
    ref_insert(&r, k * 10, &vals[k]);
  }
  check_list(sl, &r);

  assert_int_equal(kl_skiplist_remove(sl, 5), KL_NOTFOUND);
  assert_int_equal(kl_skiplist_remove(sl, -10), KL_NOTFOUND);
  assert_int_equal(kl_skiplist_remove(sl, 100), KL_NOTFOUND);
  check_list(sl, &r);

  static const int64_t order[] = {0, 90, 50, 40, 60, 10, 80, 30, 20, 70};
  for (int i = 0; i < 10; i++) {
    assert_int_equal(kl_skiplist_remove(sl, order[i]), KL_OK);
    assert_int_equal(kl_skiplist_remove(sl, order[i]), KL_NOTFOUND);
    ref_remove(&r, order[i]);
    check_list(sl, &r);
    assert_int_equal(fa.live, 1 + r.n);   /* the node was freed */
  }
  assert_null(kl_skiplist_first(sl));
  assert_null(kl_skiplist_last(sl));

  /* An emptied list works like a new one. */
  assert_int_equal(kl_skiplist_insert(sl, 42, &vals[0]), KL_OK);
  ref_insert(&r, 42, &vals[0]);
  check_list(sl, &r);
  kl_skiplist_free(sl);
  assert_int_equal(fa.live, 0);
}

/* INT64_MIN and INT64_MAX are ordinary keys, and no lookup overflows. */
static void test_extremes(void **state) {
  static ref r;
  static const int64_t keys[] = {INT64_MIN, -1, 1, INT64_MIN + 1,
                                 INT64_MAX - 1, INT64_MAX};
  kl_skiplist *sl = kl_skiplist_new(NULL);
  assert_non_null(sl);
  r.n = 0;

  /* Lookups at the extremes of a list that holds neither. */
  assert_int_equal(kl_skiplist_insert(sl, 0, NULL), KL_OK);
  ref_insert(&r, 0, NULL);
  assert_null(kl_skiplist_higher(sl, INT64_MAX));
  assert_null(kl_skiplist_ceiling(sl, INT64_MAX));
  assert_null(kl_skiplist_lower(sl, INT64_MIN));
  assert_null(kl_skiplist_floor(sl, INT64_MIN));
  assert_int_equal(key_or(kl_skiplist_floor(sl, INT64_MAX)), 0);
  assert_int_equal(key_or(kl_skiplist_lower(sl, INT64_MAX)), 0);
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, INT64_MIN)), 0);
  assert_int_equal(key_or(kl_skiplist_higher(sl, INT64_MIN)), 0);

  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    assert_int_equal(kl_skiplist_insert(sl, keys[i], NULL), KL_OK);
    ref_insert(&r, keys[i], NULL);
    check_list(sl, &r);
  }
  assert_int_equal(kl_skiplist_insert(sl, INT64_MIN, NULL), KL_MISUSE);
  assert_int_equal(kl_skiplist_insert(sl, INT64_MAX, NULL), KL_MISUSE);

  assert_int_equal(key_or(kl_skiplist_first(sl)), INT64_MIN);
  assert_int_equal(key_or(kl_skiplist_last(sl)), INT64_MAX);
  assert_int_equal(key_or(kl_skiplist_floor(sl, INT64_MIN)), INT64_MIN);
  assert_null(kl_skiplist_lower(sl, INT64_MIN));
  assert_int_equal(key_or(kl_skiplist_higher(sl, INT64_MIN)), INT64_MIN + 1);
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, INT64_MAX)), INT64_MAX);
  assert_null(kl_skiplist_higher(sl, INT64_MAX));
  assert_int_equal(key_or(kl_skiplist_lower(sl, INT64_MAX)), INT64_MAX - 1);
  assert_int_equal(key_or(kl_skiplist_floor(sl, -2)), INT64_MIN + 1);
  assert_int_equal(key_or(kl_skiplist_ceiling(sl, 2)), INT64_MAX - 1);

  assert_int_equal(kl_skiplist_remove(sl, INT64_MIN), KL_OK);
  ref_remove(&r, INT64_MIN);
  assert_int_equal(kl_skiplist_remove(sl, INT64_MAX), KL_OK);
  ref_remove(&r, INT64_MAX);
  check_list(sl, &r);
  kl_skiplist_free(sl);
}

/*
** 10,000 random operations against the sorted-array reference.  Keys come
** from a narrow range so inserts hit existing keys and removes hit missing
** ones often; a few are extremes.  Every operation is followed by lookups
** of all kinds, and the whole list is compared every 250 operations.
*/
static int64_t rand_key(uint64_t *s) {
  uint64_t r = t_rand(s);
  switch (r % 64) {
    case 0: return INT64_MIN;
    case 1: return INT64_MAX;
    case 2: return INT64_MIN + (int64_t)(r >> 60);
    case 3: return INT64_MAX - (int64_t)(r >> 60);
    default: return (int64_t)((r >> 8) % 1201) - 600;
  }
}

static void test_random(void **state) {
  static ref r;
  static int vals[10000];
  uint64_t seed = 20240601;
  t_failalloc fa;
  kl_skiplist *sl = kl_skiplist_new(t_failenv(&fa, 0));
  assert_non_null(sl);
  r.n = 0;
  int inserted = 0, dups = 0, removed = 0, missing = 0;

  for (int op = 0; op < 10000; op++) {
    int64_t k = rand_key(&seed);
    uint64_t what = t_rand(&seed) % 10;
    if (what < 5) {               /* insert, a little more often: growth */
      kl_rc rc = kl_skiplist_insert(sl, k, &vals[op]);
      if (ref_has(&r, k)) {
        assert_int_equal(rc, KL_MISUSE);
        dups++;
      } else {
        assert_int_equal(rc, KL_OK);
        ref_insert(&r, k, &vals[op]);
        inserted++;
      }
    } else if (what < 8) {        /* remove */
      kl_rc rc = kl_skiplist_remove(sl, k);
      if (ref_has(&r, k)) {
        assert_int_equal(rc, KL_OK);
        ref_remove(&r, k);
        removed++;
      } else {
        assert_int_equal(rc, KL_NOTFOUND);
        missing++;
      }
    }
    check_lookups(sl, &r, k);
    check_lookups(sl, &r, rand_key(&seed));
    assert_int_equal(kl_skiplist_count(sl), (size_t)r.n);
    if (op % 250 == 249) check_list(sl, &r);
  }
  check_list(sl, &r);
  assert_int_equal(fa.live, 1 + r.n);

  /* The mix exercised every outcome. */
  assert_true(inserted > 1000 && dups > 500);
  assert_true(removed > 1000 && missing > 200);
  assert_true(r.n > 100);

  kl_skiplist_free(sl);
  assert_int_equal(fa.live, 0);
}

/*
** Ascending inserts are the usual order of segments and the worst case for
** a list whose levels were not random: this would take minutes, not
** milliseconds, if searches were linear.
*/
static void test_large_sequential(void **state) {
  enum { N = 200000 };
  kl_skiplist *sl = kl_skiplist_new(NULL);
  assert_non_null(sl);
  for (int64_t k = 0; k < N; k++) {
    assert_int_equal(kl_skiplist_insert(sl, k * 1000, NULL), KL_OK);
  }
  assert_int_equal(kl_skiplist_count(sl), N);
  for (int64_t k = 0; k < N; k += 7) {
    assert_int_equal(key_or(kl_skiplist_floor(sl, k * 1000 + 999)), k * 1000);
  }
  for (int64_t k = N - 1; k >= 0; k -= 2) {
    assert_int_equal(kl_skiplist_remove(sl, k * 1000), KL_OK);
  }
  assert_int_equal(kl_skiplist_count(sl), N / 2);
  assert_int_equal(key_or(kl_skiplist_last(sl)), (int64_t)(N - 2) * 1000);
  kl_skiplist_free(sl);
}

/*
** Fail each allocation of "create, then insert 100 keys" in turn.  Creation
** fails cleanly; a failed insert returns KL_NOMEM and leaves the list as it
** was, later inserts succeed, a retry of the failed key succeeds, and
** nothing leaks.
*/
static void test_nomem(void **state) {
  static ref r;
  static int vals[100];
  int64_t keys[100];
  uint64_t seed = 7;
  t_failalloc fa;

  /* A fixed shuffle of 100 keys, negatives included. */
  for (int i = 0; i < 100; i++) keys[i] = (int64_t)i * 37 - 1800;
  for (int i = 99; i > 0; i--) {
    int j = (int)(t_rand(&seed) % (uint64_t)(i + 1));
    int64_t t = keys[i];
    keys[i] = keys[j];
    keys[j] = t;
  }

  /* Count the allocations of an undisturbed run. */
  kl_skiplist *sl = kl_skiplist_new(t_failenv(&fa, 0));
  assert_non_null(sl);
  for (int i = 0; i < 100; i++) {
    assert_int_equal(kl_skiplist_insert(sl, keys[i], &vals[i]), KL_OK);
  }
  long total = fa.calls;
  assert_int_equal(total, 101);   /* the list, then one per node */
  kl_skiplist_free(sl);
  assert_int_equal(fa.live, 0);

  for (long fail = 1; fail <= total; fail++) {
    sl = kl_skiplist_new(t_failenv(&fa, fail));
    if (!sl) {
      assert_int_equal(fail, 1);
      assert_int_equal(fa.live, 0);
      continue;
    }
    r.n = 0;
    int failed = -1;
    for (int i = 0; i < 100; i++) {
      kl_rc rc = kl_skiplist_insert(sl, keys[i], &vals[i]);
      if (rc == KL_NOMEM) {
        assert_int_equal(failed, -1);
        failed = i;
        kl_sknode *f = kl_skiplist_floor(sl, keys[i]);
        assert_true(f == NULL || kl_sknode_key(f) != keys[i]);
        check_list(sl, &r);
      } else {
        assert_int_equal(rc, KL_OK);
        ref_insert(&r, keys[i], &vals[i]);
      }
      assert_int_equal(fa.live, 1 + r.n);
    }
    assert_int_equal(failed, fail - 2);
    check_list(sl, &r);

    /* The failure was not sticky: the same key goes in now. */
    assert_int_equal(kl_skiplist_insert(sl, keys[failed], &vals[failed]),
                     KL_OK);
    ref_insert(&r, keys[failed], &vals[failed]);
    check_list(sl, &r);
    assert_int_equal(fa.live, 101);

    kl_skiplist_free(sl);
    assert_int_equal(fa.live, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_closest_match),
      cmocka_unit_test(test_segment_access),
      cmocka_unit_test(test_duplicate),
      cmocka_unit_test(test_remove),
      cmocka_unit_test(test_extremes),
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_large_sequential),
      cmocka_unit_test(test_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
