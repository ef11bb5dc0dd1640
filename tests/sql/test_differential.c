/*
** test_differential.c - randomized differential test: the same query on
** kafka_log(dir) and on a native SQLite table holding the same rows must
** return the same result, row by row.
**
** The native table n is filled with INSERT ... SELECT from a full scan of
** kafka_log, so this test checks the constrained paths (offset and time
** pushdown, descending scans, LIMIT/OFFSET, joins) against the full scan;
** test_conformance checks the full scan against Kafka's expected.json.
**
** Queries are built from a fixed-seed PRNG (printed; override with the
** environment variable KL_SEED, and the count with KL_QUERIES).
*/
#include "sqltest.h"

#include <math.h>

#include "kwriter.h"

/* ---- PRNG (xorshift64*) ---- */

static uint64_t g_rng;

static uint64_t rnd(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * UINT64_C(2685821657736338717);
}
static int64_t rnd_below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }
static int chance(int percent) { return rnd_below(100) < percent; }

/* ---- what the values are drawn from ---- */

typedef struct domain {
  int64_t off_lo, off_hi;   /* smallest / largest offset present */
  int64_t ts_lo, ts_hi;     /* smallest / largest timestamp present */
  int64_t *bounds;          /* batch first/last offsets and segment bases */
  int nbounds;
  int64_t *stamps;          /* every record's timestamp */
  int nstamps;
} domain;

static int64_t *collect(sqlite3 *db, const char *sql, int *n) {
  sqlite3_stmt *st = st_prep(db, sql, NULL);
  int cap = 1024;
  int64_t *v = malloc(sizeof *v * (size_t)cap);
  *n = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (*n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2));
    assert_non_null(v);
    v[(*n)++] = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  assert_true(*n > 0);
  return v;
}

/* An offset: mostly near real ones, sometimes exact boundaries, out of
** range, negative or extreme. */
static void gen_offset(st_buf *q, const domain *d) {
  int64_t span = d->off_hi - d->off_lo + 1;
  switch (rnd_below(20)) {
    case 0: st_buf_printf(q, "%" PRId64, -1 - rnd_below(1000)); return;
    case 1: st_buf_printf(q, "%" PRId64, d->off_hi + 1 + rnd_below(3)); return;
    case 2: st_buf_printf(q, "%" PRId64, d->off_lo); return;
    case 3: st_buf_printf(q, "%" PRId64, d->off_hi); return;
    case 4: st_buf_printf(q, "%s", chance(50) ? "9223372036854775807" : "(-9223372036854775807-1)"); return;
    case 5: st_buf_printf(q, "%" PRId64 ".5", d->off_lo + rnd_below(span)); return;  /* a REAL */
    case 6: case 7: case 8: case 9: case 10: case 11: {
      int64_t b = d->bounds[rnd_below(d->nbounds)] + rnd_below(3) - 1;
      st_buf_printf(q, "%" PRId64, b);
      return;
    }
    default: st_buf_printf(q, "%" PRId64, d->off_lo - 2 + rnd_below(span + 4));
  }
}

static void gen_timestamp(st_buf *q, const domain *d) {
  switch (rnd_below(16)) {
    case 0: st_buf_printf(q, "%d", chance(50) ? -1 : 0); return;
    case 1: st_buf_printf(q, "%" PRId64, d->ts_lo - 1 - rnd_below(2)); return;
    case 2: st_buf_printf(q, "%" PRId64, d->ts_hi + rnd_below(3)); return;
    case 3: st_buf_printf(q, "%" PRId64, d->ts_lo); return;
    case 4: st_buf_printf(q, "%s", chance(50) ? "9223372036854775807" : "(-9223372036854775807-1)"); return;
    case 5: st_buf_printf(q, "%" PRId64 ".5", d->stamps[rnd_below(d->nstamps)]); return;
    case 6: case 7: case 8: case 9: case 10: case 11:
      st_buf_printf(q, "%" PRId64, d->stamps[rnd_below(d->nstamps)] + rnd_below(3) - 1);
      return;
    default: st_buf_printf(q, "%" PRId64, d->ts_lo - 5 + rnd_below(d->ts_hi - d->ts_lo + 10));
  }
}

static void gen_term(st_buf *q, const domain *d) {
  static const char *const cmp[] = {"=", "<", "<=", ">", ">="};
  switch (rnd_below(12)) {
    case 0: case 1:  /* offset compared */
      st_buf_printf(q, "offset %s ", cmp[rnd_below(5)]);
      gen_offset(q, d);
      return;
    case 2: {        /* offset IN (list) */
      int k = 1 + (int)rnd_below(6);
      st_buf_printf(q, "offset IN (");
      for (int i = 0; i < k; i++) {
        if (i) st_buf_printf(q, ", ");
        gen_offset(q, d);
      }
      st_buf_printf(q, ")");
      return;
    }
    case 3: case 4: { /* offset BETWEEN: usually a short, ordered range */
      int64_t a = d->bounds[rnd_below(d->nbounds)] + rnd_below(5) - 2;
      if (chance(80)) {
        st_buf_printf(q, "offset BETWEEN %" PRId64 " AND %" PRId64, a, a + rnd_below(chance(50) ? 50 : 3000));
      } else {
        st_buf_printf(q, "offset BETWEEN ");
        gen_offset(q, d);
        st_buf_printf(q, " AND ");
        gen_offset(q, d);
      }
      return;
    }
    case 5: case 6: case 7: /* timestamp compared */
      st_buf_printf(q, "timestamp %s ", cmp[rnd_below(5)]);
      gen_timestamp(q, d);
      return;
    case 8:          /* rowid */
      if (chance(50)) {
        st_buf_printf(q, "rowid = ");
        gen_offset(q, d);
      } else {
        int64_t a = d->bounds[rnd_below(d->nbounds)];
        st_buf_printf(q, "rowid BETWEEN %" PRId64 " AND %" PRId64, a, a + rnd_below(200));
      }
      return;
    case 9:          /* a disjunction: SQLite may run one scan per branch */
      st_buf_printf(q, "(offset < ");
      gen_offset(q, d);
      st_buf_printf(q, " OR timestamp >= ");
      gen_timestamp(q, d);
      st_buf_printf(q, ")");
      return;
    case 10:         /* a constraint the module cannot use */
      st_buf_printf(q, "%s", chance(50) ? "key IS NULL" : "length(value) > 20");
      return;
    default:         /* offset compared to NULL: never true */
      if (chance(10)) {
        st_buf_printf(q, "offset %s NULL", cmp[rnd_below(5)]);
      } else {
        st_buf_printf(q, "offset >= ");
        gen_offset(q, d);
        st_buf_printf(q, " AND offset < ");
        gen_offset(q, d);
      }
  }
}

