/*
** test_replica.c - leader epoch chains and two copies of a partition:
** LeaderEpochFileCache's assign and endOffsetFor rules on chains built
** here; the comparison and the truncation Kafka's follower would make, on
** tests/fixtures/replicas (b elected uncleanly at epoch 4 while a held
** records of epoch 3 past b's end) and on copies made from it: one a
** prefix of the other, the same copy twice, a copy without its
** leader-epoch-checkpoint (its chain then comes from its batches), a
** chain whose last epoch the leader never knew.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replica.h"

static kl_epoch_chain chain(const int32_t *e, const int64_t *s, size_t n) {
  kl_epoch_chain c = {NULL, 0};
  for (size_t i = 0; i < n; i++) assert_int_equal(kl_epoch_chain_assign(NULL, &c, e[i], s[i]), KL_OK);
  return c;
}

static void test_assign_rule(void **state) {
  /* the latest epoch again, later: ignored; a lower epoch or an earlier
  ** start: the entries at or above it go */
  kl_epoch_chain c = chain((int32_t[]){1, 3, 3, 5, 4}, (int64_t[]){0, 10, 20, 30, 25}, 5);
  assert_int_equal(c.n, 3);
  assert_int_equal(c.e[1].epoch, 3);
  assert_int_equal(c.e[1].start_offset, 10);
  assert_int_equal(c.e[2].epoch, 4);
  assert_int_equal(c.e[2].start_offset, 25);
  assert_int_equal(kl_epoch_chain_assign(NULL, &c, 6, 5), KL_OK); /* an earlier start */
  assert_int_equal(c.n, 2);
  assert_int_equal(c.e[1].epoch, 6);
  kl_epoch_chain_free(NULL, &c);
}

static void test_end_offset_for(void **state) {
  kl_epoch_chain c = chain((int32_t[]){1, 3, 6}, (int64_t[]){0, 10, 30}, 3);
  int32_t e;
  int64_t end;
  kl_epoch_chain_end(&c, 6, 99, &e, &end); /* the latest: the log end */
  assert_int_equal(e, 6);
  assert_int_equal(end, 99);
  kl_epoch_chain_end(&c, 3, 99, &e, &end);
  assert_int_equal(e, 3);
  assert_int_equal(end, 30);
  kl_epoch_chain_end(&c, 4, 99, &e, &end); /* unknown: the floor epoch, the next start */
  assert_int_equal(e, 3);
  assert_int_equal(end, 30);
  kl_epoch_chain_end(&c, 0, 99, &e, &end); /* below the first: itself, the first start */
  assert_int_equal(e, 0);
  assert_int_equal(end, 0);
  kl_epoch_chain_end(&c, 7, 99, &e, &end); /* above the latest: undefined */
  assert_int_equal(e, -1);
  assert_int_equal(end, -1);
  kl_epoch_chain_free(NULL, &c);
}

static const char *replica(const char *side) {
  static char p[2][512];
  char *b = p[side[0] == 'b'];
  snprintf(b, 512, "%s/replicas/%s/orders-0", KL_FIXTURES, side);
  return b;
}

static void compare(const char *a, const char *b, kl_replica_diff *d) {
  kl_err err;
  kl_err_clear(&err);
  kl_stats st = {0};
  kl_rc rc = kl_replica_compare(NULL, a, b, &st, d, &err);
  if (rc) fail_msg("%s", err.msg);
}

static void test_fixture_unclean_election(void **state) {
  kl_replica_diff d;
  compare(replica("a"), replica("b"), &d);
  assert_int_equal(d.a.log_end, 12);
  assert_int_equal(d.b.log_end, 14);
  assert_int_equal(d.a.latest_epoch, 3);
  assert_int_equal(d.b.latest_epoch, 4);
  assert_int_equal(d.epoch_diff, -1); /* b's chain extends a's */
  assert_int_equal(d.first_diff, 8);
  assert_int_equal(d.a.records_past, 4);
  assert_int_equal(d.b.records_past, 6);
  assert_int_equal(d.kept, 1);
  assert_int_equal(d.common_epoch, 3);
  assert_int_equal(d.truncate_to, 8);
  assert_int_equal(d.records_lost, 4);
  assert_int_equal(d.a.batches, 4);
  assert_int_equal(d.b.batches, 5);
  /* the other way round: the same answer, sides swapped */
  compare(replica("b"), replica("a"), &d);
  assert_int_equal(d.kept, 0);
  assert_int_equal(d.truncate_to, 8);
  assert_int_equal(d.records_lost, 4);
  assert_int_equal(d.a.records_past, 6);
}

