/*
** replay.c - the replay of an internal topic's partition (replay.h).
*/
#include "replay.h"

#include "log.h"

kl_rc kl_replay_partition(const kl_env *env, const char *dir, int64_t checkpoint_start,
                          kl_stats *stats, kl_replay_fn fn, void *ud, kl_err *err) {
  kl_log *log = NULL;
  kl_cursor *cur = NULL;
  kl_rc rc = kl_log_open_partition(env, dir, &log, err);
  if (rc == KL_OK) rc = kl_cursor_new(log, stats, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds all = kl_bounds_all();
  if (rc == KL_OK) all.off_lo = kl_log_readable_start(log, checkpoint_start);
  if (rc == KL_OK) rc = kl_cursor_start(cur, &all, err);
  while (rc == KL_OK && (rc = kl_cursor_next(cur, err)) == KL_OK) {
    if (kl_cursor_batch(cur)->is_control) continue;
    if ((rc = kl_cursor_load(cur, err)) != KL_OK) break;
    const kl_record *r = kl_cursor_record(cur);
    kl_err e;
    kl_err_clear(&e);
    if ((rc = fn(ud, r, &e)) != KL_OK) {
      kl_err_set(err, rc, "%s: record at offset %lld: %s", dir, (long long)r->offset, e.msg);
    }
  }
  kl_cursor_free(cur);
  kl_log_close(log);
  return rc == KL_DONE ? KL_OK : rc;
}
