/*
** test_load.c - the loadable module as a host loads it: build/kafkalog.so,
** through sqlite3_load_extension, and by hand on a host that says it is
** older than the module needs (an API table whose version functions answer
** 3.37.2): the load fails with a message naming both versions, and calls
** nothing a 3.37 host lacks.
**
** This program links SQLite, not the module: the module comes from the
** .so only.
*/
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>
/* The API table's layout, without its macros (this program is the host). */
#define SQLITE_CORE 1
#include <sqlite3ext.h>

typedef int (*init_fn)(sqlite3 *, char **, const sqlite3_api_routines *);

static const sqlite3_api_routines *g_api;

/* An auto-extension is handed the host's API table: keep it. */
static int capture(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  g_api = api;
  return SQLITE_OK;
}

static int old_version_number(void) { return 3037002; }
static const char *old_version(void) { return "3.37.2"; }

static void test_load_extension(void **state) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_enable_load_extension(db, 1), SQLITE_OK);
  char *err = NULL;
  int rc = sqlite3_load_extension(db, KL_MODULE, NULL, &err);
  if (rc) fail_msg("load %s: %s", KL_MODULE, err ? err : "?");
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT kafka_log_version()", -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_non_null(strstr((const char *)sqlite3_column_text(st, 0), "kafkalog "));
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void test_too_old_a_host(void **state) {
  sqlite3_auto_extension((void (*)(void))capture);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_reset_auto_extension();
  assert_non_null(g_api);
  sqlite3_api_routines old = *g_api;
  old.libversion_number = old_version_number;
  old.libversion = old_version;
  void *h = dlopen(KL_MODULE, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("dlopen %s: %s", KL_MODULE, dlerror());
  init_fn init = (init_fn)dlsym(h, "sqlite3_kafkalog_init");
  assert_non_null(init);
  char *err = NULL;
  assert_int_equal(init(db, &err, &old), SQLITE_ERROR);
  assert_non_null(err);
  print_message("  %s\n", err);
  assert_non_null(strstr(err, "3.38.0"));
  assert_non_null(strstr(err, "3.37.2"));
  sqlite3_free(err);
  /* Nothing was registered. */
  sqlite3_stmt *st = NULL;
  assert_int_not_equal(sqlite3_prepare_v2(db, "SELECT kafka_log_version()", -1, &st, NULL),
                       SQLITE_OK);
  sqlite3_finalize(st);
  /* The real host is recent enough. */
  err = NULL;
  assert_int_equal(init(db, &err, g_api), SQLITE_OK);
  assert_null(err);
  assert_int_equal(sqlite3_close(db), SQLITE_OK);
  dlclose(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_extension),
      cmocka_unit_test(test_too_old_a_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
