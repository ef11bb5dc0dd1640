/*
** ahead.c - read-ahead on worker threads (see ahead.h).
**
** The ring: jobs are numbered as they are pushed; job j lives in slot
** j % nslots.  head is the oldest job not taken, claim the next one a
** worker starts, tail the next one pushed: head <= claim <= tail, and
** tail - head <= nslots (less one while the caller holds a taken slot's
** memory).  One mutex guards the ring's numbers and every slot's state;
** a slot's buffers belong to whoever its state says (a worker while
** S_BUSY, the caller otherwise), so they are used outside the lock.
*/
#include "ahead.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "codec.h"

enum {
  S_FREE,                   /* unused (or the caller's, once taken) */
  S_QUEUED,                 /* pushed, no worker has started it */
  S_BUSY,                   /* a worker reads and opens it */
  S_DONE,                   /* its records are open */
  S_FAILED,                 /* the worker could not: the caller will */
  S_ORPHAN                  /* a worker reads it, but the caller took it
                            ** back (kl_ahead_take): freed when it ends */
};

typedef struct slot {
  int state;                /* S_* */
  const void *owner;        /* as pushed */
  kl_file file;             /* a copy of the file's handle */
  kl_batch b;               /* the batch; b.bytes once read */
  kl_buf raw;               /* its bytes */
  kl_buf out;               /* its records, decompressed */
  kl_records it;            /* opened on them */
  kl_stats st;              /* the work done for it */
  size_t held;              /* bytes it holds once done */
} slot;

struct kl_ahead {
  const kl_env *env;
  pthread_mutex_t mu;
  pthread_cond_t work;      /* a job can be started, or stop */
  pthread_cond_t done;      /* a job ended */
  slot ring[KL_AHEAD_SLOTS];
  uint64_t head, claim, tail;
  size_t held;              /* bytes of jobs done, not taken */
  int taken;                /* the caller holds slot (head - 1)'s memory */
  int busy;                 /* jobs workers are on */
  int stop;                 /* workers leave */
  int nthreads, started;    /* workers wanted; started (-1: could not) */
  const void *user;         /* the scan that claimed it, or NULL (the
                            ** callers' side only: no lock) */
  kl_stats *stats;          /* its counters (workers started), or NULL */
  kl_codec_ctx ctx;         /* the caller's, for the jobs it runs itself */
  long patience;            /* us a take waits for a worker (-1: as long
                            ** as it takes) */
  pthread_t th[KL_AHEAD_MAX_THREADS];
};

#define SLOT(a, j) (&(a)->ring[(j) % KL_AHEAD_SLOTS])

/* The monotonic clock's time us microseconds from now (the done
** condition's clock). */
static struct timespec deadline(long us) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += us * 1000;
  t.tv_sec += t.tv_nsec / 1000000000;
  t.tv_nsec %= 1000000000;
  return t;
}

/* Workers wanted: 1 to KL_AHEAD_MAX_THREADS. */
static int bounded(int threads) {
  return threads < 1 ? 1 : threads > KL_AHEAD_MAX_THREADS ? KL_AHEAD_MAX_THREADS : threads;
}

