/*
** test_broker.c - log directories: partition names as Kafka parses them,
** the listing of one or several log directories (what is a partition and
** what is not), the checkpoint files as Kafka's CheckpointFile reads them,
** malformed checkpoints named by file and line, and allocation failure.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "checkpoint.h"
#include "os.h"

static void mkdirp(const char *root, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(mkdir(p, 0755), 0);
}

static void put(const char *root, const char *name, const char *text) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(t_write_file(p, text, strlen(text)), 0);
}

/* The entries of directory d but . and .. */
static int count_entries(const char *d) {
  DIR *dd = opendir(d);
  assert_non_null(dd);
  int n = 0;
  for (struct dirent *de; (de = readdir(dd));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  closedir(dd);
  return n;
}

static void test_partition_names(void **state) {
  (void)state;
  int32_t p = -2;
  assert_int_equal(kl_partition_name("orders-0", &p), 6);
  assert_int_equal(p, 0);
  assert_int_equal(kl_partition_name("my-topic-12", &p), 8);
  assert_int_equal(p, 12);
  assert_int_equal(kl_partition_name("__consumer_offsets-49", &p), 18);
  assert_int_equal(p, 49);
  /* Not partitions: what Kafka leaves while deleting or moving, and names
  ** without a partition number. */
  assert_int_equal(kl_partition_name("orders-0.0a1b2c3d4e5f-delete", &p), 0);
  assert_int_equal(kl_partition_name("orders-0.0a1b2c3d4e5f-future", &p), 0);
  assert_int_equal(kl_partition_name("orders-0.0a1b2c3d4e5f-stray", &p), 0);
  assert_int_equal(kl_partition_name("orders", &p), 0);
  assert_int_equal(kl_partition_name("orders-", &p), 0);
  assert_int_equal(kl_partition_name("-3", &p), 0);
  assert_int_equal(kl_partition_name("orders-1x", &p), 0);
  assert_int_equal(kl_partition_name("orders-99999999999", &p), 0);
}

static void test_checkpoint_read(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckpt");
  char path[4096];
  kl_ckpt c;
  kl_err err = {0};
  snprintf(path, sizeof path, "%s/absent", d);
  assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_OK);
  assert_int_equal(c.n, 0);
  put(d, "empty", "");
  snprintf(path, sizeof path, "%s/empty", d);
  assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_OK);
  assert_int_equal(c.n, 0);
  put(d, "good", "0\n3\norders 1 500\norders 0 368769\nother-topic\t3   12\n");
  snprintf(path, sizeof path, "%s/good", d);
  assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_OK);
  assert_int_equal(c.n, 3);
  assert_int_equal(kl_checkpoint_get(&c, "orders", 0), 368769);
  assert_int_equal(kl_checkpoint_get(&c, "orders", 1), 500);
  assert_int_equal(kl_checkpoint_get(&c, "other-topic", 3), 12);
  assert_int_equal(kl_checkpoint_get(&c, "orders", 2), -1);
  assert_int_equal(kl_checkpoint_get(&c, "order", 0), -1);
  kl_checkpoint_free(NULL, &c);
  /* Of a key written twice the later line wins, as in Kafka's map. */
  put(d, "dup", "0\n3\na 0 5\nb 0 1\na 0 7\n");
  snprintf(path, sizeof path, "%s/dup", d);
  assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_OK);
  assert_int_equal(kl_checkpoint_get(&c, "a", 0), 7);
  kl_checkpoint_free(NULL, &c);

  static const struct { const char *text, *where; } bad[] = {
      {"1\n0\n", ":1: unrecognized version 1"},
      {"x\n0\n", ":1: malformed version"},
      {"0\n", ":2: no entry count"},
      {"0\n2\na 0 1\n", ":4: expected 2 entries but found only 1"},
      {"0\n1\na 0 1\nb 0 2\n", ":4: more entries than the 1"},
      {"0\n1\na 0\n", ":3: malformed entry"},
      {"0\n1\na 0 1 2\n", ":3: malformed entry"},
      {"0\n1\na zero 1\n", ":3: malformed entry"},
      {"0\n1\n a 0 1\n", ":3: malformed entry"},
      {"0\n1\na 0 99999999999999999999\n", ":3: malformed entry"},
      {"0\n-1\n", ":2: malformed entry count"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    put(d, "bad", bad[i].text);
    snprintf(path, sizeof path, "%s/bad", d);
    memset(&err, 0, sizeof err);
    assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_CORRUPT);
    assert_non_null(strstr(err.msg, path));
    if (!strstr(err.msg, bad[i].where)) fail_msg("case %zu: %s", i, err.msg);
    assert_int_equal(c.n, 0);
  }
  t_rmdir(d);
  free(d);
}

