/*
** bounds.h - a comparison of an integer column with an SQL value, as
** inclusive integer bounds, with SQLite's semantics.
*/
#ifndef KL_BOUNDS_H
#define KL_BOUNDS_H

#include <stdint.h>

#include "sqlite3ext.h"

/* Comparison operators (kl_term.arg of a bound, terms.h). */
enum kl_cmp_op { KL_CMP_EQ, KL_CMP_GT, KL_CMP_GE, KL_CMP_LT, KL_CMP_LE };

/* Narrow the inclusive integer bounds [*lo, *hi] by "column op v", with
** SQLite's semantics: numeric text compares as a number, NULL matches
** nothing (the bounds become empty: *lo > *hi), any other text or blob
** sorts after every number; fractions round to the integers they admit,
** and a REAL past +-2^63 (or an infinity) admits all or none of them. */
void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi);

#endif
