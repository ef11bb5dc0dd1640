/*
** avro_node.h - the parsed form of an Avro schema, shared by the decoder
** (avro.c, which parses schemas) and the encoder (avro_encode.c); not for
** use outside decode/.
*/
#ifndef KL_AVRO_NODE_H
#define KL_AVRO_NODE_H

#include "avro.h"

typedef enum av_type {
  AV_NULL, AV_BOOLEAN, AV_INT, AV_LONG, AV_FLOAT, AV_DOUBLE, AV_BYTES, AV_STRING,
  AV_RECORD, AV_ENUM, AV_ARRAY, AV_MAP, AV_UNION, AV_FIXED
} av_type;

typedef enum av_logical { AV_PLAIN, AV_DECIMAL, AV_UUID } av_logical;

/* Bytes readable past every key's text (zeros), so that a short key is
** copied as two words. */
#define KL_KEY_PAD 16

typedef struct av_node av_node;
typedef struct av_code av_code;
struct av_node {
  av_type type;
  av_logical logical;
  int32_t scale, precision; /* decimal */
  int64_t size;             /* fixed */
  char *name;               /* named types: the full name */
  size_t n;                 /* fields, symbols, branches */
  av_node **kids;           /* record fields, union branches; [0]: items, values */
  char **names;             /* record field names, enum symbols */
  char **keys;              /* the same as JSON text: "name": for fields (after the
                            ** first: ,"name":), "symbol" for symbols */
  size_t *key_len;
  size_t min_bytes;         /* the smallest encoding of a datum */
  int sized;                /* min_bytes is known (recursion guard) */
  av_code *code;            /* the datum's decoding as steps (avro.c), or NULL */
};

struct kl_avro_schema {
  const kl_env *env;
  av_node *root;
  av_node **nodes;          /* every node, for the free */
  size_t nnodes, cap;
};

/* kl_avro_decode's flag for the tree walk alone, without the compiled
** steps: the reference the steps are checked against (tests, fuzzing). */
#define KL_AVRO_TREE 0x100

/* The spec's name of each av_type ("null" ... "fixed"). */
extern const char *const kl_avro_type_names[];

/* The JSON path of the datum a walk is at ("$.items[2].qty"): at each
** level 1..depth names[i], or when NULL idx[i] if >= 0; into out (n bytes,
** NUL-terminated, cut when longer). */
void kl_avro_path(const char *const *names, const int64_t *idx, int depth, char *out, size_t n);

#endif
