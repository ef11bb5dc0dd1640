/*
** replica_vtab.c - leader epochs and replica divergence as tables
** (core/checkpoint.h, core/replica.h).
**
**   kafka_leader_epochs(path)       each partition's leader epoch chain, as
**                                   its leader-epoch-checkpoint holds it
**   kafka_replica_diff(a, b)        two copies of a partition compared: two
**                                   partition directories, or two log
**                                   directories (every partition both hold)
**
** Both are DIRECTONLY: they read files named in SQL.
*/
#include <stdio.h>
#include <string.h>

#include "broker.h"
#include "checkpoint.h"
#include "glue.h"
#include "sqlenv.h"
#include "listing.h"
#include "replica.h"

SQLITE_EXTENSION_INIT3

typedef struct kr_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} kr_vtab;

static int kr_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* ---- kafka_leader_epochs ---- */

enum { KE_TOPIC, KE_PARTITION, KE_EPOCH, KE_START_OFFSET, KE_END_OFFSET, KE_LINE, KE_DIR, KE_PATH };

typedef struct ke_cursor {
  sqlite3_vtab_cursor base;
  kl_listing ls;
  kl_epoch_ckpt file;       /* the current partition's entries */
  kl_epoch_chain chain;     /* as Kafka's cache keeps them */
  size_t i;
  int eof;
  sqlite3_int64 rowid;
} ke_cursor;

static int ke_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, partition INTEGER, epoch INTEGER, start_offset INTEGER,"
      " end_offset INTEGER, line INTEGER, dir TEXT, path HIDDEN)", sizeof(kr_vtab), out);
  if (rc == SQLITE_OK) ((kr_vtab *)*out)->conn = aux;
  return rc;
}

static const kl_term ke_terms[] = {KL_LISTING_TERMS(KE_PATH, KE_TOPIC, KE_PARTITION)};
#define KE_NTERMS ((int)(sizeof ke_terms / sizeof *ke_terms))

static int ke_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_listing(info, ke_terms, KE_NTERMS);
}

static int ke_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ke_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void ke_end_part(ke_cursor *c) {
  kl_epoch_checkpoint_free(kl_sqlite_env(), &c->file);
  kl_epoch_chain_free(kl_sqlite_env(), &c->chain);
  c->i = 0;
}

static int ke_close(sqlite3_vtab_cursor *cur) {
  ke_cursor *c = (ke_cursor *)cur;
  ke_end_part(c);
  kl_listing_end(&c->ls);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The next partition with entries: its chain in c->chain. */
static int ke_advance(ke_cursor *c) {
  while (c->i >= c->chain.n) {
    ke_end_part(c);
    const kl_part *p = kl_listing_next(&c->ls);
    if (!p) {
      c->eof = 1;
      return SQLITE_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/leader-epoch-checkpoint", p->dir);
    kl_err err;
    kl_err_clear(&err);
    kl_rc rc = kl_epoch_checkpoint_read(kl_sqlite_env(), path, &c->file, &err);
    /* Kept as LeaderEpochFileCache loads the file: what a later entry
    ** contradicts is dropped (replica.h). */
    for (size_t i = 0; rc == KL_OK && i < c->file.n; i++) {
      const kl_epoch_entry *e = &c->file.e[i];
      if ((rc = kl_epoch_chain_assign(kl_sqlite_env(), &c->chain, e->epoch, e->start_offset)) != KL_OK) {
        kl_err_set(&err, rc, "out of memory");
      }
      if (rc == KL_OK) c->chain.e[c->chain.n - 1].line = e->line;
    }
    if (rc) {
      c->eof = 1;
      return kl_vtab_error(c->base.pVtab, "kafka_leader_epochs", rc, &err);
    }
  }
  return SQLITE_OK;
}

static int ke_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ke_cursor *c = (ke_cursor *)cur;
  ke_end_part(c);
  kl_listing_end(&c->ls);
  c->eof = 0;
  c->rowid = 0;
  kl_listing_args la;
  int rc0 = kl_listing_args_read(ke_terms, KE_NTERMS, idx_str, argc, argv, cur->pVtab,
                                 "kafka_leader_epochs", &la);
  if (rc0) {
    c->eof = 1;
    return rc0;
  }
  const char *dir = la.dir;
  const kl_part_filter f = la.f;
  if (!dir) {
    c->eof = 1;
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_leader_epochs: a path is required: "
                                          "kafka_leader_epochs('<partition or log dir>')");
    return SQLITE_ERROR;
  }
  int rc = kl_listing_start(&c->ls, cur->pVtab, "kafka_leader_epochs", dir, &f);
  if (rc) {
    c->eof = 1;
    return rc;
  }
  return ke_advance(c);
}

