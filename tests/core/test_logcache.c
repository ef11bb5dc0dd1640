/*
** test_logcache.c - core/logcache: a log is reused while its files are
** unchanged and opened afresh after a commit (an append) or a forget,
** for watched logs and for those past KL_LOGCACHE_WATCHED
** alike; a directory without segments is a partition only inside a log
** directory; the listing is reused until a partition is added; a writer's
** view is never cached; every allocation failing in turn leaves an error
** and no leak; once the cache is polled, a log whose directory the kernel
** reported no change in is fresh without a system call, and any change
** sends it back to the check by stat.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "faultos.h"
#include "logcache.h"
#include "testlog.h"
#include "testutil.h"

static int64_t count(kl_logref *r) { return t_log_count(r->log); }

static void append(const char *dir, int64_t first, int n) {
  kl_writer *w = t_log_writer(NULL, dir, 1 << 20, 4096, 0, 0);
  kl_err err = {0};
  assert_int_equal(t_log_append(w, T_LOG_PLAIN, first, n, &err), KL_OK);
  kl_writer_commit(w);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
}

static kl_logref *get(kl_logcache *c, const char *dir) {
  kl_logref *r = NULL;
  kl_err err = {0};
  if (kl_logcache_get(c, dir, 1, &r, &err) != KL_OK) fail_msg("%s", err.msg);
  return r;
}

/* Reused while fresh; a commit and a forget each make it open afresh. */
static void test_fresh_and_stale(void **state) {
  (void)state;
  char *dir = t_new_partition("lc_fresh");
  append(dir, 0, 5);
  kl_segset set;
  kl_segset_init(&set, 16);
  kl_logcache *c = kl_logcache_new(NULL, &set);
  assert_non_null(c);
  kl_logref *a = get(c, dir), *b = get(c, dir);
  assert_ptr_equal(a, b);
  assert_int_equal(count(a), 5);
  append(dir, 5, 3);
  kl_logref *d = get(c, dir);
  assert_ptr_not_equal(d, a); /* a is still held: its address is not reused */
  assert_int_equal(count(d), 8);
  assert_int_equal(count(a), 5); /* a reader of the old one keeps its view */
  kl_logcache_forget(c, dir);
  kl_logref *e = get(c, dir);
  assert_ptr_not_equal(e, d);
  assert_int_equal(count(e), 8);
  kl_logref *f = get(c, dir);
  assert_ptr_equal(f, e);
  kl_logref_release(a);
  kl_logref_release(b);
  kl_logref_release(d);
  kl_logref_release(e);
  kl_logref_release(f);
  kl_logcache_free(c);
  t_drop_partition(dir);
}

/* Stats and reads the cache made (the check by stat, the commit record's
** generation). */
static long checks(const t_faultos *f) { return t_faultos_count(f, T_OS_STAT | T_OS_READ); }

/* A polled cache holding more logs than it checks through descriptors
** watches a log it found fresh by stat, and takes it as fresh with no
** system call while the kernel reports nothing of it; an append, or any
** event in its directory, sends it back to the stats, which decide; a log
** opened again is watched from its next reuse on. */
static void test_polled(void **state) {
  (void)state;
  char *root = t_mkdtemp("lc_polled");
  enum { N = KL_LOGCACHE_WATCHED + 1 };
  char dirs[N][4200];
  t_faultos f;
  t_faultos_init(&f);
  kl_segset set;
  kl_segset_init(&set, 16);
  kl_logcache *c = kl_logcache_new(&f.env, &set);
  assert_non_null(c);
  kl_stats st = {0};
  kl_logcache_count(c, &st);
  for (int i = 0; i < N; i++) {
    snprintf(dirs[i], sizeof dirs[i], "%s/t-%d", root, i);
    append(dirs[i], 0, 5);
  }
  const char *dir = dirs[N - 1];
  char scratch[4300];
  snprintf(scratch, sizeof scratch, "%s/scratch", dir);
  FILE *fp = fopen(scratch, "w");
  assert_non_null(fp);
  assert_int_equal(fclose(fp), 0);
  for (int i = 0; i < N; i++) kl_logref_release(get(c, dirs[i]));
  int64_t opened = (int64_t)st.logs_opened;
  /* Not watched yet: checked (and watched from here on). */
  kl_logcache_poll(c);
  long n = checks(&f);
  kl_logref *a = get(c, dir);
  assert_true(checks(&f) > n);
  kl_logref_release(a);
  /* Polled, nothing changed: no call. */
  kl_logcache_poll(c);
  n = checks(&f);
  kl_logref *b = get(c, dir);
  assert_ptr_equal(b, a);
  assert_int_equal(checks(&f), n);
  kl_logref_release(b);
  /* An append is queued: the next statement sees it. */
  append(dir, 5, 3);
  kl_logcache_poll(c);
  kl_logref *d = get(c, dir);
  assert_int_equal((int64_t)st.logs_opened, opened + 1);
  assert_int_equal(count(d), 8);
  kl_logref_release(d);
  kl_logcache_poll(c);
  kl_logref_release(get(c, dir)); /* checked, and watched again */
  kl_logcache_poll(c);
  n = checks(&f);
  kl_logref *e = get(c, dir);
  assert_ptr_equal(e, d);
  assert_int_equal(checks(&f), n);
  kl_logref_release(e);
  /* A write to a file that does not matter: the stats decide it is fresh,
  ** and once that is known the poll after costs nothing again. */
  fp = fopen(scratch, "a");
  assert_non_null(fp);
  assert_int_equal(fputc('x', fp), 'x');
  assert_int_equal(fclose(fp), 0);
  kl_logcache_poll(c);
  n = checks(&f);
  e = get(c, dir);
  assert_ptr_equal(e, d);
  assert_true(checks(&f) > n);
  kl_logref_release(e);
  kl_logcache_poll(c);
  n = checks(&f);
  e = get(c, dir);
  assert_ptr_equal(e, d);
  assert_int_equal(checks(&f), n);
  kl_logref_release(e);
  /* A segment rolled (a file made in the directory). */
  char seg[4300];
  snprintf(seg, sizeof seg, "%s/%020d.log", dir, 1000);
  fp = fopen(seg, "w");
  assert_non_null(fp);
  assert_int_equal(fclose(fp), 0);
  kl_logcache_poll(c);
  kl_logref_release(get(c, dir));
  assert_int_equal((int64_t)st.logs_opened, opened + 2);
  /* Fewer logs than that are never watched: checked every time. */
  kl_logcache_free(c);
  c = kl_logcache_new(&f.env, &set);
  kl_logref_release(get(c, dirs[0]));
  kl_logref_release(get(c, dirs[0]));
  kl_logcache_poll(c);
  n = checks(&f);
  kl_logref_release(get(c, dirs[0]));
  assert_true(checks(&f) > n);
  kl_logcache_free(c);
  t_faultos_free(&f);
  t_rmdir(root);
  free(root);
}

