/*
** test_values.c - Schema Registry values decoded in SQL, on the fixture
** tests/fixtures/registry (values encoded by python3-avro and by
** protoc-generated classes, see tests/fixtures/make_registry.py): kafka_schemas' replay (soft and hard
** deletes, DELETE_SUBJECT, keytypes and fields it does not know), the
** three framings, Protobuf values by message index and across an
** imported file, the JSON rules for Avro (unions bare and wrapped,
** decimals, uuid, hex bytes, exact longs, NaN and infinities, references),
** JSON Schema payloads, each error named by topic, partition, offset and
** schema id, decode_errors='null', the GET /schemas file, kafka_decode(),
** counters proving that a query not reading the column decodes nothing and
** that schemas are parsed once per connection until `_schemas` changes;
** INSERT encoding JSON text with the subject's latest schema (read back
** equal, read by python3-avro and python3-protobuf, errors naming the
** field).
*/
#include "sqltest.h"

#include <sys/stat.h>

#define REG KL_FIXTURES "/registry"

/* Every row of sql, columns joined by '|', rows by '\n' (malloc'd). */
static char *rows(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = st_prep(db, sql, NULL);
  st_buf b = {0};
  st_buf_printf(&b, "%s", "");
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const unsigned char *t = sqlite3_column_text(st, i);
      st_buf_printf(&b, "%s%s", i ? "|" : "", t ? (const char *)t : "NULL");
    }
    st_buf_printf(&b, "\n");
  }
  if (rc != SQLITE_DONE) fail_msg("step: %s\n  in: %s", sqlite3_errmsg(db), sql);
  sqlite3_finalize(st);
  return b.p;
}

static void expect_rows(sqlite3 *db, const char *sql, const char *want) {
  char *got = rows(db, sql);
  if (strcmp(got, want) != 0) fail_msg("%s\n got:\n%s\n want:\n%s", sql, got, want);
  free(got);
}

static char *text(sqlite3 *db, const char *sql) { return st_text(db, sql, NULL); }

static void expect_text(sqlite3 *db, const char *sql, const char *want) {
  char *got = text(db, sql);
  if (!got || strcmp(got, want) != 0) fail_msg("%s\n got: %s\n want: %s", sql, got, want);
  free(got);
}

static int64_t stat_of(sqlite3 *db, const char *key) {
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT json_extract(kafka_log_stats(), '$.%s')", key);
  return st_int(db, sql, NULL);
}

static void test_registry_replay(void **state) {
  sqlite3 *db = st_open();
  /* 8 (gone-value) was hard-deleted; 7 soft-deleted; dropped-value 1 and 2
  ** by DELETE_SUBJECT, 3 registered after it; CONFIG, MODE, NOOP and an
  ** unknown keytype leave no row; the unknown field is ignored. */
  expect_rows(db, "SELECT id, subject, version, schema_type, deleted, offset FROM kafka_schemas('"
                  REG "')",
              "1|orders-value|1|AVRO|0|3\n2|orders-value|2|AVRO|0|5\n"
              "3|payments-value|1|AVRO|0|6\n4|item|1|AVRO|0|2\n5|events-value|1|JSON|0|9\n"
              "6|clicks-value|1|PROTOBUF|0|10\n7|old-value|1|AVRO|1|13\n"
              "9|dropped-value|1|AVRO|1|16\n10|dropped-value|2|AVRO|1|17\n"
              "11|payments-key|1|AVRO|0|7\n12|blobs-value|1|AVRO|0|8\n"
              "13|dropped-value|3|AVRO|0|19\n14|secret-value|1|AVRO|0|20\n"
              "15|clicks-value|2|PROTOBUF|0|23\n16|shop-common|1|PROTOBUF|0|22\n");
  /* The same from the partition itself and from the REST answer. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_schemas('" REG "/_schemas-0')", NULL),
                   15);
  expect_rows(db, "SELECT id, subject, version, offset FROM kafka_schemas('" KL_FIXTURES
                  "/registry-schemas.json')",
              "1|orders-value|1|NULL\n2|orders-value|2|NULL\n3|payments-value|1|NULL\n"
              "4|item|1|NULL\n");
  expect_rows(db, "SELECT \"references\", guid, md5 IS NULL, rule_set IS NULL FROM kafka_schemas('"
                  REG "') WHERE id IN (1, 3, 14)",
              "[]|NULL|0|1\n"
              "[{\"name\":\"com.example.Item\",\"subject\":\"item\",\"version\":1}]|"
              "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f|1|1\n[]|NULL|1|0\n");
  expect_text(db, "SELECT schema FROM kafka_schemas('" REG "') WHERE id = 12", "\"bytes\"");
  char *m = st_expect_rc(db, "SELECT * FROM kafka_schemas('" REG "/orders-0/..')", SQLITE_OK);
  free(m);
  st_expect_error(db, "SELECT * FROM kafka_schemas('" KL_FIXTURES "/a-tiny')",
                      SQLITE_CANTOPEN, "no _schemas partition");
  st_close(db);
}

static void test_avro_values(void **state) {
  sqlite3 *db = st_open();
  /* Two schema versions in one topic; a partition alone finds the
  ** registry in its log directory. */
  expect_rows(db, "SELECT offset, json_extract(value, '$.note'), json_extract(value, '$.coupon'),"
                  " json_array_length(value, '$.items'), json_extract(value, '$.status')"
                  " FROM kafka_log('" REG "/orders-0') WHERE value_type = 'confluent'"
                  " AND offset IN (0, 1, 6, 7)",
              "0|note 0|NULL|0|NEW\n1|NULL|NULL|1|PAID\n6|note 6|C6|0|NEW\n7|NULL|NULL|1|PAID\n");
  expect_text(db, "SELECT value FROM kafka_log('" REG "/orders-0') WHERE value_type='confluent'"
                  " AND offset = 5",
              "{\"id\":1005,\"customer\":\"cust-2\",\"amount\":63,\"status\":\"SHIPPED\","
              "\"note\":null,\"items\":[{\"sku\":\"sku-0\",\"qty\":1},{\"sku\":\"sku-1\",\"qty\":2}],"
              "\"tags\":{\"src\":\"web\"},\"gift\":false}");
  assert_int_equal(st_int(db, "SELECT sum(json_extract(value, '$.amount') * 2) FROM kafka_log('"
                              REG "/orders-0') WHERE value_type = 'confluent'", NULL), 1155);
  /* Logical types, references, exact longs, NaN and infinities; magic 0,
  ** magic 1 with a GUID, and the GUID in a header before an unprefixed
  ** payload; keys too. */
  expect_text(db, "SELECT key || ' ' || value FROM kafka_log('" REG "/payments-0')"
                  " WHERE key_type = 'confluent' AND value_type = 'confluent' AND offset = 0",
              "\"p-1\" {\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":-1234567890.12,"
              "\"fee\":0.005,\"at\":1732924800123,\"day\":20057,\"raw\":\"00ff10\",\"rate\":0.1,"
              "\"ratio\":0.3333333333333333,\"big\":9223372036854775807,"
              "\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},\"extra\":null}");
  expect_rows(db, "SELECT offset, json_extract(key, '$'), json_extract(value, '$.amount'),"
                  " json_extract(value, '$.rate'), json_extract(value, '$.ratio'),"
                  " json_extract(value, '$.big'), json_extract(value, '$.extra')"
                  " FROM kafka_log('" REG "/payments-0')"
                  " WHERE key_type = 'confluent' AND value_type = 'confluent'",
              "0|p-1|-1234567890.12|0.1|0.333333333333333|9223372036854775807|NULL\n"
              "1|p-2|0.07|Infinity|NaN|-9223372036854775808|42\n"
              "2|p-3|100.0|0.1|-Infinity|9223372036854775807|text\n"
              "3|NULL|-1234567890.12|0.1|0.333333333333333|9223372036854775807|"
              "{\"sku\":\"x\",\"qty\":1}\n");
  expect_text(db, "SELECT json_extract(value, '$.amount') || ' ' || typeof(json_extract(value, "
                  "'$.big')) FROM kafka_log('" REG "/payments-0') WHERE value_type='confluent'"
                  " AND offset = 2", "100.0 integer");
  /* A "bytes" schema: the bytes raw, no length.  JSON Schema: as written. */
  expect_text(db, "SELECT value FROM kafka_log('" REG "/blobs-0') WHERE value_type='confluent'",
              "\"deadbeef\"");
  expect_rows(db, "SELECT value FROM kafka_log('" REG "/events-0') WHERE value_type='confluent'",
              "{\"kind\":\"view\",\"n\":12345678901234567890}\n{\"kind\":\"click\",\"n\":1}\n");
  st_close(db);
}

