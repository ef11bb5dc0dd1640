/*
** test_codec.c - round trips, framing details (xerial header, Kafka's LZ4
** subset with the magic-0 checksum quirk, concatenated gzip members and
** zstd frames), the output limit, hostile input (every truncation, byte
** flips), allocation failure at every point, and real Kafka-written
** batches from the fixtures.
*/
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "codec.h"

static const int all_codecs[] = {KL_CODEC_NONE, KL_CODEC_GZIP, KL_CODEC_SNAPPY,
                                 KL_CODEC_LZ4, KL_CODEC_ZSTD};
static const int packed[] = {KL_CODEC_GZIP, KL_CODEC_SNAPPY, KL_CODEC_LZ4,
                             KL_CODEC_ZSTD};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- data */

static uint64_t rng = 88172645463325252u;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* Words from a small vocabulary: compresses 3-5x, like record payloads. */
static uint8_t *make_text(size_t n) {
  static const char *words[] = {"order", "id", "customer", "kafka", "\"qty\":",
                                "42", "{", "}", "sku-", "EUR", " ", ",", "\n"};
  uint8_t *p = malloc(n ? n : 1);
  for (size_t i = 0; i < n;) {
    const char *w = words[rnd() % NELEM(words)];
    for (; *w && i < n; w++) p[i++] = (uint8_t)*w;
  }
  return p;
}

static uint8_t *make_random(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
  return p;
}

/* Very repetitive: keeps compressed streams short so that every prefix
** can be tried, while still spanning several lz4 blocks / snappy chunks. */
static uint8_t *make_repetitive(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)("abcdefgh"[i % 8] + (i / 4096) % 3);
  return p;
}

static kl_buf compress_or_die(int codec, int magic, const void *p, size_t n) {
  kl_buf b = {0};
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_codec_compress(NULL, codec, magic, p, n, &b, &err);
  if (rc != KL_OK) fail_msg("compress %d: %s", codec, err.msg);
  return b;
}

static kl_rc decompress(int codec, int magic, const void *p, size_t n,
                        kl_buf *out, size_t limit) {
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_codec_decompress(NULL, NULL, codec, magic, p, n, out, limit, &err);
  /* Every failure explains itself, naming the codec. */
  if (rc != KL_OK) {
    assert_int_equal(err.rc, rc);
    assert_true(err.msg[0] != 0);
    assert_int_equal(out->len, 0);
  }
  return rc;
}

/* --------------------------------------------------------------- tests */

static void test_names(void **state) {
  (void)state;
  assert_string_equal(kl_codec_name(KL_CODEC_NONE), "none");
  assert_string_equal(kl_codec_name(KL_CODEC_GZIP), "gzip");
  assert_string_equal(kl_codec_name(KL_CODEC_SNAPPY), "snappy");
  assert_string_equal(kl_codec_name(KL_CODEC_LZ4), "lz4");
  assert_string_equal(kl_codec_name(KL_CODEC_ZSTD), "zstd");
  assert_null(kl_codec_name(-1));
  assert_null(kl_codec_name(5));
  assert_null(kl_codec_name(7));
}

static void test_invalid_codec(void **state) {
  (void)state;
  const int bad[] = {5, 6, 7, -1, 100};
  for (size_t i = 0; i < NELEM(bad); i++) {
    kl_buf b = {0};
    kl_err err;
    kl_err_clear(&err);
    assert_int_equal(kl_codec_decompress(NULL, NULL, bad[i], 2, (const uint8_t *)"x",
                                         1, &b, 100, &err),
                     KL_UNSUPPORTED);
    assert_int_equal(err.rc, KL_UNSUPPORTED);
    kl_err_clear(&err);
    assert_int_equal(kl_codec_compress(NULL, bad[i], 2, (const uint8_t *)"x", 1,
                                       &b, &err),
                     KL_UNSUPPORTED);
    assert_int_equal(err.rc, KL_UNSUPPORTED);
    assert_null(b.p);
  }
}