static int ke_next(sqlite3_vtab_cursor *cur) {
  ke_cursor *c = (ke_cursor *)cur;
  c->i++;
  c->rowid++;
  return ke_advance(c);
}

static int ke_eof(sqlite3_vtab_cursor *cur) { return ((ke_cursor *)cur)->eof; }

static int ke_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ke_cursor *c = (ke_cursor *)cur;
  const kl_part *p = c->ls.part;
  const kl_epoch_entry *e = &c->chain.e[c->i];
  switch (col) {
    case KE_TOPIC:
      if (p->topic) sqlite3_result_text(ctx, p->topic, -1, SQLITE_TRANSIENT);
      break;
    case KE_PARTITION:
      if (p->partition >= 0) sqlite3_result_int(ctx, p->partition);
      break;
    case KE_EPOCH: sqlite3_result_int(ctx, e->epoch); break;
    case KE_START_OFFSET: sqlite3_result_int64(ctx, e->start_offset); break;
    case KE_END_OFFSET: /* the next epoch's start; the latest is open */
      if (c->i + 1 < c->chain.n) sqlite3_result_int64(ctx, c->chain.e[c->i + 1].start_offset);
      break;
    case KE_LINE: sqlite3_result_int64(ctx, (sqlite3_int64)e->line); break;
    case KE_DIR: sqlite3_result_text(ctx, p->dir, -1, SQLITE_TRANSIENT); break;
    case KE_PATH: sqlite3_result_text(ctx, c->ls.path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ke_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((ke_cursor *)cur)->rowid;
  return SQLITE_OK;
}

static const sqlite3_module ke_module = {
    .iVersion = 1,
    .xConnect = ke_connect,
    .xBestIndex = ke_best_index,
    .xDisconnect = kr_disconnect,
    .xDestroy = kr_disconnect,
    .xOpen = ke_open,
    .xClose = ke_close,
    .xFilter = ke_filter,
    .xNext = ke_next,
    .xEof = ke_eof,
    .xColumn = ke_column,
    .xRowid = ke_rowid,
};

int kl_leader_epochs_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_leader_epochs", &ke_module, conn);
}

/* ---- kafka_replica_diff ---- */

enum {
  KD_TOPIC, KD_PARTITION, KD_STATUS, KD_FIRST_DIFF, KD_EPOCH_DIFF, KD_A_LOG_END, KD_B_LOG_END,
  KD_A_EPOCH, KD_B_EPOCH, KD_A_PAST, KD_B_PAST, KD_KEPT, KD_COMMON_EPOCH, KD_TRUNCATE_TO,
  KD_LOST, KD_A_DIR, KD_B_DIR, KD_DIR_A, KD_DIR_B
};

/* One compared pair. */
typedef struct kd_row {
  char *topic;              /* NULL when unnamed */
  int32_t partition;
  char *a, *b;
  kl_replica_diff d;
} kd_row;

typedef struct kd_cursor {
  sqlite3_vtab_cursor base;
  kd_row *rows;
  size_t n, i;
  char *dir_a, *dir_b;
} kd_cursor;

static int kd_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, partition INTEGER, status TEXT, first_diff_offset INTEGER,"
      " epoch_diff_offset INTEGER, a_log_end_offset INTEGER, b_log_end_offset INTEGER,"
      " a_leader_epoch INTEGER, b_leader_epoch INTEGER, a_records_past INTEGER,"
      " b_records_past INTEGER, kept TEXT, common_epoch INTEGER, truncate_to INTEGER,"
      " records_lost INTEGER, a_dir TEXT, b_dir TEXT, dir_a HIDDEN, dir_b HIDDEN)",
      sizeof(kr_vtab), out);
  if (rc == SQLITE_OK) ((kr_vtab *)*out)->conn = aux;
  return rc;
}

/* The two directories, both required. */
enum { KD_OWN_A = 1, KD_OWN_B };
static const kl_term kd_terms[] = {
    {"dir_a=?", KD_DIR_A, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KD_OWN_A, 0, 0, 0, 0, 0, 0},
    {"dir_b=?", KD_DIR_B, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KD_OWN_B, 0, 0, 0, 0, 0, 0},
};
#define KD_NTERMS ((int)(sizeof kd_terms / sizeof *kd_terms))

/* Without both: nothing pushed down, and xFilter says both are required. */
static const char *const kd_none[] = {"no paths", NULL};

