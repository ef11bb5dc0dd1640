/*
** test_segment.c - a segment's files and facts (segment.c): the paths of
** its three files, opening on first use, the bound on open segments shared
** by a log and the pins that keep a reader's segment open, a .log replaced
** or resized since it was first seen, indexes opened lazily, the cache of
** verified batches, the holes of a salvage map, and reads of a file that
** shrinks under an open descriptor.
*/
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "faultos.h"
#include "kwriter.h"
#include "segment.h"

static void seg_path(char *buf, size_t n, const char *dir, int64_t base, const char *suffix) {
  snprintf(buf, n, "%s/%020lld%s", dir, (long long)base, suffix);
}

/* Segment 0 of dir in set, opened (path is kept: the segment copies it). */
static void open_segment0(kl_segment *s, kl_segset *set, const char *dir, char *path, size_t n) {
  seg_path(path, n, dir, 0, ".log");
  kl_segset_init(set, 4);
  assert_int_equal(kl_segment_init(s, NULL, set, 0, path), KL_OK);
  kl_err err = {0};
  assert_int_equal(kl_segment_open(s, NULL, &err), KL_OK);
}

static void test_paths(void **state) {
  kl_segset set;
  kl_segset_init(&set, 4);
  kl_segment s;
  assert_int_equal(kl_segment_init(&s, NULL, &set, 1234, "/d/p-0/00000000000000001234.log"), KL_OK);
  assert_string_equal(s.log_path, "/d/p-0/00000000000000001234.log");
  assert_string_equal(s.index_path, "/d/p-0/00000000000000001234.index");
  assert_string_equal(s.timeindex_path, "/d/p-0/00000000000000001234.timeindex");
  assert_string_equal(s.name, "00000000000000001234.log");
  assert_int_equal(s.base, 1234);
  assert_int_equal(s.next_base, INT64_MAX);
  assert_false(s.opened);
  kl_segment_free(&s);
  /* A path too short to end in .log is a misuse, not a crash. */
  assert_int_equal(kl_segment_init(&s, NULL, &set, 0, "x"), KL_MISUSE);
  /* The same paths in one block with the segment. */
  kl_segment *n;
  assert_int_equal(kl_segment_new(NULL, &set, 1234, "/d/p-0/00000000000000001234.log", &n), KL_OK);
  assert_ptr_equal(n->log_path, (char *)(n + 1));
  assert_string_equal(n->log_path, "/d/p-0/00000000000000001234.log");
  assert_string_equal(n->index_path, "/d/p-0/00000000000000001234.index");
  assert_string_equal(n->timeindex_path, "/d/p-0/00000000000000001234.timeindex");
  assert_string_equal(n->name, "00000000000000001234.log");
  assert_int_equal(n->base, 1234);
  assert_int_equal(n->uid, set.uids);
  kl_segment_free(n);
  free(n);
  assert_int_equal(kl_segment_new(NULL, &set, 0, "x", &n), KL_MISUSE);
  assert_null(n);
}

/* Opening is lazy, counted, and remembered while open. */
static void test_open_close(void **state) {
  char *dir = kw_make_log_single("seg", 20, 1 << 20);
  char path[4200];
  kl_segset set;
  kl_segment s;
  open_segment0(&s, &set, dir, path, sizeof path);
  kl_stats st = {0};
  kl_err err = {0};
  assert_int_equal(kl_segment_open(&s, &st, &err), KL_OK); /* open already: not counted */
  assert_int_equal(st.segments_opened, 0);
  assert_true(s.opened && s.seen && s.size > 0);
  assert_int_equal(set.open, 1);
  /* Indexes are opened on first use only. */
  assert_false(s.oidx_open || s.tidx_open);
  kl_index *ix;
  assert_int_equal(kl_segment_index(&s, KL_INDEX_OFFSET, &ix, &err), KL_OK);
  assert_true(s.oidx_open && ix == &s.oidx && ix->n > 0);
  kl_segment_close(&s);
  assert_false(s.opened);
  /* A small index read whole keeps its entries, not its file. */
  assert_true(s.oidx_open && s.oidx.file.fd < 0 && s.oidx.n == ix->n);
  assert_int_equal(set.open, 0);
  assert_true(s.seen); /* what is known stays */
  /* The same file opens again, counted. */
  assert_int_equal(kl_segment_open(&s, &st, &err), KL_OK);
  assert_int_equal(st.segments_opened, 1);
  kl_segment_close(&s);

  /* A .log resized since it was first seen is not the file the facts
  ** were learnt from. */
  assert_int_equal(truncate(path, s.size - 10), 0);
  kl_err_clear(&err);
  assert_int_equal(kl_segment_open(&s, &st, &err), KL_IO);
  assert_non_null(strstr(err.msg, "changed"));
  assert_false(s.opened);
  assert_int_equal(set.open, 0);
  kl_segment_free(&s);

  /* A .log that is gone says so. */
  assert_int_equal(kl_segment_init(&s, NULL, &set, 0, path), KL_OK);
  assert_int_equal(unlink(path), 0);
  kl_err_clear(&err);
  assert_int_equal(kl_segment_open(&s, &st, &err), KL_IO);
  assert_non_null(strstr(err.msg, "No such file or directory"));
  kl_segment_free(&s);
  t_rmdir(dir);
  free(dir);
}