/* Compress, then decompress with the exact limit (fits) and one byte less
** (refused, and no buffer larger than the limit was ever allocated). */
static void roundtrip(int codec, int magic, const uint8_t *p, size_t n) {
  kl_buf c = compress_or_die(codec, magic, p, n);
  kl_buf d = {0};
  assert_int_equal(decompress(codec, magic, c.p, c.len, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  if (n) assert_memory_equal(d.p, p, n);
  assert_true(d.cap <= n);
  /* Reuse the buffer: stale content longer than the result is discarded. */
  assert_int_equal(decompress(codec, magic, c.p, c.len, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  kl_buf_free(NULL, &d);
  if (n > 0) {
    assert_int_equal(decompress(codec, magic, c.p, c.len, &d, n - 1),
                     KL_CORRUPT);
    assert_true(d.cap <= n - 1);
    kl_buf_free(NULL, &d);
  }
  kl_buf_free(NULL, &c);
}

static void test_roundtrip(void **state) {
  (void)state;
  const size_t sizes[] = {0, 1, 7, 4097, 102400, 65536, 65537, 200000};
  for (size_t s = 0; s < NELEM(sizes); s++) {
    uint8_t *text = make_text(sizes[s]);
    uint8_t *noise = make_random(sizes[s]);
    for (size_t c = 0; c < NELEM(all_codecs); c++) {
      for (int magic = 0; magic <= 2; magic++) {
        roundtrip(all_codecs[c], magic, text, sizes[s]);
        roundtrip(all_codecs[c], magic, noise, sizes[s]);
      }
    }
    free(text);
    free(noise);
  }
}

/* Our writers produce what the reference libraries read. */
static void test_writers_match_libraries(void **state) {
  (void)state;
  size_t n = 150000;
  uint8_t *text = make_text(n);
  uint8_t *back = malloc(n);

  kl_buf c = compress_or_die(KL_CODEC_GZIP, 2, text, n);
  assert_memory_equal(c.p, "\x1f\x8b\x08", 3);
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
  zs.next_in = c.p;
  zs.avail_in = (uInt)c.len;
  zs.next_out = back;
  zs.avail_out = (uInt)n;
  assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
  assert_int_equal(zs.total_out, n);
  assert_int_equal(zs.avail_in, 0); /* exactly one member */
  inflateEnd(&zs);
  assert_memory_equal(back, text, n);
  kl_buf_free(NULL, &c);

  c = compress_or_die(KL_CODEC_ZSTD, 2, text, n);
  assert_int_equal(ZSTD_findFrameCompressedSize(c.p, c.len), c.len);
  assert_int_equal(ZSTD_decompress(back, n, c.p, c.len), n);
  assert_memory_equal(back, text, n);
  kl_buf_free(NULL, &c);

  /* lz4: liblz4's own frame decoder accepts the magic>=1 output. */
  c = compress_or_die(KL_CODEC_LZ4, 1, text, n);
  LZ4F_dctx *dctx;
  assert_false(LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)));
  size_t dst = n, src = c.len;
  size_t r = LZ4F_decompress(dctx, back, &dst, c.p, &src, NULL);
  assert_int_equal(r, 0); /* frame complete */
  assert_int_equal(dst, n);
  assert_int_equal(src, c.len);
  LZ4F_freeDecompressionContext(dctx);
  assert_memory_equal(back, text, n);
  kl_buf_free(NULL, &c);

  /* snappy: each xerial chunk is a raw block of at most 32 KiB. */
  c = compress_or_die(KL_CODEC_SNAPPY, 2, text, n);
  size_t pos = 16, total = 0, chunks = 0;
  while (pos < c.len) {
    uint32_t len = kl_get_u32(c.p + pos);
    size_t ulen;
    assert_int_equal(snappy_uncompressed_length((char *)c.p + pos + 4, len, &ulen),
                     SNAPPY_OK);
    assert_true(ulen <= 32768);
    total += ulen;
    chunks++;
    pos += 4 + len;
  }
  assert_int_equal(pos, c.len);
  assert_int_equal(total, n);
  assert_int_equal(chunks, (n + 32767) / 32768);
  kl_buf_free(NULL, &c);

  free(text);
  free(back);
}

static void test_snappy_framing(void **state) {
  (void)state;
  static const uint8_t hdr[16] = {0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00,
                                  0, 0, 0, 1, 0, 0, 0, 1};
  kl_buf c = compress_or_die(KL_CODEC_SNAPPY, 2, "hello", 5);
  assert_memory_equal(c.p, hdr, 16);
  kl_buf_free(NULL, &c);
  /* The empty stream is the header alone, and decodes to nothing. */
  c = compress_or_die(KL_CODEC_SNAPPY, 2, "", 0);
  assert_int_equal(c.len, 16);
  kl_buf d = {0};
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, c.p, c.len, &d, 10), KL_OK);
  assert_int_equal(d.len, 0);
  kl_buf_free(NULL, &c);

  /* No magic: the whole buffer is one raw block (librdkafka style). */
  size_t n = 70000;
  uint8_t *text = make_text(n);
  size_t rawlen = snappy_max_compressed_length(n);
  char *raw = malloc(rawlen);
  assert_int_equal(snappy_compress((char *)text, n, raw, &rawlen), SNAPPY_OK);
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, raw, rawlen, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  assert_memory_equal(d.p, text, n);
  /* ...including one shorter than a header. */
  rawlen = snappy_max_compressed_length(3);
  assert_int_equal(snappy_compress("abc", 3, raw, &rawlen), SNAPPY_OK);
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, raw, rawlen, &d, 3), KL_OK);
  assert_memory_equal(d.p, "abc", 3);

  /* Two xerial streams back to back: the second header is skipped. */
  kl_buf a = compress_or_die(KL_CODEC_SNAPPY, 2, text, n);
  kl_buf b = compress_or_die(KL_CODEC_SNAPPY, 2, "tail", 4);
  size_t cat = a.len + b.len;
  uint8_t *both = malloc(cat);
  memcpy(both, a.p, a.len);
  memcpy(both + a.len, b.p, b.len);
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_OK);
  assert_int_equal(d.len, n + 4);
  assert_memory_equal(d.p, text, n);
  assert_memory_equal(d.p + n, "tail", 4);

  /* Version 0 is refused, in the first header and in a later one. */
  both[11] = 0;
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_CORRUPT);
  both[11] = 1;
  both[a.len + 11] = 0;
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_CORRUPT);
  both[a.len + 11] = 1;
  /* A higher version is fine (snappy-java only checks the minimum). */
  both[11] = 2;
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_OK);
  /* A negative or overlong chunk length is refused. */
  both[16] = 0x7f;
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_CORRUPT);
  both[16] = 0xff;
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, both, cat, &d, n + 4), KL_CORRUPT);
  /* The official snappy framing format is not xerial and not a raw block. */
  static const uint8_t framed[] = {0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61,
                                   0x50, 0x70, 0x59};
  assert_int_equal(decompress(KL_CODEC_SNAPPY, 2, framed, sizeof framed, &d, 1000),
                   KL_CORRUPT);

  free(both);
  free(raw);
  free(text);
  kl_buf_free(NULL, &a);
  kl_buf_free(NULL, &b);
  kl_buf_free(NULL, &d);
}

