/*
** test_topic.c - core/topic.h: the one (topic, partition) order, which the
** listing, the checkpoints and the query's topics share: bytes unsigned, a
** prefix first, then partition; and it is strcmp's order on names.
*/
#include "testutil.h"

#include <string.h>

#include "topic.h"

static int cmp(const char *a, int32_t ap, const char *b, int32_t bp) {
  return kl_topic_cmp(a, strlen(a), ap, b, strlen(b), bp);
}

static int sign(int x) { return (x > 0) - (x < 0); }

static void test_order(void **state) {
  (void)state;
  assert_true(cmp("orders", 0, "orders", 0) == 0);
  assert_true(cmp("orders", 0, "orders", 1) < 0);
  assert_true(cmp("orders", 10, "orders", 9) > 0);
  assert_true(cmp("order", 5, "orders", 0) < 0);        /* a prefix first */
  assert_true(cmp("orders", 0, "orders-eu", 0) < 0);
  assert_true(cmp("Orders", 0, "orders", 0) < 0);       /* bytes, not case */
  assert_true(cmp("\xc3\xa9t\xc3\xa9", 0, "zeta", 0) > 0); /* unsigned */
  assert_true(kl_topic_cmp(NULL, 0, 0, "a", 1, 0) < 0);
  static const char *const names[] = {"a", "a.b", "a-b", "a_b", "ab", "b", "B", "a0", "\xff"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    for (size_t j = 0; j < sizeof names / sizeof *names; j++) {
      assert_int_equal(sign(cmp(names[i], 0, names[j], 0)), sign(strcmp(names[i], names[j])));
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
