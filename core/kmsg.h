/*
** kmsg.h - the primitive types of Kafka's message encoding (the JSON
** message specs' int8 ... uuid, as the generated readers of
** org.apache.kafka.common.protocol read them), over bytes in memory.
** Every internal topic's records (__consumer_offsets,
** __transaction_state, __cluster_metadata) and producer snapshots are
** built from these.
**
**   int8/16/32/64, uint16/32   big-endian, fixed width
**   float64                    IEEE 754 double, big-endian
**   bool                       one byte, anything but 0 is true
**   uuid                       16 bytes
**   uvarint                    7 bits a byte, low first, high bit = more;
**                              at most 5 bytes and at most INT32_MAX
**                              (Kafka reads it into an int)
**   uvarlong                   the same, at most 10 bytes (uint64)
**   varint / varlong           zig-zag of a uvarint (5) / uvarlong (10)
**   string                     int16 length, the bytes; -1 is null
**   compact string             uvarint length + 1, the bytes; 0 is null
**   bytes                      int32 length, the bytes; -1 is null
**   compact bytes              uvarint length + 1, the bytes; 0 is null
**   array                      int32 count, -1 null; compact: uvarint
**                              count + 1, 0 null; then the elements
**   tagged fields              uvarint n, then n x (uvarint tag,
**                              uvarint size, size bytes), at the end of
**                              every struct of a flexible version
**
** Limits are Kafka's: a string longer than 32767 bytes is refused, a
** length or count below -1 is refused, and so is a null where the field is
** not nullable.  Ours, for a reader of untrusted bytes: a length past the
** end is refused before anything is read, and an array may not count more
** elements than bytes are left (every element takes at least one), so no
** count on disk can make a caller allocate more than the input's size.
** This is written by hand: Kafka's encoding has no C library in Debian.
**
** Errors are KL_CORRUPT, recorded in the reader's kl_err as
** "<what>: <field> <what is wrong>" (what: the reader's name, such as "key"
** or "value"; field: the caller's name for the field), e.g.
** "value: metadata needs 100 bytes, 10 left".  After an error the reader's
** position is unspecified; the first error stays in err.
*/
#ifndef KL_KMSG_H
#define KL_KMSG_H

#include "klog.h"

/* A reader over bytes it does not own: borrowed for its life. */
typedef struct kl_kmsg {
  const uint8_t *start;     /* the first byte */
  const uint8_t *p;         /* the next byte to read */
  const uint8_t *end;       /* one past the last */
  const char *what;         /* names the bytes in messages */
  kl_err *err;              /* where errors go (may be NULL) */
} kl_kmsg;

/* Bytes read from a message, pointing into the reader's bytes; p NULL
** with n -1 for a null. */
typedef struct kl_kslice {
  const uint8_t *p;
  int32_t n;
} kl_kslice;

/* Flags of strings, bytes and arrays. */
enum {
  KL_KMSG_COMPACT = 1,      /* the flexible (uvarint length + 1) form */
  KL_KMSG_NULLABLE = 2      /* a null is a value, not an error */
};

/* A reader of the n bytes at p, named what (a static string) in
** messages, recording errors in err. */
void kl_kmsg_init(kl_kmsg *r, const uint8_t *p, size_t n, const char *what, kl_err *err);

static inline size_t kl_kmsg_left(const kl_kmsg *r) { return (size_t)(r->end - r->p); }
static inline size_t kl_kmsg_pos(const kl_kmsg *r) { return (size_t)(r->p - r->start); }

/* Fixed-width fields.  KL_OK with *v set, or KL_CORRUPT when too few
** bytes are left. */
kl_rc kl_kmsg_i8(kl_kmsg *r, const char *field, int8_t *v);
kl_rc kl_kmsg_i16(kl_kmsg *r, const char *field, int16_t *v);
kl_rc kl_kmsg_i32(kl_kmsg *r, const char *field, int32_t *v);
kl_rc kl_kmsg_i64(kl_kmsg *r, const char *field, int64_t *v);
kl_rc kl_kmsg_u16(kl_kmsg *r, const char *field, uint16_t *v);
kl_rc kl_kmsg_u32(kl_kmsg *r, const char *field, uint32_t *v);
kl_rc kl_kmsg_f64(kl_kmsg *r, const char *field, double *v);
kl_rc kl_kmsg_bool(kl_kmsg *r, const char *field, int *v);
kl_rc kl_kmsg_uuid(kl_kmsg *r, const char *field, uint8_t v[16]);

/* Variable-width integers.  KL_CORRUPT when truncated, too long, or out
** of the type's range (uvarint: past INT32_MAX). */
kl_rc kl_kmsg_uvarint(kl_kmsg *r, const char *field, uint32_t *v);
kl_rc kl_kmsg_uvarlong(kl_kmsg *r, const char *field, uint64_t *v);
kl_rc kl_kmsg_varint(kl_kmsg *r, const char *field, int32_t *v);
kl_rc kl_kmsg_varlong(kl_kmsg *r, const char *field, int64_t *v);

/* The next n raw bytes (*s points into the reader), or skip them. */
kl_rc kl_kmsg_raw(kl_kmsg *r, const char *field, size_t n, const uint8_t **s);
kl_rc kl_kmsg_skip(kl_kmsg *r, const char *field, size_t n);

/* A string (at most 32767 bytes) or bytes (at most INT32_MAX), in the
** form flags say (KL_KMSG_COMPACT, KL_KMSG_NULLABLE).  The bytes are not
** checked as UTF-8: a reader of what is on disk shows what is there. */
kl_rc kl_kmsg_string(kl_kmsg *r, const char *field, int flags, kl_kslice *s);
kl_rc kl_kmsg_bytes(kl_kmsg *r, const char *field, int flags, kl_kslice *s);

/* An array's element count (-1 for a null when KL_KMSG_NULLABLE); the
** caller reads the elements.  A count above the bytes left is corrupt. */
kl_rc kl_kmsg_array(kl_kmsg *r, const char *field, int flags, int32_t *count);

/* Tagged fields, read one at a time: kl_kmsg_tags reads the count, then
** each kl_kmsg_tag reads a tag and sets *field to a reader over that
** field's bytes (named as r is, sharing its err), which r has passed.
**
**   uint32_t n, tag; kl_kmsg f;
**   rc = kl_kmsg_tags(r, &n);
**   for (i = 0; rc == KL_OK && i < n; i++) rc = kl_kmsg_tag(r, &tag, &f) ...
**
** Kafka keeps the tags it does not know; a reader skips them. */
kl_rc kl_kmsg_tags(kl_kmsg *r, uint32_t *count);
kl_rc kl_kmsg_tag(kl_kmsg *r, uint32_t *tag, kl_kmsg *field);

/* Pass over a struct's tagged fields, whatever they are. */
kl_rc kl_kmsg_skip_tags(kl_kmsg *r);

/* KL_OK when every byte has been read, else KL_CORRUPT naming field as
** what the bytes follow (for formats that refuse trailing bytes). */
kl_rc kl_kmsg_end(kl_kmsg *r, const char *field);

#endif