/* Kafka's topic names (Topic.validate): a-z A-Z 0-9 . _ -, 1 to 249 of
** them, not "." or "..". */
static void test_topic_names(void **state) {
  (void)state;
  assert_true(kl_topic_valid("orders", 6));
  assert_true(kl_topic_valid("__consumer_offsets", 18));
  assert_true(kl_topic_valid("a.b_c-D9", 8));
  assert_true(kl_topic_valid("...", 3));
  assert_false(kl_topic_valid("", 0));
  assert_false(kl_topic_valid(".", 1));
  assert_false(kl_topic_valid("..", 2));
  static const char *const bad[] = {"my topic", "tab\there", "new\nline", "a/b", "caf\xc3\xa9",
                                    "x,y", "q\"uote"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    if (kl_topic_valid(bad[i], strlen(bad[i]))) fail_msg("accepted \"%s\"", bad[i]);
  }
  char name[251];
  memset(name, 'x', sizeof name);
  assert_true(kl_topic_valid(name, 249));
  assert_false(kl_topic_valid(name, 250));
}

/* The checkpoint writer writes nothing its reader would refuse: a topic
** with whitespace is refused and the file stays as it was; long topics
** (from the file itself) are written whole. */
static void test_checkpoint_put_writes_what_reads(void **state) {
  (void)state;
  char *d = t_mkdtemp("ckput");
  char path[4096];
  snprintf(path, sizeof path, "%s/log-start-offset-checkpoint", d);
  kl_err err = {0};
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "orders", 0, 5, &err), KL_OK);
  static const char *const bad[] = {"my topic", "tab\there", "new\nline", "cr\r", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&err, 0, sizeof err);
    assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, bad[i], 0, 9, &err), KL_MISUSE);
    assert_non_null(strstr(err.msg, "log-start-offset-checkpoint"));
  }
  size_t n;
  char *text = (char *)t_read_file(path, &n);
  assert_string_equal(text, "0\n1\norders 0 5\n");
  free(text);
  /* A topic longer than any line buffer, as a file may hold it. */
  char *longt = malloc(5001), *file = malloc(6000);
  memset(longt, 'L', 5000);
  longt[5000] = 0;
  snprintf(file, 6000, "0\n1\n%s 3 7\n", longt);
  put(d, "log-start-offset-checkpoint", file);
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_checkpoint_put(NULL, d, KL_CKPT_LOG_START, "orders", 0, 6, &err), KL_OK);
  kl_ckpt c;
  assert_int_equal(kl_checkpoint_read(NULL, path, &c, &err), KL_OK);
  assert_int_equal(c.n, 2);
  assert_int_equal(kl_checkpoint_get(&c, longt, 3), 7);
  assert_int_equal(kl_checkpoint_get(&c, "orders", 0), 6);
  kl_checkpoint_free(NULL, &c);
  free(longt);
  free(file);
  /* No temporary file is left. */
  assert_int_equal(count_entries(d), 1);
  t_rmdir(d);
  free(d);
}