/* The exact bytes Kafka writes (format.md 6.3), and the magic-0 quirk. */
static void test_lz4_headers(void **state) {
  (void)state;
  static const uint8_t h0[7] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a};
  static const uint8_t h1[7] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82};
  kl_buf d = {0};
  for (int magic = 0; magic <= 2; magic++) {
    kl_buf c = compress_or_die(KL_CODEC_LZ4, magic, "", 0);
    assert_int_equal(c.len, 11); /* header + end mark */
    assert_memory_equal(c.p, magic == 0 ? h0 : h1, 7);
    assert_memory_equal(c.p + 7, "\0\0\0\0", 4);
    kl_buf_free(NULL, &c);
  }
  kl_buf c0 = compress_or_die(KL_CODEC_LZ4, 0, "hello kafka", 11);
  kl_buf c1 = compress_or_die(KL_CODEC_LZ4, 1, "hello kafka", 11);
  /* Incompressible 11 bytes: stored raw with the high bit. */
  assert_int_equal(kl_get_u32(c0.p + 7), 0x0b000080u);
  /* magic 0 ignores the header checksum, so both frames decode... */
  assert_int_equal(decompress(KL_CODEC_LZ4, 0, c0.p, c0.len, &d, 100), KL_OK);
  assert_memory_equal(d.p, "hello kafka", 11);
  assert_int_equal(decompress(KL_CODEC_LZ4, 0, c1.p, c1.len, &d, 100), KL_OK);
  /* ...while magic 1 and 2 verify it and refuse the legacy byte. */
  assert_int_equal(decompress(KL_CODEC_LZ4, 1, c0.p, c0.len, &d, 100), KL_CORRUPT);
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, c0.p, c0.len, &d, 100), KL_CORRUPT);
  assert_int_equal(decompress(KL_CODEC_LZ4, 1, c1.p, c1.len, &d, 100), KL_OK);
  kl_buf_free(NULL, &c0);
  kl_buf_free(NULL, &c1);

  /* sarama's header (content checksum on, 4 MiB blocks) is valid. */
  static const uint8_t sarama[15] = {0x04, 0x22, 0x4d, 0x18, 0x64, 0x70, 0xb9,
                                     0, 0, 0, 0, 1, 2, 3, 4};
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, sarama, 15, &d, 100), KL_OK);
  assert_int_equal(d.len, 0);
  /* Without its content checksum it is truncated. */
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, sarama, 14, &d, 100), KL_CORRUPT);
  kl_buf_free(NULL, &d);
}

/* Frames from liblz4's frame encoder with every optional field. */
static void lz4f_frame(const uint8_t *p, size_t n, int linked, kl_buf *out) {
  LZ4F_preferences_t prefs;
  memset(&prefs, 0, sizeof prefs);
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = linked ? LZ4F_blockLinked : LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
  prefs.frameInfo.contentSize = n;
  size_t bound = LZ4F_compressFrameBound(n, &prefs);
  assert_int_equal(kl_buf_reserve(NULL, out, bound), KL_OK);
  out->len = LZ4F_compressFrame(out->p, bound, p, n, &prefs);
  assert_false(LZ4F_isError(out->len));
}