/* Past KL_LOGCACHE_WATCHED logs, freshness is checked by path. */
static void test_unwatched_logs(void **state) {
  (void)state;
  char *root = t_mkdtemp("lc_many");
  enum { N = KL_LOGCACHE_WATCHED + 4 };
  char dirs[N][4200];
  kl_segset set;
  kl_segset_init(&set, 8);
  kl_logcache *c = kl_logcache_new(NULL, &set);
  kl_logref *held[N];
  for (int i = 0; i < N; i++) {
    snprintf(dirs[i], sizeof dirs[i], "%s/t-%d", root, i);
    append(dirs[i], 0, 1 + i);
    held[i] = get(c, dirs[i]);
  }
  for (int i = 0; i < N; i++) {
    kl_logref *again = get(c, dirs[i]);
    assert_ptr_equal(again, held[i]);
    kl_logref_release(again);
    append(dirs[i], 1 + i, 2);
    again = get(c, dirs[i]);
    assert_ptr_not_equal(again, held[i]);
    assert_int_equal(count(again), 3 + i);
    kl_logref_release(again);
    kl_logref_release(held[i]);
  }
  kl_logcache_free(c);
  t_rmdir(root);
  free(root);
}

/* A directory without segments: an error when it is the whole path, an
** empty log inside a log directory; a missing one names itself. */
static void test_empty_and_missing(void **state) {
  (void)state;
  char *dir = t_new_partition("lc_empty");
  assert_int_equal(mkdir(dir, 0755), 0);
  kl_segset set;
  kl_segset_init(&set, 4);
  kl_logcache *c = kl_logcache_new(NULL, &set);
  kl_logref *r = NULL;
  kl_err err = {0};
  assert_int_equal(kl_logcache_get(c, dir, 1, &r, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, dir));
  kl_err_clear(&err);
  assert_int_equal(kl_logcache_get(c, dir, 0, &r, &err), KL_OK);
  assert_int_equal(count(r), 0);
  kl_logref_release(r);
  char missing[4300];
  snprintf(missing, sizeof missing, "%s/nothing-0", dir);
  kl_err_clear(&err);
  assert_int_equal(kl_logcache_get(c, missing, 0, &r, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, missing));
  kl_logcache_free(c);
  t_drop_partition(dir);
}

/* The listing is reused until a partition directory is added. */
static void test_listing(void **state) {
  (void)state;
  char *root = t_mkdtemp("lc_list");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/a-0", root);
  append(dir, 0, 2);
  kl_listref *cache = NULL, *x = NULL, *y = NULL, *z = NULL;
  kl_err err = {0};
  assert_int_equal(kl_listref_get(NULL, &cache, root, 0, NULL, NULL, &x, &err), KL_OK);
  assert_int_equal(kl_listref_get(NULL, &cache, root, 0, NULL, NULL, &y, &err), KL_OK);
  assert_ptr_equal(x, y);
  assert_int_equal(kl_broker_count(x->b), 1);
  snprintf(dir, sizeof dir, "%s/b-0", root);
  append(dir, 0, 2);
  assert_int_equal(kl_listref_get(NULL, &cache, root, 0, NULL, NULL, &z, &err), KL_OK);
  assert_ptr_not_equal(z, x);
  assert_int_equal(kl_broker_count(z->b), 2);
  assert_int_equal(kl_broker_count(x->b), 1); /* a reader of the old one keeps it */
  kl_listref_release(x);
  kl_listref_release(y);
  kl_listref_release(z);
  kl_listref_release(cache);
  t_rmdir(root);
  free(root);
}

