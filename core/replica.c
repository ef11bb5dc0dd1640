/*
** replica.c - comparing two copies of a partition (rules in replica.h): a
** walk over each copy's batches in step, through scan.h's walker, holding
** one batch of each at a time.
*/
#include "replica.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "scan.h"

/* ---- the epoch chain ---- */

void kl_epoch_chain_free(const kl_env *env, kl_epoch_chain *c) {
  kl_free(env, c->e);
  c->e = NULL;
  c->n = 0;
}

kl_rc kl_epoch_chain_assign(const kl_env *env, kl_epoch_chain *c, int32_t epoch, int64_t start) {
  if (c->n && c->e[c->n - 1].epoch == epoch && start >= c->e[c->n - 1].start_offset) return KL_OK;
  while (c->n && (c->e[c->n - 1].epoch >= epoch || c->e[c->n - 1].start_offset >= start)) c->n--;
  kl_epoch_entry *e = kl_realloc(env, c->e, (c->n + 1) * sizeof *e);
  if (!e) return KL_NOMEM;
  c->e = e;
  e[c->n].epoch = epoch;
  e[c->n].start_offset = start;
  e[c->n].line = 0;
  c->n++;
  return KL_OK;
}

void kl_epoch_chain_end(const kl_epoch_chain *c, int32_t epoch, int64_t log_end, int32_t *out_epoch,
                        int64_t *out_end) {
  *out_epoch = -1;
  *out_end = -1;
  if (epoch < 0 || c->n == 0) return;
  if (c->e[c->n - 1].epoch == epoch) {
    *out_epoch = epoch;
    *out_end = log_end;
    return;
  }
  size_t hi = 0; /* the first entry of a larger epoch */
  while (hi < c->n && c->e[hi].epoch <= epoch) hi++;
  if (hi == c->n) return;
  *out_epoch = hi == 0 ? epoch : c->e[hi - 1].epoch;
  *out_end = c->e[hi].start_offset;
}

/* Drop the entries starting at or after offset (truncateFromEnd). */
static void chain_truncate(kl_epoch_chain *c, int64_t offset) {
  while (c->n && c->e[c->n - 1].start_offset >= offset) c->n--;
}

/* ---- one copy's batches ---- */

typedef struct side {
  const char *dir;
  kl_log *log;
  kl_reader rd;
  kl_scan sc;
  kl_segment *seg;
  int scanning;
  int have;                 /* b is a batch */
  kl_batch b;
  kl_epoch_chain chain;
  kl_replica_side *out;
} side;

static kl_rc next(side *s, kl_err *err) {
  s->have = 0;
  for (;;) {
    if (!s->scanning) {
      s->seg = s->seg ? kl_log_next(s->log, s->seg) : kl_log_first(s->log);
      if (!s->seg) return KL_OK;
      kl_rc rc = kl_scan_start(&s->sc, &s->rd, s->seg, 0, INT64_MAX, 0, err);
      if (rc) return rc;
      s->scanning = 1;
    }
    kl_rc rc = kl_scan_next(&s->sc, &s->b, err);
    if (rc == KL_OK) {
      s->have = 1;
      return KL_OK;
    }
    if (rc != KL_DONE) return rc;
    kl_scan_end(&s->sc);
    s->scanning = 0;
  }
}

static void restart(side *s) {
  if (s->scanning) kl_scan_end(&s->sc);
  s->scanning = 0;
  s->seg = NULL;
  s->have = 0;
}

/* The data records of the current batch at offsets >= from. */
static kl_rc count_from(side *s, int64_t from, int64_t *n, kl_err *err) {
  const kl_batch *b = &s->b;
  if (from < 0 || b->is_control || b->last_offset < from) return KL_OK;
  if (b->base_offset >= from && b->record_count >= 0 && b->first_known) {
    *n += b->record_count;
    return KL_OK;
  }
  kl_records it;
  kl_record r;
  kl_rc rc = kl_scan_records(&s->sc, b, &it, err);
  while (rc == KL_OK && (rc = kl_records_next(&it, &r, err)) == KL_OK) {
    if (r.offset >= from) (*n)++;
  }
  return rc == KL_DONE ? KL_OK : rc;
}

static kl_rc open_side(side *s, const kl_env *env, const char *dir, kl_stats *stats,
                       kl_replica_side *out, kl_err *err) {
  memset(s, 0, sizeof *s);
  s->dir = dir;
  s->out = out;
  memset(out, 0, sizeof *out);
  kl_reader_init(&s->rd, env, stats, KL_ON_CORRUPT_ERROR);
  kl_rc rc = kl_log_open_partition(env, dir, &s->log, err);
  if (rc) return rc;
  out->log_start = kl_log_start_offset(s->log);
  if ((rc = kl_log_end_offset(s->log, &s->rd, &out->log_end, err)) != KL_OK) return rc;
  char path[4200];
  snprintf(path, sizeof path, "%s/leader-epoch-checkpoint", dir);
  kl_epoch_ckpt f;
  if ((rc = kl_epoch_checkpoint_read(env, path, &f, err)) != KL_OK) return rc;
  out->from_checkpoint = f.n > 0;
  for (size_t i = 0; rc == KL_OK && i < f.n; i++) {
    rc = kl_epoch_chain_assign(env, &s->chain, f.e[i].epoch, f.e[i].start_offset);
  }
  kl_epoch_checkpoint_free(env, &f);
  /* No file: the chain the batches give, as a broker rebuilding it would. */
  while (rc == KL_OK && !out->from_checkpoint && (rc = next(s, err)) == KL_OK && s->have) {
    if (s->b.magic >= 2 && s->b.leader_epoch >= 0) {
      rc = kl_epoch_chain_assign(env, &s->chain, s->b.leader_epoch, s->b.base_offset);
    }
  }
  restart(s);
  if (rc == KL_NOMEM) return kl_err_set(err, rc, "out of memory");
  out->latest_epoch = s->chain.n ? s->chain.e[s->chain.n - 1].epoch : -1;
  return rc;
}

