/*
** broker.c - the partitions under a path: log directories and their
** checkpoints.
*/
#include "broker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "os.h"
#include "segment.h"
#include "topic.h"
#include "utf8.h"

struct kl_broker {
  const kl_env *env;
  unsigned flags;           /* KL_BROKER_* */
  int scrubbed;             /* a topic was made UTF-8: the listing's order
                            ** is not the topics' */
  kl_part *parts;
  size_t n, cap;
  int single;
  char **logdirs;
  size_t nlogdirs;
  struct entry {            /* the path list's distinct entries */
    uint64_t dev, ino;      /* a log directory's, or a partition's log
                            ** directory's */
    char *name;             /* NULL, or the partition's name in it */
  } *ents;
  size_t nents;
  const char *want;         /* kl_broker_open_named: the topic kept (want_n
                            ** bytes) and its partition want_part; NULL:
                            ** every partition */
  size_t want_n;
  int32_t want_part;
  size_t listed;            /* directories read */
};

/* The checkpoints of one log directory, and where a sorted listing's
** lookups in them have got to (kl_checkpoint_next). */
typedef struct ckpts {
  kl_ckpt start, hw, recovery;
  int in_order;             /* lookups come in increasing order */
  size_t at[3];
} ckpts;

/* A "<topic>-<partition>" entry of a log directory. */
typedef struct sub {
  char *name;
  size_t tn;                /* the topic's length */
  int32_t part;
} sub;

/* Entries in the listing's order (topic.h); names of one partition
** (orders-1, orders-01) by name, so that every listing of them agrees. */
static int cmp_sub(const void *a, const void *b) {
  const sub *x = a, *y = b;
  int c = kl_topic_cmp(x->name, x->tn, x->part, y->name, y->tn, y->part);
  return c ? c : strcmp(x->name, y->name);
}

size_t kl_partition_name(const char *name, int32_t *partition) {
  size_t n = strlen(name);
  static const char *const gone[] = {"-delete", "-future", "-stray"};
  for (int i = 0; i < 3; i++) {
    size_t k = strlen(gone[i]);
    if (n >= k && strcmp(name + n - k, gone[i]) == 0) return 0;
  }
  const char *dash = strrchr(name, '-');
  if (!dash || dash == name || !dash[1] || strlen(dash + 1) > 10) return 0;
  int64_t v = 0;
  for (const char *p = dash + 1; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  if (v > INT32_MAX) return 0;
  *partition = (int32_t)v;
  return (size_t)(dash - name);
}

int kl_topic_valid(const char *t, size_t n) {
  /* 249: Kafka's bound, so that a partition directory's name with the
  ** suffixes Kafka adds to it stays a file name. */
  if (n == 0 || n > 249) return 0;
  if ((n == 1 && t[0] == '.') || (n == 2 && t[0] == '.' && t[1] == '.')) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-')) {
      return 0;
    }
  }
  return 1;
}

static int cmp_part(const void *a, const void *b) {
  const kl_part *x = a, *y = b;
  if (!x->topic != !y->topic) return x->topic ? -1 : 1;
  if (x->topic) {
    int c = kl_topic_cmp(x->topic, strlen(x->topic), x->partition, y->topic, strlen(y->topic),
                         y->partition);
    if (c) return c;
  }
  if (x->logdir != y->logdir) return x->logdir < y->logdir ? -1 : 1;
  return strcmp(x->dir, y->dir);
}

void kl_broker_close(kl_broker *b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) {
    kl_free(b->env, (char *)b->parts[i].topic);
    kl_free(b->env, (char *)b->parts[i].dir);
  }
  kl_free(b->env, b->parts);
  for (size_t i = 0; i < b->nlogdirs; i++) kl_free(b->env, b->logdirs[i]);
  kl_free(b->env, b->logdirs);
  for (size_t i = 0; i < b->nents; i++) kl_free(b->env, b->ents[i].name);
  kl_free(b->env, b->ents);
  kl_free(b->env, b);
}