static void test_lz4_options(void **state) {
  (void)state;
  size_t n = 200000;
  uint8_t *text = make_text(n);
  kl_buf f = {0}, d = {0};
  lz4f_frame(text, n, 0, &f);
  assert_int_equal(f.p[4], 0x7c); /* independent, block+content checksum, size */
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, f.p, f.len, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  assert_memory_equal(d.p, text, n);
  /* Bytes after the frame are ignored, as Kafka's reader stops at the end. */
  assert_int_equal(kl_buf_append(NULL, &f, "junk", 4), KL_OK);
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, f.p, f.len, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  f.len -= 4;
  /* A damaged block checksum (the last 4 bytes of the first block). */
  uint32_t b0 = (uint32_t)f.p[15] | (uint32_t)f.p[16] << 8 |
                (uint32_t)f.p[17] << 16 | (uint32_t)(f.p[18] & 0x7f) << 24;
  f.p[19 + b0] ^= 1;
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, f.p, f.len, &d, n), KL_CORRUPT);
  f.p[19 + b0] ^= 1;
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, f.p, f.len, &d, n), KL_OK);

  /* Linked blocks are refused (Kafka cannot read them either). */
  lz4f_frame(text, n, 1, &f);
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, f.p, f.len, &d, n), KL_CORRUPT);

  /* Descriptor checks, on a frame whose checksum we ignore (magic 0). */
  uint8_t hdr[11] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a, 0, 0, 0, 0};
  assert_int_equal(decompress(KL_CODEC_LZ4, 0, hdr, 11, &d, 10), KL_OK);
  const uint8_t bad_flg[] = {0x20, 0xa0, 0x61, 0x62, 0x40};
  for (size_t i = 0; i < NELEM(bad_flg); i++) {
    hdr[4] = bad_flg[i];
    assert_int_equal(decompress(KL_CODEC_LZ4, 0, hdr, 11, &d, 10), KL_CORRUPT);
  }
  hdr[4] = 0x60;
  const uint8_t bad_bd[] = {0x30, 0x00, 0xc0, 0x41, 0x48};
  for (size_t i = 0; i < NELEM(bad_bd); i++) {
    hdr[5] = bad_bd[i];
    assert_int_equal(decompress(KL_CODEC_LZ4, 0, hdr, 11, &d, 10), KL_CORRUPT);
  }
  hdr[5] = 0x40;
  hdr[0] = 0x05;
  assert_int_equal(decompress(KL_CODEC_LZ4, 0, hdr, 11, &d, 10), KL_CORRUPT);

  /* A block longer than the 64 KiB maximum, even stored raw. */
  static uint8_t big[7 + 4 + 65537 + 4] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40,
                                           0x82, 0x01, 0x00, 0x01, 0x80};
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, big, sizeof big, &d, 1 << 20),
                   KL_CORRUPT);
  big[7] = 0x00; /* exactly 65536: fine */
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, big, sizeof big - 1, &d, 1 << 20),
                   KL_OK);
  assert_int_equal(d.len, 65536);
  /* A raw block of zero bytes is legal and adds nothing. */
  static const uint8_t empty_block[] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82,
                                        0x00, 0x00, 0x00, 0x80, 0, 0, 0, 0};
  assert_int_equal(decompress(KL_CODEC_LZ4, 2, empty_block, sizeof empty_block,
                              &d, 10), KL_OK);
  assert_int_equal(d.len, 0);

  free(text);
  kl_buf_free(NULL, &f);
  kl_buf_free(NULL, &d);
}