/* The least recently used unpinned segment is closed beyond the bound;
** pinned ones stay open (a reader is using them). */
static void test_open_bound_and_pins(void **state) {
  char *dir = kw_make_log_single("seg", 400, 1024);
  kl_segset set;
  kl_segset_init(&set, 3);
  kl_segment s[6];
  char path[4200];
  /* kwriter rolls at 1024 bytes: find the bases from the files. */
  int n = 0;
  for (int64_t b = 0; n < 6 && b < 400; b++) {
    seg_path(path, sizeof path, dir, b, ".log");
    if (access(path, F_OK) != 0) continue;
    assert_int_equal(kl_segment_init(&s[n], NULL, &set, b, path), KL_OK);
    n++;
  }
  assert_int_equal(n, 6);
  kl_err err = {0};
  kl_stats st = {0};
  for (int i = 0; i < 3; i++) assert_int_equal(kl_segment_open(&s[i], &st, &err), KL_OK);
  assert_int_equal(set.open, 3);
  kl_segment_pin(&s[0]);
  /* s[0] is the least recently used but pinned: s[1] goes. */
  assert_int_equal(kl_segment_open(&s[3], &st, &err), KL_OK);
  assert_int_equal(set.open, 3);
  assert_true(s[0].opened);
  assert_false(s[1].opened);
  assert_true(s[2].opened && s[3].opened);
  /* Using s[2] makes it the most recent: the next open closes the least
  ** recently used unpinned one, s[3]. */
  assert_int_equal(kl_segment_open(&s[2], &st, &err), KL_OK);
  assert_int_equal(kl_segment_open(&s[4], &st, &err), KL_OK);
  assert_false(s[3].opened);
  assert_true(s[0].opened && s[2].opened && s[4].opened);
  /* With everything pinned, the bound gives way rather than a reader. */
  kl_segment_pin(&s[2]);
  kl_segment_pin(&s[4]);
  assert_int_equal(kl_segment_open(&s[5], &st, &err), KL_OK);
  assert_int_equal(set.open, 4);
  kl_segment_unpin(&s[0]);
  kl_segment_unpin(&s[2]);
  kl_segment_unpin(&s[4]);
  kl_segment_unpin(&s[4]); /* more unpins than pins: harmless */
  assert_int_equal(s[4].pins, 0);
  assert_int_equal(st.segments_opened, 6);
  for (int i = 0; i < 6; i++) kl_segment_free(&s[i]);
  assert_int_equal(set.open, 0);
  assert_null(set.mru);
  assert_null(set.lru);
  t_rmdir(dir);
  free(dir);
}

/* The bound on descriptors follows the soft descriptor limit: a quarter of
** it, within three for each of [8, KL_SEGSET_MAX_BOUND] segments; unknown,
** three for each of 64. */
static void test_bound_from_nofile(void **state) {
  assert_int_equal(kl_segset_bound(-1), 3 * KL_SEGSET_MAX_OPEN);
  assert_int_equal(kl_segset_bound(1024), 256);
  assert_int_equal(kl_segset_bound(20000), 5000);
  assert_int_equal(kl_segset_bound(10), 24);
  assert_int_equal(kl_segset_bound(1LL << 40), 3 * KL_SEGSET_MAX_BOUND);
  /* A bound given in segments is three descriptors for each. */
  kl_segset set;
  kl_segset_init(&set, 5);
  assert_int_equal(set.max_open, 5);
  assert_int_equal(set.max_fds, 15);
  assert_int_equal(kl_segset_room(&set), 5);
  kl_segset_init(&set, 0);
  assert_int_equal(set.max_open, KL_SEGSET_MAX_BOUND);
  assert_int_equal(set.max_fds, kl_segset_default_bound());
  set.max_fds = 30;
  assert_int_equal(kl_segset_room(&set), 10);
  struct rlimit rl;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur != RLIM_INFINITY) {
    assert_int_equal(kl_segset_default_bound(), kl_segset_bound((long long)rl.rlim_cur));
  }
}

