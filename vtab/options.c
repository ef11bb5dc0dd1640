/*
** options.c - see options.h.
*/
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ahead.h"
#include "bcache.h"
#include "codec.h"
#include "scan.h"

SQLITE_EXTENSION_INIT3

typedef struct kl_opt_word {
  const char *word;         /* the first word of a value is how config keeps it */
  int64_t value;
} kl_opt_word;

struct kl_option {
  const char *name;
  kl_opt_id id;
  int64_t lo, hi;           /* an integer option's range */
  const kl_opt_word *words; /* a word option's words (NULL-terminated), or NULL */
  const char *expected;     /* what a valid value is; NULL: an integer from
                            ** lo to hi */
  int64_t def;              /* the default of an option the writer does not
                            ** keep (append.h keeps Kafka's for its own) */
};

static const kl_opt_word w_on_corrupt[] = {
    {"error", KL_ON_CORRUPT_ERROR}, {"skip", KL_ON_CORRUPT_SKIP}, {NULL, 0}};
static const kl_opt_word w_isolation[] = {
    {"read_uncommitted", 0}, {"read_committed", 1}, {NULL, 0}};
static const kl_opt_word w_type[] = {
    {"blob", 0}, {"text", 1}, {"confluent", 2}, {"avro", 3}, {NULL, 0}};
static const kl_opt_word w_mode[] = {
    {"read", KL_MODE_READ}, {"write", KL_MODE_WRITE}, {"create", KL_MODE_CREATE}, {NULL, 0}};
static const kl_opt_word w_readonly[] = {
    {"1", KL_MODE_READ}, {"true", KL_MODE_READ}, {"on", KL_MODE_READ},
    {"0", KL_MODE_WRITE}, {"false", KL_MODE_WRITE}, {"off", KL_MODE_WRITE}, {NULL, 0}};
static const kl_opt_word w_mmap[] = {{"off", 0}, {"on", 1}, {NULL, 0}};
static const kl_opt_word w_checkpoints[] = {{"read", 0}, {"ignore", 1}, {NULL, 0}};
static const kl_opt_word w_codec[] = {
    {"none", KL_CODEC_NONE}, {"uncompressed", KL_CODEC_NONE}, {"gzip", KL_CODEC_GZIP},
    {"snappy", KL_CODEC_SNAPPY}, {"lz4", KL_CODEC_LZ4}, {"zstd", KL_CODEC_ZSTD}, {NULL, 0}};
static const kl_opt_word w_ts_type[] = {
    {"create_time", 0}, {"create", 0}, {"CreateTime", 0},
    {"log_append_time", 1}, {"log_append", 1}, {"LogAppendTime", 1}, {NULL, 0}};

