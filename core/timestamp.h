/*
** timestamp.h - Kafka's timestamps as people write them: milliseconds since
** 1970-01-01T00:00:00Z (what a record, a batch and a .timeindex hold)
** to ISO-8601 UTC text with milliseconds, and such text back.
**
** The calendar is the proleptic Gregorian one, as java.time's Instant and
** ISO-8601 count it, with no leap seconds (Kafka's clock is Java's).
** Years outside 0000..9999 take ISO-8601's expanded form, a sign and at
** least four digits ("+10000-01-01T00:00:00.000Z", "-0001-12-31..."), so
** that every 64-bit value has a text and reads back as itself.  Written by
** hand: C's gmtime/timegm work in seconds, on time_t, with a process-wide
** time zone; this needs neither.
*/
#ifndef KL_TIMESTAMP_H
#define KL_TIMESTAMP_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's "no timestamp" (RecordBatch.NO_TIMESTAMP): a record or batch
** written without one, a .timeindex entry never set. */
#define KL_NO_TIMESTAMP (-1)

/* Room for the longest text kl_time_format writes, with its NUL. */
#define KL_TIME_TEXT 40

/* Write ms as "YYYY-MM-DDTHH:MM:SS.fffZ" (UTC) into out, which has room
** for KL_TIME_TEXT bytes; returns the length written.  Any int64_t has a
** text; KL_NO_TIMESTAMP is formatted like the others (the caller decides
** what it means). */
size_t kl_time_format(int64_t ms, char out[KL_TIME_TEXT]);

/* The accepted forms, for error messages. */
#define KL_TIME_FORMS                                                              \
  "YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS[.fff]] (T or a space) followed by Z, "      \
  "+HH:MM, -HH:MM or nothing for UTC"

/* Parse the n bytes at s, one of KL_TIME_FORMS (a date alone is midnight
** UTC; a fraction of up to 9 digits is cut to milliseconds, toward the
** earlier instant), into *ms.  Returns 0, or -1 with *why set to a static
** sentence saying what is wrong ("month 13 is not 01..12", "the text
** goes on after the time"...). */
int kl_time_parse(const char *s, size_t n, int64_t *ms, const char **why);

#endif
