/*
** protofix.c - the Protobuf fixture files (protofix.h).
*/
#include "protofix.h"

#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

kl_rc t_proto_file(void *ctx, const char *name, const char **text, size_t *n) {
  t_proto_files *f = ctx;
  char path[512];
  snprintf(path, sizeof path, T_PROTO_DIR "%s", name);
  size_t len;
  uint8_t *p = t_read_file(path, &len);
  if (!p) return KL_NOTFOUND;
  if (f->n >= (int)(sizeof f->text / sizeof f->text[0])) {
    free(p);
    fail_msg("%s: more files than a t_proto_files holds", name);
  }
  f->text[f->n++] = (char *)p;
  *text = (const char *)p;
  *n = len;
  return KL_OK;
}

void t_proto_files_free(t_proto_files *f) {
  for (int i = 0; i < f->n; i++) free(f->text[i]);
  f->n = 0;
}
