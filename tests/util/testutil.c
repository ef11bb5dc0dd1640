/*
** testutil.c - see testutil.h.
*/
#include "testutil.h"

#include "crc32c.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The counts are updated atomically: read-ahead workers and dating helpers
** allocate through the same env on their own threads. */
static void *t_fail_realloc(void *ud, void *p, size_t n) {
  t_failalloc *fa = ud;
  if (n == 0) {
    if (p) __atomic_sub_fetch(&fa->live, 1, __ATOMIC_RELAXED);
    free(p);
    return NULL;
  }
  long call = __atomic_add_fetch(&fa->calls, 1, __ATOMIC_RELAXED);
  if (fa->fail_at && call == fa->fail_at) return NULL;
  void *q = realloc(p, n);
  if (q && !p) __atomic_add_fetch(&fa->live, 1, __ATOMIC_RELAXED);
  return q;
}

const kl_env *t_failenv(t_failalloc *fa, long fail_at) {
  fa->calls = 0;
  fa->fail_at = fail_at;
  fa->live = 0;
  memset(&fa->env, 0, sizeof fa->env);
  fa->env.xRealloc = t_fail_realloc;
  fa->env.ud = fa;
  return &fa->env;
}

char *t_mkdtemp(const char *tag) {
  const char *base = getenv("TMPDIR");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s/kl-%s-XXXXXX", base && *base ? base : "/tmp", tag);
  if (!mkdtemp(buf)) return NULL;
  return strdup(buf);
}

void t_rmdir(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    char buf[4096];
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
      struct stat st;
      if (lstat(buf, &st) == 0 && S_ISDIR(st.st_mode)) t_rmdir(buf); /* a log directory's partitions */
      else unlink(buf);
    }
    closedir(d);
  }
  rmdir(path);
}

uint8_t *t_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(len > 0 ? (size_t)len + 1 : 1);
  if (p && len > 0 && fread(p, 1, (size_t)len, f) != (size_t)len) {
    free(p);
    p = NULL;
  }
  fclose(f);
  if (p) {
    p[len > 0 ? len : 0] = 0;
    *n = (size_t)(len > 0 ? len : 0);
  }
  return p;
}

int t_write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = n ? fwrite(p, 1, n, f) : 0;
  fclose(f);
  return w == n ? 0 : -1;
}

void t_put_file(const char *dir, const char *name, const char *text) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  assert_int_equal(t_write_file(p, text, strlen(text)), 0);
}

size_t t_unhex(const char *h, uint8_t *out, size_t cap) {
  size_t n = strlen(h) / 2;
  assert_true(n <= cap);
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
    out[i] = (uint8_t)v;
  }
  return n;
}

int t_copy_dir(const char *src, const char *dst) {
  DIR *d = opendir(src);
  if (!d) return -1;
  struct dirent *e;
  char a[4096], b[4096];
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(a, sizeof a, "%s/%s", src, e->d_name);
    snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
    size_t n;
    uint8_t *p = t_read_file(a, &n);
    if (!p || t_write_file(b, p, n)) rc = -1;
    free(p);
    struct stat st;
    if (stat(a, &st) == 0) {
      struct timespec ts[2] = {st.st_atim, st.st_mtim};
      utimensat(AT_FDCWD, b, ts, 0);
    }
  }
  closedir(d);
  return rc;
}

/* Read path, let edit change the bytes, write them back. */
static void edit(const char *path, void (*fn)(uint8_t *p, size_t n, const void *arg),
                 const void *arg) {
  size_t n;
  uint8_t *p = t_read_file(path, &n);
  assert_non_null(p);
  fn(p, n, arg);
  assert_int_equal(t_write_file(path, p, n), 0);
  free(p);
}

typedef struct poke_arg {
  int64_t pos;
  const void *bytes;
  size_t n;
  uint8_t mask;             /* XOR instead of copying when bytes is NULL */
  int64_t size;             /* t_fix_crc */
} poke_arg;

static void do_poke(uint8_t *p, size_t n, const void *arg) {
  const poke_arg *a = arg;
  size_t k = a->bytes ? a->n : 1;
  assert_true(a->pos >= 0 && (size_t)a->pos + k <= n);
  if (a->bytes) memcpy(p + a->pos, a->bytes, a->n);
  else p[a->pos] ^= a->mask;
}

static void do_fix_crc(uint8_t *p, size_t n, const void *arg) {
  const poke_arg *a = arg;
  assert_true(a->pos >= 0 && a->size >= 61 && (size_t)(a->pos + a->size) <= n);
  kl_put_u32(p + a->pos + 17, kl_crc32c(0, p + a->pos + 21, (size_t)a->size - 21));
}

void t_flip(const char *path, int64_t pos, uint8_t mask) {
  poke_arg a = {pos, NULL, 0, mask, 0};
  edit(path, do_poke, &a);
}

void t_poke(const char *path, int64_t pos, const void *p, size_t n) {
  poke_arg a = {pos, p, n, 0, 0};
  edit(path, do_poke, &a);
}

void t_poke32(const char *path, int64_t pos, uint32_t v) {
  uint8_t b[4];
  kl_put_u32(b, v);
  t_poke(path, pos, b, 4);
}

void t_fix_crc(const char *path, int64_t pos, int64_t size) {
  poke_arg a = {pos, NULL, 0, 0, size};
  edit(path, do_fix_crc, &a);
}

int t_hold_lock(const char *path) {
  int pfd[2];
  if (pipe(pfd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char c = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 'y' : 'n';
    if (write(pfd[1], &c, 1) != 1 || c != 'y') _exit(1);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  char c = 0;
  int ok = pid > 0 && read(pfd[0], &c, 1) == 1 && c == 'y';
  close(pfd[0]);
  if (!ok && pid > 0) t_release_lock(pid);
  return ok ? pid : -1;
}

void t_release_lock(int pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

char *t_new_partition(const char *tag) {
  char *root = t_mkdtemp(tag);
  if (!root) return NULL;
  char *dir = malloc(strlen(root) + 16);
  if (dir) sprintf(dir, "%s/events-0", root);
  free(root);
  return dir;
}

void t_drop_partition(char *dir) {
  *strrchr(dir, '/') = 0;
  t_rmdir(dir);
  free(dir);
}

uint64_t t_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
