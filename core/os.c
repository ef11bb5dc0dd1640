/*
** os.c - the POSIX table of the operating-system layer (see os.h), and the
** calls that pick the table of a kl_env.
*/
/* F_OFD_SETLK and SEEK_DATA need _GNU_SOURCE, which CMakeLists.txt defines. */
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

static int px_open(const kl_os *os, const char *path, int flags, int mode) {
  (void)os;
  return open(path, flags, mode);
}
static int px_close(const kl_os *os, int fd) {
  (void)os;
  return close(fd);
}
static long px_read(const kl_os *os, int fd, void *buf, size_t n, int64_t pos) {
  (void)os;
  return (long)pread(fd, buf, n, (off_t)pos);
}
static long px_write(const kl_os *os, int fd, const void *buf, size_t n, int64_t pos) {
  (void)os;
  return (long)pwrite(fd, buf, n, (off_t)pos);
}
static long px_writev(const kl_os *os, int fd, const struct iovec *iov, int cnt, int64_t pos) {
  (void)os;
  return (long)pwritev(fd, iov, cnt, (off_t)pos);
}
static int px_sync(const kl_os *os, int fd, int data) {
  (void)os;
  return data ? fdatasync(fd) : fsync(fd);
}
static int px_truncate(const kl_os *os, int fd, int64_t size) {
  (void)os;
  return ftruncate(fd, (off_t)size);
}
static int px_stat(const kl_os *os, const char *path, struct stat *st) {
  (void)os;
  return stat(path, st);
}
static int px_fstat(const kl_os *os, int fd, struct stat *st) {
  (void)os;
  return fstat(fd, st);
}
static int px_rename(const kl_os *os, const char *from, const char *to) {
  (void)os;
  return rename(from, to);
}
static int px_unlink(const kl_os *os, const char *path) {
  (void)os;
  return unlink(path);
}
static int px_mkdir(const kl_os *os, const char *path, int mode) {
  (void)os;
  return mkdir(path, (mode_t)mode);
}
static int px_rmdir(const kl_os *os, const char *path) {
  (void)os;
  return rmdir(path);
}
static void *px_opendir(const kl_os *os, const char *path) {
  (void)os;
  return opendir(path);
}
static int px_readdir(const kl_os *os, void *dir, const char **name, int *is_dir) {
  (void)os;
  errno = 0;
  struct dirent *de = readdir((DIR *)dir);
  if (de) {
    *name = de->d_name;
    *is_dir = -1;
#ifdef DT_DIR
    if (de->d_type == DT_DIR) *is_dir = 1;
    else if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK) *is_dir = 0;
#endif
    return 1;
  }
  return errno ? -1 : 0;
}
static void px_closedir(const kl_os *os, void *dir) {
  (void)os;
  closedir((DIR *)dir);
}
static int px_lock(const kl_os *os, int fd, int lock) {
  (void)os;
  if (lock == KL_LOCK_DIR_EX) return flock(fd, LOCK_EX);
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = lock == KL_LOCK_OFD_READ ? F_RDLCK : lock == KL_LOCK_OFD_WRITE ? F_WRLCK : F_UNLCK;
  fl.l_whence = SEEK_SET;
  return fcntl(fd, F_OFD_SETLK, &fl);
}
static int64_t px_seek_data(const kl_os *os, int fd, int64_t pos) {
  (void)os;
#ifdef SEEK_DATA
  return (int64_t)lseek(fd, (off_t)pos, SEEK_DATA);
#else
  (void)fd;
  return pos; /* no holes known: every byte is data */
#endif
}

static int px_fixed_size(const kl_os *os, int fd) {
  (void)os;
  struct statvfs vs;
  if (fstatvfs(fd, &vs) == 0 && (vs.f_flag & ST_RDONLY)) return 1;
#ifdef FS_IOC_GETFLAGS
  int flags = 0;
  return ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL));
#else
  return 0;
#endif
}
static void *px_map(const kl_os *os, int fd, size_t n) {
  (void)os;
  void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}
static int px_unmap(const kl_os *os, void *p, size_t n) {
  (void)os;
  return munmap(p, n);
}

