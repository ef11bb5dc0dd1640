/*
** protobuf.c - the Protobuf decoder's rate: the 8-field order value of the
** test vectors (long, string, double, enum, optional string, repeated
** message of 3 fields x 2, map of 2 string entries, bool; 125 bytes after
** the Confluent prefix, serialised by python3-protobuf) decoded to JSON
** into one reused buffer.  Median of 3 runs of >= 1 s of CPU time; prints values/s
** and input MB/s.
**   build/tests/bench/protobuf [min seconds per run, default 1]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protobuf.h"
#include "testutil.h"

#define DIR KL_FIXTURES "/protobuf/"

/* CPU time of the process: the rate of the decoder, not of a shared
** machine's scheduler. */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  double min = argc > 1 ? atof(argv[1]) : 1.0;
  size_t n;
  char *text = (char *)t_read_file(DIR "order.proto", &n);
  kl_err err = {0};
  kl_proto_schema *s = NULL;
  if (!text || kl_proto_schema_parse(NULL, text, n, NULL, NULL, &s, &err)) {
    fprintf(stderr, "order.proto: %s\n", err.msg);
    return 1;
  }
  FILE *f = fopen(DIR "vectors.txt", "r");
  static char line[1 << 16];
  uint8_t payload[4096];
  size_t pn = 0;
  int hit = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (!strcmp(line, "case order\n")) hit = 1;
    else if (hit && !strncmp(line, "payload ", 8)) {
      for (const char *h = line + 8; h[0] && h[1] && h[0] != '\n'; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        payload[pn++] = (uint8_t)v;
      }
      break;
    }
  }
  if (f) fclose(f);
  if (!pn) return 1;
  kl_buf json = {0};
  double rates[3];
  for (int r = 0; r < 3; r++) {
    long count = 0;
    double t0 = now(), t;
    do {
      for (int i = 0; i < 10000; i++) {
        json.len = 0;
        if (kl_proto_decode(s, payload, pn, &json, &err)) {
          fprintf(stderr, "%s\n", err.msg);
          return 1;
        }
      }
      count += 10000;
    } while ((t = now() - t0) < min);
    rates[r] = (double)count / t;
  }
  qsort(rates, 3, sizeof rates[0], cmp);
  printf("protobuf order value (%zu bytes -> %zu bytes of JSON): %.0f values/s, %.1f MB/s in\n",
         pn, json.len, rates[1], rates[1] * (double)pn / 1e6);
  printf("%.*s\n", (int)json.len, (const char *)json.p);
  kl_buf_free(NULL, &json);
  kl_proto_schema_free(s);
  free(text);
  return 0;
}