static int kd_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  for (int i = 0; i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn;
    /* A plan where a directory is not yet known: refused, so that SQLite
    ** picks the one where it is. */
    if ((col == KD_DIR_A || col == KD_DIR_B) && !info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
  }
  kl_terms_plan p;
  kl_terms_choose(info, kd_terms, KD_NTERMS, 0, -1, &p);
  int both = p.used[0] >= 0 && p.used[1] >= 0;
  if (!both) kl_terms_drop(kd_terms, KD_NTERMS, &p, 0);
  info->idxNum = 0;
  info->estimatedCost = both ? 100000 : 1e12;
  return kl_terms_emit(info, kd_terms, KD_NTERMS, &p, kd_none[0], NULL);
}

static int kd_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kd_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void kd_end(kd_cursor *c) {
  for (size_t i = 0; i < c->n; i++) {
    sqlite3_free(c->rows[i].topic);
    sqlite3_free(c->rows[i].a);
    sqlite3_free(c->rows[i].b);
  }
  sqlite3_free(c->rows);
  c->rows = NULL;
  c->n = c->i = 0;
  sqlite3_free(c->dir_a);
  sqlite3_free(c->dir_b);
  c->dir_a = c->dir_b = NULL;
}

static int kd_close(sqlite3_vtab_cursor *cur) {
  kd_end((kd_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static kl_rc add_pair(kd_cursor *c, const kl_part *pa, const kl_part *pb, kl_stats *stats,
                      kl_err *err) {
  kd_row *r = sqlite3_realloc64(c->rows, (c->n + 1) * sizeof *r);
  if (!r) return kl_err_set(err, KL_NOMEM, "out of memory");
  c->rows = r;
  r = &c->rows[c->n];
  memset(r, 0, sizeof *r);
  r->partition = pa->topic && pb->topic ? pa->partition : -1;
  r->topic = pa->topic && pb->topic ? sqlite3_mprintf("%s", pa->topic) : NULL;
  r->a = sqlite3_mprintf("%s", pa->dir);
  r->b = sqlite3_mprintf("%s", pb->dir);
  c->n++; /* freed with the others from here on */
  if (!r->a || !r->b || (pa->topic && pb->topic && !r->topic)) {
    return kl_err_set(err, KL_NOMEM, "out of memory");
  }
  return kl_replica_compare(kl_sqlite_env(), pa->dir, pb->dir, stats, &r->d, err);
}

static int cmp_part(const kl_part *x, const kl_part *y) {
  int c = strcmp(x->topic, y->topic);
  return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* Pair the partitions of two listings: both partition directories alone,
** else every named partition both hold (each listing's first copy). */
static kl_rc pair_all(kd_cursor *c, const kl_broker *a, const kl_broker *b, kl_stats *stats,
                      kl_err *err) {
  if (kl_broker_single(a) && kl_broker_single(b)) {
    if (kl_broker_count(a) == 0 || kl_broker_count(b) == 0) return KL_OK;
    return add_pair(c, kl_broker_part(a, 0), kl_broker_part(b, 0), stats, err);
  }
  size_t i = 0, j = 0, na = kl_broker_count(a), nb = kl_broker_count(b);
  kl_rc rc = KL_OK;
  while (rc == KL_OK && i < na && j < nb) {
    const kl_part *pa = kl_broker_part(a, i), *pb = kl_broker_part(b, j);
    if (!pa->topic || !pb->topic) break; /* unnamed ones sort last */
    int k = cmp_part(pa, pb);
    if (k < 0) i++;
    else if (k > 0) j++;
    else {
      rc = add_pair(c, pa, pb, stats, err);
      /* A partition in two log directories of one side: its first copy. */
      while (++i < na && kl_broker_part(a, i)->topic && cmp_part(kl_broker_part(a, i), pa) == 0) {}
      while (++j < nb && kl_broker_part(b, j)->topic && cmp_part(kl_broker_part(b, j), pb) == 0) {}
    }
  }
  return rc;
}

static int kd_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kd_cursor *c = (kd_cursor *)cur;
  kr_vtab *vt = (kr_vtab *)cur->pVtab;
  kd_end(c);
  kl_term_use use[KL_TERMS_MAX];
  int nuse;
  int rc0 = kl_terms_decode(kd_terms, KD_NTERMS, kd_none, idx_str, argc, use, &nuse, cur->pVtab,
                            "kafka_replica_diff");
  if (rc0) return rc0;
  const char *a = NULL, *b = NULL;
  for (int i = 0; i < nuse; i++) {
    const char *v = (const char *)sqlite3_value_text(argv[i]);
    if (kd_terms[use[i].term].arg == KD_OWN_A) a = v;
    else b = v;
  }
  if (!a || !b) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_replica_diff: two paths are required: "
                                          "kafka_replica_diff('<dir a>', '<dir b>')");
    return SQLITE_ERROR;
  }
  c->dir_a = sqlite3_mprintf("%s", a);
  c->dir_b = sqlite3_mprintf("%s", b);
  if (!c->dir_a || !c->dir_b) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_broker *ba = NULL, *bb = NULL;
  kl_rc rc = kl_broker_open_flags(kl_sqlite_env(), a, KL_BROKER_NO_CHECKPOINTS, &ba, &err);
  if (rc == KL_OK) rc = kl_broker_open_flags(kl_sqlite_env(), b, KL_BROKER_NO_CHECKPOINTS, &bb, &err);
  if (rc == KL_OK) rc = pair_all(c, ba, bb, &vt->conn->stats, &err);
  kl_broker_close(ba);
  kl_broker_close(bb);
  if (rc) {
    kd_end(c);
    return kl_vtab_error(cur->pVtab, "kafka_replica_diff", rc, &err);
  }
  return SQLITE_OK;
}

static int kd_next(sqlite3_vtab_cursor *cur) {
  ((kd_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int kd_eof(sqlite3_vtab_cursor *cur) {
  kd_cursor *c = (kd_cursor *)cur;
  return c->i >= c->n;
}

/* identical; a_behind / b_behind: one holds a prefix of the other;
** diverged: both hold records the other lacks. */
static const char *status(const kl_replica_diff *d) {
  if (d->first_diff < 0) return "identical";
  if (d->a.records_past == 0) return "a_behind";
  if (d->b.records_past == 0) return "b_behind";
  return "diverged";
}

static void result_opt(sqlite3_context *ctx, int64_t v) {
  if (v >= 0) sqlite3_result_int64(ctx, v);
}

static int kd_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kd_cursor *c = (kd_cursor *)cur;
  const kd_row *r = &c->rows[c->i];
  const kl_replica_diff *d = &r->d;
  switch (col) {
    case KD_TOPIC:
      if (r->topic) sqlite3_result_text(ctx, r->topic, -1, SQLITE_TRANSIENT);
      break;
    case KD_PARTITION: result_opt(ctx, r->partition); break;
    case KD_STATUS: sqlite3_result_text(ctx, status(d), -1, SQLITE_STATIC); break;
    case KD_FIRST_DIFF: result_opt(ctx, d->first_diff); break;
    case KD_EPOCH_DIFF: result_opt(ctx, d->epoch_diff); break;
    case KD_A_LOG_END: sqlite3_result_int64(ctx, d->a.log_end); break;
    case KD_B_LOG_END: sqlite3_result_int64(ctx, d->b.log_end); break;
    case KD_A_EPOCH: result_opt(ctx, d->a.latest_epoch); break;
    case KD_B_EPOCH: result_opt(ctx, d->b.latest_epoch); break;
    case KD_A_PAST: sqlite3_result_int64(ctx, d->a.records_past); break;
    case KD_B_PAST: sqlite3_result_int64(ctx, d->b.records_past); break;
    case KD_KEPT:
      if (d->kept >= 0) sqlite3_result_text(ctx, d->kept ? "b" : "a", 1, SQLITE_STATIC);
      break;
    case KD_COMMON_EPOCH: result_opt(ctx, d->common_epoch); break;
    case KD_TRUNCATE_TO: result_opt(ctx, d->truncate_to); break;
    case KD_LOST:
      if (d->truncate_to >= 0) sqlite3_result_int64(ctx, d->records_lost);
      break;
    case KD_A_DIR: sqlite3_result_text(ctx, r->a, -1, SQLITE_TRANSIENT); break;
    case KD_B_DIR: sqlite3_result_text(ctx, r->b, -1, SQLITE_TRANSIENT); break;
    case KD_DIR_A: sqlite3_result_text(ctx, c->dir_a, -1, SQLITE_TRANSIENT); break;
    case KD_DIR_B: sqlite3_result_text(ctx, c->dir_b, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int kd_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((kd_cursor *)cur)->i;
  return SQLITE_OK;
}

static const sqlite3_module kd_module = {
    .iVersion = 1,
    .xConnect = kd_connect,
    .xBestIndex = kd_best_index,
    .xDisconnect = kr_disconnect,
    .xDestroy = kr_disconnect,
    .xOpen = kd_open,
    .xClose = kd_close,
    .xFilter = kd_filter,
    .xNext = kd_next,
    .xEof = kd_eof,
    .xColumn = kd_column,
    .xRowid = kd_rowid,
};

int kl_replica_diff_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_replica_diff", &kd_module, conn);
}
