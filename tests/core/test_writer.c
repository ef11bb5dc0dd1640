/*
** test_writer.c - core/writer: appends byte-identical to an independent
** writer of Kafka's rules (tests/util/kwriter.c), rolls, transactions,
** savepoints, locks and recovery.
*/
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "commit.h"
#include "kwriter.h"
#include "log.h"
#include "testlog.h"
#include "testutil.h"

/* Record i of the test logs. */
static kl_rec_in rec(int64_t i) { return t_log_rec(T_LOG_DISORDER, i); }

static kl_writer *open_w(const char *dir, int64_t seg, int64_t interval, int codec) {
  return t_log_writer(NULL, dir, seg, interval, 0, codec);
}

/* One transaction of n records from offset first: one batch. */
static void txn(kl_writer *w, int64_t first, int n) {
  kl_err err = {0};
  if (t_log_append(w, T_LOG_DISORDER, first, n, &err) != KL_OK) fail_msg("%s", err.msg);
  kl_writer_commit(w);
}

/* Every record of dir, in order: count, and each one is rec(offset). */
static int64_t check_log(const char *dir) { return t_log_check(NULL, dir, NULL, T_LOG_DISORDER); }

/* The same files, byte for byte (every *.log, *.index, *.timeindex). */
static void same_files(const char *a, const char *b) {
  t_same_files(a, b, "*.log *.index *.timeindex");
}

/* Batches of 1..9 records, segments of 4 KiB, an index entry every 300
** bytes: the same bytes as kwriter, which follows LogSegment.append. */
static void test_same_bytes_as_kafka_rules(void **state) {
  (void)state;
  for (int codec = 0; codec <= 4; codec++) {
    char *a = t_mkdtemp("wr_a"), *b = t_mkdtemp("wr_b");
    kl_writer *w = open_w(a, 4096, 300, codec);
    kw_options ko = {4096, 300, 0, codec};
    kw_writer *kw = kw_open(b, &ko);
    assert_non_null(kw);
    int64_t off = 0;
    for (int t = 0; t < 300; t++) {
      int n = 1 + t % 9;
      txn(w, off, n);
      kl_rec_in r[9];
      for (int i = 0; i < n; i++) r[i] = rec(off + i);
      kl_batch_spec s = {0};
      s.leader_epoch = -1;
      s.producer_id = -1;
      s.producer_epoch = -1;
      s.base_sequence = -1;
      s.codec = codec;
      assert_int_equal(kw_append(kw, &s, r, n), 0);
      off += n;
    }
    assert_true(kl_writer_stats_of(w)->rolls > 3);
    kl_err err = {0};
    assert_int_equal(kl_writer_close(w, &err), KL_OK);
    assert_int_equal(kw_close(kw), 0);
    same_files(a, b);
    assert_int_equal(check_log(a), off);
    t_rmdir(a);
    t_rmdir(b);
    free(a);
    free(b);
  }
}

/* Nothing of a rolled-back transaction remains, however many segments it
** started; the files are as they were. */
static void test_rollback(void **state) {
  (void)state;
  char *a = t_mkdtemp("wr_rb"), *b = t_mkdtemp("wr_rb2");
  kl_writer *w = open_w(a, 2048, 100, 0);
  txn(w, 0, 10);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp %s/*.log %s/*.index %s/*.timeindex %s/", a, a, a, b);
  assert_int_equal(system(cmd), 0);
  kl_err err = {0};
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  for (int i = 0; i < 500; i++) {
    int64_t off;
    kl_rec_in r = rec(10 + i);
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
    if (i % 7 == 6) assert_int_equal(kl_writer_savepoint(w, 0, &err), KL_OK);
  }
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK);
  assert_true(kl_writer_stats_of(w)->batches > 1); /* written, then truncated */
  same_files(a, b);
  /* Again with the batches on disk and rolls. */
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  for (int i = 0; i < 500; i++) {
    int64_t off;
    kl_rec_in r = rec(10 + i);
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
    if (i % 20 == 19) assert_int_equal(kl_writer_sync(w, &err), KL_OK); /* flushes */
  }
  assert_true(kl_writer_stats_of(w)->rolls > 3);
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK);
  same_files(a, b);
  assert_int_equal(check_log(a), 10);
  txn(w, 10, 5);
  assert_int_equal(check_log(a), 15);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(a);
  t_rmdir(b);
  free(a);
  free(b);
}

