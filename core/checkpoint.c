/*
** checkpoint.c - Kafka's text offset checkpoint files.
*/
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "os.h"
#include "topic.h"

/* Checkpoints hold one line per partition of a log directory: a few MiB
** for the largest brokers.  More is not a checkpoint. */
#define KL_CKPT_MAX_BYTES ((size_t)64 << 20)

const char *kl_checkpoint_name(int which) {
  static const char *const names[KL_CKPT_COUNT] = {"log-start-offset-checkpoint",
                                                   "replication-offset-checkpoint",
                                                   "recovery-point-offset-checkpoint"};
  return which >= 0 && which < KL_CKPT_COUNT ? names[which] : NULL;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* A topic field as a line carries it: not empty, and no whitespace or line
** end, on which the reader splits.  The reader holds its fields to this and
** the writer refuses what it would not read back. */
static int is_field(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    if (is_ws(s[i]) || s[i] == '\n') return 0;
  }
  return 1;
}

/* A decimal integer as Java's parseLong/parseInt accept it (an optional
** sign, then digits), within [lo, hi]. */
static int parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (n > 0 && (s[0] == '-' || s[0] == '+')) neg = s[0] == '-', i = 1;
  if (i == n) return 0;
  uint64_t v = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > (uint64_t)INT64_MAX + 1) return 0;
  }
  if (!neg && v > (uint64_t)INT64_MAX) return 0;
  int64_t x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  if (x < lo || x > hi) return 0;
  *out = x;
  return 1;
}

/* Split a line into at most max fields on runs of whitespace, as Java's
** split("\\s+") does: a leading run gives an empty first field. */
static int split(const char *s, size_t n, const char **f, size_t *fl, int max) {
  int k = 0;
  size_t i = 0;
  for (;;) {
    size_t st = i;
    while (i < n && !is_ws(s[i])) i++;
    if (k == max) return max + 1;
    f[k] = s + st;
    fl[k] = i - st;
    k++;
    if (i == n) break;
    while (i < n && is_ws(s[i])) i++;
    if (i == n) break; /* trailing whitespace: no empty last field */
  }
  return k;
}

static int cmp_entry(const void *a, const void *b) {
  const kl_ckpt_entry *x = a, *y = b;
  int c = kl_topic_cmp(x->topic, strlen(x->topic), x->partition, y->topic, strlen(y->topic),
                       y->partition);
  if (c) return c;
  return x->line > y->line ? -1 : x->line < y->line; /* the later line first */
}

static int cmp_key(const kl_ckpt_entry *x, const char *topic, int32_t partition) {
  return kl_topic_cmp(x->topic, strlen(x->topic), x->partition, topic, strlen(topic), partition);
}

void kl_checkpoint_free(const kl_env *env, kl_ckpt *c) {
  for (size_t i = 0; i < c->n; i++) kl_free(env, c->e[i].topic);
  kl_free(env, c->e);
  c->e = NULL;
  c->n = 0;
}

/* One entry line split into its fields: take it (KL_OK) or say why not. */
typedef kl_rc (*entry_fn)(void *ud, const char *const *f, const size_t *fl, size_t line,
                          kl_err *err);

/* Where walk_file is in one file: what the header said, how many entries
** it has taken, and what to do with each. */
/* An entry line read in one pass when it has the shape Kafka writes: 1
** when taken (*rc says how it went), 0 to leave it to split and entry. */
typedef int (*fast_fn)(void *ud, const char *s, size_t n, size_t line, kl_rc *rc);

typedef struct walk {
  const char *path, *shape;
  int nfields;
  entry_fn entry;
  fast_fn fast;             /* or NULL */
  void *ud;
  int64_t version, count;
  size_t seen;
} walk;