/* A listing's place array is its own: allocated through its env on first
** use, zeroed, kept across calls, forgotten on demand and freed with the
** listing; an allocation that fails gives NULL and leaves nothing. */
static void test_places(void **state) {
  (void)state;
  char *root = t_mkdtemp("lc_places");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/a-0", root);
  append(dir, 0, 2);
  snprintf(dir, sizeof dir, "%s/b-0", root);
  append(dir, 0, 2);
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  kl_listref *cache = NULL, *k = NULL;
  kl_err err = {0};
  assert_int_equal(kl_listref_get(env, &cache, root, 0, NULL, NULL, &k, &err), KL_OK);
  assert_int_equal(kl_broker_count(k->b), 2);
  long live = fa.live, calls = fa.calls;
  uint32_t *p = kl_listref_place(k, 1);
  assert_non_null(p);
  assert_int_equal(*p, 0);
  assert_int_equal(fa.live, live + 1);
  *p = 7;
  assert_int_equal(*kl_listref_place(k, 1), 7);
  assert_int_equal(*kl_listref_place(k, 0), 0);
  assert_int_equal(fa.calls, calls + 1); /* one array, allocated once */
  kl_listref_forget_places(k);
  assert_int_equal(fa.live, live);
  assert_int_equal(*kl_listref_place(k, 1), 0);
  kl_listref_forget_places(k);
  fa.fail_at = fa.calls + 1;
  assert_null(kl_listref_place(k, 0));
  assert_int_equal(fa.live, live);
  fa.fail_at = 0;
  assert_non_null(kl_listref_place(k, 0));
  kl_listref_release(k);
  kl_listref_release(cache);
  assert_int_equal(fa.live, 0);
  t_rmdir(root);
  free(root);
}

/* A writer's view is opened afresh each time and never cached. */
static void test_view_not_cached(void **state) {
  (void)state;
  char *dir = t_new_partition("lc_view");
  append(dir, 0, 3);
  kl_writer *w = t_log_writer(NULL, dir, 1 << 20, 4096, 0, 0);
  kl_err err = {0};
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  kl_rec_in rec = t_log_rec(T_LOG_PLAIN, 3);
  int64_t off;
  assert_int_equal(kl_writer_append(w, &rec, &off, &err), KL_OK);
  kl_view v = {0};
  assert_int_equal(kl_writer_view(w, &v, &err), 1);
  kl_segset set;
  kl_segset_init(&set, 4);
  kl_logcache *c = kl_logcache_new(NULL, &set);
  kl_logref *a = NULL, *b = NULL;
  assert_int_equal(kl_logcache_get_view(c, dir, &v, &a, &err), KL_OK);
  assert_int_equal(kl_logcache_get_view(c, dir, &v, &b, &err), KL_OK);
  assert_ptr_not_equal(a, b);
  assert_int_equal(count(a), 4);
  kl_logref *plain = get(c, dir);
  assert_int_equal(count(plain), 3); /* the cache holds what is committed */
  kl_logref_release(a);
  kl_logref_release(b);
  kl_logref_release(plain);
  kl_buf_free(NULL, &v.tail);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  kl_logcache_free(c);
  t_drop_partition(dir);
}

/* Every allocation fails in turn: KL_NOMEM (or the error it led to), and
** nothing is left allocated once the cache is freed. */
static void test_allocation_failures(void **state) {
  (void)state;
  char *dir = t_new_partition("lc_nomem");
  append(dir, 0, 5);
  long done = 0;
  for (long n = 1; n < 1000 && !done; n++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, n);
    kl_segset set;
    kl_segset_init(&set, 4);
    kl_logcache *c = kl_logcache_new(env, &set);
    kl_logref *r = NULL;
    kl_listref *cache = NULL, *k = NULL;
    kl_err err = {0};
    kl_rc rc = c ? kl_logcache_get(c, dir, 1, &r, &err) : KL_NOMEM;
    if (rc == KL_OK) rc = kl_listref_get(env, &cache, dir, 0, NULL, NULL, &k, &err);
    if (rc == KL_OK) {
      assert_int_equal(kl_log_segment_count(r->log), 1);
      assert_int_equal(kl_broker_count(k->b), 1);
      done = fa.calls < n;
    } else {
      assert_int_equal(rc, KL_NOMEM);
    }
    kl_logref_release(r);
    kl_listref_release(k);
    kl_listref_release(cache);
    kl_logcache_free(c);
    assert_int_equal(fa.live, 0);
  }
  assert_true(done);
  t_drop_partition(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fresh_and_stale),
      cmocka_unit_test(test_unwatched_logs),
      cmocka_unit_test(test_polled),
      cmocka_unit_test(test_empty_and_missing),
      cmocka_unit_test(test_listing),
      cmocka_unit_test(test_places),
      cmocka_unit_test(test_view_not_cached),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
