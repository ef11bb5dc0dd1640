/*
** headers.h - a record's headers as the JSON of the headers column, both
** ways, so that what a query returns an INSERT takes back byte for byte:
**
**   [[name, value], ...]     name: a JSON string (UTF-8 bytes, \u0000
**                            included) or {"hex":"<bytes>"} when the bytes
**                            are not UTF-8; value: the same, or null
*/
#ifndef KL_HEADERS_H
#define KL_HEADERS_H

#include "batch.h"
#include "klog.h"

/* The headers of r as that JSON, in o (replacing what it held). */
kl_rc kl_headers_json(kl_buf *o, const kl_record *r);

/* That JSON (json, n bytes) taken apart: the names' and values' bytes in
** *bytes, *count kl_header entries in *hdrs pointing into them (both
** buffers replaced; valid until they are next used).  KL_CORRUPT with a
** message saying what is wrong and what shape is expected: text that is
** not JSON, JSON of another shape; KL_NOMEM. */
kl_rc kl_headers_parse(const char *json, size_t n, kl_buf *bytes, kl_buf *hdrs, int32_t *count,
                       kl_err *err);

#endif
