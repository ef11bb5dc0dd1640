/*
** test_file.c - core/file.c: the one open (a FIFO or a directory where a
** file is asked for is refused without blocking), exact reads naming the
** file and position, positioned writes, the atomic replacement of a small
** file, the identity check of a file replaced or resized under a reader,
** zero tails, and a window's reads sized for the access.
*/
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  assert_non_null(p);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void test_open(void **state) {
  (void)state;
  char *d = t_mkdtemp("file");
  char *missing = path_in(d, "missing"), *fifo = path_in(d, "fifo"), *reg = path_in(d, "reg");
  kl_file f;
  kl_err err = {0};
  assert_int_equal(kl_file_open(&f, NULL, missing, &err), KL_NOTFOUND);
  assert_int_equal(err.msg[0], 0);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(kl_file_open(&f, NULL, fifo, &err), KL_CANTOPEN); /* and does not block */
  assert_non_null(strstr(err.msg, fifo));
  assert_non_null(strstr(err.msg, "FIFO"));
  kl_err_clear(&err);
  assert_int_equal(kl_file_open(&f, NULL, d, &err), KL_CANTOPEN); /* a directory */
  kl_err_clear(&err);
  int fd;
  assert_int_equal(kl_fd_open(NULL, d, O_RDONLY | O_DIRECTORY, 0, &fd, &err), KL_OK);
  close(fd);
  assert_int_equal(kl_fd_open(NULL, reg, O_RDONLY | O_DIRECTORY, 0, &fd, &err), KL_NOTFOUND);
  assert_int_equal(fd, -1);
  assert_int_equal(t_write_file(reg, "abc", 3), 0);
  assert_int_equal(kl_fd_open(NULL, reg, O_RDONLY | O_DIRECTORY, 0, &fd, &err), KL_CANTOPEN);
  free(missing);
  free(fifo);
  free(reg);
  t_rmdir(d);
  free(d);
}

static void test_read_write(void **state) {
  (void)state;
  char *d = t_mkdtemp("file");
  char *p = path_in(d, "f");
  int fd;
  kl_err err = {0};
  assert_int_equal(kl_fd_open(NULL, p, O_RDWR | O_CREAT, 0644, &fd, &err), KL_OK);
  assert_int_equal(kl_write_at(NULL, fd, "hello, world", 12, 100, p, &err), KL_OK);
  close(fd);
  kl_file f;
  assert_int_equal(kl_file_open(&f, NULL, p, &err), KL_OK);
  assert_int_equal(f.size, 112);
  char buf[16] = {0};
  assert_int_equal(kl_file_read(&f, 100, buf, 12, &err), KL_OK);
  assert_memory_equal(buf, "hello, world", 12);
  int zero;
  assert_int_equal(kl_file_zero_from(&f, 0, &zero, &err), KL_OK);
  assert_false(zero);
  assert_int_equal(kl_file_zero_from(&f, 50, &zero, &err), KL_OK);
  assert_false(zero);
  assert_int_equal(kl_file_zero_from(&f, 112, &zero, &err), KL_OK);
  assert_true(zero);
  assert_true(kl_file_same(&f));
  /* Shrunk under the reader: a short read names the file and position,
  ** and the file is no longer the one opened. */
  assert_int_equal(truncate(p, 50), 0);
  assert_false(kl_file_same(&f));
  assert_int_equal(kl_file_read(&f, 100, buf, 12, &err), KL_IO);
  assert_non_null(strstr(err.msg, p));
  assert_non_null(strstr(err.msg, "100"));
  kl_file_close(&f);
  assert_int_equal(f.fd, -1);
  free(p);
  t_rmdir(d);
  free(d);
}

static void test_replace(void **state) {
  (void)state;
  char *d = t_mkdtemp("file");
  char *p = path_in(d, "config");
  kl_err err = {0};
  assert_int_equal(t_write_file(p, "old", 3), 0);
  kl_file f;
  assert_int_equal(kl_file_open(&f, NULL, p, &err), KL_OK);
  assert_int_equal(kl_file_replace(NULL, -1, d, p, "new contents", 12, &err), KL_OK);
  /* A reader of the old file goes on reading it whole. */
  char old[3];
  assert_int_equal(kl_file_read(&f, 0, old, 3, &err), KL_OK);
  assert_memory_equal(old, "old", 3);
  kl_file_close(&f);
  size_t n;
  uint8_t *got = t_read_file(p, &n);
  assert_int_equal(n, 12);
  assert_memory_equal(got, "new contents", 12);
  free(got);
  /* Nothing else is left in the directory: no temporary file. */
  char *list = path_in(d, "config.tmp");
  struct stat sb;
  assert_int_equal(stat(list, &sb), -1);
  free(list);
  /* A directory that cannot take the file: an error naming it, and the
  ** old file (none here) left as it was. */
  char *no = path_in(d, "nodir/config");
  char *nodir = path_in(d, "nodir");
  assert_int_not_equal(kl_file_replace(NULL, -1, nodir, no, "x", 1, &err), KL_OK);
  assert_non_null(strstr(err.msg, "nodir"));
  free(no);
  free(nodir);
  free(p);
  t_rmdir(d);
  free(d);
}