/* Out of descriptors (EMFILE), the least recently used segment no reader
** holds is closed and the open tried again, and the set stays below what
** was open; with every other segment held, the error names the file. */
static void test_open_out_of_descriptors(void **state) {
  char *dir = kw_make_log_single("seg", 400, 1024);
  t_faultos f;
  t_faultos_init(&f);
  kl_segset set;
  kl_segset_init(&set, 16);
  kl_segment s[5];
  char path[4200];
  int n = 0;
  for (int64_t b = 0; n < 5 && b < 400; b++) {
    seg_path(path, sizeof path, dir, b, ".log");
    if (access(path, F_OK) != 0) continue;
    assert_int_equal(kl_segment_init(&s[n], &f.env, &set, b, path), KL_OK);
    n++;
  }
  assert_int_equal(n, 5);
  kl_err err = {0};
  for (int i = 0; i < 3; i++) assert_int_equal(kl_segment_open(&s[i], NULL, &err), KL_OK);
  f.kinds = T_OS_OPEN;
  f.path_has = s[3].name;
  f.fail_errno = EMFILE;
  f.calls = 0;
  f.fail_at = 1;
  assert_int_equal(kl_segment_open(&s[3], NULL, &err), KL_OK);
  assert_int_equal(f.failed, 1);
  assert_false(s[0].opened);
  assert_true(s[1].opened && s[2].opened && s[3].opened);
  assert_int_equal(set.open, 3);
  assert_int_equal(set.max_open, 3);
  assert_int_equal(set.fds, 3);
  assert_int_equal(set.max_fds, 3);
  /* Everything else held: no descriptor to give back. */
  for (int i = 0; i < 4; i++) kl_segment_pin(&s[i]);
  f.path_has = s[4].name;
  f.calls = 0;
  f.persist = 1;
  kl_err_clear(&err);
  assert_int_equal(kl_segment_open(&s[4], NULL, &err), KL_CANTOPEN);
  assert_non_null(strstr(err.msg, s[4].name));
  assert_non_null(strstr(err.msg, "Too many open files"));
  assert_false(s[4].opened);
  for (int i = 0; i < 5; i++) kl_segment_free(&s[i]);
  t_faultos_free(&f);
  t_rmdir(dir);
  free(dir);
}

/* Descriptors the faultos table has open. */
static int held(const t_faultos *f) {
  int n = 0;
  for (int i = 0; i < T_OS_MAX_FD; i++) n += f->fdpath[i] != NULL;
  return n;
}

