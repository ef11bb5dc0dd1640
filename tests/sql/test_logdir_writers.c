/*
** test_logdir_writers.c - several writers in one log directory: writers of
** different partitions share a broker's .lock (and keep a broker out),
** their retention updates of log-start-offset-checkpoint are serialised
** and atomic, processes at once; and topic names Kafka refuses are never
** created nor written into a checkpoint.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "commit.h"
#include "sqltest.h"

static void table(sqlite3 *db, const char *name, const char *dir, const char *mode) {
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE %s USING kafka_log(%Q, mode=%Q)", name, dir,
                              mode);
  st_exec(db, sql);
  sqlite3_free(sql);
}

/* Take Kafka's broker lock on path as FileChannel.tryLock does (a classic
** POSIX record lock, exclusive, the whole file), in a process of its own:
** 1 when it was taken, 0 when someone holds a conflicting lock. */
static int broker_trylock(const char *path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fd < 0) _exit(2);
    if (fcntl(fd, F_SETLK, &fl) == 0) _exit(1);
    _exit(errno == EAGAIN || errno == EACCES ? 0 : 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) <= 1);
  return WEXITSTATUS(st);
}

/* Writers of two partitions of a log directory with a broker's .lock both
** write, at once; while either is at work a broker cannot take its lock,
** and while a broker holds it neither writes. */
static void test_writers_of_partitions_share_broker_lock(void **state) {
  (void)state;
  char *root = t_mkdtemp("lw-share");
  char lock[4200], a_dir[4200], b_dir[4200];
  snprintf(lock, sizeof lock, "%s/.lock", root);
  snprintf(a_dir, sizeof a_dir, "%s/a-0", root);
  snprintf(b_dir, sizeof b_dir, "%s/b-0", root);
  assert_int_equal(t_write_file(lock, "", 0), 0);
  sqlite3 *a = st_open(), *b = st_open();
  table(a, "t", a_dir, "create");
  table(b, "t", b_dir, "create");
  st_exec(a, "BEGIN; INSERT INTO t(value) VALUES ('a1')");
  st_exec(b, "BEGIN; INSERT INTO t(value) VALUES ('b1')");
  assert_int_equal(broker_trylock(lock), 0); /* both at work */
  st_exec(a, "COMMIT");
  assert_int_equal(broker_trylock(lock), 0); /* b still is */
  st_exec(b, "COMMIT");
  assert_int_equal(broker_trylock(lock), 1); /* nobody is */
  assert_int_equal(st_int(a, "SELECT count(*) FROM t", NULL), 1);
  assert_int_equal(st_int(b, "SELECT count(*) FROM t", NULL), 1);

  /* A broker running: neither writes. */
  int pid = t_hold_lock(lock);
  assert_true(pid > 0);
  char *m = st_expect_rc(a, "INSERT INTO t(value) VALUES ('a2')", SQLITE_BUSY);
  assert_non_null(strstr(m, "a Kafka broker holds"));
  free(m);
  m = st_expect_rc(b, "DELETE FROM t", SQLITE_BUSY);
  assert_non_null(strstr(m, "a Kafka broker holds"));
  free(m);
  t_release_lock(pid);
  st_exec(a, "INSERT INTO t(value) VALUES ('a2')");
  assert_int_equal(st_int(a, "SELECT count(*) FROM t", NULL), 2);
  st_close(a);
  st_close(b);
  t_rmdir(root);
  free(root);
}

/* A log directory a broker stopped cleanly in has its meta.properties but
** no .lock (Kafka removes it on a clean stop): a writer at work there
** still keeps a broker from starting. */
static void test_writer_keeps_stopped_broker_from_starting(void **state) {
  (void)state;
  char *root = t_mkdtemp("lw-meta");
  char meta[4200], lock[4200], dir[4200];
  snprintf(meta, sizeof meta, "%s/meta.properties", root);
  snprintf(lock, sizeof lock, "%s/.lock", root);
  snprintf(dir, sizeof dir, "%s/orders-0", root);
  const char *props = "version=1\nnode.id=1\n";
  assert_int_equal(t_write_file(meta, props, strlen(props)), 0);
  sqlite3 *db = st_open();
  table(db, "t", dir, "create");
  st_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('v')");
  assert_int_equal(broker_trylock(lock), 0);
  st_exec(db, "COMMIT");
  assert_int_equal(broker_trylock(lock), 1);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1);
  st_close(db);
  t_rmdir(root);
  free(root);
}

#define WRITERS 3
#define ROUNDS 100

