/*
** plan.c - xBestIndex for kafka_log: its terms (plan.h) and the choice of
** order, LIMIT and costs.
*/
#include "plan.h"

#include <math.h>
#include <string.h>

#include "options.h"

SQLITE_EXTENSION_INIT3

#define EQ SQLITE_INDEX_CONSTRAINT_EQ
#define GT SQLITE_INDEX_CONSTRAINT_GT
#define GE SQLITE_INDEX_CONSTRAINT_GE
#define LT SQLITE_INDEX_CONSTRAINT_LT
#define LE SQLITE_INDEX_CONSTRAINT_LE

/* Groups of terms that estimate once (terms.h). */
enum { G_OFF_LO = 3, G_OFF_HI, G_TS_LO, G_TS_HI, G_PRODUCER, G_KEY };

/* A point lookup reads a few index entries and one batch; a range reads
** its records; a scan reads every byte.  Each bound of one kind counts
** once: timestamp = over >, >=. */
const kl_term kl_log_terms[] = {
    {"dir=?", KL_COL_DIR, EQ, KL_ACT_PATH, 0, KL_T_NEED_DIR, 0, 0, 0, 0, 0},
    KL_PART_TERMS(KL_COL_TOPIC, KL_COL_PARTITION),
    {"offset=?", KL_COL_OFFSET, EQ, KL_ACT_OFFSET, KL_CMP_EQ, KL_T_IN | KL_T_NARROWS, 0, 0, 0, 0, 0},
    {"offset>?", KL_COL_OFFSET, GT, KL_ACT_OFFSET, KL_CMP_GT, KL_T_NARROWS, G_OFF_LO, 0, 0, .25, 0},
    {"offset>=?", KL_COL_OFFSET, GE, KL_ACT_OFFSET, KL_CMP_GE, KL_T_NARROWS, G_OFF_LO, 0, 0, .25, 0},
    {"offset<?", KL_COL_OFFSET, LT, KL_ACT_OFFSET, KL_CMP_LT, KL_T_NARROWS, G_OFF_HI, 0, 0, .25, 0},
    {"offset<=?", KL_COL_OFFSET, LE, KL_ACT_OFFSET, KL_CMP_LE, KL_T_NARROWS, G_OFF_HI, 0, 0, .25, 0},
    {"timestamp=?", KL_COL_TIMESTAMP, EQ, KL_ACT_TIMESTAMP, KL_CMP_EQ, KL_T_NARROWS, G_TS_LO, 0, 0,
     .01, 1},
    {"timestamp>?", KL_COL_TIMESTAMP, GT, KL_ACT_TIMESTAMP, KL_CMP_GT, KL_T_NARROWS, G_TS_LO, 0, 0,
     .25, 1},
    {"timestamp>=?", KL_COL_TIMESTAMP, GE, KL_ACT_TIMESTAMP, KL_CMP_GE, KL_T_NARROWS, G_TS_LO, 0, 0,
     .25, 1},
    {"timestamp<?", KL_COL_TIMESTAMP, LT, KL_ACT_TIMESTAMP, KL_CMP_LT, KL_T_NARROWS, G_TS_HI, 0, 0,
     .5, 1},
    {"timestamp<=?", KL_COL_TIMESTAMP, LE, KL_ACT_TIMESTAMP, KL_CMP_LE, KL_T_NARROWS, G_TS_HI, 0, 0,
     .5, 1},
    {"producer_id=?", KL_COL_PRODUCER_ID, EQ, KL_ACT_PRODUCER, KL_CMP_EQ, KL_T_NARROWS, G_PRODUCER,
     0, 0, .1, 1},
    {"key=?", KL_COL_KEY, EQ, KL_ACT_KEY, 0, KL_T_IN | KL_T_NARROWS | KL_T_IF, G_KEY, 0, 0, .001,
     1},
    {"on_corrupt=?", KL_COL_ON_CORRUPT, EQ, KL_ACT_OPTION, KL_OPT_ON_CORRUPT, KL_T_NEED_DIR, 0, 0, 0,
     0, 0},
    {"max_skew_ms=?", KL_COL_MAX_SKEW, EQ, KL_ACT_OPTION, KL_OPT_MAX_SKEW, KL_T_NEED_DIR, 0, 0, 0, 0,
     0},
    {"isolation=?", KL_COL_ISOLATION, EQ, KL_ACT_OPTION, KL_OPT_ISOLATION, 0, 0, 0, 0, 0, 0},
    {"key_type=?", KL_COL_KEY_TYPE, EQ, KL_ACT_OPTION, KL_OPT_KEY_TYPE, 0, 0, 0, 0, 0, 0},
    {"value_type=?", KL_COL_VALUE_TYPE, EQ, KL_ACT_OPTION, KL_OPT_VALUE_TYPE, 0, 0, 0, 0, 0, 0},
    {"threads=?", KL_COL_THREADS, EQ, KL_ACT_OPTION, KL_OPT_THREADS, 0, 0, 0, 0, 0, 0},
    {"sort_bytes=?", KL_COL_SORT_BYTES, EQ, KL_ACT_OPTION, KL_OPT_SORT_BYTES, 0, 0, 0, 0, 0, 0},
    {"cache_bytes=?", KL_COL_CACHE_BYTES, EQ, KL_ACT_OPTION, KL_OPT_CACHE_BYTES, 0, 0, 0, 0, 0, 0},
    {"mmap=?", KL_COL_MMAP, EQ, KL_ACT_OPTION, KL_OPT_MMAP, 0, 0, 0, 0, 0, 0},
    {"schemas=?", KL_COL_SCHEMAS, EQ, KL_ACT_OWN, KL_LOG_OWN_SCHEMAS, 0, 0, 0, 0, 0, 0},
    {"LIMIT ?", KL_TERM_ANY, SQLITE_INDEX_CONSTRAINT_LIMIT, KL_ACT_LIMIT, 0, KL_T_ROWS, 0, 0, 0, 0,
     0},
    {"OFFSET ?", KL_TERM_ANY, SQLITE_INDEX_CONSTRAINT_OFFSET, KL_ACT_SKIP, 0, KL_T_ROWS, 0, 0, 0, 0,
     0},
};
const int kl_log_nterms = (int)(sizeof kl_log_terms / sizeof *kl_log_terms);

