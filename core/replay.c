/*
** replay.c - the replay of an internal topic's partition (replay.h).
*/
#include "replay.h"

#include "log.h"
#include "scan.h"
#include "txn.h"

/* The records of cur from its start on, to fn; with txns, the batches of
** aborted transactions are passed over. */
static kl_rc replay(kl_cursor *cur, const kl_txns *txns, const char *dir, kl_replay_fn fn,
                    void *ud, kl_err *err) {
  kl_rc rc;
  while ((rc = kl_cursor_next(cur, err)) == KL_OK) {
    const kl_batch *b = kl_cursor_batch(cur);
    if (b->is_control || (txns && kl_txns_aborted(txns, b))) continue;
    if ((rc = kl_cursor_load(cur, err)) != KL_OK) return rc;
    const kl_record *r = kl_cursor_record(cur);
    kl_err e;
    kl_err_clear(&e);
    if ((rc = fn(ud, r, &e)) != KL_OK) {
      return kl_err_set(err, rc, "%s: record at offset %lld: %s", dir, (long long)r->offset,
                        e.msg);
    }
  }
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_replay_partition(const kl_env *env, const char *dir, int64_t checkpoint_start,
                          unsigned flags, kl_stats *stats, kl_replay_fn fn, void *ud,
                          kl_err *err) {
  kl_log *log = NULL;
  kl_cursor *cur = NULL;
  kl_txns txns;
  int have_txns = 0;
  kl_reader rd;
  kl_reader_init(&rd, env, stats, KL_ON_CORRUPT_ERROR);
  kl_rc rc = kl_log_open_partition(env, dir, &log, err);
  if (rc == KL_OK && (flags & KL_REPLAY_COMMITTED) &&
      (rc = kl_txns_load(log, &rd, &txns, err)) == KL_OK) {
    have_txns = 1;
  }
  if (rc == KL_OK) rc = kl_cursor_new(log, stats, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds all = kl_bounds_all();
  if (rc == KL_OK) all.off_lo = kl_log_readable_start(log, checkpoint_start); /* below: deleted */
  if (have_txns) all.off_hi = txns.lso - 1; /* from the last stable offset on: open */
  if (rc == KL_OK) rc = kl_cursor_start(cur, &all, err);
  if (rc == KL_OK) rc = replay(cur, have_txns ? &txns : NULL, dir, fn, ud, err);
  kl_cursor_free(cur);
  if (have_txns) kl_txns_free(env, &txns);
  kl_reader_free(&rd);
  kl_log_close(log);
  return rc;
}
