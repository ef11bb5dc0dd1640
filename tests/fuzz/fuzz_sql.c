/*
** fuzz_sql.c - libFuzzer target for whole-directory reads through SQL: the
** input becomes a partition directory, then a few queries run over it with
** kafka_log (ascending, descending, by offset, by timestamp, with
** on_corrupt='skip', read_committed), kafka_batches, kafka_segments,
** kafka_log_check, and over the log directory holding it, kafka_log by
** topic and partition and kafka_partitions; Kafka's own state over the
** same bytes: kafka_producers and kafka_hanging_transactions (with the
** partition's producer snapshot), kafka_metadata, kafka_topics and
** kafka_partitions_metadata (the partition read as __cluster_metadata),
** and, over a second log directory where the .log is partition 0 of
** __transaction_state and of __consumer_offsets, kafka_transactions,
** kafka_transaction_log and kafka_consumer_offsets; then a named table
** appends to the directory (recovery or adoption of whatever the input
** holds, two records, a read back) and removes a prefix.  Errors are fine;
** crashes, sanitizer reports and leaks are findings.
**
** Input: up to seven sections separated by "\n--KLSEP--\n": the .log, the
** .index, the .timeindex and the .txnindex of segment 0, the log
** directory's log-start-offset-checkpoint, the commit record
** kafkalog.commit and the producer snapshot 00000000000000000001.snapshot
** (a missing section means a missing file, and so does an empty
** checkpoint or commit section, so that a snapshot can be given alone).
** Each run uses a fresh partition directory "t-<run>" under a log
** directory in $TMPDIR (default /dev/shm), so the module's log cache never
** sees a file changed in place.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

int sqlite3_kafkalog_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api);

static const char SEP[] = "\n--KLSEP--\n";
static sqlite3 *db;         /* table-valued queries, statements kept prepared */
#define NQ 33
static sqlite3_stmt *stmts[NQ];
static const char *const queries[NQ] = {
    "SELECT count(*), sum(offset), sum(length(value)), max(headers) FROM kafka_log(?1)",
    "SELECT offset, key, headers FROM kafka_log(?1) ORDER BY offset DESC LIMIT 5",
    "SELECT offset FROM kafka_log(?1) WHERE offset >= 3 AND offset < 40 LIMIT 5",
    "SELECT offset FROM kafka_log(?1) WHERE timestamp >= 1700000000500 LIMIT 5",
    ("SELECT offset FROM kafka_log(?1) WHERE timestamp BETWEEN 0 AND 1700000000500 ORDER BY "
     "offset DESC LIMIT 5"),
    "SELECT * FROM kafka_log_check(?1)",
    "SELECT count(*), sum(offset) FROM kafka_log(?1, 'skip')",
    "SELECT offset FROM kafka_log(?1, 'skip') ORDER BY offset DESC LIMIT 3",
    "SELECT offset FROM kafka_log(?1, 'skip') WHERE timestamp > 1700000000100 LIMIT 3",
    /* After the queries above, what the table learnt answers these. */
    "SELECT count(*) FROM kafka_log(?1)",
    "SELECT max(timestamp), min(offset) FROM kafka_log(?1)",
    "SELECT offset, timestamp FROM kafka_log(?1) ORDER BY timestamp DESC LIMIT 4",
    "SELECT sum(timestamp % 1000), count(*) FROM kafka_log(?1) WHERE timestamp >= 1700000000200",
    ("SELECT count(*), sum(length(value)) FROM kafka_log(?1, 'error', 50) WHERE timestamp >= "
     "1700000000100 AND timestamp < 1700000000400"),
    "SELECT k.value FROM kafka_log(?1) a JOIN kafka_log(?1) k ON k.offset = a.offset + 2 LIMIT 20",
    "SELECT count(*), sum(crc_valid), max(control_type), sum(coordinator_epoch) FROM kafka_batches(?1)",
    "SELECT base_offset, record_count FROM kafka_batches(?1) WHERE last_offset >= 3 AND base_offset < 60",
    "SELECT * FROM kafka_segments(?1)",
    "SELECT count(*), max(offset) FROM kafka_log(?1) WHERE isolation = 'read_committed'",
    "SELECT typeof(key), typeof(value) FROM kafka_log(?1) WHERE key_type = 'text' AND value_type = 'text'",
    "SELECT topic, partition, count(*), min(offset) FROM kafka_log(?2) GROUP BY 1, 2",
    "SELECT offset, value FROM kafka_log(?2) WHERE topic = 't' AND partition = ?3 AND offset >= 2 LIMIT 3",
    "SELECT offset FROM kafka_log(?2) WHERE isolation = 'read_committed' ORDER BY offset DESC LIMIT 3",
    "SELECT * FROM kafka_partitions(?2)",
    /* Kafka's own state: ?4 is the log directory of __transaction_state-0
    ** and __consumer_offsets-0, both the input's .log. */
    "SELECT * FROM kafka_producers(?1)",
    "SELECT * FROM kafka_hanging_transactions(?2, 1800000000000, 0)",
    "SELECT * FROM kafka_metadata(?1) LIMIT 200",
    "SELECT * FROM kafka_topics(?1)",
    "SELECT * FROM kafka_partitions_metadata(?1)",
    "SELECT * FROM kafka_transactions(?4)",
    ("SELECT * FROM kafka_transaction_log(?4) WHERE record_timestamp > 0 ORDER BY "
     "state_partition, record_offset DESC LIMIT 20"),
    "SELECT * FROM kafka_hanging_transactions(?4)",
    "SELECT * FROM kafka_consumer_offsets(?4)"};
