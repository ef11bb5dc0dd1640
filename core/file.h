/*
** file.h - every byte the core reads from disk comes through here (and
** every byte it writes, kl_write_at):
** positioned reads of an open file (kl_file) and a window of one file held
** in memory (kl_window).
**
** Nothing is memory-mapped unless the file cannot shrink (kl_file_map).  A
** mapping of a file that another process truncates turns the next access
** into SIGBUS, which kills the program that embeds SQLite; a positioned
** read of the same bytes returns short, which is an error we can report.  Kafka itself reads .log data this way (it maps
** only its indexes, which the broker alone resizes); we are a library in
** someone else's process, next to brokers, copies and writers we do not
** control, so indexes are read the same way (index.c keeps the pieces it
** has read).
**
** A file keeps the size it had when opened: reads never look past it, so a
** file that grows while a query runs is read as it was (appends are seen by
** the next query), and one that shrinks gives KL_IO naming the file and the
** position that is gone.  A file replaced by rename keeps being read as the
** old file, through the descriptor.
**
** Every system call goes through the kl_env's table (os.h): tests inject
** errors and short reads there.
*/
#ifndef KL_FILE_H
#define KL_FILE_H

#include "klog.h"

typedef struct kl_file {
  int fd;                   /* -1 when closed */
  int64_t size;             /* bytes when opened; reads stay below it */
  uint64_t dev, ino;        /* identity, to notice a replaced file */
  int capped;               /* size was lowered to a committed end (the
                            ** file may grow past it and stay the same) */
  const char *path;         /* borrowed from the owner, for messages */
  const uint8_t *mem;       /* bytes [mem_at, size) when not NULL, read
                            ** from here, not the file (borrowed) */
  int64_t mem_at;
  const uint8_t *map;       /* bytes [0, size) mapped (kl_file_map), or
                            ** NULL: reads copy from here, no system call */
  const kl_env *env;
} kl_file;

/* The one open(2) of the module (through env's table), for every file and directory it reads or
** writes.  flags as open(2)'s (O_CLOEXEC is added); O_DIRECTORY asks for a
** directory, anything else for a regular file.  A FIFO, a device or a
** socket named like a segment, an index, a checkpoint or a commit record
** would block the caller in open() or read() forever (a FIFO until a
** writer comes): the path is opened without blocking and refused unless
** fstat says it is of the kind asked, so nothing is read from it.
** KL_NOTFOUND (no message) when it does not exist (and O_CREAT is not
** asked); KL_CANTOPEN naming path and what it is ("a FIFO, not a regular
** file"), or the OS reason (errno kept; KL_IO for a failing device).
** *fd is -1 on failure. */
kl_rc kl_fd_open(const kl_env *env, const char *path, int flags, int mode, int *fd,
                 kl_err *err);

/* kl_fd_open, with what the fstat it makes said of the file in *st. */
struct stat;
kl_rc kl_fd_open_stat(const kl_env *env, const char *path, int flags, int mode, int *fd,
                      struct stat *st, kl_err *err);
/* The same with the open made under the directory dirfd holding the first
** off bytes of path (os.h kl_os_open_at; dirfd < 0: the whole path). */
kl_rc kl_fd_open_stat_at(const kl_env *env, int dirfd, const char *path, size_t off, int flags,
                         int mode, int *fd, struct stat *st, kl_err *err);

/* Open path read-only (kl_fd_open).  KL_NOTFOUND when it does not exist (no
** message); otherwise as kl_fd_open fails.  f->path borrows path. */
kl_rc kl_file_open(kl_file *f, const kl_env *env, const char *path, kl_err *err);
void kl_file_close(kl_file *f);

/* Map f's bytes for reading when the OS says the file can never shrink
** (os.h xFixedSize: a read-only file system, an immutable or append-only
** inode), so that no access to the mapping can fault (SIGBUS); else, or
** when the mapping fails, f stays read with pread.  Not for a file whose
** tail is held in memory; a capped one maps its size (the committed
** bytes, which a file that cannot shrink keeps).  1 when mapped.  The
** mapping goes with kl_file_close. */
int kl_file_map(kl_file *f);