static void test_wrapped_unions_and_options(void **state) {
  sqlite3 *db = st_open();
  st_exec(db, "CREATE VIRTUAL TABLE p USING kafka_log('" REG "/payments-0', value_type='confluent',"
              " unions='wrapped', schemas='" KL_FIXTURES "/registry-schemas.json')");
  expect_rows(db, "SELECT json_extract(value, '$.extra') FROM p",
              "NULL\n{\"long\":42}\n{\"string\":\"text\"}\n"
              "{\"com.example.Item\":{\"sku\":\"x\",\"qty\":1}}\n");
  expect_text(db, "SELECT value_type FROM p LIMIT 1", "confluent");
  /* Plain Avro: the schema given, no header (here the framed key as a
  ** fixed of 9 bytes). */
  st_exec(db, "CREATE VIRTUAL TABLE k USING kafka_log('" REG "/payments-0', key_type='avro',"
              " key_schema='{\"type\":\"fixed\",\"name\":\"F\",\"size\":9}')");
  expect_text(db, "SELECT key FROM k WHERE offset = 0", "\"000000000b06702d31\"");
  st_expect_error(db, "CREATE VIRTUAL TABLE bad USING kafka_log('" REG "/orders-0',"
                      " value_type='avro')",
                      SQLITE_ERROR, "value_schema");
  st_expect_error(db, "CREATE VIRTUAL TABLE bad USING kafka_log('" REG "/orders-0',"
                      " decode_errors='skip')",
                      SQLITE_ERROR, "'error' or 'null'");
  st_expect_error(db, "CREATE VIRTUAL TABLE bad USING kafka_log('" REG "/orders-0',"
                      " value_type='avro', value_schema='{\"type\":\"nope\"}')",
                      SQLITE_ERROR, "unknown type \"nope\"");
  st_close(db);
}

/* clicks-0: version 1 (id 6) and version 2 (id 15, importing
** shop/common.proto through its references), message indexes [0], [0,0]
** (Click.Ref) and [1] (Session); absent fields read as their defaults. */
static void test_protobuf_values(void **state) {
  sqlite3 *db = st_open();
  expect_rows(db, "SELECT offset, key, value FROM kafka_log('" REG "/clicks-0')"
                  " WHERE value_type = 'confluent'",
              "0|NULL|{\"page\":\"/home\",\"at\":1732924800000}\n"
              "1|s-1|{\"page\":\"/cart\",\"at\":-5,\"device\":{\"os\":\"ios\",\"mobile\":true},"
              "\"tags\":[\"a\",\"b\"],\"counts\":{\"views\":9007199254740993,\"carts\":1},"
              "\"kind\":\"BUY\",\"ref\":{\"url\":\"https://example.com/x\",\"depth\":3}}\n"
              "2|s-1|{\"url\":\"/back\",\"depth\":0}\n"
              "3|s-1|{\"id\":\"s-1\",\"clicks\":[{\"page\":\"/a\",\"at\":1,\"device\":null,"
              "\"tags\":[],\"counts\":{},\"kind\":\"KIND_UNKNOWN\",\"ref\":null},"
              "{\"page\":\"/b\",\"at\":0,\"device\":null,\"tags\":[],\"counts\":{},"
              "\"kind\":\"VIEW\",\"ref\":null}],\"score\":-3}\n");
  /* Fields as SQL reads them: an int64 beyond 2^53 stays exact. */
  expect_text(db, "SELECT group_concat(kafka_schema_id(value)) FROM kafka_log('" REG "/clicks-0')",
              "6,15,15,15");
  expect_rows(db, "SELECT offset, json_extract(value, '$.page'),"
                  " json_extract(value, '$.counts.views'), json_extract(value, '$.device.os'),"
                  " json_extract(value, '$.kind'), json_extract(value, '$.ref.depth'),"
                  " json_extract(value, '$.clicks[1].kind'), json_extract(value, '$.score')"
                  " FROM kafka_log('" REG "/clicks-0') WHERE value_type = 'confluent'",
              "0|/home|NULL|NULL|NULL|NULL|NULL|NULL\n"
              "1|/cart|9007199254740993|ios|BUY|3|NULL|NULL\n"
              "2|NULL|NULL|NULL|NULL|NULL|NULL|NULL\n"
              "3|NULL|NULL|NULL|NULL|NULL|VIEW|-3\n");
  /* A message index the schema does not have is an error naming it. */
  char *m = st_expect_rc(db, "SELECT kafka_decode(x'000000000f0204', 'confluent', '" REG "')",
                         SQLITE_CORRUPT_VTAB & 0xff);
  assert_non_null(strstr(m, "schema id 15 (clicks-value version 2): message index [2]: the schema"
                            " has 2 messages, no message 2"));
  free(m);
  m = st_expect_rc(db, "SELECT kafka_decode(x'00000000060400000a01', 'confluent', '" REG "')",
                   SQLITE_CORRUPT_VTAB & 0xff);
  assert_non_null(strstr(m, "message index [0,0]: shop.Click has 0 messages, no message 0"));
  free(m);
  st_close(db);
}

