/*
** bcache.h - decompressed batches kept for point lookups, within a bound
** on bytes.
**
** A point lookup in a compressed batch decompresses it: LZ4 and gzip up to
** the record sought, zstd a whole block (up to 128 KiB) whatever record is
** sought, and a Kafka producer's zstd batch is one block.  A table whose
** lookups come back to the same batches (a join over neighbouring offsets,
** a prepared lookup in a loop over recent records) finds their bytes here
** instead of decompressing them again.  The .log's bytes themselves are
** not kept: the OS page cache holds them, and reading them again costs one
** system call, not a decompression.
**
** An entry is the batch at (segment identity, position, size) decompressed
** up to some length (a prefix when the codec stopped at the record
** sought).  A segment's identity (kl_segment.uid) is never reused within
** its set, and the table's log cache opens a log afresh (new segments, new
** identities) once its files changed (logcache.h): an entry is as true as
** the batch fact that led to it, and no query meets the bytes of a file as
** it was before an append, a truncation or a replacement.
**
** Least recently used entries go first once the bytes kept (entries and
** their bookkeeping) pass the bound.  A reader that borrows an entry's
** bytes pins it (kl_bcache_get and kl_bcache_adopt pin what they return)
** and releases it when done: a pinned entry is never freed, so the bound
** may be passed by the entries pinned at once (one per cursor reading).
** Not thread-safe: one table's cursors, on SQLite's thread.
*/
#ifndef KL_BCACHE_H
#define KL_BCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "klog.h"

/* A table's bound: 8 MiB of decompressed batches (512 producer batches of
** 16 KiB, or 70 of 500 records of 230 bytes). */
#define KL_BCACHE_BYTES ((size_t)8 << 20)
/* The largest bound a table may ask for (its cache_bytes option): 1 GiB. */
#define KL_BCACHE_MAX_BYTES ((size_t)1 << 30)

typedef struct kl_bcache kl_bcache;
typedef struct kl_bcache_entry kl_bcache_entry;

/* An empty cache of at most max_bytes, allocating through env; NULL when
** out of memory. */
kl_bcache *kl_bcache_new(const kl_env *env, size_t max_bytes);
/* Free it and every entry (none may be pinned any more). */
void kl_bcache_free(kl_bcache *c);

/* The bytes kept of the batch of size bytes at pos in segment uid when
** there are at least need of them: *len of them, pinned in *e (release
** it).  NULL when none or fewer: *len is then what is kept (0 for none). */
const uint8_t *kl_bcache_get(kl_bcache *c, uint64_t uid, int64_t pos, int32_t size, size_t need,
                             size_t *len, kl_bcache_entry **e);

/* Keep buf's bytes (buf->len of them) as the batch's, replacing what was
** kept of it: the entry takes buf's memory, and buf is left with memory of
** an entry evicted to make room (or none), for the caller's next
** decompression.  cheap: the bytes cost little to decompress again (LZ4
** decodes at several GB/s, and stops at the record sought): the entry
** goes behind the others, first to be evicted unless found again, so that
** costly batches (zstd, gzip) are not evicted for it.  Returns the bytes
** kept, pinned in *e; NULL when they could never fit the bound or out of
** memory (buf is then untouched). */
const uint8_t *kl_bcache_adopt(kl_bcache *c, uint64_t uid, int64_t pos, int32_t size, kl_buf *buf,
                               int cheap, kl_bcache_entry **e);

/* Make max_bytes the bound from now on; a lower one evicts least recently
** used entries that no reader holds until the bytes kept are within it. */
void kl_bcache_set_bound(kl_bcache *c, size_t max_bytes);
size_t kl_bcache_bound(const kl_bcache *c);

/* Done with the bytes of e (NULL: nothing). */
void kl_bcache_release(kl_bcache *c, kl_bcache_entry *e);

/* Bytes and entries kept now (pinned ones included). */
size_t kl_bcache_bytes(const kl_bcache *c);
size_t kl_bcache_count(const kl_bcache *c);

#endif