/* A log directory with two topics, an internal topic, what Kafka leaves
** behind, and checkpoints. */
static char *make_logdir(const char *tag) {
  char *d = t_mkdtemp(tag);
  mkdirp(d, "orders-1");
  mkdirp(d, "orders-0");
  mkdirp(d, "orders-10");
  mkdirp(d, "clicks-0");
  mkdirp(d, "__consumer_offsets-3");
  mkdirp(d, "orders-2.a1b2c3d4e5f60718293a4b5c6d7e8f90-delete");
  mkdirp(d, "orders-3.a1b2c3d4e5f60718293a4b5c6d7e8f90-future");
  mkdirp(d, "__cluster_metadata-0");
  mkdirp(d, "not-a-partition");
  put(d, "orders-5", "a file, not a directory");
  put(d, "meta.properties", "version=1\n");
  put(d, "log-start-offset-checkpoint", "0\n1\norders 1 42\n");
  put(d, "replication-offset-checkpoint", "0\n2\norders 0 100\nclicks 0 7\n");
  put(d, "recovery-point-offset-checkpoint", "0\n1\norders 0 90\n");
  return d;
}

static void test_logdir(void **state) {
  (void)state;
  char *d = make_logdir("logdir");
  kl_broker *b;
  kl_err err = {0};
  assert_int_equal(kl_broker_open(NULL, d, &b, &err), KL_OK);
  assert_int_equal(kl_broker_single(b), 0);
  assert_int_equal(kl_broker_count(b), 5);
  static const struct { const char *topic; int32_t p; } want[] = {
      {"__consumer_offsets", 3}, {"clicks", 0}, {"orders", 0}, {"orders", 1}, {"orders", 10}};
  for (size_t i = 0; i < 5; i++) {
    const kl_part *p = kl_broker_part(b, i);
    assert_string_equal(p->topic, want[i].topic);
    assert_int_equal(p->partition, want[i].p);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s-%d", d, want[i].topic, (int)want[i].p);
    assert_string_equal(p->dir, dir);
  }
  const kl_part *o0 = kl_broker_part(b, 2), *o1 = kl_broker_part(b, 3), *c0 = kl_broker_part(b, 1);
  assert_int_equal(o0->log_start, -1);
  assert_int_equal(o0->high_watermark, 100);
  assert_int_equal(o0->recovery_point, 90);
  assert_int_equal(o1->log_start, 42);
  assert_int_equal(o1->high_watermark, -1);
  assert_int_equal(c0->high_watermark, 7);
  assert_int_equal(kl_broker_seek(b, "orders", 6, 1), 3);
  assert_int_equal(kl_broker_seek(b, "orders", 6, 2), 4);
  assert_int_equal(kl_broker_seek(b, "orders", 6, 11), 5);
  assert_int_equal(kl_broker_seek(b, "orders", 6, 0), 2);
  assert_int_equal(kl_broker_seek(b, "order", 5, 0), 2);
  assert_int_equal(kl_broker_seek(b, "clicks", 6, 0), 1);
  assert_int_equal(kl_broker_seek(b, "A", 1, 0), 0);
  kl_broker_close(b);

  /* A partition directory alone: its parent's checkpoints apply. */
  char one[4096];
  snprintf(one, sizeof one, "%s/orders-1/", d);
  put(d, "orders-1/00000000000000000000.log", "");
  assert_int_equal(kl_broker_open(NULL, one, &b, &err), KL_OK);
  assert_int_equal(kl_broker_single(b), 1);
  assert_int_equal(kl_broker_count(b), 1);
  assert_string_equal(kl_broker_part(b, 0)->topic, "orders");
  assert_int_equal(kl_broker_part(b, 0)->partition, 1);
  assert_int_equal(kl_broker_part(b, 0)->log_start, 42);
  kl_broker_close(b);

  /* Two log directories, comma-separated with spaces, as log.dirs. */
  char *d2 = t_mkdtemp("logdir2");
  mkdirp(d2, "orders-4");
  char two[8192];
  snprintf(two, sizeof two, "%s, %s", d, d2);
  assert_int_equal(kl_broker_open(NULL, two, &b, &err), KL_OK);
  assert_int_equal(kl_broker_count(b), 6);
  assert_int_equal(kl_broker_part(b, 4)->partition, 4);
  assert_int_equal(kl_broker_part(b, 4)->logdir, 1);
  assert_int_equal(kl_broker_part(b, 3)->logdir, 0);
  kl_broker_close(b);

  /* A malformed checkpoint fails the listing, naming file and line. */
  put(d, "replication-offset-checkpoint", "0\n2\norders 0 100\n");
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_broker_open(NULL, d, &b, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, "replication-offset-checkpoint:4: expected 2 entries"));

  /* Neither a partition nor a log directory; a missing one. */
  char *e = t_mkdtemp("neither");
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_broker_open(NULL, e, &b, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, "is not a Kafka partition directory"));
  snprintf(one, sizeof one, "%s/missing", e);
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_broker_open(NULL, one, &b, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, "cannot open directory"));
  t_rmdir(e);
  free(e);
  t_rmdir(d2);
  free(d2);
  t_rmdir(d);
  free(d);
}

