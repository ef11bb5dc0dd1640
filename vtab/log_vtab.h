/*
** log_vtab.h - what the files of the kafka_log module share: the table and
** cursor structs and the functions one file calls in another.
**
**   log_vtab.c       the module: CREATE/connect, xBestIndex, registration
**   log_options.c    CREATE's options and the <name>_config shadow table
**   log_read.c       reading: xOpen, xFilter, xNext, xColumn, partitions
**   log_merge.c      ORDER BY offset across partitions (the lanes' merge)
**   log_tsorder.c    ORDER BY timestamp (largest/smallest first, the pairs)
**   log_committed.c  read_committed: the last stable offset bound
**   log_write.c      INSERT, DELETE and transactions, forwarded to append.h
**   log_maxskew.c    kafka_log_max_skew()
**
** Not an interface for other modules: glue.h registers the module.
*/
#ifndef KL_LOG_VTAB_H
#define KL_LOG_VTAB_H

#include <stddef.h>
#include <stdint.h>

#include "append.h"
#include "values.h"
#include "cursor.h"
#include "glue.h"
#include "keyset.h"
#include "logcache.h"
#include "options.h"
#include "parts.h"
#include "places.h"
#include "terms.h"

#define KL_NO_LANE ((size_t)-1) /* kl_vcursor.lane: no lane is read */

/* Listings of one named partition a table makes before it lists the whole
** path: a query naming one partition on a fresh connection reads one
** entry of a log directory of thousands, while a table queried again and
** again on other partitions (a join, repeated lookups) soon holds the
** whole listing, which then costs an fstat per log directory a query. */
#define KL_NAMED_LISTINGS 4

typedef struct kl_vtab {
  sqlite3_vtab base;
  sqlite3 *db;
  kl_conn *conn;
  char *schema, *name;      /* named form: where the table and its shadow
                            ** table live (NULL for the table-valued form) */
  char *dir;                /* named form: the directory, absolute */
  int64_t opt[KL_OPT_COUNT];/* every option's value (options.h); the write
                            ** options also in wopt */
  uint64_t opt_given;       /* those its arguments gave (bit 1 << id) */
  kl_segset set;            /* the open segments of all its logs */
  kl_logcache *logs;        /* the logs kept between queries */
  kl_cursor *spare;         /* a core cursor kept between queries, its
                            ** buffers with it (detached), or NULL */
  kl_listref *bk;           /* the listing of the path last read */
  kl_places *places;        /* each partition's place in rowids */
  int cursors;              /* open cursors (places are cleared without) */
  int named_listings;       /* listings of one named partition made: past
                            ** KL_NAMED_LISTINGS, the whole path is listed
                            ** once and serves every query after */
  kl_append_opts wopt;      /* named form: how it writes (append.h) */
  kl_append *app;           /* its writer, once it writes */
  kl_decode_opts dec;       /* how 'confluent' and 'avro' columns decode */
  kl_terms_memo plans;      /* the plans decoded last */
  long cpus;                /* CPUs it may run on when connected (os.h
                            ** kl_os_cpus: not once a query) */
  kl_ahead *ra;             /* the read-ahead of its scans (core/ahead.h),
                            ** made on first use: its workers start once
                            ** and wait parked until the table disconnects */
} kl_vtab;

/* Partitions whose ordered streams one scan merges at most: one open
** segment and one decoded batch (its reader's buffers) each, so the
** segments the set has room for (core/segment.h kl_segset_room), but no
** more than KL_SEGSET_MAX_OPEN (memory). */
static inline size_t lv_merge_max(const kl_vtab *vt) {
  int room = kl_segset_room(&vt->set);
  return room < KL_SEGSET_MAX_OPEN ? (size_t)room : KL_SEGSET_MAX_OPEN;
}

