/*
** test_ahead.c - the read-ahead ring (core/ahead.h): batches taken in the
** order queued hold the records a read on the caller's thread gives, with
** the same counters; a take of another batch drops the queue; whatever a
** worker cannot do (a read, a CRC, a stream, memory) is left to the
** caller; at most KL_AHEAD_SLOTS are queued; one user at a time claims
** the ring, whose workers outlive its scans.
*/
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ahead.h"
#include "cursor.h"
#include "os.h"
#include "kwriter.h"
#include "testutil.h"

typedef struct fx {
  char *dir;
  char log[1200];
  uint8_t *bytes;           /* the .log, read whole */
  size_t n;
  kl_batch b[256];          /* its batches (b.bytes into bytes) */
  int nb;
  kl_file f;
} fx;

/* One segment of 60 batches of 12 records, the codec rotating. */
static void fx_open(fx *x) {
  memset(x, 0, sizeof *x);
  x->dir = t_mkdtemp("ahead");
  assert_non_null(x->dir);
  kw_options o = {1 << 30, 4096, 0, 0};
  kw_writer *w = kw_open(x->dir, &o);
  assert_non_null(w);
  const int codecs[] = {KL_CODEC_NONE, KL_CODEC_GZIP, KL_CODEC_SNAPPY, KL_CODEC_LZ4,
                        KL_CODEC_ZSTD};
  char v[12][80];
  kl_rec_in r[12];
  for (int b = 0; b < 60; b++) {
    for (int i = 0; i < 12; i++) {
      int64_t off = kw_next_offset(w) + i;
      int n = snprintf(v[i], sizeof v[i], "value %lld of a batch read ahead, %lld", (long long)off,
                       (long long)(off * off));
      kl_rec_in one = {1000 + off, "k", 1, v[i], n, NULL, 0};
      r[i] = one;
    }
    kl_batch_spec spec = {0};
    spec.producer_id = -1;
    spec.producer_epoch = -1;
    spec.base_sequence = -1;
    spec.codec = codecs[b % 5];
    assert_int_equal(kw_append(w, &spec, r, 12), 0);
  }
  assert_int_equal(kw_close(w), 0);
  snprintf(x->log, sizeof x->log, "%s/%020d.log", x->dir, 0);
  x->bytes = t_read_file(x->log, &x->n);
  assert_non_null(x->bytes);
  for (size_t pos = 0; pos < x->n; x->nb++) {
    kl_err e = {0};
    assert_true(x->nb < 256);
    assert_int_equal(kl_batch_parse(x->bytes + pos, x->n - pos, &x->b[x->nb], &e), KL_OK);
    x->b[x->nb].position = (int64_t)pos;
    x->b[x->nb].bytes = x->bytes + pos;
    pos += (size_t)x->b[x->nb].size;
  }
  assert_int_equal(x->nb, 60);
  kl_err e = {0};
  assert_int_equal(kl_file_open(&x->f, NULL, x->log, &e), KL_OK);
}

static void fx_close(fx *x) {
  kl_file_close(&x->f);
  free(x->bytes);
  t_rmdir(x->dir);
  free(x->dir);
}

/* The records of it, rendered (offset, timestamp, key, value). */
static char *render(kl_records *it) {
  size_t cap = 1 << 16, len = 0;
  char *s = malloc(cap);
  kl_record r;
  kl_err e = {0};
  kl_rc rc;
  while ((rc = kl_records_next(it, &r, &e)) == KL_OK) {
    assert_true(len + 300 < cap);
    len += (size_t)snprintf(s + len, cap - len, "%lld %lld %.*s %.*s\n", (long long)r.offset,
                            (long long)r.timestamp, (int)r.key_len, (const char *)r.key,
                            (int)r.value_len, (const char *)r.value);
  }
  assert_int_equal(rc, KL_DONE);
  s[len] = 0;
  return s;
}

/* The records of batch i as the caller's own thread opens them. */
static char *direct(fx *x, int i, kl_stats *st) {
  kl_records it;
  kl_buf scratch = {0};
  kl_err e = {0};
  assert_int_equal(kl_records_open(&it, NULL, NULL, &x->b[i], &scratch, st, &e), KL_OK);
  char *s = render(&it);
  kl_buf_free(NULL, &scratch);
  return s;
}

