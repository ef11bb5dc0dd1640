/*
** index.h - the sparse .index (8-byte entries) and .timeindex (12-byte
** entries) files of a segment, and Kafka's two-zone ("warm section") binary
** search over them.
**
** Reading.  Kafka maps its index files; we read them in pieces of 512
** entries, each on first use, and keep the pieces (see file.h: a mapping of
** a file truncated by another process faults).  A search touches a few
** pieces (the warm section is three), so a lookup on a cold index costs a
** few reads and later ones none.  A read that fails marks the index failed
** (kl_index_failed): answers given since then are not to be used, and the
** caller reports the error.
**
** Entry count.  Kafka trusts file length / entry size, which is wrong for a
** live broker's preallocated index (trailing zero slots) and for stale
** entries left behind by a truncation.  We find the real count in O(log n)
** at open: the zero slots form a suffix, so a binary search finds where it
** starts; entries are trimmed further while they point past the .log (their
** positions / offsets are monotonic, so this is a binary search too).
** Slot 0 is special: Kafka writes (base, 0) and (0, base) as real entries
** (a first record at the base offset at position 0, a first timestamp 0),
** twelve zero bytes that look like a preallocated slot.  A zero slot 0 with
** zeros after it is left out of the count and flagged (zero_first); the log
** decides (scan.c).  Garbage that is not caught here is caught where an
** entry is used (scan.c): the batch an entry points to must exist, verify,
** and agree with the entry.
**
** Why two zones: lookups mostly ask for the tail (followers, consumers that
** are caught up).  A plain binary search over the whole file touches pages
** all over it, and which pages changes as the index grows, so tail lookups
** fault cold pages.  Searching only the last 8192 bytes of entries (1024
** offset entries, 682 time entries, at most three 4 KiB pages that every tail
** lookup and every append keeps hot) first, and the cold rest only when the
** target is older, keeps the working set tiny.  Results equal a plain
** binary search; only the probe order differs.
*/
#ifndef KL_INDEX_H
#define KL_INDEX_H

#include "klog.h"

#include "file.h"

enum { KL_INDEX_OFFSET = 8, KL_INDEX_TIME = 12 };  /* kind = entry size */
#define KL_WARM_BYTES 8192
#define KL_INDEX_CHUNK 512        /* entries per piece read */

/* Called for every slot a search reads (benchmarks count pages). */
typedef void (*kl_probe_fn)(void *ud, int64_t slot);

typedef struct kl_index {
  int kind;                 /* KL_INDEX_OFFSET or KL_INDEX_TIME */
  int64_t base;             /* segment base offset */
  const uint8_t *map;       /* the entries in memory (tests, benchmarks),
                            ** or NULL: read from file in pieces */
  size_t map_len;           /* bytes at map */
  kl_file file;             /* the file, when read from disk */
  uint8_t **chunks;         /* pieces read so far (NULL: not yet) */
  int64_t nchunks;
  int failed;               /* a read failed: kl_index_error says what */
  kl_err *ioerr;            /* its message, allocated when it happened
                            ** (NULL if that failed too): a segment holds
                            ** two indexes, and thousands of segments
                            ** would otherwise carry a kilobyte each of
                            ** messages that are almost never written */
  int64_t file_len;         /* file size, -1 when the file is absent */
  int64_t n;                /* live entries */
  int64_t zero_slots;       /* trailing all-zero (preallocated) slots */
  int64_t stale;            /* entries dropped for pointing past the log */
  int unusable;             /* length not a multiple of the entry size */
  int zero_first;           /* slot 0 is zero, zeros follow: for the log to
                            ** decide (it is then counted in zero_slots) */
  kl_probe_fn probe;        /* optional probe hook */
  void *probe_ud;
} kl_index;

/*
** Open the index at path for a segment with the given base offset whose .log
** holds log_size bytes, and count its live entries.  A missing file gives an
** empty index (Kafka >= 2.3 creates index files lazily), not an error.  A
** file whose length is not a multiple of the entry size is marked unusable
** (n = 0; Kafka would rebuild it).  KL_IO if the file exists but cannot be
** read; KL_NOMEM.  path must outlive the index (messages name it).
*/
kl_rc kl_index_open(kl_index *ix, const kl_env *env, int kind, const char *path, int64_t base,
                    int64_t log_size, kl_err *err);
