/*
** kwriter.c - see kwriter.h.
*/
#include "kwriter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  w->log = w->oidx = w->tidx = NULL;
  return rc;
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
  w->size += sz;
  w->since_index += sz;
  w->next = last + 1;
  return 0;
}

int64_t kw_next_offset(const kw_writer *w) { return w->next; }

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
