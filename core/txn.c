/*
** txn.c - aborted transactions and the last stable offset of a partition.
*/
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "file.h"
#include "os.h"

#define KL_SNAP_HEADER 10
#define KL_SNAP_ENTRY 46

/* Reading a whole file: a producer snapshot is small (one entry per
** producer). */
static kl_rc read_all(const kl_env *env, const char *path, uint8_t **out, size_t *n, kl_err *err) {
  kl_file f;
  *out = NULL;
  *n = 0;
  kl_rc rc = kl_file_open(&f, env, path, err);
  if (rc) return rc;
  if (f.size > ((int64_t)1 << 30)) {
    kl_file_close(&f);
    return kl_err_set(err, KL_CORRUPT, "%s: %lld bytes is not a transaction file", path,
                      (long long)f.size);
  }
  uint8_t *p = kl_malloc(env, f.size ? (size_t)f.size : 1);
  if (!p) rc = kl_err_set(err, KL_NOMEM, "out of memory reading %s", path);
  else if (f.size) rc = kl_file_read(&f, 0, p, (size_t)f.size, err);
  if (rc == KL_OK) *out = p, *n = (size_t)f.size;
  else kl_free(env, p);
  kl_file_close(&f);
  return rc;
}

int kl_txn_entry(const uint8_t *p, int64_t base, kl_txn_abort *out) {
  out->pid = kl_get_i64(p + 2);
  out->first = kl_get_i64(p + 10);
  out->last = kl_get_i64(p + 18);
  return p[0] == 0 && out->last >= base;
}

/* A producer's state in a kl_txn_state. */
struct kl_txn_producer {
  kl_producer e;            /* e.pid -1: free slot */
  int64_t closed_at;        /* its last offset outside a transaction (a
                            ** marker or a non-transactional batch), -1 */
};

static size_t slot_of(int64_t pid, size_t mask) {
  return (size_t)((uint64_t)pid * 0x9E3779B97F4A7C15u) & mask;
}

/* The state of producer pid, created empty; NULL when out of memory. */
static struct kl_txn_producer *producer(const kl_env *env, kl_txn_state *st, int64_t pid) {
  if (2 * (st->n + 1) > st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 64;
    struct kl_txn_producer *p = kl_malloc(env, cap * sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < cap; i++) p[i].e.pid = -1;
    for (size_t i = 0; i < st->cap; i++) {
      if (st->p[i].e.pid < 0) continue;
      size_t h = slot_of(st->p[i].e.pid, cap - 1);
      while (p[h].e.pid >= 0) h = (h + 1) & (cap - 1);
      p[h] = st->p[i];
    }
    kl_free(env, st->p);
    st->p = p;
    st->cap = cap;
  }
  size_t mask = st->cap - 1, h = slot_of(pid, mask);
  while (st->p[h].e.pid >= 0 && st->p[h].e.pid != pid) h = (h + 1) & mask;
  struct kl_txn_producer *t = &st->p[h];
  if (t->e.pid < 0) {
    t->e = (kl_producer){pid, -1, -1, -1, 0, -1, -1, -1};
    t->closed_at = -1;
    st->n++;
  }
  return t;
}

/* A batch of a new epoch: what the producer sent before is forgotten
** (ProducerStateEntry.maybeUpdateProducerEpoch). */
static void set_epoch(kl_producer *e, int16_t epoch) {
  if (e->epoch == epoch) return;
  e->epoch = epoch;
  e->last_seq = -1;
  e->last_offset = -1;
  e->offset_delta = 0;
}

/* The sequence of a batch's last record: sequences wrap from INT32_MAX to
** 0 (DefaultRecordBatch.incrementSequence). */
static int32_t last_sequence(const kl_batch *b) {
  if (b->base_sequence < 0) return -1;
  int32_t inc = b->last_offset_delta;
  if (b->base_sequence > INT32_MAX - inc) return inc - (INT32_MAX - b->base_sequence) - 1;
  return b->base_sequence + inc;
}