/* The bound counts the descriptors held, not three a segment: segments
** whose small indexes were read whole hold their .log alone and stay open;
** an index that keeps its file counts one more, and the least recently
** used segment goes for it; out of descriptors, an index open gives one
** back as a .log open does. */
static void test_bound_counts_descriptors(void **state) {
  char *dir = kw_make_log_single("seg", 400, 1024);
  t_faultos f;
  t_faultos_init(&f);
  kl_segset set;
  kl_segset_init(&set, 0);
  set.max_fds = 6;
  kl_segment s[8];
  char path[4200];
  int n = 0;
  for (int64_t b = 0; n < 8 && b < 400; b++) {
    seg_path(path, sizeof path, dir, b, ".log");
    if (access(path, F_OK) != 0) continue;
    assert_int_equal(kl_segment_init(&s[n], &f.env, &set, b, path), KL_OK);
    n++;
  }
  assert_int_equal(n, 8);
  kl_err err = {0};
  kl_index *ix;
  for (int i = 0; i < 6; i++) {
    assert_int_equal(kl_segment_open(&s[i], NULL, &err), KL_OK);
    assert_int_equal(kl_segment_index(&s[i], KL_INDEX_OFFSET, &ix, &err), KL_OK);
    assert_int_equal(kl_segment_index(&s[i], KL_INDEX_TIME, &ix, &err), KL_OK);
    assert_true(s[i].oidx_open && s[i].oidx.file.fd < 0 && s[i].tidx.file.fd < 0);
  }
  /* At three a segment, two would be open. */
  assert_int_equal(set.open, 6);
  assert_int_equal(set.fds, 6);
  assert_int_equal(held(&f), 6);
  assert_int_equal(kl_segment_open(&s[6], NULL, &err), KL_OK);
  assert_false(s[0].opened);
  assert_int_equal(set.open, 6);
  assert_int_equal(set.fds, 6);
  assert_int_equal(held(&f), 6);

  /* An offset index of more pieces than are kept stays open: 2,600
  ** entries (six pieces), every one inside the .log. */
  char ipath[4200];
  snprintf(ipath, sizeof ipath, "%.*s.index", (int)(strlen(s[7].log_path) - 4), s[7].log_path);
  FILE *fp = fopen(ipath, "wb");
  assert_non_null(fp);
  for (uint32_t i = 0; i < 2600; i++) {
    uint8_t e[KL_INDEX_OFFSET];
    kl_index_put_offset(e, s[7].base, s[7].base + i, 0);
    assert_int_equal(fwrite(e, sizeof e, 1, fp), 1);
  }
  assert_int_equal(fclose(fp), 0);
  assert_int_equal(kl_segment_open(&s[7], NULL, &err), KL_OK);
  assert_false(s[1].opened);
  /* Its open finds the process out of descriptors once: s[2] goes, and the
  ** bound comes down to what is held with it. */
  f.kinds = T_OS_OPEN;
  f.path_has = strrchr(ipath, '/') + 1;
  f.fail_errno = EMFILE;
  f.calls = 0;
  f.fail_at = 1;
  assert_int_equal(kl_segment_index(&s[7], KL_INDEX_OFFSET, &ix, &err), KL_OK);
  assert_int_equal(f.failed, 1);
  assert_int_equal(ix->n, 2600);
  assert_true(ix->file.fd >= 0);
  assert_false(s[2].opened);
  assert_int_equal(set.max_fds, 6);
  assert_int_equal(set.fds, 6);
  assert_int_equal(set.open, 5);
  assert_int_equal(held(&f), 6);
  /* Closed, it lets its entries go with its file. */
  kl_segment_close(&s[7]);
  assert_false(s[7].oidx_open);
  assert_int_equal(set.fds, 4);
  assert_int_equal(held(&f), 4);
  for (int i = 0; i < 8; i++) kl_segment_free(&s[i]);
  assert_int_equal(set.fds, 0);
  assert_int_equal(set.open, 0);
  assert_int_equal(held(&f), 0);
  t_faultos_free(&f);
  t_rmdir(dir);
  free(dir);
}

/* Missing index files are empty indexes (Kafka creates them lazily). */
static void test_missing_indexes(void **state) {
  char *dir = kw_make_log_single("seg", 20, 1 << 20);
  char path[4200];
  seg_path(path, sizeof path, dir, 0, ".index");
  assert_int_equal(unlink(path), 0);
  seg_path(path, sizeof path, dir, 0, ".timeindex");
  assert_int_equal(unlink(path), 0);
  seg_path(path, sizeof path, dir, 0, ".log");
  kl_segset set;
  kl_segset_init(&set, 0); /* 0: the default bound */
  assert_int_equal(set.max_fds, kl_segset_default_bound());
  kl_segment s;
  assert_int_equal(kl_segment_init(&s, NULL, &set, 0, path), KL_OK);
  kl_err err = {0};
  assert_int_equal(kl_segment_open(&s, NULL, &err), KL_OK);
  kl_index *ix;
  assert_int_equal(kl_segment_index(&s, KL_INDEX_OFFSET, &ix, &err), KL_OK);
  assert_int_equal(ix->file_len, -1);
  assert_int_equal(ix->n, 0);
  assert_int_equal(kl_segment_index(&s, KL_INDEX_TIME, &ix, &err), KL_OK);
  assert_int_equal(ix->file_len, -1);
  kl_segment_free(&s);
  t_rmdir(dir);
  free(dir);
}

/* A segment of base 0 that no test opens, in a set of its own. */
static void mem_segment(kl_segset *set, kl_segment *s) {
  kl_segset_init(set, 4);
  assert_int_equal(kl_segment_init(s, NULL, set, 0, "/x/00000000000000000000.log"), KL_OK);
}

/* A v2-like batch of 100 bytes whose first offset is known: the facts
** tests set its position, offsets and times. */
static kl_batch batch100(void) {
  kl_batch b;
  memset(&b, 0, sizeof b);
  b.size = 100;
  b.first_known = 1;
  return b;
}