/* Every batch, queued as room allows and taken in order: the records and
** the counters of the caller's own reads. */
static void test_taken_in_order(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  for (int threads = 1; threads <= 3; threads++) {
    kl_ahead *a;
    assert_int_equal(kl_ahead_new(NULL, threads, &a), KL_OK);
    kl_ahead_patience(a, -1); /* every batch queued is a worker's */
    kl_stats got = {0}, want = {0};
    int pushed = 0;
    for (int i = 0; i < x.nb; i++) {
      while (pushed < x.nb && kl_ahead_room(a)) assert_true(kl_ahead_push(a, &x, &x.f, &x.b[pushed++]));
      kl_records it;
      assert_int_equal(kl_ahead_take(a, &x, &x.b[i], &it, &got), KL_OK);
      assert_int_equal(it.b.position, x.b[i].position);
      char *s = render(&it), *d = direct(&x, i, &want);
      assert_string_equal(s, d);
      free(s);
      free(d);
    }
    assert_int_equal(kl_ahead_queued(a), 0);
    assert_int_equal(got.batches_decoded, want.batches_decoded);
    assert_int_equal(got.bytes_decompressed, want.bytes_decompressed);
    assert_int_equal(got.batches_ahead, x.nb);
    assert_int_equal(got.reads, x.nb);
    assert_int_equal(got.bytes_read, (uint64_t)x.n);
    assert_int_equal(got.crc_checks, 0); /* the worker's own checks are not the scan's */
    kl_ahead_free(a);
  }
  fx_close(&x);
}

/* At most KL_AHEAD_SLOTS are queued, the batch taken last counting until
** the next take (its memory is the caller's until then). */
static void test_room(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(NULL, 1, &a), KL_OK);
  kl_ahead_patience(a, -1); /* every batch queued is a worker's */
  int n = 0;
  while (kl_ahead_push(a, &x, &x.f, &x.b[n])) n++;
  assert_int_equal(n, KL_AHEAD_SLOTS);
  assert_false(kl_ahead_room(a));
  kl_records it;
  kl_stats st = {0};
  assert_int_equal(kl_ahead_take(a, &x, &x.b[0], &it, &st), KL_OK);
  assert_false(kl_ahead_room(a)); /* b[0]'s memory is in use */
  assert_int_equal(kl_ahead_take(a, &x, &x.b[1], &it, &st), KL_OK);
  assert_true(kl_ahead_room(a));
  assert_true(kl_ahead_push(a, &x, &x.f, &x.b[n]));
  assert_false(kl_ahead_room(a));
  kl_ahead_free(a);
  fx_close(&x);
}

/* A take of a batch that is not the oldest queued (the scan went
** elsewhere) drops the queue; so does a reset; both leave the ring
** usable. */
static void test_other_batch_drops(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(NULL, 2, &a), KL_OK);
  kl_ahead_patience(a, -1); /* every batch queued is a worker's */
  kl_records it;
  kl_stats st = {0};
  for (int i = 0; i < 4; i++) assert_true(kl_ahead_push(a, &x, &x.f, &x.b[i]));
  assert_int_equal(kl_ahead_take(a, &x, &x.b[2], &it, &st), KL_NOTFOUND);
  assert_int_equal(kl_ahead_queued(a), 0);
  assert_true(kl_ahead_push(a, &x, &x.f, &x.b[2]));
  assert_int_equal(kl_ahead_take(a, (void *)&st, &x.b[2], &it, &st), KL_NOTFOUND); /* owner */
  for (int i = 3; i < 9; i++) assert_true(kl_ahead_push(a, &x, &x.f, &x.b[i]));
  kl_ahead_reset(a);
  assert_int_equal(kl_ahead_queued(a), 0);
  assert_int_equal(kl_ahead_take(a, &x, &x.b[3], &it, &st), KL_NOTFOUND);
  assert_true(kl_ahead_push(a, &x, &x.f, &x.b[9]));
  assert_int_equal(kl_ahead_take(a, &x, &x.b[9], &it, &st), KL_OK);
  char *s = render(&it), *d = direct(&x, 9, &st);
  assert_string_equal(s, d);
  free(s);
  free(d);
  assert_int_equal(st.batches_ahead, 1);
  kl_ahead_free(a);
  fx_close(&x);
}