/* The whole of path into *buf (owned by the caller, NULL when empty);
** an absent file is an empty one. */
static kl_rc read_whole(const kl_env *env, const char *path, char **buf, size_t *len,
                        kl_err *err) {
  *buf = NULL;
  *len = 0;
  kl_file f;
  kl_rc rc = kl_file_open(&f, env, path, err);
  if (rc == KL_NOTFOUND) return KL_OK;
  if (rc) return rc;
  if (f.size > (int64_t)KL_CKPT_MAX_BYTES) {
    kl_file_close(&f);
    return kl_err_set(err, KL_CORRUPT, "%s: larger than %zu bytes: not a checkpoint file", path,
                      KL_CKPT_MAX_BYTES);
  }
  size_t n = (size_t)f.size;
  char *b = n ? kl_malloc(env, n) : NULL;
  if (n && !b) rc = kl_err_set(err, KL_NOMEM, "out of memory reading %s", path);
  else if (n) rc = kl_file_read(&f, 0, b, n, err);
  kl_file_close(&f);
  if (rc) {
    kl_free(env, b);
    return rc;
  }
  *buf = b;
  *len = n;
  return KL_OK;
}

/* An entry line (3rd on) of k fields: check it against the count and the
** shape, then give it to the entry callback. */
static kl_rc walk_entry(walk *w, const char *const *fld, const size_t *fl, int k, size_t line,
                        kl_err *err) {
  if ((size_t)w->count <= w->seen) {
    return kl_err_set(err, KL_CORRUPT, "%s:%zu: more entries than the %lld announced on line 2",
                      w->path, line, (long long)w->count);
  }
  if (k != w->nfields) {
    return kl_err_set(err, KL_CORRUPT, "%s:%zu: malformed entry (expected %s)", w->path, line,
                      w->shape);
  }
  kl_err e;
  kl_err_clear(&e);
  kl_rc rc = w->entry(w->ud, fld, fl, line, &e);
  if (rc == KL_CORRUPT) {
    kl_err_set(err, rc, "%s:%zu: malformed entry (expected %s)", w->path, line, w->shape);
  } else if (rc) {
    kl_err_set(err, rc, "out of memory reading %s", w->path);
  }
  w->seen++;
  return rc;
}

/* Line number line, s[0..n) without its \n: the version, the count or an
** entry. */
static kl_rc walk_line(walk *w, const char *s, size_t n, size_t line, kl_err *err) {
  kl_rc rc;
  if (line > 2 && w->fast && (size_t)w->count > w->seen && w->fast(w->ud, s, n, line, &rc)) {
    w->seen++;
    return rc == KL_OK ? KL_OK : kl_err_set(err, rc, "out of memory reading %s", w->path);
  }
  const char *fld[4];
  size_t fl[4];
  int k = split(s, n, fld, fl, 3);
  if (line == 1) {
    if (k != 1 || !parse_int(fld[0], fl[0], INT64_MIN, INT64_MAX, &w->version)) {
      return kl_err_set(err, KL_CORRUPT, "%s:1: malformed version line", w->path);
    }
    if (w->version != 0) {
      return kl_err_set(err, KL_CORRUPT, "%s:1: unrecognized version %lld (expected 0)", w->path,
                        (long long)w->version);
    }
    return KL_OK;
  }
  if (line == 2) {
    if (k != 1 || !parse_int(fld[0], fl[0], 0, INT32_MAX, &w->count)) {
      return kl_err_set(err, KL_CORRUPT, "%s:2: malformed entry count", w->path);
    }
    return KL_OK;
  }
  return walk_entry(w, fld, fl, k, line, err);
}

/* The framing every checkpoint file of Kafka's shares (CheckpointFile):
** a version line (0), an entry count line, then exactly that many lines of
** nfields fields each, given to entry; shape names the fields for
** messages.  An absent or empty file has no entries. */
static kl_rc walk_file(const kl_env *env, const char *path, int nfields, const char *shape,
                       entry_fn entry, fast_fn fast, void *ud, kl_err *err) {
  char *buf;
  size_t len;
  kl_rc rc = read_whole(env, path, &buf, &len, err);
  if (rc || len == 0) {
    kl_free(env, buf);
    return rc;
  }
  walk w = {path, shape, nfields, entry, fast, ud, -1, -1, 0};
  /* Lines end in \n; a \r before it belongs to the line's whitespace. */
  size_t pos = 0, line = 0;
  while (rc == KL_OK && pos < len) {
    const char *s = buf + pos;
    const char *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    pos += n + (nl != NULL);
    line++;
    rc = walk_line(&w, s, n, line, err);
  }
  if (rc == KL_OK && line < 2) {
    rc = kl_err_set(err, KL_CORRUPT, "%s:%zu: no entry count line", path, line + 1);
  } else if (rc == KL_OK && (int64_t)w.seen != w.count) {
    rc = kl_err_set(err, KL_CORRUPT, "%s:%zu: expected %lld entries but found only %zu", path,
                    line + 1, (long long)w.count, w.seen);
  }
  kl_free(env, buf);
  return rc;
}