const char *const kl_log_phrases[] = {"full scan", "ORDER BY offset", "ORDER BY offset DESC",
                                      "ORDER BY timestamp", "ORDER BY timestamp DESC",
                                      "ORDER BY topic, partition",
                                      "DISTINCT topic, partition", "DISTINCT topic", NULL};

#define T kl_log_terms, kl_log_nterms

/* The integer value of a constraint's right-hand side, if known now. */
static int rhs_int(sqlite3_index_info *info, int i, sqlite3_int64 *v) {
  sqlite3_value *val = NULL;
  if (i < 0 || sqlite3_vtab_rhs_value(info, i, &val) != SQLITE_OK || !val) return 0;
  if (sqlite3_value_numeric_type(val) != SQLITE_INTEGER) return 0;
  *v = sqlite3_value_int64(val);
  return 1;
}

/* The constraint of the first chosen term with act and arg, or -1. */
static int used_cons(const kl_terms_plan *p, kl_term_act act, int arg) {
  int k = kl_terms_used(T, p, act, arg);
  return k < 0 ? -1 : p->used[k];
}

static int is_in(const kl_terms_plan *p, kl_term_act act) {
  int k = kl_terms_used(T, p, act, KL_CMP_EQ);
  return k >= 0 && p->in[k];
}

#ifndef KL_TS_ORDER_COST
#define KL_TS_ORDER_COST 3
#endif

