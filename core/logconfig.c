/*
** logconfig.c - see logconfig.h.
*/
#include "logconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

#define MAX_CONFIG (64 << 10)

kl_rc kl_logconfig_read(const kl_env *env, const char *dir, kl_buf *out, kl_err *err) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, KL_LOGCONFIG_FILE);
  out->len = 0;
  kl_file f;
  kl_rc rc = kl_file_open(&f, env, path, err);
  if (rc) return rc;
  if (f.size > MAX_CONFIG) {
    rc = kl_err_set(err, KL_CORRUPT, "%s: %lld bytes, more than options take", path,
                    (long long)f.size);
  } else if ((rc = kl_buf_reserve(env, out, (size_t)f.size + 1)) != KL_OK) {
    rc = kl_err_set(err, rc, "out of memory reading %s", path);
  } else if ((rc = kl_file_read(&f, 0, out->p, (size_t)f.size, err)) == KL_OK) {
    out->len = (size_t)f.size;
    out->p[out->len] = 0;
  }
  kl_file_close(&f);
  return rc;
}

kl_rc kl_logconfig_write(const kl_env *env, const char *dir, const char *text, size_t n,
                         kl_err *err) {
  (void)env;
  char path[4300], tmp[4400];
  snprintf(path, sizeof path, "%s/%s", dir, KL_LOGCONFIG_FILE);
  /* The temporary name is this writer's alone (O_EXCL), so two writers
  ** never write into one another's file. */
  int fd = -1;
  kl_rc rc = KL_OK;
  for (unsigned i = 0; fd < 0; i++) {
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", path, (long)getpid(), i);
    rc = kl_fd_open(tmp, O_RDWR | O_CREAT | O_EXCL, 0644, &fd, err);
    if (rc == KL_OK) break;
    if (errno != EEXIST || i == 100) return rc;
    kl_err_clear(err);
  }
  rc = kl_write_at(fd, text, n, 0, tmp, err);
  if (rc == KL_OK && fdatasync(fd) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync failed: %s", tmp, strerror(errno));
  }
  close(fd);
  if (rc == KL_OK && rename(tmp, path) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: cannot rename to %s: %s", tmp,
                    KL_LOGCONFIG_FILE, strerror(errno));
  }
  if (rc) {
    unlink(tmp);
    return rc;
  }
  int dfd;
  if ((rc = kl_fd_open(dir, O_RDONLY | O_DIRECTORY, 0, &dfd, err)) != KL_OK) return rc;
  if (fsync(dfd) != 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: fsync of the directory failed: %s", dir,
                    strerror(errno));
  }
  close(dfd);
  return rc;
}
