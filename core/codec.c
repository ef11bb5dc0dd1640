/*
** codec.c - gzip, snappy, lz4 and zstd as Kafka stores them (format.md 6).
**
** The libraries do the entropy coding; what lives here is the framing each
** library does not know about (snappy-java's xerial chunks, Kafka's LZ4
** frame subset with its magic-0 checksum quirk) and the discipline every
** decoder follows:
**
**   - Input is hostile.  Every length read from the stream is checked
**     against the bytes that remain before anything is read or allocated.
**   - Output never grows past `limit`, and neither does the buffer holding
**     it (out_room clamps its doubling to the limit).  Hints found in the
**     stream (gzip ISIZE, zstd content size) only size the first attempt,
**     and are clamped too; a lying hint costs a regrow, never a big block.
**   - Trailing bytes after a complete stream are handled as Kafka's Java
**     readers handle them, so that whatever Kafka accepts we accept: gzip
**     and lz4 ignore them, snappy and zstd treat them as more stream.
**
** Allocations go through kl_env: our output buffer, and zlib's state
** (through zalloc/zfree).  libzstd, libsnappy and liblz4 allocate on their
** own or not at all; routing zstd through kl_env would need its
** static-linking-only API, which the shared library does not promise.
*/
#include "codec.h"

#include <limits.h>
#include <string.h>

#include <lz4.h>
#include <snappy-c.h>
#include <xxhash.h>
#include <zlib.h>
/* For ZSTD_customMem: zstd's contexts allocate through the kl_env hook
** too, so that tests can fail them and a host's allocator sees them. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

const char *kl_codec_name(int codec) {
  switch (codec) {
    case KL_CODEC_NONE: return "none";
    case KL_CODEC_GZIP: return "gzip";
    case KL_CODEC_SNAPPY: return "snappy";
    case KL_CODEC_LZ4: return "lz4";
    case KL_CODEC_ZSTD: return "zstd";
  }
  return NULL;
}

/*
** deflate's best case is about 1032:1, so a size hint larger than that
** multiple of the input is a lie (or zstd RLE, which merely regrows).
*/
#define HINT_RATIO 1032

/* Bytes a decoder may still write: the allocation and the limit both bound it. */
static size_t out_free(const kl_buf *out, size_t limit) {
  size_t end = out->cap < limit ? out->cap : limit;
  return end > out->len ? end - out->len : 0;
}

/*
** Make out hold at least `need` bytes, doubling (so a stream that grows a
** little at a time stays linear) but never past `limit`, which is what
** turns the limit into a bound on memory and not only on the result.
*/
static kl_rc out_room(const kl_env *env, kl_buf *out, size_t need,
                      size_t limit, const char *codec, kl_err *err) {
  if (need > limit) {
    return kl_err_set(err, KL_CORRUPT,
                      "%s: decompressed data exceeds the limit of %zu bytes",
                      codec, limit);
  }
  if (need <= out->cap) return KL_OK;
  size_t cap = out->cap < 4096 ? 4096 : out->cap;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
  if (cap > limit) cap = limit;
  uint8_t *p = kl_realloc(env, out->p, cap);
  if (!p) return kl_err_set(err, KL_NOMEM, "%s: out of memory", codec);
  out->p = p;
  out->cap = cap;
  return KL_OK;
}

