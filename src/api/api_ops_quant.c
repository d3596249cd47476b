/* Public quantization ops (ops.h), "affine" mode only: checks, then
 * ops/quant.h; the matmuls dequantize and use the matmul family. */
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/quant.h"
#include "ops/shape.h"

/* Mode, group size and bits (MLX defaults for affine: 64, 4). */
static int quant_params(const char *fn, const char *mode, mlx_optional_int gs, mlx_optional_int bits,
                        int *g, int *b) {
  if (mode && strcmp(mode, "affine")) {
    if (!strcmp(mode, "mxfp4") || !strcmp(mode, "mxfp8") || !strcmp(mode, "nvfp4"))
      return lc_error("%s: unsupported mode '%s' (only 'affine' is implemented)", fn, mode);
    return lc_error("%s: invalid quantization mode '%s'", fn, mode);
  }
  *g = gs.has_value ? gs.value : 64;
  *b = bits.has_value ? bits.value : 4;
  if (*g != 32 && *g != 64 && *g != 128)
    return lc_error("%s: the requested group size %d is not supported; the supported group "
                    "sizes are 32, 64 and 128", fn, *g);
  if (*b < 2 || *b > 8 || *b == 7)
    return lc_error("%s: the requested number of bits %d is not supported; the supported bits "
                    "are 2, 3, 4, 5, 6 and 8", fn, *b);
  return 0;
}

int mlx_quantize(mlx_vector_array *res, const mlx_array w, mlx_optional_int group_size,
                 mlx_optional_int bits, const char *mode, const mlx_array global_scale,
                 const mlx_stream s) {
  const char *fn = "mlx_quantize";
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, w);
  if (lc_api_check_stream(fn, s)) return 1;
  int g, b;
  if (quant_params(fn, mode, group_size, bits, &g, &b)) return 1;
  if (global_scale.ctx) return lc_error("%s: global_scale is not used by the affine mode", fn);
  struct lc_node *x = lc_arr(w);
  if (!lc_dtype_is_float(x->dtype))
    return lc_error("%s: only real floating types can be quantized but w has type %s", fn,
                    lc_dtype_name(x->dtype));
  if (x->ndim < 2)
    return lc_error("%s: the matrix to be quantized must have at least 2 dimensions but it has "
                    "%d", fn, x->ndim);
  if (x->shape[x->ndim - 1] % g)
    return lc_error("%s: the last dimension of the matrix (%d) must be divisible by the group "
                    "size %d", fn, x->shape[x->ndim - 1], g);
  struct lc_node *out[3];
  if (lc_quantize(x, g, b, out)) return 1;
  int rc = lc_vec_array_assign(res, out, 3);
  for (int i = 0; i < 3; i++) lc_node_release(out[i]);
  return rc;
}

static struct lc_node *dequant(const char *fn, mlx_array w, mlx_array scales, mlx_array biases,
                               mlx_optional_int gs, mlx_optional_int bits, const char *mode,
                               int dtype) {
  int g, b;
  if (!w.ctx || !scales.ctx) {
    lc_error("%s: argument '%s' is an empty array", fn, w.ctx ? "scales" : "w");
    return NULL;
  }
  if (quant_params(fn, mode, gs, bits, &g, &b)) return NULL;
  if (!biases.ctx) {
    lc_error("%s: biases must be provided for the affine mode", fn);
    return NULL;
  }
  return lc_dequantize(fn, lc_arr(w), lc_arr(scales), lc_arr(biases), g, b, dtype);
}

int mlx_dequantize(mlx_array *res, const mlx_array w, const mlx_array scales,
                   const mlx_array biases, mlx_optional_int group_size, mlx_optional_int bits,
                   const char *mode, const mlx_array global_scale, mlx_optional_dtype dtype,
                   const mlx_stream s) {
  const char *fn = "mlx_dequantize";
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s)) return 1;
  if (global_scale.ctx) return lc_error("%s: global_scale is not used by the affine mode", fn);
  if (dtype.has_value && !lc_dtype_valid(dtype.value))
    return lc_error("%s: invalid dtype %d", fn, (int)dtype.value);
  return lc_api_set(res, dequant(fn, w, scales, biases, group_size, bits, mode,
                                 dtype.has_value ? (int)dtype.value : -1));
}

