/*
** testlog.c - the writer's tests' numbered logs (testlog.h).
*/
#include "testlog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cursor.h"

kl_rec_in t_log_rec(int style, int64_t i) {
  static char val[64][96];
  int k = (int)(i % 64), len;
  if (style == T_LOG_PADDED) {
    len = snprintf(val[k], sizeof val[k], "value-%lld-%040d", (long long)i, 0);
  } else {
    len = snprintf(val[k], sizeof val[k], "value-%lld", (long long)i);
  }
  int64_t ts = style == T_LOG_DISORDER ? 1700000000000 + i * 7 - (i % 5) * 3 : 1700000000000 + i;
  kl_rec_in r = {ts, "key", 3, val[k], len, NULL, 0};
  return r;
}

kl_writer *t_log_writer(const kl_env *env, const char *dir, int64_t segment_bytes,
                        int64_t interval, int64_t batch_bytes, int codec) {
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  o.segment_bytes = segment_bytes;
  o.index_interval = interval;
  if (batch_bytes) o.batch_bytes = batch_bytes;
  o.codec = codec;
  kl_writer *w = NULL;
  kl_err err = {0};
  mkdir(dir, 0755); /* the writer writes to a directory that exists */
  if (kl_writer_open(env, dir, &o, &w, &err) != KL_OK) fail_msg("%s", err.msg);
  return w;
}

kl_rc t_log_append(kl_writer *w, int style, int64_t first, int n, kl_err *err) {
  kl_rc rc = kl_writer_begin(w, err);
  for (int i = 0; rc == KL_OK && i < n; i++) {
    int64_t off;
    kl_rec_in r = t_log_rec(style, first + i);
    rc = kl_writer_append(w, &r, &off, err);
    if (rc == KL_OK && off != first + i) {
      fail_msg("offset %lld for record %lld", (long long)off, (long long)(first + i));
    }
  }
  if (rc == KL_OK) rc = kl_writer_sync(w, err);
  return rc;
}

int64_t t_log_check(const kl_env *env, const char *dir, const kl_view *view, int style) {
  kl_log *log = NULL;
  kl_err err = {0};
  if (kl_log_open_view(env, dir, NULL, view, &log, &err) != KL_OK) fail_msg("%s", err.msg);
  kl_cursor *c = NULL;
  assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
  kl_bounds all = kl_bounds_all();
  assert_int_equal(kl_cursor_start(c, &all, &err), KL_OK);
  int64_t n = 0;
  kl_rc rc;
  while ((rc = kl_cursor_next(c, &err)) == KL_OK) {
    assert_int_equal(kl_cursor_load(c, &err), KL_OK);
    const kl_record *r = kl_cursor_record(c);
    kl_rec_in want = t_log_rec(style, n);
    assert_int_equal(r->offset, n);
    assert_int_equal(r->timestamp, want.timestamp);
    assert_int_equal(r->key_len, want.key_len);
    assert_memory_equal(r->key, want.key, (size_t)want.key_len);
    assert_int_equal(r->value_len, want.value_len);
    assert_memory_equal(r->value, want.value, (size_t)want.value_len);
    n++;
  }
  if (rc != KL_DONE) fail_msg("%s", err.msg);
  kl_cursor_free(c);
  kl_log_close(log);
  return n;
}

int64_t t_log_count(kl_log *log) {
  kl_cursor *c = NULL;
  kl_err err = {0};
  assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
  kl_bounds all = kl_bounds_all();
  assert_int_equal(kl_cursor_start(c, &all, &err), KL_OK);
  int64_t n = 0;
  kl_rc rc;
  while ((rc = kl_cursor_next(c, &err)) == KL_OK && (rc = kl_cursor_load(c, &err)) == KL_OK) n++;
  if (rc != KL_DONE) fail_msg("%s", err.msg);
  kl_cursor_free(c);
  return n;
}

void t_same_files(const char *a, const char *b, const char *globs) {
  char cmd[9000];
  snprintf(cmd, sizeof cmd,
           "cd %s && for f in %s; do cmp -s \"$f\" \"%s/$f\" || { echo \"differs: $f\"; exit 1; }; "
           "done && cd %s && for f in %s; do test -e \"%s/$f\" || { echo \"extra: $f\"; exit 1; }; "
           "done", a, globs, b, b, globs, a);
  assert_int_equal(system(cmd), 0);
}
