/*
** fuzz_batch.c - libFuzzer target for the batch decoder (every codec, every
** magic): kl_batch_parse, kl_batch_verify, kl_records_open / _next, header
** and control-record parsing, over the entries of the input as a .log.
**
** Input: byte 0 holds flags, the rest is the log.  Flag bit 0: recompute the
** CRC of every entry before verifying it, so that mutations reach the
** record decoder and the codecs instead of stopping at the CRC.  Bit 1:
** keep going after a bad entry by its length when the header parsed (the
** cursor's on_corrupt='skip' rule).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "batch.h"
#include "crc32c.h"

static void fix_crc(uint8_t *p, size_t avail) {
  if (avail < KL_LOG_OVERHEAD + 5) return;
  int32_t len = kl_get_i32(p + 8);
  if (len < KL_LEGACY_MIN_SIZE || (uint64_t)len + KL_LOG_OVERHEAD > avail) return;
  size_t size = (size_t)len + KL_LOG_OVERHEAD;
  if (p[16] == 2 && size >= KL_V2_HEADER) {
    kl_put_u32(p + 17, kl_crc32c(0, p + 21, size - 21));
  } else if (p[16] < 2) {
    kl_put_u32(p + 12, (uint32_t)crc32(0L, p + 16, (uInt)(size - 16)));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int flags = data[0];
  size_t n = size - 1;
  uint8_t *log = malloc(n ? n : 1);
  if (!log) return 0;
  memcpy(log, data + 1, n);
  kl_buf scratch = {0};
  kl_stats stats;
  memset(&stats, 0, sizeof stats);
  size_t pos = 0;
  int guard = 0;
  while (pos < n && guard++ < 4096) {
    if (flags & 1) fix_crc(log + pos, n - pos);
    kl_batch b;
    kl_err err = {0};
    b.position = (int64_t)pos;
    kl_rc rc = kl_batch_parse(log + pos, n - pos, &b, &err);
    if (rc == KL_DONE) break;
    if (rc != KL_OK) {
      if ((flags & 2) && b.size > 0) {
        pos += (size_t)b.size;
        continue;
      }
      break;
    }
    if (b.size < KL_ENTRY_PREFIX + 1 || (size_t)b.size > n - pos) abort(); /* parse contract */
    pos += (size_t)b.size;
    kl_err_clear(&err);
    if (kl_batch_verify(&b, &err) != KL_OK) continue;
    kl_records it;
    if (kl_records_open(&it, NULL, NULL, &b, &scratch, &stats, &err) != KL_OK) continue;
    kl_record r;
    while ((rc = kl_records_next(&it, &r, &err)) == KL_OK) {
      /* Touch every byte the record claims, so ASan checks the bounds. */
      volatile uint8_t sink = 0;
      for (int32_t i = 0; i < r.key_len; i++) sink ^= r.key[i];
      for (int32_t i = 0; i < r.value_len; i++) sink ^= r.value[i];
      const uint8_t *hp = r.headers, *he = r.headers ? r.headers + r.headers_len : NULL;
      kl_header h;
      int nh = 0;
      while (r.headers && kl_header_next(&hp, he, &h) == KL_OK) {
        for (int32_t i = 0; i < h.name_len; i++) sink ^= h.name[i];
        for (int32_t i = 0; i < h.value_len; i++) sink ^= h.value[i];
        nh++;
      }
      if (r.headers && nh != r.header_count) abort(); /* validated at decode */
      if (b.is_control) {
        int type;
        int32_t epoch;
        (void)kl_control_parse(&r, &type, &epoch, NULL);
      }
      (void)sink;
    }
  }
  kl_buf_free(NULL, &scratch);
  free(log);
  return 0;
}
