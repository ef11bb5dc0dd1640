/*
** codec.h - the compression codecs Kafka uses, each through its Debian
** library: gzip (zlib), snappy (libsnappy, plus snappy-java's "xerial"
** framing, which no library parses), lz4 (liblz4 blocks inside Kafka's LZ4
** frame subset, parsed here because liblz4's frame decoder rejects the
** deliberately wrong header checksum of magic-0 data; header checksums use
** libxxhash), zstd (libzstd streaming, several frames allowed).
**
** Decompression output goes to a caller-owned kl_buf that is reused across
** calls; its len is set to the decompressed size.  Output is bounded by
** `limit` bytes: a stream that would expand beyond it is reported as
** KL_CORRUPT, so a hostile length never causes a huge allocation.
*/
#ifndef KL_CODEC_H
#define KL_CODEC_H

#include "klog.h"

/* Codec ids as stored in the low three attribute bits. */
enum {
  KL_CODEC_NONE = 0,
  KL_CODEC_GZIP = 1,
  KL_CODEC_SNAPPY = 2,
  KL_CODEC_LZ4 = 3,
  KL_CODEC_ZSTD = 4
};

/* "none", "gzip", "snappy", "lz4", "zstd", or NULL for an invalid id. */
const char *kl_codec_name(int codec);

/* Decoder state worth keeping across calls: zstd's decompression context
** costs more to create (over 100 KiB allocated and set up) than a 16 KiB
** batch costs to decode.  Zero-initialise; release with kl_codec_ctx_free.
** One context serves one caller at a time (each reader keeps its own). */
typedef struct kl_codec_ctx {
  void *zstd;               /* ZSTD_DCtx, made on first use */
} kl_codec_ctx;
void kl_codec_ctx_free(kl_codec_ctx *ctx);

/*
** Decompress n bytes at src with the given codec into out (out->len is set;
** previous content is discarded), with the state kept in ctx (NULL: none
** kept, made and dropped per call).  `magic` is the message format of the
** batch: for lz4 and magic 0 the frame header checksum is not verified
** (Kafka 0.8/0.9 computed it over the wrong bytes).  Snappy accepts the
** xerial framed stream (chunks of raw blocks, concatenated streams too) and
** falls back to one raw block when the xerial magic is absent.  gzip accepts
** concatenated members.  Errors: KL_CORRUPT (with a message in err, naming
** the codec and what was wrong, but no file: the caller prefixes that),
** KL_NOMEM, KL_UNSUPPORTED (invalid codec id).
**
** Details a caller may rely on:
**   - out is never grown past `limit` (a buffer already larger from an
**     earlier call is kept, not shrunk); on error out->len is 0 and out
**     keeps its memory, released as always by kl_buf_free.
**   - An empty input is KL_CORRUPT for every codec but none (every real
**     stream has a header); KL_CODEC_NONE copies src.
**   - Bytes after a complete stream follow Kafka's Java readers: ignored
**     for gzip (when they do not start another member) and lz4 (after the
**     end mark), decoded as more stream for snappy and zstd.
**   - Safe on any input: lengths are checked before use, so hostile or
**     truncated data yields KL_CORRUPT, never an overread.
*/
kl_rc kl_codec_decompress(const kl_env *env, kl_codec_ctx *ctx, int codec, int magic,
                          const uint8_t *src, size_t n, kl_buf *out,
                          size_t limit, kl_err *err);

/*
** kl_codec_decompress, stopping once out holds at least `need` bytes where
** the codec allows it: lz4 within a block (liblz4's partial decoding),
** gzip anywhere (inflate is given only the room asked for), zstd after the
** block holding byte need - 1 (streaming, for one frame of a known content
** size above one block, 128 KiB, and at most 8 MiB, which the context then
** keeps a window of; any other decodes whole); snappy and none always
** decode whole.
** *whole = 1 when out holds everything the stream decodes to (then
** out->len may be below need: the stream is shorter); 0 when it stopped,
** and then what follows the bytes decoded was not looked at, so errors
** there go unseen: for a batch whose records decoded whole once (a
** lookup of one record).  need SIZE_MAX is kl_codec_decompress.
*/
kl_rc kl_codec_decompress_prefix(const kl_env *env, kl_codec_ctx *ctx, int codec, int magic,
                                 const uint8_t *src, size_t n, kl_buf *out, size_t limit,
                                 size_t need, int *whole, kl_err *err);

/*
** Compress n bytes at src into out (out->len is set) in the form Kafka's
** Java client writes and reads: gzip single member, snappy xerial framing,
** lz4 frame with independent 64 KiB blocks and FLG 0x60 BD 0x40 (for magic
** 0 with the legacy header checksum), zstd one frame.  Used by the batch
** encoder (tests, benchmarks, INSERT).  KL_CODEC_NONE copies.  Errors:
** KL_NOMEM, KL_UNSUPPORTED (invalid codec id).
*/
kl_rc kl_codec_compress(const kl_env *env, int codec, int magic,
                        const uint8_t *src, size_t n, kl_buf *out,
                        kl_err *err);

/* Encoder state worth keeping across batches (zstd's compression context,
** allocated through env like every zstd context).  Zero-initialise;
** release with kl_codec_cctx_free. */
typedef struct kl_codec_cctx {
  void *zstd;               /* ZSTD_CCtx, made on first use */
} kl_codec_cctx;
void kl_codec_cctx_free(kl_codec_cctx *cctx);

/* kl_codec_compress keeping its state in cctx (NULL: made and freed per
** call). */
kl_rc kl_codec_compress_ctx(const kl_env *env, kl_codec_cctx *cctx, int codec, int magic,
                            const uint8_t *src, size_t n, kl_buf *out, kl_err *err);

#endif
