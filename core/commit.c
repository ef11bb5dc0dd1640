/*
** commit.c - see commit.h.
*/
#include "commit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "file.h"
#include "os.h"

static const char magic[8] = {'K', 'L', 'C', 'O', 'M', 'M', 'I', 'T'};

/* Decode the slot at p: 1 valid, 0 empty or invalid (*why says how). */
static int decode(const uint8_t *p, kl_commit *out, const char **why) {
  if (memcmp(p, magic, 8) != 0) {
    *why = "not a kafkalog commit record";
    return 0;
  }
  if (kl_crc32c(0, p, 104) != kl_get_u32(p + 104)) {
    *why = "CRC mismatch";
    return 0;
  }
  if (kl_get_u32(p + 8) != 1) {
    *why = "unknown version (this build knows 1)";
    return 0;
  }
  out->flags = kl_get_u32(p + 12);
  out->next_offset = kl_get_i64(p + 16);
  out->seg_base = kl_get_i64(p + 24);
  out->seg_size = kl_get_i64(p + 32);
  out->log_start = kl_get_i64(p + 40);
  out->gen = (uint64_t)kl_get_i64(p + 48);
  out->oidx_n = kl_get_i64(p + 56);
  out->tidx_n = kl_get_i64(p + 64);
  out->last_index_pos = kl_get_i64(p + 72);
  out->max_ts = kl_get_i64(p + 80);
  out->max_ts_off = kl_get_i64(p + 88);
  out->last_tidx_ts = kl_get_i64(p + 96);
  if (out->seg_base < 0 || out->seg_size < 0 || out->seg_size > INT32_MAX ||
      out->next_offset < out->seg_base || out->log_start > out->next_offset ||
      out->oidx_n < 0 || out->tidx_n < 0 || out->last_index_pos < 0 ||
      out->last_index_pos > out->seg_size) {
    *why = "inconsistent fields";
    return 0;
  }
  return 1;
}

kl_rc kl_commit_read_fd(const kl_env *env, int fd, const char *dir, kl_commit *out, kl_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  uint8_t p[2 * KL_COMMIT_SLOT + 1];
  long n;
  do n = kl_os_read(env, fd, p, sizeof p, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    return kl_err_set(err, KL_IO, "%s: position 0: read failed: %s", path, strerror(errno));
  }
  if (n != 2 * KL_COMMIT_SLOT) {
    return kl_err_set(err, KL_CORRUPT, "%s: position 0: %ld bytes, a commit record file has %d",
                      path, n, 2 * KL_COMMIT_SLOT);
  }
  kl_commit c[2];
  const char *why[2] = {NULL, NULL};
  int ok0 = decode(p, &c[0], &why[0]), ok1 = decode(p + KL_COMMIT_SLOT, &c[1], &why[1]);
  if (!ok0 && !ok1) {
    return kl_err_set(err, KL_CORRUPT, "%s: position 0: no valid slot (0: %s; %d: %s)", path,
                      why[0], KL_COMMIT_SLOT, why[1]);
  }
  *out = ok0 && (!ok1 || c[0].gen > c[1].gen) ? c[0] : c[1];
  return KL_OK;
}

kl_rc kl_commit_open(const kl_env *env, const char *dir, int *fd, kl_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  return kl_fd_open(env, path, O_RDONLY, 0, fd, err);
}

kl_rc kl_commit_read(const kl_env *env, const char *dir, kl_commit *out, kl_err *err) {
  int fd;
  kl_rc rc = kl_commit_open(env, dir, &fd, err);
  if (rc) return rc;
  rc = kl_commit_read_fd(env, fd, dir, out, err);
  kl_os_close(env, fd);
  return rc;
}

kl_rc kl_commit_write(const kl_env *env, const char *dir, int dirfd, int *fd, const kl_commit *c,
                      kl_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  uint8_t p[KL_COMMIT_SLOT];
  memset(p, 0, sizeof p);
  memcpy(p, magic, 8);
  kl_put_u32(p + 8, 1);
  kl_put_u32(p + 12, c->flags);
  kl_put_u64(p + 16, (uint64_t)c->next_offset);
  kl_put_u64(p + 24, (uint64_t)c->seg_base);
  kl_put_u64(p + 32, (uint64_t)c->seg_size);
  kl_put_u64(p + 40, (uint64_t)c->log_start);
  kl_put_u64(p + 48, c->gen);
  kl_put_u64(p + 56, (uint64_t)c->oidx_n);
  kl_put_u64(p + 64, (uint64_t)c->tidx_n);
  kl_put_u64(p + 72, (uint64_t)c->last_index_pos);
  kl_put_u64(p + 80, (uint64_t)c->max_ts);
  kl_put_u64(p + 88, (uint64_t)c->max_ts_off);
  kl_put_u64(p + 96, (uint64_t)c->last_tidx_ts);
  kl_put_u32(p + 104, kl_crc32c(0, p, 104));
  kl_rc rc = KL_OK;
  if (*fd < 0) {
    rc = kl_fd_open(env, path, O_RDWR, 0, fd, err);
    if (rc == KL_NOTFOUND) {
      /* A new file: both slots at once (the other empty), then made
      ** durable with the directory entry. */
      char tmp[4300];
      snprintf(tmp, sizeof tmp, "%s.tmp", path);
      int t;
      rc = kl_fd_open(env, tmp, O_RDWR | O_CREAT | O_TRUNC, 0644, &t, err);
      if (rc) return rc;
      uint8_t two[2 * KL_COMMIT_SLOT];
      memset(two, 0, sizeof two);
      memcpy(two + (c->gen % 2) * KL_COMMIT_SLOT, p, KL_COMMIT_SLOT);
      rc = kl_write_at(env, t, two, sizeof two, 0, tmp, err);
      if (rc == KL_OK && kl_os_sync(env, t, 1) != 0) {
        rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync failed: %s", tmp, strerror(errno));
      }
      if (rc == KL_OK && kl_os_rename(env, tmp, path) != 0) {
        rc = kl_err_set(err, KL_IO, "%s: cannot rename: %s", tmp, strerror(errno));
      }
      if (rc == KL_OK && dirfd >= 0 && kl_os_sync(env, dirfd, 0) != 0) {
        rc = kl_err_set(err, KL_IO, "%s: fsync of the directory failed: %s", dir, strerror(errno));
      }
      if (rc) {
        kl_os_close(env, t);
        kl_os_unlink(env, tmp);
        return rc;
      }
      *fd = t;
      return KL_OK;
    }
    if (rc) return rc;
  }
  rc = kl_write_at(env, *fd, p, sizeof p, (int64_t)(c->gen % 2) * KL_COMMIT_SLOT, path, err);
  if (rc == KL_OK && kl_os_sync(env, *fd, 1) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync failed: %s", path, strerror(errno));
  }
  return rc;
}
