/*
** fuzz_record.h - the input framing of the targets for the internal
** topics' record decoders (fuzz_offsets.c, fuzz_txnlog.c), so that one
** corpus shape serves both:
**
**   byte 0: bit 0 set: the value is null (a tombstone)
**   byte 1: the key's length (clipped to what follows)
**   then the key, then the value
**
** fuzz_record.c is the targets' LLVMFuzzerTestOneInput: it splits each
** input of two bytes or more and calls the target's fz_record_target.  The
** key and value are copied into allocations of exactly their size, so
** that AddressSanitizer sees any read past their end.
*/
#ifndef KL_FUZZ_RECORD_H
#define KL_FUZZ_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Defined by each target: one record, its key k (klen bytes) and its value
** v (vlen bytes; tomb: the value is null), both freed after it returns. */
void fz_record_target(int tomb, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen);

#endif