/* In the order of kl_opt_id; synonyms after. */
static const kl_option options[] = {
    {"on_corrupt", KL_OPT_ON_CORRUPT, 0, 0, w_on_corrupt, "'error' or 'skip'", KL_ON_CORRUPT_ERROR},
    {"max_skew_ms", KL_OPT_MAX_SKEW, 0, INT64_MAX, NULL, "an integer of milliseconds, 0 or more", -1},
    {"isolation", KL_OPT_ISOLATION, 0, 0, w_isolation, "'read_uncommitted' or 'read_committed'", 0},
    {"key_type", KL_OPT_KEY_TYPE, 0, 0, w_type, "'blob', 'text', 'confluent' or 'avro'", 0},
    {"value_type", KL_OPT_VALUE_TYPE, 0, 0, w_type, "'blob', 'text', 'confluent' or 'avro'", 0},
    {"mode", KL_OPT_MODE, 0, 0, w_mode, "'read', 'write' or 'create'", KL_MODE_READ},
    /* Positions in Kafka's indexes are int32; 14 is Kafka's own minimum. */
    {"segment_bytes", KL_OPT_SEGMENT_BYTES, 14, INT32_MAX, NULL, "an integer from 14 to 2147483647", 0},
    {"index_interval_bytes", KL_OPT_INDEX_INTERVAL, 0, INT32_MAX, NULL,
     "an integer from 0 to 2147483647", 0},
    {"batch_bytes", KL_OPT_BATCH_BYTES, 128, INT32_MAX, NULL, "an integer from 128 to 2147483647", 0},
    {"compression", KL_OPT_COMPRESSION, 0, 0, w_codec, "'none', 'gzip', 'snappy', 'lz4' or 'zstd'", 0},
    {"timestamp_type", KL_OPT_TIMESTAMP_TYPE, 0, 0, w_ts_type, "'create_time' or 'log_append_time'", 0},
    {"retention_bytes", KL_OPT_RETENTION_BYTES, -1, INT64_MAX, NULL,
     "an integer of bytes, or -1 for none", 0},
    {"retention_ms", KL_OPT_RETENTION_MS, -1, INT64_MAX, NULL,
     "an integer of milliseconds, or -1 for none", 0},
    {"checkpoints", KL_OPT_CHECKPOINTS, 0, 0, w_checkpoints, "'read' or 'ignore'", 0},
    /* Kafka's message.max.bytes, bounded by what a reader decompresses. */
    {"max_message_bytes", KL_OPT_MAX_MESSAGE_BYTES, 128,
     (int64_t)(KL_V2_HEADER + KL_MAX_BATCH_BYTES), NULL, NULL, 0},
    /* Workers decompressing ahead of a scan; SQLite's own sorter allows 8
    ** (SQLITE_MAX_WORKER_THREADS), and more than the cores idle do not help.
    ** One by default: it is kept per table and only a long scan hands it
    ** batches (core/cursor.h), so short queries pay nothing for it. */
    {"threads", KL_OPT_THREADS, 0, KL_AHEAD_MAX_THREADS, NULL, NULL, 1},
    /* What ORDER BY timestamp holds in memory before it sorts in passes;
    ** 8 MiB is about what SQLite's own sorter holds before it spills. */
    {"sort_bytes", KL_OPT_SORT_BYTES, 64, INT64_MAX, NULL, NULL, 8 << 20},
    /* The table's decompressed batches kept for point lookups: 8 MiB by
    ** default, and never more than 1 GiB, so that a typing slip cannot
    ** let a join grow the process without bound. */
    {"cache_bytes", KL_OPT_CACHE_BYTES, 0, KL_BCACHE_MAX_BYTES, NULL, NULL, KL_BCACHE_BYTES},
    /* Off by default: only files that cannot shrink are mapped, and only
    ** an archive's are (a broker's can); see file.h. */
    {"mmap", KL_OPT_MMAP, 0, 0, w_mmap, "'off' or 'on'", 0},
    {"readonly", KL_OPT_MODE, 0, 0, w_readonly, "1 (mode='read') or 0 (mode='write')", 0},
};
#define NOPTIONS (sizeof options / sizeof *options)

const kl_option *kl_option_find(const char *name, size_t n) {
  for (size_t i = 0; i < NOPTIONS; i++) {
    if (strlen(options[i].name) == n && memcmp(options[i].name, name, n) == 0) return &options[i];
  }
  return NULL;
}

const kl_option *kl_option_of(kl_opt_id id) { return &options[id]; }

int64_t kl_option_default(kl_opt_id id) { return options[id].def; }

void kl_option_result(sqlite3_context *ctx, kl_opt_id id, int64_t v) {
  const kl_option *o = &options[id];
  for (const kl_opt_word *w = o->words; w && w->word; w++) {
    if (w->value == v) {
      sqlite3_result_text(ctx, w->word, -1, SQLITE_STATIC);
      return;
    }
  }
  if (id == KL_OPT_MAX_SKEW && v < 0) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, v);
}

kl_opt_id kl_option_id(const kl_option *o) { return o->id; }
const char *kl_option_name(const kl_option *o) { return o->name; }