/* The set of verified batches: every one is remembered (by position and
** size) until the set reaches its bound, then it starts again; growing it
** fails quietly when memory does. */
static void test_verified_cache(void **state) {
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  assert_false(kl_segment_verified(&s, 0, 100));
  for (int i = 0; i < 5000; i++) kl_segment_set_verified(&s, i * 100, 100);
  for (int i = 0; i < 5000; i++) assert_true(kl_segment_verified(&s, i * 100, 100));
  assert_false(kl_segment_verified(&s, 0, 99)); /* same place, other size */
  assert_false(kl_segment_verified(&s, 50, 100));
  kl_segment_set_verified(&s, 0, 99);          /* the batch there changed size */
  assert_true(kl_segment_verified(&s, 0, 99));
  for (int i = 5000; i < 70000; i++) kl_segment_set_verified(&s, i * 100, 100);
  assert_true(s.vn <= 65536 / 2);              /* bounded: it started again */
  assert_true(kl_segment_verified(&s, 69999 * 100, 100));
  kl_segment_free(&s);
  t_failalloc fa;
  assert_int_equal(kl_segment_init(&s, t_failenv(&fa, 2), &set, 0, "/x/00000000000000000000.log"),
                   KL_OK);
  kl_segment_set_verified(&s, 0, 100);         /* no memory: not remembered */
  assert_false(kl_segment_verified(&s, 0, 100));
  kl_segment_free(&s);
}

/* Facts are kept sorted by position whatever the order they are learnt in,
** learning one twice returns the first, and the log's budget bounds them. */
static void test_facts(void **state) {
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  kl_batch b;
  memset(&b, 0, sizeof b);
  int order[] = {5, 1, 9, 3, 7, 0, 2, 8, 4, 6};
  for (int i = 0; i < 10; i++) {
    b.position = order[i] * 100;
    b.size = 100;
    b.base_offset = order[i];
    kl_fact *f = kl_segment_learn(&s, &b);
    assert_non_null(f);
    assert_int_equal(f->min_ts, INT64_MAX);
    f->decoded = 1;
  }
  assert_int_equal(s.nfacts, 10);
  assert_int_equal(set.facts, 10);
  for (int i = 0; i < 10; i++) {
    assert_int_equal(s.facts[i].b.position, i * 100);
    assert_int_equal(kl_segment_fact(&s, i * 100)->b.base_offset, i);
  }
  assert_null(kl_segment_fact(&s, 150));
  assert_int_equal(kl_segment_fact_from(&s, 150), 2);
  assert_int_equal(kl_segment_fact_from(&s, 5000), 10);
  b.position = 300;
  assert_true(kl_segment_learn(&s, &b)->decoded); /* the one already known */
  assert_int_equal(s.nfacts, 10);
  set.facts = KL_SEGSET_MAX_FACTS;               /* the log's budget is spent */
  b.position = 1000;
  assert_null(kl_segment_learn(&s, &b));
  set.facts = 10;
  kl_segment_free(&s);
  assert_int_equal(set.facts, 0);
}

/* The search for a position finds the first fact at or after it, as a
** linear count does, for every number of facts (the halving is branch-free
** and its edges are the counts) and positions before, on, between and past
** them; a failed allocation leaves the facts as they were. */
static void test_facts_search(void **state) {
  (void)state;
  kl_segset set;
  kl_segment s;
  for (int n = 0; n <= 70; n++) {
    mem_segment(&set, &s);
    kl_batch b = batch100();
    for (int i = 0; i < n; i++) { /* the even slots going up, the odd coming down */
      int slot = 2 * i < n ? 2 * i : 2 * (n - 1 - i) + 1;
      b.position = (int64_t)slot * 100;
      assert_non_null(kl_segment_learn(&s, &b));
    }
    assert_int_equal(s.nfacts, (size_t)n);
    for (int64_t pos = -50; pos <= (int64_t)n * 100 + 50; pos += 50) {
      size_t want = 0;
      while (want < s.nfacts && s.facts[want].b.position < pos) want++;
      assert_int_equal(kl_segment_fact_from(&s, pos), want);
      kl_fact *f = kl_segment_fact(&s, pos);
      if (pos >= 0 && pos % 100 == 0 && pos < (int64_t)n * 100) {
        assert_non_null(f);
        assert_int_equal(f->b.position, pos);
      } else {
        assert_null(f);
      }
    }
    kl_segment_free(&s);
  }
  for (int k = 1; k <= 2; k++) { /* the positions' array, then the facts' */
    t_failalloc fa;
    kl_segset_init(&set, 4);
    assert_int_equal(kl_segment_init(&s, t_failenv(&fa, 0), &set, 0,
                                     "/x/00000000000000000000.log"), KL_OK);
    kl_batch b = batch100();
    for (int i = 0; i < 16; i++) {
      b.position = (int64_t)(15 - i) * 100;
      assert_non_null(kl_segment_learn(&s, &b));
    }
    fa.fail_at = fa.calls + k;
    b.position = 5000; /* the 17th grows both arrays: one allocation fails */
    assert_null(kl_segment_learn(&s, &b));
    assert_int_equal(s.nfacts, 16);
    for (int i = 0; i < 16; i++) assert_int_equal(kl_segment_fact(&s, i * 100)->b.position, i * 100);
    assert_null(kl_segment_fact(&s, 5000));
    kl_segment_free(&s);
  }
}