/* One random query over table expression `from`.  Identical text for both
** sides except for `from`, so the generator runs once per pair: the SQL is
** built with a %s placeholder. */
static char *gen_query(const domain *d) {
  st_buf w = {0}, q = {0};
  st_buf_printf(&w, "%s", "");
  int nterm = (int)rnd_below(4);
  for (int i = 0; i < nterm; i++) {
    st_buf_printf(&w, "%s", i ? " AND " : " WHERE ");
    gen_term(&w, d);
  }
  static const char cols[] =
      "offset, timestamp, quote(key), quote(value), headers";
  int order = (int)rnd_below(4);  /* 0 none, 1 ASC, 2 DESC, 3 timestamp */
  int aggregate = chance(8);
  /* The shapes that rows counted from batch facts, min/max and the
  ** timestamp order answer; the same connection keeps what earlier
  ** queries learnt, so later ones take the known paths. */
  static const char *const shapes[] = {
      "SELECT count(*) FROM %%s%s",
      "SELECT min(offset) FROM %%s%s",
      "SELECT max(timestamp) FROM %%s%s",
      "SELECT max(timestamp), count(*) FROM %%s%s",
      "SELECT min(timestamp), max(timestamp) FROM %%s%s",
      "SELECT timestamp FROM %%s%s ORDER BY timestamp LIMIT 6",
      "SELECT timestamp, quote(key) FROM %%s%s ORDER BY timestamp, offset LIMIT 4 OFFSET 2",
      "SELECT timestamp / 100 AS h, count(*) FROM %%s%s GROUP BY h ORDER BY h",
      "SELECT timestamp FROM %%s%s ORDER BY timestamp DESC LIMIT 7",
      "SELECT timestamp FROM %%s%s ORDER BY timestamp DESC",
      "SELECT timestamp, length(value) FROM %%s%s ORDER BY timestamp DESC, offset LIMIT 5 OFFSET 3",
      "SELECT count(*), sum(length(value)) FROM %%s%s",
  };
  if (chance(15)) {
    st_buf_printf(&q, shapes[rnd_below(sizeof shapes / sizeof shapes[0])], w.p);
  } else if (aggregate) {
    st_buf_printf(&q, "SELECT count(*), min(offset), max(offset), sum(timestamp),"
                      " total(length(value)) FROM %%s%s", w.p);
  } else if (order == 0) {
    /* No ORDER BY: the module may produce any order, compare as sets. */
    st_buf_printf(&q, "SELECT * FROM (SELECT %s FROM %%s%s) ORDER BY 1", cols, w.p);
  } else {
    st_buf_printf(&q, "SELECT %s FROM %%s%s ORDER BY %s", cols, w.p,
                  order == 1 ? (chance(50) ? "offset" : "offset ASC")
                  : order == 2 ? "offset DESC" : "timestamp DESC, offset");
    if (chance(40)) {
      st_buf_printf(&q, " LIMIT %" PRId64, rnd_below(chance(70) ? 10 : 500));
      if (chance(40)) st_buf_printf(&q, " OFFSET %" PRId64, rnd_below(chance(70) ? 10 : 2000));
    }
  }
  st_buf_free(&w);
  return q.p;
}

/* Run the query with `from` substituted; render the result. */
static void run_on(sqlite3 *db, const char *tmpl, const char *from, const char *dir, st_buf *out) {
  char *sql = sqlite3_mprintf(tmpl, from, from); /* a self-join names it twice */
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    st_buf_printf(out, "PREPARE ERROR: %s\n", sqlite3_errmsg(db));
  } else {
    if (sqlite3_bind_parameter_count(st) >= 1)
      assert_int_equal(sqlite3_bind_text(st, 1, dir, -1, SQLITE_TRANSIENT), SQLITE_OK);
    st_render(db, st, out);
  }
  sqlite3_free(sql);
}

typedef struct tally {
  long queries, mismatches, rows;
} tally;