/* Every spelling of a partition's path finds its log directory, as the log
** directory's own listing does: relative without a slash, ./x, x/, x/.,
** a/b/../x, absolute, and the checkpoint's entry applies to each. */
static void test_partition_path_forms(void **state) {
  (void)state;
  char *d = make_logdir("forms");
  put(d, "orders-1/00000000000000000000.log", "");
  mkdirp(d, "sub");
  char cwd[4096], sub[4200], abs[4200];
  assert_non_null(getcwd(cwd, sizeof cwd));
  snprintf(abs, sizeof abs, "%s/orders-1", d);
  snprintf(sub, sizeof sub, "%s/sub", d);
  assert_int_equal(chdir(d), 0);
  static const struct { const char *path, *logdir; } forms[] = {
      {"orders-1", "."},          {"./orders-1", "."},         {"orders-1/", "."},
      {"orders-1//", "."},        {"orders-1/.", "."},         {"./orders-1/./", "."},
      {"sub/../orders-1", "sub/.."}, {"sub/..//orders-1", "sub/.."},
  };
  char logdir[4096], name[256];
  kl_err err = {0};
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    assert_int_equal(kl_partition_logdir(forms[i].path, logdir, sizeof logdir, name, sizeof name,
                                         &err), KL_OK);
    if (strcmp(logdir, forms[i].logdir) || strcmp(name, "orders-1")) {
      fail_msg("%s: log directory %s, name %s", forms[i].path, logdir, name);
    }
    kl_broker *b;
    assert_int_equal(kl_broker_open(NULL, forms[i].path, &b, &err), KL_OK);
    assert_int_equal(kl_broker_count(b), 1);
    assert_string_equal(kl_broker_part(b, 0)->topic, "orders");
    if (kl_broker_part(b, 0)->log_start != 42) {
      fail_msg("%s: log start %lld", forms[i].path, (long long)kl_broker_part(b, 0)->log_start);
    }
    kl_broker_close(b);
  }
  /* "." and ".." name no entry: resolved, they are found in their parent. */
  assert_int_equal(chdir("orders-1"), 0);
  assert_int_equal(kl_partition_logdir(".", logdir, sizeof logdir, name, sizeof name, &err), KL_OK);
  assert_string_equal(name, "orders-1");
  kl_broker *b;
  assert_int_equal(kl_broker_open(NULL, ".", &b, &err), KL_OK);
  assert_int_equal(kl_broker_part(b, 0)->log_start, 42);
  kl_broker_close(b);
  assert_int_equal(chdir(sub), 0);
  assert_int_equal(kl_partition_logdir("../orders-1/../orders-1/..", logdir, sizeof logdir, name,
                                       sizeof name, &err), KL_OK);
  assert_string_equal(name, strrchr(d, '/') + 1);
  assert_int_equal(kl_partition_logdir(abs, logdir, sizeof logdir, name, sizeof name, &err), KL_OK);
  assert_string_equal(logdir, d);
  assert_string_equal(name, "orders-1");
  assert_int_equal(kl_partition_logdir("/", logdir, sizeof logdir, name, sizeof name, &err), KL_OK);
  assert_string_equal(logdir, "/");
  assert_int_equal(chdir(cwd), 0);
  t_rmdir(d);
  free(d);
}

