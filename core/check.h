/*
** check.h - a read-only integrity check of a partition directory: what
** Kafka's LogLoader, LogSegment.recover() and the index sanity checks would
** find (behaviour.md section 7), plus what a reader of the records would
** trip over (record-level damage, which recover() does not look at).  No
** file is changed.  The .log files are walked by the readers' own walker
** (scan.h), so an error here is exactly damage that a query reading that
** region meets, and that on_corrupt='skip' passes over.
**
** Every problem is reported through a callback as one kl_finding: the
** segment, the file, the byte position, a kind from the table below, a
** severity and a message.  A sound directory produces no finding at all.
**
**   kind                      sev  file        what
**   crc_mismatch              E    .log        stored CRC differs
**   bad_records               E    .log        records do not decode: varints, counts, offsets,
**                                              decompression (rows end before the first)
**   bad_header                E    .log        header field invalid (codec, counts) but length sane
**   offset_regression         E    .log        batch offsets not above the previous batch's
**   offset_below_base         E    .log        v2 batch offset below the segment base
**   segment_overlap           E    .log        batch offsets reach the next segment's base
**   bad_magic                 E    .log        magic byte not 0, 1 or 2
**   bad_batch_length          E    .log        length below the minimum
**   truncated_batch           E/W  .log        entry extends past the end of the file (W at the end
**                                              of the last segment with nothing readable after it:
**                                              a torn append, which Kafka's recovery truncates)
**   trailing_bytes            E    .log        non-zero bytes after a zero offset+length
**   zero_filled_tail          I/E  .log        zeros to the end of the file (I in the last segment:
**                                              log.preallocate; E elsewhere: Kafka trims on roll)
**   offset_overflow           W    .log        last offset - base does not fit 31 bits
**   unreadable                E    any         a file cannot be opened or read
**   missing_index             W/I  .index     .index absent (W: LogLoader recovers the segment),
**                                  .timeindex  .timeindex absent (I: Kafka creates it empty)
**   index_bad_length          W    .index etc  length not a multiple of the entry size
**   preallocated_index_slots  I/W  .index etc  zero-filled slots at the end (I in the last segment;
**                                              a zero first slot the log confirms is an entry)
**   index_not_monotonic       W    .index      offsets or positions not strictly increasing
**   index_points_past_log     W    .index      position at or past the end of the batches
**   index_entry_mismatch      W    .index      no batch starts at the position, or the offset is
**                                              outside the batches that entry covers
**   timeindex_not_monotonic   W    .timeindex  timestamps not increasing or offsets decreasing
**   timeindex_points_past_log W    .timeindex  offset at or past the segment's next offset
**   timeindex_entry_mismatch  W    .timeindex  no batch holds the offset, or its max timestamp
**                                              differs from the entry's
**   timeindex_missing_final_entry I/W .timeindex  last entry is not the segment's max timestamp
**                                              (I in the last segment: a live broker writes it
**                                              on roll or close)
**   txnindex_bad_length       W    .txnindex   length not a multiple of 34
**   txnindex_bad_entry        W    .txnindex   version not 0, last offset below the base, first > last,
**                                              last offset not above the previous entry's
**                                              (such an entry is not compared with the log)
**   txnindex_missing_entry    W    .txnindex   an ABORT marker of an open transaction has no entry
**                                              (or the file is absent)
**   txnindex_extra_entry      W    .txnindex   an entry whose last offset is no such marker
**   txnindex_entry_mismatch   W    .txnindex   the entry of a marker names another producer, or a
**                                              first offset not that of the transaction's first
**                                              batch (see below)
**   bad_control_record        E    .log        a control batch's first record Kafka rejects
**                                              (kl_control_parse): key under 4 bytes or of a
**                                              negative version, an ABORT/COMMIT value null,
**                                              under 6 bytes or of a negative version
**   orphan_index              W    index files index without its .log (Kafka deletes it)
**   no_segments               W    (dir)       no <20 digits>.log file at all
**
** The .txnindex is compared with the entries LogSegment.recover() would
** rebuild: the producers' transactions are followed through every segment
** in offset order (a transactional batch opens its producer's, a marker
** closes it), and each ABORT marker of an open transaction is an entry
** (producer, first offset of the transaction, which may lie in an earlier
** segment, the marker's offset).  The txnindex_* comparison kinds are W
** because Kafka rebuilds the file on recovery, but until then read_committed
** fetches depend on it: a missing entry serves aborted records as
** committed, an extra or wrong one hides committed records.  A first offset
** is accepted anywhere after the producer's previous batch up to the
** transaction's first batch (read_committed readers skip the same batches;
** the log cleaner keeps the original entry after removing those batches).
** A marker whose transaction was not seen open (it began before the first
** segment, or its data was cleaned away, or it had none) may have an entry
** or not.  The last stable offset field is not compared (check.c says
** why).  After damage in a segment (an error finding) its entries are not
** compared and the producers' states start afresh.  bad_control_record is
** an error as recover() truncates the log there and kafka_batches fails on
** it, although kafka_log, which returns no control records, reads past it.
**
** Severity: E = error (record data is damaged or lost: a query reading it
** fails with SQLITE_CORRUPT unless on_corrupt='skip'), W = warning (an index
** or file that Kafka would rebuild or delete; queries stay exact, they fall
** back to scanning), I = info (the normal state of a live or uncleanly
** stopped broker's active segment).  At most KL_CHECK_MAX_PER_KIND findings
** of one kind are reported per file; one more finding then says how many
** were left out.
**
** A log kafkalog writes (commit.h) is checked up to its commit: the
** batches, index entries and segments of a transaction still open (or of a
** writer that died, which the next writer removes) are not looked at.
*/
#ifndef KL_CHECK_H
#define KL_CHECK_H

#include "klog.h"

enum { KL_SEV_INFO = 0, KL_SEV_WARNING = 1, KL_SEV_ERROR = 2 };
#define KL_CHECK_MAX_PER_KIND 20

/* "info", "warning", "error". */
const char *kl_severity_name(int severity);

typedef struct kl_finding {
  int64_t segment;          /* segment base offset; -1 for the directory */
  const char *file;         /* file name (no directory), or "" */
  int64_t position;         /* byte position in file; -1: the whole file */
  const char *kind;         /* see the table above */
  int severity;             /* KL_SEV_* */
  const char *message;      /* human-readable, names the file */
} kl_finding;

/* Called once per finding, in directory order (segments by base offset,
** then files of a segment .log, .index, .timeindex, .txnindex).  All
** pointers are borrowed for the call.  A result other than KL_OK stops
** the check, and kl_check_dir returns it. */
typedef kl_rc (*kl_check_fn)(void *ud, const kl_finding *f);

/*
** Check the partition directory dir.  KL_OK when every file was looked at
** (findings or not); KL_CANTOPEN when dir itself cannot be read; KL_NOMEM.
*/
kl_rc kl_check_dir(const kl_env *env, const char *dir, kl_check_fn fn, void *ud,
                   kl_err *err);

/* kl_check_dir counting its work (segments opened, bytes read) into stats
** (NULL: nowhere), as a query's readers count theirs. */
kl_rc kl_check_dir_stats(const kl_env *env, const char *dir, kl_stats *stats, kl_check_fn fn,
                         void *ud, kl_err *err);

#endif