/* Kept timestamps take the form of the fewest bytes that hold them: 1 or 2
** bytes above the smallest, 2 off the line by the mean step, 4 above the
** smallest, else 8; ends 2 or 4 by the last.  Each reads back as given,
** each budget counts the bytes taken, ends come later to timestamps kept
** without, and freeing gives all of them back. */
static void test_kept_widths(void **state) {
  (void)state;
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  enum { N = 5 };
  static const struct {
    int64_t ts[N];
    uint32_t rend[N];
    int with_ends, form, rw;
  } c[] = {
      {{1700000000000, 1700000000001, 1699999999990, 1700000000245, 1700000000000},
       {70, 140, 200, 300, 400}, 1, KL_TSF_U8, 2},
      {{1700000000000, 1700000000001, 1699999999990, 1700000065525, 1700000000000},
       {70, 140, 200, 65535, 65535}, 1, KL_TSF_U16, 2},
      /* A slow topic's batch: a record every 1,440 s or so, +-2 s. */
      {{1700000000000, 1700001441999, 1700002878001, 1700004321000, 1700005760000},
       {70, 140, 200, 300, 65536}, 1, KL_TSF_LINE, 4},
      /* 32,767 ms off the line and back: still on it. */
      {{1700000000000, 1700000050000, 1700000132767, 1700000150000, 1700000200000},
       {0}, 0, KL_TSF_LINE, 0},
      /* A millisecond further, or falling: not. */
      {{1700000000000, 1700000050000, 1700000132768, 1700000150000, 1700000200000},
       {0}, 0, KL_TSF_U32, 0},
      {{1700000200000, 1700000150000, 1700000100000, 1700000050000, 1700000000000},
       {0}, 0, KL_TSF_U32, 0},
      {{1700000000000, 1699999999990, 1700000065526, 1700000000000, 1700000000000},
       {70, 140, 200, 300, 65536}, 1, KL_TSF_U32, 4},
      {{5, -1, 4294967294, 7, 0}, {0}, 0, KL_TSF_U32, 0},
      {{5, -1, 4294967295, 7, 0}, {0}, 0, KL_TSF_RAW, 0},
      {{INT64_MAX, INT64_MIN, 0, -1, 1}, {1, 2, 3, 4, 5}, 1, KL_TSF_RAW, 2},
  };
  size_t bytes = 0, ends = 0;
  kl_batch b;
  memset(&b, 0, sizeof b);
  for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
    b.position = (int64_t)k * 1000;
    b.size = 1000;
    b.record_count = N;
    kl_fact *f = kl_segment_learn(&s, &b);
    assert_non_null(f);
    int64_t mn = INT64_MAX;
    for (int i = 0; i < N; i++) mn = c[k].ts[i] < mn ? c[k].ts[i] : mn;
    kl_segment_decoded(&s, f, mn);
    kl_segment_learn_records(&s, f, c[k].ts, c[k].with_ends ? c[k].rend : NULL, N);
    assert_non_null(f->ts);
    assert_int_equal(f->ts_form, c[k].form);
    for (int i = 0; i < N; i++) assert_true(kl_fact_ts(f, i) == c[k].ts[i]);
    if (c[k].with_ends) {
      assert_int_equal(f->rend_w, c[k].rw);
      for (int i = 0; i < N; i++) assert_int_equal(kl_fact_rend(f, i), c[k].rend[i]);
    } else {
      assert_null(f->rend);
    }
    bytes += (size_t)N * kl_ts_form_bytes(c[k].form);
    ends += (size_t)N * (size_t)(c[k].with_ends ? c[k].rw : 0);
    assert_int_equal(set.ts_bytes, bytes);
    assert_int_equal(set.end_bytes, ends);
  }
  /* Ends added to timestamps kept without: once, and counted. */
  static const uint32_t later[N] = {61, 90, 120, 150, 70000};
  kl_fact *f = &s.facts[3];
  assert_null(f->rend);
  kl_segment_learn_ends(&s, f, later, N);
  assert_non_null(f->rend);
  assert_int_equal(f->rend_w, 4);
  for (int i = 0; i < N; i++) assert_int_equal(kl_fact_rend(f, i), later[i]);
  ends += (size_t)N * 4;
  assert_int_equal(set.end_bytes, ends);
  kl_segment_learn_ends(&s, f, c[0].rend, N); /* it has them */
  assert_int_equal(kl_fact_rend(f, N - 1), 70000);
  assert_int_equal(set.end_bytes, ends);
  /* Over either budget: nothing of it kept. */
  set.max_ts_bytes = set.ts_bytes + N - 1;
  set.max_end_bytes = set.end_bytes + 2 * N - 1;
  f = &s.facts[4];
  kl_segment_learn_ends(&s, f, c[0].rend, N);
  assert_null(f->rend);
  b.position = 99000;
  f = kl_segment_learn(&s, &b);
  kl_segment_decoded(&s, f, c[0].ts[2]);
  kl_segment_learn_records(&s, f, c[0].ts, NULL, N);
  assert_null(f->ts);
  kl_segment_learn_ends(&s, f, c[0].rend, N); /* no timestamps to add them to */
  assert_null(f->rend);
  assert_int_equal(set.ts_bytes, bytes);
  /* Timestamps within their budget, ends over theirs: the timestamps. */
  set.max_ts_bytes = set.ts_bytes + N;
  kl_segment_learn_records(&s, f, c[0].ts, c[0].rend, N);
  assert_non_null(f->ts);
  assert_null(f->rend);
  assert_int_equal(set.ts_bytes, bytes + N);
  assert_int_equal(set.end_bytes, ends);
  kl_segment_free(&s);
  assert_int_equal(set.ts_bytes, 0);
  assert_int_equal(set.end_bytes, 0);
}