/* Reads of the checkpoints fail with EIO. */
static long eio_read(const kl_os *os, int fd, void *buf, size_t n, int64_t pos) {
  (void)os, (void)fd, (void)buf, (void)n, (void)pos;
  errno = EIO;
  return -1;
}

/* A checkpoint that cannot be read (an I/O error, or not a file) fails the
** listing naming it, through the partition path as through its log
** directory: never a log start of 0. */
static void test_unreadable_checkpoint(void **state) {
  (void)state;
  char *d = make_logdir("unreadable");
  put(d, "orders-1/00000000000000000000.log", "");
  char one[4200], f[4200];
  snprintf(one, sizeof one, "%s/orders-1", d);
  snprintf(f, sizeof f, "%s/log-start-offset-checkpoint", d);
  kl_os os = {.xRead = eio_read};
  kl_env env = {NULL, NULL, &os};
  const char *paths[] = {d, one};
  for (int i = 0; i < 2; i++) {
    kl_broker *b = NULL;
    kl_err err = {0};
    assert_int_equal(kl_broker_open(&env, paths[i], &b, &err), KL_IO);
    assert_null(b);
    assert_non_null(strstr(err.msg, f));
    assert_non_null(strstr(err.msg, "Input/output error"));
  }
  /* A directory where the file should be. */
  assert_int_equal(unlink(f), 0);
  assert_int_equal(mkdir(f, 0755), 0);
  for (int i = 0; i < 2; i++) {
    kl_broker *b = NULL;
    kl_err err = {0};
    assert_int_equal(kl_broker_open(NULL, paths[i], &b, &err), KL_CANTOPEN);
    assert_non_null(strstr(err.msg, f));
  }
  t_rmdir(d);
  free(d);
}

/* A directory listed twice is one directory: a log directory by several
** spellings, a partition twice, a partition with its log directory. */
static void test_logdir_listed_twice(void **state) {
  (void)state;
  char *d = make_logdir("twice");
  put(d, "orders-1/00000000000000000000.log", "");
  char buf[3][9000];
  snprintf(buf[0], sizeof buf[0], "%s,%s", d, d);
  snprintf(buf[1], sizeof buf[1], "%s/,%s/./", d, d);
  snprintf(buf[2], sizeof buf[2], "%s/orders-1,%s,%s/orders-1/", d, d, d);
  for (int i = 0; i < 3; i++) {
    kl_broker *b;
    kl_err err = {0};
    assert_int_equal(kl_broker_open(NULL, buf[i], &b, &err), KL_OK);
    if (kl_broker_count(b) != 5) fail_msg("%s: %zu partitions", buf[i], kl_broker_count(b));
    assert_int_equal(kl_broker_part(b, 3)->partition, 1);
    assert_int_equal(kl_broker_part(b, 3)->log_start, 42);
    kl_broker_close(b);
  }
  /* One partition twice is that partition alone. */
  snprintf(buf[0], sizeof buf[0], "%s/orders-1,%s/./orders-1/", d, d);
  kl_broker *b;
  kl_err err = {0};
  assert_int_equal(kl_broker_open(NULL, buf[0], &b, &err), KL_OK);
  assert_int_equal(kl_broker_count(b), 1);
  assert_int_equal(kl_broker_single(b), 1);
  kl_broker_close(b);
  t_rmdir(d);
  free(d);
}

