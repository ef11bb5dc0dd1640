/*
** log_read.c - reading kafka_log: xOpen, xFilter (the terms of the plan,
** terms.h), the walk over the chosen partitions, xColumn and xRowid.
*/
#include "log_vtab.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ahead.h"
#include "bcache.h"
#include "broker.h"
#include "codec.h"
#include "headers.h"
#include "plan.h"
#include "terms.h"
#include "txn.h"
#include "utf8.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

int lv_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  kl_vcursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->eof = 1;
  c->lane = KL_NO_LANE;
  kl_keyset_init(&c->keys, kl_sqlite_env());
  kl_vtab *vt = (kl_vtab *)base;
  /* Places are given for the table's life (places.h); a table that has
  ** read half as many partition directories as rowids tell apart starts
  ** again when no statement reads it. */
  if (vt->cursors++ == 0 && kl_places_count(vt->places) > KL_PLACES_MAX / 2) {
    kl_places_clear(vt->places);
    if (vt->bk) kl_listref_forget_places(vt->bk);
  }
  *out = &c->base;
  return SQLITE_OK;
}

/* Close every lane (their logs and core cursors, which part, ref and cur
** may be borrowing). */
static void free_lanes(kl_vcursor *c) {
  if (!c->lanes) return;
  if (c->lane != KL_NO_LANE) c->cur = NULL, c->ref = NULL;
  for (size_t k = 0; k < c->nsel; k++) {
    kl_cursor_free(c->lanes[k].cur);
    kl_logref_release(c->lanes[k].ref);
  }
  sqlite3_free(c->lanes);
  c->lanes = NULL;
  c->lane = KL_NO_LANE;
  c->nlive = 0;
  sqlite3_free(c->heap);
  c->heap = NULL;
  c->nheap = 0;
  c->heap_built = 0;
}

/* Forget the plan's state; the log and the core cursor stay for the next
** xFilter of the same statement (a join probes once per outer row). */
static void reset_scan(kl_vcursor *c) {
  free_lanes(c);
  sqlite3_free(c->in);
  c->in = NULL;
  c->n_in = c->i_in = 0;
  sqlite3_free(c->pairs);
  c->pairs = NULL;
  c->n_pairs = c->i_pairs = c->pairs_alloc = 0;
  c->tsd = c->tsd_desc = c->tsd_pairs = c->have_first = c->pairs_built = c->on_pair = 0;
  c->pairs_more = c->have_floor = 0;
  c->merge = c->by_offset = 0;
}

/* A core cursor on log: the table's spare one when it has one (the
** cursor of its last query, with its buffers and decoder state: a
** statement run in a loop allocates none), else a new one. */
static kl_rc new_cursor(kl_vtab *vt, kl_log *log, int on_corrupt, kl_cursor **out) {
  if (vt->spare) {
    *out = vt->spare;
    vt->spare = NULL;
    kl_cursor_reuse(*out, log, &vt->conn->stats, on_corrupt);
    return KL_OK;
  }
  return kl_cursor_new(log, &vt->conn->stats, on_corrupt, out);
}

/* The core cursor is done with: kept as the table's spare (detached from
** its log, which may close), or freed when there is one. */
static void park_cursor(kl_vtab *vt, kl_cursor *cur) {
  if (!cur) return;
  if (vt->spare) {
    kl_cursor_free(cur);
    return;
  }
  kl_cursor_detach(cur);
  vt->spare = cur;
}

/* Leave the partition being read (its log and core cursor, unless a lane
** owns them). */
void lv_end_partition(kl_vcursor *c) {
  if (c->lane != KL_NO_LANE) {
    c->cur = NULL;
    c->ref = NULL;
    c->lane = KL_NO_LANE;
    return;
  }
  park_cursor((kl_vtab *)c->base.pVtab, c->cur);
  c->cur = NULL;
  kl_logref_release(c->ref);
  c->ref = NULL;
}

/* Forget the partitions chosen. */
static void free_sel(kl_vcursor *c) {
  if (c->sel != &c->sel_one) sqlite3_free(c->sel);
  c->sel = NULL;
}

static void end_scan(kl_vcursor *c) {
  reset_scan(c);
  lv_end_partition(c);
  free_sel(c);
  c->nsel = c->isel = 0;
  c->part = NULL;
  kl_listref_release(c->bk);
  c->bk = NULL;
}