static kl_rc exceeds(kl_err *err, const char *codec, size_t limit) {
  return kl_err_set(err, KL_CORRUPT,
                    "%s: decompressed data exceeds the limit of %zu bytes",
                    codec, limit);
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* ---------------------------------------------------------------- gzip */

/* zlib's state and window come from kl_env, so tests can fail them too. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  if (size != 0 && items > SIZE_MAX / size) return NULL;
  return kl_malloc((const kl_env *)opaque, (size_t)items * size);
}
static void z_free(voidpf opaque, voidpf p) {
  kl_free((const kl_env *)opaque, p);
}

/* zlib counts in uInt; feed larger buffers in pieces. */
static uInt z_clamp(size_t n) { return n > UINT_MAX ? UINT_MAX : (uInt)n; }

static void z_init(z_stream *zs, const kl_env *env) {
  memset(zs, 0, sizeof *zs);
  zs->zalloc = z_alloc;
  zs->zfree = z_free;
  zs->opaque = (voidpf)env;
}

/*
** Concatenated members are decoded in turn.  After a member, bytes that do
** not start another gzip header are ignored: java.util.zip.GZIPInputStream
** treats a malformed follow-on header as end of stream, and Kafka reads
** through it.  Z_FINISH lets zlib skip allocating its 32 KiB window when
** the output fits in one call, which the ISIZE hint usually arranges.
** A walker of the gzip member framing (complexity above 25): each branch
** is one of RFC 1952's header fields or GZIPInputStream's end rules.
*/
static kl_rc gzip_decompress(const kl_env *env, const uint8_t *src, size_t n,
                             kl_buf *out, size_t limit, size_t stop, int *whole,
                             kl_err *err) {
  /* ISIZE, the last member's size mod 2^32, sizes the first attempt. */
  size_t hint = n >= 18 ? get_le32(src + n - 4) : 0;
  if (hint / HINT_RATIO > n) hint = n * HINT_RATIO;
  if (hint > limit) hint = limit;
  kl_rc rc = out_room(env, out, hint, limit, "gzip", err);
  if (rc != KL_OK) return rc;

  z_stream zs;
  z_init(&zs, env);
  int zr = inflateInit2(&zs, 16 + MAX_WBITS); /* gzip wrapper only */
  if (zr != Z_OK) {
    return kl_err_set(err, zr == Z_MEM_ERROR ? KL_NOMEM : KL_CORRUPT,
                      "gzip: inflateInit2 failed (%d)", zr);
  }
  size_t left = n; /* bytes not yet handed to zlib; they follow zs.next_in */
  zs.next_in = (Bytef *)src;
  for (;;) {
    if (out->len >= stop) { /* the caller has what it needs */
      *whole = 0;
      break;
    }
    if (zs.avail_in == 0 && left > 0) {
      zs.avail_in = z_clamp(left);
      left -= zs.avail_in;
    }
    /* Past the limit, give zlib a one-byte spill: writing into it proves
    ** the stream too long, while a trailer can still be consumed. */
    uint8_t spill;
    size_t room = out_free(out, limit);
    if (room == 0 && out->len < limit) {
      rc = out_room(env, out, out->len + 1, limit, "gzip", err);
      if (rc != KL_OK) break;
      room = out_free(out, limit);
    }
    if (room > stop - out->len) room = stop - out->len; /* inflate stops there */
    zs.next_out = room ? out->p + out->len : &spill;
    zs.avail_out = room ? z_clamp(room) : 1;
    uInt had_in = zs.avail_in, had_out = zs.avail_out;

    zr = inflate(&zs, Z_FINISH);
    size_t made = had_out - zs.avail_out;
    if (room == 0 && made > 0) {
      rc = exceeds(err, "gzip", limit);
      break;
    }
    out->len += made;
    size_t pos = (size_t)(zs.next_in - src); /* first byte zlib has not used */
    if (zr == Z_STREAM_END) {
      if (n - pos < 3 || src[pos] != 0x1f || src[pos + 1] != 0x8b ||
          src[pos + 2] != 8) {
        break; /* done; anything after is not a member (see above) */
      }
      inflateReset(&zs);
      left += zs.avail_in;
      zs.avail_in = 0;
      continue;
    }
    if (zr == Z_OK || zr == Z_BUF_ERROR) {
      if (zs.avail_out == 0) continue; /* wants more room */
      if (zs.avail_in == 0 && left == 0) {
        rc = kl_err_set(err, KL_CORRUPT, "gzip: truncated stream (%zu bytes)",
                        n);
        break;
      }
      if (made == 0 && had_in == zs.avail_in) { /* cannot happen; no spin */
        rc = kl_err_set(err, KL_CORRUPT, "gzip: decoder stalled at byte %zu",
                        pos);
        break;
      }
      continue;
    }
    if (zr == Z_MEM_ERROR) {
      rc = kl_err_set(err, KL_NOMEM, "gzip: out of memory");
    } else {
      rc = kl_err_set(err, KL_CORRUPT, "gzip: %s near byte %zu",
                      zs.msg ? zs.msg : "invalid stream", pos);
    }
    break;
  }
  inflateEnd(&zs);
  return rc;
}

/* One member, as GZIPOutputStream writes; the level is zlib's default (6),
** the same as Java's. */
static kl_rc gzip_compress(const kl_env *env, const uint8_t *src, size_t n,
                           kl_buf *out, kl_err *err) {
  z_stream zs;
  z_init(&zs, env);
  int zr = deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS,
                        8, Z_DEFAULT_STRATEGY);
  if (zr != Z_OK) {
    return kl_err_set(err, zr == Z_MEM_ERROR ? KL_NOMEM : KL_MISUSE,
                      "gzip: deflateInit2 failed (%d)", zr);
  }
  /* deflateBound makes the single pass below the normal case. */
  kl_rc rc = kl_buf_reserve(env, out, deflateBound(&zs, n));
  size_t left = n;
  zs.next_in = (Bytef *)src;
  zs.next_out = out->p;
  while (rc == KL_OK) {
    if (zs.avail_in == 0 && left > 0) {
      zs.avail_in = z_clamp(left);
      left -= zs.avail_in;
    }
    if (zs.avail_out == 0) {
      size_t done = (size_t)(zs.next_out - out->p);
      if (done == out->cap) rc = kl_buf_reserve(env, out, done + 65536);
      if (rc != KL_OK) break;
      zs.next_out = out->p + done; /* the reserve may have moved it */
      zs.avail_out = z_clamp(out->cap - done);
    }
    zr = deflate(&zs, left > 0 ? Z_NO_FLUSH : Z_FINISH);
    if (zr == Z_STREAM_END) {
      out->len = (size_t)(zs.next_out - out->p);
      break;
    }
    if (zr == Z_MEM_ERROR) {
      rc = KL_NOMEM;
    } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
      rc = kl_err_set(err, KL_MISUSE, "gzip: deflate failed (%d)", zr);
    }
  }
  if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "gzip: out of memory");
  deflateEnd(&zs);
  return rc;
}

