/*
** protofix.h - the Protobuf fixtures of tests/fixtures/protobuf as the
** decoder's and the encoder's tests read them: schema files whose imports
** are other files of that directory, by file name ("common.proto"), and
** the cases of vectors.txt (written by make_vectors.py), one at a time.
*/
#ifndef KL_PROTOFIX_H
#define KL_PROTOFIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "klog.h"

#define T_PROTO_DIR KL_FIXTURES "/protobuf/"

/* The files one parse has read: the parse borrows their texts until it
** returns, so they are kept until t_proto_files_free. */
typedef struct t_proto_files {
  char *text[8];            /* malloc'd, NUL-terminated */
  int n;                    /* how many */
} t_proto_files;

/*
** Read the fixture file T_PROTO_DIR name into ctx (a t_proto_files).
** OUT: *text and *n, its bytes.  KL_OK, or KL_NOTFOUND when there is no
** such file (so that, as kl_proto_resolver of protobuf.h, Google's and
** Confluent's importable files come from the decoder's built-in copies).
** A ninth file fails the current test.  Serves as the resolver of a parse
** and to read the schema file itself.
*/
kl_rc t_proto_file(void *ctx, const char *name, const char **text, size_t *n);

/* Free the texts read into f and empty it. */
void t_proto_files_free(t_proto_files *f);

/* A reader of vectors.txt's cases, each of the lines
**   case <name>, schema <file>, payload <hex>, then
**   expect <json> or error <KL_...> <text the message must hold>
** (large: make it static). */
typedef struct t_proto_vectors {
  FILE *f;                  /* vectors.txt, NULL once read to its end */
  char line[1 << 16];       /* the line read last: the case's expect or error line */
  char name[128];           /* the case's name */
  char schema[128];         /* its schema's file ("types.proto", "order.b64") */
  uint8_t payload[1 << 15]; /* its payload: message indexes, then the message */
  size_t n;                 /* the payload's bytes */
} t_proto_vectors;

/* Open vectors.txt into v (failing the current test if it cannot). */
void t_proto_vectors_open(t_proto_vectors *v);

/* The next case into v: 1, or 0 at the end (the file then closed). */
int t_proto_vectors_next(t_proto_vectors *v);

/* Close the file before the end; the last case stays in v. */
void t_proto_vectors_close(t_proto_vectors *v);

#endif