static void test_gzip_members(void **state) {
  (void)state;
  size_t n = 50000;
  uint8_t *text = make_text(n);
  kl_buf a = compress_or_die(KL_CODEC_GZIP, 2, text, n);
  kl_buf b = compress_or_die(KL_CODEC_GZIP, 2, "second", 6);
  kl_buf e = compress_or_die(KL_CODEC_GZIP, 2, "", 0);
  kl_buf cat = {0}, d = {0};
  assert_int_equal(kl_buf_append(NULL, &cat, a.p, a.len), KL_OK);
  assert_int_equal(kl_buf_append(NULL, &cat, e.p, e.len), KL_OK);
  assert_int_equal(kl_buf_append(NULL, &cat, b.p, b.len), KL_OK);
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, cat.p, cat.len, &d, n + 6), KL_OK);
  assert_int_equal(d.len, n + 6);
  assert_memory_equal(d.p, text, n);
  assert_memory_equal(d.p + n, "second", 6);
  /* The limit counts all members together. */
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, cat.p, cat.len, &d, n + 5),
                   KL_CORRUPT);

  /* Bytes after a member that are not a gzip header are ignored, as
  ** java.util.zip.GZIPInputStream ignores them. */
  assert_int_equal(kl_buf_append(NULL, &cat, "\0\0junk", 6), KL_OK);
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, cat.p, cat.len, &d, n + 6), KL_OK);
  assert_int_equal(d.len, n + 6);
  /* A following member that starts but is cut short is an error. */
  cat.len -= 6;
  assert_int_equal(kl_buf_append(NULL, &cat, b.p, 12), KL_OK);
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, cat.p, cat.len, &d, n + 100),
                   KL_CORRUPT);

  /* A zlib stream (no gzip wrapper) is not accepted. */
  uLongf zl = compressBound(6);
  uint8_t zbuf[64];
  assert_int_equal(compress(zbuf, &zl, (const Bytef *)"second", 6), Z_OK);
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, zbuf, zl, &d, 100), KL_CORRUPT);
  /* A damaged trailer CRC is detected by zlib. */
  b.p[b.len - 8] ^= 0x55;
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, b.p, b.len, &d, 100), KL_CORRUPT);

  free(text);
  kl_buf_free(NULL, &a);
  kl_buf_free(NULL, &b);
  kl_buf_free(NULL, &e);
  kl_buf_free(NULL, &cat);
  kl_buf_free(NULL, &d);
}

/* A zstd frame without a content size, as zstd-jni's stream writes. */
static void zstd_stream_frame(const void *p, size_t n, kl_buf *out) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  assert_non_null(cc);
  assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
  size_t bound = ZSTD_compressBound(n);
  assert_int_equal(kl_buf_reserve(NULL, out, out->len + bound), KL_OK);
  size_t r = ZSTD_compress2(cc, out->p + out->len, bound, p, n);
  assert_false(ZSTD_isError(r));
  out->len += r;
  ZSTD_freeCCtx(cc);
}

static void test_zstd_frames(void **state) {
  (void)state;
  size_t n = 300000;
  uint8_t *text = make_text(n);
  kl_buf cat = {0}, d = {0};
  zstd_stream_frame(text, n, &cat);
  /* Unknown size: the decoder grows from a guess, never past the limit. */
  assert_int_equal(ZSTD_getFrameContentSize(cat.p, cat.len), ZSTD_CONTENTSIZE_UNKNOWN);
  assert_int_equal(decompress(KL_CODEC_ZSTD, 2, cat.p, cat.len, &d, n), KL_OK);
  assert_int_equal(d.len, n);
  assert_memory_equal(d.p, text, n);
  assert_true(d.cap <= n);
  kl_buf_free(NULL, &d);
  assert_int_equal(decompress(KL_CODEC_ZSTD, 2, cat.p, cat.len, &d, n - 1),
                   KL_CORRUPT);
  assert_true(d.cap <= n - 1);

  /* A skippable frame, then a second frame with a content size. */
  static const uint8_t skip[12] = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
  assert_int_equal(kl_buf_append(NULL, &cat, skip, sizeof skip), KL_OK);
  kl_buf b = compress_or_die(KL_CODEC_ZSTD, 2, "second", 6);
  assert_int_equal(kl_buf_append(NULL, &cat, b.p, b.len), KL_OK);
  assert_int_equal(decompress(KL_CODEC_ZSTD, 2, cat.p, cat.len, &d, n + 6), KL_OK);
  assert_int_equal(d.len, n + 6);
  assert_memory_equal(d.p, text, n);
  assert_memory_equal(d.p + n, "second", 6);
  assert_int_equal(decompress(KL_CODEC_ZSTD, 2, cat.p, cat.len, &d, n + 5),
                   KL_CORRUPT);
  /* Trailing garbage is a broken frame, as zstd-jni reports it. */
  assert_int_equal(kl_buf_append(NULL, &cat, "junkjunk", 8), KL_OK);
  assert_int_equal(decompress(KL_CODEC_ZSTD, 2, cat.p, cat.len, &d, n + 6),
                   KL_CORRUPT);

  free(text);
  kl_buf_free(NULL, &b);
  kl_buf_free(NULL, &cat);
  kl_buf_free(NULL, &d);
}