/* -------------------------------------------------------------- snappy */

/* snappy-java's stream header: magic, version 1, minimum compatible 1. */
static const uint8_t xerial_header[16] = {
  0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1
};
#define XERIAL_CHUNK 32768 /* snappy-java's default block size */

/* Append one raw snappy block (varint length + elements) found at byte `at`. */
static kl_rc snappy_block(const kl_env *env, const uint8_t *p, size_t n,
                          size_t at, kl_buf *out, size_t limit, kl_err *err) {
  size_t ulen;
  if (snappy_uncompressed_length((const char *)p, n, &ulen) != SNAPPY_OK) {
    return kl_err_set(err, KL_CORRUPT, "snappy: bad block header at byte %zu",
                      at);
  }
  if (ulen > limit - out->len) return exceeds(err, "snappy", limit);
  kl_rc rc = out_room(env, out, out->len + ulen, limit, "snappy", err);
  if (rc != KL_OK) return rc;
  char none;
  size_t got = ulen;
  char *dst = ulen ? (char *)out->p + out->len : &none;
  /* snappy checks every copy against both buffers and that the block ends
  ** exactly at n with exactly ulen bytes, so hostile blocks are safe. */
  if (snappy_uncompress((const char *)p, n, dst, &got) != SNAPPY_OK ||
      got != ulen) {
    return kl_err_set(err, KL_CORRUPT, "snappy: corrupt block at byte %zu",
                      at);
  }
  out->len += ulen;
  return KL_OK;
}

/*
** Xerial framing: the 16-byte header, then (i32 BE length, raw block)
** chunks to the end.  A second header where a length is expected (its
** first four bytes read as a negative length) starts a concatenated
** stream, which newer snappy-java accepts.  Without the magic the whole
** buffer is one raw block: snappy-java's fallback, used by librdkafka.
*/
static kl_rc snappy_decompress(const kl_env *env, const uint8_t *src, size_t n,
                               kl_buf *out, size_t limit, kl_err *err) {
  if (n < 16 || memcmp(src, xerial_header, 8) != 0) {
    return snappy_block(env, src, n, 0, out, limit, err);
  }
  size_t pos = 0;
  while (pos < n) {
    if (n - pos < 4) {
      return kl_err_set(err, KL_CORRUPT,
                        "snappy: truncated chunk length at byte %zu", pos);
    }
    if (memcmp(src + pos, xerial_header, 4) == 0) {
      if (n - pos < 16 || memcmp(src + pos, xerial_header, 8) != 0) {
        return kl_err_set(err, KL_CORRUPT,
                          "snappy: bad stream header at byte %zu", pos);
      }
      if (kl_get_i32(src + pos + 8) < 1) {
        return kl_err_set(err, KL_CORRUPT,
                          "snappy: unsupported stream version %d at byte %zu",
                          kl_get_i32(src + pos + 8), pos);
      }
      pos += 16;
      continue;
    }
    int32_t len = kl_get_i32(src + pos);
    if (len < 0 || (size_t)len > n - pos - 4) {
      return kl_err_set(err, KL_CORRUPT,
                        "snappy: chunk length %d at byte %zu exceeds the %zu "
                        "bytes left", len, pos, n - pos - 4);
    }
    kl_rc rc = snappy_block(env, src + pos + 4, (size_t)len, pos + 4, out,
                            limit, err);
    if (rc != KL_OK) return rc;
    pos += 4 + (size_t)len;
  }
  return KL_OK;
}

