/*
** listing.h - what the listing tables (kafka_batches, kafka_segments,
** kafka_log_check, and for their path kafka_consumer_offsets and
** kafka_partitions) share: their connection, their plan and their walk
** over the chosen partitions of a path.
*/
#ifndef KL_LISTING_H
#define KL_LISTING_H

#include "glue.h"
#include "terms.h"

/* For the listing tables (kafka_log_check, kafka_segments, kafka_batches):
** declare schema, make a vtab of size bytes (zeroed, its first member a
** sqlite3_vtab) and mark it DIRECTONLY (they read files named in SQL). */
int kl_listing_connect(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out);

/* The term of a table whose only constraint is its path (column col). */
#define KL_DIR_TERM(col) {"dir=?", col, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_PATH, 0, 0, 0, 0, 0, 0, 0}

/* xBestIndex of a table whose only constraint is its path, the term dir
** (kafka_consumer_offsets, kafka_partitions): idxStr "dir=?", idxNum 0.
** Refusal and cost as kl_best_index_listing's; kl_dir_arg reads the path
** back in xFilter (NULL when not given; a plan it did not make is
** SQLITE_ERROR with vt's message). */
int kl_best_index_dir(sqlite3_index_info *info, const kl_term *dir);
int kl_dir_arg(const kl_term *dir, const char *idx_str, int argc, sqlite3_value **argv,
               sqlite3_vtab *vt, const char *module, const char **path);

/* The first terms of a listing table whose columns dir, topic and
** partition are dir, topic and part: its path, then which partitions of it
** to read (kl_choose_parts).  A table's own terms follow (terms.h). */
#define KL_LISTING_TERMS(dir, topic, part)                                                       \
  {"dir=?", dir, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_PATH, 0, 0, 0, 0, 0, 0, 0},                  \
  KL_PART_TERMS(topic, part)

/* xBestIndex of a listing table of terms t (n rows, KL_LISTING_TERMS
** first): chooses terms (terms.h), a cost (a partition's worth of work,
** less for each term that narrows the partitions read) and idxStr (e.g.
** "dir=? topic=? partition>=?"); idxNum is 0.  A plan where dir = ? is not
** yet usable is refused (SQLITE_CONSTRAINT), so that SQLite picks the one
** where it is; without it at all, no term at a prohibitive cost (idxStr
** "no path"), and xFilter says the path is required. */
int kl_best_index_listing(sqlite3_index_info *info, const kl_term *t, int n);

/* xFilter's side of a listing plan: the path (NULL when not given), the
** topic and partition constraints, and the table's own terms with their
** values, in argv order. */
typedef struct kl_listing_args {
  const char *dir;
  kl_part_filter f;
  int nown;
  const kl_term *own[KL_TERMS_MAX];
  sqlite3_value *own_v[KL_TERMS_MAX];
} kl_listing_args;

/* Read idx_str and argv back into a (kl_terms_decode: a plan the table did
** not make is SQLITE_ERROR with vt's message). */
int kl_listing_args_read(const kl_term *t, int n, const char *idx_str, int argc,
                         sqlite3_value **argv, sqlite3_vtab *vt, const char *module,
                         kl_listing_args *a);

/* A listing table's walk over the chosen partitions of a path, one at a
** time: each is opened when the previous one is done, so that a scan of
** thousands of partitions holds the files of one. */
typedef struct kl_listing {
  kl_broker *b;             /* the partitions under path */
  char *path;               /* as given: the dir column */
  size_t *sel, nsel;        /* the chosen ones (indexes into b), in order */
  size_t next;              /* the next of sel to read */
  size_t index;             /* the current one's index in b */
  const kl_part *part;      /* the current one, or NULL */
} kl_listing;

/* List path and choose its partitions by f.  A path that does not list is
** an error set on vt as "<module>: <reason>" (the reason names the path,
** or the malformed checkpoint file and line) with the code kl_sqlite_rc
** gives (SQLITE_CANTOPEN, SQLITE_CORRUPT...).  l is zeroed first; end it with
** kl_listing_end (also after an error). */
int kl_listing_start(kl_listing *l, sqlite3_vtab *vt, const char *module, const char *path,
                     const kl_part_filter *f);

/* The next chosen partition (also in l->part), or NULL when none is left. */
const kl_part *kl_listing_next(kl_listing *l);

/* Open the current partition's log as kafka_log does: a partition
** directory given alone must hold segments (kl_log_open_partition), one
** of a log directory may be empty (Kafka's log manager loads it so). */
kl_rc kl_listing_open_log(const kl_listing *l, kl_log **out, kl_err *err);

/* A rowid distinct across the partitions of a listing: v itself for one
** partition directory, else v with the partition's place in the listing
** above bit 44 (as kafka_log's rowids). */
sqlite3_int64 kl_listing_rowid(const kl_listing *l, int64_t v);

void kl_listing_end(kl_listing *l);

#endif
