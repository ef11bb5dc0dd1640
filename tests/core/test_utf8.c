/*
** test_utf8.c - the UTF-8 rule (overlong forms, surrogates, the range,
** cut sequences) and the replacement of stray bytes by U+FFFD.
*/
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static int valid(const char *s) { return kl_utf8_valid((const uint8_t *)s, strlen(s)); }

static void test_utf8_valid(void **state) {
  (void)state;
  assert_true(valid(""));
  assert_true(valid("orders"));
  assert_true(valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")); /* é € 😀 */
  assert_true(valid("\xf4\x8f\xbf\xbf"));                    /* U+10FFFF */
  assert_false(valid("\xc3"));                               /* cut */
  assert_false(valid("\xe2\x82"));
  assert_false(valid("\xc3\x28"));                           /* no continuation */
  assert_false(valid("\xc0\xaf"));                           /* overlong */
  assert_false(valid("\xe0\x80\xaf"));
  assert_false(valid("\xed\xa0\x80"));                       /* a surrogate */
  assert_false(valid("\xf4\x90\x80\x80"));                   /* above U+10FFFF */
  assert_false(valid("\xff"));
  assert_false(valid("\x80"));
}

static void test_utf8_scrub(void **state) {
  (void)state;
  static const struct { const char *in, *out; } cases[] = {
      {"orders", "orders"},
      {"\xff" "a", "\xef\xbf\xbd" "a"},
      {"b\xc3\x28", "b\xef\xbf\xbd("},
      {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      {"x\xc3\xa9\xc3", "x\xc3\xa9\xef\xbf\xbd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *s = kl_utf8_scrub(NULL, cases[i].in, strlen(cases[i].in));
    assert_non_null(s);
    assert_string_equal(s, cases[i].out);
    assert_true(valid(s));
    kl_free(NULL, s);
  }
  t_failalloc fa;
  assert_null(kl_utf8_scrub(t_failenv(&fa, 1), "\xff", 1));
  assert_int_equal(fa.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_utf8_valid),
      cmocka_unit_test(test_utf8_scrub),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
