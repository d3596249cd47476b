#include "core/node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy.h"
#include "core/error.h"
#include "ops/prim.h"

int64_t lc_shape_size(int ndim, const int *shape) {
  int64_t s = 1;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(s, (int64_t)shape[i], &s)) return INT64_MAX;
  return s;
}

bool lc_shape_too_large(int ndim, const int *shape) {
  int64_t span = 1;
  for (int i = 0; i < ndim; i++) {
    int64_t d = shape[i] > 1 ? shape[i] : 1;
    if (__builtin_mul_overflow(span, d, &span) || span > LC_MAX_ELEMS) return true;
  }
  return false;
}

bool lc_shape_equal(int na, const int *a, int nb, const int *b) {
  return na == nb && (na == 0 || memcmp(a, b, sizeof(int) * (size_t)na) == 0);
}

char *lc_shape_str(int ndim, const int *shape, char *buf, int len) {
  int p = snprintf(buf, (size_t)len, "(");
  for (int i = 0; i < ndim && p < len; i++)
    p += snprintf(buf + p, (size_t)(len - p), i ? ",%d" : "%d", shape[i]);
  if (p < len) snprintf(buf + p, (size_t)(len - p), ndim == 1 ? ",)" : ")");
  return buf;
}

int lc_axis_check(const char *fn, int *axis, int ndim) {
  int a = *axis < 0 ? *axis + ndim : *axis;
  if (a < 0 || a >= ndim)
    return lc_error("%s: axis %d is out of bounds for an array with %d dimensions", fn, *axis,
                    ndim);
  *axis = a;
  return 0;
}

int lc_shape_check(const char *fn, int ndim, const int *shape) {
  if (ndim < 0) return lc_error("%s: negative number of dimensions %d", fn, ndim);
  if (ndim > 0 && !shape) return lc_error("%s: shape is NULL", fn);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return lc_error("%s: negative dimensions are not allowed (dimension %d is %d)", fn, i,
                      shape[i]);
  return 0;
}

void lc_shape_strides(int ndim, const int *shape, int64_t *out) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    out[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
}

struct lc_node *lc_node_alloc(mlx_dtype dtype, int ndim, const int *shape) {
  if (ndim < 0) {
    lc_error("negative number of dimensions %d", ndim);
    return NULL;
  }
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0) {
      lc_error("negative dimension %d in shape", shape[i]);
      return NULL;
    }
  if (lc_shape_too_large(ndim, shape)) {
    char buf[96];
    lc_error("array of shape %s is too large (more than 2^%d elements, counting empty "
             "dimensions as 1)", lc_shape_str(ndim, shape, buf, sizeof buf), LC_MAX_ELEMS_LOG2);
    return NULL;
  }
  /* strides first: they need 8-byte alignment */
  struct lc_node *n = malloc(sizeof *n + (sizeof(int64_t) + sizeof(int)) * (size_t)ndim);
  if (!n) {
    lc_error("out of memory");
    return NULL;
  }
  memset(n, 0, sizeof *n);
  atomic_init(&n->refs, 1);
  n->op = LC_OP_NONE;
  n->dev = LC_DEV_CPU;
  n->dtype = dtype;
  n->ndim = ndim;
  n->strides = (int64_t *)(n + 1);
  n->shape = (int *)(n->strides + ndim);
  if (ndim) memcpy(n->shape, shape, sizeof(int) * (size_t)ndim);
  n->size = lc_shape_size(ndim, shape);
  lc_shape_strides(ndim, shape, n->strides); /* what the data will look like */
  return n;
}

static _Thread_local int build_device = LC_DEV_CPU;
void lc_set_build_device(int dev) { build_device = dev; }
int lc_build_device(void) { return build_device; }
static _Thread_local int build_stream;
void lc_set_build_stream(int index) { build_stream = index; }
int lc_build_stream(void) { return build_stream; }

struct lc_node *lc_node_new_op(int op, mlx_dtype dtype, int ndim, const int *shape, int nin,
                               struct lc_node *const *in, const void *params,
                               size_t params_size) {
  struct lc_node *n = lc_node_alloc(dtype, ndim, shape);
  if (!n) return NULL;
  n->op = op;
  n->dev = build_device;
  n->stream = build_stream;
  if (nin > 0) {
    n->in = malloc(sizeof(*n->in) * (size_t)nin);
    if (!n->in) goto oom;
  }
  if (params_size) {
    n->params = malloc(params_size);
    if (!n->params) goto oom;
    memcpy(n->params, params, params_size);
    n->params_size = params_size;
  }
  for (int i = 0; i < nin; i++) {
    n->in[i] = lc_node_retain(in[i]);
    n->flags |= in[i]->flags & LC_NF_TRACED;
  }
  if (op == LC_OP_PLACEHOLDER) n->flags |= LC_NF_TRACED;
  n->nin = nin;
  if (params_size && lc_prims[op]->params_ref) lc_prims[op]->params_ref(n->params, +1);
  return n;
oom:
  free(n->in);
  free(n);
  lc_error("out of memory");
  return NULL;
}

