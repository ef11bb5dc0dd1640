/*
** test_plan_terms.c - the plan as a list of terms (vtab/terms.h): idxStr
** lists the terms a plan hands to xFilter, EXPLAIN QUERY PLAN shows it, a
** string xBestIndex did not write is refused, and producer_id = ? passes
** over other producers' batches on their headers, with the answer SQLite
** gives when it checks the term itself (producer_id + 0).
*/
#include "sqltest.h"

#include <sys/stat.h>

#include "kwriter.h"
#include "plan.h"
#include "listing.h"
#include "terms.h"

enum { N_BATCHES = 40, PER_BATCH = 10, N_PRODUCERS = 4 };

/* A partition of N_BATCHES batches of PER_BATCH records, batch b written
** by producer 100 + b % N_PRODUCERS (idempotent, not transactional), record
** o with value "value-<o>" and timestamp 1700000000000 + 10 * o, except
** that every seventh batch goes back 500 ms (timestamps are not in order). */
static char *make_producers_log(void) {
  char *dir = t_new_partition("producers");
  assert_int_equal(mkdir(dir, 0755), 0);
  kw_options o = {.segment_bytes = 4096, .index_interval = 512, .base_offset = 0, .codec = 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int b = 0; b < N_BATCHES; b++) {
    kl_rec_in r[PER_BATCH];
    char vals[PER_BATCH][32];
    int64_t base = kw_next_offset(w);
    for (int i = 0; i < PER_BATCH; i++) {
      memset(&r[i], 0, sizeof r[i]);
      snprintf(vals[i], sizeof vals[i], "value-%lld", (long long)(base + i));
      r[i].timestamp = 1700000000000 + 10 * (base + i) - (b % 7 == 6 ? 500 : 0);
      r[i].key = "k";
      r[i].key_len = 1;
      r[i].value = vals[i];
      r[i].value_len = (int32_t)strlen(vals[i]);
    }
    kl_batch_spec s;
    memset(&s, 0, sizeof s);
    s.producer_id = 100 + b % N_PRODUCERS;
    s.base_sequence = b / N_PRODUCERS * PER_BATCH;
    assert_int_equal(kw_append(w, &s, r, PER_BATCH), 0);
  }
  assert_int_equal(kw_close(w), 0);
  return dir;
}

/* producer_id = ? reads only that producer's batches: the others are
** passed over on their headers, none of their records decoded (once the
** first scan has decoded each batch, as the core does to check it). */
static void test_producer_id_skips_batches(void **state) {
  (void)state;
  char *dir = make_producers_log();
  sqlite3 *db = st_open();
  const char *q = "SELECT count(*), sum(length(value)), min(offset), max(offset)"
                  " FROM kafka_log(?1) WHERE producer_id = 102";
  char *p = st_plan(db, q, dir);
  assert_non_null(strstr(p, "INDEX 0:dir=? producer_id=?"));
  free(p);
  /* A first scan learns each batch's facts (core/segment.h); from then
  ** on a batch that is not read is not decoded. */
  char *got = st_answer(db, "SELECT count(*) FROM kafka_log(?1)", dir);
  assert_string_equal(got, "400\n");
  free(got);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  got = st_answer(db, q, dir);
  st_stats s = st_get_stats(db);
  st_print_stats("producer_id = 102", &s);
  /* Batches 2, 6, ..., 38: 10 of them, offsets 20 to 389, values of 8
  ** bytes ("value-20") and 9. */
  assert_string_equal(got, "100|880|20|389\n");
  assert_int_equal(s.batches_decoded, N_BATCHES / N_PRODUCERS);
  assert_int_equal(s.records_decoded, N_BATCHES / N_PRODUCERS * PER_BATCH);
  free(got);
  /* LIMIT and OFFSET reach the module with it: the rows skipped are not
  ** decoded, one batch is (offsets 100 to 109, the producer's 21st to
  ** 30th records). */
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  got = st_answer(db, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1) WHERE producer_id = 102"
                   " LIMIT 2 OFFSET 20", dir);
  s = st_get_stats(db);
  assert_string_equal(got, "100|'value-100'\n101|'value-101'\n");
  assert_int_equal(s.batches_decoded, 1);
  free(got);
  /* No batch of a producer that did not write: nothing decoded. */
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  got = st_answer(db, "SELECT count(*), sum(length(value)) FROM kafka_log(?1) WHERE producer_id = 7",
               dir);
  s = st_get_stats(db);
  assert_string_equal(got, "0|NULL\n");
  assert_int_equal(s.batches_decoded, 0);
  free(got);
  st_close(db);
  t_drop_partition(dir);
}

