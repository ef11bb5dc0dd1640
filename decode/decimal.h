/*
** decimal.h - a decimal number's text from its unscaled value and scale,
** as Avro's decimal logical type and Confluent's confluent.type.Decimal
** store it: the value is unscaled * 10^-scale, unscaled a two's-complement
** big-endian integer of any length (no bytes: zero).
**
** The text is an exact JSON number: an optional '-', the integer digits
** without leading zeros ("0" when none), then, for a positive scale, '.'
** and exactly scale fraction digits (trailing zeros kept: they say the
** scale); a negative scale appends -scale zeros to a non-zero integer.
** The digits come from dividing the magnitude by 10 again and again, which
** is quadratic in its length: hence KL_DECIMAL_MAX_BYTES.
*/
#ifndef KL_DECIMAL_H
#define KL_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KL_DECIMAL_MAX_BYTES 256  /* of an unscaled value */
#define KL_DECIMAL_MAX_SCALE 1000 /* either way */

/* Room kl_decimal_text needs for n bytes and scale: a byte holds fewer
** than 3 digits; a sign, "0." and a spare digit. */
#define KL_DECIMAL_TEXT_MAX(n, scale) \
  (3 * (size_t)(n) + (size_t)((scale) < 0 ? -(int64_t)(scale) : (int64_t)(scale)) + 4)

/* Write the text of the n bytes at p with scale into out, which holds
** KL_DECIMAL_TEXT_MAX(n, scale) bytes (no NUL is added).  Returns its
** length, or 0 (nothing written) when n exceeds KL_DECIMAL_MAX_BYTES or
** scale KL_DECIMAL_MAX_SCALE either way: the caller refuses those first,
** in its own words. */
size_t kl_decimal_text(const uint8_t *p, size_t n, int32_t scale, char *out);

#ifdef __cplusplus
}
#endif

#endif
