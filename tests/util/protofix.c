/*
** protofix.c - the Protobuf fixture files (protofix.h).
*/
#include "protofix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void t_proto_vectors_open(t_proto_vectors *v) {
  memset(v, 0, sizeof *v);
  v->f = fopen(T_PROTO_DIR "vectors.txt", "r");
  assert_non_null(v->f);
}

int t_proto_vectors_next(t_proto_vectors *v) {
  char *l = v->line;
  while (v->f && fgets(l, sizeof v->line, v->f)) {
    l[strcspn(l, "\n")] = 0;
    if (!strncmp(l, "case ", 5)) snprintf(v->name, sizeof v->name, "%.100s", l + 5);
    else if (!strncmp(l, "schema ", 7)) snprintf(v->schema, sizeof v->schema, "%.100s", l + 7);
    else if (!strncmp(l, "payload ", 8)) v->n = t_unhex(l + 8, v->payload, sizeof v->payload);
    else if (!strncmp(l, "expect ", 7) || !strncmp(l, "error ", 6)) return 1;
  }
  t_proto_vectors_close(v);
  return 0;
}

void t_proto_vectors_close(t_proto_vectors *v) {
  if (v->f) fclose(v->f);
  v->f = NULL;
}
