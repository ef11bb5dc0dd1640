/*
** faultos.c - see faultos.h.
*/
#include "faultos.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SELF(os) ((t_faultos *)(os)->ud)
#define REAL (kl_os_posix())

static const char *const kind_names[T_OS_KINDS] = {
  "open", "close", "read", "write", "sync", "truncate", "stat",
  "rename", "unlink", "mkdir", "list", "lock", "seek",
};

const char *t_faultos_kind(unsigned kind) {
  for (int i = 0; i < T_OS_KINDS; i++) {
    if (kind == 1u << i) return kind_names[i];
  }
  return "?";
}

long t_faultos_count(const t_faultos *f, unsigned mask) {
  long n = 0;
  for (int i = 0; i < T_OS_KINDS; i++) {
    if (mask & (1u << i)) n += f->by_kind[i];
  }
  return n;
}

static const char *fd_path(const t_faultos *f, int fd) {
  return fd >= 0 && fd < T_OS_MAX_FD && f->fdpath[fd] ? f->fdpath[fd] : "";
}

/* Count the call; 1 (errno set) when it is to fail. */
static int fault(t_faultos *f, unsigned kind, const char *path) {
  for (int i = 0; i < T_OS_KINDS; i++) {
    if (kind == 1u << i) f->by_kind[i]++;
  }
  unsigned kinds = f->kinds ? f->kinds : T_OS_ALL;
  if (!(kinds & kind) || (f->path_has && !strstr(path, f->path_has))) return 0;
  f->calls++;
  if (f->fail_at <= 0 || f->calls < f->fail_at || (!f->persist && f->calls > f->fail_at)) return 0;
  if (f->failed++ == 0) {
    snprintf(f->failed_path, sizeof f->failed_path, "%s", path);
    f->failed_kind = kind;
  }
  const char *base = strrchr(path, '/');
  base = base && base[1] ? base + 1 : path;
  int known = 0;
  for (int i = 0; i < f->nfailed_names; i++) known |= strcmp(f->failed_names[i], base) == 0;
  if (!known && *base && f->nfailed_names < 16) {
    snprintf(f->failed_names[f->nfailed_names++], sizeof f->failed_names[0], "%s", base);
  }
  errno = f->fail_errno ? f->fail_errno : EIO;
  return 1;
}

int t_faultos_names_failed(const t_faultos *f, const char *s) {
  for (int i = 0; i < f->nfailed_names; i++) {
    if (strstr(s, f->failed_names[i])) return 1;
  }
  return 0;
}

static void forget_fd(t_faultos *f, int fd) {
  if (fd >= 0 && fd < T_OS_MAX_FD) {
    free(f->fdpath[fd]);
    f->fdpath[fd] = NULL;
  }
}

static int f_open(const kl_os *os, const char *path, int flags, int mode) {
  t_faultos *f = SELF(os);
  if (fault(f, T_OS_OPEN, path)) return -1;
  int fd = REAL->xOpen(REAL, path, flags, mode);
  if (fd >= 0 && fd < T_OS_MAX_FD) {
    free(f->fdpath[fd]);
    f->fdpath[fd] = strdup(path);
  }
  return fd;
}

/* A close that fails still closes (as Linux's does). */
static int f_close(const kl_os *os, int fd) {
  t_faultos *f = SELF(os);
  int bad = fault(f, T_OS_CLOSE, fd_path(f, fd));
  int e = errno;
  forget_fd(f, fd);
  int rc = REAL->xClose(REAL, fd);
  if (bad) errno = e;
  return bad ? -1 : rc;
}

static long f_read(const kl_os *os, int fd, void *buf, size_t n, int64_t pos) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_READ, fd_path(f, fd)) ? -1 : REAL->xRead(REAL, fd, buf, n, pos);
}

static long f_write(const kl_os *os, int fd, const void *buf, size_t n, int64_t pos) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_WRITE, fd_path(f, fd)) ? -1 : REAL->xWrite(REAL, fd, buf, n, pos);
}