void kl_index_close(kl_index *ix, const kl_env *env);

/* Close the file of an index whose entries are all in memory (at most
** KL_INDEX_KEEP_CHUNKS pieces) and keep them: returns 1.  Else 0, and
** nothing changes.  A segment closed for the bound on open files keeps its
** small indexes this way, so opening it again reopens only its .log. */
#define KL_INDEX_KEEP_CHUNKS 4
int kl_index_keep(kl_index *ix);

/* An index over entries already in memory (len bytes at p, borrowed),
** counted as kl_index_open counts a file. */
void kl_index_mem(kl_index *ix, int kind, const uint8_t *p, size_t len, int64_t base,
                  int64_t log_size);

/* Count the live entries of raw index bytes (see the header comment);
** exposed for tests and the fuzzers. */
int64_t kl_index_count(int kind, const uint8_t *p, size_t len, int64_t base,
                       int64_t log_size, int64_t *zero_slots);

/* Take slot 0, flagged zero_first, as the real entry the log confirmed. */
void kl_index_keep_zero_first(kl_index *ix);

/* A read failed since the index was opened (kl_index_error): answers are
** not to be trusted. */
static inline int kl_index_failed(const kl_index *ix) { return ix->failed; }

/* The failed read's error, set in err (its code returned): what the read
** said, or that memory ran out. */
kl_rc kl_index_error(const kl_index *ix, kl_err *err);

/* The raw bytes of slot i (0 <= i < slots in the file): zeros after a
** failed read. */
const uint8_t *kl_index_slot(const kl_index *ix, int64_t i);

/* Entry accessors (0 <= i < n).  Offset index: absolute offset and file
** position.  Time index: timestamp and absolute offset.  An absolute offset
** past INT64_MAX (a base near 2^63, a garbage relative offset) reads as
** INT64_MAX, which no record has: such an entry never holds (scan.c). */
int64_t kl_index_offset_at(const kl_index *ix, int64_t i);
int64_t kl_index_position_at(const kl_index *ix, int64_t i);
int64_t kl_index_timestamp_at(const kl_index *ix, int64_t i);
int64_t kl_index_time_offset_at(const kl_index *ix, int64_t i);
/* The relative offset slot i stores, as stored (either kind; the checker
** reports one past 31 bits, which Kafka never writes). */
int64_t kl_index_relative_at(const kl_index *ix, int64_t i);

/* An entry's bytes, big-endian as Kafka lays them out; these and the
** accessors above are the only code that knows the layout:
**
**   .index      0 u32 offset - base      4 u32 position in the .log
**   .timeindex  0 i64 timestamp          8 u32 offset - base
**
** kl_index_put_* encode one entry of a segment at base (the writer rolls
** before an offset or position passes 32 bits); kl_index_entry_timestamp
** decodes a .timeindex entry read whole (the last one dates a segment). */
void kl_index_put_offset(uint8_t e[KL_INDEX_OFFSET], int64_t base, int64_t offset,
                         int64_t position);
void kl_index_put_time(uint8_t e[KL_INDEX_TIME], int64_t base, int64_t timestamp,
                       int64_t offset);
int64_t kl_index_entry_timestamp(const uint8_t e[KL_INDEX_TIME]);

/* The search key of slot i: the offset (offset index) or the timestamp
** (time index). */
int64_t kl_index_key(const kl_index *ix, int64_t i);

/*
** Largest slot whose key is <= target, or -1 when none (empty index, or
** target below the first key).  Two-zone search as in behaviour.md 5.3.
** Counts every slot read in stats->index_probes (stats may be NULL).
*/
int64_t kl_index_floor(const kl_index *ix, int64_t target, kl_stats *stats);

/* Smallest slot whose key is >= target, or -1 when none. */
int64_t kl_index_ceiling(const kl_index *ix, int64_t target, kl_stats *stats);

/* The same floor search as a classic whole-range binary search (Kafka
** before 2.1): same answers, different probes.  For the two-zone study. */
int64_t kl_index_floor_classic(const kl_index *ix, int64_t target,
                               kl_stats *stats);

#endif
