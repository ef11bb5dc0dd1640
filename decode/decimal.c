/*
** decimal.c - a decimal number's text (decimal.h).
*/
#include "decimal.h"

/* The digits of the magnitude in mag (n bytes, destroyed), least
** significant first, into digits; their count (0 for zero). */
static size_t magnitude_digits(uint8_t *mag, size_t n, char *digits) {
  size_t nd = 0, start = 0;
  while (start < n && mag[start] == 0) start++;
  while (start < n) {
    uint32_t rem = 0;
    for (size_t i = start; i < n; i++) {
      uint32_t cur = (rem << 8) | mag[i];
      mag[i] = (uint8_t)(cur / 10);
      rem = cur % 10;
    }
    digits[nd++] = (char)('0' + rem);
    while (start < n && mag[start] == 0) start++;
  }
  return nd;
}

size_t kl_decimal_text(const uint8_t *p, size_t n, int32_t scale, char *out) {
  if (n > KL_DECIMAL_MAX_BYTES || scale > KL_DECIMAL_MAX_SCALE || scale < -KL_DECIMAL_MAX_SCALE) {
    return 0;
  }
  uint8_t mag[KL_DECIMAL_MAX_BYTES];
  int neg = n > 0 && (p[0] & 0x80);
  for (size_t i = 0; i < n; i++) mag[i] = neg ? (uint8_t)~p[i] : p[i];
  for (size_t i = n; neg && i-- > 0;) { /* two's complement: invert and add one */
    if (++mag[i] != 0) break;
  }
  char digits[3 * KL_DECIMAL_MAX_BYTES + 1];
  size_t nd = magnitude_digits(mag, n, digits);
  int zero = nd == 0;
  if (zero) digits[nd++] = '0';
  char *w = out;
  if (neg) *w++ = '-';
  if (scale < 0) {
    for (size_t i = nd; i-- > 0;) *w++ = digits[i];
    for (int32_t i = 0; !zero && i < -scale; i++) *w++ = '0';
    return (size_t)(w - out);
  }
  size_t sc = (size_t)scale;
  if (nd <= sc) { /* no integer digit: "0." and the fraction's leading zeros */
    *w++ = '0';
    *w++ = '.';
    for (size_t i = nd; i < sc; i++) *w++ = '0';
    for (size_t i = nd; i-- > 0;) *w++ = digits[i];
    return (size_t)(w - out);
  }
  for (size_t i = nd; i-- > 0;) {
    *w++ = digits[i];
    if (i == sc && sc > 0) *w++ = '.';
  }
  return (size_t)(w - out);
}
