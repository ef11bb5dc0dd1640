/*
** options.h - the options of a kafka_log table, in one table: their names,
** the values each takes and the words of the messages, so that an option
** is read and refused the same way wherever it is given (an argument of
** CREATE VIRTUAL TABLE, a row of the table's <name>_config shadow table, a
** hidden-column constraint such as kafka_log('p', 'skip') or
** WHERE max_skew_ms = ?).
**
** One row per option in options.c: its name, the words or the range it
** takes, how a message says so, its default.  Adding an option is a row
** there and an id here; a hidden column of kafka_log that takes it is a
** term of plan.c (KL_ACT_OPTION).
**
** Every value is an int64: an integer option's own value, a word option's
** KL_* constant (on_corrupt KL_ON_CORRUPT_*, compression KL_CODEC_*, mode
** KL_MODE_*, ...).  Text that is an integer as SQLite's INTEGER affinity
** reads it ('60000', ' 6e4 ') is that integer.
*/
#ifndef KL_OPTIONS_H
#define KL_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "sqlite3ext.h"

typedef enum kl_opt_id {
  KL_OPT_ON_CORRUPT,        /* KL_ON_CORRUPT_* */
  KL_OPT_MAX_SKEW,          /* milliseconds; -1: none */
  KL_OPT_ISOLATION,         /* 1: read_committed */
  KL_OPT_KEY_TYPE,          /* 1: text */
  KL_OPT_VALUE_TYPE,
  KL_OPT_MODE,              /* KL_MODE_*; readonly=0|1 is another name for it */
  KL_OPT_SEGMENT_BYTES,
  KL_OPT_INDEX_INTERVAL,
  KL_OPT_BATCH_BYTES,
  KL_OPT_COMPRESSION,       /* KL_CODEC_* */
  KL_OPT_TIMESTAMP_TYPE,    /* 1: log_append_time */
  KL_OPT_RETENTION_BYTES,   /* -1: none */
  KL_OPT_RETENTION_MS,      /* -1: none */
  KL_OPT_CHECKPOINTS,       /* 1: ignore the log directory's checkpoint files */
  KL_OPT_MAX_MESSAGE_BYTES,
  KL_OPT_THREADS,           /* read-ahead worker threads (core/ahead.h) */
  KL_OPT_SORT_BYTES,        /* memory for ORDER BY timestamp (log_tsorder.c) */
  KL_OPT_CACHE_BYTES,       /* decompressed batches kept for lookups (core/bcache.h) */
  KL_OPT_MMAP,              /* 1: map .log files that cannot shrink (core/file.h) */
  KL_OPT_COUNT
} kl_opt_id;

/* What a named table may do to its log.  A log made with KL_MODE_CREATE
** is written to from then on: its config says KL_MODE_WRITE. */
enum { KL_MODE_READ = 0, KL_MODE_WRITE = 1, KL_MODE_CREATE = 2 };

typedef struct kl_option kl_option;

/* The option called name (n bytes, case-sensitive, synonyms included), or
** NULL. */
const kl_option *kl_option_find(const char *name, size_t n);

/* The option of id (by its own name, not a synonym). */
const kl_option *kl_option_of(kl_opt_id id);

/* The default of an option the writer does not keep (on_corrupt,
** max_skew_ms, isolation, key_type, value_type, mode, checkpoints,
** threads); the
** writer's own come from kl_append_opts_default (append.h). */
int64_t kl_option_default(kl_opt_id id);

/* The value v of option id as a hidden column returns it: the word that
** names it, an integer, or NULL for max_skew_ms -1. */
void kl_option_result(sqlite3_context *ctx, kl_opt_id id, int64_t v);

/* Its id (a synonym's is the option's) and the name it was found by. */
kl_opt_id kl_option_id(const kl_option *o);
const char *kl_option_name(const kl_option *o);

/* The first word of a word option o that stands for v, or NULL. */
const char *kl_option_word(const kl_option *o, int64_t v);

/* The value of option o given as text (dequoted): SQLITE_OK with *out, or
** SQLITE_ERROR with *errmsg (sqlite3_malloc'd) naming the option, the
** value and what it takes. */
int kl_option_text(const kl_option *o, const char *text, int64_t *out, char **errmsg);

/* The same for an SQL value (a hidden-column constraint): an INTEGER, a
** REAL with an integral value, or TEXT as for kl_option_text.  NULL leaves
** *out as it is (the table's own setting). */
int kl_option_value(const kl_option *o, sqlite3_value *v, int64_t *out, char **errmsg);

/* The value v of option id as an SQL literal for the config shadow table:
** a quoted word, an integer, or NULL for max_skew_ms -1 (sqlite3_malloc'd). */
char *kl_option_literal(kl_opt_id id, int64_t v);

/* "on_corrupt, max_skew_ms, ..., retention_ms": every option's name, for
** messages (sqlite3_malloc'd). */
char *kl_option_names(void);

#endif