static char root[512];
static char sroot[540];     /* where the runs' second log directories go */
static unsigned long runs;

static void put(const char *dir, const char *name, const uint8_t *p, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (n && fwrite(p, 1, n, f) != n) abort();
  fclose(f);
}

/* Remove dir and the files in it. */
static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2]))) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static void step_all(sqlite3_stmt *st) {
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW && rows++ < 100000) {
    for (int i = 0; i < sqlite3_column_count(st); i++) (void)sqlite3_column_blob(st, i);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || access("/dev/shm", W_OK) == 0) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(root, sizeof root, "%s/kl-fuzz-sql-XXXXXX", tmp);
  if (!mkdtemp(root)) abort();
  snprintf(sroot, sizeof sroot, "%s-state", root);
  if (mkdir(sroot, 0700) != 0) abort();
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) abort();
  if (sqlite3_kafkalog_init(db, NULL, NULL) != SQLITE_OK) abort();
  for (int i = 0; i < NQ; i++) {
    if (sqlite3_prepare_v2(db, queries[i], -1, &stmts[i], NULL) != SQLITE_OK) abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dir[600];
  unsigned long run = runs++;
  snprintf(dir, sizeof dir, "%s/t-%lu", root, run);
  if (mkdir(dir, 0700) != 0) return 0;
  static const char *names[7] = {"00000000000000000000.log", "00000000000000000000.index",
                                 "00000000000000000000.timeindex", "00000000000000000000.txnindex",
                                 "../log-start-offset-checkpoint", "kafkalog.commit",
                                 "00000000000000000001.snapshot"};
  const uint8_t *p = data, *end = data + size, *log = data;
  size_t log_n = 0;
  for (int k = 0; k < 7 && p; k++) {
    const uint8_t *q = memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1);
    size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
    if (k == 0) log_n = n;
    if (n || (k != 4 && k != 5)) put(dir, names[k], p, n);
    p = q ? q + sizeof SEP - 1 : NULL;
  }
  /* The second log directory: the .log as Kafka's internal topics. */
  char state[600], part[700];
  snprintf(state, sizeof state, "%s/s-%lu", sroot, run);
  if (mkdir(state, 0700) != 0) abort();
  static const char *const internal[2] = {"__transaction_state-0", "__consumer_offsets-0"};
  for (int k = 0; k < 2; k++) {
    snprintf(part, sizeof part, "%s/%s", state, internal[k]);
    if (mkdir(part, 0700) != 0) abort();
    put(part, names[0], log, log_n);
  }
  for (int i = 0; i < NQ; i++) {
    int np = sqlite3_bind_parameter_count(stmts[i]);
    sqlite3_bind_text(stmts[i], 1, dir, -1, SQLITE_STATIC);
    if (np >= 2) sqlite3_bind_text(stmts[i], 2, root, -1, SQLITE_STATIC);
    if (np >= 3) sqlite3_bind_int64(stmts[i], 3, (sqlite3_int64)run);
    if (np >= 4) sqlite3_bind_text(stmts[i], 4, state, -1, SQLITE_STATIC);
    step_all(stmts[i]);
    sqlite3_reset(stmts[i]);
  }
  for (int k = 0; k < 2; k++) {
    snprintf(part, sizeof part, "%s/%s", state, internal[k]);
    rm_dir(part);
  }
  rmdir(state);
  /* Writing: whatever the files hold, an error or a log that reads back. */
  char *sql = sqlite3_mprintf(
      "CREATE VIRTUAL TABLE temp.w USING kafka_log(%Q, mode='write', segment_bytes=4096,"
      " index_interval_bytes=100, batch_bytes=1024);"
      "INSERT INTO temp.w(key, value, headers) VALUES ('k', 'v', '[[\"h\",null]]'),"
      " (NULL, randomblob(300), NULL);"
      "SELECT count(*), sum(length(value)) FROM temp.w;"
      "BEGIN; INSERT INTO temp.w(value) VALUES (zeroblob(2000)); ROLLBACK;"
      "DELETE FROM temp.w WHERE offset < 3;"
      "SELECT count(*) FROM kafka_log_check(%Q);", dir, dir);
  if (!sql) abort();
  sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); /* if a statement failed inside */
  sqlite3_exec(db, "DROP TABLE IF EXISTS temp.w", NULL, NULL, NULL);
  rm_dir(dir);
  char ck[1024];
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint", root);
  unlink(ck);
  return 0;
}
