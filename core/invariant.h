/*
** invariant.h - assertions of the core's invariants, after SQLite's
** assert(), ALWAYS() and NEVER().
**
** assert(X) states what the code relies on; the debug build (the suite's
** build-asan, CMAKE_BUILD_TYPE=Debug, which leaves NDEBUG undefined) stops
** at the first that fails.  KL_ALWAYS(X) and KL_NEVER(X) guard a condition
** that no input is known to reach but that a release build still handles
** (a corrupt file must not crash it): the debug build asserts it, the
** release build takes the defensive branch.
**
**   if (KL_NEVER(c->state == CS_BACKWARD)) return KL_MISUSE;
*/
#ifndef KL_INVARIANT_H
#define KL_INVARIANT_H

#include <assert.h>

#ifdef NDEBUG
#define KL_ALWAYS(X) (X)
#define KL_NEVER(X) (X)
#else
#define KL_ALWAYS(X) ((X) ? 1 : (assert(0), 0))
#define KL_NEVER(X) ((X) ? (assert(0), 1) : 0)
#endif

#endif