/* Compare the query on both sides (the module's as `from`); print the
** first few differences. */
static void compare_from(sqlite3 *db, const char *tmpl, const char *from, const char *dir, tally *t,
                         uint64_t seed, long i) {
  st_buf a = {0}, b = {0};
  run_on(db, tmpl, from, dir, &a);
  run_on(db, tmpl, "n", dir, &b);
  t->queries++;
  if (strstr(b.p, "ERROR"))  /* the generator must only build valid SQL */
    fail_msg("native query failed: %s\n  template: %s", b.p, tmpl);
  t->rows += (long)(b.n ? 1 : 0);
  char la[300], lb[300];
  long line = st_first_diff(a.p, b.p, la, lb, sizeof la);
  if (line && t->mismatches++ < 8) {
    char *sql = sqlite3_mprintf(tmpl, from);
    print_message("  MISMATCH (seed %" PRIu64 ", query #%ld) %s\n"
                  "    row %ld: kafka_log: %s\n"
                  "    row %ld: native:    %s\n",
                  seed, i, sql, line, la, line, lb);
    sqlite3_free(sql);
  }
  st_buf_free(&a);
  st_buf_free(&b);
}

static void compare(sqlite3 *db, const char *tmpl, const char *dir, tally *t, uint64_t seed, long i) {
  compare_from(db, tmpl, "kafka_log(?1)", dir, t, seed, i);
}

static void run_set(const char *set) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", t_fixture(set));
  const char *env_seed = getenv("KL_SEED");
  const char *env_n = getenv("KL_QUERIES");
  uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : UINT64_C(20241025);
  long nq = env_n ? atol(env_n) : 400;  /* x 6 sets of the sample = 2400 queries */
  /* A different but fixed stream per set. */
  g_rng = seed * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)strlen(set) * 7919u + (uint64_t)set[0];
  if (!g_rng) g_rng = 1;
  print_message("  %s: seed %" PRIu64 " (KL_SEED), %ld queries (KL_QUERIES)\n", set, seed, nq);

  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE n(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB,"
              " value BLOB, headers TEXT)");
  st_run(db, "INSERT INTO n SELECT offset, timestamp, key, value, headers FROM kafka_log(?1)",
         "t", dir);
  int64_t rows = st_int(db, "SELECT count(*) FROM n", NULL);
  assert_true(rows > 0);

  domain d;
  d.off_lo = st_int(db, "SELECT min(offset) FROM n", NULL);
  d.off_hi = st_int(db, "SELECT max(offset) FROM n", NULL);
  d.ts_lo = st_int(db, "SELECT min(timestamp) FROM n", NULL);
  d.ts_hi = st_int(db, "SELECT max(timestamp) FROM n", NULL);
  char *sql = sqlite3_mprintf(
      "SELECT min(offset) FROM kafka_log(%Q) GROUP BY segment, position"
      " UNION SELECT max(offset) FROM kafka_log(%Q) GROUP BY segment, position"
      " UNION SELECT DISTINCT segment FROM kafka_log(%Q)", dir, dir, dir);
  d.bounds = collect(db, sql, &d.nbounds);
  sqlite3_free(sql);
  d.stamps = collect(db, "SELECT timestamp FROM n", &d.nstamps);

  tally t = {0};
  {
    /* Two cursors on one log that nothing has read yet: the outer walks
    ** and learns batches while the inner looks up offsets and learns
    ** others, so the facts move under both. */
    static const char self[] =
        "SELECT a.offset, b.timestamp, quote(b.value) FROM %s a JOIN %s b ON b.offset = a.offset + 1"
        " WHERE a.offset %% 7 = 0 ORDER BY 1";
    sqlite3 *fresh = st_open();
    st_buf x = {0}, y = {0};
    run_on(fresh, self, "kafka_log(?1)", dir, &x);
    run_on(db, self, "n", dir, &y);
    char la[300], lb[300];
    long line = st_first_diff(x.p, y.p, la, lb, sizeof la);
    if (line) fail_msg("%s: self-join on a fresh connection, row %ld: %s / native %s", set, line, la, lb);
    st_buf_free(&x);
    st_buf_free(&y);
    st_close(fresh);
  }
  for (long i = 0; i < nq; i++) {
    char *tmpl = gen_query(&d);
    compare(db, tmpl, dir, &t, seed, i);
    free(tmpl);
  }

  /* A join: kafka_log probed by offset from the native table (or the
  ** other way round, as the planner likes), and both orders forced. */
  static const char *const joins[] = {
      "SELECT n.offset, k.timestamp, quote(k.key), quote(k.value), k.headers"
      " FROM n JOIN %s k ON k.offset = n.offset WHERE n.offset %% 97 = 0 ORDER BY 1",
      "SELECT n.offset, k.timestamp, quote(k.key), k.headers"
      " FROM n CROSS JOIN %s k ON k.offset = n.offset WHERE n.offset %% 97 = 0 ORDER BY 1",
      "SELECT n.offset, k.timestamp, quote(k.value)"
      " FROM %s k CROSS JOIN n ON k.offset = n.offset WHERE k.offset %% 97 = 0 ORDER BY 1",
      /* two cursors on one log, learning its batches at once (the outer
      ** walks, the inner looks up): the facts move under both */
      "SELECT a.offset, b.timestamp, length(b.value) FROM %s a JOIN %s b ON b.offset = a.offset + 1"
      " WHERE a.offset %% 13 = 0 ORDER BY 1",
      /* kafka_log probed by timestamp equality, once per outer row */
      "SELECT k2.offset, k.offset FROM n k2 CROSS JOIN %s k ON k.timestamp = k2.timestamp"
      " WHERE k2.offset %% 997 = 0 ORDER BY 1, 2",
  };
  for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++)
    compare(db, joins[i], dir, &t, seed, -1 - (long)i);

  print_message("  %s: %ld queries, %ld with rows, %ld mismatches\n", set, t.queries, t.rows,
                t.mismatches);
  free(d.bounds);
  free(d.stamps);
  st_close(db);
  if (t.mismatches) fail_msg("%s: %ld of %ld queries differ", set, t.mismatches, t.queries);
}

