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
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, KL_LOGCONFIG_FILE);
  return kl_file_replace(env, -1, dir, path, text, n, err);
}