/* The same rows whatever the plan: each query with producer_id = v pushed
** down gives what SQLite gives on a native table of the same rows, and for
** a number what it gives checking producer_id + 0 = v itself. */
static void test_producer_id_exact(void **state) {
  (void)state;
  char *dir = make_producers_log();
  sqlite3 *db = st_open();
  st_run(db, "CREATE TABLE n(offset INTEGER PRIMARY KEY, timestamp INTEGER, value BLOB,"
             " producer_id INTEGER NOT NULL, max_skew_ms INTEGER)", NULL);
  st_run(db, "INSERT INTO n SELECT offset, timestamp, value, producer_id, 600 FROM kafka_log(?1)",
         "t", dir);
  static const char *const values[] = {"101", "'101'", "' 101 '", "101.0", "101.5", "NULL", "'x'",
                                       "-1", "9223372036854775807", "1e30", "x'65'"};
  static const char *const shapes[] = {
      "SELECT offset, timestamp, value FROM T WHERE producer_id %s ORDER BY offset",
      "SELECT offset FROM T WHERE producer_id %s ORDER BY offset DESC",
      "SELECT offset FROM T WHERE producer_id %s ORDER BY offset LIMIT 3 OFFSET 2",
      "SELECT offset, timestamp FROM T WHERE producer_id %s ORDER BY timestamp DESC, offset",
      "SELECT offset, value FROM T WHERE producer_id %s ORDER BY timestamp, offset LIMIT 4",
      "SELECT max(timestamp), min(timestamp), count(*) FROM T WHERE producer_id %s",
      "SELECT offset FROM T WHERE producer_id %s AND offset BETWEEN 95 AND 260 ORDER BY offset",
      "SELECT offset FROM T WHERE producer_id %s AND timestamp >= 1700000001000"
      " AND timestamp < 1700000003000 AND max_skew_ms = 600 ORDER BY offset",
      "SELECT offset FROM T WHERE producer_id %s AND offset IN (5, 15, 115, 399) ORDER BY offset",
      "SELECT a.offset FROM T a JOIN T b ON b.offset = a.offset + 1"
      " WHERE a.producer_id %s AND b.producer_id %s ORDER BY 1",
      "SELECT offset FROM T WHERE producer_id %s OR offset = 3 ORDER BY offset",
  };
  for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
      char *eq = sqlite3_mprintf("= %s", values[v]);
      char *plus = sqlite3_mprintf("+ 0 = %s", values[v]);
      char *shape = sqlite3_mprintf(shapes[k], eq, eq);
      char *pushed = st_with_from(shape, "kafka_log(?1)"), *native = st_with_from(shape, "n");
      char *a = st_answer(db, pushed, dir), *b = st_answer(db, native, NULL);
      if (strcmp(a, b)) fail_msg("%s:\n%s\nbut a native table gives:\n%s", pushed, a, b);
      if (values[v][0] != '\'' && values[v][0] != 'x') {
        char *pshape = sqlite3_mprintf(shapes[k], plus, plus);
        char *checked = st_with_from(pshape, "kafka_log(?1)");
        char *c = st_answer(db, checked, dir);
        if (strcmp(a, c)) fail_msg("%s:\n%s\nbut SQLite's check gives:\n%s", pushed, a, c);
        free(c);
        sqlite3_free(checked);
        sqlite3_free(pshape);
      }
      free(a);
      free(b);
      sqlite3_free(eq);
      sqlite3_free(plus);
      sqlite3_free(shape);
      sqlite3_free(pushed);
      sqlite3_free(native);
    }
  }
  st_close(db);
  t_drop_partition(dir);
}