int lv_close(sqlite3_vtab_cursor *cur) {
  kl_vcursor *c = (kl_vcursor *)cur;
  end_scan(c);
  ((kl_vtab *)cur->pVtab)->cursors--;
  kl_buf_free(kl_sqlite_env(), &c->json);
  kl_coldec_free(&c->coldec);
  kl_keyset_free(&c->keys);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int cmp_i64(const void *a, const void *b) {
  sqlite3_int64 x = *(const sqlite3_int64 *)a, y = *(const sqlite3_int64 *)b;
  return x < y ? -1 : x > y;
}

int lv_report(kl_vcursor *c, kl_rc rc, const kl_err *err) {
  /* What was learnt about the files may be what went wrong (they changed
  ** under the query): the next query opens the directory afresh. */
  if ((rc == KL_IO || rc == KL_NOMEM || rc == KL_CORRUPT || rc == KL_CANTOPEN) && c->ref) {
    lv_forget_log((kl_vtab *)c->base.pVtab, c->ref->dir);
    c->stale = 1;
  }
  return lv_set_error(c->base.pVtab, kl_sqlite_rc(rc), "kafka_log: %s",
                   err->msg[0] ? err->msg : kl_rc_name(rc));
}

/* Is the current record not a row of the query, on its batch's header
** alone (no record is decoded): a record of an aborted transaction, which
** a read_committed consumer never sees, or of a producer the query does
** not ask for (producer_id = ?). */
int lv_passed_over(const kl_vcursor *c) {
  const kl_batch *b = kl_cursor_batch(c->cur);
  if (b->producer_id < c->pid_lo || b->producer_id > c->pid_hi) return 1;
  return c->read_committed && kl_txns_aborted(&c->ref->txns, b);
}

/* Start the core cursor on the next IN value (or the only range). */
kl_rc lv_start_range(kl_vcursor *c, kl_err *err) {
  kl_bounds b = c->pbnd;
  if (c->in) {
    int k = c->bnd.desc ? c->n_in - 1 - c->i_in : c->i_in;
    sqlite3_int64 v = c->in[k];
    if (v > b.off_lo) b.off_lo = v;
    if (v < b.off_hi) b.off_hi = v;
    if (v != b.off_lo || v != b.off_hi) b.off_lo = 1, b.off_hi = 0;
    c->i_in++;
  }
  return kl_cursor_start(c->cur, &b, err);
}

/* The next row of the plan, before LIMIT and OFFSET. */
static kl_rc advance(kl_vcursor *c, kl_err *err) {
  if (c->heap) return lv_merge_next(c, err);
  if (c->tsd) return lv_tsd_next(c, err);
  if (!c->batch_terms) return kl_cursor_next(c->cur, err); /* a row per record */
  kl_rc rc;
  while ((rc = kl_cursor_next(c->cur, err)) == KL_OK && lv_passed_over(c)) {
  }
  return rc;
}

/* The read-ahead workers of a scan (core/ahead.h): the threads option's,
** but none unless SQLite is serialized (the workers allocate through its
** allocator, which has no lock in a single-threaded SQLite; a connection
** without its mutex cannot tell that from a multi-threaded one), and no
** more than the other CPUs the process may run on.  Unless the option was
** given, they read ahead only when a core is idle (core/cursor.h). */
static int scan_threads(const kl_vcursor *c) {
  const kl_vtab *vt = (const kl_vtab *)c->base.pVtab;
  int n = (int)c->opt[KL_OPT_THREADS];
  if (n <= 0 || !sqlite3_threadsafe() || !sqlite3_db_mutex(vt->db)) return 0;
  if (vt->cpus > 0 && n > vt->cpus - 1) n = (int)(vt->cpus - 1);
  return n;
}

/* The table's read-ahead, made on first use (NULL when out of memory:
** scans then read alone): one per table, so that its workers start once
** and not once a scan, and wait parked between scans. */
static kl_ahead *table_ahead(kl_vtab *vt, int threads) {
  if (!vt->ra && kl_ahead_new(kl_sqlite_env(), threads, &vt->ra) != KL_OK) return NULL;
  return vt->ra;
}

/* Make the chosen partition sel[k] the one read: its log and core cursor
** (kept when it is the same as before: a join probes the same partition
** once per outer row), and its readable range in c->pbnd (empty when
** nothing of it can match). */
kl_rc lv_open_partition(kl_vcursor *c, size_t k, kl_err *err) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  size_t i = c->sel[k];
  const kl_part *p = kl_broker_part(c->bk->b, i);
  int64_t place = lv_place(vt, c->bk, i);
  if (place < 0 && kl_places_count(vt->places) >= KL_PLACES_MAX) {
    return kl_err_set(err, KL_RANGE, "%s: more than %zu partition directories read by one "
                      "statement: rowids cannot tell them apart", p->dir, KL_PLACES_MAX);
  }
  if (place < 0) return kl_err_set(err, KL_NOMEM, "out of memory reading %s", p->dir);
  c->part = p;
  c->place = (size_t)place;
  /* The writing connection reads its own open transaction (append.h). */
  kl_view view = {0};
  int has_view = 0;
  kl_rc rc = vt->app ? kl_append_view(vt->app, &view, &has_view, err) : KL_OK;
  if (rc) {
    kl_buf_free(kl_sqlite_env(), &view.tail);
    return rc;
  }
  if (!c->cur || c->stale || has_view || strcmp(c->ref->dir, p->dir) != 0) {
    lv_end_partition(c);
    c->stale = 0;
    rc = lv_acquire_log(vt, p->dir, kl_broker_single(c->bk->b), has_view ? &view : NULL, &c->ref,
                        err);
    kl_buf_free(kl_sqlite_env(), &view.tail);
    if (rc) return rc;
    if (new_cursor(vt, c->ref->log, c->on_corrupt, &c->cur) != KL_OK) {
      return kl_err_set(err, KL_NOMEM, "out of memory opening %s", p->dir);
    }
  }
  int threads = scan_threads(c);
  int given = (c->opt_given >> KL_OPT_THREADS) & 1;
  kl_cursor_set_ahead(c->cur, threads ? table_ahead(vt, threads) : NULL, threads, !given);
  c->pbnd = c->bnd;
  /* Records below the log start offset are deleted for every consumer
  ** (core/log.h).  One at the first segment's base, from no checkpoint,
  ** deletes nothing: the bound stays open, sparing the scan a seek. */
  int64_t ls = kl_log_readable_start(c->ref->log, p->log_start);
  const kl_segment *first = kl_log_first(c->ref->log);
  int deletes = p->log_start >= 0 || (first && ls > first->base);
  if (deletes && ls > c->pbnd.off_lo) c->pbnd.off_lo = ls;
  /* And below what this table's own open transaction deleted. */
  int64_t del = vt->app ? kl_append_deleted_below(vt->app) : -1;
  if (del >= 0 && del > c->pbnd.off_lo) c->pbnd.off_lo = del;
  return c->read_committed ? lv_committed_bounds(c, err) : KL_OK;
}