typedef struct kl_vcursor {
  sqlite3_vtab_cursor base;
  kl_listref *bk;           /* the partitions of the path (one ref), or NULL */
  size_t *sel;              /* the chosen ones (indexes into bk), in order:
                            ** allocated, or &sel_one */
  size_t sel_one;
  size_t nsel, isel;        /* how many; the next to read */
  const kl_part *part;      /* the one being read */
  const kl_part *len_part;  /* the partition whose topic's length is */
  int topic_len;            /* topic_len (found once, not once a row) */
  size_t place;             /* its place in the listing, for rowids */
  kl_logref *ref;           /* its log (one ref), or NULL */
  kl_cursor *cur;
  kl_bounds bnd;            /* the query's bounds */
  kl_bounds pbnd;           /* the same within the partition's readable
                            ** range (log start offset; read_committed: the
                            ** last stable offset and high watermark) */
  int read_committed;       /* records of aborted transactions are not rows */
  int text[2];              /* key, value: KL_TYPE_* (values.h) */
  kl_coldec coldec;         /* decoding of 'confluent' columns */
  sqlite3_int64 *in;        /* sorted distinct IN values, or NULL */
  int n_in, i_in;
  sqlite3_int64 limit;      /* rows still allowed, -1 = no limit */
  sqlite3_int64 skip;       /* rows to skip first (OFFSET) */
  int64_t pid_lo, pid_hi;   /* producer_id bounds (inclusive) */
  int batch_terms;          /* producer_id bounds or read_committed: a
                            ** record may not be a row for its batch
                            ** (lv_passed_over) */
  int plain;                /* no LIMIT, OFFSET, DISTINCT, merge, order by
                            ** timestamp or batch terms: each record the
                            ** core cursor gives is a row (lv_step) */
  kl_keyset keys;           /* key = ?, key IN (...): the keys sought, which
                            ** bnd.keys points to then (core/keyset.h) */
  int distinct;             /* KL_P_DISTINCT or KL_P_DISTINCT_TOPIC: one row
                            ** of each partition, or of each topic */
  int part_row;             /* a row of the partition read was produced */
  const kl_part *row_part;  /* the partition of the last row, or NULL */
  int eof;
  kl_buf json;              /* headers column scratch */
  int on_corrupt;           /* KL_ON_CORRUPT_* of the current scan */
  sqlite3_int64 max_skew;   /* max_skew_ms of the current scan, or -1 */
  int64_t opt[KL_OPT_COUNT];/* the options of the current scan */
  uint64_t opt_given;       /* those the table or the scan's terms gave */
  /* ORDER BY timestamp (plan bit KL_P_TS_ORDER). */
  int tsd;
  int tsd_desc;             /* largest first */
  int tsd_pairs;            /* rows come from the pairs (KL_P_PAIRS) */
  int have_first;           /* the first row came from the largest-timestamp
                            ** lookup: first_off is not produced again */
  int64_t first_off;
  int merge;                /* an order across several partitions (the
                            ** path was not known when the plan consumed
                            ** it): each partition is read by its own lane,
                            ** and rows come from the lanes' merge
                            ** (by_offset) or from the pairs */
  int by_offset;
  struct lane {
    kl_logref *ref;         /* its log and core cursor (NULL when closed) */
    kl_cursor *cur;
    kl_bounds pbnd;         /* its readable range, as open_partition set it */
    int i_in;               /* its next IN value */
    int64_t head;           /* the offset of its current row */
    uint64_t used;          /* when last read, for closing the oldest */
  } *lanes;                 /* one per chosen partition, NULL without merge */
  size_t lane;              /* the one in part, ref, cur, pbnd, or KL_NO_LANE */
  size_t nlive;             /* lanes open */
  uint64_t tick;
  size_t *heap;             /* by_offset: lanes with a current row, the
                            ** next row's on top */
  size_t nheap;
  int heap_built;
  struct ts_pair {
    int64_t key, ts, off;   /* key: ts, or off when by_offset */
    size_t k;               /* which partition: an index into sel */
  } *pairs;                 /* sorted, once needed */
  size_t n_pairs, i_pairs, pairs_alloc;
  int pairs_built;
  int pairs_more;           /* this pass left pairs out: another follows */
  int have_floor;           /* passes after the first: only pairs after */
  struct ts_pair floor;     /* the last one the previous pass produced */
  int on_pair;              /* the current row is pairs[i_pairs - 1] and
                            ** c->cur is not on it */
  int stale;                /* a read failed: the next xFilter opens the
                            ** log afresh */
  int plan_n;               /* its terms, in argv order */
  kl_term_use plan_use[KL_TERMS_MAX];
} kl_vcursor;

/* ---- log_vtab.c ---- */

/* A read of dir failed or found a file changed: the next query opens it
** afresh instead of reusing what was learnt. */
void lv_forget_log(kl_vtab *vt, const char *dir);

/* Set vt's message to fmt with msg; returns rc. */
int lv_set_error(sqlite3_vtab *vt, int rc, const char *fmt, const char *msg);

/* A counted reference to the log of dir (logcache.h); with view, as the
** writing connection sees it inside its transaction (not cached). */
kl_rc lv_acquire_log(kl_vtab *vt, const char *dir, int alone, const kl_view *view,
                     kl_logref **out, kl_err *err);

