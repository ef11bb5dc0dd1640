/*
** fixture.h - the Kafka-written fixture sets of tests/fixtures (its
** README.md says what each exercises): their names and traits in one
** table, and the paths of their partition directories and expected.json.
*/
#ifndef KL_FIXTURE_H
#define KL_FIXTURE_H

#include <stddef.h>

/* Traits a test chooses sets by. */
enum {
  T_FIX_LIVE = 1,           /* copied with the active segment open (its
                            ** preallocated indexes are findings of the check) */
  T_FIX_LEGACY = 2,         /* message format v0 or v1 */
  T_FIX_COMPRESSED = 4,     /* some batches compressed */
  T_FIX_ONE_SEGMENT = 8,    /* a single segment: nothing rolled */
  T_FIX_SAMPLE = 16         /* one set for each way batches come written
                            ** (many plain segments, gzip, mixed codecs,
                            ** transactions, jittered timestamps with nulls
                            ** and headers, legacy wrapped messages): what
                            ** a test that costs much per set runs over */
};

typedef struct t_fixture_set {
  const char *name;         /* tests/fixtures/<name> */
  unsigned traits;          /* T_FIX_* */
} t_fixture_set;

/* Every set, in name order, ended by {NULL, 0}. */
extern const t_fixture_set t_fixture_sets[];

/* The names of the sets having every trait of with and none of without,
** in name order, into out (at most max; ended by NULL when there is room).
** Returns how many. */
size_t t_fixture_names(unsigned with, unsigned without, const char **out, size_t max);

/* One cmocka test per set chosen as t_fixture_names chooses, named after
** it, running fn with *state the set's name, into tests (at most max).
** Returns how many (run them with _cmocka_run_group_tests). */
struct CMUnitTest;
size_t t_fixture_tests(unsigned with, unsigned without, void (*fn)(void **state),
                       struct CMUnitTest *tests, size_t max);

/* Path of the set's partition directory (the one directory the set holds,
** e.g. KL_FIXTURES "/a-tiny/orders-0") and of its expected.json.  The
** strings stay valid for the whole run, one per set, so two sets' paths
** may be used together.  An unknown set fails the current test. */
const char *t_fixture(const char *set);
const char *t_fixture_expected(const char *set);

#endif