/* The hidden column schemas: the table-valued form's (and a query's)
** source of schemas, by name or as the seventh argument. */
static void test_schemas_hidden_column(void **state) {
  sqlite3 *db = st_open();
#define REST KL_FIXTURES "/registry-schemas.json"
  expect_rows(db, "SELECT offset, json_extract(value, '$.note'), schemas = '" REST "'"
                  " FROM kafka_log('" REG "/orders-0') WHERE value_type = 'confluent'"
                  " AND schemas = '" REST "' AND offset < 2",
              "0|note 0|1\n1|NULL|1\n");
  expect_text(db, "SELECT json_extract(value, '$.page') FROM kafka_log('" REG "/clicks-0', 'error',"
                  " NULL, 'read_uncommitted', 'blob', 'confluent', '" REG "/_schemas-0') LIMIT 1",
              "/home");
  char *plan = rows(db, "EXPLAIN QUERY PLAN SELECT value FROM kafka_log('" REG "/orders-0')"
                        " WHERE value_type = 'confluent' AND schemas = '" REST "'");
  if (!strstr(plan, "INDEX 0:dir=? value_type=? schemas=? full scan")) fail_msg("plan: %s", plan);
  free(plan);
  /* The source is the one given: the GET /schemas file has no Protobuf
  ** schema, the path's _schemas has. */
  char *m = st_expect_rc(db, "SELECT value FROM kafka_log('" REG "/clicks-0')"
                             " WHERE value_type = 'confluent' AND schemas = '" REST "'",
                         SQLITE_CORRUPT_VTAB & 0xff);
  assert_non_null(strstr(m, "topic clicks partition 0 offset 0: value: schema id 6 is not in the"
                            " registry"));
  free(m);
  st_expect_error(db, "SELECT value FROM kafka_log('" REG "/clicks-0')"
                      " WHERE value_type = 'confluent' AND schemas = NULL",
                      SQLITE_ERROR, "schemas takes the text of a path");
  m = st_expect_rc(db, "SELECT value FROM kafka_log('" REG "/clicks-0')"
                       " WHERE value_type = 'confluent' AND schemas = '" KL_FIXTURES "/a-tiny'",
                   SQLITE_CANTOPEN);
  assert_non_null(strstr(m, "no _schemas partition there"));
  free(m);
  /* A named table: its option, unless a query gives another. */
  st_exec(db, "CREATE VIRTUAL TABLE c USING kafka_log('" REG "/clicks-0', value_type='confluent',"
              " schemas='" REST "')");
  expect_text(db, "SELECT schemas = '" REST "' FROM c LIMIT 1", "1");
  m = st_expect_rc(db, "SELECT count(value) FROM c", SQLITE_CORRUPT_VTAB & 0xff);
  free(m);
  expect_text(db, "SELECT count(json_extract(value, '$.page')) || ' ' || max(schemas) FROM c"
                  " WHERE schemas = '" REG "'", "2 " REG);
#undef REST
  st_close(db);
}

static void test_errors_name_the_record(void **state) {
  sqlite3 *db = st_open();
  static const char *const want[] = {
      "topic bad partition 0 offset 0: value: schema id 99 is not in the registry",
      "topic bad partition 0 offset 1: value: unknown magic byte 0x7b",
      "topic bad partition 0 offset 2: value: schema id 1 (orders-value version 1): $.amount: "
      "8 bytes run past the end",
      NULL, /* offset 3: a Protobuf value, which decodes (below) */
      "topic bad partition 0 offset 4: value: schema id 5 (events-value version 1): payload is "
      "not JSON",
      "topic bad partition 0 offset 5: value: schema id 14 (secret-value version 1): fields are "
      "encrypted by the schema's data-contract rules (ruleSet)",
  };
  char *m;
  for (int i = 0; i < 6; i++) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM kafka_log('" REG "/bad-0')"
             " WHERE value_type = 'confluent' AND offset = %d", i);
    if (!want[i]) {
      expect_text(db, sql, "{\"page\":\"x\",\"at\":0}");
      continue;
    }
    m = st_expect_rc(db, sql, SQLITE_CORRUPT_VTAB & 0xff);
    if (!strstr(m, want[i])) fail_msg("got %s\nwant %s", m, want[i]);
    free(m);
  }
  /* decode_errors='null': the bad ones are NULL, and a query finds them. */
  st_exec(db, "CREATE VIRTUAL TABLE b USING kafka_log('" REG "/bad-0', value_type='confluent',"
              " decode_errors='null')");
  expect_rows(db, "SELECT offset, json_extract(value, '$.customer') FROM b",
              "0|NULL\n1|NULL\n2|NULL\n3|NULL\n4|NULL\n5|NULL\n6|ok\n");
  expect_text(db, "SELECT group_concat(offset) FROM b WHERE value IS NULL", "0,1,2,4,5");
  /* No registry where the table looks: an error even with 'null'. */
  st_exec(db, "CREATE VIRTUAL TABLE t USING kafka_log('" KL_FIXTURES "/a-tiny/orders-0',"
              " value_type='confluent', decode_errors='null')");
  m = st_expect_rc(db, "SELECT value FROM t", SQLITE_CANTOPEN);
  assert_non_null(strstr(m, "topic orders partition 0 offset 0: value: "));
  assert_non_null(strstr(m, "no _schemas partition there"));
  free(m);
  /* kafka_decode: the same rules for bytes found elsewhere. */
  m = st_expect_rc(db, "SELECT kafka_decode(x'0000000063', 'confluent', '" REG "')",
                         SQLITE_CORRUPT_VTAB & 0xff);
  assert_non_null(strstr(m, "schema id 99 is not in the registry"));
  free(m);
  st_close(db);
}