/* Whether every data record from a fact on lies above a time is known once
** the facts cover the segment and each data batch has decoded: the
** smallest timestamp from each fact to the end, control batches aside. */
static void test_facts_rest_above(void **state) {
  (void)state;
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  kl_batch b = batch100();
  b.record_count = 10;
  static const int64_t mins[] = {10, 30, 20, 0, 50, 40}; /* 3: a control batch */
  int64_t prev = -1;
  for (int i = 0; i < 6; i++) {
    b.position = i * 100;
    b.base_offset = i * 10;
    b.last_offset = i * 10 + 9;
    b.max_timestamp = mins[i] + 5;
    b.is_control = i == 3;
    kl_segment_learn_walked(&s, prev, &b);
    prev = b.position;
  }
  kl_segment_fact(&s, 500)->ends = 1;
  s.facts_cover = -1;
  for (int i = 0; i < 5; i++) kl_segment_decoded(&s, &s.facts[i], mins[i]);
  assert_false(kl_segment_facts_rest_above(&s, 5, 0)); /* 5 not decoded: not known */
  kl_segment_decoded(&s, &s.facts[5], mins[5]);
  static const struct {
    size_t i;
    int64_t t;
    int above;
  } c[] = {{0, 9, 1}, {0, 10, 0}, {1, 19, 1}, {1, 20, 0}, {2, 19, 1}, {3, 39, 1},
           {3, 40, 0}, {4, 39, 1}, {5, 39, 1}, {5, 40, 0}, {6, INT64_MIN, 0}};
  for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
    assert_int_equal(kl_segment_facts_rest_above(&s, c[k].i, c[k].t), c[k].above);
  }
  kl_segment_free(&s);
}

/* Batches a walk yields one after another are linked as they are learnt,
** to a known batch that follows too; kl_segment_facts_follow goes down the
** chain to the batch sought, says when the data ends first, and cannot
** tell past a batch not known or not linked. */
static void test_facts_follow(void **state) {
  (void)state;
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  kl_batch b = batch100();
  /* Batches 0..9 at 100 bytes each, offsets 10i..10i+9, max timestamp 5i
  ** but batch 6's, 100.  A walk yields 2..4, another 6..7 and 5. */
  const kl_fact *f;
  int64_t prev = -1;
  for (int i = 2; i <= 7; i++) {
    if (i == 5) continue;
    if (i == 6) prev = -1; /* another walk */
    b.position = i * 100;
    b.base_offset = i * 10;
    b.last_offset = i * 10 + 9;
    b.max_timestamp = i == 6 ? 100 : 5 * i;
    kl_segment_learn_walked(&s, prev, &b);
    prev = b.position;
  }
  assert_int_equal(kl_segment_facts_follow(&s, 200, 50, INT64_MIN, &f), 0); /* 4 -/- 5 */
  assert_int_equal(kl_segment_facts_follow(&s, 200, 31, INT64_MIN, &f), 1);
  assert_int_equal(f->b.position, 300);
  b.position = 500;
  b.base_offset = 50;
  b.last_offset = 59;
  b.max_timestamp = 25;
  kl_segment_learn_walked(&s, -1, &b); /* linked on to 6, which is known */
  assert_false(kl_segment_fact(&s, 400)->linked);
  assert_int_equal(kl_segment_facts_follow(&s, 500, INT64_MIN, 30, &f), 1);
  assert_int_equal(f->b.position, 600);
  assert_int_equal(kl_segment_facts_follow(&s, 500, 75, INT64_MIN, &f), 1);
  assert_int_equal(f->b.position, 700);
  assert_int_equal(kl_segment_facts_follow(&s, 500, 80, INT64_MIN, &f), 0); /* 8 unknown */
  assert_int_equal(kl_segment_facts_follow(&s, 150, 0, INT64_MIN, &f), 0); /* not a batch */
  kl_segment_fact(&s, 700)->ends = 1;
  assert_int_equal(kl_segment_facts_follow(&s, 500, 80, INT64_MIN, &f), -1);
  assert_int_equal(kl_segment_facts_follow(&s, 600, INT64_MIN, 101, &f), -1);
  /* The walk that yielded 4 goes on to 5: the chain from 2 is whole. */
  kl_segment_learn_walked(&s, 400, &b);
  assert_true(kl_segment_fact(&s, 400)->linked);
  assert_int_equal(kl_segment_facts_follow(&s, 200, INT64_MIN, 100, &f), 1);
  assert_int_equal(f->b.position, 600);
  kl_segment_free(&s);
}