/* One writer process: rounds of an INSERT then a retention DELETE of all
** but the last 10 records.  Returns how many statements failed. */
static int writer_loop(const char *dir) {
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 100;
  sqlite3_kafkalog_init(db, NULL, NULL);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='write',"
                              " segment_bytes=2048)", dir);
  int failed = sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ? 100 : 0;
  sqlite3_free(sql);
  for (int r = 0; r < ROUNDS && !failed; r++) {
    char *e = NULL;
    if (sqlite3_exec(db, "INSERT INTO t(value) VALUES ('0123456789abcdef0123456789abcdef'),"
                         " ('x'), ('y'), ('z'), ('0123456789abcdef0123456789abcdef')",
                     NULL, NULL, &e) != SQLITE_OK ||
        sqlite3_exec(db, "DELETE FROM t WHERE offset < (SELECT max(offset) - 9 FROM t)", NULL,
                     NULL, &e) != SQLITE_OK) {
      fprintf(stderr, "  writer of %s: %s\n", dir, e ? e : "?");
      failed++;
    }
    sqlite3_free(e);
  }
  sqlite3_close(db);
  return failed;
}

/* A reader of the checkpoint until stop is readable: counts the reads that
** failed, that lost an entry (an empty or partial file), and the entries
** that went back.  "<errors> <lost> <back> <reads>" on out. */
static void reader_loop(const char *path, int stop, int out) {
  int64_t last[WRITERS] = {-1, -1, -1};
  long errors = 0, lost = 0, back = 0, reads = 0;
  size_t most = 0;
  struct pollfd pf = {.fd = stop, .events = POLLIN};
  while (poll(&pf, 1, 0) == 0) {
    kl_ckpt c;
    kl_err err = {0};
    reads++;
    if (kl_checkpoint_read(NULL, path, &c, &err) != KL_OK) {
      if (errors++ == 0) fprintf(stderr, "  reader: %s\n", err.msg);
      continue;
    }
    if (c.n < most) lost++;
    if (c.n > most) most = c.n;
    for (int p = 0; p < WRITERS; p++) {
      int64_t o = kl_checkpoint_get(&c, "part", p);
      if (o >= 0 && o < last[p]) back++;
      if (o > last[p]) last[p] = o;
    }
    kl_checkpoint_free(NULL, &c);
  }
  char buf[128];
  int len = snprintf(buf, sizeof buf, "%ld %ld %ld %ld", errors, lost, back, reads);
  if (write(out, buf, (size_t)len) != len) _exit(3);
}

/* Three processes writing and trimming partitions of one log directory,
** a fourth reading its log-start-offset-checkpoint meanwhile: no DELETE
** fails, the reader never finds the file malformed, short of an entry or
** an entry gone back, and at the end each partition's entry is its commit
** record's log start. */
static void test_retention_by_writers_of_one_log_directory(void **state) {
  (void)state;
  char *root = t_mkdtemp("lw-ret");
  char dirs[WRITERS][4200], ckpt[4200];
  snprintf(ckpt, sizeof ckpt, "%s/log-start-offset-checkpoint", root);
  sqlite3 *db = st_open();
  for (int p = 0; p < WRITERS; p++) {
    snprintf(dirs[p], sizeof dirs[p], "%s/part-%d", root, p);
    char name[16];
    snprintf(name, sizeof name, "t%d", p);
    table(db, name, dirs[p], "create");
  }
  st_close(db);
  int stop[2], res[2];
  assert_int_equal(pipe(stop), 0);
  assert_int_equal(pipe(res), 0);
  pid_t reader = fork();
  if (reader == 0) {
    close(stop[1]);
    close(res[0]);
    reader_loop(ckpt, stop[0], res[1]);
    _exit(0);
  }
  close(stop[0]);
  close(res[1]);
  pid_t w[WRITERS];
  for (int p = 0; p < WRITERS; p++) {
    w[p] = fork();
    if (w[p] == 0) {
      int f = writer_loop(dirs[p]);
      _exit(f > 100 ? 100 : f);
    }
  }
  int failed = 0;
  for (int p = 0; p < WRITERS; p++) {
    int st = 0;
    waitpid(w[p], &st, 0);
    failed += WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
  }
  close(stop[1]);
  char buf[128] = {0};
  assert_true(read(res[0], buf, sizeof buf - 1) > 0);
  close(res[0]);
  waitpid(reader, NULL, 0);
  long errors = -1, lost = -1, back = -1, reads = -1;
  sscanf(buf, "%ld %ld %ld %ld", &errors, &lost, &back, &reads);
  print_message("  %d writers x %d rounds: %d failed; reader: %ld errors, %ld lost, %ld back in "
                "%ld reads\n", WRITERS, ROUNDS, failed, errors, lost, back, reads);
  assert_int_equal(failed, 0);
  assert_int_equal(errors, 0);
  assert_int_equal(lost, 0);
  assert_int_equal(back, 0);
  kl_ckpt c;
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_read(NULL, ckpt, &c, &err), KL_OK);
  assert_int_equal(c.n, WRITERS);
  for (int p = 0; p < WRITERS; p++) {
    kl_commit cr;
    assert_int_equal(kl_commit_read(NULL, dirs[p], &cr, &err), KL_OK);
    assert_true(cr.log_start > 0);
    assert_int_equal(kl_checkpoint_get(&c, "part", p), cr.log_start);
  }
  kl_checkpoint_free(NULL, &c);
  /* Nothing but the partitions and the checkpoint: no temporary file. */
  db = st_open();
  st_buf got = {0};
  st_render(db, st_prep(db, "SELECT topic, partition, log_start_offset = (SELECT min(offset)"
                            " FROM kafka_log(?1) l WHERE l.partition = p.partition)"
                            " FROM kafka_partitions(?1) p ORDER BY 2", "t", root), &got);
  assert_string_equal(got.p, "'part'|0|1\n'part'|1|1\n'part'|2|1\n");
  st_buf_free(&got);
  st_close(db);
  DIR *d = opendir(root);
  assert_non_null(d);
  for (struct dirent *de; (de = readdir(d));) {
    size_t n = strlen(de->d_name);
    if (n >= 4 && strcmp(de->d_name + n - 4, ".tmp") == 0) fail_msg("left: %s", de->d_name);
  }
  closedir(d);
  t_rmdir(root);
  free(root);
}