/* Do two partitions belong to one topic (NULL, a directory not named
** <topic>-<n>, is one value for DISTINCT)? */
static int same_topic(const kl_part *a, const kl_part *b) {
  if (!a->topic || !b->topic) return !a->topic && !b->topic;
  return strcmp(a->topic, b->topic) == 0;
}

/* Open the next chosen partition and start reading it: KL_DONE when none
** is left. */
static kl_rc next_partition(kl_vcursor *c, kl_err *err) {
  c->part_row = 0;
  while (c->isel < c->nsel) {
    if (c->distinct == KL_P_DISTINCT_TOPIC && c->row_part &&
        same_topic(c->row_part, kl_broker_part(c->bk->b, c->sel[c->isel]))) {
      c->isel++; /* its topic has a row already */
      continue;
    }
    kl_rc rc = lv_open_partition(c, c->isel++, err);
    if (rc) return rc;
    if (c->pbnd.off_lo > c->pbnd.off_hi) continue;
    c->i_in = 0;
    if (c->tsd) return KL_OK;
    return lv_start_range(c, err);
  }
  return KL_DONE;
}

/* The scan has read every row its plan admits: a DELETE's retention may
** end where its bounds do (append.h). */
static int scan_end(kl_vcursor *c) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  if (vt->app) kl_append_scan_end(vt->app);
  c->eof = 1;
  return SQLITE_OK;
}

/* Move to the next row that the plan admits. */
int lv_step(kl_vcursor *c) {
  kl_err err; /* per row: set up without clearing its 512 bytes */
  err.rc = KL_OK;
  err.msg[0] = 0;
  if (c->plain) { /* the hot path: every record of the partition a row */
    kl_rc rc = kl_cursor_next(c->cur, &err);
    if (rc == KL_OK) return SQLITE_OK;
    if (rc != KL_DONE) {
      c->eof = 1;
      return lv_report(c, rc, &err);
    }
  }
  for (;;) {
    if (c->limit == 0) {
      c->eof = 1;
      return SQLITE_OK;
    }
    /* DISTINCT: the partition's first row stands for all of them. */
    kl_rc rc = c->distinct && c->part_row ? KL_DONE : advance(c, &err);
    if (rc == KL_OK) {
      if (c->skip > 0) {
        c->skip--;
        continue;
      }
      if (c->limit > 0) c->limit--;
      c->part_row = 1;
      c->row_part = c->part;
      return SQLITE_OK;
    }
    if (rc != KL_DONE) {
      c->eof = 1;
      return lv_report(c, rc, &err);
    }
    if (!c->merge && c->in && c->i_in < c->n_in && !(c->distinct && c->part_row)) {
      rc = lv_start_range(c, &err);
    } else {
      rc = next_partition(c, &err);
      if (rc == KL_DONE) break;
    }
    if (rc != KL_OK) {
      c->eof = 1;
      return lv_report(c, rc, &err);
    }
  }
  return scan_end(c);
}

