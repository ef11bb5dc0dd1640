/*
** bounds.c - see bounds.h.
*/
#include "bounds.h"

#include <math.h>

SQLITE_EXTENSION_INIT3

/* Where x (an integral double or an infinity) lies against the int64_t
** range: -1 below it, 1 above it, else 0 with *out = x exactly. */
static int i64_of(double x, int64_t *out) {
  if (x < -0x1p63) return -1;
  if (x >= 0x1p63) return 1;
  *out = (int64_t)x;
  return 0;
}

/*
** Fold a comparison "column op v" into inclusive integer bounds [*lo, *hi],
** with SQLite's semantics: numeric text compares as a number, NULL (and
** NaN) matches nothing, any other text or blob sorts after every number,
** and an integer compares with a REAL exactly.  A REAL is first rounded
** towards the integers the comparison admits (floor or ceil, exact in a
** double), which may lie outside int64_t: the +-1 of a strict comparison
** is then taken on an integer known to have room for it.
*/
/* v as the integers floor(v) *fl and ceil(v) *cl, where they lie in *fw,
** *cw (i64_of): 1, or 0 when "column op v" admits no integer (NULL, NaN,
** text for =, >, >=; a fraction for =), or -1 when it admits every one
** ("< text"). */
static int as_integers(enum kl_cmp_op op, sqlite3_value *v, int64_t *fl, int64_t *cl, int *fw,
                       int *cw) {
  int t = sqlite3_value_numeric_type(v);
  *fw = *cw = 0;
  if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
    return op == KL_CMP_EQ || op == KL_CMP_GT || op == KL_CMP_GE ? 0 : -1;
  }
  if (t == SQLITE_INTEGER) {
    *fl = *cl = sqlite3_value_int64(v);
    return 1;
  }
  if (t != SQLITE_FLOAT) return 0; /* NULL */
  double r = sqlite3_value_double(v);
  if (isnan(r)) return 0;
  *fw = i64_of(floor(r), fl);
  *cw = i64_of(ceil(r), cl);
  return op != KL_CMP_EQ || floor(r) == r;
}

void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi) {
  int64_t nlo = INT64_MIN, nhi = INT64_MAX, fl = 0, cl = 0;
  int fw, cw; /* where floor(v) and ceil(v) lie (i64_of) */
  int k = as_integers(op, v, &fl, &cl, &fw, &cw);
  if (k < 0) return;
  if (k == 0) goto empty;
  switch (op) {
    case KL_CMP_EQ:
      if (fw) goto empty;
      nlo = nhi = fl;
      break;
    case KL_CMP_GE:
      if (cw > 0) goto empty;
      if (cw == 0) nlo = cl;
      break;
    case KL_CMP_GT:
      if (fw > 0 || (fw == 0 && fl == INT64_MAX)) goto empty;
      if (fw == 0) nlo = fl + 1;
      break;
    case KL_CMP_LE:
      if (fw < 0) goto empty;
      if (fw == 0) nhi = fl;
      break;
    case KL_CMP_LT:
      if (cw < 0 || (cw == 0 && cl == INT64_MIN)) goto empty;
      if (cw == 0) nhi = cl - 1;
      break;
  }
  if (nlo > *lo) *lo = nlo;
  if (nhi < *hi) *hi = nhi;
  return;
empty:
  *lo = 1, *hi = 0;
}