static long f_writev(const kl_os *os, int fd, const struct iovec *iov, int cnt, int64_t pos) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_WRITE, fd_path(f, fd)) ? -1 : REAL->xWritev(REAL, fd, iov, cnt, pos);
}

static int f_sync(const kl_os *os, int fd, int data) {
  t_faultos *f = SELF(os);
  if (fault(f, T_OS_SYNC, fd_path(f, fd))) return -1;
  return f->fake_sync ? 0 : REAL->xSync(REAL, fd, data);
}

static int f_truncate(const kl_os *os, int fd, int64_t size) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_TRUNCATE, fd_path(f, fd)) ? -1 : REAL->xTruncate(REAL, fd, size);
}

static int f_stat(const kl_os *os, const char *path, struct stat *st) {
  return fault(SELF(os), T_OS_STAT, path) ? -1 : REAL->xStat(REAL, path, st);
}

static int f_fstat(const kl_os *os, int fd, struct stat *st) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_STAT, fd_path(f, fd)) ? -1 : REAL->xFstat(REAL, fd, st);
}

static int f_rename(const kl_os *os, const char *from, const char *to) {
  return fault(SELF(os), T_OS_RENAME, from) ? -1 : REAL->xRename(REAL, from, to);
}

static int f_unlink(const kl_os *os, const char *path) {
  return fault(SELF(os), T_OS_UNLINK, path) ? -1 : REAL->xUnlink(REAL, path);
}

static int f_mkdir(const kl_os *os, const char *path, int mode) {
  return fault(SELF(os), T_OS_MKDIR, path) ? -1 : REAL->xMkdir(REAL, path, mode);
}

static int f_rmdir(const kl_os *os, const char *path) {
  return fault(SELF(os), T_OS_MKDIR, path) ? -1 : REAL->xRmdir(REAL, path);
}

/* A listing: the real handle and the path, for the readdir calls. */
typedef struct fdir {
  void *real;
  char *path;
} fdir;

static void *f_opendir(const kl_os *os, const char *path) {
  if (fault(SELF(os), T_OS_LIST, path)) return NULL;
  fdir *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->real = REAL->xOpendir(REAL, path);
  d->path = strdup(path);
  if (!d->real || !d->path) {
    int e = d->real ? ENOMEM : errno;
    if (d->real) REAL->xClosedir(REAL, d->real);
    free(d->path);
    free(d);
    errno = e;
    return NULL;
  }
  return d;
}

static int f_readdir(const kl_os *os, void *dir, const char **name, int *is_dir) {
  fdir *d = dir;
  return fault(SELF(os), T_OS_LIST, d->path) ? -1 : REAL->xReaddir(REAL, d->real, name, is_dir);
}

static void f_closedir(const kl_os *os, void *dir) {
  (void)os;
  fdir *d = dir;
  REAL->xClosedir(REAL, d->real);
  free(d->path);
  free(d);
}

static int f_lock(const kl_os *os, int fd, int lock) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_LOCK, fd_path(f, fd)) ? -1 : REAL->xLock(REAL, fd, lock);
}

static int64_t f_seek_data(const kl_os *os, int fd, int64_t pos) {
  t_faultos *f = SELF(os);
  return fault(f, T_OS_SEEK, fd_path(f, fd)) ? -1 : REAL->xSeekData(REAL, fd, pos);
}

void t_faultos_init(t_faultos *f) {
  memset(f, 0, sizeof *f);
  kl_os t = {f,         f_open,     f_close,   f_read,   f_write,     f_writev,
             f_sync,    f_truncate, f_stat,    f_fstat,  f_rename,    f_unlink,
             f_mkdir,   f_rmdir,    f_opendir, f_readdir, f_closedir, f_lock,
             f_seek_data, NULL,     NULL,      NULL, /* mapping: POSIX's */
             NULL,      NULL, /* opens and stats by name under a directory: f_open, f_stat */
             NULL,      NULL,       NULL,      NULL};    /* change queues: POSIX's */
  f->os = t;
  f->env.os = &f->os;
}

void t_faultos_free(t_faultos *f) {
  for (int i = 0; i < T_OS_MAX_FD; i++) forget_fd(f, i);
}