/* What one xFilter's terms ask for, besides the bounds in c->bnd. */
typedef struct kl_args {
  const char *dir;          /* the path */
  sqlite3_value *in_list;   /* offset IN (...), or NULL */
  kl_part_filter pf;        /* topic and partition constraints */
  int64_t opt[KL_OPT_COUNT];/* the options, the table's unless a term
                            ** gives one (options.h) */
  uint64_t given;           /* those the table or a term gave (1 << id) */
  sqlite3_value *schemas;   /* schemas = ?, or NULL: the table's */
  sqlite3_value *key;       /* key = ?, or NULL */
  int key_in;               /* it is an IN list */
} kl_args;

/* The terms of idx_str into c->plan_use, from the table's memo of plans. */
static int decode_plan(kl_vcursor *c, const char *idx_str, int argc) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  return kl_terms_decode_memo(&vt->plans, kl_log_terms, kl_log_nterms, kl_log_phrases, idx_str,
                              argc, c->plan_use, &c->plan_n, c->base.pVtab, "kafka_log");
}

/* Read the terms of the plan (idx_str, terms.h) from argv into c and a. */
static int read_args(kl_vcursor *c, const char *idx_str, int argc, sqlite3_value **argv,
                     kl_args *a) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  int rc = decode_plan(c, idx_str, argc);
  const kl_term_use *use = c->plan_use;
  for (int i = 0; rc == SQLITE_OK && i < c->plan_n; i++) {
    const kl_term *t = &kl_log_terms[use[i].term];
    sqlite3_value *v = argv[i];
    switch (t->act) {
      case KL_ACT_PATH: a->dir = (const char *)sqlite3_value_text(v); break;
      case KL_ACT_TOPIC: a->pf.topic = v, a->pf.topic_in = use[i].in; break;
      case KL_ACT_PARTITION:
        if (t->arg == KL_CMP_EQ) a->pf.part = v, a->pf.part_in = use[i].in;
        else kl_fold_bound((enum kl_cmp_op)t->arg, v, &a->pf.lo, &a->pf.hi);
        break;
      case KL_ACT_OFFSET:
        if (use[i].in) a->in_list = v;
        else kl_fold_bound((enum kl_cmp_op)t->arg, v, &c->bnd.off_lo, &c->bnd.off_hi);
        break;
      case KL_ACT_TIMESTAMP:
        kl_fold_bound((enum kl_cmp_op)t->arg, v, &c->bnd.ts_lo, &c->bnd.ts_hi);
        break;
      case KL_ACT_PRODUCER:
        kl_fold_bound((enum kl_cmp_op)t->arg, v, &c->pid_lo, &c->pid_hi);
        break;
      case KL_ACT_KEY: a->key = v, a->key_in = use[i].in; break;
      case KL_ACT_OPTION: {
        /* A hidden-column option, read as CREATE reads it (options.h). */
        char *m = NULL;
        a->given |= (uint64_t)1 << t->arg;
        if ((rc = kl_option_value(kl_option_of((kl_opt_id)t->arg), v, &a->opt[t->arg], &m))) {
          sqlite3_free(vt->base.zErrMsg);
          vt->base.zErrMsg = m;
        }
        break;
      }
      case KL_ACT_LIMIT:
        c->limit = sqlite3_value_int64(v);
        if (c->limit < 0) c->limit = -1;
        break;
      case KL_ACT_SKIP:
        c->skip = sqlite3_value_int64(v);
        if (c->skip < 0) c->skip = 0;
        break;
      case KL_ACT_OWN:
        if (t->arg == KL_LOG_OWN_SCHEMAS) a->schemas = v;
        break;
    }
  }
  return rc;
}

/* The IN list's values, sorted and distinct, into c->in: rows then come
** out in offset order. */
static int read_in_list(kl_vcursor *c, sqlite3_value *in_list) {
  sqlite3_value *v;
  int n = 0, cap = 0, rc;
  for (rc = sqlite3_vtab_in_first(in_list, &v); rc == SQLITE_OK && v;
       rc = sqlite3_vtab_in_next(in_list, &v)) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    kl_fold_bound(KL_CMP_EQ, v, &lo, &hi);
    if (lo != hi) continue; /* NULL, text, or a fraction: matches nothing */
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      sqlite3_int64 *p = sqlite3_realloc64(c->in, (sqlite3_uint64)cap * sizeof *p);
      if (!p) return SQLITE_NOMEM;
      c->in = p;
    }
    c->in[n++] = lo;
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
  if (n == 0) return SQLITE_OK;
  qsort(c->in, (size_t)n, sizeof *c->in, cmp_i64);
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m == 0 || c->in[m - 1] != c->in[i]) c->in[m++] = c->in[i];
  }
  c->n_in = m;
  return SQLITE_OK;
}

