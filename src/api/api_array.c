/* mlx_array: creation from host data, metadata, host access, evaluation. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "core/graph.h"

int lc_api_set(mlx_array *res, struct lc_node *n) {
  if (!n) return 1;
  if (!res) {
    lc_node_release(n);
    return lc_error("result pointer is NULL");
  }
  lc_node_release(lc_arr(*res));
  res->ctx = n;
  return 0;
}

int lc_api_check_list_max(const char *fn, const char *what, const void *p, size_t n, size_t max) {
  if (n > 0 && !p) return lc_error("%s: '%s' is NULL but has %zu entries", fn, what, n);
  if (n > max) return lc_error("%s: '%s' has too many entries (%zu)", fn, what, n);
  return 0;
}

int lc_api_prologue(const char *fn, mlx_array *res, mlx_array a, mlx_stream s, struct lc_node **x) {
  if (!res) return lc_error("%s: result pointer 'res' is NULL", fn);
  if (!a.ctx) return lc_error("%s: argument 'a' is an empty array", fn);
  if (lc_api_check_stream(fn, s)) return 1;
  *x = lc_arr(a);
  return 0;
}

size_t mlx_dtype_size(mlx_dtype dtype) { return lc_dtype_size(dtype); }

mlx_array mlx_array_new(void) { return (mlx_array){NULL}; }

int mlx_array_free(mlx_array arr) {
  lc_node_release(lc_arr(arr));
  return 0;
}

static struct lc_node *scalar_node(mlx_dtype t, const void *v) {
  return lc_node_new_data(t, 0, NULL, v);
}

mlx_array mlx_array_new_bool(bool val) { return lc_api_wrap(scalar_node(MLX_BOOL, &val)); }
mlx_array mlx_array_new_int(int val) { return lc_api_wrap(scalar_node(MLX_INT32, &val)); }
mlx_array mlx_array_new_float32(float val) { return lc_api_wrap(scalar_node(MLX_FLOAT32, &val)); }
mlx_array mlx_array_new_float(float val) { return mlx_array_new_float32(val); }
mlx_array mlx_array_new_float64(double val) { return lc_api_wrap(scalar_node(MLX_FLOAT64, &val)); }
mlx_array mlx_array_new_double(double val) { return mlx_array_new_float64(val); }
mlx_array mlx_array_new_complex(float real_val, float imag_val) {
  float _Complex v = CMPLXF(real_val, imag_val);
  return lc_api_wrap(scalar_node(MLX_COMPLEX64, &v));
}

/* Validates (shape, dim, dtype) of a host-data constructor. */
static int check_data_args(const char *fn, const void *data, const int *shape, int dim,
                           mlx_dtype dtype) {
  if (!lc_dtype_valid(dtype)) return lc_error("%s: invalid dtype %d", fn, (int)dtype);
  if (dim < 0) return lc_error("%s: negative number of dimensions %d", fn, dim);
  if (dim > 0 && !shape) return lc_error("%s: shape is NULL", fn);
  int64_t size = 1;
  for (int i = 0; i < dim; i++) {
    if (shape[i] < 0) return lc_error("%s: negative dimension %d", fn, shape[i]);
    size *= shape[i];
    if (size > ((int64_t)1 << 40)) return lc_error("%s: shape too large", fn);
  }
  if (size > 0 && !data) return lc_error("%s: data is NULL", fn);
  return 0;
}

mlx_array mlx_array_new_data(const void *data, const int *shape, int dim, mlx_dtype dtype) {
  if (check_data_args("mlx_array_new_data", data, shape, dim, dtype)) return mlx_array_new();
  return lc_api_wrap(lc_node_new_data(dtype, dim, shape, data));
}

static mlx_array new_managed(const char *fn, void *data, const int *shape, int dim,
                             mlx_dtype dtype, void *arg, void (*dtor)(void *)) {
  if (check_data_args(fn, data, shape, dim, dtype)) return mlx_array_new();
  struct lc_node *n = lc_node_alloc(dtype, dim, shape);
  if (!n) return mlx_array_new();
  n->buf = lc_buffer_wrap(data, (size_t)n->size * lc_dtype_size(dtype), dtor, arg);
  if (!n->buf) {
    lc_node_release(n);
    return mlx_array_new();
  }
  n->flags |= LC_NF_CONTIG;
  return lc_api_wrap(n);
}

