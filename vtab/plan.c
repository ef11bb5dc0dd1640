/*
** plan.c - xBestIndex for kafka_log, following the idxNum table of plan.h.
*/
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

SQLITE_EXTENSION_INIT3

/* One usable constraint per argv slot; slots in bit order. */
typedef struct slot {
  int bit;
  int iCons; /* aConstraint index, -1 if unused */
} slot;

/* The plan bit for a constraint, 0 when the module leaves it to SQLite.
** A named table's dir and on_corrupt are fixed: comparisons with them are
** SQLite's to make, against the values the columns return. */
static int bit_for(int col, int op, const kl_plan_info *pi) {
  if (op == SQLITE_INDEX_CONSTRAINT_LIMIT) return KL_P_LIMIT;
  if (op == SQLITE_INDEX_CONSTRAINT_OFFSET) return KL_P_OFFSET;
  if (col == KL_COL_DIR || col == KL_COL_ON_CORRUPT || col == KL_COL_MAX_SKEW) {
    if (!pi->need_dir || op != SQLITE_INDEX_CONSTRAINT_EQ) return 0;
    return col == KL_COL_DIR ? KL_P_DIR : col == KL_COL_ON_CORRUPT ? KL_P_ON_CORRUPT : KL_P_SKEW;
  }
  if (col == KL_COL_ISOLATION) return op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_P_ISOLATION : 0;
  if (col == KL_COL_KEY_TYPE) return op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_P_KEY_TYPE : 0;
  if (col == KL_COL_VALUE_TYPE) return op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_P_VALUE_TYPE : 0;
  if (col == KL_COL_TOPIC) return op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_P_TOPIC_EQ : 0;
  if (col == KL_COL_PARTITION) {
    switch (op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: return KL_P_PART_EQ;
      case SQLITE_INDEX_CONSTRAINT_GT: return KL_P_PART_GT;
      case SQLITE_INDEX_CONSTRAINT_GE: return KL_P_PART_GE;
      case SQLITE_INDEX_CONSTRAINT_LT: return KL_P_PART_LT;
      case SQLITE_INDEX_CONSTRAINT_LE: return KL_P_PART_LE;
    }
    return 0;
  }
  /* The rowid is the offset for one partition only (several carry the
  ** partition in it, see log_vtab.c): elsewhere SQLite compares it. */
  if (col == KL_COL_OFFSET || (col == -1 && pi->single)) {
    switch (op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: return KL_P_OFF_EQ;
      case SQLITE_INDEX_CONSTRAINT_GT: return KL_P_OFF_GT;
      case SQLITE_INDEX_CONSTRAINT_GE: return KL_P_OFF_GE;
      case SQLITE_INDEX_CONSTRAINT_LT: return KL_P_OFF_LT;
      case SQLITE_INDEX_CONSTRAINT_LE: return KL_P_OFF_LE;
    }
    return 0;
  }
  if (col == KL_COL_TIMESTAMP) {
    switch (op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: return KL_P_TS_EQ;
      case SQLITE_INDEX_CONSTRAINT_GT: return KL_P_TS_GT;
      case SQLITE_INDEX_CONSTRAINT_GE: return KL_P_TS_GE;
      case SQLITE_INDEX_CONSTRAINT_LT: return KL_P_TS_LT;
      case SQLITE_INDEX_CONSTRAINT_LE: return KL_P_TS_LE;
    }
    return 0;
  }
  return 0;
}

/* The integer value of a constraint's right-hand side, if known now. */
static int rhs_int(sqlite3_index_info *info, int i, sqlite3_int64 *v) {
  sqlite3_value *val = NULL;
  if (sqlite3_vtab_rhs_value(info, i, &val) != SQLITE_OK || !val) return 0;
  if (sqlite3_value_numeric_type(val) != SQLITE_INTEGER) return 0;
  *v = sqlite3_value_int64(val);
  return 1;
}

#ifndef KL_TS_ORDER_COST
#define KL_TS_ORDER_COST 3
#endif