kl_rc kl_txn_step(const kl_env *env, kl_txn_state *st, const kl_batch *b, int ctl_type,
                  int32_t ctl_epoch, kl_txn_end *end, int *aborted) {
  *aborted = 0;
  struct kl_txn_producer *t = producer(env, st, b->producer_id);
  if (!t) return KL_NOMEM;
  kl_producer *e = &t->e;
  if (!b->is_control) {
    set_epoch(e, b->producer_epoch);
    e->last_seq = last_sequence(b);
    e->last_offset = b->last_offset;
    e->offset_delta = b->last_offset_delta;
    e->last_ts = b->max_timestamp;
    if (b->is_transactional && e->txn_first < 0) e->txn_first = b->base_offset;
    else if (!b->is_transactional && e->txn_first < 0) t->closed_at = b->last_offset;
    return KL_OK;
  }
  if (ctl_type != KL_CONTROL_ABORT && ctl_type != KL_CONTROL_COMMIT) return KL_OK;
  if (ctl_type == KL_CONTROL_ABORT) {
    *aborted = 1;
    end->pid = b->producer_id;
    end->last = b->base_offset;
    end->lo = t->closed_at;
    end->optional = e->txn_first < 0;
    end->hi = end->optional ? b->base_offset : e->txn_first;
  }
  set_epoch(e, b->producer_epoch);
  e->coordinator_epoch = ctl_epoch;
  e->last_ts = b->max_timestamp;
  e->txn_first = -1;
  t->closed_at = b->base_offset;
  return KL_OK;
}

kl_rc kl_txn_open(const kl_env *env, kl_txn_state *st, int64_t pid, int64_t first) {
  struct kl_txn_producer *t = producer(env, st, pid);
  if (!t) return KL_NOMEM;
  if (t->e.txn_first < 0) t->e.txn_first = first;
  return KL_OK;
}

kl_rc kl_txn_restore(const kl_env *env, kl_txn_state *st, const kl_producer *p) {
  struct kl_txn_producer *t = producer(env, st, p->pid);
  if (!t) return KL_NOMEM;
  t->e = *p;
  return KL_OK;
}

static int cmp_producer(const void *a, const void *b) {
  const kl_producer *x = a, *y = b;
  return (x->pid > y->pid) - (x->pid < y->pid);
}

kl_rc kl_txn_producers(const kl_env *env, const kl_txn_state *st, kl_producer **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (st->n == 0) return KL_OK;
  kl_producer *v = kl_malloc(env, st->n * sizeof *v);
  if (!v) return KL_NOMEM;
  size_t k = 0;
  for (size_t i = 0; i < st->cap; i++) {
    if (st->p[i].e.pid >= 0) v[k++] = st->p[i].e;
  }
  qsort(v, k, sizeof *v, cmp_producer);
  *out = v;
  *n = k;
  return KL_OK;
}

int64_t kl_txn_first_open(const kl_txn_state *st, int64_t *pid) {
  int64_t first = INT64_MAX;
  *pid = -1;
  for (size_t i = 0; i < st->cap; i++) {
    const kl_producer *t = &st->p[i].e;
    if (t->pid >= 0 && t->txn_first >= 0 && t->txn_first < first) {
      first = t->txn_first;
      *pid = t->pid;
    }
  }
  return first;
}

void kl_txn_state_reset(kl_txn_state *st) {
  for (size_t i = 0; i < st->cap; i++) st->p[i].e.pid = -1;
  st->n = 0;
}

void kl_txn_state_free(const kl_env *env, kl_txn_state *st) {
  kl_free(env, st->p);
  st->p = NULL;
  st->n = st->cap = 0;
}

/* A producer snapshot's entries. */
typedef struct open_set {
  kl_producer *e;
  size_t n, cap;
} open_set;

static kl_rc open_add(const kl_env *env, open_set *s, const kl_producer *p) {
  if (s->n == s->cap) {
    size_t c = s->cap ? s->cap * 2 : 16;
    void *q = kl_realloc(env, s->e, c * sizeof *s->e);
    if (!q) return KL_NOMEM;
    s->e = q;
    s->cap = c;
  }
  s->e[s->n++] = *p;
  return KL_OK;
}

/* Entry i of a snapshot (ProducerSnapshot's ProducerEntry):
**   +-----+-------+---------+---------+---------+-----------+-------+---------------+
**   | pid | epoch | lastSeq | lastOff | offDelta| timestamp | coord | txnFirstOffset|
**   | i64 |  i16  |   i32   |   i64   |   i32   |    i64    |  i32  |      i64      |
**   +-----+-------+---------+---------+---------+-----------+-------+---------------+ */
static kl_producer snapshot_entry(const uint8_t *e) {
  kl_producer p;
  p.pid = kl_get_i64(e);
  p.epoch = kl_get_i16(e + 8);
  p.last_seq = kl_get_i32(e + 10);
  p.last_offset = kl_get_i64(e + 14);
  p.offset_delta = kl_get_i32(e + 22);
  p.last_ts = kl_get_i64(e + 26);
  p.coordinator_epoch = kl_get_i32(e + 34);
  p.txn_first = kl_get_i64(e + 38);
  return p;
}

