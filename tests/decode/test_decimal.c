/*
** test_decimal.c - decode/decimal: the text of two's-complement unscaled
** values with positive, zero and negative scales, written out here by
** hand; random values of every length up to the bound against a reference
** built another way (Horner's rule in base 10, the point placed on the
** string); the room the header promises is never exceeded; lengths and
** scales past the bounds are refused.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"

static void expect(const uint8_t *p, size_t n, int32_t scale, const char *want) {
  char out[KL_DECIMAL_TEXT_MAX(KL_DECIMAL_MAX_BYTES, KL_DECIMAL_MAX_SCALE)];
  size_t len = kl_decimal_text(p, n, scale, out);
  if (len != strlen(want) || memcmp(out, want, len) != 0) {
    fail_msg("scale %d: got %.*s, want %s", (int)scale, (int)len, out, want);
  }
}

static void test_by_hand(void **state) {
  (void)state;
  static const uint8_t one[] = {0x01}, minus_one[] = {0xff}, m128[] = {0x80}, p128[] = {0x00, 0x80};
  static const uint8_t n12345[] = {0x30, 0x39}, m12345[] = {0xcf, 0xc7}, five[] = {0, 0, 0, 5};
  static const uint8_t two64[] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t m2_64[] = {0xff, 0, 0, 0, 0, 0, 0, 0, 0};
  expect(NULL, 0, 0, "0");
  expect(NULL, 0, 2, "0.00");
  expect(NULL, 0, -3, "0"); /* zero takes no zeros */
  expect(one, 1, 0, "1");
  expect(minus_one, 1, 0, "-1");
  expect(minus_one, 1, 3, "-0.001");
  expect(m128, 1, 0, "-128");
  expect(p128, 2, 0, "128");
  expect(n12345, 2, 2, "123.45");
  expect(n12345, 2, 5, "0.12345");
  expect(n12345, 2, 7, "0.0012345");
  expect(n12345, 2, 4, "1.2345");
  expect(n12345, 2, -2, "1234500");
  expect(m12345, 2, 2, "-123.45");
  expect(m12345, 2, 6, "-0.012345");
  expect(five, 4, 1, "0.5");
  expect(two64, 9, 0, "18446744073709551616");
  expect(m2_64, 9, 0, "-18446744073709551616");
}

/* The reference: the magnitude's digits by Horner's rule (times 256 plus
** the byte, in base 10), most significant first, into d; their count. */
static size_t horner(const uint8_t *p, size_t n, int neg, char *d) {
  static int acc[2048];
  size_t nd = 1;
  acc[0] = 0; /* least significant first */
  uint8_t mag[KL_DECIMAL_MAX_BYTES + 1];
  int plus = 1;
  for (size_t i = n; i-- > 0;) { /* a negative value's magnitude: invert and add one */
    unsigned b = neg ? (unsigned)(uint8_t)~p[i] + (unsigned)plus : p[i];
    plus = neg && b > 0xff;
    mag[i] = (uint8_t)b;
  }
  for (size_t i = 0; i < n; i++) {
    int carry = mag[i];
    for (size_t k = 0; k < nd; k++) {
      int v = acc[k] * 256 + carry;
      acc[k] = v % 10;
      carry = v / 10;
    }
    while (carry) {
      acc[nd++] = carry % 10;
      carry /= 10;
    }
  }
  while (nd > 1 && acc[nd - 1] == 0) nd--;
  for (size_t k = 0; k < nd; k++) d[k] = (char)('0' + acc[nd - 1 - k]);
  d[nd] = 0;
  return nd;
}

static void reference(const uint8_t *p, size_t n, int32_t scale, char *out) {
  char d[2048];
  int neg = n > 0 && (p[0] & 0x80);
  size_t nd = horner(p, n, neg, d);
  int zero = nd == 1 && d[0] == '0';
  char *w = out;
  if (neg) *w++ = '-';
  if (scale <= 0) {
    w += sprintf(w, "%s", d);
    for (int32_t i = 0; !zero && i < -scale; i++) *w++ = '0';
  } else {
    char pad[4096];
    size_t sc = (size_t)scale, np = nd > sc ? nd : sc + 1; /* one integer digit */
    memset(pad, '0', np - nd);
    memcpy(pad + (np - nd), d, nd);
    memcpy(w, pad, np - sc);
    w += np - sc;
    *w++ = '.';
    memcpy(w, pad + (np - sc), sc);
    w += sc;
  }
  *w = 0;
}

static void test_random_against_reference(void **state) {
  (void)state;
  uint64_t seed = 19;
  uint8_t p[KL_DECIMAL_MAX_BYTES];
  for (int round = 0; round < 3000; round++) {
    size_t n = (size_t)(t_rand(&seed) % (KL_DECIMAL_MAX_BYTES + 1));
    if (round < 2) n = KL_DECIMAL_MAX_BYTES; /* the longest, both signs */
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)t_rand(&seed);
    if (round == 0 && n) p[0] = 0x7f;
    if (round == 1 && n) p[0] = 0x80;
    if (n && round % 7 == 0) memset(p, round % 2 ? 0xff : 0, n / 2); /* long sign runs */
    int32_t scale = (int32_t)(t_rand(&seed) % (2 * KL_DECIMAL_MAX_SCALE + 1)) - KL_DECIMAL_MAX_SCALE;
    if (round % 3 == 0) scale = (int32_t)(t_rand(&seed) % 40) - 10;
    char want[4096];
    reference(p, n, scale, want);
    /* Exactly the room promised, and a guard byte after it untouched. */
    size_t room = KL_DECIMAL_TEXT_MAX(n, scale);
    char *out = malloc(room + 1);
    assert_non_null(out);
    out[room] = 0x5a;
    size_t len = kl_decimal_text(p, n, scale, out);
    assert_int_equal(out[room], 0x5a);
    if (len != strlen(want) || memcmp(out, want, len) != 0) {
      fail_msg("round %d (n %zu, scale %d): got %.*s, want %s", round, n, (int)scale, (int)len,
               out, want);
    }
    free(out);
  }
}

static void test_bounds_refused(void **state) {
  (void)state;
  static uint8_t p[KL_DECIMAL_MAX_BYTES + 1];
  char out[KL_DECIMAL_TEXT_MAX(KL_DECIMAL_MAX_BYTES + 1, KL_DECIMAL_MAX_SCALE + 1)];
  p[KL_DECIMAL_MAX_BYTES] = 1;
  assert_int_equal(kl_decimal_text(p, KL_DECIMAL_MAX_BYTES + 1, 0, out), 0);
  assert_int_equal(kl_decimal_text(p, 1, KL_DECIMAL_MAX_SCALE + 1, out), 0);
  assert_int_equal(kl_decimal_text(p, 1, -KL_DECIMAL_MAX_SCALE - 1, out), 0);
  assert_int_equal(kl_decimal_text(p, KL_DECIMAL_MAX_BYTES, KL_DECIMAL_MAX_SCALE, out),
                   KL_DECIMAL_MAX_SCALE + 2); /* zero: "0." and every fraction digit */
  assert_int_equal(kl_decimal_text(p, KL_DECIMAL_MAX_BYTES, -KL_DECIMAL_MAX_SCALE, out), 1);
  assert_int_equal(kl_decimal_text(p + 1, KL_DECIMAL_MAX_BYTES, -KL_DECIMAL_MAX_SCALE, out),
                   KL_DECIMAL_MAX_SCALE + 1); /* one, and a zero a step */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_random_against_reference),
      cmocka_unit_test(test_bounds_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
