/*
** twozone.c - what the warm section of the index search is for
** (behaviour.md section 5, KAFKA-6432), measured on kl_index itself.
**
**   twozone [--pages P] [--file-mib M] [--grow-pages G] [--data DIR] [--out DIR]
**
** Part 1, counted pages.  An offset index grows entry by entry from 1 to P
** pages of 4 KiB (512 entries per page).  After each append a caught-up
** consumer looks up the tail (target = the last key), once with
** kl_index_floor_classic (Kafka before 2.1) and once with kl_index_floor
** (two-zone); the probe hook records every slot read, page = slot * 8 / 4096.
** For each size: distinct pages per lookup, pages outside the warm section
** (the pages holding the last 8192 bytes of entries, slots n-1-1024 .. n-1),
** and "cold" touches: pages that neither an append nor a lookup touched
** during the previous page's worth of growth (512 appends), i.e. the pages
** an OS would have had time to evict.  The same for the time index
** (12-byte entries, where an entry may straddle two pages).  The page
** sequences of both searches are printed where the index crosses a page
** boundary, to compare with Kafka's design note (13 pages: 0, 6, 9, 11, 12;
** 14 pages: 0, 7, 10, 12, 13 for the classic search).
**
** Part 2, real page faults.  A real index file of M MiB is written and
** synced, evicted with posix_fadvise(DONTNEED), mapped fresh, and then
** grown by G pages (n is raised entry by entry over the last G pages of the
** file; each "append" reads its own entry's page, as the broker's write
** would have made it resident) with a tail lookup after every append.
** Major and minor faults of the lookups alone come from getrusage around
** each lookup; residency of the whole file from mincore at the end.  Once
** with MADV_RANDOM (no read-around: one fault = one page) and once with the
** kernel default read-around.
**
** Output: a report on stdout, OUT/twozone.json and OUT/twozone.dat for
** twozone.gp.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index.h"

#define PAGE 4096

static void die(const char *msg) {
  fprintf(stderr, "twozone: %s: %s\n", msg, strerror(errno));
  exit(1);
}

/* ---- recording probes ---- */

typedef struct probes {
  int kind;                 /* entry size */
  int64_t pages[256];       /* pages in access order (both ends of an entry) */
  int n;
} probes;

static void on_probe(void *ud, int64_t slot) {
  probes *p = ud;
  int64_t a = slot * p->kind / PAGE, b = (slot * p->kind + p->kind - 1) / PAGE;
  if (p->n < 254) {
    p->pages[p->n++] = a;
    if (b != a) p->pages[p->n++] = b;
  }
}

/* Distinct pages of a probe record (few: a quadratic check is fine). */
static int distinct(const probes *p, int64_t *out) {
  int k = 0;
  for (int i = 0; i < p->n; i++) {
    int seen = 0;
    for (int j = 0; j < k; j++) seen |= out[j] == p->pages[i];
    if (!seen) out[k++] = p->pages[i];
  }
  return k;
}

/* Entries: offsets 10, 20, ... (relative to base 0); offset index positions
** 4096, 8192, ... (never 0); time index timestamps 1000, 2000, ... */
static void fill_entries(uint8_t *buf, int kind, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint8_t *e = buf + i * kind;
    if (kind == KL_INDEX_OFFSET) {
      kl_put_u32(e, (uint32_t)((i + 1) * 10));
      kl_put_u32(e + 4, (uint32_t)((i + 1) * 4096));
    } else {
      kl_put_u64(e, (uint64_t)((i + 1) * 1000));
      kl_put_u32(e + 8, (uint32_t)((i + 1) * 10));
    }
  }
}

/* Print the page sequence of a probe record, consecutive repeats merged. */
static void seq_str(const probes *p, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < p->n && k < n; i++) {
    if (i > 0 && p->pages[i] == p->pages[i - 1]) continue;
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, k ? ", " : "", p->pages[i]);
  }
}

typedef struct study {
  int kind;
  int64_t max_pages_classic, max_pages_twozone;     /* distinct pages per lookup */
  int64_t max_outside_classic, max_outside_twozone; /* pages outside the warm section */
  int64_t lookups_outside_classic, lookups_outside_twozone;
  int64_t cold_classic, cold_twozone;               /* cumulative cold touches */
  double mean_pages_classic, mean_pages_twozone;
  int64_t lookups;
} study;

