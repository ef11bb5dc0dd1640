/*
** test_partitioner.c - Kafka's murmur2 against the vectors of Kafka's own
** UtilsTest.testMurmur2 (and librdkafka's rdmurmur2, which agrees), one
** per tail length, and the partition rule: the sign bit cleared, not abs.
*/
#include "testutil.h"

#include <string.h>

#include "partitioner.h"

static int32_t h(const char *s) { return kl_murmur2((const uint8_t *)s, strlen(s)); }

static void test_murmur2_kafka_vectors(void **state) {
  (void)state;
  assert_int_equal(h("21"), -973932308);
  assert_int_equal(h("foobar"), -790332482);
  assert_int_equal(h("a-little-bit-long-string"), -985981536);
  assert_int_equal(h("a-little-bit-longer-string"), -1486304829);
  assert_int_equal(h("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971);
  assert_int_equal(h("abc"), 479470107);
  assert_int_equal(h(""), 275646681);
  assert_int_equal(h("kafka"), (int32_t)0xd067cf64);
  assert_int_equal(h("giberish123456789"), (int32_t)0x8f552b0c);
  assert_int_equal(h("1234"), (int32_t)0x9fc97b14);
  assert_int_equal(h("234"), (int32_t)0xe7c009ca);
  assert_int_equal(h("34"), (int32_t)0x873930da);
}

static void test_partition_clears_the_sign_bit(void **state) {
  (void)state;
  /* -790332482 & 0x7fffffff = 1357151166; abs() would give 790332482. */
  assert_int_equal(kl_partition_for((const uint8_t *)"foobar", 6, 50), 1357151166 % 50);
  assert_int_equal(kl_partition_for((const uint8_t *)"foobar", 6, 50), 16);
  assert_int_equal(kl_partition_for((const uint8_t *)"abc", 3, 1), 0);
  const uint8_t bin[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
  for (int32_t n = 1; n < 100; n++) assert_true(kl_partition_for(bin, sizeof bin, n) < n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_murmur2_kafka_vectors),
      cmocka_unit_test(test_partition_clears_the_sign_bit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
