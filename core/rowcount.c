/*
** rowcount.c - see rowcount.h.
*/
#include "rowcount.h"

/* The records of batch b (just yielded by sc) with offset >= from, decoded. */
static kl_rc count_decoded(kl_scan *sc, const kl_batch *b, int64_t from, int64_t *n, kl_err *err) {
  kl_records it;
  kl_record r;
  kl_rc rc = kl_scan_records(sc, b, &it, err);
  if (rc) return rc;
  while ((rc = kl_records_next(&it, &r, err)) == KL_OK) {
    sc->rd->stats->records_decoded++;
    if (r.offset >= from) (*n)++;
  }
  return rc == KL_DONE ? KL_OK : kl_scan_batch_error(sc->seg, b->position, rc, err);
}

/* The records of segment s at or after from, walked from start (its
** batches before verify_from only lead up to it). */
static kl_rc count_segment(kl_reader *rd, kl_segment *s, int64_t start, int64_t verify_from,
                           int64_t from, int64_t *n, kl_err *err) {
  kl_scan sc;
  kl_batch b;
  kl_rc rc = kl_scan_start(&sc, rd, s, start, INT64_MAX, verify_from, err);
  if (rc) return rc;
  while ((rc = kl_scan_next(&sc, &b, err)) == KL_OK) {
    if (b.position < verify_from || b.is_control || b.last_offset < from) continue;
    if (b.magic == 2 && b.first_known && b.base_offset >= from) {
      rd->stats->batches_skipped++; /* counted on its header */
      *n += b.record_count;
    } else if ((rc = count_decoded(&sc, &b, from, n, err)) != KL_OK) {
      break;
    }
  }
  kl_scan_end(&sc);
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_log_count_records(kl_log *log, kl_reader *rd, int64_t from, int64_t *n, kl_err *err) {
  *n = 0;
  kl_segment *s = kl_log_floor(log, from);
  if (!s) s = kl_log_first(log);
  for (int first = 1; s; s = kl_log_next(log, s), first = 0) {
    kl_seek sk = {.start = 0, .verify_from = 0};
    kl_rc rc = first ? kl_scan_seek_offset(rd, s, from, &sk, err) : KL_OK;
    if (rc == KL_OK) rc = count_segment(rd, s, sk.start, sk.verify_from, from, n, err);
    if (rc) return rc;
  }
  return KL_OK;
}