static int px_open_at(const kl_os *os, int dirfd, const char *name, int flags, int mode) {
  (void)os;
  return openat(dirfd, name, flags, mode);
}
static int px_stat_at(const kl_os *os, int dirfd, const char *name, struct stat *st) {
  (void)os;
  return fstatat(dirfd, name, st, 0);
}
static int px_watch_open(const kl_os *os) {
  (void)os;
  return inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}
/* The kernel reports a change to a file only when it makes it: on a local
** disk's file system or in memory.  Over a network (NFS, SMB, Ceph...) or
** through FUSE, another host or the server changes files unseen. */
static int local_fs(const char *path) {
  struct statfs sf;
  if (statfs(path, &sf) != 0) return 0;
  switch ((unsigned long)sf.f_type) {
  case 0xEF53UL:     /* ext2, ext3, ext4 */
  case 0x58465342UL: /* xfs */
  case 0x9123683EUL: /* btrfs */
  case 0x01021994UL: /* tmpfs */
  case 0xF2F52010UL: /* f2fs */
    return 1;
  default:
    return 0;
  }
}
static int px_watch(const kl_os *os, int q, const char *path) {
  (void)os;
  if (!local_fs(path)) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return inotify_add_watch(q, path, IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE |
                                        IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                        IN_MOVE_SELF | IN_ONLYDIR);
}
static int px_unwatch(const kl_os *os, int q, int wd) {
  (void)os;
  return inotify_rm_watch(q, wd);
}
static long px_watch_read(const kl_os *os, int q, int *wds) {
  (void)os;
  /* Room for KL_WATCH_EVENTS events without names; a read returns whole
  ** events only. */
  _Alignas(struct inotify_event) char buf[KL_WATCH_EVENTS * sizeof(struct inotify_event)];
  ssize_t n = read(q, buf, sizeof buf);
  if (n < 0) return errno == EAGAIN ? 0 : -1;
  long k = 0;
  for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n && k < KL_WATCH_EVENTS;) {
    struct inotify_event ev;
    memcpy(&ev, buf + at, sizeof ev);
    wds[k++] = ev.mask & IN_Q_OVERFLOW ? -1 : ev.wd;
    at += (ssize_t)(sizeof ev + ev.len);
  }
  return k;
}

static const kl_os posix = {
  NULL,        px_open,    px_close,   px_read,   px_write,    px_writev,   px_sync,
  px_truncate, px_stat,    px_fstat,   px_rename, px_unlink,   px_mkdir,    px_rmdir,
  px_opendir,  px_readdir, px_closedir, px_lock,  px_seek_data, px_fixed_size, px_map,
  px_unmap,    px_open_at, px_stat_at, px_watch_open, px_watch, px_unwatch, px_watch_read,
};

const kl_os *kl_os_posix(void) { return &posix; }

/* The table of env, and the function of an entry: the POSIX one when the
** table leaves it NULL. */
#define OS(env) ((env) && (env)->os ? (env)->os : &posix)
#define CALL(env, x, ...)                                                          \
  (OS(env)->x ? OS(env)->x(OS(env), __VA_ARGS__) : posix.x(&posix, __VA_ARGS__))

