/*
** timefn.c - kafka_time() and kafka_ms(): argument types and errors; the
** calendar is core/timestamp.c's.
*/
#include "timefn.h"

#include <math.h>

#include "timestamp.h"

SQLITE_EXTENSION_INIT3

/* At most this many bytes of a bad argument are quoted in an error. */
#define QUOTE_MAX 64

void kl_fn_time(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int64_t ms;
  switch (sqlite3_value_numeric_type(argv[0])) {
    case SQLITE_NULL: return;
    case SQLITE_INTEGER: ms = sqlite3_value_int64(argv[0]); break;
    case SQLITE_FLOAT: {
      /* Arithmetic on timestamps gives reals (timestamp / 1.0, avg()):
      ** the millisecond they fall in. */
      double d = floor(sqlite3_value_double(argv[0]));
      if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
        sqlite3_result_error(ctx, "kafka_time: the milliseconds are outside 64 bits", -1);
        return;
      }
      ms = (int64_t)d;
      break;
    }
    default:
      sqlite3_result_error(ctx, "kafka_time: the argument is epoch milliseconds, an integer "
                                "(a record's timestamp), not text or a BLOB", -1);
      return;
  }
  if (ms == KL_NO_TIMESTAMP) return;
  char buf[KL_TIME_TEXT];
  size_t n = kl_time_format(ms, buf);
  sqlite3_result_text(ctx, buf, (int)n, SQLITE_TRANSIENT);
}

void kl_fn_ms(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int t = sqlite3_value_type(argv[0]);
  if (t == SQLITE_NULL) return;
  if (t != SQLITE_TEXT) {
    sqlite3_result_error(ctx, "kafka_ms: the argument is a time as text (" KL_TIME_FORMS
                              "), not a number or a BLOB", -1);
    return;
  }
  const char *s = (const char *)sqlite3_value_text(argv[0]);
  int n = sqlite3_value_bytes(argv[0]);
  if (!s) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  int64_t ms;
  const char *why;
  if (kl_time_parse(s, (size_t)n, &ms, &why) == 0) {
    sqlite3_result_int64(ctx, ms);
    return;
  }
  int q = n;
  if (q > QUOTE_MAX) {
    q = QUOTE_MAX;
    while (q > 0 && ((unsigned char)s[q] & 0xc0) == 0x80) q--; /* whole UTF-8 characters */
  }
  char *m = sqlite3_mprintf("kafka_ms: '%.*s%s' is not a time: %s; the forms are " KL_TIME_FORMS,
                            q, s, q < n ? "..." : "", why);
  if (!m) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_error(ctx, m, -1);
  sqlite3_free(m);
}