/* ORDER BY timestamp, consumed: max(timestamp) and min(timestamp) ask for
** this order and read one row.  Other rows are read again by offset, which
** beats SQLite's sorter only when few are read (LIMIT) or none needs
** reading (only offset and timestamp).  Without a LIMIT a log known to be
** large is left to SQLite's sorter, which spills to disk where the pairs
** would sort in passes, reading the log once a pass (log_tsorder.c).  The
** KL_P_* flags, or 0. */
static int ts_order(sqlite3_index_info *info, const kl_terms_plan *p, const kl_plan_info *pi) {
  if (info->nOrderBy != 1 || info->aOrderBy[0].iColumn != KL_COL_TIMESTAMP ||
      is_in(p, KL_ACT_OFFSET)) {
    return 0;
  }
  int limited = used_cons(p, KL_ACT_LIMIT, -1) >= 0;
  if (!limited && pi->records > KL_TS_ORDER_MAX_RECORDS) return 0;
  sqlite3_uint64 pairs = (1ull << KL_COL_OFFSET) | (1ull << KL_COL_TIMESTAMP) |
                         (1ull << KL_COL_DIR) | (1ull << KL_COL_ON_CORRUPT) |
                         (1ull << KL_COL_MAX_SKEW) | (1ull << KL_COL_ISOLATION) |
                         (1ull << KL_COL_TOPIC) | (1ull << KL_COL_PARTITION) |
                         (1ull << KL_COL_KEY_TYPE) | (1ull << KL_COL_VALUE_TYPE) |
                         (1ull << KL_COL_SCHEMAS) | (1ull << KL_COL_THREADS) |
                         (1ull << KL_COL_SORT_BYTES) | (1ull << KL_COL_CACHE_BYTES) |
                         (1ull << KL_COL_MMAP);
  int only_pairs = (info->colUsed & ~pairs) == 0;
  if (!only_pairs && !limited) return 0;
  return KL_P_TS_ORDER | (only_pairs ? KL_P_PAIRS : 0) | (info->aOrderBy[0].desc ? KL_P_DESC : 0);
}