mlx_array mlx_array_new_data_managed(void *data, const int *shape, int dim, mlx_dtype dtype,
                                     void (*dtor)(void *)) {
  return new_managed("mlx_array_new_data_managed", data, shape, dim, dtype, data, dtor);
}

mlx_array mlx_array_new_data_managed_payload(void *data, const int *shape, int dim,
                                             mlx_dtype dtype, void *payload,
                                             void (*dtor)(void *)) {
  return new_managed("mlx_array_new_data_managed_payload", data, shape, dim, dtype, payload,
                     dtor);
}

int mlx_array_set(mlx_array *arr, const mlx_array src) {
  LC_CHECK_RES("mlx_array_set", arr);
  struct lc_node *n = lc_node_retain(lc_arr(src));
  lc_node_release(lc_arr(*arr));
  arr->ctx = n;
  return 0;
}

static int set_new(const char *fn, mlx_array *arr, mlx_array v) {
  if (!arr) {
    mlx_array_free(v);
    return lc_error("%s: arr is NULL", fn);
  }
  if (!v.ctx) return 1;
  lc_node_release(lc_arr(*arr));
  *arr = v;
  return 0;
}

int mlx_array_set_bool(mlx_array *arr, bool val) {
  return set_new("mlx_array_set_bool", arr, mlx_array_new_bool(val));
}
int mlx_array_set_int(mlx_array *arr, int val) {
  return set_new("mlx_array_set_int", arr, mlx_array_new_int(val));
}
int mlx_array_set_float32(mlx_array *arr, float val) {
  return set_new("mlx_array_set_float32", arr, mlx_array_new_float32(val));
}
int mlx_array_set_float(mlx_array *arr, float val) { return mlx_array_set_float32(arr, val); }
int mlx_array_set_float64(mlx_array *arr, double val) {
  return set_new("mlx_array_set_float64", arr, mlx_array_new_float64(val));
}
int mlx_array_set_double(mlx_array *arr, double val) { return mlx_array_set_float64(arr, val); }
int mlx_array_set_complex(mlx_array *arr, float real_val, float imag_val) {
  return set_new("mlx_array_set_complex", arr, mlx_array_new_complex(real_val, imag_val));
}
int mlx_array_set_data(mlx_array *arr, const void *data, const int *shape, int dim,
                       mlx_dtype dtype) {
  if (check_data_args("mlx_array_set_data", data, shape, dim, dtype)) return 1;
  return set_new("mlx_array_set_data", arr, mlx_array_new_data(data, shape, dim, dtype));
}

/* ---- metadata: empty handles give 0 / NULL (and a report) ---- */

static struct lc_node *meta(const char *fn, mlx_array a) {
  if (!a.ctx) lc_error("%s: empty array", fn);
  return lc_arr(a);
}

size_t mlx_array_itemsize(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_itemsize", arr);
  return n ? lc_dtype_size(n->dtype) : 0;
}
size_t mlx_array_size(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_size", arr);
  return n ? (size_t)n->size : 0;
}
size_t mlx_array_nbytes(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_nbytes", arr);
  return n ? (size_t)n->size * lc_dtype_size(n->dtype) : 0;
}
size_t mlx_array_ndim(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_ndim", arr);
  return n ? (size_t)n->ndim : 0;
}
const int *mlx_array_shape(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_shape", arr);
  return n ? n->shape : NULL;
}
const size_t *mlx_array_strides(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_strides", arr);
  return n ? (const size_t *)n->strides : NULL;
}
int mlx_array_dim(const mlx_array arr, int dim) {
  struct lc_node *n = meta("mlx_array_dim", arr);
  if (!n || lc_axis_check("mlx_array_dim", &dim, n->ndim)) return 0;
  return n->shape[dim];
}
mlx_dtype mlx_array_dtype(const mlx_array arr) {
  struct lc_node *n = meta("mlx_array_dtype", arr);
  return n ? n->dtype : MLX_FLOAT32;
}

/* ---- evaluation ---- */

int mlx_array_eval(mlx_array arr) {
  LC_CHECK_ARR("mlx_array_eval", arr);
  struct lc_node *n = lc_arr(arr);
  return lc_eval(&n, 1);
}

