/*
** places.h - a number for each partition directory a kafka_log table has
** read, kept for the table's life.  Rowids of a path of several partitions
** carry it above the offset (core/broker.h kl_rowid_at), so that a row has
** one rowid whichever listing found its partition: the whole listing, or
** one keeping the single partition a query names (kl_broker_open_named),
** which cannot know the partition's place among all of them.  A place is
** given on first sight and never changes, so rowids stay the same across
** the xFilter calls of a statement (SQLite's OR optimisation merges rowid
** sets) whatever listings they used.
*/
#ifndef KL_PLACES_H
#define KL_PLACES_H

#include <stddef.h>
#include <stdint.h>

#include "broker.h"

/* Places fit above the offset's 44 bits of a positive rowid. */
#define KL_PLACES_MAX ((size_t)1 << (63 - KL_ROWID_SHIFT))

typedef struct kl_places kl_places;

/* An empty set of places (NULL when out of memory); free with
** kl_places_free. */
kl_places *kl_places_new(void);
void kl_places_free(kl_places *p);

/* The place of the partition directory dir: the one it was given first,
** else the next unused one.  -1 when out of memory or when all
** KL_PLACES_MAX are taken (the caller says so; kl_places_clear starts
** again once no statement reads the table). */
int64_t kl_places_get(kl_places *p, const char *dir);

/* How many places are given; forget them all. */
size_t kl_places_count(const kl_places *p);
void kl_places_clear(kl_places *p);

#endif