static void close_side(side *s, const kl_env *env) {
  restart(s);
  kl_reader_free(&s->rd);
  kl_log_close(s->log);
  kl_epoch_chain_free(env, &s->chain);
}

/* ---- the comparison ---- */

static int64_t first_chain_diff(const kl_epoch_chain *a, const kl_epoch_chain *b) {
  size_t n = a->n < b->n ? a->n : b->n;
  for (size_t i = 0; i < n; i++) {
    if (a->e[i].epoch != b->e[i].epoch || a->e[i].start_offset != b->e[i].start_offset) {
      return a->e[i].start_offset < b->e[i].start_offset ? a->e[i].start_offset : b->e[i].start_offset;
    }
  }
  return -1;
}

/* The follower's truncation (replica.h), on a copy of its chain. */
static kl_rc truncation(const kl_env *env, const side *leader, const side *follower,
                        kl_replica_diff *d) {
  kl_epoch_chain f = {NULL, 0};
  if (follower->chain.n) {
    f.e = kl_malloc(env, follower->chain.n * sizeof *f.e);
    if (!f.e) return KL_NOMEM;
    memcpy(f.e, follower->chain.e, follower->chain.n * sizeof *f.e);
    f.n = follower->chain.n;
  }
  int64_t leo = follower->out->log_end;
  d->common_epoch = -1;
  d->truncate_to = -1;
  /* Each round drops at least one entry of f: at most f.n + 1 rounds. */
  for (size_t round = 0; f.n && round <= follower->chain.n; round++) {
    int32_t el, ef;
    int64_t endl, endf;
    kl_epoch_chain_end(&leader->chain, f.e[f.n - 1].epoch, leader->out->log_end, &el, &endl);
    if (endl < 0) break;
    kl_epoch_chain_end(&f, el, leo, &ef, &endf);
    if (endf < 0) break;
    if (ef != el) {
      leo = endf < leo ? endf : leo;
      chain_truncate(&f, leo);
      continue;
    }
    int64_t t = endf < endl ? endf : endl;
    d->truncate_to = t < leo ? t : leo;
    d->common_epoch = el;
    break;
  }
  kl_epoch_chain_free(env, &f);
  return KL_OK;
}

static int same_batch(const kl_batch *x, const kl_batch *y) {
  return x->base_offset == y->base_offset && x->last_offset == y->last_offset &&
         x->crc == y->crc && x->leader_epoch == y->leader_epoch;
}

/* Count what the current batch of s holds past the points known so far,
** then move on. */
static kl_rc step(side *s, const kl_replica_diff *d, int follower, int64_t *lost, kl_err *err) {
  s->out->batches++;
  kl_rc rc = count_from(s, d->first_diff, &s->out->records_past, err);
  if (rc == KL_OK && follower) rc = count_from(s, d->truncate_to, lost, err);
  return rc ? rc : next(s, err);
}

static kl_rc walk(side *a, side *b, kl_replica_diff *d, kl_err *err) {
  int64_t start = a->out->log_start > b->out->log_start ? a->out->log_start : b->out->log_start;
  int fa = d->kept == 1, fb = d->kept == 0;
  kl_rc rc = next(a, err);
  if (rc == KL_OK) rc = next(b, err);
  while (rc == KL_OK && a->have && a->b.last_offset < start) rc = step(a, d, fa, &d->records_lost, err);
  while (rc == KL_OK && b->have && b->b.last_offset < start) rc = step(b, d, fb, &d->records_lost, err);
  while (rc == KL_OK && a->have && b->have && same_batch(&a->b, &b->b)) {
    rc = step(a, d, fa, &d->records_lost, err);
    if (rc == KL_OK) rc = step(b, d, fb, &d->records_lost, err);
  }
  if (rc) return rc;
  if (a->have && b->have) {
    d->first_diff = a->b.base_offset < b->b.base_offset ? a->b.base_offset : b->b.base_offset;
  } else if (a->have || b->have) {
    d->first_diff = a->have ? a->b.base_offset : b->b.base_offset;
  }
  while (rc == KL_OK && a->have) rc = step(a, d, fa, &d->records_lost, err);
  while (rc == KL_OK && b->have) rc = step(b, d, fb, &d->records_lost, err);
  return rc;
}

kl_rc kl_replica_compare(const kl_env *env, const char *dir_a, const char *dir_b, kl_stats *stats,
                         kl_replica_diff *out, kl_err *err) {
  memset(out, 0, sizeof *out);
  out->first_diff = out->truncate_to = -1;
  out->common_epoch = -1;
  side a, b;
  kl_rc rc = open_side(&a, env, dir_a, stats, &out->a, err);
  kl_rc rcb = open_side(&b, env, dir_b, stats, &out->b, err);
  if (rc == KL_OK) rc = rcb;
  if (rc == KL_OK) {
    out->epoch_diff = first_chain_diff(&a.chain, &b.chain);
    int32_t ea = out->a.latest_epoch, eb = out->b.latest_epoch;
    out->kept = ea != eb ? ea < eb : out->a.log_end < out->b.log_end;
    rc = out->kept ? truncation(env, &b, &a, out) : truncation(env, &a, &b, out);
    if (rc) rc = kl_err_set(err, rc, "out of memory");
  }
  if (rc == KL_OK) rc = walk(&a, &b, out, err);
  if (rc == KL_OK && out->first_diff < 0) out->kept = -1;
  close_side(&a, env);
  close_side(&b, env);
  return rc;
}