/* EXPLAIN QUERY PLAN shows idxStr: the terms in argv order, the order
** consumed, then LIMIT and OFFSET; idxNum holds flags only. */
static void test_plan_text(void **state) {
  (void)state;
  const char *dir = t_fixture("a-tiny");
  sqlite3 *db = st_open();
  static const struct {
    const char *sql, *want;
  } cases[] = {
      {"SELECT * FROM kafka_log(?1) WHERE offset >= 2 AND timestamp < 5 ORDER BY offset",
       "INDEX 2:dir=? offset>=? timestamp<? ORDER BY offset"},
      {"SELECT * FROM kafka_log(?1) WHERE offset IN (1, 2) ORDER BY offset DESC LIMIT 1",
       "INDEX 3:dir=? offset IN (...) ORDER BY offset DESC LIMIT ?"},
      {"SELECT * FROM kafka_log(?1) ORDER BY offset LIMIT 2 OFFSET 1",
       "INDEX 2:dir=? full scan ORDER BY offset LIMIT ? OFFSET ?"},
      {"SELECT max(timestamp) FROM kafka_log(?1)",
       "INDEX 13:dir=? full scan ORDER BY timestamp DESC"},
      {"SELECT * FROM kafka_log(?1, 'skip') WHERE isolation = 'read_committed'",
       "INDEX 0:dir=? on_corrupt=? isolation=? full scan"},
      {"SELECT * FROM kafka_batches(?1) WHERE partition >= 0 AND offset > 3",
       "INDEX 0:dir=? partition>=? offset>?"},
      {"SELECT * FROM kafka_segments(?1) WHERE topic IN ('orders', 'x')",
       "INDEX 0:dir=? topic IN (...)"},
      {"SELECT * FROM kafka_partitions(?1)", "INDEX 0:dir=?"},
      {"SELECT * FROM kafka_consumer_offsets(?1)", "INDEX 0:dir=?"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *p = st_plan(db, cases[i].sql, dir);
    print_message("  %s\n    %s", cases[i].sql, p);
    if (!strstr(p, cases[i].want)) fail_msg("%s: plan\n%swithout %s", cases[i].sql, p, cases[i].want);
    free(p);
  }
  /* README.md's example, on a path known when planning. */
  char *q = sqlite3_mprintf("SELECT offset, value FROM kafka_log(%Q) WHERE offset >= 100 AND"
                            " timestamp >= 1700000001000 ORDER BY offset DESC LIMIT 5 OFFSET 2",
                            t_fixture("b-multi-segment"));
  char *p = st_plan(db, q, NULL);
  assert_string_equal(p, "SCAN kafka_log VIRTUAL TABLE INDEX 3:dir=? offset>=? timestamp>=? ORDER"
                         " BY offset DESC LIMIT ? OFFSET ?\n");
  free(p);
  sqlite3_free(q);
  st_close(db);
}

/* xFilter reads back only what xBestIndex writes: anything else is an
** error naming the plan, never a crash or a silently other scan. */
static void test_decode_refuses_other_strings(void **state) {
  (void)state;
  sqlite3 *db = st_open(); /* the extension's API routines are set up */
  sqlite3_vtab vt = {0};
  kl_term_use use[KL_TERMS_MAX];
  int n;
  const char *const *ph = kl_log_phrases;
  assert_int_equal(kl_terms_decode(kl_log_terms, kl_log_nterms, ph,
                                   "dir=? offset IN (...) timestamp<? ORDER BY offset DESC LIMIT ?",
                                   4, use, &n, &vt, "kafka_log"),
                   SQLITE_OK);
  assert_int_equal(n, 4);
  assert_int_equal(use[1].in, 1);
  assert_string_equal(kl_log_terms[use[1].term].label, "offset=?");
  assert_string_equal(kl_log_terms[use[2].term].label, "timestamp<?");
  assert_string_equal(kl_log_terms[use[3].term].label, "LIMIT ?");
  assert_int_equal(kl_terms_decode(kl_log_terms, kl_log_nterms, ph, NULL, 0, use, &n, &vt,
                                   "kafka_log"), SQLITE_OK);
  assert_int_equal(n, 0);
  static const struct {
    const char *s;
    int argc;
  } bad[] = {
      {"dir=? offset>=?", 1},          /* fewer values than terms */
      {"dir=?", 2},                    /* more */
      {"dir=? offset>=?x", 2},         /* a word that is no term */
      {"dir=?  offset>=?", 2},         /* two spaces */
      {"dir=? ", 1},                   /* a trailing space */
      {" dir=?", 1},
      {"dir=? ORDER BY offset ASC", 1},
      {"dir=? partition IN (...", 2},
      {"dir=? timestamp IN (...)", 2}, /* = of timestamp is never a list */
      {"dir=? producer_id>?", 2},
      {"no path", 0},                  /* a listing table's word */
      {"", 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = kl_terms_decode(kl_log_terms, kl_log_nterms, ph, bad[i].s, bad[i].argc, use, &n, &vt,
                             "kafka_log");
    if (rc != SQLITE_ERROR) fail_msg("\"%s\" with %d values: rc %d", bad[i].s, bad[i].argc, rc);
    assert_non_null(vt.zErrMsg);
    assert_non_null(strstr(vt.zErrMsg, "kafka_log: the plan"));
  }
  /* More words than any plan has: refused, not written past use[]. */
  st_buf b = {0};
  st_buf_printf(&b, "%s", "dir=?");
  for (int i = 0; i < KL_TERMS_MAX + 4; i++) st_buf_printf(&b, " %s", "offset>?");
  assert_int_equal(kl_terms_decode(kl_log_terms, kl_log_nterms, ph, b.p, KL_TERMS_MAX + 5, use,
                                   &n, &vt, "kafka_log"),
                   SQLITE_ERROR);
  st_buf_free(&b);
  sqlite3_free(vt.zErrMsg);
  st_close(db);
}

/* The memo answers a plan it decoded with the same terms, decodes another
** string (or the same string with another count) afresh, keeps no refused
** plan, and gives way oldest first. */
static void test_decode_memo(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  sqlite3_vtab vt = {0};
  kl_terms_memo m = {0};
  kl_term_use use[KL_TERMS_MAX], want[KL_TERMS_MAX];
  int n, nw;
  const char *const *ph = kl_log_phrases;
  const char *plan = "dir=? offset IN (...) timestamp<? ORDER BY offset DESC LIMIT ?";
  assert_int_equal(kl_terms_decode(kl_log_terms, kl_log_nterms, ph, plan, 4, want, &nw, &vt,
                                   "kafka_log"), SQLITE_OK);
  for (int round = 0; round < 2; round++) {
    memset(use, 0xff, sizeof use);
    assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, plan, 4, use, &n,
                                          &vt, "kafka_log"), SQLITE_OK);
    assert_int_equal(n, nw);
    assert_memory_equal(use, want, sizeof *use * (size_t)nw);
  }
  assert_non_null(m.slot[0].str);
  assert_null(m.slot[1].str); /* the second answer came from the memo */
  /* The same string with another count is refused, and not kept. */
  assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, plan, 3, use, &n,
                                        &vt, "kafka_log"), SQLITE_ERROR);
  assert_null(m.slot[1].str);
  sqlite3_free(vt.zErrMsg);
  vt.zErrMsg = NULL;
  /* A string that shares a prefix is its own plan. */
  assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, "dir=? offset IN (...)",
                                        2, use, &n, &vt, "kafka_log"), SQLITE_OK);
  assert_int_equal(n, 2);
  assert_int_equal(use[1].in, 1);
  /* NULL is the empty plan; more plans than slots push the first out. */
  assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, NULL, 0, use, &n, &vt,
                                        "kafka_log"), SQLITE_OK);
  assert_int_equal(n, 0);
  const char *more[] = {"dir=? offset>=?", "dir=? offset<?"};
  for (int i = 0; i < 2; i++)
    assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, more[i], 2, use, &n,
                                          &vt, "kafka_log"), SQLITE_OK);
  for (int i = 0; i < KL_TERMS_MEMO; i++)
    assert_true(m.slot[i].str == NULL || strcmp(m.slot[i].str, plan) != 0);
  assert_int_equal(kl_terms_decode_memo(&m, kl_log_terms, kl_log_nterms, ph, plan, 4, use, &n,
                                        &vt, "kafka_log"), SQLITE_OK);
  assert_memory_equal(use, want, sizeof *use * (size_t)nw);
  kl_terms_memo_free(&m);
  for (int i = 0; i < KL_TERMS_MEMO; i++) assert_null(m.slot[i].str);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_producer_id_skips_batches),
      cmocka_unit_test(test_producer_id_exact),
      cmocka_unit_test(test_plan_text),
      cmocka_unit_test(test_decode_refuses_other_strings),
      cmocka_unit_test(test_decode_memo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
