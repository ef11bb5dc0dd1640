/*
** glue.h - what the SQLite modules of vtab/ share: the per-connection
** context (work counters), the one place where a core result code becomes a
** SQLite one, and the registration of each module.
*/
#ifndef KL_GLUE_H
#define KL_GLUE_H

#include "broker.h"
#include "klog.h"
#include "log.h"
#include "sqlite3ext.h"

/* Per-connection state, owned by the kafka_log module (freed with the
** connection).  Every reader of a statement counts into stats directly,
** planning included, so a statement's work is what stats gained while it
** ran: a self-join counts each side once. */
typedef struct kl_conn {
  kl_stats stats;           /* work done since the last reset */
  struct kl_values *values; /* the registries of decoded columns (values.h) */
} kl_conn;

/* The SQLite result code for a core result code: the one mapping, so that
** an error keeps its class however far it travels (a damaged file is
** SQLITE_CORRUPT_VTAB, a full disk SQLITE_FULL, a path that is not there
** SQLITE_CANTOPEN). */
int kl_sqlite_rc(kl_rc rc);

/* Report a core error as a table's: vt's message "<module>: <err's>"
** (the code's name when err has none), and kl_sqlite_rc(rc). */
int kl_vtab_error(sqlite3_vtab *vt, const char *module, kl_rc rc, const kl_err *err);

/* kafka_log_stats() as JSON text (sqlite3_malloc'd, NULL when out of
** memory). */
char *kl_stats_json(const kl_stats *s);

/* Register the kafka_log module on db; conn is handed over (freed by the
** module's destructor, also on failure: SQLite calls it then).  The
** extension registers it last (kafkalog.c), so that everything else that
** counts into conn is registered while conn is still its own.
** log_vtab.c */
int kl_log_vtab_register(sqlite3 *db, kl_conn *conn);

/* kafka_log_max_skew('<dir>'), its user data the kl_conn.  log_vtab.c */
void kl_fn_max_skew(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* Register the kafka_log_check table-valued function, counting its work
** into conn (owned by the kafka_log module).  check_vtab.c */
int kl_check_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_batches table-valued function, counting its work into
** conn (owned by the kafka_log module).  batches_vtab.c */
int kl_batches_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_segments table-valued function, counting its work into
** conn (owned by the kafka_log module).  segments_vtab.c */
int kl_segments_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_consumer_offsets table-valued function, counting its
** work into conn (owned by the kafka_log module).  offsets_vtab.c */
int kl_offsets_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_schemas table-valued function, counting its work
** into conn (owned by the kafka_log module).  schemas_vtab.c */
int kl_schemas_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_partitions table-valued function, counting its work
** into conn (owned by the kafka_log module).  partitions_vtab.c */
int kl_partitions_vtab_register(sqlite3 *db, kl_conn *conn);

/* For the listing tables (kafka_log_check, kafka_segments, kafka_batches):
** declare schema, make a vtab of size bytes (zeroed, its first member a
** sqlite3_vtab) and mark it DIRECTONLY (they read files named in SQL). */
int kl_listing_connect(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out);

/* xBestIndex of a table whose only constraint is its path (column
** dir_col; kafka_consumer_offsets): dir = ? becomes argv 1 (idxNum 1).
** Refusal and cost as kl_best_index_listing's. */
int kl_best_index_dir(sqlite3_index_info *info, int dir_col);


/* Comparison operators, in the order of the plan bits of plan.h. */
enum kl_cmp_op { KL_CMP_EQ, KL_CMP_GT, KL_CMP_GE, KL_CMP_LT, KL_CMP_LE };

/* Narrow the inclusive integer bounds [*lo, *hi] by "column op v", with
** SQLite's semantics: numeric text compares as a number, NULL matches
** nothing (the bounds become empty: *lo > *hi), any other text or blob
** sorts after every number; fractions round to the integers they admit,
** and a REAL past +-2^63 (or an infinity) admits all or none of them. */
void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi);

