/*
** klog.c - allocator hook, error record and byte buffer shared by the core.
*/
#include "klog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kl_rc_name(kl_rc rc) {
  switch (rc) {
    case KL_OK: return "KL_OK";
    case KL_DONE: return "KL_DONE";
    case KL_NOTFOUND: return "KL_NOTFOUND";
    case KL_NOMEM: return "KL_NOMEM";
    case KL_IO: return "KL_IO";
    case KL_CORRUPT: return "KL_CORRUPT";
    case KL_RANGE: return "KL_RANGE";
    case KL_READONLY: return "KL_READONLY";
    case KL_BUSY: return "KL_BUSY";
    case KL_MISUSE: return "KL_MISUSE";
    case KL_UNSUPPORTED: return "KL_UNSUPPORTED";
    case KL_FULL: return "KL_FULL";
    case KL_NOSPACE: return "KL_NOSPACE";
    case KL_CANTOPEN: return "KL_CANTOPEN";
  }
  return "KL_?";
}

void *kl_realloc(const kl_env *env, void *p, size_t n) {
  if (n == 0) n = 1; /* a zero-byte request must not look like a free */
  if (env && env->xRealloc) return env->xRealloc(env->ud, p, n);
  return realloc(p, n);
}

void *kl_malloc(const kl_env *env, size_t n) { return kl_realloc(env, NULL, n); }

void kl_free(const kl_env *env, void *p) {
  if (!p) return;
  if (env && env->xRealloc) {
    env->xRealloc(env->ud, p, 0);
  } else {
    free(p);
  }
}

char *kl_strdup(const kl_env *env, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = kl_malloc(env, n);
  if (d) memcpy(d, s, n);
  return d;
}

kl_rc kl_err_set(kl_err *err, kl_rc rc, const char *fmt, ...) {
  if (err && err->rc == KL_OK) {
    va_list ap;
    err->rc = rc;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return rc;
}

void kl_err_clear(kl_err *err) {
  if (err) {
    err->rc = KL_OK;
    err->msg[0] = 0;
  }
}

kl_rc kl_buf_reserve(const kl_env *env, kl_buf *b, size_t n) {
  if (n <= b->cap) return KL_OK;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < n) cap *= 2;
  uint8_t *p = kl_realloc(env, b->p, cap);
  if (!p) return KL_NOMEM;
  b->p = p;
  b->cap = cap;
  return KL_OK;
}

kl_rc kl_buf_append(const kl_env *env, kl_buf *b, const void *p, size_t n) {
  if (n == 0) return KL_OK;
  kl_rc rc = kl_buf_reserve(env, b, b->len + n);
  if (rc) return rc;
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return KL_OK;
}

void kl_buf_free(const kl_env *env, kl_buf *b) {
  kl_free(env, b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
