/*
** sqlenv.c - see sqlenv.h.
*/
#include "sqlenv.h"

#include "sqlite3ext.h"

SQLITE_EXTENSION_INIT3

/* kl_env's xRealloc contract (n == 0 frees) on SQLite's allocator. */
static void *sqlite_realloc(void *ud, void *p, size_t n) {
  (void)ud;
  if (n == 0) {
    sqlite3_free(p);
    return NULL;
  }
  return sqlite3_realloc64(p, (sqlite3_uint64)n);
}

static const kl_env sqlite_env = {sqlite_realloc, NULL, NULL};

const kl_env *kl_sqlite_env(void) { return &sqlite_env; }
