/*
** timefn.h - the SQL functions over Kafka's timestamps (core/timestamp.h):
**   kafka_time(ms)   ISO-8601 UTC text with milliseconds; NULL for NULL and
**                    for Kafka's -1 ("no timestamp")
**   kafka_ms(text)   epoch milliseconds of such text (the forms of
**                    KL_TIME_FORMS); NULL for NULL
** Both are deterministic and innocuous; their user data is unused.
*/
#ifndef KL_TIMEFN_H
#define KL_TIMEFN_H

#include "sqlite3ext.h"

void kl_fn_time(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void kl_fn_ms(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