/* A value of key = as the bytes it matches: a BLOB's, a TEXT's UTF-8.
** NULL and numbers are equal to no key (the key column holds BLOBs and
** TEXT only): none is added. */
static int add_key(kl_keyset *k, sqlite3_value *v) {
  int t = sqlite3_value_type(v);
  const void *p = t == SQLITE_BLOB ? sqlite3_value_blob(v)
                  : t == SQLITE_TEXT ? (const void *)sqlite3_value_text(v)
                                     : NULL;
  if (!p && (t != SQLITE_BLOB && t != SQLITE_TEXT)) return SQLITE_OK;
  int n = sqlite3_value_bytes(v);
  if (!p && n > 0) return SQLITE_NOMEM;
  return kl_keyset_add(k, p ? p : "", (size_t)n) == KL_OK ? SQLITE_OK : SQLITE_NOMEM;
}

/* The keys of key = ? or key IN (...) into c->keys. */
static int read_keys(kl_vcursor *c, sqlite3_value *key, int in) {
  kl_keyset_clear(&c->keys);
  if (!in) return add_key(&c->keys, key);
  sqlite3_value *v;
  int rc;
  for (rc = sqlite3_vtab_in_first(key, &v); rc == SQLITE_OK && v; rc = sqlite3_vtab_in_next(key, &v)) {
    if ((rc = add_key(&c->keys, v)) != SQLITE_OK) return rc;
  }
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The files are checked for changes once per statement: the same cursor
** filtered again (once per row of an outer loop) keeps its listing, its
** log, its buffers and the batch it decompressed last. */
static int use_listing(kl_vcursor *c, const kl_args *a) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  int on_corrupt = (int)a->opt[KL_OPT_ON_CORRUPT], read_committed = (int)a->opt[KL_OPT_ISOLATION];
  if (!c->bk || c->stale || c->on_corrupt != on_corrupt || c->read_committed != read_committed ||
      strcmp(c->bk->path, a->dir) != 0 || !lv_listing_serves(c->bk, &a->pf)) {
    end_scan(c);
    kl_err err;
    kl_err_clear(&err);
    kl_rc krc = lv_get_listing(vt, a->dir, &a->pf, &c->bk, &err);
    if (krc) return kl_vtab_error(&vt->base, "kafka_log", krc, &err);
    c->on_corrupt = on_corrupt;
    c->read_committed = read_committed;
  }
  return SQLITE_OK;
}

/* The plan consumed an order over several partitions (a log directory of
** few partitions, or a parameter path taken for one partition): their
** ordered streams are merged here. */
static int start_merge(kl_vcursor *c, int idx) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  lv_end_partition(c);
  c->merge = 1;
  c->plain = 0;
  c->by_offset = (idx & KL_P_ORDERED) != 0;
  c->lanes = sqlite3_malloc64((sqlite3_uint64)c->nsel * sizeof *c->lanes);
  if (!c->lanes) return SQLITE_NOMEM;
  memset(c->lanes, 0, c->nsel * sizeof *c->lanes);
  c->isel = c->nsel; /* the lanes read them all */
  if (c->by_offset && c->nsel <= lv_merge_max(vt)) {
    /* Every lane stays open: the rows are the merge of the lanes. */
    c->heap = sqlite3_malloc64((sqlite3_uint64)c->nsel * sizeof *c->heap);
    if (!c->heap) return SQLITE_NOMEM;
  } else {
    /* Timestamp order, or more partitions than may be open at once: every
    ** row comes from the sorted pairs, read by offset in its lane. */
    c->tsd = 1;
    c->tsd_desc = (idx & KL_P_DESC) != 0;
    c->bnd.desc = 0;
  }
  c->eof = 0;
  return lv_step(c);
}

/* Back to no rows and the bounds of no constraint, for a new xFilter. */
static void reset_filter(kl_vcursor *c, int idx) {
  reset_scan(c);
  free_sel(c);
  c->nsel = c->isel = 0;
  c->eof = 1;
  c->limit = -1;
  c->skip = 0;
  c->part_row = 0;
  c->row_part = NULL;
  c->len_part = NULL; /* partitions may be listed again, at the same addresses */
  c->pid_lo = INT64_MIN;
  c->pid_hi = INT64_MAX;
  c->batch_terms = 1; /* until the terms are read */
  c->plain = 0;
  c->bnd = kl_bounds_all();
  c->bnd.desc = (idx & KL_P_DESC) != 0 && !(idx & KL_P_TS_ORDER);
}

/* How key and value come out (the options of a), and where 'confluent'
** columns find their schemas. */
static int set_columns(kl_vcursor *c, const kl_args *a) {
  sqlite3_vtab *base = c->base.pVtab;
  kl_vtab *vt = (kl_vtab *)base;
  c->text[0] = (int)a->opt[KL_OPT_KEY_TYPE];
  c->text[1] = (int)a->opt[KL_OPT_VALUE_TYPE];
  kl_coldec_reset(&c->coldec); /* each statement probes the schemas again */
  int rc = kl_coldec_source(&c->coldec, a->schemas, &base->zErrMsg);
  if (rc != SQLITE_OK) return rc;
  for (int i = 0; i < 2; i++) {
    if (c->text[i] == KL_TYPE_AVRO && !vt->dec.plain[i]) {
      return lv_set_error(base, SQLITE_ERROR, "kafka_log: %s",
                          i ? "value_type='avro' needs a value_schema option (a named table's)"
                            : "key_type='avro' needs a key_schema option (a named table's)");
    }
  }
  return SQLITE_OK;
}

