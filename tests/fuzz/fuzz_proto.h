/*
** fuzz_proto.h - what the Protobuf targets (fuzz_protobuf.c,
** fuzz_protobuf_encode.c) share: the fixtures' schemas of
** tests/fixtures/protobuf, with their imports, and a check that stops the
** run saying why.
*/
#ifndef KL_FUZZ_PROTO_H
#define KL_FUZZ_PROTO_H

#include <stddef.h>

#include "protobuf.h"

/* The fixture file tests/fixtures/protobuf/<name>, whole (malloc'd; *n its
** size), or NULL when it cannot be read.  Aborts when out of memory. */
char *fz_proto_file(const char *name, size_t *n);

/* A kl_proto_resolver: the fixtures that others import (common.proto,
** types.proto, order.proto, legacy.proto), each read once and kept until
** the process ends; KL_NOTFOUND for any other name, so that a fuzzed
** import reads no other file. */
kl_rc fz_proto_import(void *ctx, const char *name, const char **text, size_t *n);

/* The schema of the fixture file name (a .proto or a .b64), its imports
** through fz_proto_import; aborts when it does not parse. */
kl_proto_schema *fz_proto_fixture(const char *name);

/* Abort, printing what and err's message (err may be NULL), unless ok. */
void fz_must(int ok, const char *what, const kl_err *err);

#endif