/* Read the producer snapshot at path into *s: *ok when Kafka would load it
** (version 1, CRC-32C of the rest holding, whole entries), else *ok = 0
** and s empty (Kafka deletes a snapshot it cannot read and tries the one
** before).  KL_NOMEM, KL_IO. */
static kl_rc read_snapshot(const kl_env *env, const char *path, open_set *s, int *ok,
                           kl_err *err) {
  uint8_t *p;
  size_t n;
  *ok = 0;
  s->n = 0;
  kl_err re = {0};
  kl_rc rc = read_all(env, path, &p, &n, &re);
  if (rc == KL_NOTFOUND || rc == KL_CORRUPT) return KL_OK; /* gone, or too large to be one */
  if (rc) return kl_err_set(err, rc, "%s", re.msg);
  *ok = n >= KL_SNAP_HEADER && kl_get_i16(p) == 1 &&
        kl_get_u32(p + 2) == kl_crc32c(0, p + 6, n - 6);
  int32_t count = *ok ? kl_get_i32(p + 6) : 0;
  *ok = *ok && count >= 0 && (size_t)count == (n - KL_SNAP_HEADER) / KL_SNAP_ENTRY &&
        (n - KL_SNAP_HEADER) % KL_SNAP_ENTRY == 0;
  for (int32_t i = 0; *ok && rc == KL_OK && i < count; i++) {
    kl_producer e = snapshot_entry(p + KL_SNAP_HEADER + (size_t)i * KL_SNAP_ENTRY);
    if (open_add(env, s, &e) != KL_OK) {
      rc = kl_err_set(err, KL_NOMEM, "out of memory reading %s", path);
    }
  }
  kl_free(env, p);
  if (!*ok) s->n = 0;
  return rc;
}

static int cmp_i64_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x < y) - (x > y);
}

/* Is a snapshot at off in the range truncateAndReload keeps: at or below
** leo and, with the log start start given (>= 0), above it (one at the log
** start or below describes offsets no longer in the log). */
static int snapshot_in_range(int64_t off, int64_t start, int64_t leo) {
  return off <= leo && (start < 0 || off > start);
}

/* The offsets of the producer snapshots Kafka's loader keeps for log, the
** newest first, into *out (kl_malloc'd, NULL when none): those at a
** segment's base offset, and of the others (strays) only the largest, when
** it is at or above every segment's base (the one a clean shutdown writes
** at the log end) (ProducerStateManager.removeStraySnapshots); then only
** those snapshot_in_range keeps (truncateAndReload).  KL_NOMEM. */
static kl_rc snapshot_offsets(kl_log *log, int64_t start, int64_t leo, int64_t **out, size_t *n,
                              kl_err *err) {
  const kl_env *env = kl_log_env(log);
  *out = NULL;
  *n = 0;
  void *d = kl_os_opendir(env, kl_log_dir(log));
  if (!d) return KL_OK; /* the walk from the start finds the same */
  int64_t *o = NULL, stray = -1, off;
  size_t cap = 0;
  const char *name;
  int isdir;
  kl_rc rc = KL_OK;
  while (rc == KL_OK && kl_os_readdir(env, d, &name, &isdir) > 0) {
    if (isdir || !kl_offset_file_name(name, ".snapshot", &off)) continue;
    const kl_segment *s = kl_log_floor(log, off);
    if (!s || s->base != off) {
      if (off > stray) stray = off;
      continue;
    }
    if (*n == cap) {
      size_t c = cap ? cap * 2 : 8;
      int64_t *q = kl_realloc(env, o, (c + 1) * sizeof *q);
      if (!q) {
        rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", kl_log_dir(log));
        break;
      }
      o = q;
      cap = c;
    }
    if (snapshot_in_range(off, start, leo)) o[(*n)++] = off;
  }
  kl_os_closedir(env, d);
  const kl_segment *last = kl_log_last(log);
  if (rc == KL_OK && stray >= 0 && snapshot_in_range(stray, start, leo) &&
      (!last || stray >= last->base)) {
    if (!o && !(o = kl_malloc(env, sizeof *o))) {
      rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", kl_log_dir(log));
    } else {
      o[(*n)++] = stray; /* room: cap + 1 slots, or the one just made */
    }
  }
  if (rc) {
    kl_free(env, o);
    *n = 0;
    return rc;
  }
  if (*n > 1) qsort(o, *n, sizeof *o, cmp_i64_desc);
  *out = o;
  return KL_OK;
}