/* key = ? / key IN (...): the keys the scan compares. */
static int set_keys(kl_vcursor *c, const kl_args *a) {
  if (!a->key) return SQLITE_OK;
  if (c->text[0] >= KL_TYPE_CONFLUENT) { /* planned for raw keys only */
    return lv_set_error(c->base.pVtab, SQLITE_ERROR, "%s",
                        "kafka_log: key = compares raw keys, not key_type's decoded ones");
  }
  int rc = read_keys(c, a->key, a->key_in);
  if (rc == SQLITE_OK) c->bnd.keys = &c->keys;
  return rc;
}

/* The partitions the terms choose (kl_choose_parts), without allocating
** when the path is one partition and no term is on partitions: a lookup
** run in a loop, a join's probes. */
static int choose_parts(kl_vcursor *c, const kl_part_filter *pf) {
  if (!pf->topic && !pf->part && pf->lo == INT64_MIN && pf->hi == INT64_MAX &&
      kl_broker_count(c->bk->b) == 1) {
    c->sel_one = 0;
    c->sel = &c->sel_one;
    c->nsel = 1;
    return SQLITE_OK;
  }
  return kl_choose_parts(c->bk->b, pf, &c->sel, &c->nsel);
}

int lv_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kl_vcursor *c = (kl_vcursor *)cur;
  kl_vtab *vt = (kl_vtab *)cur->pVtab;
  reset_filter(c, idx);
  kl_args a = {.dir = vt->dir, .given = vt->opt_given};
  kl_part_filter_init(&a.pf);
  lv_get_options(vt, a.opt);
  int rc = read_args(c, idx_str, argc, argv, &a);
  if (rc) return rc;
  memcpy(c->opt, a.opt, sizeof c->opt);
  c->opt_given = a.given;
  c->bnd.max_skew = c->max_skew = a.opt[KL_OPT_MAX_SKEW];
  if ((rc = set_columns(c, &a)) != SQLITE_OK) return rc;
  /* The table's kept batches take the bound of the scan using them. */
  if (kl_bcache_bound(vt->set.bcache) != (size_t)a.opt[KL_OPT_CACHE_BYTES]) {
    kl_bcache_set_bound(vt->set.bcache, (size_t)a.opt[KL_OPT_CACHE_BYTES]);
  }
  kl_segset_map(&vt->set, (int)a.opt[KL_OPT_MMAP]);
  if (!a.dir) {
    return lv_set_error(cur->pVtab, SQLITE_ERROR, "%s",
                     "kafka_log: a path is required: kafka_log('<partition or log directory>')");
  }
  if ((rc = use_listing(c, &a)) != SQLITE_OK) return rc;
  /* Partitions are chosen by name before any is opened. */
  if ((rc = choose_parts(c, &a.pf)) != SQLITE_OK) return rc;
  if (a.in_list && ((rc = read_in_list(c, a.in_list)) != SQLITE_OK || c->n_in == 0)) return rc;
  if ((rc = set_keys(c, &a)) != SQLITE_OK || (a.key && c->keys.n == 0)) return rc;
  c->distinct = idx & (KL_P_DISTINCT | KL_P_DISTINCT_TOPIC);
  c->batch_terms = c->read_committed || c->pid_lo != INT64_MIN || c->pid_hi != INT64_MAX;
  c->plain = c->limit < 0 && c->skip == 0 && !c->distinct && !c->batch_terms &&
             !(idx & KL_P_TS_ORDER);
  if (vt->app) kl_append_scan_begin(vt->app, a.in_list || a.key ? -1 : c->bnd.off_hi);
  c->eof = 0;
  if (idx & KL_P_TS_ORDER) {
    c->tsd = 1;
    c->tsd_desc = (idx & KL_P_DESC) != 0;
    c->tsd_pairs = (idx & KL_P_PAIRS) != 0;
  }
  if ((idx & (KL_P_ORDERED | KL_P_TS_ORDER)) && c->nsel > 1) return start_merge(c, idx);
  kl_err err; /* set up without clearing its 512 bytes: xFilter runs once a lookup */
  kl_err_clear(&err);
  kl_rc krc = next_partition(c, &err);
  if (krc == KL_DONE) return scan_end(c);
  if (krc) {
    c->eof = 1;
    return lv_report(c, krc, &err);
  }
  return lv_step(c);
}

