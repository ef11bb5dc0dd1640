/*
** os.h - the operating-system layer: every system call the core makes on
** a file or a directory goes through one table of functions (kl_os), as
** SQLite's go through its sqlite3_vfs.
**
** The kl_env given to a core call names the table (kl_env.os); a NULL
** kl_env or a NULL table means kl_os_posix(), the POSIX calls themselves.
** A table may leave any entry NULL: that call is the POSIX one.  Tests
** install a table that counts the calls and fails the Nth one
** (tests/util/faultos.h), so that every open, read, write, fsync, rename,
** listing and lock of a transaction or a recovery can be made to fail.
**
** Each function behaves as the POSIX call it is named after (the return
** value, and errno set on failure), with these differences: reads and
** writes are positioned and take int64_t positions; xSync syncs the data
** only (fdatasync) when data is non-zero; a directory listing is a handle
** from xOpendir whose xReaddir gives 1, an entry's name (valid until the
** next call) and whether it is a directory (1, 0, or -1 when the listing
** does not say: a symbolic link, or a file system without d_type), 0 at
** the end, -1 with errno on an error; xLock takes or
** releases the locks the core uses (KL_LOCK_*), never waiting but for
** KL_LOCK_DIR_EX.  os is the table itself (its ud is the caller's).
**
** EINTR is the caller's: the core retries a call that returns it.
*/
#ifndef KL_OS_H
#define KL_OS_H

#include <sys/stat.h>
#include <sys/uio.h>

#include "klog.h"

/* The locks of xLock.  OFD locks (open file description, Linux) cover the
** whole file and conflict with a broker's classic POSIX lock on it. */
enum {
  KL_LOCK_OFD_READ = 1, /* shared OFD lock: EAGAIN/EACCES when a writer has it */
  KL_LOCK_OFD_WRITE,    /* exclusive OFD lock: EAGAIN/EACCES when held */
  KL_LOCK_OFD_UNLOCK,   /* release the OFD lock */
  KL_LOCK_DIR_EX        /* flock(LOCK_EX) of a directory, waiting for it */
};

typedef struct kl_os kl_os;
struct kl_os {
  void *ud; /* for the table's functions, untouched by the core */
  int (*xOpen)(const kl_os *os, const char *path, int flags, int mode);
  int (*xClose)(const kl_os *os, int fd);
  long (*xRead)(const kl_os *os, int fd, void *buf, size_t n, int64_t pos);
  long (*xWrite)(const kl_os *os, int fd, const void *buf, size_t n, int64_t pos);
  long (*xWritev)(const kl_os *os, int fd, const struct iovec *iov, int cnt, int64_t pos);
  int (*xSync)(const kl_os *os, int fd, int data);
  int (*xTruncate)(const kl_os *os, int fd, int64_t size);
  int (*xStat)(const kl_os *os, const char *path, struct stat *st);
  int (*xFstat)(const kl_os *os, int fd, struct stat *st);
  int (*xRename)(const kl_os *os, const char *from, const char *to);
  int (*xUnlink)(const kl_os *os, const char *path);
  int (*xMkdir)(const kl_os *os, const char *path, int mode);
  int (*xRmdir)(const kl_os *os, const char *path);
  void *(*xOpendir)(const kl_os *os, const char *path);
  int (*xReaddir)(const kl_os *os, void *dir, const char **name, int *is_dir);
  void (*xClosedir)(const kl_os *os, void *dir);
  int (*xLock)(const kl_os *os, int fd, int lock);
  /* lseek(fd, pos, SEEK_DATA): the next position holding data (a hole is
  ** skipped), -1 with ENXIO when only a hole is left. */
  int64_t (*xSeekData)(const kl_os *os, int fd, int64_t pos);
  /* Can the open file fd never shrink, whoever writes it: 1 when its file
  ** system is mounted read-only or its inode is immutable or append-only
  ** (chattr +i / +a: truncation is refused), else 0.  A mapping of such a
  ** file faults no page of its size away, so never raises SIGBUS. */
  int (*xFixedSize)(const kl_os *os, int fd);
  /* mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0) (NULL, not MAP_FAILED, with
  ** errno on failure) and munmap. */
  void *(*xMap)(const kl_os *os, int fd, size_t n);
  int (*xUnmap)(const kl_os *os, void *p, size_t n);
  /* openat and fstatat (flags 0) of a name under the directory dirfd. */
  int (*xOpenAt)(const kl_os *os, int dirfd, const char *name, int flags, int mode);
  int (*xStatAt)(const kl_os *os, int dirfd, const char *name, struct stat *st);
  /* Change notification (Linux inotify).  xWatchOpen makes a queue: a
  ** descriptor, closed with xClose, that never blocks (-1 with errno when
  ** there is none).  xWatch adds the directory path to queue q, for any
  ** change to the directory (an entry made, removed or renamed, its own
  ** attributes, itself removed or moved) or to the content, size or
  ** attributes of a file in it, and returns the watch's number, the one
  ** the queue already gave when path is a directory it watches; -1 with
  ** errno, EOPNOTSUPP when path's file system may change without this
  ** kernel seeing it (every kind but a local disk's or memory's: a network
  ** or FUSE file system is changed by others).  xUnwatch ends watch wd.
  ** xWatchRead takes what q holds, up to KL_WATCH_EVENTS events, and puts
  ** the watch number of each in wds, -1 for an overflow of the queue (what
  ** changed is then not known): the count, 0 when q is empty, -1 with
  ** errno. */
  int (*xWatchOpen)(const kl_os *os);
  int (*xWatch)(const kl_os *os, int q, const char *path);
  int (*xUnwatch)(const kl_os *os, int q, int wd);
  long (*xWatchRead)(const kl_os *os, int q, int *wds);
};

