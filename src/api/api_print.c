/* mlx_array_tostring: MLX's array printing.
 *
 * Format (MLX's operator<< with default print options):
 *   array([[1, 2],
 *          [3, 4]], dtype=int32)
 * Rows of an inner dimension are separated by ",\n" plus 7 + depth spaces;
 * elements of the last dimension by ", ". A dimension longer than 6 shows
 * its first 3 and last 3 entries around "...". Floats print as C++ streams
 * do by default (%g, 6 significant digits), bool as true/false, int8/uint8
 * as numbers, complex as "re+imj" / "re-imj". 0-d arrays print the value. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "core/graph.h"
#include "core/half.h"
#include "core/strbuf.h"
#include "ops/dtype_dispatch.h"

static void put_float(struct lc_strbuf *b, double v) { lc_strbuf_put(b, "%g", v); }

static void put_elem(struct lc_strbuf *b, mlx_dtype t, const void *p) {
  switch (t) {
  /* as a byte: a bool byte other than 0 or 1 (user data) is still true */
  case MLX_BOOL: lc_strbuf_put(b, "%s", *(const uint8_t *)p ? "true" : "false"); break;
  case MLX_UINT8: lc_strbuf_put(b, "%u", (unsigned)*(const uint8_t *)p); break;
  case MLX_UINT16: lc_strbuf_put(b, "%u", (unsigned)*(const uint16_t *)p); break;
  case MLX_UINT32: lc_strbuf_put(b, "%" PRIu32, *(const uint32_t *)p); break;
  case MLX_UINT64: lc_strbuf_put(b, "%" PRIu64, *(const uint64_t *)p); break;
  case MLX_INT8: lc_strbuf_put(b, "%d", (int)*(const int8_t *)p); break;
  case MLX_INT16: lc_strbuf_put(b, "%d", (int)*(const int16_t *)p); break;
  case MLX_INT32: lc_strbuf_put(b, "%" PRId32, *(const int32_t *)p); break;
  case MLX_INT64: lc_strbuf_put(b, "%" PRId64, *(const int64_t *)p); break;
  case MLX_FLOAT16: put_float(b, lc_f16_to_f32(*(const uint16_t *)p)); break;
  case MLX_BFLOAT16: put_float(b, lc_bf16_to_f32(*(const uint16_t *)p)); break;
  case MLX_FLOAT32: put_float(b, *(const float *)p); break;
  case MLX_FLOAT64: put_float(b, *(const double *)p); break;
  case MLX_COMPLEX64: {
    const float *c = p;
    put_float(b, c[0]);
    if (c[1] >= 0) {
      lc_strbuf_put(b, "+");
      put_float(b, c[1]);
    } else {
      lc_strbuf_put(b, "-");
      put_float(b, -c[1]);
    }
    lc_strbuf_put(b, "j");
    break;
  }
  default: lc_strbuf_put(b, "?"); break;
  }
}

enum { EDGE_ITEMS = 3 };

/* Element i of dimension dim lives at base + i * stride: only offsets of
 * elements that exist are formed (a stride may be huge where len is 1, or
 * anywhere in an empty array). */
static void put_sub(struct lc_strbuf *b, const struct lc_node *n, int64_t base, int dim) {
  size_t isz = lc_dtype_size(n->dtype);
  int len = n->shape[dim];
  int64_t st = n->size ? n->strides[dim] : 0; /* an empty array's strides address nothing */
  bool last = dim == n->ndim - 1;
  lc_strbuf_put(b, "[");
  for (int i = 0; i < len; i++) {
    if (i > 0 && !last) lc_strbuf_put(b, "%*s", 7 + dim, "");
    int64_t index = base + (int64_t)i * st;
    if (i == EDGE_ITEMS && len > 2 * EDGE_ITEMS) {
      lc_strbuf_put(b, "...");
      i = len - EDGE_ITEMS - 1;
    } else if (last) {
      put_elem(b, n->dtype, (const char *)n->buf->data + index * (int64_t)isz);
    } else {
      put_sub(b, n, index, dim + 1);
    }
    if (i != len - 1) lc_strbuf_put(b, last ? ", " : ",\n");
  }
  lc_strbuf_put(b, "]");
}

int mlx_array_tostring(mlx_string *str, const mlx_array arr) {
  LC_CHECK_RES("mlx_array_tostring", str);
  LC_CHECK_ARR("mlx_array_tostring", arr);
  struct lc_node *n = lc_arr(arr);
  if (lc_eval(&n, 1)) return 1;
  /* a GPU array's elements are read from its host copy, made here */
  if (n->buf && lc_buffer_on_host(n->buf)) return 1;
  struct lc_strbuf b = {0};
  lc_strbuf_put(&b, "array(");
  if (n->ndim == 0)
    put_elem(&b, n->dtype, lc_node_data(n));
  else
    put_sub(&b, n, n->offset, 0);
  lc_strbuf_put(&b, ", dtype=%s)", lc_dtype_name(n->dtype));
  int rc = b.oom ? lc_error("mlx_array_tostring: out of memory") : lc_string_assign(str, b.data);
  free(b.data);
  return rc;
}
