/*
** log_committed.c - what a read_committed consumer may read: below the
** last stable offset and the high watermark (txn.h).
*/
#include "log_vtab.h"

#include "broker.h"
#include "txn.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

/* What a read_committed consumer of the partition may read: below the last
** stable offset and the high watermark, from the markers (txn.h). */
kl_rc lv_committed_bounds(kl_vcursor *c, kl_err *err) {
  kl_logref *r = c->ref;
  if (!r->txns_loaded) {
    kl_reader rd;
    kl_reader_init(&rd, kl_sqlite_env(), &((kl_vtab *)c->base.pVtab)->conn->stats, c->on_corrupt);
    kl_rc rc = kl_txns_load(r->log, &rd, &r->txns, err);
    kl_reader_free(&rd);
    if (rc) return rc;
    r->txns_loaded = 1;
  }
  int64_t cap = r->txns.lso;
  if (c->part->high_watermark >= 0 && c->part->high_watermark < cap) cap = c->part->high_watermark;
  if (cap - 1 < c->pbnd.off_hi) c->pbnd.off_hi = cap - 1;
  return KL_OK;
}
