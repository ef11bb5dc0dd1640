/*
** kwriter.c - see kwriter.h.
*/
#include "kwriter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

struct kw_writer {
  char dir[4096];
  kw_options opt;
  FILE *log, *oidx, *tidx;
  int64_t base;             /* active segment base */
  int64_t size;             /* active segment bytes */
  int64_t since_index;      /* bytes appended since the last index entry */
  int64_t max_ts, max_ts_off;
  int64_t last_tidx_ts;     /* last time index timestamp, -1 if none */
  int64_t next;             /* next offset */
  kl_buf buf;
  FILE *txn;                /* active segment's .txnindex, once it has an entry */
  int nopen;                /* producers with an open transaction: */
  int64_t open_pid[KW_MAX_PRODUCERS];
  int64_t open_first[KW_MAX_PRODUCERS]; /* first offset of each one's */
};

static FILE *open_file(kw_writer *w, const char *suffix) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%020lld%s", w->dir, (long long)w->base, suffix);
  return fopen(path, "wb");
}

static void put_tidx(kw_writer *w, int64_t ts, int64_t off) {
  uint8_t e[12];
  kl_put_u64(e, (uint64_t)ts);
  kl_put_u32(e + 8, (uint32_t)(off - w->base));
  fwrite(e, 1, 12, w->tidx);
  w->last_tidx_ts = ts;
}

static int finish_segment(kw_writer *w) {
  if (!w->log) return 0;
  if (w->max_ts > w->last_tidx_ts) put_tidx(w, w->max_ts, w->max_ts_off);
  int rc = fclose(w->log) | fclose(w->oidx) | fclose(w->tidx);
  if (w->txn) rc |= fclose(w->txn);
  w->log = w->oidx = w->tidx = w->txn = NULL;
  return rc;
}

static int find_open(const kw_writer *w, int64_t pid) {
  for (int i = 0; i < w->nopen; i++) {
    if (w->open_pid[i] == pid) return i;
  }
  return -1;
}

/* The producer state a broker keeps (ProducerAppendInfo): a transactional
** batch opens its producer's transaction, a marker closes it, and an ABORT
** marker of an open transaction gets a .txnindex entry with the last stable
** offset of that moment (the earliest other open transaction's first
** offset, else the marker's offset + 1).  A marker without an open
** transaction gets none, as in Kafka. */
static int track_txn(kw_writer *w, const kl_batch_spec *s, const kl_rec_in *recs, int64_t off) {
  if (s->producer_id < 0) return 0;
  int k = find_open(w, s->producer_id);
  if (!s->control) {
    if (s->transactional && k < 0) {
      if (w->nopen == KW_MAX_PRODUCERS) return -1;
      w->open_pid[w->nopen] = s->producer_id;
      w->open_first[w->nopen++] = off;
    }
    return 0;
  }
  if (k < 0 || recs[0].key_len < 4) return 0;
  int type = (int)kl_get_i16((const uint8_t *)recs[0].key + 2);
  if (type != 0 && type != 1) return 0;
  if (type == 0) {
    int64_t lso = off + 1, lso_first = INT64_MAX;
    for (int i = 0; i < w->nopen; i++) {
      if (i != k && w->open_first[i] < lso_first) lso_first = w->open_first[i];
    }
    if (lso_first != INT64_MAX) lso = lso_first;
    if (!w->txn && !(w->txn = open_file(w, ".txnindex"))) return -1;
    uint8_t e[34];
    kl_put_u16(e, 0);
    kl_put_u64(e + 2, (uint64_t)s->producer_id);
    kl_put_u64(e + 10, (uint64_t)w->open_first[k]);
    kl_put_u64(e + 18, (uint64_t)off);
    kl_put_u64(e + 26, (uint64_t)lso);
    if (fwrite(e, 1, sizeof e, w->txn) != sizeof e) return -1;
  }
  w->open_pid[k] = w->open_pid[w->nopen - 1];
  w->open_first[k] = w->open_first[--w->nopen];
  return 0;
}

static int start_segment(kw_writer *w) {
  w->base = w->next;
  w->size = 0;
  w->since_index = 0;
  w->max_ts = -1;
  w->max_ts_off = w->base;
  w->last_tidx_ts = -1;
  w->log = open_file(w, ".log");
  w->oidx = open_file(w, ".index");
  w->tidx = open_file(w, ".timeindex");
  return w->log && w->oidx && w->tidx ? 0 : -1;
}

kw_writer *kw_open(const char *dir, const kw_options *opt) {
  kw_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  w->opt = *opt;
  w->next = opt->base_offset;
  if (start_segment(w)) {
    kw_close(w);
    return NULL;
  }
  return w;
}