/* Do listings a and b hold the same partitions (directories, names,
** checkpoint values, log directory), in the same order? */
static void same_parts(const kl_broker *a, const kl_broker *b) {
  assert_int_equal(kl_broker_count(a), kl_broker_count(b));
  for (size_t i = 0; i < kl_broker_count(a); i++) {
    const kl_part *x = kl_broker_part(a, i), *y = kl_broker_part(b, i);
    assert_string_equal(x->dir, y->dir);
    assert_string_equal(x->topic, y->topic);
    assert_int_equal(x->partition, y->partition);
    assert_int_equal(x->logdir, y->logdir);
    assert_int_equal(x->log_start, y->log_start);
    assert_int_equal(x->high_watermark, y->high_watermark);
    assert_int_equal(x->recovery_point, y->recovery_point);
  }
}

/* The partitions of the whole listing named (topic, p), as a new listing. */
static void whole_named(const char *path, const char *topic, int32_t p, kl_broker **out) {
  kl_broker *w;
  kl_err err = {0};
  assert_int_equal(kl_broker_open(NULL, path, &w, &err), KL_OK);
  size_t k = 0;
  /* kl_broker_open_named of a topic no directory has: an empty listing
  ** with the classification and the checks of the whole one. */
  assert_int_equal(kl_broker_open_named(NULL, path, 0, "no.such.topic", 13, 0, out, &err), KL_OK);
  assert_int_equal(kl_broker_count(*out), 0);
  kl_broker_close(*out);
  for (size_t i = 0; i < kl_broker_count(w); i++) {
    const kl_part *x = kl_broker_part(w, i);
    k += x->topic && !strcmp(x->topic, topic) && x->partition == p;
  }
  assert_int_equal(kl_broker_open_named(NULL, path, 0, topic, strlen(topic), p, out, &err), KL_OK);
  assert_int_equal(kl_broker_count(*out), k);
  size_t j = 0;
  for (size_t i = 0; i < kl_broker_count(w); i++) {
    const kl_part *x = kl_broker_part(w, i);
    if (!x->topic || strcmp(x->topic, topic) || x->partition != p) continue;
    const kl_part *y = kl_broker_part(*out, j++);
    assert_string_equal(x->dir, y->dir);
    assert_int_equal(x->logdir, y->logdir);
    assert_int_equal(x->log_start, y->log_start);
    assert_int_equal(x->high_watermark, y->high_watermark);
    assert_int_equal(x->recovery_point, y->recovery_point);
  }
  assert_int_equal(kl_broker_single(*out), kl_broker_single(w));
  kl_broker_close(w);
}

