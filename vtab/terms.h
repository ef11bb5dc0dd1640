/*
** terms.h - a table's plan as a list of terms.
**
** Each table that plans (kafka_log, kafka_batches, kafka_segments,
** kafka_log_check) describes the constraints it takes over from SQLite in
** one array of kl_term rows: the column and operator it matches, what
** xFilter does with the value, how much it narrows the work, and its label.
** xBestIndex chooses terms (kl_terms_choose) and writes them out
** (kl_terms_emit): their argv values in the order of the array, and idxStr,
** which lists the same terms in the same order and is what EXPLAIN QUERY
** PLAN shows, e.g. "dir=? offset>=? timestamp<? ORDER BY offset LIMIT ?".
** idxNum carries only a table's flags (plan.h).  xFilter reads idxStr back
** (kl_terms_decode), which refuses a string it did not write.
**
** Adding a pushdown is one row here and one case in the table's xFilter.
*/
#ifndef KL_TERMS_H
#define KL_TERMS_H

#include <stddef.h>

#include "bounds.h"
#include "sqlite3ext.h"

#define KL_TERMS_MAX 48      /* rows of a table, at most */
#define KL_TERM_ANY (-2)     /* kl_term.col of LIMIT and OFFSET: no column */

/* What xFilter does with a term's value. */
typedef enum kl_term_act {
  KL_ACT_PATH,               /* the path to read */
  KL_ACT_TOPIC,              /* topic = ?, or an IN list (kl_choose_parts) */
  KL_ACT_PARTITION,          /* partition op ?; = may be an IN list */
  KL_ACT_OFFSET,             /* offset op ?, folded into offset bounds; = may
                             ** be an IN list */
  KL_ACT_TIMESTAMP,          /* timestamp op ?, folded into time bounds */
  KL_ACT_PRODUCER,           /* producer_id op ?: batches of other producers
                             ** are passed over on their headers */
  KL_ACT_KEY,                /* key = ?, or an IN list: records compared by
                             ** their key's bytes in the scan */
  KL_ACT_OPTION,             /* a hidden-column option (arg: its kl_opt_id) */
  KL_ACT_LIMIT,              /* LIMIT ? */
  KL_ACT_SKIP,               /* OFFSET ? */
  KL_ACT_OWN                 /* the table's own (arg tells which) */
} kl_term_act;

/* kl_term.flags */
enum {
  KL_T_NEED_DIR = 1,         /* only where the path is a constraint (the
                             ** table-valued form: a named table's options
                             ** are fixed, SQLite compares the columns) */
  KL_T_IN = 2,               /* an = that may be an IN list, read at once */
  KL_T_ROWS = 4,             /* LIMIT, OFFSET: not a filter, not another
                             ** constraint; after the order in idxStr */
  KL_T_ONE = 8,              /* one term of its group at most (several
                             ** columns for one bound): the first constraint
                             ** wins, others are SQLite's */
  KL_T_NARROWS = 16,         /* narrows the rows read (else a scan) */
  KL_T_IF = 32               /* only where the table's plan allows it (a
                             ** condition of its own, given as allow) */
};

typedef struct kl_term {
  const char *label;         /* idxStr's word, e.g. "offset>=?"; an IN list
                             ** shows as "offset IN (...)" */
  int col;                   /* the column (KL_TERM_ANY for LIMIT, OFFSET) */
  int op;                    /* SQLITE_INDEX_CONSTRAINT_* */
  kl_term_act act;
  int arg;                   /* enum kl_cmp_op of a bound, kl_opt_id of an
                             ** option, the table's code for KL_ACT_OWN */
  int flags;                 /* KL_T_* */
  int group;                 /* terms of a group estimate once (the first
                             ** used, in table order); 0: none */
  double narrow, narrow_in;  /* a log directory: partitions read divided by
                             ** (as an IN list); 0: 1 */
  double sel, add;           /* rows read: rows * sel + add; sel 0: 1 */
} kl_term;

/* The terms of topic = and partition op for columns topic and part, which
** every table reading a listing shares (kl_choose_parts, glue.h). */
#define KL_PART_TERMS(topic, part)                                                               \
  {"topic=?", topic, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_TOPIC, 0, KL_T_IN | KL_T_NARROWS, 1, 10,   \
   4, 0, 0},                                                                                     \
  {"partition=?", part, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_PARTITION, 0, KL_T_IN | KL_T_NARROWS,   \
   2, 10, 4, 0, 0},                                                                              \
  {"partition>?", part, SQLITE_INDEX_CONSTRAINT_GT, KL_ACT_PARTITION, KL_CMP_GT, KL_T_NARROWS, 2, 2, 2, 0, \
   0},                                                                                           \
  {"partition>=?", part, SQLITE_INDEX_CONSTRAINT_GE, KL_ACT_PARTITION, KL_CMP_GE, KL_T_NARROWS, 2, 2, 2,   \
   0, 0},                                                                                        \
  {"partition<?", part, SQLITE_INDEX_CONSTRAINT_LT, KL_ACT_PARTITION, KL_CMP_LT, KL_T_NARROWS, 2, 2, 2, 0, \
   0},                                                                                           \
  {"partition<=?", part, SQLITE_INDEX_CONSTRAINT_LE, KL_ACT_PARTITION, KL_CMP_LE, KL_T_NARROWS, 2, 2, 2,   \
   0, 0}

