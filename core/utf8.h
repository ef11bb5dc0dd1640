/*
** utf8.h - the UTF-8 rule for text the module hands to SQLite: well-formed
** sequences of at most four bytes, no overlong forms, no surrogates,
** nothing above U+10FFFF (what Python, Java and SQLite's own JSON accept).
*/
#ifndef KL_UTF8_H
#define KL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "klog.h"

/* 1 when the n bytes at p are UTF-8. */
int kl_utf8_valid(const uint8_t *p, size_t n);

/* A NUL-terminated copy of the n bytes at s in which each byte that does
** not begin a UTF-8 sequence is U+FFFD (the replacement character), as
** decoders that replace do; NULL when out of memory.  Free with kl_free. */
char *kl_utf8_scrub(const kl_env *env, const char *s, size_t n);

#endif
