/*
** klog.h - the kafkalog storage engine: shared vocabulary.
**
** Every core module includes this header.  It defines the result codes
** (kl_rc), the injectable allocator (kl_env), the error record that carries
** a human-readable message naming the file and byte position of a problem
** (kl_err), a growable byte buffer (kl_buf) and the work counters (kl_stats)
** that tests read to prove that a lookup did only the work it should.
**
** The core is pure C11 plus POSIX; it never includes sqlite3 headers.  The
** mapping from kl_rc to SQLite result codes lives in vtab/ only.
**
** Module map (one on-disk structure or concept per .c/.h pair):
**   crc32c.h    CRC-32C (Castagnoli) for v2 batches
**   utf8.h      the UTF-8 rule for text given to SQLite
**   timestamp.h epoch milliseconds to and from ISO-8601 UTC text
**   codec.h     gzip / snappy / lz4 / zstd decompression and compression
**   batch.h     record batch v2 and legacy v0/v1 messages: parse, verify,
**               iterate records
**   builder.h   the checked encoder of v2 batches
**   os.h        the system calls on files and directories, as one table
**   file.h      positioned reads of files, and windows of them in memory
**   index.h     .index / .timeindex read in pieces, two-zone floor search
**   skiplist.h  base offset -> segment, floor lookup
**   segment.h   one <base>.log with its indexes: files, what is known of it
**   scan.h      Kafka's scan rules: the walker every reader uses, damage,
**               the salvage map, seeks by offset and time, segment tails
**   log.h       a partition directory: segments, lookups
**   cursor.h    bounded forward and backward iteration over records
**   ahead.h     read-ahead: batches read and decompressed on worker threads
**   check.h     the integrity check
**   commit.h    the commit record: where a written log's committed data ends
**   logconfig.h the file keeping a written log's write options
**   writer.h    appends by Kafka's rules, in transactions, with recovery and
**               retention
*/
#ifndef KL_KLOG_H
#define KL_KLOG_H

#include <stddef.h>
#include <stdint.h>

/* Result codes.  KL_DONE means "no more items" and is not an error. */
typedef enum kl_rc {
  KL_OK = 0,
  KL_DONE,        /* iteration finished normally */
  KL_NOTFOUND,    /* a lookup found nothing (not an error) */
  KL_NOMEM,       /* the allocator failed */
  KL_IO,          /* a system call failed: open, stat, mmap, read, write */
  KL_CORRUPT,     /* bytes on disk violate the format */
  KL_RANGE,       /* an argument lies outside what the structure holds */
  KL_READONLY,    /* a write was attempted on a read-only object */
  KL_BUSY,        /* the directory is locked by someone else */
  KL_MISUSE,      /* the caller broke an API contract */
  KL_UNSUPPORTED, /* valid data this build cannot handle (e.g. codec) */
  KL_FULL,        /* a batch has no room for this record: finish it first */
  KL_NOSPACE,     /* a write found the disk (or the quota) full */
  KL_CANTOPEN     /* the path given is not there, not a directory, or not a
                  ** partition or log directory */
} kl_rc;

/* Name of a result code, e.g. "KL_CORRUPT".  Never NULL. */
const char *kl_rc_name(kl_rc rc);

/*
** The hooks through which the core allocates memory and reaches files.
** xRealloc behaves like realloc(p, n) except that n==0 frees p and returns
** NULL; ud is passed to it untouched.  os is the table of system calls on
** files and directories (os.h).  A NULL kl_env pointer, or a NULL hook,
** means the C library and POSIX.  Tests install hooks that fail the Nth
** allocation or system call; inside SQLite the allocator is SQLite's.
*/
struct kl_os;
typedef struct kl_env {
  void *(*xRealloc)(void *ud, void *p, size_t n);
  void *ud;
  const struct kl_os *os;
} kl_env;

void *kl_malloc(const kl_env *env, size_t n);            /* NULL on failure */
void *kl_realloc(const kl_env *env, void *p, size_t n);  /* NULL on failure, p intact */
void kl_free(const kl_env *env, void *p);
char *kl_strdup(const kl_env *env, const char *s);

/*
** The error record.  A failing core call fills it (if the caller passed
** one) with the code and a message such as
**   "00000000000000004096.log: position 81920: CRC mismatch (...)".
** The first error wins: kl_err_set does nothing if rc is already set, so the
** deepest, most precise message survives as the error travels up.
*/
typedef struct kl_err {
  kl_rc rc;        /* KL_OK until an error is recorded */
  char msg[512];   /* NUL-terminated human-readable message */
} kl_err;