#define KL_WATCH_EVENTS 256

/* The POSIX table (never NULL, never changes). */
const kl_os *kl_os_posix(void);

/* The calls of env's table (kl_os_posix() when env or its table is NULL, or
** for an entry the table leaves NULL). */
int kl_os_open(const kl_env *env, const char *path, int flags, int mode);
int kl_os_close(const kl_env *env, int fd);
long kl_os_read(const kl_env *env, int fd, void *buf, size_t n, int64_t pos);
long kl_os_write(const kl_env *env, int fd, const void *buf, size_t n, int64_t pos);
long kl_os_writev(const kl_env *env, int fd, const struct iovec *iov, int cnt, int64_t pos);
int kl_os_sync(const kl_env *env, int fd, int data);
int kl_os_truncate(const kl_env *env, int fd, int64_t size);
int kl_os_stat(const kl_env *env, const char *path, struct stat *st);
int kl_os_fstat(const kl_env *env, int fd, struct stat *st);
int kl_os_rename(const kl_env *env, const char *from, const char *to);
int kl_os_unlink(const kl_env *env, const char *path);
int kl_os_mkdir(const kl_env *env, const char *path, int mode);
int kl_os_rmdir(const kl_env *env, const char *path);
void *kl_os_opendir(const kl_env *env, const char *path);
int kl_os_readdir(const kl_env *env, void *dir, const char **name, int *is_dir);
void kl_os_closedir(const kl_env *env, void *dir);
int kl_os_lock(const kl_env *env, int fd, int lock);
int64_t kl_os_seek_data(const kl_env *env, int fd, int64_t pos);
int kl_os_fixed_size(const kl_env *env, int fd);
void *kl_os_map(const kl_env *env, int fd, size_t n);
int kl_os_unmap(const kl_env *env, void *p, size_t n);
int kl_os_watch_open(const kl_env *env);
int kl_os_watch(const kl_env *env, int q, const char *path);
int kl_os_unwatch(const kl_env *env, int q, int wd);
long kl_os_watch_read(const kl_env *env, int q, int wds[KL_WATCH_EVENTS]);

/* Open (stat) path + off under the directory dirfd, which holds the first
** off bytes of path: the kernel then walks one name, not the whole path,
** which over thousands of files is a tenth of the calls' time.  A table
** with an xOpen (xStat) of its own but no xOpenAt (xStatAt) is called with
** the whole path, so that a table counting or failing calls sees these;
** so is every table when dirfd < 0. */
int kl_os_open_at(const kl_env *env, int dirfd, const char *path, size_t off, int flags,
                  int mode);
int kl_os_stat_at(const kl_env *env, int dirfd, const char *path, size_t off, struct stat *st);

/* The CPUs this process may run on: its affinity mask's (taskset, a
** cpuset), else the cores online. */
long kl_os_cpus(void);

/* Is a core idle now: fewer threads running than cores online
** (/proc/loadavg's fourth field counts them, the caller's included, read
** through env's table), and more than one CPU the process may run on
** (kl_os_cpus)?  0 when that cannot be read.  A helper thread on a machine,
** or in a process, with no core to spare only takes turns with its caller. */
int kl_os_core_idle(const kl_env *env);

/* Is path a directory (stat through env's table)? */
int kl_os_is_dir(const kl_env *env, const char *path);

#endif
