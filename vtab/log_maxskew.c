/*
** log_maxskew.c - the scalar function kafka_log_max_skew().
*/
#include "log_vtab.h"

#include "log.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

/*
** kafka_log_max_skew('<dir>'): the smallest max_skew_ms the partition's
** records honour, that is the most any record's timestamp lies below the
** largest timestamp before it (0 when timestamps never go back, NULL for a
** log without records; 9223372036854775807 for any skew from there up).
** It reads every record once, so that a bound can be chosen from the data
** rather than guessed.
*/
void kl_fn_max_skew(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  kl_conn *conn = sqlite3_user_data(ctx);
  const char *dir = (const char *)sqlite3_value_text(argv[0]);
  if (!dir) return;
  kl_err err = {0};
  kl_log *log = NULL;
  kl_cursor *cur = NULL;
  kl_rc rc = kl_log_open_partition(kl_sqlite_env(), dir, &log, &err);
  if (rc == KL_OK) rc = kl_cursor_new(log, &conn->stats, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds all = kl_bounds_all();
  if (rc == KL_OK) rc = kl_cursor_start(cur, &all, &err);
  int64_t top = INT64_MIN, skew = -1;
  while (rc == KL_OK && (rc = kl_cursor_next(cur, &err)) == KL_OK &&
         (rc = kl_cursor_load(cur, &err)) == KL_OK) {
    int64_t ts = kl_cursor_record(cur)->timestamp;
    if (ts > top) top = ts;
    /* top >= ts, but their difference may not fit: it saturates, and the
    ** cursor takes max_skew INT64_MAX as no bound (cursor.h). */
    int64_t d = kl_sub_sat(top, ts);
    if (d > skew) skew = d;
  }
  kl_cursor_free(cur);
  kl_log_close(log);
  if (rc != KL_DONE) {
    char *m = sqlite3_mprintf("kafka_log_max_skew: %s", err.msg[0] ? err.msg : kl_rc_name(rc));
    sqlite3_result_error(ctx, m ? m : "kafka_log_max_skew: out of memory", -1);
    sqlite3_result_error_code(ctx, kl_sqlite_rc(rc));
    sqlite3_free(m);
    return;
  }
  if (skew >= 0) sqlite3_result_int64(ctx, skew);
}