/* Holes are found by binary search, [pos, end). */
static void test_holes(void **state) {
  kl_segset set;
  kl_segment s;
  mem_segment(&set, &s);
  assert_null(kl_segment_hole_at(&s, 0));
  for (int i = 0; i < 50; i++) assert_int_equal(kl_segment_add_hole(&s, i * 100 + 10, i * 100 + 20, i), KL_OK);
  for (int64_t p = 0; p < 5100; p++) {
    const kl_hole *h = kl_segment_hole_at(&s, p);
    int in = p % 100 >= 10 && p % 100 < 20 && p < 5000;
    if (in != (h != NULL)) fail_msg("position %lld: %s", (long long)p, h ? "hole" : "none");
    if (h) assert_int_equal(h->kind, p / 100);
  }
  kl_segment_free(&s);
  /* Growing the list fails cleanly when memory does. */
  t_failalloc fa;
  assert_int_equal(kl_segment_init(&s, t_failenv(&fa, 0), &set, 0, "/x/00000000000000000000.log"),
                   KL_OK);
  fa.fail_at = fa.calls + 1;
  assert_int_equal(kl_segment_add_hole(&s, 0, 1, 1), KL_NOMEM);
  kl_segment_free(&s);
  assert_int_equal(fa.live, 0);
}

/* A file that shrinks under an open descriptor: reads of what is gone
** are KL_IO naming the file and the position, never a signal. */
static void test_read_after_truncation(void **state) {
  char *dir = kw_make_log_single("seg", 200, 1 << 20);
  char path[4200];
  kl_segset set;
  kl_segment s;
  open_segment0(&s, &set, dir, path, sizeof path);
  kl_err err = {0};
  int64_t size = s.size;
  assert_true(size > 8192);
  assert_int_equal(truncate(path, 4096), 0);
  uint8_t buf[100];
  assert_int_equal(kl_file_read(&s.log, 0, buf, sizeof buf, &err), KL_OK);
  assert_int_equal(kl_file_read(&s.log, 8000, buf, sizeof buf, &err), KL_IO);
  assert_non_null(strstr(err.msg, "00000000000000000000.log: position 8000"));
  kl_window w = {0};
  const uint8_t *p;
  kl_err_clear(&err);
  assert_int_equal(kl_window_get(&w, NULL, &s.log, 4000, 200, &p, NULL, &err), KL_IO);
  assert_int_equal(kl_window_get(&w, NULL, &s.log, 0, 100, &p, NULL, &err), KL_OK);
  kl_window_free(&w, NULL);
  kl_segment_free(&s);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_open_close),
      cmocka_unit_test(test_open_bound_and_pins),
      cmocka_unit_test(test_bound_from_nofile),
      cmocka_unit_test(test_open_out_of_descriptors),
      cmocka_unit_test(test_bound_counts_descriptors),
      cmocka_unit_test(test_missing_indexes),
      cmocka_unit_test(test_verified_cache),
      cmocka_unit_test(test_facts),
      cmocka_unit_test(test_facts_search),
      cmocka_unit_test(test_kept_widths),
      cmocka_unit_test(test_facts_rest_above),
      cmocka_unit_test(test_facts_follow),
      cmocka_unit_test(test_holes),
      cmocka_unit_test(test_read_after_truncation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
