/*
** testutil.h - helpers shared by the cmocka tests: an allocator that fails
** on request, temporary directories, whole-file reads and writes.
*/
#ifndef KL_TESTUTIL_H
#define KL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "klog.h"

/* An allocator that counts allocations and fails the one numbered
** fail_at (1-based; 0 = never fail).  Use t_failenv(&fa) as the kl_env. */
typedef struct t_failalloc {
  long calls;     /* allocations and reallocations so far */
  long fail_at;   /* which call fails, 0 = none */
  long live;      /* blocks currently allocated (leak check) */
  kl_env env;
} t_failalloc;
const kl_env *t_failenv(t_failalloc *fa, long fail_at);

/* The tests' one pseudo-random generator (splitmix64): the next number of
** the sequence seeded by *s, which it advances.  A failing case is
** replayed from its seed. */
uint64_t t_rand(uint64_t *s);

/* Create a fresh empty directory under $TMPDIR (or /tmp); returns a
** malloc'd path.  t_rmdir removes it and everything inside. */
char *t_mkdtemp(const char *tag);
void t_rmdir(const char *path);

/* Read a whole file (malloc'd, *n set) or NULL; write bytes to a file. */
uint8_t *t_read_file(const char *path, size_t *n);
int t_write_file(const char *path, const void *p, size_t n);
/* Write text as the file dir/name; fails the current test when it cannot. */
void t_put_file(const char *dir, const char *name, const char *text);

/* The bytes of the hex text h (two digits a byte, either case) into out,
** at most cap of them; returns how many.  A pair that does not read as
** hex, or more bytes than cap, fails the current test. */
size_t t_unhex(const char *h, uint8_t *out, size_t cap);

/* Copy every regular file of src into dst (dst must exist). */
int t_copy_dir(const char *src, const char *dst);

/* Damage: edit a file in place (failing the current test if it cannot).
** t_flip XORs the byte at pos with mask; t_poke writes n bytes at pos;
** t_poke32 a big-endian u32; t_fix_crc recomputes the CRC-32C of the v2
** batch of size bytes at pos, so that damage under it reaches the record
** decoder (a hostile rather than a damaged file). */
void t_flip(const char *path, int64_t pos, uint8_t mask);
void t_poke(const char *path, int64_t pos, const void *p, size_t n);
void t_poke32(const char *path, int64_t pos, uint32_t v);
void t_fix_crc(const char *path, int64_t pos, int64_t size);

/* A process holding an exclusive classic POSIX lock on the whole of path
** (made when missing), as a Kafka broker holds <log dir>/.lock with
** FileChannel.tryLock: its pid once the lock is held, or -1 when it could
** not be taken.  t_release_lock ends the process, and so the lock. */
int t_hold_lock(const char *path);
void t_release_lock(int pid);

/* A path <fresh temporary directory>/events-0 (malloc'd; the partition
** directory itself is not made); t_drop_partition removes the temporary
** directory and frees the path. */
char *t_new_partition(const char *tag);
void t_drop_partition(char *dir);


#endif
