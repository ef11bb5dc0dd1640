/*
** ahead.h - read-ahead for forward scans: the batches a scan will decode
** next, read and decompressed on worker threads while the caller consumes
** the ones before (as SQLite's sorter sorts on worker threads, PRAGMA
** threads).  A compressed log's scan otherwise decompresses on the one
** thread SQLite gives a query, while other cores idle.
**
** The caller (one thread, the cursor's) queues batches in the order it
** will open their records (kl_ahead_push) and takes each when its turn
** comes (kl_ahead_take).  A worker reads the batch's bytes (kl_file_read,
** through the env's system calls) and opens its records (kl_records_open:
** the decompression) into buffers of its slot; it touches nothing else:
** no segment, no cache, no counter but the slot's, which the caller adds
** to its own when it takes the batch.  Whatever a worker fails at (a read,
** a bad stream, memory) it does not report: the take says "not here" and
** the caller does that batch itself, so the errors a scan gives, their
** words and their place among the rows, are those of a scan without
** threads.  A take whose batch is not done yet runs a job itself, in the
** same way, when one is queued that no worker has started (that batch, or
** one after it while a worker holds that one), and waits only when every
** queued job is under way, and then no longer than a worker running
** needs (KL_AHEAD_PATIENCE_US): past it the worker is not running (a busy
** machine's other core), and the caller takes the batch back, opening it
** itself; the worker's work on it is dropped when it ends.  So a scan
** whose workers are behind or not scheduled is not slower than one on
** its own thread.
**
** Memory: at most `slots` batches are queued; a worker starts a batch only
** while the batches done and not yet taken hold less than `budget` bytes,
** except the next one to be taken, which is always started.  A slot whose
** buffers grew past budget / slots / 2 gives them back when it is reused,
** so that idle slots keep at most the budget; a release gives back every
** slot's buffers, so that between scans the ring holds no batch.  Batches
** smaller than KL_AHEAD_MIN_BATCH are left to the caller.
**
** Lifetime: the workers start on the first push and then wait, parked,
** for the next job, scan after scan, until kl_ahead_free joins them: a
** ring is meant to be kept by whoever outlives many scans (a table), since
** starting and joining a thread costs a short scan more than it saves.
** One scan at a time uses it: each claims it for itself (kl_ahead_claim)
** and releases it when it ends; a scan that finds it claimed by another
** reads on its own.
**
** Thread safety: the env's allocator and system calls are called from the
** workers (SQLite's allocator is thread-safe unless SQLite is built or
** configured single-threaded: the caller then uses no threads).  The file
** of a queued batch must stay open until kl_ahead_reset or the batch is
** taken: reset waits for a batch a worker is reading.
*/
#ifndef KL_AHEAD_H
#define KL_AHEAD_H

#include "batch.h"
#include "file.h"
#include "klog.h"

typedef struct kl_ahead kl_ahead;

enum {
  KL_AHEAD_SLOTS = 8,                    /* batches queued at most */
  KL_AHEAD_BUDGET = 4 << 20,             /* bytes of batches done, not taken */
  KL_AHEAD_MAX_THREADS = 16,
  KL_AHEAD_MIN_BATCH = 512,              /* smaller batches cost a worker
                                         ** more to hand over than to open */
  KL_AHEAD_PATIENCE_US = 250             /* a take waits this long for a
                                         ** worker on its batch: a 116 KiB
                                         ** zstd batch decodes in about 100 us;
                                         ** a worker not running is away for
                                         ** a scheduler's slice, milliseconds */
};

/* A read-ahead of `threads` workers (1 to KL_AHEAD_MAX_THREADS; started on
** the first push).  KL_NOMEM. */
kl_rc kl_ahead_new(const kl_env *env, int threads, kl_ahead **out);
/* Drop what is queued, stop and join the workers, free everything. */
void kl_ahead_free(kl_ahead *a);

/* Claim the ring for user's scan, with `threads` workers (as for
** kl_ahead_new; a ring holding another count joins its workers first,
** which start again on the next push), counting the workers it starts
** into stats (NULL: not counted): 1 when it was free or user's already, 0
** when another user holds it.  Callers claim and release on their own
** side (a connection's thread, one at a time). */
int kl_ahead_claim(kl_ahead *a, const void *user, int threads, kl_stats *stats);
/* user's scan is done with the ring (nothing if user does not hold it):
** what is queued is dropped, every slot's buffers are given back, the
** workers stay parked for the next claim. */
void kl_ahead_release(kl_ahead *a, const void *user);
/* The user holding the ring, or NULL. */
const void *kl_ahead_user(const kl_ahead *a);
/* The workers wanted (kl_ahead_new's or the last claim's, bounded). */
int kl_ahead_threads(const kl_ahead *a);

/* How long a take waits for a worker on its batch before taking it back:
** KL_AHEAD_PATIENCE_US unless set; -1, as long as the worker takes (for
** tests that count what the workers do, on a machine whose scheduler may
** leave a worker waiting). */
void kl_ahead_patience(kl_ahead *a, long us);

/* Can another batch be queued now? */
int kl_ahead_room(kl_ahead *a);

/* Queue batch b (its header; b->bytes is not used) of file f, which owner
** names (the caller's identity for it, compared by kl_ahead_take).  f is
** copied; its descriptor must stay open as said above.  0 when it was not
** queued (no room, or the workers could not be started). */
int kl_ahead_push(kl_ahead *a, const void *owner, const kl_file *f, const kl_batch *b);

/* The records of batch b of owner, when it is the oldest batch queued:
** once it is done (the caller runs it, or a later job no worker has
** started, rather than wait), *it (its b.bytes too) points into
** memory valid until the next take or reset, and the work done for it is
** added to stats (batches_ahead counts it).  KL_NOTFOUND when a worker
** failed on it, when a worker on it did not finish within
** KL_AHEAD_PATIENCE_US (kl_ahead_patience; the batch is taken back,
** batches_reclaimed counts it, the queue after it stays), when it lies
** before the oldest batch queued of owner (a batch the caller chose not to
** queue: the queue stays), or when it is another batch (the scan went
** elsewhere: everything queued is dropped): the caller opens the batch
** itself. */
kl_rc kl_ahead_take(kl_ahead *a, const void *owner, const kl_batch *b, kl_records *it,
                    kl_stats *stats);

/* Drop every batch queued (the scan jumps, ends or leaves the file),
** waiting for those being read: afterwards no worker reads a file queued
** before. */
void kl_ahead_reset(kl_ahead *a);

/* Batches queued and not taken (for the caller's accounting). */
int kl_ahead_queued(const kl_ahead *a);

#endif