int kl_os_open(const kl_env *env, const char *path, int flags, int mode) {
  return CALL(env, xOpen, path, flags, mode);
}
int kl_os_close(const kl_env *env, int fd) { return CALL(env, xClose, fd); }
int kl_os_open_at(const kl_env *env, int dirfd, const char *path, size_t off, int flags,
                  int mode) {
  const kl_os *os = OS(env);
  if (dirfd >= 0 && os->xOpenAt) return os->xOpenAt(os, dirfd, path + off, flags, mode);
  if (dirfd < 0 || os->xOpen) return kl_os_open(env, path, flags, mode);
  return posix.xOpenAt(&posix, dirfd, path + off, flags, mode);
}
int kl_os_stat_at(const kl_env *env, int dirfd, const char *path, size_t off, struct stat *st) {
  const kl_os *os = OS(env);
  if (dirfd >= 0 && os->xStatAt) return os->xStatAt(os, dirfd, path + off, st);
  if (dirfd < 0 || os->xStat) return kl_os_stat(env, path, st);
  return posix.xStatAt(&posix, dirfd, path + off, st);
}
long kl_os_read(const kl_env *env, int fd, void *buf, size_t n, int64_t pos) {
  return CALL(env, xRead, fd, buf, n, pos);
}
long kl_os_write(const kl_env *env, int fd, const void *buf, size_t n, int64_t pos) {
  return CALL(env, xWrite, fd, buf, n, pos);
}
long kl_os_writev(const kl_env *env, int fd, const struct iovec *iov, int cnt, int64_t pos) {
  return CALL(env, xWritev, fd, iov, cnt, pos);
}
int kl_os_sync(const kl_env *env, int fd, int data) { return CALL(env, xSync, fd, data); }
int kl_os_truncate(const kl_env *env, int fd, int64_t size) {
  return CALL(env, xTruncate, fd, size);
}
int kl_os_stat(const kl_env *env, const char *path, struct stat *st) {
  return CALL(env, xStat, path, st);
}
int kl_os_fstat(const kl_env *env, int fd, struct stat *st) { return CALL(env, xFstat, fd, st); }
int kl_os_rename(const kl_env *env, const char *from, const char *to) {
  return CALL(env, xRename, from, to);
}
int kl_os_unlink(const kl_env *env, const char *path) { return CALL(env, xUnlink, path); }
int kl_os_mkdir(const kl_env *env, const char *path, int mode) {
  return CALL(env, xMkdir, path, mode);
}
int kl_os_rmdir(const kl_env *env, const char *path) { return CALL(env, xRmdir, path); }
void *kl_os_opendir(const kl_env *env, const char *path) { return CALL(env, xOpendir, path); }
int kl_os_readdir(const kl_env *env, void *dir, const char **name, int *is_dir) {
  return CALL(env, xReaddir, dir, name, is_dir);
}
void kl_os_closedir(const kl_env *env, void *dir) {
  if (OS(env)->xClosedir) {
    OS(env)->xClosedir(OS(env), dir);
  } else {
    posix.xClosedir(&posix, dir);
  }
}
int kl_os_lock(const kl_env *env, int fd, int lock) { return CALL(env, xLock, fd, lock); }
int64_t kl_os_seek_data(const kl_env *env, int fd, int64_t pos) {
  return CALL(env, xSeekData, fd, pos);
}

int kl_os_is_dir(const kl_env *env, const char *path) {
  struct stat st;
  return kl_os_stat(env, path, &st) == 0 && S_ISDIR(st.st_mode);
}
int kl_os_fixed_size(const kl_env *env, int fd) { return CALL(env, xFixedSize, fd); }
void *kl_os_map(const kl_env *env, int fd, size_t n) { return CALL(env, xMap, fd, n); }
int kl_os_unmap(const kl_env *env, void *p, size_t n) { return CALL(env, xUnmap, p, n); }
int kl_os_watch_open(const kl_env *env) {
  return OS(env)->xWatchOpen ? OS(env)->xWatchOpen(OS(env)) : posix.xWatchOpen(&posix);
}
int kl_os_watch(const kl_env *env, int q, const char *path) { return CALL(env, xWatch, q, path); }
int kl_os_unwatch(const kl_env *env, int q, int wd) { return CALL(env, xUnwatch, q, wd); }
long kl_os_watch_read(const kl_env *env, int q, int wds[KL_WATCH_EVENTS]) {
  return CALL(env, xWatchRead, q, wds);
}

long kl_os_cpus(void) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    long n = CPU_COUNT(&set);
    if (n > 0 && (online <= 0 || n < online)) return n;
  }
  return online;
}

int kl_os_core_idle(const kl_env *env) {
  char b[128];
  int fd = kl_os_open(env, "/proc/loadavg", O_RDONLY, 0);
  if (fd < 0) return 0;
  long n = kl_os_read(env, fd, b, sizeof b - 1, 0);
  kl_os_close(env, fd);
  if (n <= 0) return 0;
  b[n] = 0;
  const char *p = b;
  for (int f = 0; f < 3 && p; f++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  long running = 0, cores = sysconf(_SC_NPROCESSORS_ONLN);
  while (p && *p >= '0' && *p <= '9') running = running * 10 + (*p++ - '0');
  /* A process held to one CPU (taskset, a cpuset) has no core to spare
  ** whatever the machine's load: its helper would take turns with it. */
  return p && *p == '/' && running > 0 && running < cores && kl_os_cpus() > 1;
}