typedef struct offsets_ud {
  const kl_env *env;
  kl_ckpt *out;
  size_t cap;
  const char *only;         /* keep this topic's entries alone, or NULL */
  size_t only_n;
  int64_t only_part;        /* and of it this partition's alone, or -1 */
} offsets_ud;

static kl_rc keep_offset(offsets_ud *u, const char *topic, size_t tn, int32_t partition,
                         int64_t off, size_t line);

/* "<topic> <partition> <offset>" */
static kl_rc offset_entry(void *ud, const char *const *fld, const size_t *fl, size_t line,
                          kl_err *err) {
  offsets_ud *u = ud;
  int64_t p, off;
  if (!is_field(fld[0], fl[0]) || !parse_int(fld[1], fl[1], INT32_MIN, INT32_MAX, &p) ||
      !parse_int(fld[2], fl[2], INT64_MIN, INT64_MAX, &off)) {
    return KL_CORRUPT;
  }
  return keep_offset(u, fld[0], fl[0], (int32_t)p, off, line);
}

/* A digit run of at most max digits at *p (before e), its value in *v. */
static int digits(const char **p, const char *e, int max, uint64_t *v) {
  const char *s = *p, *lim = e - s > max ? s + max : e;
  uint64_t x = 0;
  unsigned d;
  while (s < lim && (d = (unsigned)(unsigned char)*s - '0') <= 9) x = x * 10 + d, s++;
  if (s == *p || (s < e && (unsigned)(unsigned char)*s - '0' <= 9)) return 0;
  *p = s;
  *v = x;
  return 1;
}

/* The length of the run of bytes above ' ' at the start of s[0..n): eight
** at a time (a byte below 0x21 is found by the borrow it makes; bytes of
** 0x80 and above, never below, are masked out). */
static size_t graphic_run(const char *s, size_t n) {
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    if (((w - ones * 0x21) & ~w & highs) != 0) break;
  }
  while (i < n && (unsigned char)s[i] > ' ') i++;
  return i;
}

/* "<topic> <partition> <offset>" as Kafka writes it: single spaces, a
** partition of at most 9 digits, an offset of at most 18 (no sign but a
** minus on the offset), no other blank.  Every line of a log directory's
** three checkpoints is read for each listing, a named one included, and
** this shape takes a fraction of what split and parse_int cost (a line of
** another topic than a named listing keeps is only checked); any other
** line, valid or not, is theirs to judge. */
static int offset_fast(void *ud, const char *s, size_t n, size_t line, kl_rc *rc) {
  offsets_ud *u = ud;
  const char *e = s + n;
  size_t tn = graphic_run(s, n); /* blanks and controls end the topic */
  const char *p = s + tn;
  if (tn == 0 || p == e || *p != ' ') return 0;
  p++;
  uint64_t part, off;
  if (!digits(&p, e, 9, &part) || p == e || *p++ != ' ') return 0;
  int neg = p < e && *p == '-';
  p += neg;
  if (!digits(&p, e, 18, &off) || p != e) return 0;
  *rc = KL_OK;
  if (u->only && (tn != u->only_n || memcmp(s, u->only, tn) != 0)) return 1;
  if (u->only_part >= 0 && (int64_t)part != u->only_part) return 1;
  *rc = keep_offset(ud, s, tn, (int32_t)part, neg ? -(int64_t)off : (int64_t)off, line);
  return 1;
}