/* The newest producer snapshot that Kafka would load (snapshot_offsets,
** start and leo as there), its entries put in *s; *from = its offset, or
** -1 when there is none to use.
** Kafka loads the newest it keeps (snapshot_offsets) and, when that one
** does not read, deletes it and tries the one before, down to none (the
** state is then rebuilt from the log start).
**   +-------------+-----------+-------------+------------------------+
**   | version i16 | crc32c u32| count i32   | count x 46-byte entry  |
**   +-------------+-----------+-------------+------------------------+
** the CRC covering bytes 6 to the end. */
static kl_rc load_snapshot(kl_log *log, int64_t start, int64_t leo, open_set *s, int64_t *from,
                           kl_err *err) {
  const kl_env *env = kl_log_env(log);
  *from = -1;
  int64_t *o;
  size_t n;
  kl_rc rc = snapshot_offsets(log, start, leo, &o, &n, err);
  for (size_t i = 0; rc == KL_OK && i < n && *from < 0; i++) {
    char path[4096];
    int ok;
    snprintf(path, sizeof path, "%s/%020lld.snapshot", kl_log_dir(log), (long long)o[i]);
    if ((rc = read_snapshot(env, path, s, &ok, err)) == KL_OK && ok) *from = o[i];
  }
  kl_free(env, o);
  return rc;
}