/* A kept context (what each reader holds) decodes frame after frame,
** after a broken one too, exactly as a context made per call. */
static void test_zstd_context_kept(void **state) {
  (void)state;
  kl_codec_ctx ctx = {0};
  kl_buf d = {0}, once = {0};
  kl_err err;
  for (int i = 0; i < 50; i++) {
    size_t n = 1000 + (size_t)i * 997;
    uint8_t *text = make_text(n);
    kl_buf z = compress_or_die(KL_CODEC_ZSTD, 2, text, n);
    kl_err_clear(&err);
    if (i % 7 == 3) { /* a broken frame in between */
      z.p[z.len / 2] ^= 0x5a;
      kl_rc a = kl_codec_decompress(NULL, &ctx, KL_CODEC_ZSTD, 2, z.p, z.len, &d, n, &err);
      kl_rc b = kl_codec_decompress(NULL, NULL, KL_CODEC_ZSTD, 2, z.p, z.len, &once, n, &err);
      assert_int_equal(a, b);
    } else {
      assert_int_equal(kl_codec_decompress(NULL, &ctx, KL_CODEC_ZSTD, 2, z.p, z.len, &d, n, &err),
                       KL_OK);
      assert_int_equal(d.len, n);
      assert_memory_equal(d.p, text, n);
    }
    assert_non_null(ctx.zstd);
    free(text);
    kl_buf_free(NULL, &z);
  }
  kl_codec_ctx_free(&ctx);
  assert_null(ctx.zstd);
  kl_codec_ctx_free(&ctx); /* twice is harmless */
  kl_buf_free(NULL, &d);
  kl_buf_free(NULL, &once);
}

static void test_limit(void **state) {
  (void)state;
  size_t n = 102400;
  uint8_t *text = make_text(n);
  const size_t limits[] = {0, 1, 1000, 4096, 65535, 65536, n - 1};
  for (size_t c = 0; c < NELEM(all_codecs); c++) {
    for (int magic = 0; magic <= 2; magic++) {
      kl_buf z = compress_or_die(all_codecs[c], magic, text, n);
      for (size_t l = 0; l < NELEM(limits); l++) {
        kl_buf d = {0};
        assert_int_equal(decompress(all_codecs[c], magic, z.p, z.len, &d, limits[l]),
                         KL_CORRUPT);
        assert_true(d.cap <= limits[l]);
        kl_buf_free(NULL, &d);
      }
      /* A reused buffer with room to spare still enforces the limit. */
      kl_buf d = {0};
      assert_int_equal(decompress(all_codecs[c], magic, z.p, z.len, &d, n), KL_OK);
      assert_int_equal(decompress(all_codecs[c], magic, z.p, z.len, &d, n - 1),
                       KL_CORRUPT);
      kl_buf_free(NULL, &d);
      kl_buf_free(NULL, &z);
    }
  }
  /* A hostile size claim (gzip ISIZE) only sizes a first guess. */
  kl_buf g = compress_or_die(KL_CODEC_GZIP, 2, "tiny", 4);
  kl_put_u32(g.p + g.len - 4, 0xfeffffffu);
  kl_buf d = {0};
  assert_int_equal(decompress(KL_CODEC_GZIP, 2, g.p, g.len, &d, (size_t)1 << 30),
                   KL_CORRUPT); /* ISIZE mismatch */
  assert_true(d.cap <= 65536);
  kl_buf_free(NULL, &d);
  kl_buf_free(NULL, &g);
  free(text);
}

/* Every strict prefix of a stream fails cleanly.  The one exception is
** xerial snappy cut at a chunk boundary, which is a shorter valid stream:
** then the output must be a strict prefix of the original. */
static void truncations(int codec, int magic, const uint8_t *p, size_t n) {
  kl_buf c = compress_or_die(codec, magic, p, n);
  kl_buf d = {0};
  for (size_t len = 0; len < c.len; len++) {
    uint8_t *cut = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    memcpy(cut, c.p, len);
    kl_rc rc = decompress(codec, magic, cut, len, &d, n);
    if (codec == KL_CODEC_SNAPPY && rc == KL_OK) {
      assert_true(d.len < n);
      assert_memory_equal(d.p, p, d.len);
    } else if (rc != KL_CORRUPT) {
      fail_msg("codec %d: prefix %zu of %zu gave %s", codec, len, c.len,
               kl_rc_name(rc));
    }
    free(cut);
  }
  kl_buf_free(NULL, &c);
  kl_buf_free(NULL, &d);
}

static void test_truncated(void **state) {
  (void)state;
  uint8_t *text = make_text(2000);
  uint8_t *rep = make_repetitive(140000); /* 3 lz4 blocks, 5 snappy chunks */
  for (size_t c = 0; c < NELEM(packed); c++) {
    truncations(packed[c], 2, text, 2000);
    truncations(packed[c], 2, rep, 140000);
  }
  truncations(KL_CODEC_LZ4, 0, text, 2000);
  free(text);
  free(rep);
}

