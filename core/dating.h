/*
** dating.h - what dating a closed segment reads of its files, and reading
** it for many segments on a helper thread.
**
** A timestamp seek on a fresh log dates every segment before the answer
** (log.c: timestamps need not grow across segments, so each must be shown
** to lie below the target), and a closed segment is dated from its
** .timeindex's last entry (scan.h kl_scan_max_timestamp).  Those reads are
** five system calls a segment, about 5 us of kernel time, and over a log
** of thousands of segments they are most of the seek.  A batch of them
** through io_uring is no faster (its statx always runs on the kernel's own
** worker threads, and each handover costs more than the call), but the
** calls of different segments are independent: a second thread reading
** the facts of the segments ahead, while the seek's thread judges those
** read already, halves the wait on a machine with a core to spare.
**
** The reading (kl_date_fetch) touches nothing but the facts it fills and
** the env's system calls; judging them (scan.c) stays on the caller's
** thread, so that what is dated, what is counted and every error are what
** the seek gives without the helper.
*/
#ifndef KL_DATING_H
#define KL_DATING_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "klog.h"

/* The time-index entries a dating reads: the last and the one before. */
#define KL_DATE_TAIL 24

/* What the five calls found: the .log's stat, the .timeindex's open, fstat,
** read of its last entries (when its size and time allow), close. */
typedef struct kl_date_facts {
  int state;                /* KL_DATE_* */
  int log_reg;              /* the .log: a regular file */
  int64_t log_size;
  uint64_t log_dev, log_ino;
  struct timespec log_mtim;
  int64_t ti_size;          /* the .timeindex */
  struct timespec ti_mtim;
  int read;                 /* a read was made (counted by the judge) */
  size_t n;                 /* bytes it gave of its last entries: 0 (none or
                            ** failed), 12 or 24 */
  uint8_t e[KL_DATE_TAIL];
} kl_date_facts;

enum {
  KL_DATE_UNREAD = 0,       /* not fetched (a helper stopped first) */
  KL_DATE_NOLOG,            /* the .log's stat failed */
  KL_DATE_NOINDEX,          /* the .timeindex did not open */
  KL_DATE_READ              /* the fields above are set */
};

/* Read the facts of the segment whose files are log_path and ti_path
** (through env's system calls; safe on any thread).  With dirfd >= 0, the
** directory holding both, whose path is their first off bytes, the calls
** name the files under it (os.h kl_os_open_at). */
void kl_date_fetch(const kl_env *env, int dirfd, size_t off, const char *log_path,
                   const char *ti_path, kl_date_facts *f);

/* Facts of many segments read ahead by one helper thread, while the caller
** takes them in order (kl_date_get).  Each thread takes chunks of segments
** in order; the caller never waits for the helper: a segment whose chunk
** no one has taken it reads with its chunk, and while the helper is reading
** the chunk it wants, it reads the next free chunk instead (so the threads
** take the chunks in turn); with none left, it reads that segment again on
** its own (on a loaded machine the helper may not be running at all). */
typedef struct kl_date_pass kl_date_pass;

/* Segments with more undated ones ahead than this are worth a thread
** (starting and joining it costs about ten segments' calls). */
#define KL_DATE_PASS_MIN 64

/* A pass over n segments: the paths of segment i are paths[2 i] (.log) and
** paths[2 i + 1] (.timeindex), NULL for a segment that is not dated from
** its files (its facts stay KL_DATE_UNREAD); the strings must stay valid
** until kl_date_end, and dirfd (-1, or the directory whose path is their
** first off bytes: kl_date_fetch) open.  The helper starts at once (with
** if_idle, only when a core is idle now: fewer threads running than cores
** online; on a busy machine a helper only takes turns with the caller, and
** joining it waits for the scheduler to run it again).  KL_BUSY when none
** is, KL_NOMEM, or KL_IO when the thread cannot start: the caller dates
** the segments itself. */
kl_rc kl_date_begin(const kl_env *env, int dirfd, size_t off, const char *const *paths,
                    size_t n, int if_idle, kl_date_pass **out);

/* The facts of segment i (i < n; taken in increasing order), valid until
** the next call. */
const kl_date_facts *kl_date_get(kl_date_pass *p, size_t i);

/* Of the facts kl_date_get gave, those the helper read (for the caller's
** accounting). */
size_t kl_date_helped(const kl_date_pass *p);

/* Stop the helper (it ends within its current segment), join it, free
** the pass (NULL: nothing). */
void kl_date_end(kl_date_pass *p);

#endif
