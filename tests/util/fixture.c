/*
** fixture.c - the fixture sets' table and paths.
*/
#include "fixture.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

const t_fixture_set t_fixture_sets[] = {
    {"a-tiny", T_FIX_ONE_SEGMENT},
    {"b-multi-segment", T_FIX_SAMPLE},
    {"c-gzip", T_FIX_COMPRESSED | T_FIX_SAMPLE},
    {"d-jitter-nulls-headers", T_FIX_SAMPLE},
    {"e-live-preallocated", T_FIX_LIVE},
    {"f-legacy-v0", T_FIX_LEGACY},
    {"f-legacy-v0-gzip", T_FIX_LEGACY | T_FIX_COMPRESSED},
    {"f-legacy-v1", T_FIX_LEGACY},
    {"f-legacy-v1-gzip", T_FIX_LEGACY | T_FIX_COMPRESSED | T_FIX_SAMPLE},
    {"g-transactions", T_FIX_SAMPLE},
    {"h-index-full-roll", 0},
    {"i-log-append-time", 0},
    {"j-mixed-codecs", T_FIX_COMPRESSED | T_FIX_SAMPLE},
    {NULL, 0},
};

enum { NSETS = sizeof t_fixture_sets / sizeof t_fixture_sets[0] - 1 };

size_t t_fixture_names(unsigned with, unsigned without, const char **out, size_t max) {
  size_t n = 0;
  for (const t_fixture_set *s = t_fixture_sets; s->name; s++) {
    if ((s->traits & with) != with || (s->traits & without)) continue;
    if (n < max) out[n] = s->name;
    n++;
  }
  if (n < max) out[n] = NULL;
  return n;
}

size_t t_fixture_tests(unsigned with, unsigned without, void (*fn)(void **state),
                       struct CMUnitTest *tests, size_t max) {
  const char *names[NSETS + 1];
  size_t n = t_fixture_names(with, without, names, NSETS + 1);
  if (n > max) fail_msg("room for %zu of %zu fixture tests", max, n);
  for (size_t i = 0; i < n; i++) {
    struct CMUnitTest t = {names[i], fn, NULL, NULL, (void *)names[i]};
    tests[i] = t;
  }
  return n;
}

/* The set's place in the table; fails the test when unknown. */
static size_t set_index(const char *set) {
  for (size_t i = 0; i < NSETS; i++) {
    if (strcmp(t_fixture_sets[i].name, set) == 0) return i;
  }
  fail_msg("no fixture set %s", set);
  return 0;
}

/* The one subdirectory of the set's directory into buf. */
static void partition_dir(const char *set, char *buf, size_t n) {
  char top[4096];
  snprintf(top, sizeof top, "%s/%s", KL_FIXTURES, set);
  DIR *d = opendir(top);
  if (!d) fail_msg("cannot list %s", top);
  struct dirent *de;
  int found = 0;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", top, de->d_name);
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    if (found++) break;
    if (strlen(p) >= n) fail_msg("%s: path too long", p);
    memcpy(buf, p, strlen(p) + 1);
  }
  closedir(d);
  if (found != 1) fail_msg("%s: %s partition directories, one expected", top, found ? "several" : "no");
}

/* Paths are made once per set, at first use. */
static char g_dirs[NSETS][4096], g_expected[NSETS][4096];

const char *t_fixture(const char *set) {
  size_t i = set_index(set);
  if (!g_dirs[i][0]) partition_dir(set, g_dirs[i], sizeof g_dirs[i]);
  return g_dirs[i];
}

const char *t_fixture_expected(const char *set) {
  size_t i = set_index(set);
  if (!g_expected[i][0]) snprintf(g_expected[i], sizeof g_expected[i], "%s/%s/expected.json", KL_FIXTURES, set);
  return g_expected[i];
}