/* Whatever the worker cannot do is the caller's: a batch whose header or
** CRC is not what was queued (the file changed), a read past the end, a
** stream that does not decompress.  The take says so and counts nothing;
** the next batch is taken as usual. */
static void test_failures_left_to_caller(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(NULL, 1, &a), KL_OK);
  kl_ahead_patience(a, -1); /* every batch queued is a worker's */
  kl_batch wrong_crc = x.b[1], past_end = x.b[2];
  wrong_crc.crc ^= 1;
  past_end.position = (int64_t)x.n - 10;
  /* Batch 4 (zstd): its frame's magic broken, the CRC made right again. */
  assert_int_equal(x.b[4].codec, KL_CODEC_ZSTD);
  t_flip(x.log, x.b[4].position + KL_V2_HEADER, 0x77);
  t_fix_crc(x.log, x.b[4].position, x.b[4].size);
  kl_batch broken = x.b[4];
  kl_err e = {0};
  uint8_t *now = t_read_file(x.log, &x.n);
  assert_int_equal(kl_batch_parse(now + broken.position, (size_t)broken.size, &broken, &e), KL_OK);
  broken.position = x.b[4].position;
  free(now);
  const kl_batch *q[] = {&wrong_crc, &past_end, &broken, &x.b[5]};
  for (int i = 0; i < 4; i++) assert_true(kl_ahead_push(a, &x, &x.f, q[i]));
  kl_records it;
  kl_stats st = {0};
  for (int i = 0; i < 3; i++) assert_int_equal(kl_ahead_take(a, &x, q[i], &it, &st), KL_NOTFOUND);
  assert_int_equal(st.batches_decoded + st.batches_ahead + st.reads, 0);
  assert_int_equal(kl_ahead_take(a, &x, &x.b[5], &it, &st), KL_OK);
  assert_int_equal(st.batches_ahead, 1);
  kl_ahead_free(a);
  fx_close(&x);
}

/* Out of memory anywhere: the ring is not made, or the batch is the
** caller's; nothing leaks. */
static void test_out_of_memory(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  for (long fail = 1; fail < 40; fail++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, fail);
    kl_ahead *a;
    kl_rc rc = kl_ahead_new(env, 1, &a);
    if (rc) {
      assert_int_equal(rc, KL_NOMEM);
      assert_int_equal(fa.live, 0);
      continue;
    }
    kl_stats st = {0};
    for (int i = 0; i < 10; i++) {
      /* One at a time: the failing allocator counts without a lock. */
      assert_true(kl_ahead_push(a, &x, &x.f, &x.b[i]));
      kl_records it;
      rc = kl_ahead_take(a, &x, &x.b[i], &it, &st);
      assert_true(rc == KL_OK || rc == KL_NOTFOUND);
    }
    kl_ahead_free(a);
    assert_int_equal(fa.live, 0);
  }
  fx_close(&x);
}

/* One user at a time: a claim by another fails until the holder releases
** (a release by anyone else does nothing).  The workers start once, on the
** first push, and stay for the next claims; a release gives back every
** slot's buffers; a claim with another count of workers restarts them. */
static void test_claims(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  t_failalloc fa;
  const kl_env *env = t_failenv(&fa, 0);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(env, 1, &a), KL_OK);
  kl_ahead_patience(a, -1); /* every batch queued is a worker's */
  long bare = fa.live, parked = 0; /* the ring itself; and with a parked worker */
  int u1, u2;
  kl_stats st = {0};
  assert_null(kl_ahead_user(a));
  assert_true(kl_ahead_claim(a, &u1, 1, &st));
  assert_true(kl_ahead_claim(a, &u1, 1, &st)); /* already its own */
  assert_false(kl_ahead_claim(a, &u2, 1, &st));
  assert_ptr_equal(kl_ahead_user(a), &u1);
  for (int round = 0; round < 3; round++) {
    const void *u = round % 2 ? (const void *)&u2 : (const void *)&u1;
    if (round) assert_true(kl_ahead_claim(a, u, 1, &st));
    kl_records it;
    for (int i = 0; i < 6; i++) assert_true(kl_ahead_push(a, &x, &x.f, &x.b[i]));
    for (int i = 0; i < 6; i++) assert_int_equal(kl_ahead_take(a, &x, &x.b[i], &it, &st), KL_OK);
    assert_true(fa.live > bare); /* (no job left: the workers allocate nothing now) */
    for (int i = 6; i < 9; i++) assert_true(kl_ahead_push(a, &x, &x.f, &x.b[i]));
    assert_int_equal(kl_ahead_take(a, &x, &x.b[6], &it, &st), KL_OK);
    kl_ahead_release(a, round % 2 ? (const void *)&u1 : (const void *)&u2); /* not the holder */
    assert_ptr_equal(kl_ahead_user(a), u);
    assert_int_equal(kl_ahead_queued(a), 2);
    kl_ahead_release(a, u);
    assert_null(kl_ahead_user(a));
    assert_int_equal(kl_ahead_queued(a), 0);
    /* No batch kept between scans: only the worker's decoder state stays
    ** (its zstd context, made the first time the worker rather than the
    ** caller runs a zstd batch: which one runs it is the scheduler's
    ** choice, so the context may come in any round), not the slots'
    ** buffers (two a slot used). */
    if (fa.live > parked) parked = fa.live;
    assert_true(parked - bare <= 1);
    assert_true(parked - bare < KL_AHEAD_SLOTS);
  }
  assert_int_equal(st.threads_started, 1);
  assert_int_equal(st.batches_ahead, 21);
  /* Another count: the workers are joined, and started again when pushed to. */
  assert_true(kl_ahead_claim(a, &u1, 2, &st));
  assert_int_equal(kl_ahead_threads(a), 2);
  assert_int_equal(st.threads_started, 1);
  assert_true(kl_ahead_push(a, &x, &x.f, &x.b[0]));
  assert_int_equal(st.threads_started, 3);
  kl_ahead_release(a, &u1);
  kl_ahead_free(a);
  assert_int_equal(fa.live, 0);
  fx_close(&x);
}

