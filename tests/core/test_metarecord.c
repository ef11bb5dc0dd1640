/*
** test_metarecord.c - KRaft metadata records decoded from bytes laid out
** here by hand as Kafka's generated writers lay them out (not by the
** fixture script): each common record type in the versions the specs
** give it, tagged fields present, absent and unknown, null and non-null
** arrays and strings, the frame and version rules (unknown: shown raw;
** malformed: refused naming the field), and the image a replay of such
** records gives, PartitionChangeRecord's deltas and epoch bumps included.
** Inputs live in heap blocks of exactly their size (ASan sees any read
** past the end).
*/
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "metaimage.h"
#include "metarecord.h"

typedef struct heap {
  uint8_t *p;
  size_t n;
} heap;

static heap copy(const void *b, size_t n) {
  heap h = {malloc(n ? n : 1), n};
  assert_non_null(h.p);
  memcpy(h.p, b, n);
  return h;
}
#define COPY(...) copy((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

/* The 16 bytes of a topic id whose Kafka string form is "AAECAwQFBgcICQoLDA0ODw". */
#define ID 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
#define ID_STR "AAECAwQFBgcICQoLDA0ODw"

static kl_rc decode(heap h, kl_mrec *rec, kl_buf *json, kl_err *err) {
  kl_err_clear(err);
  return kl_meta_decode(NULL, h.p, h.n, rec, json, err);
}

static void expect_json(heap h, const char *type, int version, const char *want) {
  kl_mrec rec;
  kl_buf json = {0};
  kl_err err;
  kl_rc rc = decode(h, &rec, &json, &err);
  if (rc) fail_msg("%s: %s", type, err.msg);
  assert_non_null(rec.type);
  assert_string_equal(rec.type->name, type);
  assert_int_equal(rec.version, version);
  assert_int_equal(json.len, strlen(want));
  assert_memory_equal(json.p, want, json.len);
  kl_buf_free(NULL, &json);
  free(h.p);
}

static void expect_corrupt(heap h, const char *msg) {
  kl_mrec rec;
  kl_buf json = {0};
  kl_err err;
  assert_int_equal(decode(h, &rec, &json, &err), KL_CORRUPT);
  assert_string_equal(err.msg, msg);
  kl_buf_free(NULL, &json);
  free(h.p);
}

static void test_uuid_form(void **state) {
  uint8_t u[16] = {ID}, back[16];
  char s[23];
  kl_uuid_str(u, s);
  assert_string_equal(s, ID_STR);
  assert_int_equal(kl_uuid_parse(s, 22, back), 1);
  assert_memory_equal(u, back, 16);
  assert_int_equal(kl_uuid_parse(s, 21, back), 0);
  assert_int_equal(kl_uuid_parse("AAECAwQFBgcICQoLDA0ODx", 22, back), 0); /* stray low bits */
  assert_int_equal(kl_uuid_parse("AAECAwQFBgcICQoLDA0OD=", 22, back), 0);
}

static void test_topic_record(void **state) {
  /* frame 1, api key 2, version 0; compact "orders"; the id; no tags */
  expect_json(COPY(1, 2, 0, 7, 'o', 'r', 'd', 'e', 'r', 's', ID, 0), "TopicRecord", 0,
              "{\"Name\":\"orders\",\"TopicId\":\"" ID_STR "\"}");
}

static void test_partition_record_versions(void **state) {
  /* v0: id, topic, replicas [1,2], isr [1], removing [], adding [], leader 1,
  ** epoch 3, partition epoch 5, tag 0 (LeaderRecoveryState) = 1 */
  expect_json(COPY(1, 3, 0, 0, 0, 0, 4, ID, 3, 0, 0, 0, 1, 0, 0, 0, 2, 2, 0, 0, 0, 1, 1, 1,
                   0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 5, 1, 0, 1, 1),
              "PartitionRecord", 0,
              "{\"PartitionId\":4,\"TopicId\":\"" ID_STR "\",\"Replicas\":[1,2],\"Isr\":[1],"
              "\"RemovingReplicas\":[],\"AddingReplicas\":[],\"Leader\":1,\"LeaderEpoch\":3,"
              "\"PartitionEpoch\":5,\"LeaderRecoveryState\":1}");
  /* v2: Directories (one uuid) after PartitionEpoch; tags 1 (ELR [2]) and
  ** 2 (LastKnownElr null) */
  expect_json(COPY(1, 3, 2, 0, 0, 0, 0, ID, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                   2, ID, 2, 1, 5, 2, 0, 0, 0, 2, 2, 1, 0),
              "PartitionRecord", 2,
              "{\"PartitionId\":0,\"TopicId\":\"" ID_STR "\",\"Replicas\":[],\"Isr\":[],"
              "\"RemovingReplicas\":[],\"AddingReplicas\":[],\"Leader\":0,\"LeaderEpoch\":0,"
              "\"PartitionEpoch\":0,\"Directories\":[\"" ID_STR "\"],"
              "\"EligibleLeaderReplicas\":[2],\"LastKnownElr\":null}");
}