/* ---- a log directory: several topics and partitions ---- */

/* A term on a log directory: topic and partition constraints (the
** partition choice), or one of the single-partition terms (but rowid,
** which carries the partition there). */
static void gen_term_dir(st_buf *q, const domain *d) {
  static const char *const topics[] = {"'orders'", "'clicks'", "'payments'", "'__consumer_offsets'",
                                       "'nope'", "NULL"};
  static const char *const cmp[] = {"=", "<", "<=", ">", ">="};
  switch (rnd_below(6)) {
    case 0:
      st_buf_printf(q, "topic = %s", topics[rnd_below(6)]);
      return;
    case 1:
      st_buf_printf(q, "topic IN (%s, %s)", topics[rnd_below(6)], topics[rnd_below(6)]);
      return;
    case 2:
      st_buf_printf(q, "partition %s %" PRId64, cmp[rnd_below(5)], rnd_below(4) - 1);
      return;
    case 3:
      st_buf_printf(q, "partition IN (%" PRId64 ", %" PRId64 ")", rnd_below(3), rnd_below(3));
      return;
    default:
      for (;;) {
        st_buf t = {0};
        st_buf_printf(&t, "%s", "");
        gen_term(&t, d);
        int ok = !strstr(t.p, "rowid");
        if (ok) st_buf_printf(q, "%s", t.p);
        st_buf_free(&t);
        if (ok) return;
      }
  }
}

static char *gen_query_dir(const domain *d) {
  st_buf w = {0}, q = {0};
  st_buf_printf(&w, "%s", "");
  int nterm = (int)rnd_below(4);
  for (int i = 0; i < nterm; i++) {
    st_buf_printf(&w, "%s", i ? " AND " : " WHERE ");
    gen_term_dir(&w, d);
  }
  switch (rnd_below(6)) {
    case 0: /* no order: compared as sets */
      st_buf_printf(&q, "SELECT * FROM (SELECT topic, partition, offset, timestamp, quote(value)"
                        " FROM %%s%s) ORDER BY 1, 2, 3", w.p);
      break;
    case 1:
      st_buf_printf(&q, "SELECT topic, partition, count(*), min(offset), max(timestamp) FROM %%s%s"
                        " GROUP BY 1, 2 ORDER BY 1, 2", w.p);
      break;
    case 2: /* one order term, consumed (the path is a parameter): ties across
            ** partitions have equal values, so the sequences compare */
      st_buf_printf(&q, "SELECT offset FROM %%s%s ORDER BY offset%s", w.p, chance(50) ? " DESC" : "");
      if (chance(60)) st_buf_printf(&q, " LIMIT %" PRId64, rnd_below(40));
      break;
    case 3:
      st_buf_printf(&q, "SELECT timestamp FROM %%s%s ORDER BY timestamp%s LIMIT %" PRId64, w.p,
                    chance(50) ? " DESC" : "", rnd_below(40));
      break;
    case 4:
      st_buf_printf(&q, "SELECT count(*), sum(offset), total(length(value)) FROM %%s%s", w.p);
      break;
    default:
      st_buf_printf(&q, "SELECT topic, partition, offset, timestamp, quote(key) FROM %%s%s"
                        " ORDER BY topic, partition, offset DESC LIMIT %" PRId64, w.p, rnd_below(30));
  }
  st_buf_free(&w);
  return q.p;
}

/* tests/fixtures/broker: five Kafka-written partitions in three topics,
** a log start offset above a segment's base, and __consumer_offsets. */
static void test_log_directory(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/broker", KL_FIXTURES);
  const char *env_seed = getenv("KL_SEED");
  const char *env_n = getenv("KL_QUERIES");
  uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : UINT64_C(20241025);
  long nq = env_n ? atol(env_n) : 400;
  g_rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 77;
  print_message("  broker: seed %" PRIu64 " (KL_SEED), %ld queries (KL_QUERIES)\n", seed, nq);
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE n(topic TEXT, partition INTEGER, offset INTEGER, timestamp INTEGER,"
              " key BLOB, value BLOB, headers TEXT, PRIMARY KEY(topic, partition, offset))");
  st_run(db, "INSERT INTO n SELECT topic, partition, offset, timestamp, key, value, headers"
             " FROM kafka_log(?1)", "t", dir);
  assert_int_equal(st_int(db, "SELECT count(DISTINCT topic || partition) FROM n", NULL), 6);
  domain d;
  d.off_lo = st_int(db, "SELECT min(offset) FROM n", NULL);
  d.off_hi = st_int(db, "SELECT max(offset) FROM n", NULL);
  d.ts_lo = st_int(db, "SELECT min(timestamp) FROM n", NULL);
  d.ts_hi = st_int(db, "SELECT max(timestamp) FROM n", NULL);
  char *sql = sqlite3_mprintf("SELECT min(offset) FROM kafka_log(%Q) GROUP BY topic, partition, segment,"
                              " position UNION SELECT DISTINCT segment FROM kafka_log(%Q)", dir, dir);
  d.bounds = collect(db, sql, &d.nbounds);
  sqlite3_free(sql);
  d.stamps = collect(db, "SELECT timestamp FROM n", &d.nstamps);
  /* The path as a parameter (an order is consumed and the module sorts
  ** several partitions' rows), as a literal and as a named table (known
  ** when planning: SQLite sorts). */
  char *b = sqlite3_mprintf("CREATE VIRTUAL TABLE b USING kafka_log(%Q)", dir);
  st_exec(db, b);
  sqlite3_free(b);
  char *literal = sqlite3_mprintf("kafka_log(%Q)", dir);
  tally t = {0};
  for (long i = 0; i < nq; i++) {
    char *tmpl = gen_query_dir(&d);
    compare_from(db, tmpl, i % 3 == 0 ? "kafka_log(?1)" : i % 3 == 1 ? literal : "b", dir, &t, seed, i);
    free(tmpl);
  }
  sqlite3_free(literal);
  /* A join probing topic, partition and offset once per outer row. */
  compare(db, "SELECT n.topic, n.partition, n.offset, quote(k.value) FROM n JOIN %s k"
              " ON k.topic = n.topic AND k.partition = n.partition AND k.offset = n.offset"
              " WHERE n.offset % 211 = 0 ORDER BY 1, 2, 3", dir, &t, seed, -1);
  print_message("  broker: %ld queries, %ld with rows, %ld mismatches\n", t.queries, t.rows, t.mismatches);
  free(d.bounds);
  free(d.stamps);
  st_close(db);
  if (t.mismatches) fail_msg("broker: %ld of %ld queries differ", t.mismatches, t.queries);
}