static kl_rc snappy_compress_x(const kl_env *env, const uint8_t *src, size_t n,
                               kl_buf *out, kl_err *err) {
  kl_rc rc = kl_buf_append(env, out, xerial_header, sizeof xerial_header);
  for (size_t pos = 0; rc == KL_OK && pos < n; pos += XERIAL_CHUNK) {
    size_t chunk = n - pos < XERIAL_CHUNK ? n - pos : XERIAL_CHUNK;
    size_t clen = snappy_max_compressed_length(chunk);
    rc = kl_buf_reserve(env, out, out->len + 4 + clen);
    if (rc != KL_OK) break;
    if (snappy_compress((const char *)src + pos, chunk,
                        (char *)out->p + out->len + 4, &clen) != SNAPPY_OK) {
      return kl_err_set(err, KL_MISUSE, "snappy: compression failed");
    }
    kl_put_u32(out->p + out->len, (uint32_t)clen);
    out->len += 4 + clen;
  }
  if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "snappy: out of memory");
  return rc;
}

/* ----------------------------------------------------------------- lz4 */

#define LZ4F_MAGIC 0x184D2204u
#define LZ4F_FLG_VERSION 0xC0       /* bits 7-6, must read 01 */
#define LZ4F_FLG_INDEPENDENT 0x20
#define LZ4F_FLG_BLOCK_CHECKSUM 0x10
#define LZ4F_FLG_CONTENT_SIZE 0x08
#define LZ4F_FLG_CONTENT_CHECKSUM 0x04
#define LZ4F_FLG_RESERVED 0x03      /* reserved bit and dictionary id */
#define LZ4F_BD_RESERVED 0x8F
#define LZ4F_UNCOMPRESSED 0x80000000u
#define LZ4_KAFKA_BLOCK 65536       /* BD 0x40 */

/* Header checksum byte: the second byte of XXH32 over the descriptor. */
static uint8_t lz4_hc(const uint8_t *p, size_t n) {
  return (uint8_t)(XXH32(p, n, 0) >> 8);
}

/*
** Decode one compressed block into at most `want` bytes.  It starts with
** the room already there (a reused buffer usually has enough) and doubles
** on failure, because LZ4_decompress_safe cannot tell "needs more room"
** from "corrupt"; only a failure with the full `want` is final.
*/
static kl_rc lz4_block(const kl_env *env, const uint8_t *p, size_t stored,
                       size_t want, size_t at, kl_buf *out, size_t limit,
                       kl_err *err) {
  for (;;) {
    size_t room = out_free(out, limit);
    if (room > want) room = want;
    char none;
    char *dst = room ? (char *)out->p + out->len : &none;
    int got = LZ4_decompress_safe((const char *)p, dst, (int)stored, (int)room);
    if (got >= 0) {
      out->len += (size_t)got;
      return KL_OK;
    }
    if (room == want) {
      return kl_err_set(err, KL_CORRUPT,
                        "lz4: corrupt block at byte %zu (or it exceeds the "
                        "limit of %zu bytes)", at, limit);
    }
    size_t grow = room * 2; /* always > room, so each pass makes progress */
    if (grow < stored * 4) grow = stored * 4;
    if (grow < 4096) grow = 4096;
    if (grow > want) grow = want;
    kl_rc rc = out_room(env, out, out->len + grow, limit, "lz4", err);
    if (rc != KL_OK) return rc;
  }
}

/* Decode the first `target` bytes of one compressed block (fewer when it
** holds fewer): liblz4 stops there, the rest of the block is not read. */
static kl_rc lz4_block_prefix(const kl_env *env, const uint8_t *p, size_t stored,
                              size_t target, size_t at, kl_buf *out, size_t limit,
                              kl_err *err) {
  kl_rc rc = out_room(env, out, out->len + target, limit, "lz4", err);
  if (rc != KL_OK) return rc;
  int got = LZ4_decompress_safe_partial((const char *)p, (char *)out->p + out->len, (int)stored,
                                        (int)target, (int)target);
  if (got < 0) return kl_err_set(err, KL_CORRUPT, "lz4: corrupt block at byte %zu", at);
  out->len += (size_t)got;
  return KL_OK;
}