static void test_partition_change_tags(void **state) {
  /* v0 with only tag 1 (Leader = 7): ISR and the rest absent = unchanged */
  expect_json(COPY(1, 5, 0, 0, 0, 0, 1, ID, 1, 1, 4, 0, 0, 0, 7), "PartitionChangeRecord", 0,
              "{\"PartitionId\":1,\"TopicId\":\"" ID_STR "\",\"Leader\":7}");
  /* a tag of a later version (8: Directories, v1+) is unknown at v0 */
  expect_json(COPY(1, 5, 0, 0, 0, 0, 1, ID, 1, 8, 1, 1), "PartitionChangeRecord", 0,
              "{\"PartitionId\":1,\"TopicId\":\"" ID_STR "\",\"_tag8\":\"01\"}");
  /* v1: tag 8 is Directories (an empty array) */
  expect_json(COPY(1, 5, 1, 0, 0, 0, 1, ID, 1, 8, 1, 1), "PartitionChangeRecord", 1,
              "{\"PartitionId\":1,\"TopicId\":\"" ID_STR "\",\"Directories\":[]}");
  /* a known tag whose size is not its value's */
  expect_corrupt(COPY(1, 5, 0, 0, 0, 0, 1, ID, 1, 1, 5, 0, 0, 0, 7, 9),
                 "value: 1 bytes after Leader");
}

static void test_config_and_features(void **state) {
  /* ConfigRecord: type 2, "t", "a", Value null */
  expect_json(COPY(1, 4, 0, 2, 2, 't', 2, 'a', 0, 0), "ConfigRecord", 0,
              "{\"ResourceType\":2,\"ResourceName\":\"t\",\"Name\":\"a\",\"Value\":null}");
  /* a null Name, which the spec does not allow */
  expect_corrupt(COPY(1, 4, 0, 2, 2, 't', 0, 0, 0), "value: Name has length -1");
  expect_json(COPY(1, 12, 0, 2, 'm', 0, 20, 0), "FeatureLevelRecord", 0,
              "{\"Name\":\"m\",\"FeatureLevel\":20}");
  expect_json(COPY(1, 15, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
                   0, 0, 3, 0xe8, 0),
              "ProducerIdsRecord", 0, "{\"BrokerId\":1,\"BrokerEpoch\":-1,\"NextProducerId\":1000}");
  expect_json(COPY(1, 9, 0, ID, 0), "RemoveTopicRecord", 0, "{\"TopicId\":\"" ID_STR "\"}");
  /* a string that is not UTF-8, and one to escape */
  expect_json(COPY(1, 12, 0, 3, 0xff, 0xfe, 0, 0, 0), "FeatureLevelRecord", 0,
              "{\"Name\":{\"hex\":\"fffe\"},\"FeatureLevel\":0}");
  expect_json(COPY(1, 12, 0, 4, '"', '\\', 1, 0, 0, 0), "FeatureLevelRecord", 0,
              "{\"Name\":\"\\\"\\\\\\u0001\",\"FeatureLevel\":0}");
}

static void test_register_broker_versions(void **state) {
  /* v0: id 1, incarnation, epoch 5, endpoints [{"P","h",9092,0}], features
  ** [], rack null, fenced true */
  expect_json(COPY(1, 0, 0, 0, 0, 0, 1, ID, 0, 0, 0, 0, 0, 0, 0, 5, 2, 2, 'P', 2, 'h', 0x23, 0x84,
                   0, 0, 0, 1, 0, 1, 0),
              "RegisterBrokerRecord", 0,
              "{\"BrokerId\":1,\"IncarnationId\":\"" ID_STR "\",\"BrokerEpoch\":5,"
              "\"EndPoints\":[{\"Name\":\"P\",\"Host\":\"h\",\"Port\":9092,\"SecurityProtocol\":0}],"
              "\"Features\":[],\"Rack\":null,\"Fenced\":true}");
  /* v3: IsMigratingZkBroker after BrokerId, InControlledShutdown after
  ** Fenced, LogDirs as tag 0 */
  expect_json(COPY(1, 0, 3, 0, 0, 0, 2, 1, ID, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 'r', 0, 1, 1, 0, 17,
                   2, ID),
              "RegisterBrokerRecord", 3,
              "{\"BrokerId\":2,\"IsMigratingZkBroker\":true,\"IncarnationId\":\"" ID_STR "\","
              "\"BrokerEpoch\":1,\"EndPoints\":[],\"Features\":[],\"Rack\":\"r\",\"Fenced\":false,"
              "\"InControlledShutdown\":true,\"LogDirs\":[\"" ID_STR "\"]}");
}

