/*
** bytes.c - the test vectors' byte builder (bytes.h).
*/
#include "bytes.h"

#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

void t_u8(t_bytes *t, unsigned v) {
  assert_true(t->n < sizeof t->b);
  t->b[t->n++] = (uint8_t)v;
}

void t_be16(t_bytes *t, int v) {
  t_u8(t, ((unsigned)v >> 8) & 0xff);
  t_u8(t, (unsigned)v & 0xff);
}

void t_be32(t_bytes *t, int32_t v) {
  for (int s = 24; s >= 0; s -= 8) t_u8(t, ((uint32_t)v >> s) & 0xff);
}

void t_be64(t_bytes *t, int64_t v) {
  for (int s = 56; s >= 0; s -= 8) t_u8(t, (unsigned)(((uint64_t)v >> s) & 0xff));
}

void t_raw(t_bytes *t, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) t_u8(t, ((const uint8_t *)p)[i]);
}

void t_str(t_bytes *t, const char *s) {
  if (!s) {
    t_be16(t, -1);
    return;
  }
  t_be16(t, (int)strlen(s));
  t_raw(t, s, strlen(s));
}

void t_cstr(t_bytes *t, const char *s) {
  if (!s) {
    t_u8(t, 0);
    return;
  }
  assert_true(strlen(s) + 1 < 0x80);
  t_u8(t, (unsigned)strlen(s) + 1);
  t_raw(t, s, strlen(s));
}