int lv_next(sqlite3_vtab_cursor *cur) {
  kl_vcursor *c = (kl_vcursor *)cur;
  /* A full scan's next row, when it is at hand (kl_cursor_step): the
  ** per-row price of count(*). */
  if (c->plain && kl_cursor_step(c->cur)) return SQLITE_OK;
  return lv_step(c);
}

int lv_eof(sqlite3_vtab_cursor *cur) { return ((kl_vcursor *)cur)->eof; }

/* Bytes as a BLOB, or with key_type/value_type 'text' as TEXT when they
** are UTF-8 (else still a BLOB: no byte is lost to a conversion). */
static void result_bytes(sqlite3_context *ctx, const uint8_t *p, int32_t n, int text) {
  if (n < 0) sqlite3_result_null(ctx);
  else if (text == KL_TYPE_TEXT && kl_utf8_valid(p, (size_t)n)) {
    sqlite3_result_text(ctx, n ? (const char *)p : "", n, SQLITE_TRANSIENT);
  } else {
    sqlite3_result_blob(ctx, n ? (const void *)p : "", n, SQLITE_TRANSIENT);
  }
}

/* Decode the current row if it was produced from its batch's record count
** (cursor.h): the columns below that come from the record need it. */
static int load_row(kl_vcursor *c) {
  if (!c->on_pair && !kl_cursor_lazy(c->cur)) return SQLITE_OK;
  kl_err err; /* per column: set up without clearing its 512 bytes */
  kl_err_clear(&err);
  kl_rc rc;
  if (c->on_pair) { /* a column the plan did not expect: read the record */
    c->on_pair = 0;
    rc = lv_seek_offset(c, c->pairs[c->i_pairs - 1].off, &err);
    return rc == KL_OK ? SQLITE_OK : lv_report(c, rc, &err);
  }
  rc = kl_cursor_load(c->cur, &err);
  return rc == KL_OK ? SQLITE_OK : lv_report(c, rc, &err);
}

/* The hidden column schemas: the scan's, else the table's option (NULL:
** the path's own). */
static void result_schemas(sqlite3_context *ctx, const kl_vcursor *c) {
  const kl_vtab *vt = (const kl_vtab *)c->base.pVtab;
  const char *s = c->coldec.schemas ? c->coldec.schemas : vt->dec.schemas;
  if (s) sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
}

/* offset and timestamp when known without decoding the record: from the
** timestamp-order pair at hand, or the cursor's peek.  1 when answered. */
static int column_known(kl_vcursor *c, sqlite3_context *ctx, int col) {
  if (col != KL_COL_OFFSET && col != KL_COL_TIMESTAMP) return 0;
  int64_t po, pt;
  if (c->on_pair) {
    const struct ts_pair *p = &c->pairs[c->i_pairs - 1];
    po = p->off, pt = p->ts;
  } else if (!kl_cursor_peek(c->cur, &po, &pt)) {
    return 0;
  }
  sqlite3_result_int64(ctx, col == KL_COL_OFFSET ? po : pt);
  return 1;
}

/* Is col read from the record itself (load_row first)? */
static int is_record_column(int col) {
  enum {
    RECORD = 1u << KL_COL_OFFSET | 1u << KL_COL_TIMESTAMP | 1u << KL_COL_KEY |
             1u << KL_COL_VALUE | 1u << KL_COL_HEADERS | 1u << KL_COL_SEQUENCE
  };
  return col >= 0 && col < 32 && ((RECORD >> col) & 1);
}

/* The columns of record r, loaded. */
static int record_column(kl_vcursor *c, sqlite3_context *ctx, int col, const kl_record *r) {
  switch (col) {
    case KL_COL_OFFSET: sqlite3_result_int64(ctx, r->offset); break;
    case KL_COL_TIMESTAMP: sqlite3_result_int64(ctx, r->timestamp); break;
    case KL_COL_KEY: case KL_COL_VALUE: {
      int k = col == KL_COL_KEY;
      if (c->text[!k] < KL_TYPE_CONFLUENT) {
        result_bytes(ctx, k ? r->key : r->value, k ? r->key_len : r->value_len, c->text[!k]);
        break;
      }
      kl_vtab *vt = (kl_vtab *)c->base.pVtab;
      kl_where w = {c->part->topic ? c->part->topic : c->part->dir,
                    c->part->topic ? c->part->partition : -1, r->offset};
      return kl_decode_column(ctx, vt->conn, &vt->dec, &c->coldec, c->text[!k], k, r,
                              c->bk->path, &w);
    }
    case KL_COL_HEADERS:
      if (kl_headers_json(&c->json, r) != KL_OK) return SQLITE_NOMEM;
      sqlite3_result_text(ctx, (const char *)c->json.p, (int)c->json.len, SQLITE_TRANSIENT);
      break;
    case KL_COL_SEQUENCE: sqlite3_result_int(ctx, r->sequence); break;
  }
  return SQLITE_OK;
}

