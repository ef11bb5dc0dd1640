/*
** commit.h - the commit record of a partition that kafkalog writes:
** "<dir>/kafkalog.commit", the end of what committed transactions wrote.
**
** Appends reach the .log before their transaction commits (a transaction
** may be larger than memory), so the bytes of a .log are not all committed.
** Kafka answers the same question with the high watermark; offline there
** is no broker to ask, so the writer publishes the committed end in this
** file after the data it names is fsynced.  Readers stop there (a partial
** batch, or a transaction that is then rolled back, lies beyond it), and
** recovery truncates back to it.
**
** The file holds two slots of 128 bytes, each a whole record; a commit
** overwrites the older slot in place (one write, one fdatasync: a rename
** would cost two more fsyncs a commit) and readers take the valid slot with
** the greater generation.  A write torn by a crash spoils only the slot
** being written, whose CRC then fails: the other still holds the previous
** commit.  A slot:
**
**   0   "KLCOMMIT"   magic
**   8   u32          version (1)
**   12  u32          flags: bit 0 set by a clean stop (indexes final)
**   16  i64          next offset (log end offset of committed data)
**   24  i64          base offset of the active segment
**   32  i64          committed bytes of that segment's .log
**   40  i64          log start offset (retention), or -1
**   48  u64          generation: one more at every commit
**   56  i64          entries of the active segment's .index
**   64  i64          entries of its .timeindex
**   72  i64          position the last .index entry names (0: none)
**   80  i64          largest batch max timestamp of the segment (-1)
**   88  i64          last offset of the first batch carrying it
**   96  i64          timestamp of the last .timeindex entry (-1: none)
**   104 u32          CRC-32C of bytes 0..103
**
** Bytes 56..103 are the writer's state of the active segment at the
** commit, so that the next writer (another connection, another process)
** goes on without reading the segment: the index files were fsynced with
** the data, and a file whose size does not match says the state is not
** to be trusted (a writer died after the commit), and then recovery
** rebuilds it from the .log.
**
** Kafka ignores files it does not know in a partition directory, so the
** directory stays loadable by a broker; big-endian like Kafka's own files.
*/
#ifndef KL_COMMIT_H
#define KL_COMMIT_H

#include "klog.h"

#define KL_COMMIT_FILE "kafkalog.commit"
#define KL_COMMIT_SIZE 108       /* a record */
#define KL_COMMIT_SLOT 128       /* its slot; the file has two */
#define KL_COMMIT_CLEAN 1u

typedef struct kl_commit {
  uint32_t flags;
  int64_t next_offset;
  int64_t seg_base;
  int64_t seg_size;
  int64_t log_start;
  uint64_t gen;
  int64_t oidx_n, tidx_n;
  int64_t last_index_pos;
  int64_t max_ts, max_ts_off;
  int64_t last_tidx_ts;
} kl_commit;

/* What a writer's open transaction has reached, as its own reads see it
** (writer.h kl_writer_view, log.h kl_log_open_view): the end of the files
** it wrote, and the batch of records it holds in memory still, which
** reads as if it followed the active segment's bytes (end.seg_size counts
** it) without being written: a read never writes.  tail is the holder's
** (kl_buf_free with the writer's env). */
typedef struct kl_view {
  kl_commit end;
  kl_buf tail;
} kl_view;

/* Read dir's commit record (the newer valid slot), through env's system
** calls (os.h).  KL_NOTFOUND (no
** message) when there is none: the directory was not written by kafkalog,
** every byte counts.  KL_CORRUPT names the file and what is wrong (no
** valid slot); KL_IO gives the OS reason. */
kl_rc kl_commit_read(const kl_env *env, const char *dir, kl_commit *out, kl_err *err);

/* The same through a descriptor of dir's commit record kept open
** (kl_commit_open, KL_NOTFOUND when there is none): a commit rewrites the
** file in place, so the descriptor sees every later commit, and one pread
** tells whether the generation moved.  dir names the file in messages. */
kl_rc kl_commit_open(const kl_env *env, const char *dir, int *fd, kl_err *err);
kl_rc kl_commit_read_fd(const kl_env *env, int fd, const char *dir, kl_commit *out, kl_err *err);

/* Publish c durably in slot c->gen % 2 of dir's commit record, through *fd
** (kept open by the caller; -1 at first: the file is then opened, and made
** with its directory fsynced (dirfd) when it does not exist).  KL_IO names
** the file and the OS reason; the other slot is intact. */
kl_rc kl_commit_write(const kl_env *env, const char *dir, int dirfd, int *fd, const kl_commit *c,
                      kl_err *err);

#endif