/* A worker that is not running: reads off the test's own thread say when
** they start, and wait until the test lets them go on. */
static pthread_t main_thread;
static atomic_int slow_reads, slow_go;
static long slow_read(const kl_os *os, int fd, void *buf, size_t n, int64_t pos) {
  (void)os;
  if (!pthread_equal(pthread_self(), main_thread)) {
    atomic_fetch_add(&slow_reads, 1);
    while (!atomic_load(&slow_go)) usleep(1000);
  }
  return kl_os_posix()->xRead(kl_os_posix(), fd, buf, n, pos);
}

/* A take never idles while a job is queued that no worker has started: it
** runs it itself, into its slot (counted ahead, as a worker's).  A worker
** on the batch a take wants that does not finish within
** KL_AHEAD_PATIENCE_US is not running: the batch is taken back (the
** caller opens it), and its slot stays the worker's until it is done. */
static void test_caller_runs_and_reclaims(void **state) {
  (void)state;
  fx x;
  fx_open(&x);
  main_thread = pthread_self();
  atomic_store(&slow_reads, 0);
  atomic_store(&slow_go, 0);
  kl_os os = *kl_os_posix();
  os.xRead = slow_read;
  kl_env env = {NULL, NULL, &os};
  kl_file f;
  kl_err e = {0};
  assert_int_equal(kl_file_open(&f, &env, x.log, &e), KL_OK);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(NULL, 1, &a), KL_OK);
  kl_stats st = {0};
  kl_records it;
  assert_true(kl_ahead_push(a, &x, &f, &x.b[0]));
  while (!atomic_load(&slow_reads)) usleep(100); /* the worker is on batch 0 */
  for (int i = 1; i < KL_AHEAD_SLOTS; i++) assert_true(kl_ahead_push(a, &x, &f, &x.b[i]));
  assert_false(kl_ahead_room(a));
  /* Batches 1.. are run by the take of batch 0 while it waits; batch 0 is
  ** taken back. */
  assert_int_equal(kl_ahead_take(a, &x, &x.b[0], &it, &st), KL_NOTFOUND);
  assert_int_equal(st.batches_reclaimed, 1);
  assert_int_equal(kl_ahead_queued(a), KL_AHEAD_SLOTS - 1);
  assert_false(kl_ahead_room(a)); /* batch 0's slot is still the worker's */
  atomic_store(&slow_go, 1);
  for (int i = 1; i < KL_AHEAD_SLOTS; i++) {
    assert_int_equal(kl_ahead_take(a, &x, &x.b[i], &it, &st), KL_OK);
    char *got = render(&it), *want = direct(&x, i, &(kl_stats){0});
    assert_string_equal(got, want);
    free(got);
    free(want);
  }
  assert_int_equal(st.batches_ahead, KL_AHEAD_SLOTS - 1);
  assert_int_equal(atomic_load(&slow_reads), 1); /* the worker read batch 0 alone */
  kl_ahead_reset(a); /* waits for the worker on batch 0 */
  assert_true(kl_ahead_room(a));
  kl_ahead_free(a);
  kl_file_close(&f);
  fx_close(&x);
}

/* The table a cursor reads /proc/loadavg through: another file's bytes. */
static int fake_open(const kl_os *os, const char *path, int flags, int mode) {
  if (!strcmp(path, "/proc/loadavg")) path = os->ud;
  return kl_os_posix()->xOpen(kl_os_posix(), path, flags, mode);
}