static void test_identical_and_prefix(void **state) {
  kl_replica_diff d;
  compare(replica("a"), replica("a"), &d);
  assert_int_equal(d.first_diff, -1);
  assert_int_equal(d.kept, -1);
  assert_int_equal(d.records_lost, 0);
  /* a copy of b holding its first 3 batches (offsets 0..7): behind */
  char *tmp = t_mkdtemp("prefix");
  char dir[600], log[700];
  snprintf(dir, sizeof dir, "%s/orders-0", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(replica("b"), dir), 0);
  snprintf(log, sizeof log, "%s/00000000000000000000.log", dir);
  size_t n;
  uint8_t *bytes = t_read_file(log, &n);
  size_t pos = 0;
  for (int i = 0; i < 3; i++) pos += 12 + ((size_t)bytes[pos + 8] << 24 | (size_t)bytes[pos + 9] << 16 |
                                           (size_t)bytes[pos + 10] << 8 | bytes[pos + 11]);
  assert_int_equal(t_write_file(log, bytes, pos), 0);
  free(bytes);
  char ckpt[700];
  snprintf(ckpt, sizeof ckpt, "%s/leader-epoch-checkpoint", dir);
  assert_int_equal(t_write_file(ckpt, "0\n3\n1 0\n2 3\n3 6\n", 16), 0);
  compare(dir, replica("b"), &d);
  assert_int_equal(d.first_diff, 8);
  assert_int_equal(d.a.records_past, 0);
  assert_int_equal(d.b.records_past, 6);
  assert_int_equal(d.kept, 1);
  assert_int_equal(d.truncate_to, 8); /* nothing to cut: it ends there */
  assert_int_equal(d.records_lost, 0);
  /* without its checkpoint, the chain its batches give (the same) */
  assert_int_equal(unlink(ckpt), 0);
  compare(dir, replica("b"), &d);
  assert_int_equal(d.a.from_checkpoint, 0);
  assert_int_equal(d.a.latest_epoch, 3);
  assert_int_equal(d.truncate_to, 8);
  t_rmdir(tmp);
  free(tmp);
}

static void test_epoch_unknown_to_leader(void **state) {
  /* a claims an epoch 5 from offset 10 that b never had: a is then the
  ** leader, and b, whose epoch 4 a never had, truncates */
  char *tmp = t_mkdtemp("epoch5");
  char dir[600], ckpt[700];
  snprintf(dir, sizeof dir, "%s/orders-0", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(replica("a"), dir), 0);
  snprintf(ckpt, sizeof ckpt, "%s/leader-epoch-checkpoint", dir);
  const char *c = "0\n4\n1 0\n2 3\n3 6\n5 10\n";
  assert_int_equal(t_write_file(ckpt, c, strlen(c)), 0);
  kl_replica_diff d;
  compare(dir, replica("b"), &d);
  assert_int_equal(d.a.latest_epoch, 5);
  assert_int_equal(d.kept, 0); /* a's latest epoch is the larger: a leads */
  /* b asks for epoch 4; a knows no 4: it answers its floor, epoch 3,
  ** ending at 10 (where its epoch 5 starts); b's own epoch 3 ends at 8:
  ** b truncates to the smaller */
  assert_int_equal(d.common_epoch, 3);
  assert_int_equal(d.truncate_to, 8);
  assert_int_equal(d.records_lost, 6);
  t_rmdir(tmp);
  free(tmp);
}

static void test_not_a_partition(void **state) {
  kl_replica_diff d;
  kl_err err;
  kl_err_clear(&err);
  assert_int_equal(kl_replica_compare(NULL, replica("a"), KL_FIXTURES "/nonexistent", NULL, &d, &err),
                   KL_CANTOPEN);
  assert_non_null(strstr(err.msg, "nonexistent"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_assign_rule),
      cmocka_unit_test(test_end_offset_for),
      cmocka_unit_test(test_fixture_unclean_election),
      cmocka_unit_test(test_identical_and_prefix),
      cmocka_unit_test(test_epoch_unknown_to_leader),
      cmocka_unit_test(test_not_a_partition),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
