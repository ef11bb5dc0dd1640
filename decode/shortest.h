/*
** shortest.h - a finite float or double as the shortest decimal text that
** reads back as the same value: the text of Avro's float and double in the
** JSON the decoders write.
**
** The layout is printf's %g with the precision P = max(15, digits) for a
** double, max(6, digits) for a float (the smallest %.Pg that reads back):
** an integer below 2^53 is written whole ("100", "-0" for minus zero);
** otherwise plain decimals ("123.92", "0.0001") unless the decimal
** exponent X is below -4 or at least P, then d.ddde+XX ("1e-06",
** "1.5e+300", two exponent digits at least).
*/
#ifndef KL_SHORTEST_H
#define KL_SHORTEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KL_SHORTEST_MAX 32 /* bytes the longest text takes, with a NUL */

/* Write the text of v (is_float: v is a float's value, read back as a
** float) to out, which has room for KL_SHORTEST_MAX bytes; return its
** length (out is NUL-terminated).  v must be finite: NaN and the
** infinities are the caller's ("NaN", "Infinity" are not numbers in JSON). */
size_t kl_shortest(double v, int is_float, char *out);

#ifdef __cplusplus
}
#endif

#endif