int lc_node_alloc_data(struct lc_node *n) {
  struct lc_buffer *b = lc_buffer_new((size_t)n->size * lc_dtype_size(n->dtype));
  if (!b) return 1;
  lc_buffer_release(n->buf);
  n->buf = b;
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
  return 0;
}

void lc_node_broadcast_strides(const struct lc_node *a, int ndim, int64_t *strides) {
  int lead = ndim - a->ndim;
  for (int d = 0; d < ndim; d++)
    strides[d] = (d < lead || a->shape[d - lead] == 1) ? 0 : a->strides[d - lead];
}

void lc_node_set_view(struct lc_node *n, const struct lc_node *src, const int64_t *strides,
                      int64_t offset) {
  struct lc_buffer *b = lc_buffer_retain(src->buf);
  lc_buffer_release(n->buf);
  n->buf = b;
  if (n->ndim) memcpy(n->strides, strides, sizeof(int64_t) * (size_t)n->ndim);
  n->offset = offset;
  lc_node_is_contiguous(n);
}

struct lc_node *lc_node_new_data(mlx_dtype dtype, int ndim, const int *shape, const void *data) {
  struct lc_node *n = lc_node_alloc(dtype, ndim, shape);
  if (!n) return NULL;
  if (lc_node_alloc_data(n)) {
    lc_node_release(n);
    return NULL;
  }
  if (data && n->size) memcpy(n->buf->data, data, (size_t)n->size * lc_dtype_size(dtype));
  return n;
}

struct lc_node *lc_node_new_scalar(mlx_dtype dtype, double v) {
  struct lc_node *n = lc_node_new_data(dtype, 0, NULL, NULL);
  if (n) lc_dtype_store(n->buf->data, dtype, v);
  return n;
}

struct lc_node *lc_node_retain(struct lc_node *n) {
  if (n) atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
  return n;
}

/* Frees n and, through an explicit worklist, every input whose last
 * reference it held. */
void lc_node_release(struct lc_node *n) {
  if (!n || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1) return;
  struct lc_node *local[64];
  struct lc_node **stack = local;
  size_t top = 0, cap = 64;
  stack[top++] = n;
  while (top) {
    struct lc_node *x = stack[--top];
    for (int i = 0; i < x->nin; i++) {
      struct lc_node *c = x->in[i];
      if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) continue;
      if (top == cap) {
        size_t ncap = cap * 2;
        struct lc_node **ns = malloc(sizeof(*ns) * ncap);
        if (!ns) { /* keep going depth-first on what fits; leaks are better than a crash */
          lc_error("out of memory while freeing a graph");
          continue;
        }
        memcpy(ns, stack, sizeof(*ns) * top);
        if (stack != local) free(stack);
        stack = ns;
        cap = ncap;
      }
      stack[top++] = c;
    }
    lc_buffer_release(x->buf);
    free(x->in);
    if (x->params && lc_prims[x->op]->params_ref) lc_prims[x->op]->params_ref(x->params, -1);
    free(x->params);
    free(x);
  }
  if (stack != local) free(stack);
}

bool lc_node_is_contiguous(struct lc_node *n) {
  int64_t expect = 1;
  bool c = true;
  for (int i = n->ndim - 1; i >= 0; i--) {
    if (n->shape[i] == 1) continue;
    if (n->strides[i] != expect) {
      c = false;
      break;
    }
    expect *= n->shape[i];
  }
  if (c)
    n->flags |= LC_NF_CONTIG;
  else
    n->flags &= ~LC_NF_CONTIG;
  return c;
}

int lc_node_copy_out(const struct lc_node *n, void *dst) {
  if (lc_buffer_on_host(n->buf)) return 1;
  int64_t dstr[n->ndim > 0 ? n->ndim : 1];
  lc_shape_strides(n->ndim, n->shape, dstr);
  return lc_copy_strided(n->ndim, n->shape, lc_dtype_size(n->dtype), dst, dstr, 0, n->buf->data,
                         n->strides, n->offset);
}

int lc_node_make_contiguous(struct lc_node *n) {
  if (lc_node_is_contiguous(n))
    return lc_buffer_on_host(n->buf);
  struct lc_buffer *b = lc_buffer_new((size_t)n->size * lc_dtype_size(n->dtype));
  if (!b) return 1;
  if (lc_node_copy_out(n, b->data)) {
    lc_buffer_release(b);
    return 1;
  }
  lc_buffer_release(n->buf);
  n->buf = b;
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
  return 0;
}

void lc_node_detach(struct lc_node *n) {
  for (int i = 0; i < n->nin; i++) lc_node_release(n->in[i]);
  free(n->in);
  if (n->params && lc_prims[n->op]->params_ref) lc_prims[n->op]->params_ref(n->params, -1);
  free(n->params);
  n->in = NULL;
  n->nin = 0;
  n->params = NULL;
  n->params_size = 0;
  n->op = LC_OP_NONE;
  n->flags &= ~LC_NF_TRACED;
}