int kl_plan_best(sqlite3_index_info *info, const kl_plan_info *pi) {
  int used[KL_P_ARGV_COUNT];
  int idx = 0, n_usable_other = 0;
  for (int b = 0; b < KL_P_ARGV_COUNT; b++) used[b] = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    int bit = bit_for(c->iColumn, c->op, pi);
    if (!c->usable) continue;
    if (bit == 0 || (bit != KL_P_LIMIT && bit != KL_P_OFFSET &&
                     used[__builtin_ctz((unsigned)bit)] >= 0)) {
      /* Not ours, or a second bound of the same kind: SQLite checks it. */
      if (bit != KL_P_LIMIT && bit != KL_P_OFFSET) n_usable_other++;
      continue;
    }
    int b = __builtin_ctz((unsigned)bit);
    if (used[b] < 0) used[b] = i;
  }
  if (pi->need_dir && used[0] < 0) {
    for (int i = 0; i < info->nConstraint; i++) {
      if (bit_for(info->aConstraint[i].iColumn, info->aConstraint[i].op, pi) == KL_P_DIR) {
        return SQLITE_CONSTRAINT; /* usable in another plan (a join) */
      }
    }
    /* No path at all: a plan whose xFilter says one is required, rather
    ** than SQLite's "no query solution" (an error here would also fail
    ** an OR whose terms each give a path, which SQLite plans apart). */
    info->idxNum = 0;
    info->estimatedCost = 1e99;
    info->estimatedRows = 1;
    return SQLITE_OK;
  }
  if (used[1] >= 0 && sqlite3_vtab_in(info, used[1], -1)) idx |= KL_P_IN;
  if (used[16] >= 0 && sqlite3_vtab_in(info, used[16], -1)) idx |= KL_P_TOPIC_IN;
  if (used[17] >= 0 && sqlite3_vtab_in(info, used[17], -1)) idx |= KL_P_PART_IN;
  /* One partition at most: then its order is the order of the rows. */
  int one = used[16] >= 0 && used[17] >= 0 && !(idx & KL_P_TOPIC_IN) && !(idx & KL_P_PART_IN);
  int single = pi->single || one;
  /* A path not known yet (a parameter) is taken for a partition: its order
  ** is consumed, and should it hold several, xFilter orders their rows
  ** itself (log_vtab.c: a merge of their streams, or a sort). */
  int ordered_ok = single || pi->partitions == 0;
  /* A log directory known to have few enough partitions: xFilter merges
  ** their ordered streams by offset. */
  int merge_ok = pi->partitions > 0 && pi->partitions <= pi->max_merge;

  /* ORDER BY offset (or rowid), one term, ascending or descending. */
  int order_ok = info->nOrderBy == 0;
  int by_offset = info->nOrderBy == 1 && (info->aOrderBy[0].iColumn == KL_COL_OFFSET ||
                                          (info->aOrderBy[0].iColumn == -1 && pi->single));
  if (by_offset && (ordered_ok || merge_ok)) {
    idx |= KL_P_ORDERED;
    if (info->aOrderBy[0].desc) idx |= KL_P_DESC;
    info->orderByConsumed = 1;
    order_ok = 1;
  } else if (!ordered_ok) {
    /* Rows come partition after partition: SQLite sorts. */
  } else if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == KL_COL_TIMESTAMP &&
             !(idx & KL_P_IN) && pi->records <= KL_TS_ORDER_MAX_RECORDS) {
    /* max(timestamp) and min(timestamp) ask for this order and read one row.  Other rows
    ** are read again by offset, which beats SQLite's sorter only when few
    ** are read (LIMIT) or none needs reading (only offset and timestamp). */
    sqlite3_uint64 pairs = (1ull << KL_COL_OFFSET) | (1ull << KL_COL_TIMESTAMP) |
                           (1ull << KL_COL_DIR) | (1ull << KL_COL_ON_CORRUPT) |
                           (1ull << KL_COL_MAX_SKEW) | (1ull << KL_COL_ISOLATION) |
                           (1ull << KL_COL_TOPIC) | (1ull << KL_COL_PARTITION) |
                           (1ull << KL_COL_KEY_TYPE) | (1ull << KL_COL_VALUE_TYPE);
    int only_pairs = (info->colUsed & ~pairs) == 0;
    int limit = 0;
    for (int i = 0; i < info->nConstraint; i++) {
      if (info->aConstraint[i].usable && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
        limit = 1;
      }
    }
    if (only_pairs || limit) {
      idx |= KL_P_TS_ORDER | (only_pairs ? KL_P_PAIRS : 0);
      if (info->aOrderBy[0].desc) idx |= KL_P_DESC;
      info->orderByConsumed = 1;
      order_ok = 1;
    }
  }
  /* LIMIT and OFFSET are safe only when every other constraint is handled
  ** exactly here and the order is ours. */
  if (n_usable_other > 0 || !order_ok) used[11] = used[12] = -1;

  int argv = 0;
  for (int b = 0; b < KL_P_ARGV_COUNT; b++) {
    if (used[b] < 0) continue;
    idx |= 1 << b;
    info->aConstraintUsage[used[b]].argvIndex = ++argv;
    info->aConstraintUsage[used[b]].omit = 1;
  }
  if (idx & KL_P_IN) sqlite3_vtab_in(info, used[1], 1);
  if (idx & KL_P_TOPIC_IN) sqlite3_vtab_in(info, used[16], 1);
  if (idx & KL_P_PART_IN) sqlite3_vtab_in(info, used[17], 1);

  /* Costs follow the work: a point lookup reads a few index entries and
  ** one batch; a range reads its records; a scan reads every byte. */
  double records = pi->records > 0 ? pi->records : 1e6;
  if (!pi->single && pi->partitions > 0) {
    /* A log directory: its partitions are not opened to plan.  Topic and
    ** partition constraints narrow what is read. */
    if (pi->records <= 0) records = 1e5 * pi->partitions;
    if (idx & KL_P_TOPIC_EQ) records /= (idx & KL_P_TOPIC_IN) ? 4 : 10;
    if (idx & KL_P_PART_EQ) records /= (idx & KL_P_PART_IN) ? 4 : 10;
    else if (idx & (KL_P_PART_GT | KL_P_PART_GE | KL_P_PART_LT | KL_P_PART_LE)) records /= 2;
    if (records < 1) records = 1;
  }
  double seg = pi->segments > 0 ? pi->segments : 1;
  double lookup = 10 + log2(seg + 1) + log2(records / seg + 2);
  double rows = records;
  sqlite3_int64 lo = 0, hi = 0;
  int have_lo = 0, have_hi = 0;
  if (idx & KL_P_OFF_EQ) {
    rows = 1;
    if (idx & KL_P_IN) rows = 8;
    else if (single) info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    else rows = records / 1e5 + 1; /* one per partition that holds it */
  } else {
    if (idx & (KL_P_OFF_GT | KL_P_OFF_GE)) {
      int i = used[(idx & KL_P_OFF_GT) ? 2 : 3];
      have_lo = rhs_int(info, i, &lo);
      rows /= 4;
    }
    if (idx & (KL_P_OFF_LT | KL_P_OFF_LE)) {
      int i = used[(idx & KL_P_OFF_LT) ? 4 : 5];
      have_hi = rhs_int(info, i, &hi);
      rows /= 4;
    }
    if (have_lo && have_hi) rows = hi >= lo ? (double)hi - (double)lo + 1 : 1;
    if (rows > records) rows = records;
  }
  if (idx & KL_P_TS_EQ) rows = rows / 100 + 1;
  else if (idx & (KL_P_TS_GT | KL_P_TS_GE)) rows = rows / 4 + 1;
  if (idx & (KL_P_TS_LT | KL_P_TS_LE)) rows = rows / 2 + 1;
  if (idx & KL_P_LIMIT) {
    sqlite3_int64 lim;
    if (rhs_int(info, used[11], &lim) && lim >= 0 && (double)lim < rows) rows = (double)lim;
  }
  if (rows < 1) rows = 1;
  if (rows > 1e18) rows = 1e18; /* offsets near 2^63 (fuzz_sql): keep the cast defined */
  info->estimatedRows = (sqlite3_int64)rows;
  info->estimatedCost = lookup + rows;
  if (idx & KL_P_TS_ORDER) info->estimatedCost = lookup + rows * KL_TS_ORDER_COST;
  info->idxNum = idx;
  char buf[256];
  kl_plan_describe(idx, buf, sizeof buf);
  info->idxStr = sqlite3_mprintf("%s", buf);
  info->needToFreeIdxStr = 1;
  return info->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