static kl_rc keep_offset(offsets_ud *u, const char *topic, size_t tn, int32_t partition,
                         int64_t off, size_t line) {
  if (u->only && (tn != u->only_n || memcmp(topic, u->only, tn) != 0)) return KL_OK;
  if (u->only_part >= 0 && partition != u->only_part) return KL_OK;
  kl_ckpt *out = u->out;
  if (out->n == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 16;
    kl_ckpt_entry *e = kl_realloc(u->env, out->e, cap * sizeof *e);
    if (!e) return KL_NOMEM;
    out->e = e;
    u->cap = cap;
  }
  char *t = kl_malloc(u->env, tn + 1);
  if (!t) return KL_NOMEM;
  memcpy(t, topic, tn);
  t[tn] = 0;
  out->e[out->n].topic = t;
  out->e[out->n].partition = partition;
  out->e[out->n].offset = off;
  out->e[out->n].line = line;
  out->n++;
  return KL_OK;
}

kl_rc kl_checkpoint_read(const kl_env *env, const char *path, kl_ckpt *out, kl_err *err) {
  return kl_checkpoint_read_topic(env, path, NULL, 0, out, err);
}

kl_rc kl_checkpoint_read_topic(const kl_env *env, const char *path, const char *topic, size_t tn,
                               kl_ckpt *out, kl_err *err) {
  return kl_checkpoint_read_part(env, path, topic, tn, -1, out, err);
}

kl_rc kl_checkpoint_read_part(const kl_env *env, const char *path, const char *topic, size_t tn,
                              int64_t partition, kl_ckpt *out, kl_err *err) {
  out->e = NULL;
  out->n = 0;
  offsets_ud u = {env, out, 0, topic, tn, topic ? partition : -1};
  kl_rc rc = walk_file(env, path, 3, "<topic> <partition> <offset>", offset_entry, offset_fast,
                       &u, err);
  if (rc) {
    kl_checkpoint_free(env, out);
    return rc;
  }
  if (out->n > 1) {
    qsort(out->e, out->n, sizeof *out->e, cmp_entry);
  }
  return KL_OK;
}

typedef struct epochs_ud {
  const kl_env *env;
  kl_epoch_ckpt *out;
  size_t cap;
} epochs_ud;

/* "<leader epoch> <start offset>" (LeaderEpochCheckpointFile) */
static kl_rc epoch_entry(void *ud, const char *const *fld, const size_t *fl, size_t line,
                         kl_err *err) {
  epochs_ud *u = ud;
  int64_t epoch, off;
  if (!parse_int(fld[0], fl[0], INT32_MIN, INT32_MAX, &epoch) ||
      !parse_int(fld[1], fl[1], INT64_MIN, INT64_MAX, &off)) {
    return KL_CORRUPT;
  }
  kl_epoch_ckpt *out = u->out;
  if (out->n == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 16;
    kl_epoch_entry *e = kl_realloc(u->env, out->e, cap * sizeof *e);
    if (!e) return KL_NOMEM;
    out->e = e;
    u->cap = cap;
  }
  out->e[out->n].epoch = (int32_t)epoch;
  out->e[out->n].start_offset = off;
  out->e[out->n].line = line;
  out->n++;
  return KL_OK;
}

kl_rc kl_epoch_checkpoint_read(const kl_env *env, const char *path, kl_epoch_ckpt *out,
                               kl_err *err) {
  out->e = NULL;
  out->n = 0;
  epochs_ud u = {env, out, 0};
  kl_rc rc = walk_file(env, path, 2, "<leader epoch> <start offset>", epoch_entry, NULL, &u,
                       err);
  if (rc) kl_epoch_checkpoint_free(env, out);
  return rc;
}

void kl_epoch_checkpoint_free(const kl_env *env, kl_epoch_ckpt *c) {
  kl_free(env, c->e);
  c->e = NULL;
  c->n = 0;
}

