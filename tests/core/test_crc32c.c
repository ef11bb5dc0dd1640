/*
** test_crc32c.c - CRC-32C check values, the spec's worked batches, and
** agreement between the SSE4.2 and the slicing-by-8 paths.
*/
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

/* format.md 3.7: the 88-byte uncompressed batch with two records. */
static const uint8_t batch_v2[88] = {
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4c,
  0x00, 0x00, 0x00, 0x00, 0x02, 0x30, 0xbd, 0xd1, 0xdf, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0x00,
  0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff,
  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
  0x02, 0x14, 0x00, 0x00, 0x00, 0x04, 0x6b, 0x30, 0x04, 0x76, 0x30, 0x00,
  0x1e, 0x00, 0x0a, 0x02, 0x01, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x02,
  0x02, 0x68, 0x02, 0x78
};

/* format.md 4: the 78-byte COMMIT control batch. */
static const uint8_t batch_commit[78] = {
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x42,
  0x00, 0x00, 0x00, 0x00, 0x02, 0xcc, 0x8b, 0x9e, 0xc8, 0x00, 0x30, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x0a, 0x00,
  0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x03, 0xe8, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
  0x01, 0x20, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x05, 0x00
};

/* Deterministic filler so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint8_t rng_byte(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint8_t)(rng_state >> 24);
}

static void test_check_values(void **state) {
  (void)state;
  assert_int_equal(kl_crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(kl_crc32c_portable(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(kl_crc32c(0, "Some String", 11), 0x2445290Fu);
  assert_int_equal(kl_crc32c_portable(0, "Some String", 11), 0x2445290Fu);
  assert_int_equal(kl_crc32c(0, "", 0), 0);
  assert_int_equal(kl_crc32c(0, NULL, 0), 0);
  assert_int_equal(kl_crc32c(0x12345678u, NULL, 0), 0x12345678u);
}

/* The stored CRC at [17,21) covers [21, total). */
static void check_batch(const uint8_t *b, size_t total) {
  uint32_t stored = kl_get_u32(b + 17);
  assert_int_equal(kl_get_u32(b + 8) + 12, total);
  assert_int_equal(kl_crc32c(0, b + 21, total - 21), stored);
  assert_int_equal(kl_crc32c_portable(0, b + 21, total - 21), stored);
}

static void test_spec_batches(void **state) {
  (void)state;
  check_batch(batch_v2, sizeof batch_v2);
  assert_int_equal(kl_get_u32(batch_v2 + 17), 0x30BDD1DFu);
  check_batch(batch_commit, sizeof batch_commit);
  assert_int_equal(kl_get_u32(batch_commit + 17), 0xCC8B9EC8u);
}

/* Every length 0..300 at every alignment 0..7: the two paths agree, and the
** result matches the plain bitwise definition. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}

static void test_paths_agree(void **state) {
  (void)state;
  uint8_t buf[300 + 8];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = rng_byte();
  if (!kl_crc32c_hw()) print_message("note: no SSE4.2, both paths portable\n");
  for (size_t off = 0; off < 8; off++) {
    for (size_t n = 0; n <= 300; n++) {
      uint32_t want = crc_bitwise(buf + off, n);
      assert_int_equal(kl_crc32c(0, buf + off, n), want);
      assert_int_equal(kl_crc32c_portable(0, buf + off, n), want);
    }
  }
}

/* Lengths around the blocks of the instruction path's three chains (3 x
** 256 and 3 x 4096 bytes): the merged chains agree with the table path. */
static void test_paths_agree_long(void **state) {
  (void)state;
  static uint8_t buf[40000 + 8];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = rng_byte();
  static const size_t lens[] = {767, 768, 769, 1535, 1536, 1537, 2048, 12287, 12288, 12289,
                                13055, 13056, 13057, 16384, 16397, 24575, 24576, 24577, 36864,
                                40000};
  for (size_t off = 0; off < 8; off++) {
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
      uint32_t want = kl_crc32c_portable(0, buf + off, lens[i]);
      if (kl_crc32c(0, buf + off, lens[i]) != want) {
        fail_msg("length %zu at offset %zu: paths differ", lens[i], off);
      }
    }
  }
  for (size_t n = 700; n < 2000; n++) {
    assert_int_equal(kl_crc32c(0, buf + 3, n), kl_crc32c_portable(0, buf + 3, n));
  }
}

static void test_incremental(void **state) {
  (void)state;
  uint8_t buf[1000];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = rng_byte();
  uint32_t whole = kl_crc32c(0, buf, sizeof buf);
  for (size_t cut = 0; cut <= sizeof buf; cut += 7) {
    uint32_t c = kl_crc32c(0, buf, cut);
    assert_int_equal(kl_crc32c(c, buf + cut, sizeof buf - cut), whole);
    c = kl_crc32c_portable(0, buf, cut);
    assert_int_equal(kl_crc32c_portable(c, buf + cut, sizeof buf - cut), whole);
    /* Mixing the paths mid-stream must work too. */
    c = kl_crc32c_portable(0, buf, cut);
    assert_int_equal(kl_crc32c(c, buf + cut, sizeof buf - cut), whole);
  }
  /* Three pieces, one of them empty. */
  uint32_t c = kl_crc32c(0, buf, 333);
  c = kl_crc32c(c, buf + 333, 0);
  assert_int_equal(kl_crc32c(c, buf + 333, sizeof buf - 333), whole);
}

/* Every v2 batch Kafka wrote into a fixture carries a CRC we reproduce. */
static int fixture_batches(const char *set) {
  const char *dir = t_fixture(set);
  DIR *dp = opendir(dir);
  assert_non_null(dp);
  struct dirent *e;
  int batches = 0;
  while ((e = readdir(dp)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".log") != 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *b = t_read_file(path, &n);
    assert_non_null(b);
    for (size_t pos = 0; n - pos >= 61;) {
      size_t total = (size_t)kl_get_i32(b + pos + 8) + 12;
      if (total < 61 || total > n - pos) break; /* preallocated zeros */
      assert_int_equal(b[pos + 16], 2);
      check_batch(b + pos, total);
      batches++;
      pos += total;
    }
    free(b);
  }
  closedir(dp);
  return batches;
}

static void test_fixture_crcs(void **state) {
  (void)state;
  assert_int_equal(fixture_batches("j-mixed-codecs"), 64);
  assert_int_equal(fixture_batches("a-tiny"), 4);
  assert_true(fixture_batches("g-transactions") > 0);
  assert_true(fixture_batches("c-gzip") > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_check_values),
    cmocka_unit_test(test_spec_batches),
    cmocka_unit_test(test_paths_agree),
    cmocka_unit_test(test_paths_agree_long),
    cmocka_unit_test(test_incremental),
    cmocka_unit_test(test_fixture_crcs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