/* A savepoint inside a batch that is written afterwards: rolling back to
** it keeps the records before it, in the batch they were in. */
static void test_savepoints(void **state) {
  (void)state;
  char *a = t_mkdtemp("wr_sp");
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  o.batch_bytes = 200; /* a few records a batch */
  kl_writer *w = NULL;
  kl_err err = {0};
  assert_int_equal(kl_writer_open(NULL, a, &o, &w, &err), KL_OK);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  int64_t off;
  for (int i = 0; i < 3; i++) {
    kl_rec_in r = rec(i);
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
  }
  assert_int_equal(kl_writer_savepoint(w, 0, &err), KL_OK);
  for (int i = 0; i < 40; i++) { /* several batches written */
    kl_rec_in r = rec(100 + i);
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
  }
  assert_true(kl_writer_stats_of(w)->batches >= 3);
  assert_int_equal(kl_writer_rollback_to(w, 0, &err), KL_OK);
  assert_int_equal(kl_writer_next_offset(w), 3);
  assert_int_equal(kl_writer_savepoint(w, 1, &err), KL_OK); /* nested */
  kl_rec_in r3 = rec(3);
  assert_int_equal(kl_writer_append(w, &r3, &off, &err), KL_OK);
  assert_int_equal(off, 3);
  assert_int_equal(kl_writer_rollback_to(w, 0, &err), KL_OK); /* again, deeper */
  for (int i = 3; i < 30; i++) {
    kl_rec_in r = rec(i);
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
    assert_int_equal(off, i);
  }
  kl_writer_release(w, 0);
  assert_int_equal(kl_writer_sync(w, &err), KL_OK);
  kl_writer_commit(w);
  assert_int_equal(check_log(a), 30);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(a);
  free(a);
}

/* One writer at a time: in this process or another; a broker's lock on
** the log directory's .lock refuses writing. */
static void test_locks(void **state) {
  (void)state;
  char *root = t_mkdtemp("wr_lock");
  char dir[4200], lockp[4200];
  snprintf(dir, sizeof dir, "%s/events-0", root);
  kl_writer *w1 = open_w(dir, 1 << 20, 4096, 0), *w2 = open_w(dir, 1 << 20, 4096, 0);
  kl_err err = {0};
  assert_int_equal(kl_writer_begin(w1, &err), KL_OK);
  kl_err e2 = {0};
  assert_int_equal(kl_writer_begin(w2, &e2), KL_BUSY);
  assert_non_null(strstr(e2.msg, "another writer holds"));
  assert_int_equal(kl_writer_rollback(w1, &err), KL_OK);
  txn(w2, 0, 3); /* free again */
  /* A broker: a POSIX lock on <log dir>/.lock held by another process. */
  snprintf(lockp, sizeof lockp, "%s/.lock", root);
  int pid = t_hold_lock(lockp);
  assert_true(pid > 0);
  kl_err e3 = {0};
  assert_int_equal(kl_writer_begin(w1, &e3), KL_BUSY);
  assert_non_null(strstr(e3.msg, "Kafka broker holds"));
  /* The refused writer left nothing: its lock file is made after the
  ** broker's lock is checked, and exists only while held. */
  char ours[4300];
  snprintf(ours, sizeof ours, "%s/kafkalog.lock", dir);
  assert_int_equal(access(ours, F_OK), -1);
  t_release_lock(pid);
  txn(w1, 3, 2); /* the broker is gone */
  assert_int_equal(check_log(dir), 5);
  assert_int_equal(access(ours, F_OK), -1); /* released with the commit */
  assert_int_equal(kl_writer_close(w1, &err), KL_OK);
  assert_int_equal(kl_writer_close(w2, &err), KL_OK);
  t_rmdir(root);
  free(root);
}