/* The bytes from position at to f->size are mem's (borrowed for as long as
** f is open), not the file's: a writer's batch not yet written (commit.h
** kl_view).  The file needs to hold at least at bytes. */
void kl_file_hold_tail(kl_file *f, int64_t at, const uint8_t *mem);

/* Read exactly n bytes at pos into buf.  KL_IO when the read fails or
** comes back short (the file shrank since it was opened), naming the file
** and the position. */
kl_rc kl_file_read(const kl_file *f, int64_t pos, void *buf, size_t n, kl_err *err);

/* The one positioned write of the core (commit.h and writer.h write
** through it): all n bytes of p at pos of fd, retried after a short write.
** Failures as kl_write_rc says, naming path and the position. */
kl_rc kl_write_at(const kl_env *env, int fd, const void *p, size_t n, int64_t pos,
                  const char *path, kl_err *err);

/* Replace the file path, in the directory dir (open as dirfd, or -1 to
** open it here), with the n bytes at p, so that a crash leaves the old file
** or the new one whole, never a part: a temporary file only this process
** writes (path.<pid>-<i>.tmp, made with O_EXCL), synced, renamed over path,
** then the directory synced; temporary files of path that processes no
** longer running left (killed before their rename) are removed.  A
** failure removes the temporary file; errors
** as kl_write_rc says, naming the file. */
kl_rc kl_file_replace(const kl_env *env, int dirfd, const char *dir, const char *path,
                      const void *p, size_t n, kl_err *err);

/* The result code of making or writing a file (open with O_CREAT, mkdir,
** write, fsync, ftruncate, rename) that failed with errno e: KL_NOSPACE
** when the disk or the quota is full, KL_READONLY when the file system or
** a directory's permissions refuse the write, KL_CANTOPEN when a component
** of the path is missing or not a directory, else KL_IO. */
kl_rc kl_write_rc(int e);

/* Is the file still the one opened, with the size it had then (at least
** that size when capped)?  0 when it was resized or replaced (or cannot be
** looked at). */
int kl_file_same(const kl_file *f);

/* Is every byte of [pos, f->size) zero?  Holes of a sparse file (a
** preallocated segment) are passed over without reading them. */
kl_rc kl_file_zero_from(const kl_file *f, int64_t pos, int *zero, kl_err *err);

/*
** A window of one file in memory.  kl_window_get makes [pos, pos+n)
** available and returns a pointer to it, valid until the next call on the
** window.  Reads are sized for the access: a read at the position where the
** window ended (a scan) doubles in size up to 1 MiB, a read elsewhere (a
** lookup) starts small again.  Bytes that peer (another window of the
** same owner, or NULL) holds are copied from it, not read again: a reader's
** context window and its main window often hold the same stretch (a seek
** reads the batches before its index entry, then the scan reads on from
** it), and a copy of a few KiB costs a fraction of a system call.  When
** the peer holds all n bytes asked, nothing is read and the window holds
** what the peer gave (a scan reading on grows it again).  Owned by one
** reader; freed with kl_window_free.
*/
typedef struct kl_window {
  const kl_file *f;         /* file whose bytes are held, or NULL */
  int64_t start;            /* file position of buf.p[0] */
  size_t len;               /* valid bytes */
  size_t next;              /* size of the next sequential read */
  size_t min_read;          /* no read smaller than this (the owner sets
                            ** it to the size of the batches it meets, so
                            ** that one read holds a header and its batch) */
  size_t first;             /* the first read after a jump (0: 4 KiB) */
  kl_buf buf;
} kl_window;

kl_rc kl_window_get(kl_window *w, const kl_window *peer, const kl_file *f, int64_t pos, size_t n,
                    const uint8_t **out, kl_stats *stats, kl_err *err);
void kl_window_free(kl_window *w, const kl_env *env);

#endif
