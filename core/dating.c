/*
** dating.c - see dating.h.
*/
#include "dating.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "os.h"

/* Is a no earlier than b? */
static int not_before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

void kl_date_fetch(const kl_env *env, int dirfd, size_t off, const char *log_path,
                   const char *ti_path, kl_date_facts *f) {
  memset(f, 0, sizeof *f);
  struct stat ls, ts;
  if (kl_os_stat_at(env, dirfd, log_path, off, &ls) != 0) {
    f->state = KL_DATE_NOLOG;
    return;
  }
  f->log_reg = S_ISREG(ls.st_mode);
  f->log_size = (int64_t)ls.st_size;
  f->log_dev = (uint64_t)ls.st_dev;
  f->log_ino = (uint64_t)ls.st_ino;
  f->log_mtim = ls.st_mtim;
  /* A .log that cannot be dated from its index is not worth the index. */
  if (!f->log_reg || f->log_size <= 0) {
    f->state = KL_DATE_NOINDEX;
    return;
  }
  int fd;
  if (kl_fd_open_stat_at(env, dirfd, ti_path, off, O_RDONLY, 0, &fd, &ts, NULL) != KL_OK) {
    f->state = KL_DATE_NOINDEX;
    return;
  }
  f->state = KL_DATE_READ;
  f->ti_size = (int64_t)ts.st_size;
  f->ti_mtim = ts.st_mtim;
  /* Entries are 12 bytes; an index older than its .log does not cover it
  ** (scan.h), and is not read. */
  if (f->ti_size >= 12 && f->ti_size % 12 == 0 && not_before(&ts.st_mtim, &ls.st_mtim)) {
    size_t n = f->ti_size >= KL_DATE_TAIL ? KL_DATE_TAIL : 12;
    f->read = 1;
    if (kl_os_read(env, fd, f->e, n, f->ti_size - (int64_t)n) == (long)n) f->n = n;
  }
  kl_os_close(env, fd);
}

/* Segments a thread takes at a time: few enough that the caller rarely
** waits on the helper's last chunk, enough that taking one is cheap. */
#define CHUNK 16

struct kl_date_pass {
  const kl_env *env;
  int dirfd;                /* the segments' directory, or -1 */
  size_t off;               /* its path's length in theirs */
  const char *const *paths;
  size_t n, nchunks;
  kl_date_facts *facts;     /* n of them */
  kl_date_facts mine;       /* the caller's own read of a segment whose
                            ** chunk the helper holds */
  atomic_int *chunk;        /* per chunk: 0 free, 1 being read, 2 read by
                            ** the caller, 3 by the helper */
  atomic_size_t next;       /* the first chunk no thread has taken */
  atomic_int stop;
  size_t helped;            /* facts the caller took from the helper */
  pthread_t th;
  int started;
};

/* Take the next free chunk (in increasing order); nchunks when none. */
static size_t take(kl_date_pass *p) {
  for (;;) {
    size_t c = atomic_load(&p->next);
    if (c >= p->nchunks) return p->nchunks;
    if (atomic_compare_exchange_weak(&p->next, &c, c + 1)) {
      atomic_store(&p->chunk[c], 1);
      return c;
    }
  }
}

/* Read chunk c's facts (the helper stops between segments when told). */
static void read_chunk(kl_date_pass *p, size_t c, int helper) {
  size_t from = c * CHUNK, to = from + CHUNK < p->n ? from + CHUNK : p->n;
  for (size_t i = from; i < to; i++) {
    if (helper && atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
    const char *lp = p->paths[2 * i], *tp = p->paths[2 * i + 1];
    if (!lp || !tp) continue;
    kl_date_fetch(p->env, p->dirfd, p->off, lp, tp, &p->facts[i]);
  }
  atomic_store_explicit(&p->chunk[c], helper ? 3 : 2, memory_order_release);
}

static void *helper(void *arg) {
  kl_date_pass *p = arg;
  size_t c;
  while (!atomic_load(&p->stop) && (c = take(p)) < p->nchunks) read_chunk(p, c, 1);
  return NULL;
}

kl_rc kl_date_begin(const kl_env *env, int dirfd, size_t off, const char *const *paths,
                    size_t n, int if_idle, kl_date_pass **out) {
  *out = NULL;
  /* A helper on a machine with no core to spare only takes turns with the
  ** caller, and joining it waits for the scheduler to run it again. */
  if (if_idle && !kl_os_core_idle(env)) return KL_BUSY;
  kl_date_pass *p = kl_malloc(env, sizeof *p);
  if (!p) return KL_NOMEM;
  memset(p, 0, sizeof *p);
  p->env = env;
  p->dirfd = dirfd;
  p->off = off;
  p->paths = paths;
  p->n = n;
  p->nchunks = (n + CHUNK - 1) / CHUNK;
  p->facts = kl_malloc(env, n * sizeof *p->facts + 1);
  p->chunk = kl_malloc(env, p->nchunks * sizeof *p->chunk + 1);
  if (!p->facts || !p->chunk) {
    kl_date_end(p);
    return KL_NOMEM;
  }
  memset(p->facts, 0, n * sizeof *p->facts);
  for (size_t c = 0; c < p->nchunks; c++) atomic_init(&p->chunk[c], 0);
  atomic_init(&p->next, 0);
  atomic_init(&p->stop, 0);
  if (pthread_create(&p->th, NULL, helper, p) != 0) {
    kl_date_end(p);
    return KL_IO;
  }
  p->started = 1;
  *out = p;
  return KL_OK;
}

const kl_date_facts *kl_date_get(kl_date_pass *p, size_t i) {
  size_t want = i / CHUNK;
  /* Chunks are taken in order: while want is free, the next one taken is
  ** want itself or one before it the helper has just left. */
  while (atomic_load_explicit(&p->chunk[want], memory_order_acquire) == 0) {
    size_t c = take(p);
    if (c < p->nchunks) read_chunk(p, c, 0);
  }
  int by = atomic_load_explicit(&p->chunk[want], memory_order_acquire);
  /* The helper is reading it: read a chunk ahead meanwhile, which the
  ** caller needs next unless the answer comes first, so that the two
  ** threads take the chunks in turn rather than both reading want. */
  while (by == 1) {
    size_t c = take(p);
    if (c >= p->nchunks) break;
    read_chunk(p, c, 0);
    by = atomic_load_explicit(&p->chunk[want], memory_order_acquire);
  }
  if (by == 1) {
    /* None is left to read: read this segment again rather than wait on a
    ** thread the machine may not be running now. */
    memset(&p->mine, 0, sizeof p->mine);
    if (p->paths[2 * i] && p->paths[2 * i + 1]) {
      kl_date_fetch(p->env, p->dirfd, p->off, p->paths[2 * i], p->paths[2 * i + 1], &p->mine);
    }
    return &p->mine;
  }
  kl_date_facts *f = &p->facts[i];
  if (f->state == KL_DATE_UNREAD && p->paths[2 * i] && p->paths[2 * i + 1]) {
    kl_date_fetch(p->env, p->dirfd, p->off, p->paths[2 * i], p->paths[2 * i + 1], f);
  } else if (by == 3 && f->state != KL_DATE_UNREAD) {
    p->helped++;
  }
  return f;
}

size_t kl_date_helped(const kl_date_pass *p) { return p->helped; }

void kl_date_end(kl_date_pass *p) {
  if (!p) return;
  if (p->started) {
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
  }
  kl_free(p->env, p->facts);
  kl_free(p->env, p->chunk);
  kl_free(p->env, p);
}
