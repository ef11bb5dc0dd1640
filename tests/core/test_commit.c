/*
** test_commit.c - core/commit.c: a partition's commit record, two slots
** of which a commit overwrites the older: the newer valid slot is read, a
** slot torn by a crash (its CRC fails) leaves the other, no valid slot is
** an error naming the file, no file is KL_NOTFOUND, and an open descriptor
** sees every later commit.
*/
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commit.h"

static kl_commit sample(uint64_t gen) {
  kl_commit c;
  memset(&c, 0, sizeof c);
  c.flags = gen % 3 == 0 ? KL_COMMIT_CLEAN : 0;
  c.next_offset = 1000 + (int64_t)gen;
  c.seg_base = 512;
  c.seg_size = 10000 + (int64_t)gen;
  c.log_start = gen > 1 ? 600 : -1;
  c.gen = gen;
  c.oidx_n = 3;
  c.tidx_n = 2;
  c.last_index_pos = 8000;
  c.max_ts = 1700000000000LL + (int64_t)gen;
  c.max_ts_off = 1001;
  c.last_tidx_ts = -1;
  return c;
}

static void assert_commit_equal(const kl_commit *a, const kl_commit *b) {
  assert_int_equal(a->flags, b->flags);
  assert_int_equal(a->next_offset, b->next_offset);
  assert_int_equal(a->seg_base, b->seg_base);
  assert_int_equal(a->seg_size, b->seg_size);
  assert_int_equal(a->log_start, b->log_start);
  assert_int_equal(a->gen, b->gen);
  assert_int_equal(a->oidx_n, b->oidx_n);
  assert_int_equal(a->tidx_n, b->tidx_n);
  assert_int_equal(a->last_index_pos, b->last_index_pos);
  assert_int_equal(a->max_ts, b->max_ts);
  assert_int_equal(a->max_ts_off, b->max_ts_off);
  assert_int_equal(a->last_tidx_ts, b->last_tidx_ts);
}

static char *record_path(const char *dir) {
  char *p = malloc(strlen(dir) + sizeof KL_COMMIT_FILE + 1);
  assert_non_null(p);
  sprintf(p, "%s/%s", dir, KL_COMMIT_FILE);
  return p;
}

/* Commits 1..4 in turn, each read back: the newer slot wins. */
static void test_round_trip(void **state) {
  (void)state;
  char *d = t_mkdtemp("commit");
  kl_err err = {0};
  kl_commit got;
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_NOTFOUND);
  assert_int_equal(err.msg[0], 0);
  int fd = -1;
  for (uint64_t g = 1; g <= 4; g++) {
    kl_commit c = sample(g);
    assert_int_equal(kl_commit_write(NULL, d, -1, &fd, &c, &err), KL_OK);
    assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_OK);
    assert_commit_equal(&got, &c);
  }
  close(fd);
  char *p = record_path(d);
  size_t n;
  uint8_t *bytes = t_read_file(p, &n);
  assert_int_equal(n, 2 * KL_COMMIT_SLOT);
  assert_memory_equal(bytes, "KLCOMMIT", 8);
  assert_memory_equal(bytes + KL_COMMIT_SLOT, "KLCOMMIT", 8);
  free(bytes);
  free(p);
  t_rmdir(d);
  free(d);
}

/* A torn write spoils one slot: the other is read, older or not. */
static void test_torn_slot(void **state) {
  (void)state;
  char *d = t_mkdtemp("commit");
  char *p = record_path(d);
  kl_err err = {0};
  int fd = -1;
  kl_commit c3 = sample(3), c4 = sample(4), got;
  assert_int_equal(kl_commit_write(NULL, d, -1, &fd, &c3, &err), KL_OK); /* slot 1 */
  assert_int_equal(kl_commit_write(NULL, d, -1, &fd, &c4, &err), KL_OK); /* slot 0 */
  close(fd);
  t_flip(p, 20, 0x01); /* slot 0's next offset: its CRC fails */
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_OK);
  assert_commit_equal(&got, &c3);
  t_flip(p, KL_COMMIT_SLOT + 104, 0x80); /* slot 1's CRC itself */
  kl_err_clear(&err);
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, KL_COMMIT_FILE));
  t_flip(p, 20, 0x01); /* slot 0 whole again */
  kl_err_clear(&err);
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_OK);
  assert_commit_equal(&got, &c4);
  free(p);
  t_rmdir(d);
  free(d);
}

/* Not a commit record: a short file, another magic, another version. */
static void test_not_a_record(void **state) {
  (void)state;
  char *d = t_mkdtemp("commit");
  char *p = record_path(d);
  kl_err err = {0};
  kl_commit got;
  assert_int_equal(t_write_file(p, "KLCOMMIT", 8), 0);
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, p));
  int fd = -1;
  kl_commit c = sample(1);
  assert_int_equal(unlink(p), 0);
  assert_int_equal(kl_commit_write(NULL, d, -1, &fd, &c, &err), KL_OK);
  close(fd);
  t_poke(p, KL_COMMIT_SLOT, "KLCOMMIX", 8); /* slot 1, the written one */
  kl_err_clear(&err);
  assert_int_equal(kl_commit_read(NULL, d, &got, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, KL_COMMIT_FILE));
  free(p);
  t_rmdir(d);
  free(d);
}

/* A descriptor kept open sees later commits (they rewrite in place). */
static void test_open_descriptor(void **state) {
  (void)state;
  char *d = t_mkdtemp("commit");
  kl_err err = {0};
  int rfd;
  assert_int_equal(kl_commit_open(NULL, d, &rfd, &err), KL_NOTFOUND);
  int wfd = -1;
  kl_commit c = sample(1), got;
  assert_int_equal(kl_commit_write(NULL, d, -1, &wfd, &c, &err), KL_OK);
  assert_int_equal(kl_commit_open(NULL, d, &rfd, &err), KL_OK);
  assert_int_equal(kl_commit_read_fd(NULL, rfd, d, &got, &err), KL_OK);
  assert_int_equal(got.gen, 1);
  c = sample(2);
  assert_int_equal(kl_commit_write(NULL, d, -1, &wfd, &c, &err), KL_OK);
  assert_int_equal(kl_commit_read_fd(NULL, rfd, d, &got, &err), KL_OK);
  assert_commit_equal(&got, &c);
  close(rfd);
  close(wfd);
  t_rmdir(d);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_torn_slot),
      cmocka_unit_test(test_not_a_record),
      cmocka_unit_test(test_open_descriptor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