/* A listing keeping one named partition holds what the whole listing holds
** of it, on every path form, and fails as the whole one fails. */
static void test_named_listing(void **state) {
  (void)state;
  char *d = make_logdir("named");
  mkdirp(d, "orders-01"); /* partition 1 too, to the listing */
  char *d2 = t_mkdtemp("named2");
  mkdirp(d2, "orders-1");
  put(d2, "log-start-offset-checkpoint", "0\n1\norders 1 7\n");
  char paths[4][9000];
  snprintf(paths[0], sizeof paths[0], "%s", d);
  snprintf(paths[1], sizeof paths[1], "%s,%s", d, d2);
  snprintf(paths[2], sizeof paths[2], "%s/orders-1,%s", d, d);
  snprintf(paths[3], sizeof paths[3], "%s/orders-1", d);
  put(d, "orders-1/00000000000000000000.log", "");
  static const struct { const char *topic; int32_t p; } asks[] = {
      {"orders", 1}, {"orders", 0}, {"orders", 10}, {"clicks", 0}, {"orders", 2}, {"orders", 5},
      {"__cluster_metadata", 0}, {"not-a", 0}};
  for (int i = 0; i < 4; i++) {
    for (size_t k = 0; k < sizeof asks / sizeof *asks; k++) {
      kl_broker *n;
      whole_named(paths[i], asks[k].topic, asks[k].p, &n);
      const char *t;
      size_t tn;
      int32_t p;
      assert_int_equal(kl_broker_named(n, &t, &tn, &p), 1);
      assert_int_equal(p, asks[k].p);
      /* A log directory alone holding Kafka's files is not listed: the
      ** partition is looked up by its names. */
      if (i == 0) assert_int_equal(kl_broker_dirs_listed(n), 0);
      else assert_true(kl_broker_dirs_listed(n) >= 1);
      kl_broker_close(n);
    }
  }
  /* A segment file among a log directory's files does not make it a
  ** partition directory, in either listing. */
  put(d, "00000000000000000000.log", "");
  for (size_t k = 0; k < sizeof asks / sizeof *asks; k++) {
    kl_broker *n;
    whole_named(paths[0], asks[k].topic, asks[k].p, &n);
    assert_int_equal(kl_broker_single(n), 0);
    kl_broker_close(n);
  }
  kl_broker *w;
  kl_err e0 = {0};
  assert_int_equal(kl_broker_open(NULL, d, &w, &e0), KL_OK);
  assert_int_equal(kl_broker_single(w), 0);
  assert_true(kl_broker_count(w) >= 2);
  kl_broker_close(w);
  /* A topic Kafka would not accept lists every partition. */
  kl_broker *a, *b;
  kl_err err = {0};
  assert_int_equal(kl_broker_open(NULL, d, &a, &err), KL_OK);
  assert_int_equal(kl_broker_open_named(NULL, d, 0, "or ders", 7, 1, &b, &err), KL_OK);
  const char *t;
  size_t tn;
  int32_t p;
  assert_int_equal(kl_broker_named(b, &t, &tn, &p), 0);
  same_parts(a, b);
  kl_broker_close(a);
  kl_broker_close(b);
  /* The same error as the whole listing, for a line of another topic. */
  put(d, "recovery-point-offset-checkpoint", "0\n2\norders 0 90\nclicks zero 1\n");
  char m[2][512];
  assert_int_equal(kl_broker_open(NULL, d, &a, &err), KL_CORRUPT);
  snprintf(m[0], sizeof m[0], "%s", err.msg);
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_broker_open_named(NULL, d, 0, "orders", 6, 1, &b, &err), KL_CORRUPT);
  snprintf(m[1], sizeof m[1], "%s", err.msg);
  assert_string_equal(m[0], m[1]);
  /* Neither a partition nor a log directory, either way. */
  char *e = t_mkdtemp("neither");
  put(e, "x", "");
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_broker_open_named(NULL, e, 0, "orders", 6, 1, &b, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, "is not a Kafka partition directory"));
  t_rmdir(e);
  free(e);
  t_rmdir(d2);
  free(d2);
  t_rmdir(d);
  free(d);
}

static void test_nomem(void **state) {
  (void)state;
  char *d = make_logdir("nomem");
  int ok = 0;
  for (long at = 1; at < 200 && !ok; at++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, at);
    kl_broker *b = NULL;
    kl_err err = {0};
    kl_rc rc = kl_broker_open(env, d, &b, &err);
    if (rc == KL_OK) {
      assert_int_equal(kl_broker_count(b), 5);
      kl_broker_close(b);
      ok = 1;
    } else {
      assert_int_equal(rc, KL_NOMEM);
    }
    assert_int_equal(fa.live, 0);
  }
  assert_true(ok);
  t_rmdir(d);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partition_names),
      cmocka_unit_test(test_checkpoint_read),
      cmocka_unit_test(test_logdir),
      cmocka_unit_test(test_partition_path_forms),
      cmocka_unit_test(test_unreadable_checkpoint),
      cmocka_unit_test(test_logdir_listed_twice),
      cmocka_unit_test(test_named_listing),
      cmocka_unit_test(test_nomem),
      cmocka_unit_test(test_topic_names),
      cmocka_unit_test(test_checkpoint_put_writes_what_reads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