/* What a query's topic and partition constraints admit, as xFilter
** receives them.  Every table reading a listing (core/broker.h) chooses
** its partitions through kl_choose_parts, so that all of them agree on
** which partitions a constraint selects. */
typedef struct kl_part_filter {
  sqlite3_value *topic;     /* topic = value, the IN list when topic_in, or
                            ** NULL: any topic */
  int topic_in;
  sqlite3_value *part;      /* partition = value, the IN list when part_in,
                            ** or NULL: any partition */
  int part_in;
  int64_t lo, hi;           /* partition >, >=, <, <= folded (kl_fold_bound):
                            ** inclusive bounds */
} kl_part_filter;

/* A filter admitting every partition, named or not. */
void kl_part_filter_init(kl_part_filter *f);

/* The partitions of b that f admits, as indexes into the listing, in
** listing order (topic, partition).  Only names are looked at, no
** partition is opened: each topic value binary-searches the sorted listing
** (kl_broker_seek), so a lookup among thousands of partitions reads few
** entries.  A directory whose name is not Kafka's has no topic or
** partition and matches no constraint on them.  Values compare as SQLite
** compares them with the columns: a topic value that is not text, and a
** partition value that is not an integer, match nothing.  OUT: *sel
** (sqlite3_malloc'd, the caller frees it; may be non-NULL with *nsel 0). */
int kl_choose_parts(const kl_broker *b, const kl_part_filter *f, size_t **sel, size_t *nsel);

/*
** The plan of a listing table (kafka_batches, kafka_segments,
** kafka_log_check): its path, then which partitions of it to read.
** kl_best_index_listing sets these bits and passes one argv value per
** argv bit, in the order of the bits (lowest first); kl_listing_args reads
** them back.  A table's own bits start at KL_L_OWN, their argv values
** after these.
**
**   bit     argv  meaning
**   0x001   yes   dir = ?          a partition directory, a log directory,
**                                  or log directories separated by commas
**   0x002   yes   topic = ?        or topic IN (...) with KL_L_TOPIC_IN
**   0x004   yes   partition = ?    or partition IN (...) with KL_L_PART_IN
**   0x008   yes   partition > ?
**   0x010   yes   partition >= ?
**   0x020   yes   partition < ?
**   0x040   yes   partition <= ?
**   0x080   no    the topic = value is an IN list
**   0x100   no    the partition = value is an IN list
**
** Topic and partition constraints choose partitions (kl_choose_parts)
** before any is opened; they are exact, so SQLite does not check them
** again.  A second bound of one kind is left to SQLite.
*/
enum {
  KL_L_DIR = 0x001,
  KL_L_TOPIC_EQ = 0x002,
  KL_L_PART_EQ = 0x004,
  KL_L_PART_GT = 0x008,
  KL_L_PART_GE = 0x010,
  KL_L_PART_LT = 0x020,
  KL_L_PART_LE = 0x040,
  KL_L_ARGV_COUNT = 7,      /* bits 0 to 6 carry an argv value */
  KL_L_TOPIC_IN = 0x080,
  KL_L_PART_IN = 0x100,
  KL_L_OWN = 0x200          /* the first bit a table may use for itself */
};

/* xBestIndex of a listing table whose columns dir, topic and partition are
** dir_col, topic_col and part_col: sets idxNum (KL_L_* bits), argv indexes
** 1..*nargv, omit flags, a cost and idxStr (e.g. "dir=? topic=?
** partition>=?"; the table may append its own with kl_append_idx_str).  A
** plan where dir = ? is not yet usable is refused (SQLITE_CONSTRAINT), so
** that SQLite picks the one where it is; without it at all, idxNum 0 at a
** prohibitive cost, and xFilter says the path is required. */
int kl_best_index_listing(sqlite3_index_info *info, int dir_col, int topic_col, int part_col,
                          int *nargv);

/* Append " what" to info->idxStr (made by kl_best_index_listing). */
int kl_append_idx_str(sqlite3_index_info *info, const char *what);

/* xFilter's side of the plan: the path (NULL when not given) and the
** topic and partition constraints of idx from argv.  Returns how many argv
** values were read (the table's own follow), or -1 when argv is short. */
int kl_listing_args(int idx, int argc, sqlite3_value **argv, const char **dir, kl_part_filter *f);

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
