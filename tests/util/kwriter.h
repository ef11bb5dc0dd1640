/*
** kwriter.h - writes a partition directory the way Kafka's LogSegment.append
** does (behaviour.md sections 2 and 3): one v2 batch per append, an offset
** index entry (last offset, position) and a time index entry whenever more
** than index_interval bytes were appended since the previous entry, a roll
** when the next batch would pass segment_bytes, and the final time index
** entry written on roll and on close.  Transactional batches and markers
** keep a producer state as the broker's does, and an ABORT marker of an
** open transaction appends a .txnindex entry to its segment.  Tests and benchmarks use it to make
** logs of any size; the fixtures (written by Kafka itself) check that it and
** the reader agree with Kafka.
*/
#ifndef KL_KWRITER_H
#define KL_KWRITER_H

#include "batch.h"
#include "builder.h"
#include "klog.h"

typedef struct kw_writer kw_writer;

#define KW_MAX_PRODUCERS 16 /* producers with an open transaction at once */

typedef struct kw_options {
  int64_t segment_bytes;    /* roll threshold (Kafka: segment.bytes) */
  int64_t index_interval;   /* index.interval.bytes */
  int64_t base_offset;      /* first offset of the log */
  int codec;                /* KL_CODEC_* for every batch */
} kw_options;

/* Start writing into the existing empty directory dir. */
kw_writer *kw_open(const char *dir, const kw_options *opt);
/* Append one batch of n records at the next offset (spec may be NULL for a
** plain batch; its base_offset is ignored).  Returns 0 on success. */
int kw_append(kw_writer *w, const kl_batch_spec *spec, const kl_rec_in *recs, int n);
/* A transactional data batch of n (1..16) records of producer pid. */
int kw_append_txn(kw_writer *w, int64_t pid, int n);
/* A marker of producer pid: type 0 ABORT, 1 COMMIT (version 0 key and
** value, coordinator epoch 7). */
int kw_append_marker(kw_writer *w, int64_t pid, int type);
/* A control batch of one record with the given key and value (key or
** value NULL with a negative length for null), for bad markers. */
int kw_append_control(kw_writer *w, int64_t pid, const void *key, int32_t key_len,
                      const void *value, int32_t value_len);
/* Next offset to be written. */
int64_t kw_next_offset(const kw_writer *w);
/* Write out what is buffered, so that a reader sees every batch appended
** so far.  Returns 0 on success. */
int kw_flush(kw_writer *w);
/* Finish the active segment (final time index entry) and free. */
int kw_close(kw_writer *w);

/* A log in a new temporary directory (tag names it; the caller removes
** it with t_rmdir and frees the path): batches of per_batch records, the
** record at offset o with key "k", value "value-<o>" padded with 'x' to
** value_len bytes (when longer) and timestamp ts0 + ts_step * o, in
** segments of about segment_bytes with an index entry every interval
** bytes.  Fails the current test when it cannot. */
char *kw_make_log(const char *tag, int batches, int per_batch, int64_t segment_bytes,
                  int64_t interval, int value_len, int64_t ts0, int64_t ts_step);
/* The partition directory root/name, made, holding n records in batches of
** 5 (the last may be fewer) in segments of about 4 KiB with an index entry
** every 512 bytes: the record at offset o with key "k", value
** "<prefix><o>" and timestamp ts0 + 10 * o.  Fails the current test when
** it cannot. */
void kw_make_part(const char *root, const char *name, int n, int64_t ts0, const char *prefix);
/* kw_make_log of n batches of one record each, segments of about
** segment_bytes, an index entry every 256 bytes, short values and
** timestamps 1700000000000 + offset. */
char *kw_make_log_single(const char *tag, int n, int64_t segment_bytes);

#endif
