/*
** txn.c - aborted transactions and the last stable offset of a partition.
*/
#include "txn.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "file.h"

#define KL_SNAP_HEADER 10
#define KL_SNAP_ENTRY 46

/* Reading a whole file: producer snapshots and transaction indexes are
** small (one entry per producer, per aborted transaction). */
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

kl_rc kl_txnindex_read(const kl_env *env, const char *path, int64_t base, kl_txn_abort **a,
                       size_t *n, size_t *cap, kl_err *err) {
  uint8_t *p;
  size_t len;
  kl_rc rc = read_all(env, path, &p, &len, err);
  if (rc == KL_NOTFOUND) return KL_OK;
  if (rc) return rc;
  for (size_t i = 0; rc == KL_OK && i + KL_TXN_ENTRY_SIZE <= len; i += KL_TXN_ENTRY_SIZE) {
    kl_txn_abort t;
    if (!kl_txn_entry(p + i, base, &t)) {
      rc = kl_err_set(err, KL_CORRUPT, "%s: position %zu: an aborted-transaction entry Kafka "
                      "rejects (version %d, last offset %lld, segment base %lld)", path, i, p[i],
                      (long long)t.last, (long long)base);
    } else {
      if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        kl_txn_abort *q = kl_realloc(env, *a, c * sizeof *q);
        if (!q) {
          rc = kl_err_set(err, KL_NOMEM, "out of memory reading %s", path);
          break;
        }
        *a = q;
        *cap = c;
      }
      (*a)[(*n)++] = t;
    }
  }
  kl_free(env, p);
  return rc;
}

/* Open transactions while walking: producer id -> first offset.  Few
** producers are transactional at once, so a list does. */
typedef struct open_set {
  struct { int64_t pid, first; } *e;
  size_t n, cap;
} open_set;

static kl_rc open_add(const kl_env *env, open_set *s, int64_t pid, int64_t first) {
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].pid == pid) return KL_OK; /* already open: its first stays */
  }
  if (s->n == s->cap) {
    size_t c = s->cap ? s->cap * 2 : 16;
    void *q = kl_realloc(env, s->e, c * sizeof *s->e);
    if (!q) return KL_NOMEM;
    s->e = q;
    s->cap = c;
  }
  s->e[s->n].pid = pid;
  s->e[s->n].first = first;
  s->n++;
  return KL_OK;
}

static void open_remove(open_set *s, int64_t pid) {
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].pid == pid) {
      s->e[i] = s->e[--s->n];
      return;
    }
  }
}

/* The newest producer snapshot at or below leo that Kafka would load
** (version 1, CRC-32C of the rest holding), its open transactions put in
** *s; *from = its offset, or -1 when there is none to use. */
static kl_rc load_snapshot(kl_log *log, int64_t leo, open_set *s, int64_t *from, kl_err *err) {
  const kl_env *env = kl_log_env(log);
  *from = -1;
  DIR *d = opendir(kl_log_dir(log));
  if (!d) return KL_OK; /* the walk from the start finds the same */
  int64_t best = -1, off;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (kl_offset_file_name(de->d_name, ".snapshot", &off) && off <= leo && off > best) best = off;
  }
  closedir(d);
  if (best < 0) return KL_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s/%020lld.snapshot", kl_log_dir(log), (long long)best);
  uint8_t *p;
  size_t n;
  kl_rc rc = read_all(env, path, &p, &n, err);
  if (rc == KL_NOTFOUND) return KL_OK;
  if (rc) return rc;
  /* Kafka deletes a snapshot it cannot read and rebuilds from the log: so
  ** does this, by walking from the start. */
  int ok = n >= KL_SNAP_HEADER && kl_get_i16(p) == 1 &&
           kl_get_u32(p + 2) == kl_crc32c(0, p + 6, n - 6);
  int32_t count = ok ? kl_get_i32(p + 6) : 0;
  ok = ok && count >= 0 && (size_t)count == (n - KL_SNAP_HEADER) / KL_SNAP_ENTRY &&
       (n - KL_SNAP_HEADER) % KL_SNAP_ENTRY == 0;
  for (int32_t i = 0; ok && rc == KL_OK && i < count; i++) {
    const uint8_t *e = p + KL_SNAP_HEADER + (size_t)i * KL_SNAP_ENTRY;
    int64_t pid = kl_get_i64(e), first = kl_get_i64(e + 38);
    if (first >= 0 && open_add(env, s, pid, first) != KL_OK) {
      rc = kl_err_set(err, KL_NOMEM, "out of memory reading %s", path);
    }
  }
  kl_free(env, p);
  if (ok && rc == KL_OK) *from = best;
  if (!ok) s->n = 0;
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

kl_rc kl_txns_load(kl_log *log, kl_reader *rd, kl_txns *out, kl_err *err) {
  const kl_env *env = kl_log_env(log);
  memset(out, 0, sizeof *out);
  out->open_pid = -1;
  size_t cap = 0;
  kl_rc rc = KL_OK;
  char path[4096];
  for (kl_segment *s = kl_log_first(log); rc == KL_OK && s; s = kl_log_next(log, s)) {
    size_t len = strlen(s->log_path);
    snprintf(path, sizeof path, "%.*s.txnindex", (int)(len - 4), s->log_path);
    rc = kl_txnindex_read(env, path, s->base, &out->a, &out->n, &cap, err);
  }
  int64_t leo = 0, from = -1;
  open_set open = {0};
  if (rc == KL_OK) rc = kl_log_end_offset(log, rd, &leo, err);
  if (rc == KL_OK) rc = load_snapshot(log, leo, &open, &from, err);
  /* The walk: transactional data batches open their producer's
  ** transaction, its control batch (COMMIT or ABORT) closes it. */
  kl_segment *s = from < 0 ? kl_log_first(log) : kl_log_floor(log, from);
  if (!s) s = kl_log_first(log);
  for (; rc == KL_OK && s; s = kl_log_next(log, s)) {
    kl_seek sk;
    kl_scan sc;
    rc = kl_scan_seek_offset(rd, s, from < 0 ? s->base : from, &sk, err);
    if (rc == KL_OK) rc = kl_scan_start(&sc, rd, s, sk.start, INT64_MAX, sk.verify_from, err);
    if (rc) break;
    kl_batch b;
    while ((rc = kl_scan_next(&sc, &b, err)) == KL_OK) {
      if (b.last_offset < from || !b.is_transactional) continue;
      /* An empty control batch is what the log cleaner leaves of a
      ** removed transaction: Kafka's producer state passes over it. */
      if (b.is_control && b.record_count > 0) open_remove(&open, b.producer_id);
      else if (b.is_control) continue;
      else if (open_add(env, &open, b.producer_id, b.base_offset) != KL_OK) rc = KL_NOMEM;
      if (rc) break;
    }
    int stopped = sc.end == KL_END_STOP;
    kl_scan_end(&sc);
    if (rc == KL_DONE) rc = KL_OK;
    if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "out of memory reading %s", kl_log_dir(log));
    if (stopped) break;
  }
  out->lso = leo;
  for (size_t i = 0; i < open.n; i++) {
    if (open.e[i].first < out->lso) out->lso = open.e[i].first, out->open_pid = open.e[i].pid;
  }
  kl_free(env, open.e);
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