/* Part 1 for one index kind; writes per-size rows to dat (if not NULL). */
static void count_pages(int kind, int64_t max_pages, study *st, FILE *dat) {
  int64_t per_page = PAGE / kind;
  int64_t max_n = max_pages * PAGE / kind;
  uint8_t *buf = calloc((size_t)max_n + 1, (size_t)kind);
  int64_t npages = max_pages + 2;
  int64_t *last_c = malloc(sizeof(int64_t) * (size_t)npages);
  int64_t *last_t = malloc(sizeof(int64_t) * (size_t)npages);
  if (!buf || !last_c || !last_t) die("malloc");
  for (int64_t i = 0; i < npages; i++) last_c[i] = last_t[i] = INT64_MIN / 2;
  fill_entries(buf, kind, max_n);
  memset(st, 0, sizeof *st);
  st->kind = kind;
  probes pr = {.kind = kind};
  kl_index ix = {.kind = kind, .base = 0, .map = buf, .map_len = (size_t)max_n * (size_t)kind,
                 .probe = on_probe, .probe_ud = &pr};
  int64_t warm = KL_WARM_BYTES / kind;
  double sum_c = 0, sum_t = 0;
  if (dat) {
    fprintf(dat, "# entries index_pages pages_classic pages_twozone outside_classic "
                 "outside_twozone cold_cum_classic cold_cum_twozone\n");
  }
  for (int64_t n = 1; n <= max_n; n++) {
    ix.n = n;
    int64_t target = kl_index_key(&ix, n - 1);
    int64_t first_hot = n - 1 - warm > 0 ? n - 1 - warm : 0;
    int64_t warm_lo = first_hot * kind / PAGE, warm_hi = ((n - 1) * kind + kind - 1) / PAGE;
    /* The append writes entry n-1: its page(s) are hot in both worlds. */
    for (int64_t pg = (n - 1) * kind / PAGE; pg <= warm_hi; pg++) last_c[pg] = last_t[pg] = n;
    int64_t d[256];
    int64_t res[2], pages[2], outside[2];
    for (int alg = 0; alg < 2; alg++) {
      pr.n = 0;
      res[alg] = alg ? kl_index_floor(&ix, target, NULL) : kl_index_floor_classic(&ix, target, NULL);
      int k = distinct(&pr, d);
      int64_t *last = alg ? last_t : last_c;
      outside[alg] = 0;
      for (int i = 0; i < k; i++) {
        if (d[i] < warm_lo || d[i] > warm_hi) outside[alg]++;
        if (last[d[i]] < n - per_page) {
          if (alg) st->cold_twozone++;
          else st->cold_classic++;
        }
        last[d[i]] = n;
      }
      pages[alg] = k;
    }
    if (res[0] != n - 1 || res[1] != n - 1) {
      fprintf(stderr, "twozone: wrong floor at n=%" PRId64 "\n", n);
      exit(1);
    }
    sum_c += (double)pages[0];
    sum_t += (double)pages[1];
    if (pages[0] > st->max_pages_classic) st->max_pages_classic = pages[0];
    if (pages[1] > st->max_pages_twozone) st->max_pages_twozone = pages[1];
    if (outside[0] > st->max_outside_classic) st->max_outside_classic = outside[0];
    if (outside[1] > st->max_outside_twozone) st->max_outside_twozone = outside[1];
    st->lookups_outside_classic += outside[0] > 0;
    st->lookups_outside_twozone += outside[1] > 0;
    if (dat) {
      fprintf(dat, "%" PRId64 " %.5f %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
                   " %" PRId64 "\n",
              n, (double)n * kind / PAGE, pages[0], pages[1], outside[0], outside[1],
              st->cold_classic, st->cold_twozone);
    }
  }
  st->lookups = max_n;
  st->mean_pages_classic = sum_c / (double)max_n;
  st->mean_pages_twozone = sum_t / (double)max_n;
  free(buf);
  free(last_c);
  free(last_t);
}