/* mode='create' refuses a partition directory whose topic Kafka would
** refuse, and makes nothing; other names are made as before. */
static void test_create_refuses_invalid_topic(void **state) {
  (void)state;
  char *root = t_mkdtemp("lw-topic");
  sqlite3 *db = st_open();
  static const char *const bad[] = {"my topic-0", "tab\there-0", "new\nline-0", "..-0",
                                    "caf\xc3\xa9-1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, bad[i]);
    char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create')", dir);
    char *m = st_expect_rc(db, sql, SQLITE_ERROR);
    sqlite3_free(sql);
    assert_non_null(strstr(m, "is not a topic name Kafka accepts"));
    free(m);
    assert_int_equal(access(dir, F_OK), -1);
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/ok.topic_name-7", root);
  table(db, "t", dir, "create");
  st_exec(db, "INSERT INTO t(value) VALUES ('v')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Retention in a directory named for a topic Kafka refuses (one made by
** hand) leaves the log directory's checkpoint readable: every partition
** of it can still be queried. */
static void test_retention_with_invalid_topic_keeps_logdir_readable(void **state) {
  (void)state;
  char *root = t_mkdtemp("lw-badret");
  char good[4200], made[4200], bad[4200];
  snprintf(good, sizeof good, "%s/good-0", root);
  snprintf(made, sizeof made, "%s/x-0", root);
  snprintf(bad, sizeof bad, "%s/my topic-0", root);
  sqlite3 *db = st_open();
  table(db, "g", good, "create");
  table(db, "x", made, "create");
  st_exec(db, "INSERT INTO g(value) VALUES ('a'), ('b'), ('c'); DELETE FROM g WHERE offset < 1;"
              " DROP TABLE x");
  assert_int_equal(rename(made, bad), 0);
  table(db, "t", bad, "write");
  st_exec(db, "INSERT INTO t(value) VALUES ('1'), ('2'), ('3'), ('4')");
  st_exec(db, "DELETE FROM t WHERE offset < 2");
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), 2);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", root), 4);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", good), 2);
  char ckpt[4200];
  snprintf(ckpt, sizeof ckpt, "%s/log-start-offset-checkpoint", root);
  kl_ckpt c;
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_read(NULL, ckpt, &c, &err), KL_OK);
  assert_int_equal(c.n, 1);
  assert_int_equal(kl_checkpoint_get(&c, "good", 0), 1);
  kl_checkpoint_free(NULL, &c);
  st_close(db);
  t_rmdir(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writers_of_partitions_share_broker_lock),
      cmocka_unit_test(test_writer_keeps_stopped_broker_from_starting),
      cmocka_unit_test(test_retention_by_writers_of_one_log_directory),
      cmocka_unit_test(test_create_refuses_invalid_topic),
      cmocka_unit_test(test_retention_with_invalid_topic_keeps_logdir_readable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