static void test_unknown_shown_raw(void **state) {
  kl_mrec rec;
  kl_buf json = {0};
  kl_err err;
  heap cases[] = {COPY(1, 99, 0, 1, 2), COPY(1, 2, 9, 0), COPY(0, 2, 0), COPY(2, 1, 1),
                  COPY(1, 0x80, 0x80, 0x04, 0, 0)};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    assert_int_equal(decode(cases[i], &rec, &json, &err), KL_OK);
    assert_null(rec.type);
    assert_int_equal(json.len, 0);
    free(cases[i].p);
  }
  kl_buf_free(NULL, &json);
}

static void test_malformed(void **state) {
  expect_corrupt(COPY(1, 2, 0, 7, 'o', 'r'), "value: Name needs 6 bytes, 2 left");
  expect_corrupt(COPY(1, 2, 0, 1, ID, 0, 0), "value: 1 bytes after TopicRecord");
  expect_corrupt(COPY(1, 2), "value: version needs 1 bytes, 0 left");
  expect_corrupt(COPY(1, 9, 0, 1, 2, 3), "value: TopicId needs 16 bytes, 3 left");
  /* an array counting more elements than bytes are left */
  expect_corrupt(COPY(1, 5, 0, 0, 0, 0, 1, ID, 1, 0, 2, 0x7f, 0),
                 "value: Isr counts 126 elements, 1 bytes left");
}

/* ---- the image ---- */

static void apply(kl_mimage *m, int64_t offset, heap h) {
  kl_mrec rec;
  kl_buf json = {0};
  kl_err err;
  if (decode(h, &rec, &json, &err)) fail_msg("%s", err.msg);
  kl_err_clear(&err);
  if (kl_mimage_apply(m, offset, &rec, &err)) fail_msg("%s", err.msg);
  kl_buf_free(NULL, &json);
  free(h.p);
}

static kl_rc apply_rc(kl_mimage *m, heap h, kl_err *err) {
  kl_mrec rec;
  kl_buf json = {0};
  assert_int_equal(decode(h, &rec, &json, err), KL_OK);
  kl_err_clear(err);
  kl_rc rc = kl_mimage_apply(m, 9, &rec, err);
  kl_buf_free(NULL, &json);
  free(h.p);
  return rc;
}

