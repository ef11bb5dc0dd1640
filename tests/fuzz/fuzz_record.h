/*
** fuzz_record.h - the input framing of the targets for the internal
** topics' record decoders (fuzz_offsets.c, fuzz_txnlog.c), so that one
** corpus shape serves both:
**
**   byte 0: bit 0 set: the value is null (a tombstone)
**   byte 1: the key's length (clipped to what follows)
**   then the key, then the value
**
** The key and value are copied into allocations of exactly their size, so
** that AddressSanitizer sees any read past their end.
*/
#ifndef KL_FUZZ_RECORD_H
#define KL_FUZZ_RECORD_H

#include <stddef.h>
#include <stdint.h>

typedef struct fz_record {
  int tomb;                 /* the value is null */
  uint8_t *key, *value;     /* malloc'd, exactly their size (1 when empty) */
  size_t key_len, value_len;
} fz_record;

/* Split the size bytes at data into *out: 0 when there are fewer than 2
** (nothing allocated), else 1; free with fz_record_free.  Aborts when out
** of memory. */
int fz_record_split(const uint8_t *data, size_t size, fz_record *out);
void fz_record_free(fz_record *r);

#endif