/*
** Kafka's LZ4 frame subset (format.md 6.3).  liblz4's frame decoder cannot
** be used: it rejects the wrong header checksum that magic-0 data carries.
** Bytes after the end mark (and optional content checksum) are ignored, as
** KafkaLZ4BlockInputStream stops reading there.  A walker of the frame
** format (complexity above 25): one branch per frame field and block rule.
*/
static kl_rc lz4_decompress(const kl_env *env, int magic, const uint8_t *src,
                            size_t n, kl_buf *out, size_t limit, size_t stop,
                            int *whole, kl_err *err) {
  if (n < 7) {
    return kl_err_set(err, KL_CORRUPT, "lz4: truncated frame header (%zu bytes)",
                      n);
  }
  if (get_le32(src) != LZ4F_MAGIC) {
    return kl_err_set(err, KL_CORRUPT, "lz4: bad frame magic 0x%08x",
                      (unsigned)get_le32(src));
  }
  uint8_t flg = src[4], bd = src[5];
  if ((flg & LZ4F_FLG_VERSION) != 0x40 || (flg & LZ4F_FLG_RESERVED) != 0 ||
      (bd & LZ4F_BD_RESERVED) != 0) {
    return kl_err_set(err, KL_CORRUPT,
                      "lz4: unsupported frame descriptor FLG 0x%02x BD 0x%02x",
                      flg, bd);
  }
  if (!(flg & LZ4F_FLG_INDEPENDENT)) {
    return kl_err_set(err, KL_CORRUPT, "lz4: dependent blocks not supported");
  }
  int bsid = bd >> 4;
  if (bsid < 4) {
    return kl_err_set(err, KL_CORRUPT, "lz4: bad block size id %d", bsid);
  }
  size_t maxblock = (size_t)1 << (8 + 2 * bsid); /* 64 KiB .. 4 MiB */
  size_t desc = (flg & LZ4F_FLG_CONTENT_SIZE) ? 10 : 2; /* content size skipped */
  if (n < 4 + desc + 1) {
    return kl_err_set(err, KL_CORRUPT, "lz4: truncated frame header (%zu bytes)",
                      n);
  }
  /* Kafka 0.8/0.9 hashed the magic too; 0.10+ skips the check for magic 0. */
  if (magic >= 1 && lz4_hc(src + 4, desc) != src[4 + desc]) {
    return kl_err_set(err, KL_CORRUPT,
                      "lz4: header checksum 0x%02x, expected 0x%02x",
                      src[4 + desc], lz4_hc(src + 4, desc));
  }
  size_t pos = 4 + desc + 1;
  size_t sum = (flg & LZ4F_FLG_BLOCK_CHECKSUM) ? 4 : 0;
  for (;;) {
    if (out->len >= stop) { /* the caller has what it needs */
      *whole = 0;
      return KL_OK;
    }
    if (n - pos < 4) {
      return kl_err_set(err, KL_CORRUPT, "lz4: truncated at byte %zu", pos);
    }
    uint32_t word = get_le32(src + pos);
    if (word == 0) break; /* end mark */
    size_t stored = word & ~LZ4F_UNCOMPRESSED;
    size_t at = pos;
    pos += 4;
    if (stored > maxblock) {
      return kl_err_set(err, KL_CORRUPT,
                        "lz4: block at byte %zu holds %zu bytes, more than "
                        "the %zu-byte maximum", at, stored, maxblock);
    }
    if (stored + sum > n - pos) {
      return kl_err_set(err, KL_CORRUPT, "lz4: truncated block at byte %zu",
                        at);
    }
    const uint8_t *data = src + pos;
    pos += stored + sum;
    if (sum && XXH32(data, stored, 0) != get_le32(data + stored)) {
      return kl_err_set(err, KL_CORRUPT,
                        "lz4: block checksum mismatch at byte %zu", at);
    }
    kl_rc rc;
    if (word & LZ4F_UNCOMPRESSED) {
      if (stored > limit - out->len) return exceeds(err, "lz4", limit);
      rc = out_room(env, out, out->len + stored, limit, "lz4", err);
      if (rc == KL_OK && stored > 0) {
        memcpy(out->p + out->len, data, stored);
        out->len += stored;
      }
    } else {
      size_t want = limit - out->len < maxblock ? limit - out->len : maxblock;
      rc = stop - out->len < want
               ? lz4_block_prefix(env, data, stored, stop - out->len, at, out, limit, err)
               : lz4_block(env, data, stored, want, at, out, limit, err);
    }
    if (rc != KL_OK) return rc;
  }
  /* The content checksum is read, not verified, exactly as Kafka does. */
  if ((flg & LZ4F_FLG_CONTENT_CHECKSUM) && n - pos - 4 < 4) {
    return kl_err_set(err, KL_CORRUPT, "lz4: truncated content checksum");
  }
  return KL_OK;
}

