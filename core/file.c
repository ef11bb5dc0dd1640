/*
** file.c - positioned reads and file windows (see file.h for why nothing is
** mapped).
*/
#include "file.h"

#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first read after a jump covers an index interval (4 KiB by default,
** where a lookup's batches are); reads that continue where the last one
** ended double up to 1 MiB, so a scan makes few calls.  A read is never
** smaller than what was asked (a whole batch to verify). */
#define KL_WINDOW_FIRST ((size_t)4 << 10)
#define KL_WINDOW_MAX ((size_t)1 << 20)

/* What a file that is not of the kind asked is, for the message. */
static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISREG(m)) return "a regular file";
  return "not a file";
}

/* kl_fd_open, with what fstat said of the file opened in *st.  A file that
** is not of the kind asked cannot be opened as one (KL_CANTOPEN), and
** O_NONBLOCK keeps a FIFO from blocking the open: the descriptor keeps it,
** since a regular file or a directory, the only kinds returned, ignores it
** (clearing it would cost every open a call more); a failed
** open is classed as kl_write_rc classes it when it creates or writes, else
** KL_CANTOPEN but for a failing device (EIO: KL_IO). */
static kl_rc open_stat(const kl_env *env, int dirfd, const char *path, size_t off, int flags,
                       int mode, int *fd, struct stat *out, kl_err *err) {
  int want_dir = (flags & O_DIRECTORY) != 0;
  int writes = (flags & (O_CREAT | O_WRONLY | O_RDWR)) != 0;
  const char *want = want_dir ? "a directory" : "a regular file";
  struct stat st;
  *fd = kl_os_open_at(env, dirfd, path, off, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
  if (*fd < 0) {
    int e = errno;
    if (e == ENOENT && !(flags & O_CREAT)) return KL_NOTFOUND;
    kl_rc rc = writes ? kl_write_rc(e) : e == EIO ? KL_IO : KL_CANTOPEN;
    /* A socket (ENXIO), or a FIFO opened for writing with no reader. */
    if ((e == ENXIO || e == ENODEV || e == EOPNOTSUPP) && kl_os_stat(env, path, &st) == 0 &&
        !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      rc = kl_err_set(err, KL_CANTOPEN, "%s: cannot open: it is %s, not %s", path,
                      kind_of(st.st_mode), want);
    } else if (e == ENOTDIR && want_dir && kl_os_stat(env, path, &st) == 0) {
      rc = kl_err_set(err, KL_CANTOPEN, "%s: cannot open: it is %s, not a directory", path,
                      kind_of(st.st_mode));
    } else {
      kl_err_set(err, rc, "%s: cannot open: %s", path, strerror(e));
    }
    errno = e;
    return rc;
  }
  int e = 0;
  kl_rc rc = KL_OK;
  if (kl_os_fstat(env, *fd, &st) != 0) {
    e = errno;
    rc = kl_err_set(err, KL_IO, "%s: cannot stat: %s", path, strerror(e));
  } else if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    e = want_dir ? ENOTDIR : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    rc = kl_err_set(err, KL_CANTOPEN, "%s: cannot open: it is %s, not %s", path,
                    kind_of(st.st_mode), want);
  }
  if (rc != KL_OK) {
    kl_os_close(env, *fd);
    *fd = -1;
    errno = e;
    return rc;
  }
  *out = st;
  return KL_OK;
}

kl_rc kl_fd_open(const kl_env *env, const char *path, int flags, int mode, int *fd,
                 kl_err *err) {
  struct stat st;
  return open_stat(env, -1, path, 0, flags, mode, fd, &st, err);
}

kl_rc kl_fd_open_stat(const kl_env *env, const char *path, int flags, int mode, int *fd,
                      struct stat *st, kl_err *err) {
  return open_stat(env, -1, path, 0, flags, mode, fd, st, err);
}

kl_rc kl_fd_open_stat_at(const kl_env *env, int dirfd, const char *path, size_t off, int flags,
                         int mode, int *fd, struct stat *st, kl_err *err) {
  return open_stat(env, dirfd, path, off, flags, mode, fd, st, err);
}

kl_rc kl_file_open(kl_file *f, const kl_env *env, const char *path, kl_err *err) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->env = env;
  f->path = path;
  int fd;
  struct stat st = {0};
  kl_rc rc = open_stat(env, -1, path, 0, O_RDONLY, 0, &fd, &st, err);
  if (rc) return rc;
  f->fd = fd;
  f->size = st.st_size;
  f->dev = (uint64_t)st.st_dev;
  f->ino = (uint64_t)st.st_ino;
  return KL_OK;
}

void kl_file_close(kl_file *f) {
  if (f->map) kl_os_unmap(f->env, (void *)f->map, (size_t)f->size);
  f->map = NULL;
  if (f->fd >= 0) kl_os_close(f->env, f->fd);
  f->fd = -1;
}