kl_rc kl_ahead_new(const kl_env *env, int threads, kl_ahead **out) {
  kl_ahead *a = kl_malloc(env, sizeof *a);
  *out = a;
  if (!a) return KL_NOMEM;
  memset(a, 0, sizeof *a);
  a->env = env;
  a->nthreads = bounded(threads);
  a->patience = KL_AHEAD_PATIENCE_US;
  if (pthread_mutex_init(&a->mu, NULL) != 0) {
    kl_free(env, a);
    *out = NULL;
    return KL_NOMEM;
  }
  if (pthread_cond_init(&a->work, NULL) != 0) {
    pthread_mutex_destroy(&a->mu);
    kl_free(env, a);
    *out = NULL;
    return KL_NOMEM;
  }
  pthread_condattr_t ca;
  int ok = pthread_condattr_init(&ca) == 0;
  if (ok) {
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(&a->done, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!ok) {
    pthread_cond_destroy(&a->work);
    pthread_mutex_destroy(&a->mu);
    kl_free(env, a);
    *out = NULL;
    return KL_NOMEM;
  }
  return KL_OK;
}

/* Read and open job s (a worker, outside the lock). */
static int run_job(const kl_env *env, kl_codec_ctx *ctx, slot *s) {
  kl_err err = {0};
  size_t n = (size_t)s->b.size;
  memset(&s->st, 0, sizeof s->st);
  if (kl_buf_reserve(env, &s->raw, n) != KL_OK) return 0;
  if (kl_file_read(&s->file, s->b.position, s->raw.p, n, &err) != KL_OK) return 0;
  s->raw.len = n;
  s->st.reads++;
  s->st.bytes_read += n;
  /* The bytes must be the batch queued, whatever happened to the file
  ** since (its descriptor closed and reused, the file rewritten): its
  ** header and its CRC are checked again here, off the caller's thread,
  ** and not counted (the caller checked them once). */
  kl_batch h;
  if (kl_batch_parse(s->raw.p, n, &h, &err) != KL_OK || h.size != s->b.size ||
      h.magic != s->b.magic || h.crc != s->b.crc || h.last_offset != s->b.last_offset) {
    return 0;
  }
  s->b.bytes = s->raw.p;
  if (kl_batch_verify(&s->b, &err) != KL_OK) return 0;
  if (kl_records_open(&s->it, env, ctx, &s->b, &s->out, &s->st, &err) != KL_OK) return 0;
  s->held = s->raw.cap + s->out.cap;
  return 1;
}

/* May a worker start the next job?  The one the caller waits for next
** always; later ones within the budget. */
static int startable(const kl_ahead *a) {
  if (a->claim >= a->tail) return 0;
  return a->claim == a->head || a->held < KL_AHEAD_BUDGET;
}

/* Give back the memory of a slot that grew past its share. */
static void trim(kl_ahead *a, slot *s) {
  size_t share = KL_AHEAD_BUDGET / KL_AHEAD_SLOTS / 2;
  if (s->raw.cap > share) kl_buf_free(a->env, &s->raw);
  if (s->out.cap > share) kl_buf_free(a->env, &s->out);
  s->state = S_FREE;
}

/* Start the next job and run it (lock held on entry and on return; a
** worker, or the caller while it would otherwise wait). */
static void run_next(kl_ahead *a, kl_codec_ctx *ctx) {
  slot *s = SLOT(a, a->claim);
  a->claim++;
  s->state = S_BUSY;
  a->busy++;
  pthread_mutex_unlock(&a->mu);
  int ok = run_job(a->env, ctx, s);
  pthread_mutex_lock(&a->mu);
  a->busy--;
  if (s->state == S_ORPHAN) {
    trim(a, s); /* the caller read it itself */
  } else {
    s->state = ok ? S_DONE : S_FAILED;
    if (ok) a->held += s->held;
  }
  pthread_cond_broadcast(&a->done);
}

static void *worker(void *arg) {
  kl_ahead *a = arg;
  kl_codec_ctx ctx = {0};
  pthread_mutex_lock(&a->mu);
  for (;;) {
    while (!a->stop && !startable(a)) pthread_cond_wait(&a->work, &a->mu);
    if (a->stop) break;
    run_next(a, &ctx);
  }
  pthread_mutex_unlock(&a->mu);
  kl_codec_ctx_free(&ctx);
  return NULL;
}

/* Start the workers (caller, without the lock: none runs yet). */
static int start(kl_ahead *a) {
  if (a->started) return a->started > 0;
  int n = 0;
  while (n < a->nthreads && pthread_create(&a->th[n], NULL, worker, a) == 0) n++;
  a->started = n > 0 ? n : -1;
  if (a->stats) a->stats->threads_started += (uint64_t)n;
  return n > 0;
}

/* The caller is done with the slot it took (lock held). */
static void release_taken(kl_ahead *a) {
  if (!a->taken) return;
  a->taken = 0;
  trim(a, SLOT(a, a->head - 1));
}

/* Room for another job (lock held): a slot a worker still holds for a
** batch taken back (S_ORPHAN) stays its until the worker is done. */
static int room(const kl_ahead *a) {
  return a->started >= 0 && a->tail - a->head + (uint64_t)a->taken < KL_AHEAD_SLOTS &&
         SLOT(a, a->tail)->state == S_FREE;
}

int kl_ahead_room(kl_ahead *a) {
  pthread_mutex_lock(&a->mu);
  int r = room(a);
  pthread_mutex_unlock(&a->mu);
  return r;
}

int kl_ahead_queued(const kl_ahead *a) { return (int)(a->tail - a->head); }

int kl_ahead_push(kl_ahead *a, const void *owner, const kl_file *f, const kl_batch *b) {
  if (!start(a)) return 0;
  pthread_mutex_lock(&a->mu);
  if (!room(a)) {
    pthread_mutex_unlock(&a->mu);
    return 0;
  }
  slot *s = SLOT(a, a->tail);
  s->owner = owner;
  s->file = *f;
  /* A worker reads through the descriptor, never a mapping: the segment
  ** may close (and unmap) while the job waits. */
  s->file.map = NULL;
  s->b = *b;
  s->b.bytes = NULL;
  s->held = 0;
  s->state = S_QUEUED;
  a->tail++;
  pthread_cond_signal(&a->work);
  pthread_mutex_unlock(&a->mu);
  return 1;
}

/* Drop the jobs from head on (lock held), waiting for those started. */
static void drop_all(kl_ahead *a) {
  release_taken(a);
  a->claim = a->tail; /* no worker starts another */
  while (a->busy > 0) pthread_cond_wait(&a->done, &a->mu);
  for (uint64_t j = a->head; j < a->tail; j++) trim(a, SLOT(a, j));
  a->head = a->tail;
  a->held = 0;
}

kl_rc kl_ahead_take(kl_ahead *a, const void *owner, const kl_batch *b, kl_records *it,
                    kl_stats *stats) {
  pthread_mutex_lock(&a->mu);
  release_taken(a);
  if (a->head == a->tail) {
    pthread_mutex_unlock(&a->mu);
    return KL_NOTFOUND;
  }
  slot *s = SLOT(a, a->head);
  if (s->owner == owner && s->b.position > b->position) {
    /* Not queued (the caller passes over small batches): the queue
    ** stays for the batches after it. */
    pthread_mutex_unlock(&a->mu);
    return KL_NOTFOUND;
  }
  if (s->owner != owner || s->b.position != b->position || s->b.size != b->size) {
    drop_all(a);
    pthread_mutex_unlock(&a->mu);
    return KL_NOTFOUND;
  }
  struct timespec until = {0, 0};
  while (s->state == S_QUEUED || s->state == S_BUSY) {
    /* Rather than wait, the caller runs a job no worker has started: this
    ** one, or one after it while a worker is on this one.  A worker that
    ** is behind then never leaves the scan slower than on its own thread;
    ** one that has not finished within KL_AHEAD_PATIENCE_US is not
    ** running (a busy machine's other core), and its batch is taken back. */
    if (startable(a)) {
      run_next(a, &a->ctx);
      continue;
    }
    if (a->patience < 0) {
      pthread_cond_wait(&a->done, &a->mu);
      continue;
    }
    if (!until.tv_sec && !until.tv_nsec) until = deadline(a->patience);
    if (pthread_cond_timedwait(&a->done, &a->mu, &until) == ETIMEDOUT && s->state == S_BUSY) {
      s->state = S_ORPHAN;
      a->head++;
      pthread_mutex_unlock(&a->mu);
      stats->batches_reclaimed++;
      return KL_NOTFOUND;
    }
  }
  int ok = s->state == S_DONE;
  if (ok) a->held -= s->held;
  a->head++;
  a->taken = 1;
  pthread_cond_broadcast(&a->work); /* the budget may admit another job */
  pthread_mutex_unlock(&a->mu);
  if (!ok) return KL_NOTFOUND;
  *it = s->it;
  stats->reads += s->st.reads;
  stats->bytes_read += s->st.bytes_read;
  stats->batches_decoded += s->st.batches_decoded;
  stats->bytes_decompressed += s->st.bytes_decompressed;
  stats->batches_ahead++;
  return KL_OK;
}

/* Stop and join the workers (nothing queued or busy): none runs after. */
static void join_workers(kl_ahead *a) {
  pthread_mutex_lock(&a->mu);
  a->stop = 1;
  pthread_cond_broadcast(&a->work);
  pthread_mutex_unlock(&a->mu);
  for (int i = 0; i < a->started; i++) pthread_join(a->th[i], NULL);
  a->started = 0;
  a->stop = 0;
}

int kl_ahead_claim(kl_ahead *a, const void *user, int threads, kl_stats *stats) {
  if (a->user && a->user != user) return 0;
  if (!a->user && bounded(threads) != a->nthreads) {
    kl_ahead_reset(a);
    join_workers(a);
    a->nthreads = bounded(threads);
  }
  a->user = user;
  a->stats = stats;
  return 1;
}

void kl_ahead_patience(kl_ahead *a, long us) { a->patience = us; }

const void *kl_ahead_user(const kl_ahead *a) { return a->user; }
int kl_ahead_threads(const kl_ahead *a) { return a->nthreads; }

/* Every slot's buffers given back (lock held, nothing queued or busy). */
static void free_slots(kl_ahead *a) {
  for (int i = 0; i < KL_AHEAD_SLOTS; i++) {
    kl_buf_free(a->env, &a->ring[i].raw);
    kl_buf_free(a->env, &a->ring[i].out);
  }
}

void kl_ahead_release(kl_ahead *a, const void *user) {
  if (!a || !user || a->user != user) return;
  pthread_mutex_lock(&a->mu);
  drop_all(a);
  free_slots(a);
  pthread_mutex_unlock(&a->mu);
  kl_codec_ctx_free(&a->ctx); /* the caller's decoder: only the workers' stay */
  a->user = NULL;
  a->stats = NULL;
}

void kl_ahead_reset(kl_ahead *a) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  drop_all(a);
  pthread_mutex_unlock(&a->mu);
}

void kl_ahead_free(kl_ahead *a) {
  if (!a) return;
  kl_ahead_reset(a);
  join_workers(a);
  free_slots(a);
  kl_codec_ctx_free(&a->ctx);
  pthread_cond_destroy(&a->done);
  pthread_cond_destroy(&a->work);
  pthread_mutex_destroy(&a->mu);
  kl_free(a->env, a);
}