/* The topic column: the partition's topic (NULL for a directory not named
** <topic>-<n>), its length found once a partition. */
static void result_topic(sqlite3_context *ctx, kl_vcursor *c) {
  const char *t = c->part->topic;
  if (!t) return;
  if (c->len_part != c->part) {
    c->len_part = c->part;
    c->topic_len = (int)strlen(t);
  }
  sqlite3_result_text(ctx, t, c->topic_len, SQLITE_TRANSIENT);
}

/* The columns of batch b, of where it lies, and of the options. */
static void batch_column(kl_vcursor *c, sqlite3_context *ctx, int col, const kl_batch *b) {
  switch (col) {
    case KL_COL_TIMESTAMP_TYPE:
      sqlite3_result_text(ctx, kl_ts_type_name(b->ts_type), -1, SQLITE_STATIC);
      break;
    case KL_COL_LEADER_EPOCH: sqlite3_result_int(ctx, b->leader_epoch); break;
    case KL_COL_PRODUCER_ID: sqlite3_result_int64(ctx, b->producer_id); break;
    case KL_COL_PRODUCER_EPOCH: sqlite3_result_int(ctx, b->producer_epoch); break;
    case KL_COL_IS_TRANSACTIONAL: sqlite3_result_int(ctx, b->is_transactional); break;
    case KL_COL_COMPRESSION:
      sqlite3_result_text(ctx, kl_codec_name(b->codec), -1, SQLITE_STATIC);
      break;
    case KL_COL_SEGMENT: sqlite3_result_int64(ctx, kl_cursor_segment(c->cur)->base); break;
    case KL_COL_POSITION: sqlite3_result_int64(ctx, b->position); break;
    case KL_COL_TOPIC: result_topic(ctx, c); break;
    case KL_COL_PARTITION:
      if (c->part->partition >= 0) sqlite3_result_int(ctx, c->part->partition);
      break;
    case KL_COL_DIR: sqlite3_result_text(ctx, c->bk->path, -1, SQLITE_TRANSIENT); break;
    case KL_COL_SCHEMAS: result_schemas(ctx, c); break;
    default: {
      /* A hidden column of an option: its value in this scan. */
      int k = kl_terms_find(kl_log_terms, kl_log_nterms, KL_T_NEED_DIR, -1, col,
                            SQLITE_INDEX_CONSTRAINT_EQ);
      if (k >= 0 && kl_log_terms[k].act == KL_ACT_OPTION) {
        kl_option_result(ctx, (kl_opt_id)kl_log_terms[k].arg, c->opt[kl_log_terms[k].arg]);
      }
      break;
    }
  }
}

int lv_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kl_vcursor *c = (kl_vcursor *)cur;
  int rc;
  /* The hot paths first: a scan's raw values, and the topic and partition
  ** a GROUP BY reads on every row. */
  if (!c->on_pair) {
    if (col == KL_COL_VALUE || col == KL_COL_KEY) {
      int v = col == KL_COL_VALUE;
      if (c->text[v] == KL_TYPE_BLOB && !kl_cursor_lazy(c->cur)) {
        const kl_record *r = kl_cursor_record(c->cur);
        int32_t n = v ? r->value_len : r->key_len;
        if (n >= 0) sqlite3_result_blob(ctx, n ? (const void *)(v ? r->value : r->key) : "", n,
                                        SQLITE_TRANSIENT);
        return SQLITE_OK;
      }
    } else if (col == KL_COL_TOPIC) {
      result_topic(ctx, c);
      return SQLITE_OK;
    } else if (col == KL_COL_PARTITION) {
      if (c->part->partition >= 0) sqlite3_result_int(ctx, c->part->partition);
      return SQLITE_OK;
    }
  }
  if (is_record_column(col)) { /* the hot path: a scan's values */
    if (column_known(c, ctx, col)) return SQLITE_OK;
    if ((c->on_pair || kl_cursor_lazy(c->cur)) && (rc = load_row(c)) != SQLITE_OK) return rc;
    return record_column(c, ctx, col, kl_cursor_record(c->cur));
  }
  if (c->on_pair && (rc = load_row(c)) != SQLITE_OK) return rc;
  batch_column(c, ctx, col, kl_cursor_batch(c->cur));
  return SQLITE_OK;
}

int lv_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  kl_vcursor *c = (kl_vcursor *)cur;
  int64_t off, ts;
  if (c->on_pair) {
    off = c->pairs[c->i_pairs - 1].off;
  } else if (!kl_cursor_peek(c->cur, &off, &ts)) {
    int rc = load_row(c);
    if (rc) return rc;
    off = kl_cursor_record(c->cur)->offset;
  }
  *rowid = kl_rowid_at(kl_broker_single(c->bk->b), c->place, off);
  return SQLITE_OK;
}
