/*
** test_checkpoint.c - core/checkpoint.c: Kafka's text checkpoint files
** read as its CheckpointFile reads them (the entries, sorted, duplicates
** resolved to the later line; an empty or missing file; every malformation
** an error naming the file and the line), the same framing for a
** partition's leader-epoch-checkpoint, and kl_checkpoint_put keeping the
** other entries; the writer's refusal of a malformed leader-epoch-checkpoint.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "writer.h"

static char *write_tmp(const char *dir, const char *name, const char *text) {
  static char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(t_write_file(path, text, strlen(text)), 0);
  return path;
}

static void test_entries(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  char *p = write_tmp(d, "log-start-offset-checkpoint",
                      "0\n4\nzeta 1 40\nalpha\t2  20\r\nalpha 0 7\nzeta 1 41\n");
  kl_ckpt c;
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_read(NULL, p, &c, &err), KL_OK);
  assert_int_equal(c.n, 4);
  assert_string_equal(c.e[0].topic, "alpha");
  assert_int_equal(c.e[0].partition, 0);
  assert_int_equal(kl_checkpoint_get(&c, "alpha", 2), 20);
  assert_int_equal(kl_checkpoint_get(&c, "zeta", 1), 41); /* the later line wins */
  assert_int_equal(kl_checkpoint_get(&c, "zeta", 2), -1);
  assert_int_equal(kl_checkpoint_get(&c, "beta", 0), -1);
  size_t pos = 0;
  assert_int_equal(kl_checkpoint_next(&c, &pos, "alpha", 0), 7);
  assert_int_equal(kl_checkpoint_next(&c, &pos, "alpha", 1), -1);
  assert_int_equal(kl_checkpoint_next(&c, &pos, "alpha", 2), 20);
  assert_int_equal(kl_checkpoint_next(&c, &pos, "zeta", 1), 41);
  kl_checkpoint_free(NULL, &c);
  t_rmdir(d);
  free(d);
}

static void test_empty_and_missing(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  kl_ckpt c;
  kl_err err = {0};
  char *p = write_tmp(d, "a", "");
  assert_int_equal(kl_checkpoint_read(NULL, p, &c, &err), KL_OK);
  assert_int_equal(c.n, 0);
  p = write_tmp(d, "b", "0\n0\n");
  assert_int_equal(kl_checkpoint_read(NULL, p, &c, &err), KL_OK);
  assert_int_equal(c.n, 0);
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/none", d);
  assert_int_equal(kl_checkpoint_read(NULL, missing, &c, &err), KL_OK);
  assert_int_equal(c.n, 0);
  t_rmdir(d);
  free(d);
}

/* Lines in the shape Kafka writes ("t 1 5") are read in one pass, every
** other through the general split; both read each value alike, at the
** bounds of either path (9 and 10 digit partitions, 18 and 19 digit
** offsets, signs, blanks other than one space) and within a named read. */
static void test_entry_shapes(void **state) {
  (void)state;
  static const struct {
    const char *line, *topic;
    int32_t partition;
    int64_t offset;
  } cases[] = {
      {"t 1 5", "t", 1, 5},
      {"t\t1 5", "t", 1, 5},
      {"t 1  5 ", "t", 1, 5},
      {"t +1 5", "t", 1, 5},
      {"t 1 +5", "t", 1, 5},
      {"t 1 -0", "t", 1, 0},
      {"t 1 -5", "t", 1, -5},
      {"t 01 05", "t", 1, 5},
      {"t 999999999 1", "t", 999999999, 1},
      {"t 2147483647 1", "t", 2147483647, 1},
      {"t -2147483648 1", "t", -2147483648, 1},
      {"t 1 999999999999999999", "t", 1, 999999999999999999},
      {"t 1 9223372036854775807", "t", 1, INT64_MAX},
      {"t 1 -9223372036854775808", "t", 1, INT64_MIN},
      {"a.b_c-d 7 123\r", "a.b_c-d", 7, 123},
      {"t\x01x 2 3", "t\x01x", 2, 3},
      {"caf\xc3\xa9 2 3", "caf\xc3\xa9", 2, 3},
  };
  char *d = t_mkdtemp("ckpt");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "0\n3\nother 0 1\n%s\nzz 9 9\n", cases[i].line);
    char *p = write_tmp(d, "recovery-point-offset-checkpoint", text);
    for (int named = 0; named < 2; named++) {
      kl_ckpt c;
      kl_err err = {0};
      kl_rc rc = named ? kl_checkpoint_read_topic(NULL, p, cases[i].topic, strlen(cases[i].topic),
                                                  &c, &err)
                       : kl_checkpoint_read(NULL, p, &c, &err);
      if (rc != KL_OK) fail_msg("case %zu: %s", i, err.msg);
      assert_int_equal(c.n, named ? 1 : 3);
      assert_int_equal(kl_checkpoint_get(&c, cases[i].topic, cases[i].partition), cases[i].offset);
      if (!named) assert_int_equal(kl_checkpoint_get(&c, "zz", 9), 9);
      kl_checkpoint_free(NULL, &c);
    }
  }
  t_rmdir(d);
  free(d);
}