/* A scan whose read-ahead is the default (if_idle) claims it only when a
** core is idle as it proves long, as /proc/loadavg's count of threads
** running says; with threads given it claims it whatever the count.  The
** rows are the same. */
static void test_cursor_if_idle(void **state) {
  (void)state;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) skip(); /* no core is ever idle */
  char *dir = kw_make_log("ahead-idle", 200, 60, INT64_C(1) << 30, 4096, 190, 1000, 1);
  char *fake = t_mkdtemp("loadavg");
  char path[4200];
  snprintf(path, sizeof path, "%s/loadavg", fake);
  kl_os os = *kl_os_posix();
  os.ud = path;
  os.xOpen = fake_open;
  kl_env env = {NULL, NULL, &os};
  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(&env, dir, &log, &err), KL_OK);
  kl_ahead *a;
  assert_int_equal(kl_ahead_new(&env, 1, &a), KL_OK);
  static const struct {
    const char *loadavg;
    int if_idle, ahead;
  } c[] = {{"3.00 2.00 1.00 64/300 12345\n", 1, 0}, {"0.10 0.20 0.30 1/300 12345\n", 1, 1},
           {"3.00 2.00 1.00 64/300 12345\n", 0, 1}, {"", 1, 0}};
  kl_stats st = {0};
  kl_cursor *cur;
  assert_int_equal(kl_cursor_new(log, &st, KL_ON_CORRUPT_ERROR, &cur), KL_OK);
  kl_bounds all = kl_bounds_all();
  int64_t want = -1;
  for (size_t k = 0; k <= sizeof c / sizeof *c; k++) { /* the first scan learns the facts */
    size_t i = k ? k - 1 : 0;
    assert_int_equal(t_write_file(path, c[i].loadavg, strlen(c[i].loadavg)), 0);
    kl_cursor_set_ahead(cur, a, k ? 1 : 0, c[i].if_idle);
    memset(&st, 0, sizeof st);
    assert_int_equal(kl_cursor_start(cur, &all, &err), KL_OK);
    int64_t sum = 0;
    kl_rc rc;
    while ((rc = kl_cursor_next(cur, &err)) == KL_OK) {
      assert_int_equal(kl_cursor_load(cur, &err), KL_OK);
      sum += kl_cursor_record(cur)->offset + kl_cursor_record(cur)->value_len;
    }
    assert_int_equal(rc, KL_DONE);
    if (!k) want = sum;
    assert_true(sum == want);
    if (k) assert_int_equal(st.batches_ahead > 0, c[i].ahead);
  }
  kl_cursor_free(cur);
  kl_ahead_free(a);
  kl_log_close(log);
  t_rmdir(fake);
  t_rmdir(dir);
  free(fake);
  free(dir);
}

/* A process held to one CPU (taskset, a cpuset) has no core to spare,
** however idle the machine: kl_os_core_idle says no, and kl_os_cpus
** counts the CPUs it may run on (a table's threads stay below them). */
static void test_core_idle_follows_affinity(void **state) {
  (void)state;
  cpu_set_t was;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || sched_getaffinity(0, sizeof was, &was) != 0 ||
      CPU_COUNT(&was) < 2) {
    skip();
  }
  char *fake = t_mkdtemp("loadavg");
  char path[4200];
  snprintf(path, sizeof path, "%s/loadavg", fake);
  static const char idle[] = "0.10 0.20 0.30 1/300 12345\n";
  assert_int_equal(t_write_file(path, idle, strlen(idle)), 0);
  kl_os os = *kl_os_posix();
  os.ud = path;
  os.xOpen = fake_open;
  kl_env env = {NULL, NULL, &os};
  int free_all = kl_os_core_idle(&env);
  long cpus_all = kl_os_cpus();
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int i = 0; i < CPU_SETSIZE; i++) {
    if (CPU_ISSET(i, &was)) {
      CPU_SET(i, &one);
      break;
    }
  }
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  int free_one = kl_os_core_idle(&env);
  long cpus_one = kl_os_cpus();
  assert_int_equal(sched_setaffinity(0, sizeof was, &was), 0);
  assert_int_equal(free_all, 1);
  assert_int_equal(cpus_all, CPU_COUNT(&was));
  assert_int_equal(free_one, 0);
  assert_int_equal(cpus_one, 1);
  t_rmdir(fake);
  free(fake);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_taken_in_order),
      cmocka_unit_test(test_room),
      cmocka_unit_test(test_other_batch_drops),
      cmocka_unit_test(test_failures_left_to_caller),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_claims),
      cmocka_unit_test(test_caller_runs_and_reclaims),
      cmocka_unit_test(test_cursor_if_idle),
      cmocka_unit_test(test_core_idle_follows_affinity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
