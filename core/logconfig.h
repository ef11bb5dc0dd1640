/*
** logconfig.h - <dir>/kafkalog.config, a written log's own write options
** (as a topic's configuration belongs to the topic, not to a client): text
** lines "name=value", "#" lines are comments.  Whoever appends to the log
** without options of its own continues with these, and options given when
** a table is created replace them for what is written next.  The names and
** values are the table options' (vtab/options.h reads them); this module
** only keeps the bytes.
**
** A Kafka broker ignores a file of another name in a partition directory
** (its loader acts on .log, the indexes, .snapshot, .deleted, .cleaned and
** .swap files only), as it ignores kafkalog.commit.
*/
#ifndef KL_LOGCONFIG_H
#define KL_LOGCONFIG_H

#include "klog.h"

#define KL_LOGCONFIG_FILE "kafkalog.config"

/* The file's bytes in out (replacing what it held), NUL-terminated (the
** NUL not counted in out->len).  KL_NOTFOUND (no message) when dir has
** none; KL_IO (or KL_CANTOPEN, KL_NOMEM) naming the file otherwise.  A
** file over 64 KiB is KL_CORRUPT: no set of options is that long. */
kl_rc kl_logconfig_read(const kl_env *env, const char *dir, kl_buf *out, kl_err *err);

/* Replace the file with the n bytes of text, atomically: a temporary file
** of a name no other writer uses, fsynced, renamed over it, the directory
** fsynced.  A reader sees the old file or the new one, whole; of two
** writers at once the last rename wins.  Failures as kl_write_rc says,
** naming the file; nothing is left behind. */
kl_rc kl_logconfig_write(const kl_env *env, const char *dir, const char *text, size_t n,
                         kl_err *err);

#endif