static void test_image_deltas(void **state) {
  kl_mimage *m;
  assert_int_equal(kl_mimage_new(NULL, &m), KL_OK);
  apply(m, 0, COPY(1, 2, 0, 2, 't', ID, 0));
  /* partition 0: replicas [1,2], isr [1,2], leader 1, epochs 3 and 5 */
  apply(m, 1, COPY(1, 3, 0, 0, 0, 0, 0, ID, 3, 0, 0, 0, 1, 0, 0, 0, 2, 3, 0, 0, 0, 1, 0, 0, 0, 2,
                   1, 1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 5, 0));
  /* ISR shrinks to [1]: partition epoch only */
  apply(m, 2, COPY(1, 5, 0, 0, 0, 0, 0, ID, 1, 0, 5, 2, 0, 0, 0, 1));
  /* leader 2 (and recovery state 1): both epochs */
  apply(m, 3, COPY(1, 5, 0, 0, 0, 0, 0, ID, 2, 1, 4, 0, 0, 0, 2, 5, 1, 1));
  /* leader -2 (no change) and recovery state -1 (no change) */
  apply(m, 4, COPY(1, 5, 0, 0, 0, 0, 0, ID, 2, 1, 4, 0xff, 0xff, 0xff, 0xfe, 5, 1, 0xff));
  apply(m, 5, COPY(1, 4, 0, 2, 2, 't', 2, 'a', 2, 'x', 0));
  apply(m, 6, COPY(1, 4, 0, 2, 2, 't', 2, 'b', 2, 'y', 0));
  apply(m, 7, COPY(1, 4, 0, 2, 2, 't', 2, 'a', 0, 0));      /* a deleted */
  apply(m, 8, COPY(1, 4, 0, 4, 2, 't', 2, 'c', 2, 'z', 0)); /* a broker's: not the topic's */
  const kl_mi_part *const *pv;
  size_t n;
  assert_int_equal(kl_mimage_parts(m, &pv, &n), KL_OK);
  assert_int_equal(n, 1);
  assert_string_equal(pv[0]->topic, "t");
  assert_int_equal(pv[0]->leader, 2);
  assert_int_equal(pv[0]->leader_epoch, 4);
  assert_int_equal(pv[0]->partition_epoch, 8);
  assert_int_equal(pv[0]->leader_recovery_state, 1);
  assert_int_equal(pv[0]->isr.n, 1);
  assert_int_equal(pv[0]->isr.v[0], 1);
  assert_int_equal(pv[0]->replicas.n, 2);
  assert_int_equal(pv[0]->offset, 4);
  const kl_mi_topic *const *tv;
  assert_int_equal(kl_mimage_topics(m, &tv, &n), KL_OK);
  assert_int_equal(n, 1);
  assert_int_equal(tv[0]->partitions, 1);
  assert_int_equal(tv[0]->nconfigs, 1);
  assert_string_equal(tv[0]->configs[0]->name, "b");
  assert_string_equal(tv[0]->configs[0]->value, "y");

  kl_err err;
  /* a change of a partition never created, of a topic never created */
  assert_int_equal(apply_rc(m, COPY(1, 5, 0, 0, 0, 0, 9, ID, 0), &err), KL_CORRUPT);
  assert_string_equal(err.msg, "PartitionChangeRecord of partition 9, which no PartitionRecord created");
  assert_int_equal(apply_rc(m, COPY(1, 9, 0, ID, 0), &err), KL_OK);
  assert_int_equal(kl_mimage_parts(m, &pv, &n), KL_OK);
  assert_int_equal(n, 0);
  assert_int_equal(kl_mimage_topics(m, &tv, &n), KL_OK);
  assert_int_equal(n, 0);
  assert_int_equal(apply_rc(m, COPY(1, 9, 0, ID, 0), &err), KL_CORRUPT);
  assert_string_equal(err.msg, "RemoveTopicRecord of topic id " ID_STR ", which is not there");
  kl_mimage_free(m);
}

static void test_image_out_of_memory(void **state) {
  /* Every allocation of a replay failed in turn: an error, never a crash,
  ** and every block given back (the allocator counts them). */
  for (long fail = 1; fail < 60; fail++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, fail);
    kl_mimage *m;
    if (kl_mimage_new(env, &m) != KL_OK) continue;
    heap recs[] = {COPY(1, 2, 0, 2, 't', ID, 0),
                   COPY(1, 3, 0, 0, 0, 0, 0, ID, 2, 0, 0, 0, 1, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1,
                        0, 0, 0, 0, 0, 0, 0, 0, 0),
                   COPY(1, 4, 0, 2, 2, 't', 2, 'a', 2, 'x', 0)};
    int failed = 0;
    for (size_t i = 0; i < 3; i++) {
      kl_mrec rec;
      kl_buf json = {0};
      kl_err err;
      kl_err_clear(&err);
      kl_rc rc = failed ? KL_NOMEM : kl_meta_decode(env, recs[i].p, recs[i].n, &rec, &json, &err);
      if (rc == KL_OK) {
        kl_err_clear(&err);
        rc = kl_mimage_apply(m, (int64_t)i, &rec, &err);
      }
      /* the replay stops at the first failure, as the table's does */
      assert_true(rc == KL_OK || rc == KL_NOMEM);
      failed |= rc != KL_OK;
      kl_buf_free(env, &json);
      free(recs[i].p);
    }
    const kl_mi_topic *const *tv;
    size_t n;
    kl_rc rc = kl_mimage_topics(m, &tv, &n);
    assert_true(rc == KL_OK || rc == KL_NOMEM);
    kl_mimage_free(m);
    assert_int_equal(fa.live, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uuid_form),
      cmocka_unit_test(test_topic_record),
      cmocka_unit_test(test_partition_record_versions),
      cmocka_unit_test(test_partition_change_tags),
      cmocka_unit_test(test_config_and_features),
      cmocka_unit_test(test_register_broker_versions),
      cmocka_unit_test(test_unknown_shown_raw),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_image_deltas),
      cmocka_unit_test(test_image_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