int64_t kl_checkpoint_get(const kl_ckpt *c, const char *topic, int32_t partition) {
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_key(&c->e[mid], topic, partition) < 0) lo = mid + 1;
    else hi = mid;
  }
  /* Of duplicates, sorted later line first: the one Kafka's map keeps. */
  return lo < c->n && cmp_key(&c->e[lo], topic, partition) == 0 ? c->e[lo].offset : -1;
}

int64_t kl_checkpoint_next(const kl_ckpt *c, size_t *pos, const char *topic, int32_t partition) {
  while (*pos < c->n && cmp_key(&c->e[*pos], topic, partition) < 0) (*pos)++;
  return *pos < c->n && cmp_key(&c->e[*pos], topic, partition) == 0 ? c->e[*pos].offset : -1;
}

/* Hold the log directory's checkpoint updates for dirfd's holder alone: an
** exclusive flock(2) on the directory, which only checkpoint writers take
** (a broker's .lock is a record lock on a file, readers take none). */
static kl_rc lock_dir(const kl_env *env, int dirfd, const char *logdir, kl_err *err) {
  while (kl_os_lock(env, dirfd, KL_LOCK_DIR_EX) != 0) {
    if (errno != EINTR) {
      return kl_err_set(err, KL_IO, "%s: cannot lock for a checkpoint update: %s", logdir,
                        strerror(errno));
    }
  }
  return KL_OK;
}

static kl_rc put_line(const kl_env *env, kl_buf *b, const char *topic, int32_t partition,
                      int64_t offset) {
  char num[48];
  snprintf(num, sizeof num, " %d %lld\n", partition, (long long)offset);
  kl_rc rc = kl_buf_append(env, b, topic, strlen(topic));
  return rc ? rc : kl_buf_append(env, b, num, strlen(num));
}

kl_rc kl_checkpoint_put(const kl_env *env, const char *logdir, int which, const char *topic,
                        int32_t partition, int64_t offset, kl_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", logdir, kl_checkpoint_name(which));
  if (!is_field(topic, strlen(topic))) {
    return kl_err_set(err, KL_MISUSE, "%s: topic \"%s\" cannot be an entry (empty, or with "
                      "whitespace)", path, topic);
  }
  int d;
  kl_rc rc = kl_fd_open(env, logdir, O_RDONLY | O_DIRECTORY, 0, &d, err);
  if (rc == KL_NOTFOUND) return kl_err_set(err, KL_IO, "cannot open %s: no such directory", logdir);
  if (rc) return rc;
  /* From the read to the rename: an update made meanwhile is not lost. */
  if ((rc = lock_dir(env, d, logdir, err)) != KL_OK) {
    kl_os_close(env, d);
    return rc;
  }
  kl_ckpt c;
  if ((rc = kl_checkpoint_read(env, path, &c, err)) != KL_OK) {
    kl_os_close(env, d); /* and the lock with it */
    return rc;
  }
  int found = 0;
  for (size_t i = 0; i < c.n; i++) {
    if (strcmp(c.e[i].topic, topic) == 0 && c.e[i].partition == partition) found = 1;
  }
  kl_buf b = {0};
  char head[64];
  snprintf(head, sizeof head, "0\n%zu\n", c.n + !found);
  rc = kl_buf_append(env, &b, head, strlen(head));
  for (size_t i = 0; i < c.n && rc == KL_OK; i++) {
    int mine = strcmp(c.e[i].topic, topic) == 0 && c.e[i].partition == partition;
    rc = put_line(env, &b, c.e[i].topic, c.e[i].partition, mine ? offset : c.e[i].offset);
  }
  if (rc == KL_OK && !found) rc = put_line(env, &b, topic, partition, offset);
  kl_checkpoint_free(env, &c);
  if (rc) {
    kl_buf_free(env, &b);
    kl_os_close(env, d);
    return kl_err_set(err, KL_NOMEM, "out of memory writing %s", path);
  }
  /* A temporary name of this writer's own: one that died mid-write leaves
  ** its file to no one else's rename. */
  rc = kl_file_replace(env, d, logdir, path, b.p, b.len, err);
  kl_buf_free(env, &b);
  kl_os_close(env, d);
  return rc;
}