int kw_append(kw_writer *w, const kl_batch_spec *spec, const kl_rec_in *recs, int n) {
  kl_batch_spec s = {0};
  if (spec) s = *spec;
  else {
    s.leader_epoch = 0;
    s.producer_id = -1;
    s.producer_epoch = -1;
    s.base_sequence = -1;
    s.codec = w->opt.codec;
  }
  s.base_offset = w->next;
  w->buf.len = 0;
  kl_err err = {0};
  if (kl_batch_encode(NULL, &s, recs, n, &w->buf, &err)) return -1;
  int64_t sz = (int64_t)w->buf.len;
  if (w->size > 0 && w->size > w->opt.segment_bytes - sz) {
    if (finish_segment(w) || start_segment(w)) return -1;
  }
  int64_t last = w->next + n - 1;
  int64_t bmax = kl_get_i64(w->buf.p + 35);
  if (bmax > w->max_ts) {
    w->max_ts = bmax;
    w->max_ts_off = last;
  }
  if (w->since_index > w->opt.index_interval) {
    uint8_t e[8];
    kl_put_u32(e, (uint32_t)(last - w->base));
    kl_put_u32(e + 4, (uint32_t)w->size);
    fwrite(e, 1, 8, w->oidx);
    if (w->max_ts > w->last_tidx_ts) put_tidx(w, w->max_ts, w->max_ts_off);
    w->since_index = 0;
  }
  if (fwrite(w->buf.p, 1, (size_t)sz, w->log) != (size_t)sz) return -1;
  if (track_txn(w, &s, recs, w->next)) return -1;
  w->size += sz;
  w->since_index += sz;
  w->next = last + 1;
  return 0;
}

int64_t kw_next_offset(const kw_writer *w) { return w->next; }

int kw_flush(kw_writer *w) {
  int rc = 0;
  FILE *f[] = {w->log, w->oidx, w->tidx, w->txn};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    if (f[i] && fflush(f[i]) != 0) rc = -1;
  }
  return rc;
}

int kw_append_txn(kw_writer *w, int64_t pid, int n) {
  kl_batch_spec s = {0};
  s.leader_epoch = 0;
  s.producer_id = pid;
  s.producer_epoch = 0;
  s.base_sequence = 0;
  s.codec = w->opt.codec;
  s.transactional = 1;
  kl_rec_in r[16];
  if (n < 1 || n > 16) return -1;
  for (int i = 0; i < n; i++) {
    kl_rec_in x = {1700000000000 + w->next + i, "k", 1, "txn-data", 8, NULL, 0};
    r[i] = x;
  }
  return kw_append(w, &s, r, n);
}

int kw_append_control(kw_writer *w, int64_t pid, const void *key, int32_t key_len,
                      const void *value, int32_t value_len) {
  kl_batch_spec s = {0};
  s.leader_epoch = 0;
  s.producer_id = pid;
  s.producer_epoch = 0;
  s.base_sequence = -1;
  s.transactional = 1;
  s.control = 1;
  kl_rec_in r = {1700000000000 + w->next, key, key_len, value, value_len, NULL, 0};
  return kw_append(w, &s, &r, 1);
}

int kw_append_marker(kw_writer *w, int64_t pid, int type) {
  uint8_t key[4], value[6];
  kl_put_u16(key, 0);
  kl_put_u16(key + 2, (uint16_t)type);
  kl_put_u16(value, 0);
  kl_put_u32(value + 2, 7); /* coordinator epoch */
  return kw_append_control(w, pid, key, 4, value, 6);
}

int kw_close(kw_writer *w) {
  if (!w) return 0;
  int rc = finish_segment(w);
  kl_buf_free(NULL, &w->buf);
  free(w);
  return rc;
}

char *kw_make_log(const char *tag, int batches, int per_batch, int64_t segment_bytes,
                  int64_t interval, int value_len, int64_t ts0, int64_t ts_step) {
  char *dir = t_mkdtemp(tag);
  assert_non_null(dir);
  kw_options o = {segment_bytes, interval, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_true(per_batch > 0 && per_batch <= 64 && value_len < 200);
  kl_rec_in r[64];
  char v[64][200];
  for (int b = 0; b < batches; b++) {
    for (int i = 0; i < per_batch; i++) {
      int64_t off = kw_next_offset(w) + i;
      int len = snprintf(v[i], sizeof v[i], "value-%lld", (long long)off);
      while (len < value_len) v[i][len++] = 'x';
      kl_rec_in x = {ts0 + ts_step * off, "k", 1, v[i], len, NULL, 0};
      r[i] = x;
    }
    assert_int_equal(kw_append(w, NULL, r, per_batch), 0);
  }
  assert_int_equal(kw_close(w), 0);
  return dir;
}

void kw_make_part(const char *root, const char *name, int n, int64_t ts0, const char *prefix) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(mkdir(p, 0755), 0);
  kw_options o = {4096, 512, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(p, &o);
  assert_non_null(w);
  kl_rec_in r[5];
  char v[5][120];
  for (int64_t base = 0; base < n; base += 5) {
    int k = n - base < 5 ? (int)(n - base) : 5;
    for (int i = 0; i < k; i++) {
      int len = snprintf(v[i], sizeof v[i], "%s%lld", prefix, (long long)(base + i));
      assert_true(len > 0 && (size_t)len < sizeof v[i]);
      kl_rec_in x = {ts0 + 10 * (base + i), "k", 1, v[i], len, NULL, 0};
      r[i] = x;
    }
    assert_int_equal(kw_append(w, NULL, r, k), 0);
  }
  assert_int_equal(kw_close(w), 0);
}

char *kw_make_log_single(const char *tag, int n, int64_t segment_bytes) {
  return kw_make_log(tag, n, 1, segment_bytes, 256, 0, 1700000000000, 1);
}