static void test_kafka_decode(void **state) {
  sqlite3 *db = st_open();
  expect_text(db, "SELECT kafka_decode(value, 'confluent', '" REG "/_schemas-0') FROM kafka_log('"
                  REG "/orders-0') WHERE offset = 9",
              "{\"id\":1009,\"customer\":\"cust-0\",\"amount\":105,\"status\":\"NEW\",\"note\":null,"
              "\"items\":[],\"tags\":{\"src\":\"web\"},\"gift\":false,\"coupon\":null}");
  expect_text(db, "SELECT kafka_decode(x'0206702d31', 'avro', '[\"null\",\"string\"]')",
              "\"p-1\"");
  expect_text(db, "SELECT kafka_decode(x'02', 'avro', '{\"type\":\"enum\",\"name\":\"E\","
                  "\"symbols\":[\"A\",\"B\"]}')", "\"B\"");
  expect_text(db, "SELECT kafka_decode(CAST('[1, 2.5e400]' AS BLOB), 'json', NULL)",
              "[1, 2.5e400]");
  assert_int_equal(st_int(db, "SELECT kafka_decode(NULL, 'avro', '\"int\"') IS NULL", NULL), 1);
  char *m = st_expect_rc(db, "SELECT kafka_decode(x'00', 'xml', '')", SQLITE_ERROR);
  free(m);
  m = st_expect_rc(db, "SELECT kafka_decode(x'0102', 'avro', '\"int\"')",
                   SQLITE_CORRUPT_VTAB & 0xff);
  assert_non_null(strstr(m, "1 bytes after the value"));
  free(m);
  st_close(db);
}

static void test_counters(void **state) {
  sqlite3 *db = st_open();
  st_exec(db, "CREATE VIRTUAL TABLE o USING kafka_log('" REG "/orders-0', value_type='confluent')");
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  /* Queries that do not read value decode nothing and parse no schema. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM o", NULL), 10);
  assert_int_equal(st_int(db, "SELECT max(offset) + min(timestamp) - min(timestamp) FROM o",
                          NULL), 9);
  assert_int_equal(st_int(db, "SELECT count(key) FROM o", NULL), 10);
  assert_int_equal(stat_of(db, "values_decoded"), 0);
  assert_int_equal(stat_of(db, "schemas_parsed"), 0);
  /* Each value once; the two schemas parsed once per connection. */
  assert_int_equal(st_int(db, "SELECT count(json_extract(value, '$.id')) FROM o", NULL), 10);
  assert_int_equal(stat_of(db, "values_decoded"), 10);
  assert_int_equal(stat_of(db, "schemas_parsed"), 2);
  assert_int_equal(st_int(db, "SELECT count(json_extract(value, '$.id')) FROM o", NULL), 10);
  assert_int_equal(stat_of(db, "values_decoded"), 20);
  assert_int_equal(stat_of(db, "schemas_parsed"), 2);
  st_close(db);
}

/* A schema registered after the connection first read `_schemas` is found:
** the registry is replayed again when its topic changed. */
static void test_registry_change(void **state) {
  char *dir = t_mkdtemp("kl-registry");
  char sub[512], dst[600];
  static const char *const parts[] = {"_schemas-0", "orders-0"};
  for (int i = 0; i < 2; i++) {
    snprintf(sub, sizeof sub, "%s/%s", dir, parts[i]);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(dst, sizeof dst, REG "/%s", parts[i]);
    assert_int_equal(t_copy_dir(dst, sub), 0);
  }
  sqlite3 *db = st_open();
  char sql[2048];
  snprintf(sql, sizeof sql, "SELECT count(json_extract(value, '$.id')) FROM kafka_log('%s/orders-0')"
           " WHERE value_type = 'confluent'", dir);
  assert_int_equal(st_int(db, sql, NULL), 10);
  int64_t parsed = stat_of(db, "schemas_parsed");
  /* Register id 40 (a long) and write a value with it. */
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE s USING kafka_log('%s/_schemas-0', mode='write');"
           "INSERT INTO s(key, value) VALUES ('{\"keytype\":\"SCHEMA\",\"subject\":\"orders-value\","
           "\"version\":3,\"magic\":1}', '{\"subject\":\"orders-value\",\"version\":3,\"id\":40,"
           "\"schema\":\"\\\"long\\\"\",\"deleted\":false}');"
           "CREATE VIRTUAL TABLE o USING kafka_log('%s/orders-0', mode='write');"
           "INSERT INTO o(value) VALUES (x'0000000028f501');", dir, dir);
  st_exec(db, sql);
  snprintf(sql, sizeof sql, "SELECT value FROM kafka_log('%s/orders-0') WHERE value_type ="
           " 'confluent' AND offset = 10", dir);
  expect_text(db, sql, "-123");
  assert_int_equal(stat_of(db, "schemas_parsed"), parsed + 1);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* A log directory in a fresh temporary directory holding a copy of the