int kl_file_map(kl_file *f) {
  if (f->map || f->fd < 0 || f->mem || f->size <= 0) return f->map != NULL;
  /* The size checked after the open is the size mapped: a file that
  ** cannot shrink keeps every page of it. */
  if (!kl_os_fixed_size(f->env, f->fd)) return 0;
  f->map = kl_os_map(f->env, f->fd, (size_t)f->size);
  return f->map != NULL;
}

static long read_at(const kl_file *f, void *buf, size_t n, int64_t pos) {
  return kl_os_read(f->env, f->fd, buf, n, pos);
}

void kl_file_hold_tail(kl_file *f, int64_t at, const uint8_t *mem) {
  f->mem = mem;
  f->mem_at = at;
}

kl_rc kl_file_read(const kl_file *f, int64_t pos, void *buf, size_t n, kl_err *err) {
  if (f->map && pos >= 0 && pos + (int64_t)n <= f->size) {
    memcpy(buf, f->map + pos, n);
    return KL_OK;
  }
  if (f->mem && pos + (int64_t)n > f->mem_at) {
    /* The part in memory; the file's below it. */
    int64_t from = pos > f->mem_at ? pos : f->mem_at;
    if (pos + (int64_t)n > f->size) {
      return kl_err_set(err, KL_IO, "%s: position %lld: %zu bytes asked past the end (%lld bytes)",
                        f->path, (long long)pos, n, (long long)f->size);
    }
    memcpy((uint8_t *)buf + (from - pos), f->mem + (from - f->mem_at),
           (size_t)(pos + (int64_t)n - from));
    n = (size_t)(from - pos);
  }
  size_t got = 0;
  while (got < n) {
    long k = read_at(f, (uint8_t *)buf + got, n - got, pos + (int64_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      return kl_err_set(err, KL_IO, "%s: position %lld: read failed: %s", f->path,
                        (long long)(pos + (int64_t)got), strerror(errno));
    }
    if (k == 0) {
      return kl_err_set(err, KL_IO,
                        "%s: position %lld: the file ends there now (it had %lld bytes when "
                        "opened: truncated while being read?)",
                        f->path, (long long)(pos + (int64_t)got), (long long)f->size);
    }
    got += (size_t)k;
  }
  return KL_OK;
}

kl_rc kl_write_rc(int e) {
  switch (e) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
      return KL_NOSPACE;
    case EROFS: case EACCES: case EPERM: return KL_READONLY;
    case ENOENT: case ENOTDIR: case ENAMETOOLONG: case ELOOP: return KL_CANTOPEN;
  }
  return KL_IO;
}

kl_rc kl_write_at(const kl_env *env, int fd, const void *p, size_t n, int64_t pos,
                  const char *path, kl_err *err) {
  size_t done = 0;
  while (done < n) {
    long k = kl_os_write(env, fd, (const uint8_t *)p + done, n - done, pos + (int64_t)done);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      return kl_err_set(err, kl_write_rc(errno), "%s: position %lld: write failed: %s", path,
                        (long long)(pos + (int64_t)done), strerror(errno));
    }
    done += (size_t)k;
  }
  return KL_OK;
}

int kl_file_same(const kl_file *f) {
  struct stat st;
  int64_t disk = f->mem ? f->mem_at : f->size;
  return f->fd >= 0 && kl_os_fstat(f->env, f->fd, &st) == 0 &&
         (f->capped ? st.st_size >= disk : st.st_size == disk) &&
         (uint64_t)st.st_ino == f->ino && (uint64_t)st.st_dev == f->dev;
}

kl_rc kl_file_zero_from(const kl_file *f, int64_t pos, int *zero, kl_err *err) {
  uint8_t buf[8192];
  *zero = 1;
  while (pos < f->size) {
    /* Holes of the file; what is held in memory is read. */
    int64_t disk = f->mem ? f->mem_at : f->size;
    if (pos < disk) {
      int64_t d = kl_os_seek_data(f->env, f->fd, pos);
      if (d < 0 && errno == ENXIO) d = disk; /* only a hole is left */
      if (d > pos) pos = d < disk ? d : disk;
      if (pos >= f->size) return KL_OK;
    }
    size_t n = f->size - pos < (int64_t)sizeof buf ? (size_t)(f->size - pos) : sizeof buf;
    kl_rc rc = kl_file_read(f, pos, buf, n, err);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
      if (buf[i]) {
        *zero = 0;
        return KL_OK;
      }
    }
    pos += (int64_t)n;
  }
  return KL_OK;
}

/* Of [at, at+n), the bytes peer holds from at on (copied into dst): 0
** when it holds none of them. */
static size_t from_peer(const kl_window *peer, const kl_file *f, int64_t at, size_t n,
                        uint8_t *dst) {
  if (!peer || peer->f != f || at < peer->start || at >= peer->start + (int64_t)peer->len) {
    return 0;
  }
  size_t c = (size_t)(peer->start + (int64_t)peer->len - at);
  if (c > n) c = n;
  memcpy(dst, peer->buf.p + (at - peer->start), c);
  return c;
}