/* Evaluates a vector's arrays for fn; async: lc_eval_async. */
static int eval_vector(const char *fn, const mlx_vector_array outputs, bool async) {
  struct lc_node **nodes;
  size_t n;
  if (lc_api_vector_nodes(fn, outputs, &nodes, &n)) return 1;
  int rc = async ? lc_eval_async(nodes, n) : lc_eval(nodes, n);
  free(nodes);
  return rc;
}

int mlx_eval(const mlx_vector_array outputs) { return eval_vector("mlx_eval", outputs, false); }

/* As eval, but returns once the GPU work is queued (CPU work is done in
 * the call); host reads of the results wait for it. */
int mlx_async_eval(const mlx_vector_array outputs) {
  return eval_vector("mlx_async_eval", outputs, true);
}

/* ---- host access ---- */

/* Evaluates a one-element array and converts its value into *res of type t:
 * exact when dtypes match, otherwise through double. */
static int item(const char *fn, void *res, mlx_dtype t, mlx_array arr) {
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, arr);
  struct lc_node *n = lc_arr(arr);
  if (n->size != 1)
    return lc_error("%s: item() needs an array of size 1, got size %lld", fn, (long long)n->size);
  if (lc_eval(&n, 1)) return 1;
  const void *src = lc_node_data(n);
  if (n->dtype == t)
    memcpy(res, src, lc_dtype_size(t));
  else if (t == MLX_COMPLEX64 && n->dtype != MLX_COMPLEX64)
    *(float _Complex *)res = (float)lc_dtype_load(src, n->dtype);
  else
    lc_dtype_store(res, t, lc_dtype_load(src, n->dtype));
  return 0;
}

#define ITEM(suffix, ctype, dt)                                      \
  int mlx_array_item_##suffix(ctype *res, const mlx_array arr) {     \
    return item("mlx_array_item_" #suffix, res, dt, arr);           \
  }
ITEM(bool, bool, MLX_BOOL)
ITEM(uint8, uint8_t, MLX_UINT8)
ITEM(uint16, uint16_t, MLX_UINT16)
ITEM(uint32, uint32_t, MLX_UINT32)
ITEM(uint64, uint64_t, MLX_UINT64)
ITEM(int8, int8_t, MLX_INT8)
ITEM(int16, int16_t, MLX_INT16)
ITEM(int32, int32_t, MLX_INT32)
ITEM(int64, int64_t, MLX_INT64)
ITEM(float32, float, MLX_FLOAT32)
ITEM(float64, double, MLX_FLOAT64)
ITEM(complex64, mlx_complex64_t, MLX_COMPLEX64)
ITEM(float16, float16_t, MLX_FLOAT16)
ITEM(bfloat16, bfloat16_t, MLX_BFLOAT16)

/* Evaluates arr, makes its data row-major contiguous and returns it. The
 * dtype must match: reinterpreting bits is never what the caller meant. */
static const void *data_ptr(const char *fn, mlx_array arr, mlx_dtype t) {
  if (!arr.ctx) {
    lc_error("%s: empty array", fn);
    return NULL;
  }
  struct lc_node *n = lc_arr(arr);
  if (n->dtype != t) {
    lc_error("%s: array has dtype %s, not %s", fn, lc_dtype_name(n->dtype), lc_dtype_name(t));
    return NULL;
  }
  if (lc_eval(&n, 1) || lc_node_make_contiguous(n)) return NULL;
  return lc_node_data(n);
}

#define DATA(suffix, ctype, dt)                                      \
  const ctype *mlx_array_data_##suffix(const mlx_array arr) {        \
    return data_ptr("mlx_array_data_" #suffix, arr, dt);             \
  }
DATA(bool, bool, MLX_BOOL)
DATA(uint8, uint8_t, MLX_UINT8)
DATA(uint16, uint16_t, MLX_UINT16)
DATA(uint32, uint32_t, MLX_UINT32)
DATA(uint64, uint64_t, MLX_UINT64)
DATA(int8, int8_t, MLX_INT8)
DATA(int16, int16_t, MLX_INT16)
DATA(int32, int32_t, MLX_INT32)
DATA(int64, int64_t, MLX_INT64)
DATA(float32, float, MLX_FLOAT32)
DATA(float64, double, MLX_FLOAT64)
DATA(complex64, mlx_complex64_t, MLX_COMPLEX64)
DATA(float16, float16_t, MLX_FLOAT16)
DATA(bfloat16, bfloat16_t, MLX_BFLOAT16)
