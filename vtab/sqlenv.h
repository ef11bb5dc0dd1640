/*
** sqlenv.h - the kl_env the core runs with inside SQLite.
**
** Every core object the module makes allocates through SQLite's allocator
** (sqlite3_realloc64 / sqlite3_free), so that the caches of open logs and
** segments count in sqlite3_memory_used() and against the soft and hard
** heap limits, as SQLite's own page cache does; its system calls are
** POSIX's (core/os.h).
*/
#ifndef KL_SQLENV_H
#define KL_SQLENV_H

#include "klog.h"

/* The environment of the module's core calls (static, never NULL). */
const kl_env *kl_sqlite_env(void);

#endif