/* Sequential reads grow (fewer reads a scan), a jump starts small again. */
static void test_window(void **state) {
  (void)state;
  char *d = t_mkdtemp("file");
  char *p = path_in(d, "big");
  size_t size = 4 << 20;
  uint8_t *bytes = malloc(size);
  assert_non_null(bytes);
  for (size_t i = 0; i < size; i++) bytes[i] = (uint8_t)(i * 7);
  assert_int_equal(t_write_file(p, bytes, size), 0);
  kl_file f;
  kl_err err = {0};
  assert_int_equal(kl_file_open(&f, NULL, p, &err), KL_OK);
  kl_window w;
  memset(&w, 0, sizeof w);
  kl_stats st;
  memset(&st, 0, sizeof st);
  const uint8_t *q;
  int64_t pos = 0;
  while (pos + 1000 <= (int64_t)size) {
    assert_int_equal(kl_window_get(&w, NULL, &f, pos, 1000, &q, &st, &err), KL_OK);
    assert_memory_equal(q, bytes + pos, 1000);
    pos += 1000;
  }
  uint64_t scan_reads = st.reads;
  assert_true(scan_reads < 20); /* 4 MiB in 1000-byte steps: reads of up to 1 MiB */
  assert_int_equal(st.bytes_read >= (uint64_t)pos, 1);
  assert_int_equal(kl_window_get(&w, NULL, &f, 12345, 10, &q, &st, &err), KL_OK);
  assert_memory_equal(q, bytes + 12345, 10);
  assert_true(st.bytes_read - (uint64_t)pos <= 1 << 20);
  assert_int_not_equal(kl_window_get(&w, NULL, &f, (int64_t)size - 5, 10, &q, &st, &err), KL_OK);
  kl_window_free(&w, NULL);
  kl_file_close(&f);
  free(bytes);
  free(p);
  t_rmdir(d);
  free(d);
}

/* A window takes what its peer holds instead of reading it again: all of
** what is asked (no read), a prefix (one read of the rest), nothing of
** another file's. */
static void test_window_peer(void **state) {
  (void)state;
  char *d = t_mkdtemp("file");
  char *p = path_in(d, "a"), *p2 = path_in(d, "b");
  size_t size = 64 << 10;
  uint8_t *bytes = malloc(size);
  assert_non_null(bytes);
  for (size_t i = 0; i < size; i++) bytes[i] = (uint8_t)(i * 13 + 1);
  assert_int_equal(t_write_file(p, bytes, size), 0);
  assert_int_equal(t_write_file(p2, bytes, size), 0);
  kl_file f, g;
  kl_err err = {0};
  assert_int_equal(kl_file_open(&f, NULL, p, &err), KL_OK);
  assert_int_equal(kl_file_open(&g, NULL, p2, &err), KL_OK);
  kl_window w, ctx;
  memset(&w, 0, sizeof w);
  memset(&ctx, 0, sizeof ctx);
  kl_stats st;
  memset(&st, 0, sizeof st);
  const uint8_t *q;
  assert_int_equal(kl_window_get(&w, &ctx, &f, 0, size, &q, &st, &err), KL_OK);
  assert_int_equal(st.reads, 1);
  /* Inside what the peer holds: copied, whatever the window's read size. */
  assert_int_equal(kl_window_get(&ctx, &w, &f, 5000, 100, &q, &st, &err), KL_OK);
  assert_memory_equal(q, bytes + 5000, 100);
  assert_int_equal(kl_window_get(&ctx, &w, &f, (int64_t)size - 300, 300, &q, &st, &err), KL_OK);
  assert_memory_equal(q, bytes + size - 300, 300);
  assert_int_equal(st.reads, 1);
  assert_int_equal(st.bytes_read, size);
  /* The peer holds the first 1000 of the 4 KiB read: one read of the rest. */
  kl_window_free(&w, NULL);
  kl_window_free(&ctx, NULL);
  ctx.first = 1000;
  memset(&st, 0, sizeof st);
  assert_int_equal(kl_window_get(&ctx, &w, &f, 1000, 1000, &q, &st, &err), KL_OK);
  assert_int_equal(st.reads, 1);
  assert_int_equal(kl_window_get(&w, &ctx, &f, 1000, 4000, &q, &st, &err), KL_OK);
  assert_memory_equal(q, bytes + 1000, 4000);
  assert_int_equal(st.reads, 2);
  assert_int_equal(st.bytes_read, 1000 + (4096 - 1000));
  /* Another file's bytes are never taken, even at the same positions. */
  memset(&st, 0, sizeof st);
  assert_int_equal(kl_window_get(&ctx, &w, &g, 1000, 100, &q, &st, &err), KL_OK);
  assert_memory_equal(q, bytes + 1000, 100);
  assert_int_equal(st.reads, 1);
  kl_window_free(&w, NULL);
  kl_window_free(&ctx, NULL);
  kl_file_close(&f);
  kl_file_close(&g);
  free(bytes);
  free(p);
  free(p2);
  t_rmdir(d);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open),
      cmocka_unit_test(test_read_write),
      cmocka_unit_test(test_replace),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_window_peer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