/* ---- read_committed, with and without .txnindex files ---- */

/* The rows a read_committed consumer of ?1 gets, from the markers alone
** (kafka_batches' control types, nothing of .txnindex): a record of a
** non-transactional batch, or of a transactional one whose producer's next
** marker is a COMMIT, below the first offset of any transaction left
** open. */
static const char k_committed_native[] =
    "WITH b AS (SELECT segment, position, base_offset, last_offset, producer_id,"
    "   is_transactional, is_control, control_type FROM kafka_batches(?1)),"
    " m AS (SELECT b.*, (SELECT c.control_type FROM b c WHERE c.is_control AND"
    "   c.producer_id = b.producer_id AND c.base_offset > b.last_offset"
    "   ORDER BY c.base_offset LIMIT 1) AS fate FROM b WHERE NOT b.is_control),"
    " lso AS (SELECT coalesce(min(base_offset), 9223372036854775807) AS o FROM m"
    "   WHERE is_transactional AND fate IS NULL)"
    " SELECT l.offset, l.timestamp, l.key, l.value, l.headers"
    " FROM kafka_log(?1) l JOIN m ON m.segment = l.segment AND m.position = l.position"
    " WHERE (NOT m.is_transactional OR m.fate = 'COMMIT') AND l.offset < (SELECT o FROM lso)";

/* Random queries under read_committed over a copy of set, once with its
** .txnindex files and once without, against the native table of the rows
** the markers commit. */
static void run_committed(const char *set) {
  const char *env_seed = getenv("KL_SEED");
  const char *env_n = getenv("KL_QUERIES");
  uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : UINT64_C(20241025);
  long nq = env_n ? atol(env_n) / 2 : 200;
  g_rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 17u;
  char *dir = t_mkdtemp("diff-committed");
  assert_int_equal(t_copy_dir(t_fixture(set), dir), 0);
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE n(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB,"
              " value BLOB, headers TEXT)");
  char *ins = sqlite3_mprintf("INSERT INTO n %s", k_committed_native);
  st_run(db, ins, "t", dir);
  sqlite3_free(ins);
  int64_t rows = st_int(db, "SELECT count(*) FROM n", NULL);
  int64_t all = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir);
  print_message("  %s read_committed: %lld of %lld rows committed, seed %" PRIu64 "\n", set,
                (long long)rows, (long long)all, seed);
  assert_true(rows > 0 && rows < all);
  domain d;
  d.off_lo = st_int(db, "SELECT min(offset) FROM n", NULL);
  d.off_hi = st_int(db, "SELECT max(offset) FROM n", NULL);
  d.ts_lo = st_int(db, "SELECT min(timestamp) FROM n", NULL);
  d.ts_hi = st_int(db, "SELECT max(timestamp) FROM n", NULL);
  char *sql = sqlite3_mprintf(
      "SELECT min(offset) FROM kafka_log(%Q) GROUP BY segment, position"
      " UNION SELECT max(offset) FROM kafka_log(%Q) GROUP BY segment, position", dir, dir);
  d.bounds = collect(db, sql, &d.nbounds);
  sqlite3_free(sql);
  d.stamps = collect(db, "SELECT timestamp FROM n", &d.nstamps);
  static const char from[] = "kafka_log(?1, 'error', NULL, 'read_committed')";
  tally t = {0};
  for (int without = 0; without < 2; without++) {
    if (without) {
      /* The same log without its .txnindex files, on a fresh connection
      ** (nothing cached from the first round). */
      sqlite3_stmt *st = st_prep(db, "SELECT segment FROM kafka_segments(?1) WHERE txnindex_bytes"
                                     " IS NOT NULL", "t", dir);
      int removed = 0;
      while (sqlite3_step(st) == SQLITE_ROW) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%020lld.txnindex", dir, (long long)sqlite3_column_int64(st, 0));
        assert_int_equal(remove(path), 0);
        removed++;
      }
      sqlite3_finalize(st);
      assert_true(removed > 0);
      sqlite3 *fresh = st_open();
      st_exec(fresh, "CREATE TABLE n(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB,"
                     " value BLOB, headers TEXT)");
      sqlite3_stmt *rd = st_prep(db, "SELECT offset, timestamp, key, value, headers FROM n", NULL);
      sqlite3_stmt *wr = st_prep(fresh, "INSERT INTO n VALUES (?1, ?2, ?3, ?4, ?5)", NULL);
      while (sqlite3_step(rd) == SQLITE_ROW) {
        for (int c = 0; c < 5; c++) sqlite3_bind_value(wr, c + 1, sqlite3_column_value(rd, c));
        assert_int_equal(sqlite3_step(wr), SQLITE_DONE);
        sqlite3_reset(wr);
      }
      sqlite3_finalize(rd);
      sqlite3_finalize(wr);
      st_close(db);
      db = fresh;
    }
    for (long i = 0; i < nq; i++) {
      char *tmpl = gen_query(&d);
      compare_from(db, tmpl, from, dir, &t, seed, i);
      free(tmpl);
    }
  }
  print_message("  %s read_committed: %ld queries, %ld with rows, %ld mismatches\n", set, t.queries,
                t.rows, t.mismatches);
  free(d.bounds);
  free(d.stamps);
  st_close(db);
  t_rmdir(dir);
  free(dir);
  if (t.mismatches) fail_msg("%s read_committed: %ld of %ld queries differ", set, t.mismatches, t.queries);
}