** fixture's _schemas-0 (malloc'd path). */
static char *registry_copy(void) {
  char *dir = t_mkdtemp("kl-encode");
  char sub[512];
  snprintf(sub, sizeof sub, "%s/_schemas-0", dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_int_equal(t_copy_dir(REG "/_schemas-0", sub), 0);
  return dir;
}

#define ORDER_A "{\"id\":1,\"customer\":\"c \\\"1\\\"\",\"amount\":12.5,\"status\":\"PAID\"," \
  "\"note\":\"n\",\"items\":[{\"sku\":\"s\",\"qty\":2},{\"sku\":\"t\",\"qty\":-3}]," \
  "\"tags\":{\"a\":\"b\",\"c\":\"\"},\"gift\":true,\"coupon\":\"X\"}"
#define PAY_A "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":-1234567890.12," \
  "\"fee\":0.005,\"at\":1732924800123,\"day\":20057,\"raw\":\"00ff10\",\"rate\":0.1," \
  "\"ratio\":0.3333333333333333,\"big\":9223372036854775807,\"item\":{\"sku\":\"a\\\"b\\\\c\"," \
  "\"qty\":-7},\"extra\":null}"

/* INSERT into 'confluent' columns encodes JSON text with the latest schema
** of <topic>-value (-key), framed as Confluent's serializers do: what is
** read back is what was written. */
static void test_insert_encodes(void **state) {
  char *dir = registry_copy();
  sqlite3 *db = st_open();
  char sql[4096];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE o USING kafka_log('%s/orders-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE p USING kafka_log('%s/payments-0', mode='create',"
           " key_type='confluent', value_type='confluent');"
           "CREATE VIRTUAL TABLE x USING kafka_log('%s/other-0', mode='create',"
           " value_type='confluent', value_subject='orders-value');"
           "CREATE VIRTUAL TABLE e USING kafka_log('%s/events-0', mode='create',"
           " value_type='confluent');", dir, dir, dir, dir);
  st_exec(db, sql);
  /* orders-value's latest is version 2 (id 2); a member left out whose
  ** field is nullable is null; members in any order */
  st_exec(db, "INSERT INTO o(value) VALUES ('" ORDER_A "'), ('{\"gift\":false,\"id\":-2,"
              "\"customer\":\"\",\"amount\":1e-07,\"status\":\"NEW\",\"items\":[],\"tags\":{}}');"
              "INSERT INTO x(value) VALUES ('" ORDER_A "');");
  expect_rows(db, "SELECT value FROM o",
              ORDER_A "\n{\"id\":-2,\"customer\":\"\",\"amount\":1e-07,\"status\":\"NEW\","
              "\"note\":null,\"items\":[],\"tags\":{},\"gift\":false,\"coupon\":null}\n");
  expect_rows(db, "SELECT value FROM x", ORDER_A "\n");
  snprintf(sql, sizeof sql, "SELECT kafka_schema_id(value), hex(substr(value, 1, 6))"
           " FROM kafka_log('%s/orders-0')", dir);
  expect_rows(db, sql, "2|000000000202\n2|000000000203\n");
  /* decimals (bytes and fixed), uuid, timestamps, bytes, float, a type from
  ** references, a union's branches by the value; NaN and infinities */
  st_exec(db, "INSERT INTO p(key, value) VALUES ('\"p-1\"', '" PAY_A "');"
              "INSERT INTO p(key, value) VALUES (NULL, json_set('" PAY_A "', '$.extra', 42,"
              " '$.ratio', 'NaN', '$.rate', '-Infinity', '$.amount', '0.07', '$.fee', -0.001));"
              "INSERT INTO p(key, value) VALUES ('\"p-3\"', json_set('" PAY_A "', '$.extra',"
              " 'text', '$.amount', 100, '$.raw', ''));"
              "INSERT INTO p(key, value) VALUES ('\"p-4\"', json_set('" PAY_A "', '$.extra',"
              " json('{\"sku\":\"x\",\"qty\":1}'), '$.amount', '9999999999.99'));");
  expect_rows(db, "SELECT key, value FROM p",
              "\"p-1\"|" PAY_A "\n"
              "NULL|{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":0.07,"
              "\"fee\":-0.001,\"at\":1732924800123,\"day\":20057,\"raw\":\"00ff10\","
              "\"rate\":\"-Infinity\",\"ratio\":\"NaN\",\"big\":9223372036854775807,"
              "\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},\"extra\":42}\n"
              "\"p-3\"|{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":100.00,"
              "\"fee\":0.005,\"at\":1732924800123,\"day\":20057,\"raw\":\"\",\"rate\":0.1,"
              "\"ratio\":0.3333333333333333,\"big\":9223372036854775807,"
              "\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},\"extra\":\"text\"}\n"
              "\"p-4\"|{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\","
              "\"amount\":9999999999.99,\"fee\":0.005,\"at\":1732924800123,\"day\":20057,"
              "\"raw\":\"00ff10\",\"rate\":0.1,\"ratio\":0.3333333333333333,"
              "\"big\":9223372036854775807,\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},"
              "\"extra\":{\"sku\":\"x\",\"qty\":1}}\n");
  snprintf(sql, sizeof sql, "SELECT kafka_schema_id(key), kafka_schema_id(value)"
           " FROM kafka_log('%s/payments-0') LIMIT 1", dir);
  expect_rows(db, sql, "11|3\n");
  /* JSON Schema: the text itself, checked; a BLOB is stored as it is */
  st_exec(db, "INSERT INTO e(value) VALUES ('{\"kind\":\"view\",\"n\":12345678901234567890}');"
              "INSERT INTO o(value) VALUES (x'0000000001020304');");
  expect_rows(db, "SELECT value FROM e", "{\"kind\":\"view\",\"n\":12345678901234567890}\n");
  /* plain Avro: the column's schema, no framing; key_subject names a key's */
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE a USING kafka_log('%s/plain-0', mode='create', value_type='avro',"
           " value_schema='[\"null\",\"string\"]', key_type='confluent',"
           " key_subject='payments-key');"
           "INSERT INTO a(key, value) VALUES ('\"k\"', '\"x\"'), (NULL, 'null');", dir);
  st_exec(db, sql);
  expect_rows(db, "SELECT key, value FROM a", "\"k\"|\"x\"\nNULL|null\n");
  snprintf(sql, sizeof sql, "SELECT hex(key), hex(value) FROM kafka_log('%s/plain-0')", dir);
  expect_rows(db, sql, "000000000B026B|020278\n|00\n");
  snprintf(sql, sizeof sql, "SELECT hex(value) FROM kafka_log('%s/orders-0') WHERE offset = 2",
           dir);
  expect_rows(db, sql, "0000000001020304\n");
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* The bytes INSERT writes decode with python3-avro's DatumReader, an
** encoder's independent reader (tests/decode/avro_read.py). */
static void test_insert_reads_in_python_avro(void **state) {
  char *dir = registry_copy();
  sqlite3 *db = st_open();
  char sql[4096], path[600];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE o USING kafka_log('%s/orders-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE p USING kafka_log('%s/payments-0', mode='create',"
           " value_type='confluent');"
           "INSERT INTO o(value) VALUES ('" ORDER_A "');"
           "INSERT INTO p(value) VALUES ('" PAY_A "'), (json_set('" PAY_A "', '$.extra',"
           " json('{\"sku\":\"x\",\"qty\":1}'), '$.amount', -0.5, '$.ratio', 'Infinity'));",
           dir, dir);
  st_exec(db, sql);
  /* The input: orders-value 2's schema and the order; item 1's and
  ** payments-value 1's (which uses it) and the payments. */
  snprintf(sql, sizeof sql,
           "SELECT 'schema ' || schema FROM kafka_schemas('%s') WHERE id = 2 UNION ALL"
           " SELECT 'value ' || hex(value) FROM kafka_log('%s/orders-0') UNION ALL"
           " SELECT 'schema ' || schema FROM kafka_schemas('%s') WHERE id = 4 UNION ALL"
           " SELECT 'schema ' || schema FROM kafka_schemas('%s') WHERE id = 3 UNION ALL"
           " SELECT 'value ' || hex(value) FROM kafka_log('%s/payments-0')", dir, dir, dir, dir,
           dir);
  char *in = rows(db, sql);
  snprintf(path, sizeof path, "%s/in.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(in, f);
  fclose(f);
  free(in);
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/../decode/avro_read.py' < '%s'", KL_FIXTURES,
           path);
  FILE *py = popen(cmd, "r");
  assert_non_null(py);
  st_buf got = {0};
  st_buf_printf(&got, "%s", "");
  char line[4096];
  while (fgets(line, sizeof line, py)) st_buf_printf(&got, "%s", line);
  assert_int_equal(pclose(py), 0);
  const char *want =
      "2 " ORDER_A "\n"
      "3 {\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":\"-1234567890.12\","
      "\"fee\":\"0.005\",\"at\":\"2024-11-30T00:00:00.123000+00:00\",\"day\":\"2024-11-30\","
      "\"raw\":\"00ff10\",\"rate\":0.10000000149011612,\"ratio\":0.3333333333333333,"
      "\"big\":9223372036854775807,\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},\"extra\":null}\n"
      "3 {\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":\"-0.50\","
      "\"fee\":\"0.005\",\"at\":\"2024-11-30T00:00:00.123000+00:00\",\"day\":\"2024-11-30\","
      "\"raw\":\"00ff10\",\"rate\":0.10000000149011612,\"ratio\":Infinity,"
      "\"big\":9223372036854775807,\"item\":{\"sku\":\"a\\\"b\\\\c\",\"qty\":-7},"
      "\"extra\":{\"sku\":\"x\",\"qty\":1}}\n";
  if (strcmp(got.p, want) != 0) fail_msg("python3-avro read:\n%s\nwant:\n%s", got.p, want);
  free(got.p);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

#define CLICK_A "{\"page\":\"/cart\",\"at\":-5,\"device\":{\"os\":\"ios\",\"mobile\":true}," \
  "\"tags\":[\"a\",\"b\"],\"counts\":{\"views\":9007199254740993,\"carts\":1},\"kind\":\"BUY\"," \
  "\"ref\":{\"url\":\"https://example.com/x\",\"depth\":3}}"

/* INSERT into a Protobuf subject (clicks-value 2 imports shop/common.proto):
** the JSON as the decoder writes it, or sparser; the file's first message
** by default, value_message naming another; read back with defaults. */
static void test_insert_protobuf(void **state) {
  char *dir = registry_copy();
  sqlite3 *db = st_open();
  char sql[4096];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE c USING kafka_log('%s/clicks-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE s USING kafka_log('%s/sessions-0', mode='create',"
           " value_type='confluent', value_subject='clicks-value', value_message='shop.Session');"
           "CREATE VIRTUAL TABLE r USING kafka_log('%s/refs-0', mode='create',"
           " value_type='confluent', value_subject='clicks-value', value_message='Click.Ref',"
           " key_type='confluent', key_subject='clicks-value', key_message='shop.Click');",
           dir, dir, dir);
  st_exec(db, sql);
  st_exec(db, "INSERT INTO c(value) VALUES ('" CLICK_A "'),"
              " ('{\"kind\":2,\"page\":\"/x\",\"at\":\"-9223372036854775808\",\"device\":null}'),"
              " ('{}');"
              "INSERT INTO s(value) VALUES ('{\"id\":\"s-9\",\"clicks\":[{\"page\":\"/a\",\"at\":1},"
              "{\"kind\":\"VIEW\",\"counts\":{\"n\":\"7\"}}],\"score\":-3}');"
              "INSERT INTO r(key, value) VALUES ('{\"page\":\"k\"}', '{\"url\":\"/back\",\"depth\":7}');");
  expect_rows(db, "SELECT value FROM c",
              CLICK_A "\n"
              "{\"page\":\"/x\",\"at\":-9223372036854775808,\"device\":null,\"tags\":[],"
              "\"counts\":{},\"kind\":\"BUY\",\"ref\":null}\n"
              "{\"page\":\"\",\"at\":0,\"device\":null,\"tags\":[],\"counts\":{},"
              "\"kind\":\"KIND_UNKNOWN\",\"ref\":null}\n");
  expect_rows(db, "SELECT value FROM s",
              "{\"id\":\"s-9\",\"clicks\":[{\"page\":\"/a\",\"at\":1,\"device\":null,\"tags\":[],"
              "\"counts\":{},\"kind\":\"KIND_UNKNOWN\",\"ref\":null},{\"page\":\"\",\"at\":0,"
              "\"device\":null,\"tags\":[],\"counts\":{\"n\":7},\"kind\":\"VIEW\",\"ref\":null}],"
              "\"score\":-3}\n");
  expect_rows(db, "SELECT key, value FROM r",
              "{\"page\":\"k\",\"at\":0,\"device\":null,\"tags\":[],\"counts\":{},"
              "\"kind\":\"KIND_UNKNOWN\",\"ref\":null}|{\"url\":\"/back\",\"depth\":7}\n");
  /* the framing: magic byte 0, id 15, message indexes [0] (one byte), [1],
  ** [0,0]; members in the order given (kind, field 6, first); the empty
  ** message is the index alone */
  snprintf(sql, sizeof sql,
           "SELECT hex(substr(value, 1, 8)) FROM kafka_log('%s/clicks-0') UNION ALL"
           " SELECT hex(substr(value, 1, 8)) FROM kafka_log('%s/sessions-0') UNION ALL"
           " SELECT hex(substr(key, 1, 6)) || ' ' || hex(substr(value, 1, 8))"
           " FROM kafka_log('%s/refs-0')", dir, dir, dir);
  expect_rows(db, sql, "000000000F000A05\n000000000F003002\n000000000F00\n000000000F02020A\n"
                       "000000000F00 000000000F040000\n");
  /* byte for byte what protoc's classes wrote for the same click */
  snprintf(sql, sizeof sql, "SELECT value = (SELECT value FROM kafka_log('%s/clicks-0') LIMIT 1)"
           " FROM kafka_log('" REG "/clicks-0') WHERE offset = 1", dir);
  expect_text(db, sql, "1");
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* The bytes INSERT writes for Protobuf subjects parse with protoc's
** descriptors in python3-protobuf (tests/decode/protobuf_read.py), which
** finds nothing it does not know in them; JSON Schema values are the text
** itself after magic byte 0 and the id. */
static void test_insert_reads_in_python_protobuf(void **state) {
  char *dir = registry_copy();
  sqlite3 *db = st_open();
  char sql[4096], path[600];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE c USING kafka_log('%s/clicks-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE s USING kafka_log('%s/sessions-0', mode='create',"
           " value_type='confluent', value_subject='clicks-value', value_message='shop.Session');"
           "CREATE VIRTUAL TABLE e USING kafka_log('%s/events-0', mode='create',"
           " value_type='confluent');"
           "INSERT INTO c(value) VALUES ('" CLICK_A "'), ('{\"at\":\"-9223372036854775808\","
           "\"tags\":[\"\\u00e9\"],\"kind\":7}');"
           "INSERT INTO s(value) VALUES ('{\"id\":\"s-9\",\"clicks\":[{\"page\":\"/a\"},"
           "{\"ref\":{\"depth\":-1}}],\"score\":-3}');"
           "INSERT INTO e(value) VALUES ('{\"kind\": \"view\", \"n\": 12345678901234567890}');",
           dir, dir, dir);
  st_exec(db, sql);
  snprintf(sql, sizeof sql,
           "SELECT 'proto shop/common.proto ' || json_quote(schema) FROM kafka_schemas('%s')"
           " WHERE id = 16 UNION ALL"
           " SELECT 'proto clicks.proto ' || json_quote(schema) FROM kafka_schemas('%s')"
           " WHERE id = 15 UNION ALL"
           " SELECT 'value shop.Click ' || hex(value) FROM kafka_log('%s/clicks-0') UNION ALL"
           " SELECT 'value shop.Session ' || hex(value) FROM kafka_log('%s/sessions-0')",
           dir, dir, dir, dir);
  char *in = rows(db, sql);
  snprintf(path, sizeof path, "%s/in.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(in, f);
  fclose(f);
  free(in);
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/../decode/protobuf_read.py' < '%s'",
           KL_FIXTURES, path);
  FILE *py = popen(cmd, "r");
  assert_non_null(py);
  st_buf got = {0};
  st_buf_printf(&got, "%s", "");
  char line[4096];
  while (fgets(line, sizeof line, py)) st_buf_printf(&got, "%s", line);
  assert_int_equal(pclose(py), 0);
  const char *want =
      "15 0 {\"page\":\"/cart\",\"at\":-5,\"device\":{\"os\":\"ios\",\"mobile\":true},"
      "\"tags\":[\"a\",\"b\"],\"counts\":{\"carts\":1,\"views\":9007199254740993},"
      "\"kind\":\"BUY\",\"ref\":{\"url\":\"https://example.com/x\",\"depth\":3}}\n"
      "15 0 {\"page\":\"\",\"at\":-9223372036854775808,\"device\":null,\"tags\":[\"\xc3\xa9\"],"
      "\"counts\":{},\"kind\":7,\"ref\":null}\n"
      "15 1 {\"id\":\"s-9\",\"clicks\":[{\"page\":\"/a\",\"at\":0,\"device\":null,\"tags\":[],"
      "\"counts\":{},\"kind\":\"KIND_UNKNOWN\",\"ref\":null},{\"page\":\"\",\"at\":0,"
      "\"device\":null,\"tags\":[],\"counts\":{},\"kind\":\"KIND_UNKNOWN\","
      "\"ref\":{\"url\":\"\",\"depth\":-1}}],\"score\":-3}\n";
  if (strcmp(got.p, want) != 0) fail_msg("python3-protobuf read:\n%s\nwant:\n%s", got.p, want);
  free(got.p);
  snprintf(sql, sizeof sql, "SELECT hex(value) = '0000000005' || hex('{\"kind\": \"view\", \"n\":"
           " 12345678901234567890}') FROM kafka_log('%s/events-0')", dir);
  expect_text(db, sql, "1");
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* JSON that does not match the schema: an error naming the table, the
** column, the schema and the field, and nothing written. */
static void test_insert_errors_name_the_field(void **state) {
  char *dir = registry_copy();
  sqlite3 *db = st_open();
  char sql[4096];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE o USING kafka_log('%s/orders-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE p USING kafka_log('%s/payments-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE n USING kafka_log('%s/nosuch-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE c USING kafka_log('%s/clicks-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE e USING kafka_log('%s/events-0', mode='create',"
           " value_type='confluent');"
           "CREATE VIRTUAL TABLE m USING kafka_log('%s/m-0', mode='create', value_type='confluent',"
           " value_subject='clicks-value', value_message='shop.Nope');"
           "CREATE VIRTUAL TABLE a USING kafka_log('%s/a-0', mode='create', value_type='confluent',"
           " value_subject='orders-value', value_message='shop.Click');", dir, dir, dir, dir, dir,
           dir, dir);
  st_exec(db, sql);
  static const struct { const char *table, *json, *want; } cases[] = {
      {"o", "{\"id\":\"x\"}", "value: schema id 2 (orders-value version 2): $.id: \"x\" is not a long"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"amount\":1,\"status\":\"NEW\",\"items\":[{\"sku\":"
            "\"s\",\"qty\":1},{\"sku\":\"s\",\"qty\":\"two\"}],\"tags\":{},\"gift\":true}",
       "$.items[1].qty: \"two\" is not an int"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"amount\":1,\"status\":\"LOST\"}",
       "$.status: \"LOST\" is not a symbol of enum com.example.Status"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"status\":\"NEW\"}",
       "$.amount: missing, and the field of record com.example.Order is not nullable"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"amount\":1,\"status\":\"NEW\",\"items\":[],"
            "\"tags\":{\"k\":3},\"gift\":true}", "$.tags.k: 3 is not a string"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"amount\":1,\"status\":\"NEW\",\"items\":[],"
            "\"tags\":{},\"gift\":true,\"bogus\":1}",
       "$: \"bogus\" is not a field of record com.example.Order"},
      {"o", "{\"id\":1,\"customer\":\"c\",\"amount\":1,\"status\":\"NEW\",\"note\":5,"
            "\"items\":[],\"tags\":{},\"gift\":true}", "$.note: 5 is not a string"},
      {"o", "{\"id\":", "value: schema id 2 (orders-value version 2): not JSON"},
      {"o", "[1]", "$: an array is not an object (a record)"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1.234}",
       "$.amount: 1.234 has more decimals than the scale (scale 2)"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":\"12345678901.5\"}",
       "$.amount: \"12345678901.5\" has more digits than the precision 12 (scale 2)"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1,\"fee\":100000}",
       "$.fee: 100000 has more digits than the precision 8 (scale 3)"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1,\"fee\":1,\"at\":1,"
            "\"day\":1,\"raw\":\"0g\"}", "$.raw: \"0g\" is not hex text"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1,\"fee\":1,\"at\":1,"
            "\"day\":1,\"raw\":\"\",\"rate\":1e39}", "$.rate: 1e+39 is not in a float's range"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1,\"fee\":1,\"at\":1,"
            "\"day\":2147483648}", "$.day: 2147483648 is not an int"},
      {"p", "{\"pid\":\"3b241101-e2bb-4255-8caf-4136c566a962\",\"amount\":1,\"fee\":1,\"at\":1,"
            "\"day\":1,\"raw\":\"\",\"rate\":1,\"ratio\":1,\"big\":1,\"item\":{\"sku\":\"s\","
            "\"qty\":1},\"extra\":true}", "$.extra: true is none of the union's branches"},
      {"n", "{}", "subject nosuch-value has no live schema in the registry of"},
      {"c", "{\"page\":5}", "value: schema id 15 (clicks-value version 2): $.page: 5 is not a string"},
      {"c", "{\"kind\":\"SELL\"}", "$.kind: \"SELL\" is not a value of enum shop.Kind"},
      {"c", "{\"counts\":{\"v\":\"x\"}}", "$.counts.v: \"x\" is not an int64"},
      {"c", "{\"device\":{\"os\":\"a\",\"color\":1}}",
       "$.device: \"color\" is not a field of shop.Device"},
      {"c", "{\"ref\":{\"depth\":4294967296}}", "$.ref.depth: 4294967296 is out of range for int32"},
      {"c", "{\"at\":1.5}", "$.at: 1.5 is not an integer: int64"},
      {"c", "{\"tags\":[\"a\",null]}", "$.tags[1]: null is not a string"},
      {"c", "{\"page\":\"/a\",\"page\":\"/b\"}", "$.page: given twice"},
      {"c", "{\"page\":", "value: schema id 15 (clicks-value version 2): not JSON"},
      {"e", "{\"kind\":", "value: schema id 5 (events-value version 1): payload is not JSON (at byte 8)"},
      {"m", "{}", "schema id 15 (clicks-value version 2): message shop.Nope is not in the schema"
                  " (its messages: shop.Click, shop.Session)"},
      {"a", "{}", "a message (shop.Click) is named, but the schema is AVRO, not PROTOBUF"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(sql, sizeof sql, "INSERT INTO %s(value) VALUES ('%s')", cases[i].table,
             cases[i].json);
    char *m = st_expect_rc(db, sql, SQLITE_MISMATCH);
    if (!strstr(m, cases[i].want) || !strstr(m, "kafka_log: INSERT into ")) {
      fail_msg("%s\n got: %s\n want: %s", sql, m, cases[i].want);
    }
    free(m);
  }
  expect_text(db, "SELECT count(*) FROM o", "0");
  expect_text(db, "SELECT count(*) FROM p", "0");
  expect_text(db, "SELECT count(*) FROM c", "0");
  expect_text(db, "SELECT count(*) FROM e", "0");
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_replay),
      cmocka_unit_test(test_avro_values),
      cmocka_unit_test(test_wrapped_unions_and_options),
      cmocka_unit_test(test_protobuf_values),
      cmocka_unit_test(test_schemas_hidden_column),
      cmocka_unit_test(test_errors_name_the_record),
      cmocka_unit_test(test_kafka_decode),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_registry_change),
      cmocka_unit_test(test_insert_encodes),
      cmocka_unit_test(test_insert_reads_in_python_avro),
      cmocka_unit_test(test_insert_protobuf),
      cmocka_unit_test(test_insert_reads_in_python_protobuf),
      cmocka_unit_test(test_insert_errors_name_the_field),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