/* A writer that died after appending: its bytes, index entries and new
** segments are gone at the next begin, the committed data and its indexes
** are intact, and readers never saw them. */
static void test_recovery(void **state) {
  (void)state;
  char *a = t_mkdtemp("wr_rec"), *b = t_mkdtemp("wr_rec2");
  kl_writer *w = open_w(a, 4096, 300, 0);
  int64_t off = 0;
  for (int t = 0; t < 40; t++, off += 5) txn(w, off, 5);
  kl_err err = {0};
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp %s/*.log %s/*.index %s/*.timeindex %s/", a, a, a, b);
  assert_int_equal(system(cmd), 0);
  /* A child appends across segments and is killed before its commit. */
  pid_t pid = fork();
  if (pid == 0) {
    kl_writer_opts o;
    kl_writer_opts_default(&o);
    o.segment_bytes = 4096;
    o.index_interval = 300;
    o.batch_bytes = 150; /* batches reach the files before the commit */
    kl_writer *cw = NULL;
    kl_err e = {0};
    if (kl_writer_open(NULL, a, &o, &cw, &e)) _exit(1);
    if (kl_writer_begin(cw, &e)) _exit(1);
    for (int i = 0; i < 400; i++) {
      int64_t o2;
      kl_rec_in r = rec(200 + i);
      if (kl_writer_append(cw, &r, &o2, &e)) _exit(1);
    }
    if (kl_writer_stats_of(cw)->rolls == 0) _exit(1);
    kill(getpid(), SIGKILL);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(check_log(a), off); /* readers stop at the commit */
  w = open_w(a, 4096, 300, 0);
  txn(w, off, 5);
  assert_int_equal(check_log(a), off + 5);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  /* The same as a writer that never saw the dead one's bytes. */
  w = open_w(b, 4096, 300, 0);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK);
  txn(w, off, 5);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  same_files(a, b);
  t_rmdir(a);
  t_rmdir(b);
  free(a);
  free(b);
}

/* Damage inside committed data is an error naming the file and position,
** and nothing is cut off. */
static void test_committed_damage(void **state) {
  (void)state;
  char *a = t_mkdtemp("wr_dmg");
  kl_writer *w = open_w(a, 1 << 20, 300, 0);
  txn(w, 0, 5);
  txn(w, 5, 5);
  kl_err err = {0};
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  char p[4200];
  snprintf(p, sizeof p, "%s/00000000000000000000.log", a);
  size_t n0;
  uint8_t *before = t_read_file(p, &n0);
  /* Extra bytes make recovery walk; a flipped byte makes it fail. */
  t_flip(p, 70, 0x40);
  FILE *f = fopen(p, "ab");
  fputs("torn", f);
  fclose(f);
  w = open_w(a, 1 << 20, 300, 0);
  assert_int_equal(kl_writer_begin(w, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, "00000000000000000000.log"));
  assert_non_null(strstr(err.msg, "position 0"));
  size_t n1;
  uint8_t *after = t_read_file(p, &n1);
  assert_int_equal(n1, n0); /* only the uncommitted tail went */
  free(before);
  free(after);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(a);
  free(a);
}

/* A log Kafka's rules wrote, with a torn tail: appending goes on after the
** last whole batch, and the indexes are rebuilt as Kafka rebuilds them. */
static void test_adopt(void **state) {
  (void)state;
  char *a = kw_make_log("wr_adopt", 50, 3, 1 << 20, 200, 20, 1700000000000, 7);
  char p[4200];
  snprintf(p, sizeof p, "%s/00000000000000000000.log", a);
  size_t n;
  uint8_t *all = t_read_file(p, &n);
  FILE *f = fopen(p, "ab");
  assert_int_equal(fwrite(all, 1, 30, f), 30); /* a batch cut short */
  fclose(f);
  free(all);
  kl_writer *w = open_w(a, 1 << 20, 200, 0);
  kl_err err = {0};
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_next_offset(w), 150);
  assert_true(kl_writer_stats_of(w)->truncated > 0);
  int64_t off;
  kl_rec_in r = {1800000000000, "k", 1, "v", 1, NULL, 0};
  assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
  assert_int_equal(off, 150);
  assert_int_equal(kl_writer_sync(w, &err), KL_OK);
  kl_writer_commit(w);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(a);
  free(a);
}