static void test_read_committed_with_and_without_txnindex(void **state) {
  (void)state;
  run_committed("g-transactions");
}

/* ---- integer edges: every comparison at the ends of int64_t ---- */

/* Values a bound may take at the ends of int64_t and of a double's exact
** integers, as SQL literals: INTEGERs, REALs (2^63 itself, past it,
** fractions), infinities, numeric and other text, blobs and NULL. */
static const char *const edge_literals[] = {
    "-9223372036854775808", "(-9223372036854775807-1)", "-9223372036854775807",
    "-9223372036854775808.0", "-9223372036854775809", "-9223372036854775809.0",
    "-9.2233720368547758e18", "-9.223372036854775e18", "-9223372036854774784.5",
    "9223372036854775807", "9223372036854775806", "9223372036854775807.0",
    "9223372036854775808", "9223372036854775808.0", "9.2233720368547758e18",
    "9.223372036854775e18", "9223372036854775000.0", "1.8446744073709552e19",
    "9007199254740991", "9007199254740992", "9007199254740993", "9007199254740993.0",
    "-9007199254740993", "-9007199254740993.0", "9007199254740992.5", "4503599627370495.5",
    "-1", "0", "1", "-0.0", "0.5", "-0.5", "-1.5", "1e308", "-1e308", "9e999", "-9e999",
    "'-9223372036854775808'", "'9223372036854775807'", "'9223372036854775808'",
    "'-9223372036854775809'", "' 12 '", "'1e400'", "'-1e400'", "'0x10'", "'12abc'", "'abc'",
    "''", "x'00'", "x''", "x'3132'", "NULL", "CAST(1 AS TEXT)", "CAST(-1 AS REAL)",
};

/* The same ends as bound parameters, which reach the module as the values
** they are: NaN (SQLite binds it as NULL), +-Inf, +-2^63 as doubles, text
** and blobs. */
typedef struct edge_param {
  const char *name;
  int type;
  double r;
  int64_t i;
  const char *s;
} edge_param;

static const edge_param edge_params[] = {
    {"?NaN", SQLITE_FLOAT, NAN, 0, NULL},
    {"?+Inf", SQLITE_FLOAT, INFINITY, 0, NULL},
    {"?-Inf", SQLITE_FLOAT, -INFINITY, 0, NULL},
    {"?-2^63.0", SQLITE_FLOAT, -0x1p63, 0, NULL},
    {"?2^63.0", SQLITE_FLOAT, 0x1p63, 0, NULL},
    {"?-2^63", SQLITE_INTEGER, 0, INT64_MIN, NULL},
    {"?2^63-1", SQLITE_INTEGER, 0, INT64_MAX, NULL},
    {"?'-9223372036854775808'", SQLITE_TEXT, 0, 0, "-9223372036854775808"},
    {"?'9223372036854775807.5'", SQLITE_TEXT, 0, 0, "9223372036854775807.5"},
    {"?'x'", SQLITE_TEXT, 0, 0, "x"},
    {"?blob", SQLITE_BLOB, 0, 0, "\x01\x02"},
};

/* Comparison forms, V for the value: every operator, BETWEEN with the value
** at either end, IN with it alone and beside a value the column holds. */
static const char *const edge_forms[] = {
    "%s = V", "%s < V", "%s <= V", "%s > V", "%s >= V", "%s IN (V, P)",
    "%s BETWEEN V AND 9223372036854775807", "%s BETWEEN -9223372036854775808 AND V",
    "%s BETWEEN V AND V", "%s IN (V)", "%s > V AND %s < P",
};
#define EDGE_FORMS_BASIC 6 /* the operators and IN: enough on a large log */

/* Shapes of the query: rows in each order, the count, a descending window
** and the timestamp order. */
static const char *const edge_shapes[] = {
    "SELECT offset, timestamp FROM %s WHERE %s ORDER BY offset",
    "SELECT count(*), min(offset), max(timestamp) FROM %s WHERE %s",
    "SELECT offset FROM %s WHERE %s ORDER BY offset DESC LIMIT 4",
    "SELECT offset, timestamp FROM %s WHERE %s ORDER BY timestamp DESC, offset LIMIT 4",
};

