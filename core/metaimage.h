/*
** metaimage.h - the image of the cluster a replay of KRaft metadata
** records gives (as MetadataDelta / TopicsImage apply them): topics with
** their ids and configs, and each partition's replicas, ISR, leader and
** epochs.
**
**   TopicRecord            adds a topic (name, id)
**   PartitionRecord        sets a partition whole
**   PartitionChangeRecord  a delta (PartitionRegistration.merge): a tagged
**                          field it carries replaces the value, an absent
**                          one leaves it; a Leader other than -2 (no
**                          change) bumps the leader epoch; every change
**                          bumps the partition epoch; LeaderRecoveryState
**                          -1 is no change
**   ConfigRecord           a topic config (ResourceType 2) set, or removed
**                          by a null Value
**   RemoveTopicRecord      the topic, its partitions and its configs go
** Other records leave topics and partitions as they are.
*/
#ifndef KL_METAIMAGE_H
#define KL_METAIMAGE_H

#include "klog.h"
#include "metarecord.h"

typedef struct kl_mimage kl_mimage;

/* A list of broker ids (replicas, ISR ...); n -1 for null. */
typedef struct kl_ids {
  int32_t *v;
  int32_t n;
} kl_ids;

typedef struct kl_mi_part {
  uint8_t topic_id[16];
  int32_t partition;
  int32_t leader;
  int32_t leader_epoch;
  int32_t partition_epoch;
  int8_t leader_recovery_state;
  kl_ids replicas, isr, removing, adding, elr, last_known_elr;
  int64_t offset;           /* the record that last changed it (-1: one
                            ** of the snapshot the replay began from) */
  const char *topic;        /* its topic's name (NULL: no such topic) */
} kl_mi_part;

typedef struct kl_mi_config {
  char *name, *value;
} kl_mi_config;

typedef struct kl_mi_topic {
  char *name;
  uint8_t id[16];
  int64_t offset;           /* its TopicRecord's (-1: a snapshot's) */
  int32_t partitions;       /* how many it has */
  const kl_mi_config *const *configs; /* sorted by name */
  size_t nconfigs;
} kl_mi_topic;

/* An empty image allocating through env. */
kl_rc kl_mimage_new(const kl_env *env, kl_mimage **out);
void kl_mimage_free(kl_mimage *m);

/* Apply the decoded record rec (kl_meta_decode) read at offset.  Unknown
** and other records change nothing.  KL_CORRUPT (a message without the
** place: the caller adds it) when a record breaks what the replay needs (a
** partition change of a partition never created, an array element count
** beyond its bytes), KL_NOMEM. */
kl_rc kl_mimage_apply(kl_mimage *m, int64_t offset, const kl_mrec *rec, kl_err *err);

/* The live topics by name, the live partitions by topic name and then
** partition (those of no known topic last, by id).  Valid until the next
** apply or free. */
kl_rc kl_mimage_topics(kl_mimage *m, const kl_mi_topic *const **out, size_t *n);
kl_rc kl_mimage_parts(kl_mimage *m, const kl_mi_part *const **out, size_t *n);

#endif