/* Retention: segments wholly below the new start go, the start is
** published, readers begin there. */
static void test_retention(void **state) {
  (void)state;
  char *root = t_mkdtemp("wr_ret");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/ev-3", root);
  kl_writer *w = open_w(dir, 2048, 300, 0);
  int64_t off = 0;
  for (int t = 0; t < 60; t++, off += 4) txn(w, off, 4);
  kl_log *log = NULL;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  size_t before = kl_log_segment_count(log);
  /* A reader that listed the directory before the retention commit and
  ** opens its first segments after it. */
  kl_log *early = NULL;
  assert_int_equal(kl_log_open(NULL, dir, &early, &err), KL_OK);
  kl_log_close(log);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_delete_below(w, 100, &err), KL_OK);
  assert_int_equal(kl_writer_sync(w, &err), KL_OK);
  kl_writer_commit(w);
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  assert_true(kl_log_segment_count(log) < before);
  assert_int_equal(kl_log_start_offset(log), 100);
  assert_true(kl_log_first(log)->base <= 100);
  kl_log_close(log);
  /* The early reader still reads the log it listed: the removed segments'
  ** bytes wait as .deleted files (Kafka's delayed deletion). */
  assert_int_equal(t_log_count(early), off);
  kl_log_close(early);
  char del[4300];
  snprintf(del, sizeof del, "%s/00000000000000000000.log.deleted", dir);
  struct stat sb;
  assert_int_equal(stat(del, &sb), 0);
  char p[4200];
  snprintf(p, sizeof p, "%s/log-start-offset-checkpoint", root);
  size_t n;
  char *ck = (char *)t_read_file(p, &n);
  assert_non_null(ck);
  assert_non_null(strstr(ck, "0\n1\nev 3 100\n"));
  free(ck);
  /* Everything: an empty active segment is left at the end. */
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_delete_below(w, INT64_MAX, &err), KL_OK);
  assert_int_equal(kl_writer_sync(w, &err), KL_OK);
  kl_writer_commit(w);
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  assert_int_equal(kl_log_segment_count(log), 1);
  assert_int_equal(kl_log_first(log)->base, off);
  kl_log_close(log);
  txn(w, off, 2);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(root);
  free(root);
}

/* The commit record has two slots: a write torn by a crash spoils one,
** and readers (and the next writer) take the other, the commit before. */
static void test_commit_slots(void **state) {
  (void)state;
  char *a = t_mkdtemp("wr_slot");
  kl_writer *w = open_w(a, 1 << 20, 300, 0);
  txn(w, 0, 5);
  txn(w, 5, 5);
  kl_commit c;
  kl_err err = {0};
  assert_int_equal(kl_commit_read(NULL, a, &c, &err), KL_OK);
  assert_int_equal(c.next_offset, 10);
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", a, KL_COMMIT_FILE);
  size_t n;
  uint8_t *f = t_read_file(p, &n);
  assert_int_equal(n, 2 * KL_COMMIT_SLOT);
  free(f);
  /* Tear the newer slot: the older one is the commit of offsets 0..4. */
  t_flip(p, (int64_t)(c.gen % 2) * KL_COMMIT_SLOT + 20, 0x01);
  kl_commit old;
  assert_int_equal(kl_commit_read(NULL, a, &old, &err), KL_OK);
  assert_int_equal(old.gen, c.gen - 1);
  assert_int_equal(old.next_offset, 5);
  assert_int_equal(check_log(a), 5);
  /* Both torn: an error naming the file, no guess. */
  t_flip(p, (int64_t)(old.gen % 2) * KL_COMMIT_SLOT + 20, 0x01);
  kl_err e2 = {0};
  assert_int_equal(kl_commit_read(NULL, a, &old, &e2), KL_CORRUPT);
  assert_non_null(strstr(e2.msg, KL_COMMIT_FILE));
  t_flip(p, (int64_t)(old.gen % 2) * KL_COMMIT_SLOT + 20, 0x01);
  /* The next writer goes on from the older commit. */
  kl_writer_close(w, &err);
  w = open_w(a, 1 << 20, 300, 0);
  txn(w, 5, 3);
  assert_int_equal(check_log(a), 8);
  assert_int_equal(kl_writer_close(w, &err), KL_OK);
  t_rmdir(a);
  free(a);
}