/* The terms chosen for one plan. */
typedef struct kl_terms_plan {
  int used[KL_TERMS_MAX];    /* aConstraint index per term, or -1 */
  unsigned char in[KL_TERMS_MAX]; /* its value is an IN list */
  int n_other;               /* usable constraints left to SQLite */
} kl_terms_plan;

/* Choose a term for each usable constraint of info whose column and
** operator a row of t (n rows) has, and whose flags are within allow
** (KL_T_NEED_DIR, KL_T_IF); rowid constraints count as column rowid_col (-1:
** none).  A second constraint for one term (or one group of KL_T_ONE
** terms) is left to SQLite.  IN lists of KL_T_IN terms are asked for. */
void kl_terms_choose(sqlite3_index_info *info, const kl_term *t, int n, int allow, int rowid_col,
                     kl_terms_plan *p);

/* The term of t a constraint would take (whether usable or not), or -1. */
int kl_terms_find(const kl_term *t, int n, int allow, int rowid_col, int col, int op);

/* Is a term with act (and arg, or any arg when arg < 0) chosen?  Its index
** in t, or -1. */
int kl_terms_used(const kl_term *t, int n, const kl_terms_plan *p, kl_term_act act, int arg);

/* Unchoose every chosen term with flag (0: every term). */
void kl_terms_drop(const kl_term *t, int n, kl_terms_plan *p, int flag);

/* x divided by the narrow factors of the chosen terms, once per group. */
double kl_terms_narrow(const kl_term *t, int n, const kl_terms_plan *p, double x);

/* rows through the sel and add of the chosen terms whose act is (want 1)
** or is not (want 0) act, once per group, in table order. */
double kl_terms_select(const kl_term *t, int n, const kl_terms_plan *p, double rows,
                       kl_term_act act, int want);

/* Hand the chosen terms' values to xFilter (argv in table order, omitted
** from SQLite's checks, IN lists whole) and set info->idxStr: their
** labels, with order (may be NULL) after the filters and before LIMIT and
** OFFSET; none: empty (the string "" when no term is chosen and order is
** NULL, or nothing when none is the empty string). */
int kl_terms_emit(sqlite3_index_info *info, const kl_term *t, int n, const kl_terms_plan *p,
                  const char *none, const char *order);

/* One term of a decoded plan, in argv order. */
typedef struct kl_term_use {
  int term;                  /* index in t */
  int in;                    /* its value is an IN list */
} kl_term_use;

/* Read idx_str back (NULL: no terms): the terms into use (KL_TERMS_MAX
** slots), their count in *nuse, which must be argc; words that are not
** terms must be among phrases (NULL-terminated; the order and "full scan").
** A string kl_terms_emit did not write, or one whose terms do not match
** argc, is SQLITE_ERROR with vt's message "<module>: the plan \"...\" is
** not valid". */
int kl_terms_decode(const kl_term *t, int n, const char *const *phrases, const char *idx_str,
                    int argc, kl_term_use *use, int *nuse, sqlite3_vtab *vt, const char *module);

/* The plans a table decoded last.  SQLite opens a new cursor for every run
** of a prepared statement, so a cursor cannot keep its plan; reading
** idxStr again on every xFilter costs more than a point lookup's own work.
** Zeroed memory is an empty memo. */
#define KL_TERMS_MEMO 4
typedef struct kl_terms_memo {
  struct {
    char *str;               /* idx_str ("" for NULL), or NULL: empty slot */
    int argc, nuse;
    kl_term_use use[KL_TERMS_MAX];
  } slot[KL_TERMS_MEMO];
  int next;                  /* the slot to replace next */
} kl_terms_memo;

/* kl_terms_decode, answered from m when the same idx_str and argc were
** decoded lately; a decoded plan is kept in m (the oldest slot gives way).
** Errors as kl_terms_decode's, and SQLITE_NOMEM. */
int kl_terms_decode_memo(kl_terms_memo *m, const kl_term *t, int n, const char *const *phrases,
                         const char *idx_str, int argc, kl_term_use *use, int *nuse,
                         sqlite3_vtab *vt, const char *module);

/* Free what m keeps; m is empty after. */
void kl_terms_memo_free(kl_terms_memo *m);

#endif
