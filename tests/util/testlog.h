/*
** testlog.h - the numbered logs of the writer's tests (core/writer.h):
** record i of a log is known from i alone, so a test writes records
** through kl_writer, reads the directory back and checks that it holds
** exactly records 0, 1, ... n-1.
*/
#ifndef KL_TESTLOG_H
#define KL_TESTLOG_H

#include "builder.h"
#include "log.h"
#include "writer.h"

/* What record i looks like: key "key" always, and */
enum {
  T_LOG_PLAIN,              /* value "value-<i>", timestamp 1700000000000 + i */
  T_LOG_PADDED,             /* value "value-<i>-" and 40 zeros (a 1 KiB segment
                            ** holds about ten), timestamp 1700000000000 + i */
  T_LOG_DISORDER            /* value "value-<i>", timestamps out of order:
                            ** 1700000000000 + 7i - 3 (i mod 5) */
};

/* Record i of the logs of style; its value stays valid until 64 more
** records are made. */
kl_rec_in t_log_rec(int style, int64_t i);

/* A writer on dir through env (NULL: libc), made when missing: segments
** of segment_bytes, an index entry every interval bytes, batches of at
** most batch_bytes (0: the writer's default), codec.  Fails the current
** test when it does not open. */
kl_writer *t_log_writer(const kl_env *env, const char *dir, int64_t segment_bytes,
                        int64_t interval, int64_t batch_bytes, int codec);

/* Records [first, first + n) of style appended through w in one
** transaction, then synced: KL_OK (the caller commits) or the first error
** (the caller rolls back or closes).  A record given another offset than
** its number fails the current test. */
kl_rc t_log_append(kl_writer *w, int style, int64_t first, int n, kl_err *err);

/* The records a reader of dir finds through env (NULL: libc), as view
** shows them when view is not NULL: their count.  Each must be the record
** of style numbered by its offset, from 0 without a gap; anything else
** fails the current test. */
int64_t t_log_check(const kl_env *env, const char *dir, const kl_view *view, int style);

/* The records of log (its reads counted nowhere), each decoded: their
** count.  A read that fails fails the current test. */
int64_t t_log_count(kl_log *log);

/* The files of a and b matching globs (shell patterns separated by
** spaces; each must match in a) are the same, byte for byte, and neither
** directory has one the other lacks. */
void t_same_files(const char *a, const char *b, const char *globs);

#endif