/* The log start goes into the log directory's checkpoint as Kafka keeps
** it: the other partitions' entries stay, ours is replaced or added. */
static void test_checkpoint_put(void **state) {
  (void)state;
  char *root = t_mkdtemp("wr_ckpt");
  char p[4200];
  snprintf(p, sizeof p, "%s/log-start-offset-checkpoint", root);
  const char *before = "0\n2\norders 1 7\norders 0 3\n";
  assert_int_equal(t_write_file(p, before, strlen(before)), 0);
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_put(NULL, root, KL_CKPT_LOG_START, "orders", 0, 40, &err), KL_OK);
  assert_int_equal(kl_checkpoint_put(NULL, root, KL_CKPT_LOG_START, "ev", 2, 9, &err), KL_OK);
  size_t n;
  char *got = (char *)t_read_file(p, &n);
  assert_non_null(got);
  assert_int_equal(n, strlen("0\n3\norders 0 40\norders 1 7\nev 2 9\n"));
  assert_memory_equal(got, "0\n3\norders 0 40\norders 1 7\nev 2 9\n", n);
  free(got);
  /* A malformed file is left alone. */
  assert_int_equal(t_write_file(p, "1\nx\n", 4), 0);
  assert_int_equal(kl_checkpoint_put(NULL, root, KL_CKPT_LOG_START, "ev", 2, 10, &err), KL_CORRUPT);
  got = (char *)t_read_file(p, &n);
  assert_int_equal(n, 4);
  free(got);
  t_rmdir(root);
  free(root);
}

/* A log that cannot be made leaves nothing: here its first segment's
** .index cannot be created (a directory has that name), and the .log and
** commit record made before are removed again.  A missing directory is
** made (its parent is not). */
static void test_create_failed_leaves_nothing(void **state) {
  (void)state;
  char *root = t_mkdtemp("wr_mk");
  char dir[4200], block[4300], p[4300];
  snprintf(dir, sizeof dir, "%s/events-0", root);
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_err err = {0};
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(block, sizeof block, "%s/00000000000000000000.index", dir);
  assert_int_equal(mkdir(block, 0755), 0);
  assert_int_not_equal(kl_writer_create(NULL, dir, &o, &err), KL_OK);
  print_message("  %s\n", err.msg);
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    assert_string_equal(e->d_name, "00000000000000000000.index");
    n++;
  }
  closedir(d);
  assert_int_equal(n, 1);
  snprintf(p, sizeof p, "%s/none/orders-0", root);
  kl_err_clear(&err);
  assert_int_not_equal(kl_writer_create(NULL, p, &o, &err), KL_OK);
  snprintf(p, sizeof p, "%s/none", root);
  assert_int_equal(access(p, F_OK), -1);
  snprintf(p, sizeof p, "%s/orders-0", root);
  kl_err_clear(&err);
  assert_int_equal(kl_writer_create(NULL, p, &o, &err), KL_OK);
  assert_int_equal(access(p, F_OK), 0);
  t_rmdir(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_bytes_as_kafka_rules),
      cmocka_unit_test(test_rollback),
      cmocka_unit_test(test_savepoints),
      cmocka_unit_test(test_locks),
      cmocka_unit_test(test_create_failed_leaves_nothing),
      cmocka_unit_test(test_recovery),
      cmocka_unit_test(test_committed_damage),
      cmocka_unit_test(test_adopt),
      cmocka_unit_test(test_retention),
      cmocka_unit_test(test_commit_slots),
      cmocka_unit_test(test_checkpoint_put),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