/* The page sequences of both searches for an offset index of n entries. */
static void sequences(int64_t n, char *classic, char *twozone, size_t len) {
  uint8_t *buf = calloc((size_t)n, 8);
  if (!buf) die("calloc");
  fill_entries(buf, 8, n);
  probes pr = {.kind = 8};
  kl_index ix = {.kind = 8, .map = buf, .map_len = (size_t)n * 8, .n = n, .probe = on_probe,
                 .probe_ud = &pr};
  int64_t target = kl_index_key(&ix, n - 1);
  kl_index_floor_classic(&ix, target, NULL);
  seq_str(&pr, classic, len);
  pr.n = 0;
  kl_index_floor(&ix, target, NULL);
  seq_str(&pr, twozone, len);
  free(buf);
}

/* ---- part 2: a real file ---- */

typedef struct faults {
  const char *alg, *mode;
  long first_major, first_minor; /* the first lookup on the cold index */
  long major, minor;             /* lookups during the growth */
  long append_major;             /* the simulated appends' own faults */
  long resident;                 /* pages of the file resident at the end */
  long pages;                    /* pages of the file */
  double lookup_us;              /* mean lookup time during the growth */
} faults;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage_delta(struct rusage *a, long *maj, long *min) {
  struct rusage b;
  getrusage(RUSAGE_SELF, &b);
  *maj += b.ru_majflt - a->ru_majflt;
  *min += b.ru_minflt - a->ru_minflt;
}

static long resident_pages(const void *map, size_t len) {
  size_t pages = (len + PAGE - 1) / PAGE;
  unsigned char *vec = malloc(pages);
  if (!vec) die("malloc");
  if (mincore((void *)map, len, vec) != 0) die("mincore");
  long r = 0;
  for (size_t i = 0; i < pages; i++) r += vec[i] & 1;
  free(vec);
  return r;
}

static void fault_run(const char *path, int64_t entries, int64_t grow, int twozone, int random,
                      faults *f) {
  memset(f, 0, sizeof *f);
  f->alg = twozone ? "two-zone" : "classic";
  f->mode = random ? "MADV_RANDOM" : "default read-around";
  int fd = open(path, O_RDONLY);
  if (fd < 0) die(path);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  size_t len = (size_t)entries * 8;
  const uint8_t *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) die("mmap");
  close(fd);
  madvise((void *)map, len, random ? MADV_RANDOM : MADV_NORMAL);
  f->pages = (long)(len / PAGE);
  if (resident_pages(map, len) > 0) {
    fprintf(stderr, "twozone: warning: %ld pages still resident after DONTNEED\n",
            resident_pages(map, len));
  }
  kl_index ix = {.kind = 8, .map = map, .map_len = len, .n = entries - grow};
  volatile uint8_t sink = 0;
  /* The broker has been running: the pages the appends wrote recently are
  ** hot.  Then one lookup at the starting size (a consumer catching up). */
  int64_t first_hot = ix.n - 1 - KL_WARM_BYTES / 8;
  for (int64_t s = first_hot * 8 / PAGE; s <= (ix.n - 1) * 8 / PAGE; s++) sink += map[s * PAGE];
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  int64_t target = kl_index_key(&ix, ix.n - 1);
  if ((twozone ? kl_index_floor(&ix, target, NULL) : kl_index_floor_classic(&ix, target, NULL)) !=
      ix.n - 1) {
    fprintf(stderr, "twozone: wrong floor\n");
    exit(1);
  }
  usage_delta(&ru, &f->first_major, &f->first_minor);
  double t = 0;
  for (int64_t n = entries - grow + 1; n <= entries; n++) {
    getrusage(RUSAGE_SELF, &ru);
    sink += map[(n - 1) * 8]; /* the append */
    long mn = 0;
    usage_delta(&ru, &f->append_major, &mn);
    ix.n = n;
    target = kl_index_key(&ix, n - 1);
    getrusage(RUSAGE_SELF, &ru);
    double t0 = now();
    int64_t r = twozone ? kl_index_floor(&ix, target, NULL) : kl_index_floor_classic(&ix, target, NULL);
    t += now() - t0;
    usage_delta(&ru, &f->major, &f->minor);
    if (r != n - 1) {
      fprintf(stderr, "twozone: wrong floor\n");
      exit(1);
    }
  }
  (void)sink;
  f->lookup_us = t / (double)grow * 1e6;
  f->resident = resident_pages(map, len);
  munmap((void *)map, len);
}