static int cmp_abort(const void *a, const void *b) {
  const kl_txn_abort *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

void kl_txns_free(const kl_env *env, kl_txns *t) {
  kl_free(env, t->a);
  t->a = NULL;
  t->n = 0;
}

/* The type of control batch b's first record (Kafka reads no other), -1
** when it has none.  A record Kafka rejects is KL_CORRUPT naming the file
** and position, or -1 with rd in skip mode. */
static kl_rc control_type(kl_scan *sc, const kl_batch *b, int *type, int32_t *epoch,
                          kl_err *err) {
  *type = -1;
  if (b->record_count <= 0) return KL_OK; /* what the log cleaner leaves */
  kl_records it;
  kl_record r;
  kl_err e = {0};
  kl_rc rc = kl_scan_records(sc, b, &it, &e);
  if (rc == KL_OK) rc = kl_records_next(&it, &r, &e);
  if (rc == KL_OK) {
    rc = kl_control_parse(&r, type, epoch, &e);
    if (rc) rc = kl_scan_batch_error(sc->seg, b->position, rc, &e);
  }
  if (rc == KL_DONE) rc = KL_OK;
  if (rc == KL_CORRUPT && sc->rd->skip) {
    sc->rd->stats->batches_skipped++;
    *type = -1;
    return KL_OK;
  }
  if (rc && err) *err = e;
  return rc;
}

/* Add the aborted transaction x to t (*cap allocated). */
static kl_rc add_abort(const kl_env *env, kl_txns *t, size_t *cap, const kl_txn_end *x) {
  if (t->n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    kl_txn_abort *q = kl_realloc(env, t->a, c * sizeof *q);
    if (!q) return KL_NOMEM;
    t->a = q;
    *cap = c;
  }
  kl_txn_abort *a = &t->a[t->n++];
  a->pid = x->pid;
  a->first = x->hi;
  a->last = x->last;
  return KL_OK;
}

/* The broker's state at the snapshot's offset is the snapshot's: it
** replaces what the walk learnt (transactions begun before the log start
** are known to it only). */
static kl_rc apply_snapshot(const kl_env *env, kl_txn_state *st, const open_set *snap) {
  kl_txn_state_reset(st);
  for (size_t i = 0; i < snap->n; i++) {
    if (kl_txn_restore(env, st, &snap->e[i]) != KL_OK) return KL_NOMEM;
  }
  return KL_OK;
}

kl_rc kl_txns_load(kl_log *log, kl_reader *rd, kl_txns *out, kl_err *err) {
  kl_txn_state st = {0};
  kl_txn_origin origin;
  kl_rc rc = kl_txns_load_state(log, rd, -1, out, &st, &origin, err);
  kl_txn_state_free(kl_log_env(log), &st);
  return rc;
}

/* What the walk of kl_txns_load_state carries from segment to segment. */
typedef struct load_walk {
  const kl_env *env;
  kl_txns *out;
  size_t cap;           /* of out->a */
  kl_txn_state st;
  const open_set *snap; /* the snapshot, applied once the walk reaches from */
  int64_t from, max_ts;
  int snapped;
} load_walk;

/* One batch of the walk: the snapshot applied once reached, the batch's
** step in its producer's transaction, an aborted one noted. */
static kl_rc walk_batch(load_walk *w, kl_scan *sc, const kl_batch *b, kl_err *err) {
  kl_rc rc;
  if (!w->snapped && b->last_offset >= w->from) {
    w->snapped = 1;
    if ((rc = apply_snapshot(w->env, &w->st, w->snap)) != KL_OK) return rc;
  }
  if (b->max_timestamp > w->max_ts) w->max_ts = b->max_timestamp;
  if (b->magic != 2 || b->producer_id < 0) return KL_OK;
  int type = -1, aborted;
  int32_t epoch = -1;
  kl_txn_end end;
  if (b->is_control && (rc = control_type(sc, b, &type, &epoch, err)) != KL_OK) return rc;
  if ((rc = kl_txn_step(w->env, &w->st, b, type, epoch, &end, &aborted)) != KL_OK) return rc;
  if (aborted && !end.optional && (rc = add_abort(w->env, w->out, &w->cap, &end)) != KL_OK) {
    return rc;
  }
  return KL_OK;
}

/* Every batch of segment s through walk_batch; *stopped when the scan
** stopped the log there (nothing after it is read). */
static kl_rc walk_segment(load_walk *w, kl_reader *rd, kl_segment *s, int *stopped,
                          kl_err *err) {
  kl_scan sc;
  *stopped = 0;
  kl_rc rc = kl_scan_start(&sc, rd, s, 0, INT64_MAX, 0, err);
  if (rc != KL_OK) return rc;
  kl_batch b;
  while ((rc = kl_scan_next(&sc, &b, err)) == KL_OK) {
    if ((rc = walk_batch(w, &sc, &b, err)) != KL_OK) break;
  }
  *stopped = sc.end == KL_END_STOP;
  kl_scan_end(&sc);
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_txns_load_state(kl_log *log, kl_reader *rd, int64_t start, kl_txns *out,
                         kl_txn_state *stp, kl_txn_origin *origin, kl_err *err) {
  const kl_env *env = kl_log_env(log);
  memset(out, 0, sizeof *out);
  out->open_pid = -1;
  int64_t leo = 0;
  open_set snap = {0};
  load_walk w = {env, out, 0, {0}, &snap, -1, -1, 0};
  kl_rc rc = kl_log_end_offset(log, rd, &leo, err);
  if (rc == KL_OK) rc = load_snapshot(log, start, leo, &snap, &w.from, err);
  int64_t loaded = w.from;
  /* With no snapshot to load, Kafka's loader starts empty at the log start
  ** and reads from the batch holding it: what lies below is forgotten. */
  if (w.from < 0 && start >= 0) w.from = start;
  w.snapped = w.from < 0;
  /* One walk from the log start: every ABORT marker of an open transaction
  ** is an aborted transaction, what is open at the end holds the last
  ** stable offset. */
  for (kl_segment *s = kl_log_first(log); rc == KL_OK && s; s = kl_log_next(log, s)) {
    int stopped;
    rc = walk_segment(&w, rd, s, &stopped, err);
    if (stopped) break;
  }
  if (rc == KL_OK && !w.snapped) rc = apply_snapshot(env, &w.st, &snap);
  if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "out of memory reading %s", kl_log_dir(log));
  int64_t pid, first = kl_txn_first_open(&w.st, &pid);
  out->lso = leo;
  if (first < out->lso) out->lso = first, out->open_pid = pid;
  kl_free(env, snap.e);
  origin->snapshot = loaded;
  origin->end = leo;
  origin->max_ts = w.max_ts;
  *stp = w.st;
  if (rc) {
    kl_txns_free(env, out);
    return rc;
  }
  if (out->n > 1) qsort(out->a, out->n, sizeof *out->a, cmp_abort);
  return KL_OK;
}

int kl_txns_aborted(const kl_txns *t, const kl_batch *b) {
  if (!b->is_transactional || b->is_control || t->n == 0) return 0;
  /* The last of the producer's aborted transactions starting at or before
  ** the batch's last offset: the only one that can hold it (a producer has
  ** one transaction open at a time). */
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const kl_txn_abort *x = &t->a[mid];
    if (x->pid < b->producer_id || (x->pid == b->producer_id && x->first <= b->last_offset)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return 0;
  const kl_txn_abort *x = &t->a[lo - 1];
  return x->pid == b->producer_id && x->first <= b->last_offset && x->last > b->base_offset;
}