void kl_plan_describe(int idx, char *buf, size_t n) {
  static const char *const names[] = {
      "dir=?",        "offset=?",     "offset>?",     "offset>=?",     "offset<?",
      "offset<=?",    "timestamp=?",  "timestamp>?",  "timestamp>=?",  "timestamp<?",
      "timestamp<=?", "LIMIT ?",      "OFFSET ?",     "on_corrupt=?",  "max_skew_ms=?",
      "isolation=?",  "topic=?",      "partition=?",  "partition>?",   "partition>=?",
      "partition<?",  "partition<=?", "key_type=?",   "value_type=?"};
  size_t len = 0;
  buf[0] = 0;
#define ADD(s) do { int k_ = snprintf(buf + len, n - len, "%s%s", len ? " " : "", s); \
    if (k_ > 0 && (size_t)k_ < n - len) len += (size_t)k_; } while (0)
  int any = 0;
  for (int b = 16; b < 22; b++) {
    if (!(idx & (1 << b))) continue;
    if (b == 16 && (idx & KL_P_TOPIC_IN)) ADD("topic IN (...)");
    else if (b == 17 && (idx & KL_P_PART_IN)) ADD("partition IN (...)");
    else ADD(names[b]);
  }
  for (int b = 1; b < 11; b++) {
    if (!(idx & (1 << b))) continue;
    if (b == 1 && (idx & KL_P_IN)) ADD("offset IN (...)");
    else ADD(names[b]);
    any = 1;
  }
  if (!any && !(idx & (KL_P_TOPIC_EQ | KL_P_PART_EQ | KL_P_PART_GT | KL_P_PART_GE | KL_P_PART_LT |
                       KL_P_PART_LE))) {
    ADD("full scan");
  }
  if (idx & KL_P_ORDERED) ADD((idx & KL_P_DESC) ? "ORDER BY offset DESC" : "ORDER BY offset");
  if (idx & KL_P_TS_ORDER) ADD((idx & KL_P_DESC) ? "ORDER BY timestamp DESC" : "ORDER BY timestamp");
  if (idx & KL_P_LIMIT) ADD(names[11]);
  if (idx & KL_P_OFFSET) ADD(names[12]);
  if (idx & KL_P_ON_CORRUPT) ADD(names[13]);
  if (idx & KL_P_SKEW) ADD(names[14]);
  if (idx & KL_P_ISOLATION) ADD(names[15]);
  if (idx & KL_P_KEY_TYPE) ADD(names[22]);
  if (idx & KL_P_VALUE_TYPE) ADD(names[23]);
#undef ADD
}