size_t kl_broker_count(const kl_broker *b) { return b->n; }
const kl_part *kl_broker_part(const kl_broker *b, size_t i) { return i < b->n ? &b->parts[i] : NULL; }
int kl_broker_single(const kl_broker *b) { return b->single; }
size_t kl_broker_logdir_count(const kl_broker *b) { return b->nlogdirs; }
const char *kl_broker_logdir(const kl_broker *b, size_t i) {
  return i < b->nlogdirs ? b->logdirs[i] : NULL;
}

static kl_rc add_logdir(kl_broker *b, const char *dir, kl_err *err) {
  char **p = kl_realloc(b->env, b->logdirs, (b->nlogdirs + 1) * sizeof *p);
  if (p) b->logdirs = p;
  char *d = p ? kl_strdup(b->env, dir) : NULL;
  if (!d) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
  b->logdirs[b->nlogdirs++] = d;
  return KL_OK;
}

size_t kl_broker_seek(const kl_broker *b, const char *topic, size_t n, int32_t p) {
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const kl_part *x = &b->parts[mid];
    int c;
    if (!x->topic) {
      c = 1;
    } else {
      c = kl_topic_cmp(x->topic, strlen(x->topic), x->partition, topic, n, p);
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Is the directory name, whose topic is its first tn bytes (0: not a
** partition's name) and partition part, the one a named listing keeps?
** The topic asked for is one Kafka accepts (ASCII), so a name that is not
** UTF-8, which the listing would scrub, never equals it. */
static int is_wanted(const kl_broker *b, const char *name, size_t tn, int32_t part) {
  return tn == b->want_n && part == b->want_part && memcmp(name, b->want, tn) == 0;
}

/* Add the partition directory dir named name (unless a named listing does
** not keep it); its checkpoint entries come from ck (NULL: none), looked
** up in one pass when added in order. */
static kl_rc add_part(kl_broker *b, const char *dir, const char *name, int logdir, ckpts *ck,
                      kl_err *err) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    kl_part *p = kl_realloc(b->env, b->parts, cap * sizeof *p);
    if (!p) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
    b->parts = p;
    b->cap = cap;
  }
  int32_t part;
  size_t tn = kl_partition_name(name, &part);
  if (b->want && !is_wanted(b, name, tn, part)) return KL_OK;
  kl_part *p = &b->parts[b->n];
  memset(p, 0, sizeof *p);
  p->partition = -1;
  p->log_start = p->high_watermark = p->recovery_point = -1;
  p->logdir = logdir;
  p->dir = kl_strdup(b->env, dir);
  char *t = tn ? kl_malloc(b->env, tn + 1) : NULL;
  if (!p->dir || (tn && !t)) {
    kl_free(b->env, (char *)p->dir);
    kl_free(b->env, t);
    return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
  }
  if (tn) {
    memcpy(t, name, tn);
    t[tn] = 0;
    p->partition = part;
    if (ck && ck->in_order) {
      p->log_start = kl_checkpoint_next(&ck->start, &ck->at[0], t, part);
      p->high_watermark = kl_checkpoint_next(&ck->hw, &ck->at[1], t, part);
      p->recovery_point = kl_checkpoint_next(&ck->recovery, &ck->at[2], t, part);
    } else if (ck) {
      p->log_start = kl_checkpoint_get(&ck->start, t, part);
      p->high_watermark = kl_checkpoint_get(&ck->hw, t, part);
      p->recovery_point = kl_checkpoint_get(&ck->recovery, t, part);
    }
    /* The topic is TEXT to SQLite: a name that is not UTF-8 (never one of
    ** Kafka's topics, which are ASCII) comes out with U+FFFD in place of
    ** its stray bytes, and is sorted and searched as it comes out. */
    if (!kl_utf8_valid((const uint8_t *)t, tn)) {
      char *u = kl_utf8_scrub(b->env, t, tn);
      kl_free(b->env, t);
      if (!u) {
        kl_free(b->env, (char *)p->dir);
        return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
      }
      t = u;
      b->scrubbed = 1;
    }
    p->topic = t;
  }
  b->n++;
  return KL_OK;
}

static void ckpts_free(const kl_env *env, ckpts *ck) {
  kl_checkpoint_free(env, &ck->start);
  kl_checkpoint_free(env, &ck->hw);
  kl_checkpoint_free(env, &ck->recovery);
}

static kl_rc ckpts_read(const kl_broker *b, const char *logdir, ckpts *ck, kl_err *err) {
  const kl_env *env = b->env;
  kl_ckpt *dst[KL_CKPT_COUNT] = {&ck->start, &ck->hw, &ck->recovery};
  memset(ck, 0, sizeof *ck);
  if (b->flags & KL_BROKER_NO_CHECKPOINTS) return KL_OK;
  char path[4096];
  for (int i = 0; i < KL_CKPT_COUNT; i++) {
    if (snprintf(path, sizeof path, "%s/%s", logdir, kl_checkpoint_name(i)) >= (int)sizeof path) {
      return kl_err_set(err, KL_IO, "%s: path too long", logdir);
    }
    kl_rc rc = kl_checkpoint_read_part(env, path, b->want, b->want_n, b->want_part, dst[i], err);
    if (rc) {
      ckpts_free(env, ck);
      return rc;
    }
  }
  return KL_OK;
}

/* Files only a log directory holds: its checkpoints, then these. */
static const char *const kMarkers[] = {"meta.properties", ".kafka_cleanshutdown",
                                       "cleaner-offset-checkpoint"};
#define NMARKERS (KL_CKPT_COUNT + (int)(sizeof kMarkers / sizeof kMarkers[0]))

static const char *marker_name(int i) {
  return i < KL_CKPT_COUNT ? kl_checkpoint_name(i) : kMarkers[i - KL_CKPT_COUNT];
}

static int logdir_marker(const char *name) {
  for (int i = 0; i < NMARKERS; i++) {
    if (strcmp(name, marker_name(i)) == 0) return 1;
  }
  return 0;
}

/* Does dir hold one of them (looked up by name, none listed)? */
static int has_marker(const kl_env *env, const char *dir) {
  char path[4096];
  struct stat st;
  for (int i = 0; i < NMARKERS; i++) {
    if (snprintf(path, sizeof path, "%s/%s", dir, marker_name(i)) >= (int)sizeof path) return 0;
    if (kl_os_stat(env, path, &st) == 0) return 1;
  }
  return 0;
}

/* Is the entry name of dir a directory (known: what the listing said)? */
static int is_dir(const kl_env *env, const char *dir, const char *name, int known) {
  if (known >= 0) return known;
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
  return kl_os_is_dir(env, path);
}

/* Length of buf[0..n) without its trailing "/", "/." and a lone ".":
** x/, x/. and x/./ are x, "." is "". */
static size_t strip_dot_tail(const char *buf, size_t n) {
  for (;;) {
    while (n > 1 && buf[n - 1] == '/') n--;
    if (n == 1 && buf[0] == '.') n = 0;
    else if (n >= 2 && buf[n - 1] == '.' && buf[n - 2] == '/') n = n > 2 ? n - 2 : 1;
    else break;
  }
  return n;
}

/* Start of the last component of buf[0..n). */
static size_t last_component(const char *buf, size_t n) {
  while (n > 0 && buf[n - 1] != '/') n--;
  return n;
}

kl_rc kl_partition_logdir(const char *dir, char *logdir, size_t ln, char *name, size_t nn,
                          kl_err *err) {
  char buf[PATH_MAX];
  size_t n = strlen(dir);
  if (n >= sizeof buf) return kl_err_set(err, KL_IO, "%.64s...: path too long", dir);
  memcpy(buf, dir, n + 1);
  n = strip_dot_tail(buf, n);
  buf[n] = 0;
  size_t st = last_component(buf, n);
  if (n == 0 || strcmp(buf + st, "..") == 0 || st == n) {
    /* ".", "..", "x/.." or "/": no name of its own. */
    char real[PATH_MAX];
    if (!realpath(n ? buf : ".", real)) {
      return kl_err_set(err, KL_IO, "cannot resolve %s: %s", dir, strerror(errno));
    }
    n = strlen(real);
    memcpy(buf, real, n + 1);
    st = last_component(buf, n);
  }
  size_t pn = st;
  while (pn > 1 && buf[pn - 1] == '/') pn--;
  const char *parent = pn == 0 ? "." : buf;
  if (pn == 0) pn = 1;
  if (pn >= ln || n - st >= nn) return kl_err_set(err, KL_IO, "%.64s: path too long", dir);
  memcpy(logdir, parent, pn);
  logdir[pn] = 0;
  memcpy(name, buf + st, n - st + 1);
  return KL_OK;
}

/* Note the entry (dev, ino, name) of the path list: *seen = 1 when an
** earlier one was the same directory, by whatever path (L and ./L, L/,
** a symlink to L). */
static kl_rc add_entry(kl_broker *b, const struct stat *st, const char *name, int *seen,
                       kl_err *err) {
  *seen = 0;
  for (size_t i = 0; i < b->nents; i++) {
    const struct entry *e = &b->ents[i];
    if (e->dev == (uint64_t)st->st_dev && e->ino == (uint64_t)st->st_ino && !e->name == !name &&
        (!name || strcmp(e->name, name) == 0)) {
      *seen = 1;
      return KL_OK;
    }
  }
  struct entry *p = kl_realloc(b->env, b->ents, (b->nents + 1) * sizeof *p);
  if (p) b->ents = p;
  char *n = p && name ? kl_strdup(b->env, name) : NULL;
  if (!p || (name && !n)) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", name);
  p[b->nents].dev = (uint64_t)st->st_dev;
  p[b->nents].ino = (uint64_t)st->st_ino;
  p[b->nents].name = n;
  b->nents++;
  return KL_OK;
}

/* What one directory's listing holds: partition subdirectories, segments,
** log-directory markers.  Kept apart from the decision list_one makes on it
** so that reading the directory and classifying it stay short. */
typedef struct listing {
  const kl_broker *b;       /* whose listing (what it keeps) */
  sub *subs;                /* the partition subdirectories kept */
  size_t nsub, capsub;
  size_t ndirs;             /* partition subdirectories, kept or not */
  int segments, marker;
} listing;

static void listing_free(const kl_env *env, listing *l) {
  for (size_t i = 0; i < l->nsub; i++) kl_free(env, l->subs[i].name);
  kl_free(env, l->subs);
}

/* Append the partition subdirectory de_name of dir to the listing. */
static kl_rc listing_add_sub(const kl_env *env, listing *l, const char *dir, const char *de_name,
                             kl_err *err) {
  if (l->nsub == l->capsub) {
    size_t cap = l->capsub ? l->capsub * 2 : 64;
    sub *p = kl_realloc(env, l->subs, cap * sizeof *p);
    if (!p) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
    l->subs = p;
    l->capsub = cap;
  }
  if (!(l->subs[l->nsub].name = kl_strdup(env, de_name))) {
    return kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
  }
  l->subs[l->nsub].tn = kl_partition_name(de_name, &l->subs[l->nsub].part);
  l->nsub++;
  return KL_OK;
}

/* Can entry name of a named listing be passed over unread?  Once a
** partition subdirectory is known, the directory is a log directory unless
** it holds segments, whatever its other entries are: only segment names
** and the partition asked for still matter. */
static int passed_over(const listing *l, const char *name) {
  const kl_broker *b = l->b;
  return b->want && l->ndirs > 0 &&
         (strncmp(name, b->want, b->want_n) != 0 || name[b->want_n] != '-');
}

/* Read dir's entries into l and its stat into *st. */
static kl_rc listing_read(const kl_env *env, const char *dir, listing *l, struct stat *st,
                          kl_err *err) {
  void *d = kl_os_opendir(env, dir);
  if (!d) {
    return kl_err_set(err, errno == ENOMEM ? KL_NOMEM : KL_CANTOPEN, "cannot open directory %s: %s",
                      dir, strerror(errno));
  }
  kl_rc rc = KL_OK;
  if (kl_os_stat(env, dir, st) != 0) {
    rc = kl_err_set(err, KL_IO, "cannot stat %s: %s", dir, strerror(errno));
  }
  const char *de_name;
  int de_dir, more = 0;
  while (rc == KL_OK && (more = kl_os_readdir(env, d, &de_name, &de_dir)) > 0) {
    int64_t base;
    int32_t part;
    if (kl_segment_name(de_name, &base)) {
      /* A partition directory, unless it holds a log directory's files:
      ** the rest of its names (thousands of segments' files) say nothing
      ** more here.  A log directory's segment files are foreign files. */
      if (!l->segments && !l->marker) l->marker = has_marker(env, dir);
      l->segments = 1;
      if (!l->marker) break;
    } else if (passed_over(l, de_name)) {
      continue;
    } else if (logdir_marker(de_name)) {
      l->marker = 1;
    } else if (kl_partition_name(de_name, &part) && strcmp(de_name, "__cluster_metadata-0") != 0 &&
               is_dir(env, dir, de_name, de_dir)) {
      /* __cluster_metadata-0 is the KRaft metadata log, which Kafka's log
      ** manager does not load as a partition. */
      l->ndirs++;
      size_t tn = kl_partition_name(de_name, &part);
      if (!l->b->want || is_wanted(l->b, de_name, tn, part)) {
        rc = listing_add_sub(env, l, dir, de_name, err);
      }
    }
  }
  if (rc == KL_OK && more < 0) rc = kl_err_set(err, KL_IO, "cannot list %s: %s", dir, strerror(errno));
  ((kl_broker *)l->b)->listed++;
  kl_os_closedir(env, d);
  return rc;
}

/* dir is a partition directory: its checkpoints are its log directory's
** (parent), read as for that log directory. */
static kl_rc list_partition(kl_broker *b, const char *dir, const char *parent, const char *name,
                            int idx, ckpts *ck, int *seen, kl_err *err) {
  struct stat st;
  if (kl_os_stat(b->env, parent, &st) != 0) {
    return kl_err_set(err, KL_IO, "cannot stat %s: %s", parent, strerror(errno));
  }
  kl_rc rc = add_entry(b, &st, name, seen, err);
  if (rc == KL_OK && !*seen) rc = ckpts_read(b, parent, ck, err);
  if (rc == KL_OK && !*seen) rc = add_logdir(b, parent, err);
  if (rc == KL_OK && !*seen) rc = add_part(b, dir, name, idx, ck, err);
  return rc;
}

/* dir (whose stat is *st) is a log directory holding the partitions of l. */
static kl_rc list_logdir(kl_broker *b, const char *dir, const struct stat *st, listing *l, int idx,
                         ckpts *ck, int *seen, kl_err *err) {
  kl_rc rc = add_entry(b, st, NULL, seen, err);
  if (rc == KL_OK && !*seen) rc = ckpts_read(b, dir, ck, err);
  if (rc == KL_OK && !*seen) rc = add_logdir(b, dir, err);
  if (rc != KL_OK || *seen) return rc;
  /* In the listing's order: the checkpoints are matched in one pass,
  ** and a single log directory's listing needs no sort after. */
  if (l->nsub > 1) qsort(l->subs, l->nsub, sizeof *l->subs, cmp_sub);
  ck->in_order = 1;
  const char *sep = dir[strlen(dir) - 1] == '/' ? "" : "/";
  char path[4096];
  for (size_t i = 0; rc == KL_OK && i < l->nsub; i++) {
    if (snprintf(path, sizeof path, "%s%s%s", dir, sep, l->subs[i].name) >= (int)sizeof path) {
      rc = kl_err_set(err, KL_IO, "%s: path too long", dir);
    } else {
      rc = add_part(b, path, l->subs[i].name, idx, ck, err);
    }
  }
  return rc;
}

/* One entry of the path list: a partition directory or a log directory. */
static kl_rc list_one(kl_broker *b, const char *dir, int idx, int *was_partition, int *seen,
                      kl_err *err) {
  const kl_env *env = b->env;
  listing l;
  memset(&l, 0, sizeof l);
  l.b = b;
  struct stat st;
  kl_rc rc = listing_read(env, dir, &l, &st, err);
  char name[256], parent[4096];
  int32_t part;
  *was_partition = 0;
  ckpts ck;
  memset(&ck, 0, sizeof ck);
  if (rc == KL_OK) rc = kl_partition_logdir(dir, parent, sizeof parent, name, sizeof name, err);
  if (rc == KL_OK && !l.marker && (l.segments || (!l.ndirs && kl_partition_name(name, &part)))) {
    *was_partition = 1;
    rc = list_partition(b, dir, parent, name, idx, &ck, seen, err);
  } else if (rc == KL_OK && (l.ndirs || l.marker)) {
    rc = list_logdir(b, dir, &st, &l, idx, &ck, seen, err);
  } else if (rc == KL_OK) {
    rc = kl_err_set(err, KL_CANTOPEN, "%s is not a Kafka partition directory (it has no "
                    "<20-digit offset>.log file) nor a log directory (it has no "
                    "<topic>-<partition> directory)", dir);
  }
  ckpts_free(env, &ck);
  listing_free(env, &l);
  return rc;
}

/* A named listing of the log directory dir without reading its names
** (ext4 lists 2,000 entries in about half a millisecond, more than the
** rest of a lookup): dir holds a log directory's files, so it is a log
** directory whatever else it holds, and the partition's directory is
** looked up under each name a listing would take for it: the topic, a
** hyphen, the partition's number with up to nine leading zeros (1, 01, ...
** 0000000001: kl_partition_name reads at most ten digits).  *done = 0
** when dir is not such a directory (the listing then decides). */
static kl_rc list_named(kl_broker *b, const char *dir, int *done, kl_err *err) {
  const kl_env *env = b->env;
  struct stat st;
  *done = 0;
  if (kl_os_stat(env, dir, &st) != 0 || !S_ISDIR(st.st_mode) || !has_marker(env, dir)) {
    return KL_OK;
  }
  listing l;
  memset(&l, 0, sizeof l);
  l.b = b;
  char digits[16], name[512], path[4096];
  int nd = snprintf(digits, sizeof digits, "%d", (int)b->want_part);
  kl_rc rc = KL_OK;
  for (int zeros = 0; rc == KL_OK && b->want_part >= 0 && nd + zeros <= 10; zeros++) {
    int n = snprintf(name, sizeof name, "%s-%.*s%s", b->want, zeros, "000000000", digits);
    struct stat ps;
    if (n >= (int)sizeof name || strcmp(name, "__cluster_metadata-0") == 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) continue;
    if (kl_os_stat(env, path, &ps) != 0 || !S_ISDIR(ps.st_mode)) continue;
    l.ndirs++;
    rc = listing_add_sub(env, &l, dir, name, err);
  }
  ckpts ck;
  memset(&ck, 0, sizeof ck);
  int seen = 0;
  if (rc == KL_OK) rc = list_logdir(b, dir, &st, &l, 0, &ck, &seen, err);
  ckpts_free(env, &ck);
  listing_free(env, &l);
  *done = rc == KL_OK;
  return rc;
}

void kl_path_iter_init(kl_path_iter *it, const kl_env *env, const char *path) {
  it->p = path;
  it->whole = strchr(path, ',') == NULL || kl_os_is_dir(env, path);
}

int kl_path_next(kl_path_iter *it, const char **s, size_t *n) {
  while (it->p) {
    const char *p = it->p, *end = it->whole ? NULL : strchr(p, ',');
    if (!end) end = p + strlen(p);
    it->p = *end ? end + 1 : NULL;
    const char *e = end;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if (e > p) {
      *s = p;
      *n = (size_t)(e - p);
      return 1;
    }
  }
  return 0;
}

/* A partition given alone whose log directory is in the list too is read
** once, as the log directory's (each entry lists one partition or one log
** directory, in the order of b->ents). */
static void drop_listed(kl_broker *b) {
  size_t k = 0;
  for (size_t i = 0; i < b->n; i++) {
    const kl_part *p = &b->parts[i];
    const struct entry *e = &b->ents[p->logdir];
    int dup = 0;
    for (size_t j = 0; e->name && !dup && j < b->n; j++) {
      const struct entry *f = &b->ents[b->parts[j].logdir];
      size_t dn = strlen(b->parts[j].dir), nn = strlen(e->name);
      dup = !f->name && f->dev == e->dev && f->ino == e->ino && dn > nn &&
            b->parts[j].dir[dn - nn - 1] == '/' && strcmp(b->parts[j].dir + dn - nn, e->name) == 0;
    }
    if (dup) {
      kl_free(b->env, (char *)p->topic);
      kl_free(b->env, (char *)p->dir);
    } else {
      b->parts[k++] = *p;
    }
  }
  b->n = k;
}

kl_rc kl_broker_open(const kl_env *env, const char *path, kl_broker **out, kl_err *err) {
  return kl_broker_open_flags(env, path, 0, out, err);
}

kl_rc kl_broker_open_flags(const kl_env *env, const char *path, unsigned flags, kl_broker **out,
                           kl_err *err) {
  return kl_broker_open_named(env, path, flags, NULL, 0, 0, out, err);
}

size_t kl_broker_dirs_listed(const kl_broker *b) { return b->listed; }

int kl_broker_named(const kl_broker *b, const char **topic, size_t *tn, int32_t *partition) {
  if (!b->want) return 0;
  *topic = b->want;
  *tn = b->want_n;
  *partition = b->want_part;
  return 1;
}

kl_rc kl_broker_open_named(const kl_env *env, const char *path, unsigned flags, const char *topic,
                           size_t tn, int32_t partition, kl_broker **out, kl_err *err) {
  *out = NULL;
  if (topic && !kl_topic_valid(topic, tn)) topic = NULL;
  kl_broker *b = kl_malloc(env, sizeof *b + (topic ? tn + 1 : 0));
  if (!b) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", path);
  memset(b, 0, sizeof *b);
  b->env = env;
  b->flags = flags;
  if (topic) {
    char *w = (char *)(b + 1);
    memcpy(w, topic, tn);
    w[tn] = 0;
    b->want = w;
    b->want_n = tn;
    b->want_part = partition;
  }
  kl_rc rc = KL_OK;
  int entries = 0, partitions = 0; /* distinct ones */
  char one[4096];
  kl_path_iter it;
  const char *s;
  size_t n;
  kl_path_iter_init(&it, env, path);
  /* A query naming one partition of one log directory reads no names. */
  kl_path_iter one_it = it;
  const char *s2;
  size_t n2;
  int done = 0;
  if (b->want && kl_path_next(&one_it, &s, &n) && n < sizeof one &&
      !kl_path_next(&one_it, &s2, &n2)) {
    memcpy(one, s, n);
    one[n] = 0;
    rc = list_named(b, one, &done, err);
    entries = done;
  }
  while (rc == KL_OK && !done && kl_path_next(&it, &s, &n)) {
    if (n >= sizeof one) {
      rc = kl_err_set(err, KL_IO, "%.*s...: path too long", 64, s);
      break;
    }
    memcpy(one, s, n);
    one[n] = 0;
    int was = 0, seen = 0;
    rc = list_one(b, one, entries, &was, &seen, err);
    entries += !seen;
    partitions += was && !seen;
  }
  if (rc == KL_OK && entries == 0) rc = kl_err_set(err, KL_CANTOPEN, "no directory given");
  if (rc == KL_OK && entries > 1) drop_listed(b);
  if (rc) {
    kl_broker_close(b);
    return rc;
  }
  b->single = entries == 1 && partitions == 1;
  if (b->n > 1 && (entries > 1 || b->scrubbed)) qsort(b->parts, b->n, sizeof *b->parts, cmp_part);
  *out = b;
  return KL_OK;
}

int64_t kl_rowid_at(int single, size_t place, int64_t v) {
  if (single || v < 0 || v >= (int64_t)1 << KL_ROWID_SHIFT) return v;
  return (int64_t)((uint64_t)place << KL_ROWID_SHIFT) + v;
}

int64_t kl_broker_rowid(const kl_broker *b, size_t i, int64_t v) {
  return kl_rowid_at(kl_broker_single(b), i, v);
}
