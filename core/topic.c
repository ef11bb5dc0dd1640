/*
** topic.c - the order of (topic, partition) keys.
*/
#include "topic.h"

#include <string.h>

int kl_topic_cmp(const char *a, size_t an, int32_t ap, const char *b, size_t bn, int32_t bp) {
  int c = an && bn ? memcmp(a, b, an < bn ? an : bn) : 0;
  if (c) return c;
  if (an != bn) return an < bn ? -1 : 1;
  return ap < bp ? -1 : ap > bp;
}