/* Each malformation: KL_CORRUPT, "<path>:<line>: <what>". */
static void test_malformed(void **state) {
  (void)state;
  static const struct {
    const char *text, *where, *what;
  } cases[] = {
      {"1\n0\n", ":1:", "unrecognized version 1"},
      {"x\n0\n", ":1:", "malformed version line"},
      {"0\n", ":2:", "no entry count line"},
      {"0\n-1\n", ":2:", "malformed entry count"},
      {"0\n2\nt 0 1\n", ":4:", "expected 2 entries but found only 1"},
      {"0\n1\nt 0 1\nt 1 2\n", ":4:", "more entries than the 1 announced"},
      {"0\n1\nt 0\n", ":3:", "malformed entry (expected <topic> <partition> <offset>)"},
      {"0\n1\nt 0 1 2\n", ":3:", "malformed entry"},
      {"0\n1\nt 0 1x\n", ":3:", "malformed entry"},
      {"0\n1\nt 2147483648 1\n", ":3:", "malformed entry"},
      {"0\n1\nt 0 9223372036854775808\n", ":3:", "malformed entry"},
      {"0\n1\n t 0 1\n", ":3:", "malformed entry"}, /* a leading run: an empty topic */
      {"0\n1\nt 0 -\n", ":3:", "malformed entry"},
      {"0\n1\nt  0\n", ":3:", "malformed entry"},
      {"0\n2\nt 0 1\nt 0 1999999999999999999999\n", ":4:", "malformed entry"},
      {"0\n2\nt 0 1\nt 2147483648 1\n", ":4:", "malformed entry"},
  };
  char *d = t_mkdtemp("ckpt");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = write_tmp(d, "replication-offset-checkpoint", cases[i].text);
    kl_ckpt c;
    kl_err err = {0};
    assert_int_equal(kl_checkpoint_read(NULL, p, &c, &err), KL_CORRUPT);
    if (!strstr(err.msg, p) || !strstr(err.msg, cases[i].where) || !strstr(err.msg, cases[i].what)) {
      fail_msg("case %zu: %s", i, err.msg);
    }
    assert_null(c.e);
  }
  t_rmdir(d);
  free(d);
}

/* Every allocation of a read may fail: KL_NOMEM, nothing leaked. */
static void test_out_of_memory(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  char *p = write_tmp(d, "c", "0\n3\na 0 1\nb 0 2\nc 0 3\n");
  for (long n = 1;; n++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, n);
    kl_ckpt c;
    kl_err err = {0};
    kl_rc rc = kl_checkpoint_read(env, p, &c, &err);
    if (rc == KL_OK) {
      assert_int_equal(c.n, 3);
      kl_checkpoint_free(env, &c);
      assert_int_equal(fa.live, 0);
      break;
    }
    assert_int_equal(rc, KL_NOMEM);
    assert_int_equal(fa.live, 0);
  }
  t_rmdir(d);
  free(d);
}