/* Flip bytes of valid streams, and decode random garbage behind valid
** headers: any result is fine except a crash, an overread (ASan) or
** output beyond the limit. */
static void test_hostile(void **state) {
  (void)state;
  const size_t limit = 1 << 20;
  uint8_t *text = make_text(3000);
  kl_buf d = {0};
  for (size_t c = 0; c < NELEM(packed); c++) {
    kl_buf z = compress_or_die(packed[c], 1, text, 3000);
    uint8_t *m = malloc(z.len);
    for (size_t i = 0; i < z.len; i++) {
      static const uint8_t flips[] = {0x01, 0x80, 0xff, 0x10};
      for (size_t f = 0; f < NELEM(flips); f++) {
        memcpy(m, z.p, z.len);
        m[i] ^= flips[f];
        if (decompress(packed[c], 1, m, z.len, &d, limit) == KL_OK) {
          assert_true(d.len <= limit);
        }
      }
    }
    free(m);
    /* Valid header followed by noise, at many lengths. */
    for (int round = 0; round < 300; round++) {
      size_t hl = packed[c] == KL_CODEC_SNAPPY ? 16 : packed[c] == KL_CODEC_LZ4 ? 7
                : packed[c] == KL_CODEC_GZIP ? 10 : 4;
      size_t len = hl + rnd() % 600;
      uint8_t *g = malloc(len);
      memcpy(g, z.p, hl);
      for (size_t i = hl; i < len; i++) g[i] = (uint8_t)rnd();
      if (round % 3 == 0 && len >= hl + 4) g[hl] = g[hl + 1] = 0; /* small length */
      if (decompress(packed[c], 1, g, len, &d, limit) == KL_OK) {
        assert_true(d.len <= limit);
      }
      free(g);
    }
    kl_buf_free(NULL, &z);
  }
  kl_buf_free(NULL, &d);
  free(text);
}

/* ------------------------------------------------------- out of memory */

/* Fail allocation k = 1, 2, ... until the operation needs fewer than k:
** each failure is KL_NOMEM and leaves nothing allocated but the buffer. */
static void nomem_loop(int codec, int magic, int do_compress, const uint8_t *p,
                       size_t n, size_t limit) {
  for (long k = 1;; k++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, k);
    kl_buf b = {0};
    kl_err err;
    kl_err_clear(&err);
    kl_rc rc = do_compress
                   ? kl_codec_compress(env, codec, magic, p, n, &b, &err)
                   : kl_codec_decompress(env, NULL, codec, magic, p, n, &b, limit, &err);
    int failed = fa.calls >= k;
    kl_buf_free(env, &b);
    assert_int_equal(fa.live, 0);
    if (!failed) {
      assert_int_equal(rc, KL_OK);
      assert_true(k > 1); /* something was allocated, and failed once */
      return;
    }
    if (rc != KL_NOMEM) {
      fail_msg("codec %d %s: allocation %ld failed but rc %s (%s)", codec,
               do_compress ? "compress" : "decompress", k, kl_rc_name(rc), err.msg);
    }
    assert_int_equal(err.rc, KL_NOMEM);
  }
}

static void test_nomem(void **state) {
  (void)state;
  size_t n = 300000;
  uint8_t *text = make_text(n);
  for (size_t c = 0; c < NELEM(all_codecs); c++) {
    int codec = all_codecs[c];
    nomem_loop(codec, 2, 1, text, n, 0);
    kl_buf z = compress_or_die(codec, 2, text, n);
    nomem_loop(codec, 2, 0, z.p, z.len, n);
    kl_buf_free(NULL, &z);
  }
  /* zstd without a content size, which regrows its output. */
  kl_buf z = {0};
  zstd_stream_frame(text, n, &z);
  nomem_loop(KL_CODEC_ZSTD, 2, 0, z.p, z.len, n);
  kl_buf_free(NULL, &z);
  free(text);
}

/* ------------------------------------------------------- real Kafka data */

/* Zig-zag varint as in format.md 3.5; returns bytes used or 0. */
static size_t varint(const uint8_t *p, size_t n, int64_t *v) {
  uint64_t u = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    u |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
      return i + 1;
    }
  }
  return 0;
}

/* The decompressed records of a v2 batch are `count` length-prefixed
** records filling the buffer exactly. */
static void check_records(const uint8_t *p, size_t n, int32_t count) {
  size_t pos = 0;
  int32_t seen = 0;
  while (pos < n) {
    int64_t len = 0;
    size_t used = varint(p + pos, n - pos, &len);
    assert_true(used > 0 && len > 0 && (uint64_t)len <= n - pos - used);
    pos += used + (size_t)len;
    seen++;
  }
  assert_int_equal(pos, n);
  assert_int_equal(seen, count);
}

/* Call fn on every .log file of a fixture partition. */
static int each_log(const char *set, void (*fn)(const uint8_t *, size_t, int *),
                    int *counts) {
  const char *dir = t_fixture(set);
  DIR *dp = opendir(dir);
  assert_non_null(dp);
  struct dirent *e;
  int files = 0;
  while ((e = readdir(dp)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".log") != 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *b = t_read_file(path, &n);
    assert_non_null(b);
    fn(b, n, counts);
    free(b);
    files++;
  }
  closedir(dp);
  return files;
}

