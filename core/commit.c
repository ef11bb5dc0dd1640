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

static const char magic[8] = {'K', 'L', 'C', 'O', 'M', 'M', 'I', 'T'};

kl_rc kl_commit_read(const char *dir, kl_commit *out, kl_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return KL_NOTFOUND;
    return kl_err_set(err, KL_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  uint8_t p[KL_COMMIT_SIZE + 1];
  ssize_t n;
  do n = pread(fd, p, sizeof p, 0);
  while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (n < 0) return kl_err_set(err, KL_IO, "%s: position 0: read failed: %s", path, strerror(e));
  if (n != KL_COMMIT_SIZE) {
    return kl_err_set(err, KL_CORRUPT, "%s: position 0: %zd bytes, a commit record has %d", path,
                      n, KL_COMMIT_SIZE);
  }
  if (memcmp(p, magic, 8) != 0) {
    return kl_err_set(err, KL_CORRUPT, "%s: position 0: not a kafkalog commit record", path);
  }
  uint32_t crc = kl_crc32c(0, p, 104);
  if (crc != kl_get_u32(p + 104)) {
    return kl_err_set(err, KL_CORRUPT, "%s: position 104: CRC mismatch (stored %08x, computed %08x)",
                      path, kl_get_u32(p + 104), crc);
  }
  if (kl_get_u32(p + 8) != 1) {
    return kl_err_set(err, KL_UNSUPPORTED, "%s: position 8: version %u (this build knows 1)", path,
                      kl_get_u32(p + 8));
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
    return kl_err_set(err, KL_CORRUPT, "%s: position 16: inconsistent record (next offset %lld, "
                      "segment %lld of %lld bytes, log start %lld)", path,
                      (long long)out->next_offset, (long long)out->seg_base,
                      (long long)out->seg_size, (long long)out->log_start);
  }
  return KL_OK;
}

static kl_rc write_all(int fd, const uint8_t *p, size_t n, const char *path, kl_err *err) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pwrite(fd, p + done, n - done, (off_t)done);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return kl_err_set(err, KL_IO, "%s: write failed: %s", path, strerror(errno));
    done += (size_t)k;
  }
  return KL_OK;
}

kl_rc kl_commit_write(const char *dir, int dirfd, const kl_commit *c, kl_err *err) {
  char tmp[4200], path[4200];
  snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, KL_COMMIT_FILE);
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  uint8_t p[KL_COMMIT_SIZE];
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
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return kl_err_set(err, KL_IO, "%s: cannot create: %s", tmp, strerror(errno));
  kl_rc rc = write_all(fd, p, sizeof p, tmp, err);
  if (rc == KL_OK && fsync(fd) != 0) {
    rc = kl_err_set(err, KL_IO, "%s: fsync failed: %s", tmp, strerror(errno));
  }
  close(fd);
  if (rc == KL_OK && rename(tmp, path) != 0) {
    rc = kl_err_set(err, KL_IO, "%s: cannot rename to %s: %s", tmp, KL_COMMIT_FILE,
                    strerror(errno));
  }
  if (rc == KL_OK && dirfd >= 0 && fsync(dirfd) != 0) {
    rc = kl_err_set(err, KL_IO, "%s: fsync of the directory failed: %s", dir, strerror(errno));
  }
  if (rc) unlink(tmp);
  return rc;
}