static void test_put(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "orders", 0, 5, &err), KL_OK);
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "orders", 1, 9, &err), KL_OK);
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "orders", 0, 6, &err), KL_OK);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", d, kl_checkpoint_name(KL_CKPT_LOG_START));
  size_t n;
  uint8_t *text = t_read_file(path, &n);
  assert_non_null(text);
  assert_int_equal(n, strlen("0\n2\norders 0 6\norders 1 9\n"));
  assert_memory_equal(text, "0\n2\norders 0 6\norders 1 9\n", n);
  free(text);
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "a b", 0, 1, &err), KL_MISUSE);
  kl_err_clear(&err);
  /* A malformed file is left as it is. */
  write_tmp(d, kl_checkpoint_name(KL_CKPT_HIGH_WATERMARK), "0\n1\n");
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_HIGH_WATERMARK, "t", 0, 1, &err), KL_CORRUPT);
  t_rmdir(d);
  free(d);
}

static void test_leader_epochs(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  char *p = write_tmp(d, KL_LEADER_EPOCH_FILE, "0\n3\n0 0\n3 368700\n7 400000\n");
  kl_epoch_ckpt e;
  kl_err err = {0};
  assert_int_equal(kl_epoch_checkpoint_read(NULL, p, &e, &err), KL_OK);
  assert_int_equal(e.n, 3);
  assert_int_equal(e.e[1].epoch, 3);
  assert_int_equal(e.e[1].start_offset, 368700);
  assert_int_equal(e.e[2].epoch, 7);
  kl_epoch_checkpoint_free(NULL, &e);
  static const char *const bad[] = {"0\n1\n0\n", "0\n1\n0 0 0\n", "0\n1\nx 0\n", "0\n2\n0 0\n",
                                    "1\n0\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = write_tmp(d, KL_LEADER_EPOCH_FILE, bad[i]);
    kl_err_clear(&err);
    assert_int_equal(kl_epoch_checkpoint_read(NULL, p, &e, &err), KL_CORRUPT);
    if (!strstr(err.msg, KL_LEADER_EPOCH_FILE ":")) fail_msg("case %zu: %s", i, err.msg);
    assert_null(e.e);
  }
  assert_non_null(strstr(err.msg, "unrecognized version 1"));
  p = write_tmp(d, KL_LEADER_EPOCH_FILE, "0\n1\n4\n");
  kl_err_clear(&err);
  assert_int_equal(kl_epoch_checkpoint_read(NULL, p, &e, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, ":3: malformed entry (expected <leader epoch> <start offset>)"));
  t_rmdir(d);
  free(d);
}

/* A writer stamps appended batches with the partition's latest leader
** epoch, so a malformed leader-epoch-checkpoint stops it at open, naming
** the file and line, rather than appending batches of a guessed epoch. */
static void test_writer_refuses_malformed_epochs(void **state) {
  (void)state;
  char *dir = t_new_partition("ckpt-w");
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_err err = {0};
  assert_int_equal(kl_writer_create(NULL, dir, &o, &err), KL_OK);
  write_tmp(dir, KL_LEADER_EPOCH_FILE, "0\n2\n0 0\n5 x\n");
  kl_writer *w = NULL;
  assert_int_equal(kl_writer_open(NULL, dir, &o, &w, &err), KL_CORRUPT);
  assert_null(w);
  assert_non_null(strstr(err.msg, KL_LEADER_EPOCH_FILE ":4: malformed entry"));
  t_drop_partition(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entries),
      cmocka_unit_test(test_empty_and_missing),
      cmocka_unit_test(test_entry_shapes),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_put),
      cmocka_unit_test(test_leader_epochs),
      cmocka_unit_test(test_writer_refuses_malformed_epochs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
