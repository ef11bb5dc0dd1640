/*
** test_registry.c - the registry's lookups by GUID and by id over many
** schemas added in no particular order: every GUID finds its schema, a
** GUID registered in two subjects finds the first row of the two, an
** absent or hard-deleted GUID finds nothing, a schema without a GUID is
** not found by one.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry.h"

#define N 300

/* A GUID from n, spread over all 16 bytes so that neighbours differ early. */
static void guid_of(unsigned n, uint8_t g[16]) {
  uint32_t x = n * 2654435761u + 12345;
  for (int i = 0; i < 16; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    g[i] = (uint8_t)x;
  }
}

static void guid_text(const uint8_t g[16], char t[37]) {
  int k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) t[k++] = '-';
    k += snprintf(t + k, 3, "%02x", g[i]);
  }
  t[k] = 0;
}

static void add(kl_registry *r, int64_t off, const char *subject, int version, int id,
                const uint8_t *guid, int live) {
  char key[200], val[400], gt[37] = "";
  snprintf(key, sizeof key, "{\"keytype\":\"SCHEMA\",\"subject\":\"%s\",\"version\":%d,"
           "\"magic\":1}", subject, version);
  if (guid) guid_text(guid, gt);
  snprintf(val, sizeof val, "{\"subject\":\"%s\",\"version\":%d,\"id\":%d,\"schema\":"
           "\"\\\"long\\\"\",\"deleted\":false%s%s%s}", subject, version, id,
           guid ? ",\"guid\":\"" : "", gt, guid ? "\"" : "");
  kl_err e;
  kl_err_clear(&e);
  assert_int_equal(kl_registry_add(r, off, (const uint8_t *)key, strlen(key),
                                   live ? (const uint8_t *)val : NULL, live ? strlen(val) : 0, &e),
                   KL_OK);
}

static void test_guid_lookup(void **state) {
  kl_registry *r = NULL;
  assert_int_equal(kl_registry_new(NULL, &r), KL_OK);
  int64_t off = 0;
  uint8_t g[16];
  /* ids 1..N in a scrambled order, each in its own subject; every 7th has
  ** no GUID */
  for (unsigned i = 0; i < N; i++) {
    unsigned id = (i * 113) % N + 1;
    char subject[32];
    snprintf(subject, sizeof subject, "t%u-value", id);
    guid_of(id, g);
    add(r, off++, subject, 1, (int)id, id % 7 ? g : NULL, 1);
  }
  /* id 5 registered again under another subject (same GUID), which sorts
  ** before t5-value */
  guid_of(5, g);
  add(r, off++, "a-value", 1, 5, g, 1);
  /* id 1000 added then hard-deleted */
  guid_of(1000, g);
  add(r, off++, "gone-value", 1, 1000, g, 1);
  add(r, off++, "gone-value", 1, 1000, g, 0);
  assert_int_equal(kl_registry_finish(r), KL_OK);

  for (unsigned id = 1; id <= N; id++) {
    guid_of(id, g);
    const kl_reg_schema *s = kl_registry_by_guid(r, g);
    if (id % 7 == 0) {
      assert_null(s);
      continue;
    }
    assert_non_null(s);
    assert_int_equal(s->id, id);
    assert_memory_equal(s->guid, g, 16);
    assert_int_equal(kl_registry_by_id(r, (int32_t)id)->id, id);
  }
  guid_of(5, g);
  assert_string_equal(kl_registry_by_guid(r, g)->subject, "a-value");
  assert_ptr_equal(kl_registry_by_guid(r, g), kl_registry_by_id(r, 5));
  guid_of(1000, g);
  assert_null(kl_registry_by_guid(r, g));
  assert_null(kl_registry_by_id(r, 1000));
  guid_of(N + 1, g);
  assert_null(kl_registry_by_guid(r, g));
  memset(g, 0, sizeof g); /* the schemas without a GUID hold zeros: not a match */
  assert_null(kl_registry_by_guid(r, g));
  memset(g, 0xff, sizeof g);
  assert_null(kl_registry_by_guid(r, g));
  kl_registry_free(r);
}

static void test_guid_empty(void **state) {
  kl_registry *r = NULL;
  assert_int_equal(kl_registry_new(NULL, &r), KL_OK);
  assert_int_equal(kl_registry_finish(r), KL_OK);
  uint8_t g[16] = {1};
  assert_null(kl_registry_by_guid(r, g));
  assert_null(kl_registry_by_id(r, 1));
  kl_registry_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_guid_lookup),
      cmocka_unit_test(test_guid_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