/*
** Kafka's writer, byte for byte in its framing: FLG 0x60 BD 0x40, 64 KiB
** independent blocks, a block stored raw (high bit) unless compressing
** makes it strictly smaller, end mark, no checksums.  For magic 0 the
** header checksum covers the magic as well, the bug 0.8/0.9 readers expect.
*/
static kl_rc lz4_compress(const kl_env *env, int magic, const uint8_t *src,
                          size_t n, kl_buf *out, kl_err *err) {
  uint8_t hdr[7];
  put_le32(hdr, LZ4F_MAGIC);
  hdr[4] = 0x60;
  hdr[5] = 0x40;
  hdr[6] = magic == 0 ? lz4_hc(hdr, 6) : lz4_hc(hdr + 4, 2);
  kl_rc rc = kl_buf_append(env, out, hdr, sizeof hdr);
  for (size_t pos = 0; rc == KL_OK && pos < n; pos += LZ4_KAFKA_BLOCK) {
    size_t chunk = n - pos < LZ4_KAFKA_BLOCK ? n - pos : LZ4_KAFKA_BLOCK;
    rc = kl_buf_reserve(env, out, out->len + 4 + chunk);
    if (rc != KL_OK) break;
    uint8_t *w = out->p + out->len;
    /* A capacity of chunk-1 makes liblz4 give up (0) when it cannot shrink. */
    int c = LZ4_compress_default((const char *)src + pos, (char *)w + 4,
                                 (int)chunk, (int)chunk - 1);
    if (c > 0) {
      put_le32(w, (uint32_t)c);
      out->len += 4 + (size_t)c;
    } else {
      put_le32(w, (uint32_t)chunk | LZ4F_UNCOMPRESSED);
      memcpy(w + 4, src + pos, chunk);
      out->len += 4 + chunk;
    }
  }
  if (rc == KL_OK) rc = kl_buf_append(env, out, "\0\0\0\0", 4);
  if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "lz4: out of memory");
  return rc;
}

/* ---------------------------------------------------------------- zstd */

/*
** One-shot decoding (all frames, skippable ones too) straight into out,
** retried with a doubled buffer on dstSize_tooSmall.  The streaming API
** would need no retry but, for frames without a content size (what
** zstd-jni's stream writes), allocates a window buffer of up to 2^windowLog
** per call (2 MiB at level 3); writing into out directly avoids that.  With
** the content size known, or a reused buffer, the first attempt succeeds.
*/
static void *zstd_alloc(void *opaque, size_t n) { return kl_malloc(opaque, n); }
static void zstd_free(void *opaque, void *p) { kl_free(opaque, p); }
static ZSTD_customMem zstd_mem(const kl_env *env) {
  ZSTD_customMem m = {zstd_alloc, zstd_free, (void *)env};
  return m;
}

static kl_rc zstd_decompress(const kl_env *env, kl_codec_ctx *ctx, const uint8_t *src, size_t n,
                             kl_buf *out, size_t limit, kl_err *err) {
  unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
  size_t want = 4 * n;
  if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR) {
    want = fcs / HINT_RATIO > n ? n * HINT_RATIO : (size_t)fcs;
  }
  if (want > limit) want = limit;
  kl_rc rc = out_room(env, out, want, limit, "zstd", err);
  if (rc != KL_OK) return rc;
  ZSTD_DCtx *dctx = ctx && ctx->zstd ? ctx->zstd : ZSTD_createDCtx_advanced(zstd_mem(env));
  if (!dctx) return kl_err_set(err, KL_NOMEM, "zstd: out of memory");
  if (ctx) ctx->zstd = dctx;
  for (;;) {
    size_t room = out_free(out, limit);
    uint8_t none;
    size_t r = ZSTD_decompressDCtx(dctx, room ? out->p : &none, room, src, n);
    if (!ZSTD_isError(r)) {
      out->len = r;
      break;
    }
    ZSTD_ErrorCode code = ZSTD_getErrorCode(r);
    if (code == ZSTD_error_dstSize_tooSmall && room < limit) {
      size_t more = room < 2048 ? 4096 : room * 2;
      if (more < room || more > limit) more = limit;
      rc = out_room(env, out, more, limit, "zstd", err);
      if (rc != KL_OK) break;
      continue;
    }
    if (code == ZSTD_error_dstSize_tooSmall) {
      rc = exceeds(err, "zstd", limit);
    } else if (code == ZSTD_error_memory_allocation) {
      rc = kl_err_set(err, KL_NOMEM, "zstd: out of memory");
    } else {
      rc = kl_err_set(err, KL_CORRUPT, "zstd: %s", ZSTD_getErrorName(r));
    }
    break;
  }
  if (!ctx) ZSTD_freeDCtx(dctx);
  return rc;
}

