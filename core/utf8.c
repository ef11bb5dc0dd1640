/*
** utf8.c - UTF-8 validation and replacement.
*/
#include "utf8.h"

#include <string.h>

/* The length of the UTF-8 sequence at p (at most n bytes), 0 when none
** starts there. */
static size_t seq_len(const uint8_t *p, size_t n) {
  uint8_t c = p[0];
  if (c < 0x80) return 1;
  size_t k;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) k = 1, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) k = 2, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) k = 3, cp = c & 0x07;
  else return 0;
  if (n <= k) return 0;
  for (size_t j = 1; j <= k; j++) {
    if ((p[j] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[j] & 0x3f);
  }
  if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
      cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return k + 1;
}

int kl_utf8_valid(const uint8_t *p, size_t n) {
  for (size_t i = 0, k; i < n; i += k) {
    if ((k = seq_len(p + i, n - i)) == 0) return 0;
  }
  return 1;
}

char *kl_utf8_scrub(const kl_env *env, const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  char *out = kl_malloc(env, 3 * n + 1); /* each byte at most U+FFFD */
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t k = seq_len(p + i, n - i);
    if (k) {
      memcpy(out + o, s + i, k);
      o += k;
      i += k;
    } else {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
    }
  }
  out[o] = 0;
  return out;
}