/* The listing of path for a query whose topic and partition constraints
** are f (one partition named: a listing keeping it alone, within the
** table's KL_NAMED_LISTINGS), in *out (one reference), as kl_listref_get
** gives it. */
kl_rc lv_get_listing(kl_vtab *vt, const char *path, const kl_part_filter *f, kl_listref **out,
                     kl_err *err);

/* Does listing k hold every partition a query of filter f may read? */
int lv_listing_serves(const kl_listref *k, const kl_part_filter *f);

/* The listing's partition i's place in rowids (places.h), or -1 when out
** of memory or out of places. */
int64_t lv_place(kl_vtab *vt, kl_listref *k, size_t i);

/* ---- log_options.c ---- */

/* An argument of CREATE VIRTUAL TABLE, unquoted (sqlite3_malloc'd). */
char *lv_dequote(const char *s);

/* Option id's value in the table; every option's (xFilter, once a
** lookup: one copy, not a call an option); every option set to its
** default. */
int64_t lv_get_option(const kl_vtab *vt, kl_opt_id id);
void lv_get_options(const kl_vtab *vt, int64_t opt[KL_OPT_COUNT]);
void lv_default_options(kl_vtab *vt);

/* Is arg "<name> = ...", an option where the path belongs? */
int lv_looks_like_option(const char *arg);

/* A table option after the path, "name=value", into vt; *given holds the
** options seen so far (1u << KL_OPT_*).  SQLITE_ERROR with *errmsg. */
int lv_parse_option(kl_vtab *vt, const char *arg, unsigned *given, char **errmsg);

/* The path made absolute, each of its directories (sqlite3_malloc'd). */
char *lv_absolute(const char *path);

/* Read the directory and options of a named table from its shadow table
** (*found 0 when there is none); write them there (CREATE). */
int lv_read_config(kl_vtab *vt, int *found, char **errmsg);
int lv_write_config(kl_vtab *vt, char **errmsg);

/* ---- log_read.c ---- */

int lv_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out);
int lv_close(sqlite3_vtab_cursor *cur);
int lv_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
              sqlite3_value **argv);
int lv_next(sqlite3_vtab_cursor *cur);
int lv_eof(sqlite3_vtab_cursor *cur);
int lv_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col);
int lv_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid);

/* Report a core error as the table's (and forget what was learnt of the
** files when it may be what went wrong). */
int lv_report(kl_vcursor *c, kl_rc rc, const kl_err *err);

/* Is the current record not a row, on its batch's header alone? */
int lv_passed_over(const kl_vcursor *c);

/* Start the core cursor on the next IN value (or the only range). */
kl_rc lv_start_range(kl_vcursor *c, kl_err *err);

/* Make chosen partition sel[k] the one read, its readable range in pbnd. */
kl_rc lv_open_partition(kl_vcursor *c, size_t k, kl_err *err);

/* Leave the partition being read (unless a lane owns it). */
void lv_end_partition(kl_vcursor *c);

/* Move to the next row the plan admits (SQLite's result code). */
int lv_step(kl_vcursor *c);

/* ---- log_merge.c ---- */

/* Make lane k the one read (opened on first use). */
kl_rc lv_use_lane(kl_vcursor *c, size_t k, kl_err *err);

/* The next row of ORDER BY offset over several partitions: KL_DONE at the
** end. */
kl_rc lv_merge_next(kl_vcursor *c, kl_err *err);

/* ---- log_tsorder.c ---- */

/* Position on the record at off, known to be there (else KL_CORRUPT: the
** partition changed). */
kl_rc lv_seek_offset(kl_vcursor *c, int64_t off, kl_err *err);

/* The next row of ORDER BY timestamp: KL_DONE at the end. */
kl_rc lv_tsd_next(kl_vcursor *c, kl_err *err);

/* ---- log_committed.c ---- */

/* Narrow c->pbnd to what a read_committed consumer may read. */
kl_rc lv_committed_bounds(kl_vcursor *c, kl_err *err);

/* ---- log_write.c ---- */

int lv_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid);
int lv_begin(sqlite3_vtab *base);
int lv_sync(sqlite3_vtab *base);
int lv_commit(sqlite3_vtab *base);
int lv_rollback(sqlite3_vtab *base);
int lv_savepoint(sqlite3_vtab *base, int n);
int lv_release(sqlite3_vtab *base, int n);
int lv_rollback_to(sqlite3_vtab *base, int n);

#endif