/* The largest window a prefix decode lets a frame ask for (8 MiB, kept in
** the context); a frame that asks for more is decoded whole, one-shot. */
#define ZSTD_PREFIX_WINDOW_LOG 23
#define ZSTD_BLOCK_MAX ((size_t)128 << 10) /* zstd's largest block */

/* Is a prefix decode of the frames at src worth it: one frame, of a known
** content size (its window is then that size, not the 2^windowLog a
** stream without it asks for, which every reader would keep) of more than
** one block (a block is decoded whole either way)? */
static int zstd_prefix_pays(const uint8_t *src, size_t n) {
  unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
  if (fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR) return 0;
  return fcs > ZSTD_BLOCK_MAX && fcs <= ((size_t)1 << ZSTD_PREFIX_WINDOW_LOG) &&
         ZSTD_findFrameCompressedSize(src, n) == n;
}

/*
** The first `stop` bytes (stop < limit) of the frames at src, streaming:
** zstd decodes block by block (128 KiB at most), so the blocks after the
** one holding byte stop - 1 are not decoded.
*/
static kl_rc zstd_prefix(const kl_env *env, kl_codec_ctx *ctx, const uint8_t *src, size_t n,
                         kl_buf *out, size_t limit, size_t stop, int *whole, kl_err *err) {
  kl_rc rc = out_room(env, out, stop, limit, "zstd", err);
  if (rc != KL_OK) return rc;
  ZSTD_DCtx *dctx = ctx && ctx->zstd ? ctx->zstd : ZSTD_createDCtx_advanced(zstd_mem(env));
  if (!dctx) return kl_err_set(err, KL_NOMEM, "zstd: out of memory");
  if (ctx) ctx->zstd = dctx;
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, ZSTD_PREFIX_WINDOW_LOG);
  ZSTD_inBuffer in = {src, n, 0};
  ZSTD_outBuffer o = {out->p, stop, 0};
  size_t r;
  for (;;) {
    r = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(r)) break;
    if (r == 0 && in.pos == in.size) {
      *whole = 1; /* every frame ended */
      break;
    }
    if (o.pos == o.size) {
      *whole = 0;
      break;
    }
    if (in.pos == in.size) break; /* truncated: below */
  }
  /* The bound on the window is for prefixes only (one-shot decoding needs
  ** no window buffer). */
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r) && (r == 0 || o.pos == o.size)) {
    out->len = o.pos;
  } else if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
    rc = zstd_decompress(env, ctx, src, n, out, limit, err);
    *whole = 1;
  } else if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation) {
    rc = kl_err_set(err, KL_NOMEM, "zstd: out of memory");
  } else {
    rc = kl_err_set(err, KL_CORRUPT, "zstd: %s",
                    ZSTD_isError(r) ? ZSTD_getErrorName(r) : "truncated frame");
  }
  if (!ctx) ZSTD_freeDCtx(dctx);
  return rc;
}

void kl_codec_ctx_free(kl_codec_ctx *ctx) {
  if (ctx && ctx->zstd) ZSTD_freeDCtx(ctx->zstd);
  if (ctx) ctx->zstd = NULL;
}