static void walk_v2(const uint8_t *b, size_t n, int *counts) {
  kl_buf d = {0};
  for (size_t pos = 0; n - pos >= 61;) {
    const uint8_t *batch = b + pos;
    size_t total = (size_t)kl_get_i32(batch + 8) + 12;
    assert_true(total >= 61 && total <= n - pos);
    assert_int_equal(batch[16], 2);
    int codec = batch[22] & 7;
    counts[codec]++;
    if (codec != KL_CODEC_NONE) {
      assert_int_equal(decompress(codec, 2, batch + 61, total - 61, &d,
                                  KL_MAX_BATCH_BYTES), KL_OK);
      assert_true(d.len > 0);
      check_records(d.p, d.len, kl_get_i32(batch + 57));
      /* And our writer's output of the same records reads back. */
      kl_buf z = compress_or_die(codec, 2, d.p, d.len);
      kl_buf back = {0};
      assert_int_equal(decompress(codec, 2, z.p, z.len, &back, d.len), KL_OK);
      assert_int_equal(back.len, d.len);
      assert_memory_equal(back.p, d.p, d.len);
      kl_buf_free(NULL, &z);
      kl_buf_free(NULL, &back);
    }
    pos += total;
  }
  kl_buf_free(NULL, &d);
}

static void test_fixture_mixed_codecs(void **state) {
  (void)state;
  int counts[8] = {0};
  assert_int_equal(each_log("j-mixed-codecs", walk_v2, counts), 4);
  for (int c = 0; c <= 4; c++) assert_true(counts[c] >= 12);
  memset(counts, 0, sizeof counts);
  each_log("c-gzip", walk_v2, counts);
  assert_true(counts[KL_CODEC_GZIP] > 100);
}

/* Legacy wrappers (format.md 5.3): the value is a compressed run of
** inner entries (offset i64, size i32, message) that fills it exactly. */
static void walk_legacy(const uint8_t *b, size_t n, int *counts) {
  kl_buf d = {0};
  for (size_t pos = 0; n - pos >= 26;) {
    const uint8_t *m = b + pos;
    size_t total = (size_t)kl_get_i32(m + 8) + 12;
    assert_true(total >= 26 && total <= n - pos);
    int magic = m[16], codec = m[17] & 7;
    size_t k = magic == 0 ? 18 : 26;
    int32_t keylen = kl_get_i32(m + k);
    assert_int_equal(keylen, codec ? -1 : keylen);
    k += 4 + (keylen > 0 ? (size_t)keylen : 0);
    int32_t vlen = kl_get_i32(m + k);
    counts[codec]++;
    if (codec != KL_CODEC_NONE) {
      assert_true(vlen > 0 && k + 4 + (size_t)vlen == total);
      assert_int_equal(decompress(codec, magic, m + k + 4, (size_t)vlen, &d,
                                  KL_MAX_BATCH_BYTES), KL_OK);
      size_t ip = 0;
      int inner = 0;
      while (ip < d.len) {
        assert_true(d.len - ip >= 12);
        int32_t size = kl_get_i32(d.p + ip + 8);
        assert_true(size >= 14 && (size_t)size <= d.len - ip - 12);
        assert_int_equal(d.p[ip + 16], magic);
        ip += 12 + (size_t)size;
        inner++;
      }
      assert_true(inner > 0);
    }
    pos += total;
  }
  kl_buf_free(NULL, &d);
}

static void test_fixture_legacy_gzip(void **state) {
  (void)state;
  int counts[8] = {0};
  each_log("f-legacy-v0-gzip", walk_legacy, counts);
  assert_int_equal(counts[KL_CODEC_GZIP], 20);
  memset(counts, 0, sizeof counts);
  each_log("f-legacy-v1-gzip", walk_legacy, counts);
  assert_int_equal(counts[KL_CODEC_GZIP], 30);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_invalid_codec),
    cmocka_unit_test(test_roundtrip),
    cmocka_unit_test(test_writers_match_libraries),
    cmocka_unit_test(test_snappy_framing),
    cmocka_unit_test(test_lz4_headers),
    cmocka_unit_test(test_lz4_options),
    cmocka_unit_test(test_gzip_members),
    cmocka_unit_test(test_zstd_frames),
    cmocka_unit_test(test_zstd_context_kept),
    cmocka_unit_test(test_limit),
    cmocka_unit_test(test_truncated),
    cmocka_unit_test(test_hostile),
    cmocka_unit_test(test_nomem),
    cmocka_unit_test(test_fixture_mixed_codecs),
    cmocka_unit_test(test_fixture_legacy_gzip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
