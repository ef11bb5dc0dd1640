/*
** test_shortest.c - the text of floats and doubles: fixed cases of each
** layout, and a million values of every magnitude (random bit patterns,
** hundredths, ten-thousandths, floats) each checked to read back as the
** same value, to be no longer than the smallest %.Pg that reads back
** (P from 15, floats from 6, to 17) and, where it has as many digits, to
** be that text.
*/
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shortest.h"

static void is(double v, int is_float, const char *want) {
  char t[KL_SHORTEST_MAX];
  size_t n = kl_shortest(v, is_float, t);
  if (n != strlen(t) || strcmp(t, want) != 0) fail_msg("%.17g: got %s, want %s", v, t, want);
}

static void test_layouts(void **state) {
  is(0, 0, "0");
  is(-0.0, 0, "-0");
  is(100, 0, "100");
  is(-42, 0, "-42");
  is(9007199254740991.0, 0, "9007199254740991"); /* 2^53 - 1: whole */
  is(9007199254740992.0, 0, "9007199254740992"); /* 2^53: %.16g */
  is(1e20, 0, "1e+20");
  is(1.5e300, 0, "1.5e+300");
  is(123.92, 0, "123.92");
  is(-123.92, 0, "-123.92");
  is(0.1, 0, "0.1");
  is(0.0001, 0, "0.0001");
  is(0.00012, 0, "0.00012");
  is(1e-05, 0, "1e-05");
  is(1.25e-7, 0, "1.25e-07");
  is(3.141592653589793, 0, "3.141592653589793");
  is(0.1 + 0.2, 0, "0.30000000000000004");
  is(123456789012345.6, 0, "123456789012345.6");
  is(1234567890123456.8, 0, "1234567890123456.8");
  is(5e-324, 0, "5e-324"); /* %.15g would say 4.94065645841247e-324 */
  is(1.7976931348623157e308, 0, "1.7976931348623157e+308");
  is(2.5, 0, "2.5");
  is(0.5, 0, "0.5");
  is(-0.05, 0, "-0.05");
  is(4503599627370495.5, 0, "4503599627370495.5");
  is((double)0.1f, 1, "0.1");
  is((double)3.4028235e38f, 1, "3.4028235e+38");
  is((double)1.17549435e-38f, 1, "1.1754944e-38");
  is((double)1234567.5f, 1, "1234567.5");
  is((double)1e-7f, 1, "1e-07");
  is((double)16777216.0f, 1, "16777216");
  is((double)3e20f, 1, "3e+20");
}

/* The text of the previous decoder: the first of %.15g (floats %.6g),
** %.16g, %.17g that reads back. */
static size_t reference(double v, int is_float, char *t, size_t n) {
  int k = 0;
  for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
    k = snprintf(t, n, "%.*g", prec, v);
    if (is_float ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v) break;
  }
  return (size_t)k;
}

static int digits(const char *t) {
  int n = 0, lead = 1;
  for (; *t && *t != 'e'; t++) {
    if (*t < '0' || *t > '9') continue;
    if (lead && *t == '0') continue; /* leading zeros are not digits */
    lead = 0;
    n++;
  }
  return n ? n : 1;
}

static void check(double v, int is_float) {
  if (!isfinite(v)) return;
  char t[KL_SHORTEST_MAX], r[64];
  kl_shortest(v, is_float, t);
  if (is_float ? strtof(t, NULL) != (float)v : strtod(t, NULL) != v) {
    fail_msg("%.17g: %s does not read back", v, t);
  }
  reference(v, is_float, r, sizeof r);
  if (fabs(v) < 9007199254740992.0 && v == trunc(v)) return; /* whole, checked above */
  if (digits(t) > digits(r)) fail_msg("%.17g: %s is longer than %s", v, t, r);
  if (digits(t) == digits(r) && strcmp(t, r) != 0) fail_msg("%.17g: %s, not %s", v, t, r);
}

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void test_against_printf(void **state) {
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 400000; i++) {
    uint64_t u = next(&x);
    double v;
    memcpy(&v, &u, 8);
    check(v, 0);
    uint32_t w = (uint32_t)(u >> 11);
    float f;
    memcpy(&f, &w, 4);
    check((double)f, 1);
  }
  for (int i = 0; i < 200000; i++) {
    int64_t k = (int64_t)(next(&x) % 200000000) - 100000000;
    check((double)k / 100, 0);
    check((double)k / 10000, 0);
    check((double)k / 1e7, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts),
      cmocka_unit_test(test_against_printf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