/* The dequantized weight in x's dtype, transposed over its last two axes
 * when `transpose` (w holds (..., N, K): x @ w^T). */
static struct lc_node *weight_for(const char *fn, mlx_array x, mlx_array w, mlx_array scales,
                                  mlx_array biases, bool transpose, mlx_optional_int gs,
                                  mlx_optional_int bits, const char *mode) {
  if (!x.ctx) {
    lc_error("%s: argument 'x' is an empty array", fn);
    return NULL;
  }
  if (!lc_dtype_is_float(lc_arr(x)->dtype)) {
    lc_error("%s: x must be floating point, got %s", fn, lc_dtype_name(lc_arr(x)->dtype));
    return NULL;
  }
  struct lc_node *W = dequant(fn, w, scales, biases, gs, bits, mode, (int)lc_arr(x)->dtype);
  if (!W || !transpose) return W;
  if (W->ndim < 2) {
    lc_node_release(W);
    lc_error("%s: the quantized matrix must have at least 2 dimensions", fn);
    return NULL;
  }
  struct lc_node *t = lc_swapaxes(W, -1, -2);
  lc_node_release(W);
  return t;
}

int mlx_quantized_matmul(mlx_array *res, const mlx_array x, const mlx_array w,
                         const mlx_array scales, const mlx_array biases, bool transpose,
                         mlx_optional_int group_size, mlx_optional_int bits, const char *mode,
                         const mlx_stream s) {
  const char *fn = "mlx_quantized_matmul";
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s)) return 1;
  struct lc_node *W = weight_for(fn, x, w, scales, biases, transpose, group_size, bits, mode);
  if (!W) return 1;
  /* the arguments passed weight_for's checks: on a GPU, one node (the
   * decomposition W stands for is dropped unevaluated) */
  struct lc_node *r = NULL;
  int g = group_size.has_value ? group_size.value : 64, b = bits.has_value ? bits.value : 4;
  int rc = lc_quantized_matmul_try(lc_arr(x), lc_arr(w), lc_arr(scales), lc_arr(biases),
                                   transpose, g, b, &r);
  if (rc < 0) r = lc_matmul(lc_arr(x), W);
  lc_node_release(W);
  if (rc > 0) return 1;
  return lc_api_set(res, r);
}

int mlx_gather_qmm(mlx_array *res, const mlx_array x, const mlx_array w, const mlx_array scales,
                   const mlx_array biases, const mlx_array lhs_indices,
                   const mlx_array rhs_indices, bool transpose, mlx_optional_int group_size,
                   mlx_optional_int bits, const char *mode, bool sorted_indices,
                   const mlx_stream s) {
  const char *fn = "mlx_gather_qmm";
  (void)sorted_indices; /* a performance hint in MLX */
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s)) return 1;
  struct lc_node *W = weight_for(fn, x, w, scales, biases, transpose, group_size, bits, mode);
  if (!W) return 1;
  struct lc_node *r = lc_gather_mm(lc_arr(x), W, lc_arr(lhs_indices), lc_arr(rhs_indices));
  lc_node_release(W);
  return lc_api_set(res, r);
}

int mlx_qqmm(mlx_array *res, const mlx_array x, const mlx_array w, const mlx_array w_scales,
             mlx_optional_int group_size, mlx_optional_int bits, const char *mode,
             const mlx_array global_scale_x, const mlx_array global_scale_w,
             const mlx_stream s) {
  (void)x, (void)w, (void)w_scales, (void)group_size, (void)bits, (void)global_scale_x,
      (void)global_scale_w, (void)s;
  LC_CHECK_RES("mlx_qqmm", res);
  return lc_error("mlx_qqmm: unsupported mode '%s' (qqmm needs the floating-point "
                  "quantization modes, which lace does not implement)", mode ? mode : "(null)");
}
