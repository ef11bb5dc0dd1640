/*
** listing.c - see listing.h.
*/
#include "listing.h"
#include "sqlenv.h"

#include <string.h>

SQLITE_EXTENSION_INIT3

int kl_listing_connect(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc) return rc;
  sqlite3_vtab *vt = sqlite3_malloc64(size);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, size);
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *out = vt;
  return SQLITE_OK;
}


int kl_listing_start(kl_listing *l, sqlite3_vtab *vt, const char *module, const char *path,
                     const kl_part_filter *f) {
  memset(l, 0, sizeof *l);
  l->path = sqlite3_mprintf("%s", path);
  if (!l->path) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_broker_open(kl_sqlite_env(), path, &l->b, &err);
  if (rc) return kl_vtab_error(vt, module, rc, &err);
  return kl_choose_parts(l->b, f, &l->sel, &l->nsel);
}

const kl_part *kl_listing_next(kl_listing *l) {
  l->part = NULL;
  if (l->next < l->nsel) {
    l->index = l->sel[l->next++];
    l->part = kl_broker_part(l->b, l->index);
  }
  return l->part;
}

kl_rc kl_listing_open_log(const kl_listing *l, kl_log **out, kl_err *err) {
  if (kl_broker_single(l->b)) return kl_log_open_partition(kl_sqlite_env(), l->part->dir, out, err);
  return kl_log_open(kl_sqlite_env(), l->part->dir, out, err);
}

sqlite3_int64 kl_listing_rowid(const kl_listing *l, int64_t v) {
  return kl_broker_rowid(l->b, l->index, v);
}

void kl_listing_end(kl_listing *l) {
  kl_broker_close(l->b);
  sqlite3_free(l->path);
  sqlite3_free(l->sel);
  memset(l, 0, sizeof *l);
}
/* ---- the plan of a listing table ---- */

/* No path: nothing is pushed down, and xFilter says the path is required. */
static const char *const no_path[] = {"no path", NULL};

int kl_best_index_listing(sqlite3_index_info *info, const kl_term *t, int n) {
  for (int i = 0; i < info->nConstraint; i++) {
    if (info->aConstraint[i].iColumn == t[0].col && !info->aConstraint[i].usable) {
      return SQLITE_CONSTRAINT;
    }
  }
  kl_terms_plan p;
  kl_terms_choose(info, t, n, 0, -1, &p);
  int dir = kl_terms_used(t, n, &p, KL_ACT_PATH, -1) >= 0;
  if (!dir) kl_terms_drop(t, n, &p, 0);
  double cost = kl_terms_narrow(t, n, &p, 1e5);
  info->idxNum = 0;
  info->estimatedCost = dir ? cost : 1e12;
  info->estimatedRows = (sqlite3_int64)cost;
  return kl_terms_emit(info, t, n, &p, no_path[0], NULL);
}

int kl_listing_args_read(const kl_term *t, int n, const char *idx_str, int argc,
                         sqlite3_value **argv, sqlite3_vtab *vt, const char *module,
                         kl_listing_args *a) {
  kl_term_use use[KL_TERMS_MAX];
  int nuse;
  a->dir = NULL;
  a->nown = 0;
  kl_part_filter_init(&a->f);
  int rc = kl_terms_decode(t, n, no_path, idx_str, argc, use, &nuse, vt, module);
  for (int i = 0; rc == SQLITE_OK && i < nuse; i++) {
    const kl_term *tk = &t[use[i].term];
    sqlite3_value *v = argv[i];
    switch (tk->act) {
      case KL_ACT_PATH: a->dir = (const char *)sqlite3_value_text(v); break;
      case KL_ACT_TOPIC: a->f.topic = v, a->f.topic_in = use[i].in; break;
      case KL_ACT_PARTITION:
        if (tk->arg == KL_CMP_EQ) a->f.part = v, a->f.part_in = use[i].in;
        else kl_fold_bound((enum kl_cmp_op)tk->arg, v, &a->f.lo, &a->f.hi);
        break;
      default: a->own[a->nown] = tk, a->own_v[a->nown++] = v; break;
    }
  }
  return rc;
}

int kl_best_index_dir(sqlite3_index_info *info, const kl_term *dir) {
  kl_terms_plan p;
  kl_terms_choose(info, dir, 1, 0, -1, &p);
  for (int i = 0; i < info->nConstraint; i++) {
    if (info->aConstraint[i].iColumn != dir->col) continue;
    if (!info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
    if (info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) break;
  }
  info->idxNum = 0;
  /* No directory: xFilter says it is required. */
  info->estimatedCost = p.used[0] >= 0 ? 1000 : 1e12;
  return kl_terms_emit(info, dir, 1, &p, no_path[0], NULL);
}

int kl_dir_arg(const kl_term *dir, const char *idx_str, int argc, sqlite3_value **argv,
               sqlite3_vtab *vt, const char *module, const char **path) {
  kl_term_use use[KL_TERMS_MAX];
  int n;
  *path = NULL;
  int rc = kl_terms_decode(dir, 1, no_path, idx_str, argc, use, &n, vt, module);
  if (rc == SQLITE_OK && n == 1) *path = (const char *)sqlite3_value_text(argv[0]);
  return rc;
}