/* Record an error (printf-style message) and return rc. */
kl_rc kl_err_set(kl_err *err, kl_rc rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void kl_err_clear(kl_err *err);

/*
** A growable byte buffer owned by whoever holds it; kl_buf_free releases the
** memory.  Decompression output lands here and is reused across batches so
** that a scan allocates only when a batch is larger than any seen before.
*/
typedef struct kl_buf {
  uint8_t *p;   /* data, or NULL */
  size_t len;   /* bytes in use */
  size_t cap;   /* bytes allocated */
} kl_buf;

/* Make room for at least n bytes in total (len is unchanged). */
kl_rc kl_buf_reserve(const kl_env *env, kl_buf *b, size_t n);
kl_rc kl_buf_append(const kl_env *env, kl_buf *b, const void *p, size_t n);
void kl_buf_free(const kl_env *env, kl_buf *b);

/*
** Work counters.  Each counter only grows; a reader adds to the kl_stats it
** was given (a cursor's, a statement's, a connection's).  They let tests
** assert that pushdown happened (an offset lookup on a huge log decodes a
** couple of batches) without measuring time.
*/
typedef struct kl_stats {
  uint64_t segments_opened;     /* segment .log files opened */
  uint64_t index_probes;        /* index entries read by searches */
  uint64_t index_fallbacks;     /* searches that had to scan a .log from 0 */
  uint64_t batch_headers;       /* batch/message headers parsed */
  uint64_t batches_decoded;     /* batches whose records were iterated */
  uint64_t batches_skipped;     /* batches skipped on header data alone */
  uint64_t records_decoded;     /* records produced by batch iteration */
  uint64_t bytes_decompressed;  /* output bytes of decompression */
  uint64_t crc_checks;          /* CRCs verified */
  uint64_t bytes_read;          /* bytes read from files */
  uint64_t reads;               /* read calls made */
  uint64_t values_decoded;      /* keys and values decoded to JSON */
  uint64_t schemas_parsed;      /* registry schemas parsed for decoding */
  uint64_t batches_ahead;       /* of batches_decoded, those read and
                                ** decompressed ahead on a worker thread
                                ** (ahead.h) */
  uint64_t batches_reclaimed;   /* batches queued for the workers that the
                                ** scan opened itself, a worker on them not
                                ** running (ahead.h kl_ahead_take) */
  uint64_t dirs_listed;         /* directories read to list partitions or
                                ** segments (log directories, partitions) */
  uint64_t partitions_listed;   /* partition entries listings kept */
  uint64_t logs_opened;         /* partition directories opened as logs */
  uint64_t sort_passes;         /* reads of the matching records' pairs
                                ** for ORDER BY timestamp (one, unless they
                                ** outgrow the sort_bytes option) */
  uint64_t threads_started;     /* read-ahead workers started (ahead.h):
                                ** once per table, not once per scan */
  uint64_t segments_dated;      /* closed segments dated by their time
                                ** index's last entry, their .log not
                                ** opened (scan.h kl_scan_max_timestamp) */
  uint64_t segments_mapped;     /* .log files mapped (the mmap option): their
                                ** bytes are copied without a system call */
  uint64_t bytes_mapped;        /* bytes copied from mapped .log files (not
                                ** in reads and bytes_read) */
  uint64_t segments_helped;     /* of the segments a seek dated or read the
                                ** tail of, those whose files a helper
                                ** thread read (dating.h) */
  uint64_t segments_skipped;    /* segments a scan with time bounds passed
                                ** over unopened, every record's timestamp
                                ** in them known to miss the bounds
                                ** (segment.h kl_segment_facts_range) */
} kl_stats;

/* Largest allocation a length field on disk may cause: decompressed batches
** beyond this are refused as corrupt rather than trusted. */
#ifndef KL_MAX_BATCH_BYTES /* fuzzing builds lower it (CMake KL_FUZZ) */
#define KL_MAX_BATCH_BYTES ((size_t)256 << 20)
#endif

/*
** Offsets and timestamps come from disk and from SQL, so a sum or
** difference of two of them may not fit in 64 bits.  These give the exact
** result when it fits, else INT64_MAX or INT64_MIN on the side it left
** the range: a value past every one a log can hold, which keeps the order
** of the results (a search over them stays correct) and is never a
** record's offset (a batch's next offset must fit, batch.c).
*/
static inline int64_t kl_add_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static inline int64_t kl_sub_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* Big-endian readers; p must hold the bytes (callers check bounds first). */
static inline int16_t kl_get_i16(const uint8_t *p) {
  return (int16_t)(uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}
static inline uint32_t kl_get_u32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline int32_t kl_get_i32(const uint8_t *p) {
  return (int32_t)kl_get_u32(p);
}
static inline int64_t kl_get_i64(const uint8_t *p) {
  return (int64_t)(((uint64_t)kl_get_u32(p) << 32) | kl_get_u32(p + 4));
}
static inline void kl_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v;
}
static inline void kl_put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);  p[3] = (uint8_t)v;
}
static inline void kl_put_u64(uint8_t *p, uint64_t v) {
  kl_put_u32(p, (uint32_t)(v >> 32)); kl_put_u32(p + 4, (uint32_t)v);
}

#endif /* KL_KLOG_H */
