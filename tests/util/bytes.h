/*
** bytes.h - a byte builder for test vectors encoded by hand from Kafka's
** published schemas (big-endian fields, Kafka's strings), so that a test's
** bytes never come from the code under test.
*/
#ifndef KL_BYTES_H
#define KL_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct t_bytes {
  uint8_t b[1024];
  size_t n;                 /* bytes so far */
  int null;                 /* stands for a null key or value (a tombstone) */
} t_bytes;

/* Append to t; going past b fails the current test. */
void t_u8(t_bytes *t, unsigned v);
void t_be16(t_bytes *t, int v);
void t_be32(t_bytes *t, int32_t v);
void t_be64(t_bytes *t, int64_t v);
void t_raw(t_bytes *t, const void *p, size_t n);
/* string: i16 length, then the bytes; NULL is length -1. */
void t_str(t_bytes *t, const char *s);
/* compact string: length + 1 as one varint byte (strings under 127
** bytes), then the bytes; NULL is 0. */
void t_cstr(t_bytes *t, const char *s);

#endif