/* May one row of each partition stand for all of its rows in a DISTINCT:
** does every column SQLite reads, in the result or in the WHERE clause
** (colUsed, the constraints), hold one value across a partition (topic,
** partition, and the hidden columns, the same on every row of a scan)?
** Then whatever SQLite checks on that row holds for every row of it.  A
** constraint on any other column (offset > 5 AND offset % 2 = 0) could
** reject the first row and keep a later one. */
static int one_row_stands(const sqlite3_index_info *info) {
  sqlite3_uint64 m = (1ull << KL_COL_TOPIC) | (1ull << KL_COL_PARTITION);
  for (int col = KL_COL_DIR; col <= KL_COL_LAST; col++) m |= 1ull << col;
  if (info->colUsed & ~m) return 0;
  for (int i = 0; i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn, op = info->aConstraint[i].op;
    if (op == SQLITE_INDEX_CONSTRAINT_LIMIT || op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
    if (col < 0 || col >= 64 || !((m >> col) & 1)) return 0;
  }
  return 1;
}

/* The listing's order (KL_P_LISTED, with KL_P_DISTINCT or
** KL_P_DISTINCT_TOPIC), or 0: partitions come sorted by topic, then
** partition (core/broker.h).  ORDER BY topic[, partition] ascending is
** that order (not with offset after: directories without a Kafka name,
** whose topic and partition are NULL, and one partition in two log
** directories, come one after the other, not merged by offset); a GROUP BY or a
** DISTINCT on topic (and partition) asks only that a group's rows be
** adjacent, which holds in any direction; and a DISTINCT that reads
** nothing but topic and partition needs one row of each group. */
static int listing_order(sqlite3_index_info *info) {
  static const int seq[] = {KL_COL_TOPIC, KL_COL_PARTITION};
  int d = sqlite3_vtab_distinct(info), seq_ok = 1, topic = 0, part = 0, other = 0;
  for (int i = 0; i < info->nOrderBy; i++) {
    int col = info->aOrderBy[i].iColumn;
    if (i >= 2 || col != seq[i] || info->aOrderBy[i].desc) seq_ok = 0;
    if (col == KL_COL_TOPIC) topic = 1;
    else if (col == KL_COL_PARTITION) part = 1;
    else other = 1;
  }
  int adjacent = (d == 1 || d == 2) && topic && !other;
  if (info->nOrderBy == 0 || (!seq_ok && !adjacent)) return 0;
  if (d >= 2 && topic && !other && one_row_stands(info)) {
    return KL_P_LISTED | (part ? KL_P_DISTINCT : KL_P_DISTINCT_TOPIC);
  }
  return KL_P_LISTED;
}

/* The order consumed (KL_P_* flags, orderByConsumed) and whether the rows
** come in the order asked (else LIMIT and OFFSET are SQLite's). */
static int choose_order(sqlite3_index_info *info, const kl_terms_plan *p, const kl_plan_info *pi,
                        int single, int *order_ok) {
  /* A path not known yet (a parameter) is taken for a partition: its order
  ** is consumed, and should it hold several, xFilter orders their rows
  ** itself (a merge of their streams, log_merge.c, or a sort,
  ** log_tsorder.c).  A log directory known to have few enough partitions:
  ** xFilter merges them by offset. */
  int ordered_ok = single || pi->partitions == 0;
  int merge_ok = pi->partitions > 0 && pi->partitions <= pi->max_merge;
  int by_offset = info->nOrderBy == 1 && (info->aOrderBy[0].iColumn == KL_COL_OFFSET ||
                                          (info->aOrderBy[0].iColumn == -1 && pi->single));
  int idx = 0;
  if (by_offset && (ordered_ok || merge_ok)) {
    idx = KL_P_ORDERED | (info->aOrderBy[0].desc ? KL_P_DESC : 0);
  } else if (ordered_ok && info->nOrderBy == 1 && info->aOrderBy[0].iColumn == KL_COL_TIMESTAMP) {
    idx = ts_order(info, p, pi);
  } else {
    idx = listing_order(info);
  } /* else rows come partition after partition: SQLite sorts. */
  if (idx) info->orderByConsumed = 1;
  *order_ok = info->nOrderBy == 0 || idx != 0;
  return idx;
}

/* Rows read, from what the terms narrow; *lookup the cost of the seek. */
static double estimate(sqlite3_index_info *info, const kl_terms_plan *p, const kl_plan_info *pi,
                       int single, double *lookup) {
  double records = pi->records > 0 ? pi->records : 1e6;
  if (!pi->single && pi->partitions > 0) {
    /* A log directory: its partitions are not opened to plan. */
    if (pi->records <= 0) records = 1e5 * pi->partitions;
    records = kl_terms_narrow(T, p, records);
    if (records < 1) records = 1;
  }
  double rows = records;
  sqlite3_int64 lo = 0, hi = 0;
  if (used_cons(p, KL_ACT_OFFSET, KL_CMP_EQ) >= 0) {
    rows = 1;
    if (is_in(p, KL_ACT_OFFSET)) rows = 8;
    else if (single) info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    else rows = records / 1e5 + 1; /* one per partition that holds it */
  } else {
    rows = kl_terms_select(T, p, rows, KL_ACT_OFFSET, 1);
    int ilo = used_cons(p, KL_ACT_OFFSET, KL_CMP_GT);
    int ihi = used_cons(p, KL_ACT_OFFSET, KL_CMP_LT);
    if (rhs_int(info, ilo >= 0 ? ilo : used_cons(p, KL_ACT_OFFSET, KL_CMP_GE), &lo) &&
        rhs_int(info, ihi >= 0 ? ihi : used_cons(p, KL_ACT_OFFSET, KL_CMP_LE), &hi)) {
      rows = hi >= lo ? (double)hi - (double)lo + 1 : 1;
    }
    if (rows > records) rows = records;
  }
  rows = kl_terms_select(T, p, rows, KL_ACT_OFFSET, 0);
  sqlite3_int64 lim;
  if (rhs_int(info, used_cons(p, KL_ACT_LIMIT, -1), &lim) && lim >= 0 && (double)lim < rows) {
    rows = (double)lim;
  }
  if (rows < 1) rows = 1;
  if (rows > 1e18) rows = 1e18; /* offsets near 2^63 (fuzz_sql): keep the cast defined */
  double seg = pi->segments > 0 ? pi->segments : 1;
  info->estimatedRows = (sqlite3_int64)rows;
  *lookup = 10 + log2(seg + 1) + log2(records / seg + 2);
  return rows;
}

/* The words of the order in idxStr. */
static const char *order_words(int idx, int narrowed) {
  static const char *const w[2][8] = {
      {"", "ORDER BY offset", "ORDER BY offset DESC", "ORDER BY timestamp",
       "ORDER BY timestamp DESC", "ORDER BY topic, partition", "DISTINCT topic, partition",
       "DISTINCT topic"},
      {"full scan", "full scan ORDER BY offset", "full scan ORDER BY offset DESC",
       "full scan ORDER BY timestamp", "full scan ORDER BY timestamp DESC",
       "full scan ORDER BY topic, partition", "full scan DISTINCT topic, partition",
       "full scan DISTINCT topic"}};
  int k = (idx & KL_P_ORDERED) ? 1 : (idx & KL_P_TS_ORDER) ? 3 : 0;
  if (k && (idx & KL_P_DESC)) k++;
  if (idx & KL_P_LISTED) k = (idx & KL_P_DISTINCT) ? 6 : (idx & KL_P_DISTINCT_TOPIC) ? 7 : 5;
  return w[!narrowed][k];
}

/* key = under a collation other than BINARY is SQLite's to compare. */
static void key_collation(sqlite3_index_info *info, kl_terms_plan *p) {
  int k = kl_terms_used(T, p, KL_ACT_KEY, -1);
  if (k < 0) return;
  const char *coll = sqlite3_vtab_collation(info, p->used[k]);
  if (coll && sqlite3_stricmp(coll, "BINARY") != 0) {
    p->used[k] = -1;
    p->in[k] = 0;
    p->n_other++;
  }
}

int kl_plan_best(sqlite3_index_info *info, const kl_plan_info *pi) {
  kl_terms_plan p;
  int allow = (pi->need_dir ? KL_T_NEED_DIR : 0) | (pi->raw_key ? KL_T_IF : 0);
  /* The rowid is the offset for one partition only (several carry the
  ** partition in it, see log_vtab.h): elsewhere SQLite compares it. */
  int rowid_col = pi->single ? KL_COL_OFFSET : -1;
  kl_terms_choose(info, T, allow, rowid_col, &p);
  key_collation(info, &p);
  if (pi->need_dir && kl_terms_used(T, &p, KL_ACT_PATH, -1) < 0) {
    for (int i = 0; i < info->nConstraint; i++) {
      int k = kl_terms_find(T, allow, rowid_col, info->aConstraint[i].iColumn,
                            info->aConstraint[i].op);
      if (k >= 0 && kl_log_terms[k].act == KL_ACT_PATH) return SQLITE_CONSTRAINT; /* a join */
    }
    /* No path at all: a plan whose xFilter says one is required, rather
    ** than SQLite's "no query solution" (an error here would also fail
    ** an OR whose terms each give a path, which SQLite plans apart). */
    info->idxNum = 0;
    info->estimatedCost = 1e99;
    info->estimatedRows = 1;
    return SQLITE_OK;
  }
  /* One partition at most: then its order is the order of the rows. */
  int one = used_cons(&p, KL_ACT_TOPIC, -1) >= 0 && used_cons(&p, KL_ACT_PARTITION, KL_CMP_EQ) >= 0 &&
            !is_in(&p, KL_ACT_TOPIC) && !is_in(&p, KL_ACT_PARTITION);
  int single = pi->single || one, order_ok;
  int idx = choose_order(info, &p, pi, single, &order_ok);
  /* LIMIT and OFFSET are safe only when every other constraint is handled
  ** exactly here and the order is ours. */
  if (p.n_other > 0 || !order_ok || (idx & (KL_P_DISTINCT | KL_P_DISTINCT_TOPIC))) {
    kl_terms_drop(T, &p, KL_T_ROWS);
  }
  double lookup;
  double rows = estimate(info, &p, pi, single, &lookup);
  if ((idx & (KL_P_DISTINCT | KL_P_DISTINCT_TOPIC)) && pi->partitions > 0 && rows > pi->partitions) {
    rows = pi->partitions; /* one row each, read from its first batch */
    info->estimatedRows = (sqlite3_int64)rows;
  }
  info->estimatedCost = lookup + rows * ((idx & KL_P_TS_ORDER) ? KL_TS_ORDER_COST : 1);
  info->idxNum = idx;
  int narrowed = 0;
  for (int k = 0; k < kl_log_nterms; k++) {
    if (p.used[k] >= 0 && (kl_log_terms[k].flags & KL_T_NARROWS)) narrowed = 1;
  }
  if (idx & (KL_P_DISTINCT | KL_P_DISTINCT_TOPIC)) narrowed = 1; /* a batch a partition */
  return kl_terms_emit(info, T, &p, NULL, order_words(idx, narrowed));
}