kl_rc kl_window_get(kl_window *w, const kl_window *peer, const kl_file *f, int64_t pos, size_t n,
                    const uint8_t **out, kl_stats *stats, kl_err *err) {
  if (w->f == f && pos >= w->start && pos + (int64_t)n <= w->start + (int64_t)w->len) {
    *out = w->buf.p + (pos - w->start);
    return KL_OK;
  }
  if (pos < 0 || (int64_t)n > f->size - pos) {
    return kl_err_set(err, KL_IO, "%s: position %lld: %zu bytes asked past the end (%lld bytes)",
                      f->path, (long long)pos, n, (long long)f->size);
  }
  /* Keep what the window already holds from pos on; read the rest. */
  size_t keep = 0;
  int sequential = w->f == f && pos >= w->start && pos <= w->start + (int64_t)w->len;
  if (sequential) keep = (size_t)(w->start + (int64_t)w->len - pos);
  size_t first = w->first ? w->first : KL_WINDOW_FIRST;
  size_t want = sequential ? w->next : first;
  if (want < w->min_read) want = w->min_read;
  if (want < n) want = n;
  if ((int64_t)want > f->size - pos) want = (size_t)(f->size - pos);
  w->next = sequential && w->next < KL_WINDOW_MAX ? w->next * 2 : first * 2;
  if (keep && pos > w->start) memmove(w->buf.p, w->buf.p + (pos - w->start), keep);
  w->f = NULL; /* nothing valid until the read succeeds */
  w->len = 0;
  kl_rc rc = kl_buf_reserve(f->env, &w->buf, want);
  if (rc) return kl_err_set(err, rc, "out of memory reading %s", f->path);
  size_t copied = from_peer(peer, f, pos + (int64_t)keep, want - keep, w->buf.p + keep);
  keep += copied;
  if (keep >= n && keep < want) want = keep; /* the peer gave what was asked */
  if (keep == want) {
    w->f = f;
    w->start = pos;
    w->len = want;
    *out = w->buf.p;
    return KL_OK;
  }
  rc = kl_file_read(f, pos + (int64_t)keep, w->buf.p + keep, want - keep, err);
  if (rc) return rc;
  if (stats && f->map) {
    stats->bytes_mapped += want - keep;
  } else if (stats) {
    stats->bytes_read += want - keep;
    stats->reads++;
  }
  w->f = f;
  w->start = pos;
  w->len = want;
  *out = w->buf.p;
  return KL_OK;
}

void kl_window_free(kl_window *w, const kl_env *env) {
  kl_buf_free(env, &w->buf);
  w->f = NULL;
  w->len = 0;
}

/* The temporary files of replacements of path by processes that no longer
** run (killed between making one and renaming it) are removed; one of a
** process that runs, this one's included, may be about to be renamed. */
static void sweep_dead_tmps(const kl_env *env, const char *dir, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t bn = strlen(base);
  void *d = kl_os_opendir(env, dir);
  if (!d) return;
  const char *nm;
  int is_dir;
  while (kl_os_readdir(env, d, &nm, &is_dir) > 0) {
    if (is_dir == 1 || strncmp(nm, base, bn) != 0 || nm[bn] != '.') continue;
    char *end = NULL;
    long pid = strtol(nm + bn + 1, &end, 10);
    unsigned i;
    char tail[8];
    if (end == nm + bn + 1 || pid <= 0 || pid == (long)getpid()) continue;
    if (sscanf(end, "-%u%7s", &i, tail) != 2 || strcmp(tail, ".tmp") != 0) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char full[4400];
    snprintf(full, sizeof full, "%s/%s", dir, nm);
    kl_os_unlink(env, full);
  }
  kl_os_closedir(env, d);
}

kl_rc kl_file_replace(const kl_env *env, int dirfd, const char *dir, const char *path,
                      const void *p, size_t n, kl_err *err) {
  char tmp[4400];
  int fd = -1;
  kl_rc rc = KL_OK;
  for (unsigned i = 0; fd < 0; i++) {
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", path, (long)getpid(), i);
    rc = kl_fd_open(env, tmp, O_RDWR | O_CREAT | O_EXCL, 0644, &fd, err);
    if (rc == KL_OK) break;
    if (errno != EEXIST || i == 100) return rc;
    kl_err_clear(err);
  }
  rc = kl_write_at(env, fd, p, n, 0, tmp, err);
  if (rc == KL_OK && kl_os_sync(env, fd, 1) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync failed: %s", tmp, strerror(errno));
  }
  kl_os_close(env, fd);
  if (rc == KL_OK && kl_os_rename(env, tmp, path) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: cannot rename to %s: %s", tmp, path,
                    strerror(errno));
  }
  if (rc) {
    kl_os_unlink(env, tmp);
    return rc;
  }
  sweep_dead_tmps(env, dir, path);
  int d = dirfd;
  if (d < 0 && (rc = kl_fd_open(env, dir, O_RDONLY | O_DIRECTORY, 0, &d, err)) != KL_OK) return rc;
  if (kl_os_sync(env, d, 0) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync of the directory failed: %s", dir,
                    strerror(errno));
  }
  if (dirfd < 0) kl_os_close(env, d);
  return rc;
}