/* One frame at zstd-jni's default level; it records the content size,
** which lets our decoder size its output exactly. */
static kl_rc zstd_compress(const kl_env *env, kl_codec_cctx *cctx, const uint8_t *src, size_t n,
                           kl_buf *out, kl_err *err) {
  kl_rc rc = kl_buf_reserve(env, out, ZSTD_compressBound(n));
  if (rc != KL_OK) return kl_err_set(err, rc, "zstd: out of memory");
  ZSTD_CCtx *c = cctx && cctx->zstd ? cctx->zstd : ZSTD_createCCtx_advanced(zstd_mem(env));
  if (!c) return kl_err_set(err, KL_NOMEM, "zstd: out of memory");
  if (cctx) cctx->zstd = c;
  size_t r = ZSTD_compressCCtx(c, out->p, out->cap, src, n, 3);
  if (!cctx) ZSTD_freeCCtx(c);
  if (ZSTD_isError(r)) {
    return kl_err_set(err,
                      ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation
                          ? KL_NOMEM : KL_MISUSE,
                      "zstd: %s", ZSTD_getErrorName(r));
  }
  out->len = r;
  return KL_OK;
}

void kl_codec_cctx_free(kl_codec_cctx *cctx) {
  if (cctx && cctx->zstd) ZSTD_freeCCtx(cctx->zstd);
  if (cctx) cctx->zstd = NULL;
}

/* ------------------------------------------------------------- dispatch */

kl_rc kl_codec_decompress(const kl_env *env, kl_codec_ctx *ctx, int codec, int magic,
                          const uint8_t *src, size_t n, kl_buf *out,
                          size_t limit, kl_err *err) {
  int whole;
  return kl_codec_decompress_prefix(env, ctx, codec, magic, src, n, out, limit, SIZE_MAX, &whole,
                                    err);
}

kl_rc kl_codec_decompress_prefix(const kl_env *env, kl_codec_ctx *ctx, int codec, int magic,
                                 const uint8_t *src, size_t n, kl_buf *out, size_t limit,
                                 size_t need, int *whole, kl_err *err) {
  kl_rc rc;
  const char *name = kl_codec_name(codec);
  out->len = 0;
  *whole = 1;
  if (!name) {
    return kl_err_set(err, KL_UNSUPPORTED, "unknown compression codec %d",
                      codec);
  }
  /* Every codec's smallest stream has bytes; Kafka never writes none. */
  if (n == 0 && codec != KL_CODEC_NONE) {
    return kl_err_set(err, KL_CORRUPT, "%s: empty stream", name);
  }
  switch (codec) {
    case KL_CODEC_GZIP: rc = gzip_decompress(env, src, n, out, limit, need, whole, err); break;
    case KL_CODEC_SNAPPY: rc = snappy_decompress(env, src, n, out, limit, err); break;
    case KL_CODEC_LZ4:
      rc = lz4_decompress(env, magic, src, n, out, limit, need, whole, err);
      break;
    case KL_CODEC_ZSTD:
      rc = need < limit && zstd_prefix_pays(src, n)
               ? zstd_prefix(env, ctx, src, n, out, limit, need, whole, err)
               : zstd_decompress(env, ctx, src, n, out, limit, err);
      break;
    default: /* none: a bounded copy */
      rc = out_room(env, out, n, limit, name, err);
      if (rc == KL_OK && n > 0) memcpy(out->p, src, n);
      out->len = n;
      break;
  }
  if (rc != KL_OK) out->len = 0;
  return rc;
}

kl_rc kl_codec_compress(const kl_env *env, int codec, int magic,
                        const uint8_t *src, size_t n, kl_buf *out,
                        kl_err *err) {
  return kl_codec_compress_ctx(env, NULL, codec, magic, src, n, out, err);
}

kl_rc kl_codec_compress_ctx(const kl_env *env, kl_codec_cctx *cctx, int codec, int magic,
                            const uint8_t *src, size_t n, kl_buf *out, kl_err *err) {
  kl_rc rc;
  out->len = 0;
  switch (codec) {
    case KL_CODEC_NONE:
      rc = kl_buf_append(env, out, src, n);
      if (rc == KL_NOMEM) kl_err_set(err, rc, "none: out of memory");
      break;
    case KL_CODEC_GZIP: rc = gzip_compress(env, src, n, out, err); break;
    case KL_CODEC_SNAPPY: rc = snappy_compress_x(env, src, n, out, err); break;
    case KL_CODEC_LZ4: rc = lz4_compress(env, magic, src, n, out, err); break;
    case KL_CODEC_ZSTD: rc = zstd_compress(env, cctx, src, n, out, err); break;
    default:
      return kl_err_set(err, KL_UNSUPPORTED, "unknown compression codec %d",
                        codec);
  }
  if (rc != KL_OK) out->len = 0;
  return rc;
}