static int invalid(const kl_option *o, const char *shown, char **errmsg) {
  *errmsg = o->expected ? sqlite3_mprintf("kafka_log: %s=%s is not valid: %s takes %s", o->name,
                                          shown, o->name, o->expected)
                        : sqlite3_mprintf("kafka_log: %s=%s is not valid: %s takes an integer "
                                          "from %lld to %lld", o->name, shown, o->name,
                                          (long long)o->lo, (long long)o->hi);
  return *errmsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

static int invalid_text(const kl_option *o, const char *text, char **errmsg) {
  char *q = sqlite3_mprintf("%Q", text);
  if (!q) return SQLITE_NOMEM;
  int rc = invalid(o, q, errmsg);
  sqlite3_free(q);
  return rc;
}

/* s past its spaces (as SQLite's affinity skips them). */
static const char *skip_spaces(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return s;
}

/* text as an integer the way INTEGER affinity reads it: an integer, or a
** real number with an integral value in range, spaces around allowed. */
static int text_int(const char *t, int64_t *out) {
  t = skip_spaces(t);
  if (!*t) return 0;
  char *end;
  errno = 0;
  long long n = strtoll(t, &end, 10);
  if (end != t && !*skip_spaces(end) && errno == 0) {
    *out = n;
    return 1;
  }
  if ((t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) || strpbrk(t, "nNiI")) {
    return 0; /* hexadecimal, nan, inf: not numbers to SQLite */
  }
  double d = strtod(t, &end);
  if (end == t || *skip_spaces(end) || d != floor(d) || d < -9223372036854775808.0 ||
      d >= 9223372036854775808.0) {
    return 0;
  }
  *out = (int64_t)d;
  return 1;
}

int kl_option_text(const kl_option *o, const char *text, int64_t *out, char **errmsg) {
  if (o->words) {
    for (const kl_opt_word *w = o->words; w->word; w++) {
      if (sqlite3_stricmp(text, w->word) == 0) {
        *out = w->value;
        return SQLITE_OK;
      }
    }
    return invalid_text(o, text, errmsg);
  }
  int64_t n;
  if (!text_int(text, &n) || n < o->lo || n > o->hi) return invalid_text(o, text, errmsg);
  *out = n;
  return SQLITE_OK;
}

int kl_option_value(const kl_option *o, sqlite3_value *v, int64_t *out, char **errmsg) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_NULL: return SQLITE_OK;
    case SQLITE_BLOB: return invalid(o, "a blob", errmsg);
    case SQLITE_INTEGER:
      if (o->words) break;
      if (sqlite3_value_int64(v) < o->lo || sqlite3_value_int64(v) > o->hi) break;
      *out = sqlite3_value_int64(v);
      return SQLITE_OK;
    case SQLITE_FLOAT: {
      double d = sqlite3_value_double(v);
      if (o->words || d != floor(d) || d < (double)o->lo || d >= 9223372036854775808.0 ||
          (int64_t)d > o->hi) {
        break;
      }
      *out = (int64_t)d;
      return SQLITE_OK;
    }
    default: {
      const char *t = (const char *)sqlite3_value_text(v);
      if (!t) return SQLITE_NOMEM;
      return kl_option_text(o, t, out, errmsg);
    }
  }
  const char *t = (const char *)sqlite3_value_text(v);
  return t ? invalid(o, t, errmsg) : SQLITE_NOMEM;
}

char *kl_option_literal(kl_opt_id id, int64_t v) {
  const kl_option *o = &options[id];
  if (o->words) {
    for (const kl_opt_word *w = o->words; w->word; w++) {
      if (w->value == v) return sqlite3_mprintf("'%s'", w->word);
    }
  }
  if (id == KL_OPT_MAX_SKEW && v < 0) return sqlite3_mprintf("NULL"); /* none */
  return sqlite3_mprintf("%lld", (long long)v);
}

char *kl_option_names(void) {
  char *s = NULL;
  for (size_t i = 0; i < NOPTIONS; i++) {
    char *t = sqlite3_mprintf("%s%s%s", s ? s : "", s ? ", " : "", options[i].name);
    sqlite3_free(s);
    if (!t) return NULL;
    s = t;
  }
  return s;
}
