/*
** faultos.h - a system-call table (core/os.h) for tests that counts every
** call and fails the chosen ones, as SQLite's test_vfs.c does for its VFS:
** the Nth call (or every call from the Nth on: a disk that went away), of
** the kinds asked (T_OS_WRITE | T_OS_SYNC ...) on paths holding a given
** string, fails with the errno asked (EIO unless set).  Calls on a
** descriptor count under the path it was opened with.  Everything else
** goes to the POSIX table.
**
**   t_faultos f;
**   t_faultos_init(&f);
**   f.fail_at = 7;                  // the 7th call counted fails
**   kl_writer_open(&f.env, ...);    // every call of the writer goes here
**   ...; f.failed says whether it happened, f.failed_path on what
**   t_faultos_free(&f);
*/
#ifndef KL_FAULTOS_H
#define KL_FAULTOS_H

#include "klog.h"
#include "os.h"

/* Kinds of call. */
enum {
  T_OS_OPEN = 1 << 0,
  T_OS_CLOSE = 1 << 1,
  T_OS_READ = 1 << 2,
  T_OS_WRITE = 1 << 3,    /* pwrite, pwritev */
  T_OS_SYNC = 1 << 4,     /* fsync, fdatasync */
  T_OS_TRUNCATE = 1 << 5,
  T_OS_STAT = 1 << 6,     /* stat, fstat */
  T_OS_RENAME = 1 << 7,
  T_OS_UNLINK = 1 << 8,
  T_OS_MKDIR = 1 << 9,    /* mkdir, rmdir */
  T_OS_LIST = 1 << 10,    /* opendir, each readdir */
  T_OS_LOCK = 1 << 11,
  T_OS_SEEK = 1 << 12,    /* lseek(SEEK_DATA) */
  T_OS_ALL = (1 << 13) - 1,
  /* What changes a file or a directory. */
  T_OS_CHANGES = T_OS_WRITE | T_OS_SYNC | T_OS_TRUNCATE | T_OS_RENAME | T_OS_UNLINK | T_OS_MKDIR
};

#define T_OS_KINDS 13
#define T_OS_MAX_FD 4096

typedef struct t_faultos {
  kl_os os;                 /* the table (os.ud points back here) */
  kl_env env;               /* C allocator, this table: give &env to the core */
  /* What fails. */
  long fail_at;             /* the counted call that fails (1-based; 0: none) */
  int persist;              /* and every counted call after it */
  int fail_errno;           /* EIO when 0 */
  unsigned kinds;           /* kinds counted (0: T_OS_ALL) */
  const char *path_has;     /* only calls on paths holding this (NULL: all) */
  int fake_sync;            /* a sync that does not fail returns at once: the
                            ** tests of errors need no durability, and each
                            ** fsync costs milliseconds */
  /* What happened. */
  long calls;               /* calls counted (kinds and path_has) */
  long by_kind[T_OS_KINDS]; /* every call, counted or not, by kind bit */
  long failed;              /* calls failed */
  char failed_path[4200];   /* the path of the first call failed */
  unsigned failed_kind;
  char failed_names[16][128]; /* the last components of the first 16
                              ** distinct paths failed */
  int nfailed_names;
  char *fdpath[T_OS_MAX_FD]; /* the path each open descriptor was opened with */
} t_faultos;

void t_faultos_init(t_faultos *f);
void t_faultos_free(t_faultos *f);
/* Calls of the kinds in mask made so far. */
long t_faultos_count(const t_faultos *f, unsigned mask);
/* Does s name (hold the last component of) a path a failed call was on? */
int t_faultos_names_failed(const t_faultos *f, const char *s);
/* The name of a kind bit ("write"). */
const char *t_faultos_kind(unsigned kind);

#endif
