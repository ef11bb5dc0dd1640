/*
** protofix.h - the Protobuf fixtures of tests/fixtures/protobuf as the
** decoder's and the encoder's tests read them: schema files whose imports
** are other files of that directory, by file name ("common.proto").
*/
#ifndef KL_PROTOFIX_H
#define KL_PROTOFIX_H

#include <stddef.h>

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

#endif