int main(int argc, char **argv) {
  int64_t max_pages = 40, file_mib = 10, grow_pages = 64;
  const char *out = "out", *data = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--pages")) max_pages = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--file-mib")) file_mib = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--grow-pages")) grow_pages = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!strcmp(argv[i], "--data")) data = argv[i + 1];
    else {
      fprintf(stderr, "usage: twozone [--pages P] [--file-mib M] [--grow-pages G] [--data DIR] "
                      "[--out DIR]\n");
      return 2;
    }
  }
  mkdir(out, 0755);
  char path[4096];

  /* Part 1. */
  snprintf(path, sizeof path, "%s/twozone.dat", out);
  FILE *dat = fopen(path, "w");
  if (!dat) die(path);
  study so, stime;
  count_pages(KL_INDEX_OFFSET, max_pages, &so, dat);
  fclose(dat);
  count_pages(KL_INDEX_TIME, max_pages, &stime, NULL);
  printf("Part 1: tail lookups (target = last key) after every append, index growing entry by "
         "entry to %" PRId64 " pages\n\n",
         max_pages);
  printf("%-34s %14s %14s\n", "", "classic", "two-zone");
  study *sts[2] = {&so, &stime};
  const char *names[2] = {"offset index (8-byte entries)", "time index (12-byte entries)"};
  for (int k = 0; k < 2; k++) {
    study *s = sts[k];
    printf("%s, %" PRId64 " lookups:\n", names[k], s->lookups);
    printf("  %-32s %14" PRId64 " %14" PRId64 "\n", "max distinct pages per lookup",
           s->max_pages_classic, s->max_pages_twozone);
    printf("  %-32s %14.2f %14.2f\n", "mean distinct pages per lookup", s->mean_pages_classic,
           s->mean_pages_twozone);
    printf("  %-32s %14" PRId64 " %14" PRId64 "\n", "lookups leaving the warm section",
           s->lookups_outside_classic, s->lookups_outside_twozone);
    printf("  %-32s %14" PRId64 " %14" PRId64 "\n", "max pages outside warm section",
           s->max_outside_classic, s->max_outside_twozone);
    printf("  %-32s %14" PRId64 " %14" PRId64 "\n", "cold page touches (total)", s->cold_classic,
           s->cold_twozone);
  }
  printf("\nPage sequences of a tail lookup (pages of 4 KiB, 512 offset entries each):\n");
  printf("  %-30s %-36s %s\n", "index", "classic", "two-zone");
  int64_t at[][2] = {{12, 0}, {12, 1}, {13, 0}, {13, 1}, {14, 0}, {14, 1}, {15, 0}};
  char seqc[7][512], seqt[7][512];
  for (int i = 0; i < 7; i++) {
    int64_t n = at[i][0] * 512 + at[i][1];
    sequences(n, seqc[i], seqt[i], sizeof seqc[i]);
    char lbl[64];
    snprintf(lbl, sizeof lbl, "%" PRId64 " entries (%" PRId64 " pages%s)", n,
             at[i][0] + at[i][1], at[i][1] ? ", 1 entry in the last" : ", full");
    printf("  %-30s %-36s %s\n", lbl, seqc[i], seqt[i]);
  }
  printf("  Kafka's note (AbstractIndex.scala): 13 pages -> 0, 6, 9, 11, 12; 14 pages -> 0, 7, "
         "10, 12, 13\n");

  /* Part 2. */
  int64_t entries = file_mib * 1048576 / 8;
  int64_t grow = grow_pages * 512;
  snprintf(path, sizeof path, "%s/twozone-%d.index", data, (int)getpid());
  {
    uint8_t *buf = malloc((size_t)entries * 8);
    if (!buf) die("malloc");
    fill_entries(buf, 8, entries);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die(path);
    size_t done = 0, len = (size_t)entries * 8;
    while (done < len) {
      ssize_t w = write(fd, buf + done, len - done);
      if (w <= 0) die("write");
      done += (size_t)w;
    }
    if (fsync(fd) != 0) die("fsync");
    close(fd);
    free(buf);
  }
  faults fr[4];
  for (int i = 0; i < 4; i++) fault_run(path, entries, grow, i & 1, i < 2, &fr[i]);
  unlink(path);
  printf("\nPart 2: a real %" PRId64 " MiB offset index (%" PRId64 " pages), evicted with "
         "posix_fadvise(DONTNEED), mapped fresh;\nthe last 3 pages made resident (recent appends), "
         "then grown by %" PRId64 " pages with a tail lookup after each append\n\n",
         file_mib, entries * 8 / PAGE, grow_pages);
  printf("  %-9s %-20s %10s %10s %12s %12s %10s %10s\n", "search", "mapping", "1st: major",
         "1st: minor", "grow: major", "grow: minor", "resident", "us/lookup");
  for (int i = 0; i < 4; i++) {
    printf("  %-9s %-20s %10ld %10ld %12ld %12ld %10ld %10.3f\n", fr[i].alg, fr[i].mode,
           fr[i].first_major, fr[i].first_minor, fr[i].major, fr[i].minor, fr[i].resident,
           fr[i].lookup_us);
  }
  printf("  (major = page read from disk; minor = page already in the page cache, mapped;\n"
         "   resident = pages of the file in the page cache at the end, by mincore;\n"
         "   the appends themselves faulted %ld / %ld / %ld / %ld major)\n",
         fr[0].append_major, fr[1].append_major, fr[2].append_major, fr[3].append_major);

  snprintf(path, sizeof path, "%s/twozone.json", out);
  FILE *j = fopen(path, "w");
  if (!j) die(path);
  fprintf(j, "{\n  \"page_bytes\": %d, \"warm_bytes\": %d, \"max_index_pages\": %" PRId64 ",\n",
          PAGE, KL_WARM_BYTES, max_pages);
  fprintf(j, "  \"counted\": {\n");
  for (int k = 0; k < 2; k++) {
    study *s = sts[k];
    fprintf(j,
            "    \"%s\": {\"entry_bytes\": %d, \"lookups\": %" PRId64 ", "
            "\"classic\": {\"max_pages\": %" PRId64 ", \"mean_pages\": %.4f, "
            "\"lookups_outside_warm\": %" PRId64 ", \"max_pages_outside_warm\": %" PRId64
            ", \"cold_touches\": %" PRId64 "}, "
            "\"two_zone\": {\"max_pages\": %" PRId64 ", \"mean_pages\": %.4f, "
            "\"lookups_outside_warm\": %" PRId64 ", \"max_pages_outside_warm\": %" PRId64
            ", \"cold_touches\": %" PRId64 "}}%s\n",
            k ? "time_index" : "offset_index", s->kind, s->lookups, s->max_pages_classic,
            s->mean_pages_classic, s->lookups_outside_classic, s->max_outside_classic,
            s->cold_classic, s->max_pages_twozone, s->mean_pages_twozone,
            s->lookups_outside_twozone, s->max_outside_twozone, s->cold_twozone, k ? "" : ",");
  }
  fprintf(j, "  },\n  \"sequences\": [\n");
  for (int i = 0; i < 7; i++) {
    fprintf(j, "    {\"entries\": %" PRId64 ", \"classic\": [%s], \"two_zone\": [%s]}%s\n",
            at[i][0] * 512 + at[i][1], seqc[i], seqt[i], i < 6 ? "," : "");
  }
  fprintf(j, "  ],\n  \"faults\": {\"file_mib\": %" PRId64 ", \"grow_pages\": %" PRId64
             ", \"runs\": [\n", file_mib, grow_pages);
  for (int i = 0; i < 4; i++) {
    fprintf(j,
            "    {\"search\": \"%s\", \"mapping\": \"%s\", \"first_lookup_major\": %ld, "
            "\"first_lookup_minor\": %ld, \"growth_major\": %ld, \"growth_minor\": %ld, "
            "\"append_major\": %ld, \"resident_pages\": %ld, \"file_pages\": %ld, "
            "\"lookup_us\": %.4f}%s\n",
            fr[i].alg, fr[i].mode, fr[i].first_major, fr[i].first_minor, fr[i].major,
            fr[i].minor, fr[i].append_major, fr[i].resident, fr[i].pages, fr[i].lookup_us,
            i < 3 ? "," : "");
  }
  fprintf(j, "  ]}\n}\n");
  fclose(j);
  return 0;
}
