/*
** rowcount.h - how many records a partition holds from an offset on, as
** kafka_log counts its rows (read_uncommitted: every data record of every
** batch the walk of scan.h yields, control batches not), from the batch
** headers: a v2 batch wholly at or after the offset counts its header's
** record count; one the offset cuts, and legacy messages, are decoded.
**
** A v2 batch's record count is covered by its CRC, which the walk checks,
** so the count is kafka_log's for every log kafka_log reads without an
** error; the one difference is a batch whose CRC holds but whose records
** do not decode (a writer's bug, kafka_log_check's bad_records): kafka_log
** fails on it, and it is counted by its header here.
*/
#ifndef KL_ROWCOUNT_H
#define KL_ROWCOUNT_H

#include "log.h"
#include "scan.h"

/* The records of log with offset >= from (the log's readable start, for
** the rows kafka_log gives) into *n, read through rd (its mode and
** counters).  Damage and I/O errors as the walk reports them, naming the
** file and position. */
kl_rc kl_log_count_records(kl_log *log, kl_reader *rd, int64_t from, int64_t *n, kl_err *err);

#endif