/* Bind ?2 to p (NULL: nothing to bind). */
static void bind_edge(sqlite3_stmt *st, const edge_param *p) {
  if (!p) return;
  int rc = SQLITE_OK;
  if (p->type == SQLITE_FLOAT) rc = sqlite3_bind_double(st, 2, p->r);
  else if (p->type == SQLITE_INTEGER) rc = sqlite3_bind_int64(st, 2, p->i);
  else if (p->type == SQLITE_TEXT) rc = sqlite3_bind_text(st, 2, p->s, -1, SQLITE_STATIC);
  else rc = sqlite3_bind_blob(st, 2, p->s, (int)strlen(p->s), SQLITE_STATIC);
  assert_int_equal(rc, SQLITE_OK);
}

static void run_edge(sqlite3 *db, const char *sql, const char *dir, const edge_param *p, st_buf *out) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    st_buf_printf(out, "PREPARE ERROR: %s\n", sqlite3_errmsg(db));
    return;
  }
  if (sqlite3_bind_parameter_index(st, "?1")) {
    assert_int_equal(sqlite3_bind_text(st, 1, dir, -1, SQLITE_TRANSIENT), SQLITE_OK);
  }
  bind_edge(st, p);
  st_render(db, st, out);
}

/* Replace V by value and P by present in form, the column at each %s. */
static char *edge_where(const char *form, const char *col, const char *value, const char *present) {
  st_buf w = {0};
  st_buf_printf(&w, "%s", "");
  for (const char *f = form; *f; f++) {
    if (f[0] == '%' && f[1] == 's') st_buf_printf(&w, "%s", col), f++;
    else if (*f == 'V') st_buf_printf(&w, "%s", value);
    else if (*f == 'P') st_buf_printf(&w, "%s", present);
    else st_buf_printf(&w, "%c", *f);
  }
  return w.p;
}

/*
** Every form and shape for each column with every edge value, on
** kafka_log(from) and on the native table e (plain INTEGER columns, no
** index: SQLite's own comparisons), compared row by row.  extra: values
** from the data (its first and last offsets and timestamps, each +-1 and
** as fractions).  present[c]: a value column c holds.  nform: the first
** forms taken.
*/
static void compare_edges(sqlite3 *db, const char *from, const char *dir, const char *const *cols,
                          const char *const *present, int ncols, const char *const *extra, int nextra,
                          const char *const *shapes, int nshapes, int nform, tally *t) {
  int nlit = (int)(sizeof edge_literals / sizeof edge_literals[0]);
  int npar = (int)(sizeof edge_params / sizeof edge_params[0]);
  for (int c = 0; c < ncols; c++) {
    for (int v = 0; v < nlit + nextra + npar; v++) {
      const edge_param *p = v >= nlit + nextra ? &edge_params[v - nlit - nextra] : NULL;
      const char *value = p ? "?2" : v < nlit ? edge_literals[v] : extra[v - nlit];
      for (int f = 0; f < nform; f++) {
        char *where = edge_where(edge_forms[f], cols[c], value, present[c]);
        for (int s = 0; s < nshapes; s++) {
          char *qa = sqlite3_mprintf(shapes[s], from, where);
          char *qb = sqlite3_mprintf(shapes[s], "e", where);
          st_buf a = {0}, b = {0};
          run_edge(db, qa, dir, p, &a);
          run_edge(db, qb, dir, p, &b);
          t->queries++;
          if (strstr(b.p, "ERROR")) fail_msg("native query failed: %s\n  %s", b.p, qb);
          t->rows += (long)(b.n ? 1 : 0);
          char la[300], lb[300];
          long line = st_first_diff(a.p, b.p, la, lb, sizeof la);
          if (line && t->mismatches++ < 12) {
            print_message("  MISMATCH %s%s%s\n    row %ld: kafka_log: %s\n    row %ld: native:    %s\n",
                          qa, p ? " with ?2 = " : "", p ? p->name : "", line, la, line, lb);
          }
          st_buf_free(&a);
          st_buf_free(&b);
          sqlite3_free(qa);
          sqlite3_free(qb);
        }
        free(where);
      }
    }
  }
}

/* Literals from the data: each of vals, +-1 and +-0.5 around it. */
static int data_edges(const int64_t *vals, int n, char (*out)[32]) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    int64_t x = vals[i];
    snprintf(out[k++], 32, "%" PRId64, x);
    if (x > INT64_MIN) snprintf(out[k++], 32, "%" PRId64, x - 1);
    if (x < INT64_MAX) snprintf(out[k++], 32, "%" PRId64, x + 1);
    snprintf(out[k++], 32, "%" PRId64 ".5", x);
    snprintf(out[k++], 32, "(%" PRId64 " - 0.5)", x);
  }
  return k;
}

/* On a large log, shapes that read little of it: a window at either end. */
static const char *const edge_shapes_large[] = {
    "SELECT offset, timestamp FROM %s WHERE %s ORDER BY offset LIMIT 3",
    "SELECT offset, timestamp FROM %s WHERE %s ORDER BY offset DESC LIMIT 3",
};

/* The edges on kafka_log(dir) of one partition, with every shape when it
** is small. */
static void edges_on_partition(const char *dir, int small) {
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE e(offset INTEGER, timestamp INTEGER)");
  st_run(db, "INSERT INTO e SELECT offset, timestamp FROM kafka_log(?1)", "t", dir);
  assert_true(st_int(db, "SELECT count(*) FROM e", NULL) > 0);
  int64_t vals[4] = {st_int(db, "SELECT min(offset) FROM e", NULL),
                     st_int(db, "SELECT max(offset) FROM e", NULL),
                     st_int(db, "SELECT min(timestamp) FROM e", NULL),
                     st_int(db, "SELECT max(timestamp) FROM e", NULL)};
  char ex[20][32];
  const char *extra[20];
  int nextra = data_edges(vals, 4, ex);
  for (int i = 0; i < nextra; i++) extra[i] = ex[i];
  char p0[32], p1[32];
  snprintf(p0, sizeof p0, "%" PRId64, vals[0] + 1);
  snprintf(p1, sizeof p1, "%" PRId64, st_int(db, "SELECT timestamp FROM e LIMIT 1 OFFSET 1", NULL));
  const char *cols[] = {"offset", "timestamp"};
  const char *present[] = {p0, p1};
  tally t = {0};
  const char *const *shapes = small ? edge_shapes : edge_shapes_large;
  int nshapes = small ? (int)(sizeof edge_shapes / sizeof edge_shapes[0])
                      : (int)(sizeof edge_shapes_large / sizeof edge_shapes_large[0]);
  int nform = small ? (int)(sizeof edge_forms / sizeof edge_forms[0]) : EDGE_FORMS_BASIC;
  compare_edges(db, "kafka_log(?1)", dir, cols, present, 2, extra, nextra, shapes, nshapes, nform, &t);
  print_message("  %s: %ld edge queries, %ld with rows, %ld mismatches\n", dir, t.queries, t.rows,
                t.mismatches);
  st_close(db);
  if (t.mismatches) fail_msg("%ld of %ld edge queries differ", t.mismatches, t.queries);
}

/* A Kafka-written partition: ordinary offsets and timestamps against
** bounds at the ends of int64_t. */
static void test_integer_edge_bounds(void **state) {
  (void)state;
  edges_on_partition(t_fixture("b-multi-segment"), 0);
}

/* A log whose offsets end just below 2^63 (segments named near it) and
** whose timestamps take the extreme values, several segments and indexes:
** bounds meet the data at the ends of the range. */
static void test_integer_edge_bounds_extreme_log(void **state) {
  (void)state;
  static const int64_t stamps[] = {INT64_MIN, INT64_MIN + 1, -9007199254740993, -5, -1, 0, 1,
                                   9007199254740992, 9007199254740993, INT64_MAX - 1, INT64_MAX};
  int nst = (int)(sizeof stamps / sizeof stamps[0]);
  char *dir = t_mkdtemp("edges");
  assert_non_null(dir);
  kw_options o = {1500, 100, INT64_C(9223372036854775000), 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int b = 0; b < 200; b++) {
    kl_rec_in r[3];
    int n = 1 + b % 3;
    for (int i = 0; i < n; i++) {
      int64_t ts = stamps[(b * 7) % nst];
      ts = ts > 0 ? ts - i : ts + i; /* neighbours, in one batch's range */
      kl_rec_in x = {ts, "k", 1, "v", 1, NULL, 0};
      r[i] = x;
    }
    assert_int_equal(kw_append(w, NULL, r, n), 0);
  }
  assert_int_equal(kw_close(w), 0);
  edges_on_partition(dir, 1);
  t_rmdir(dir);
  free(dir);
}

/* The partition column of a log directory against the same bounds. */
static void test_integer_edge_bounds_partition(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/broker", KL_FIXTURES);
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE e(topic TEXT, partition INTEGER, offset INTEGER, timestamp INTEGER)");
  st_run(db, "INSERT INTO e SELECT topic, partition, offset, timestamp FROM kafka_log(?1)", "t", dir);
  /* The first offsets of each partition chosen: the choice, not the
  ** records, is what the bounds decide here. */
  static const char *const shapes[] = {
      "SELECT topic, partition, offset FROM %s WHERE %s AND offset < 2 ORDER BY 1, 2, 3",
  };
  int64_t vals[2] = {0, 2};
  char ex[10][32];
  const char *extra[10];
  int nextra = data_edges(vals, 2, ex);
  for (int i = 0; i < nextra; i++) extra[i] = ex[i];
  const char *cols[] = {"partition"};
  const char *present[] = {"1"};
  tally t = {0};
  compare_edges(db, "kafka_log(?1)", dir, cols, present, 1, extra, nextra, shapes, 1,
                (int)(sizeof edge_forms / sizeof edge_forms[0]), &t);
  print_message("  broker: %ld edge queries on partition, %ld with rows, %ld mismatches\n", t.queries,
                t.rows, t.mismatches);
  st_close(db);
  if (t.mismatches) fail_msg("%ld of %ld edge queries differ", t.mismatches, t.queries);
}

/* One test per set of the sample, named after it. */
static void test_set(void **state) { run_set(*state); }

int main(void) {
  static const struct CMUnitTest others[] = {
      cmocka_unit_test(test_log_directory),
      cmocka_unit_test(test_read_committed_with_and_without_txnindex),
      cmocka_unit_test(test_integer_edge_bounds),
      cmocka_unit_test(test_integer_edge_bounds_extreme_log),
      cmocka_unit_test(test_integer_edge_bounds_partition),
  };
  enum { NOTHERS = sizeof others / sizeof others[0] };
  struct CMUnitTest tests[32 + NOTHERS];
  size_t n = t_fixture_tests(T_FIX_SAMPLE, 0, test_set, tests, 32);
  for (size_t i = 0; i < NOTHERS; i++) tests[n++] = others[i];
  return _cmocka_run_group_tests("test_differential", tests, n, NULL, NULL);
}
