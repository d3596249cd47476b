/* Public fast ops (mlx/c/fast.h): argument checks, then the builders in
 * ops/fast_*.c. An empty optional array handle means "absent". The Metal
 * custom-kernel functions stay generated stubs ("not implemented"); the
 * CUDA ones are api_fast_cuda_kernel.c. */
#include "api/api.h"
#include "ops/fast.h"

int mlx_fast_rms_norm(mlx_array *res, const mlx_array x, const mlx_array weight, float eps,
                      const mlx_stream s) {
  LC_CHECK_RES("mlx_fast_rms_norm", res);
  LC_CHECK_ARR("mlx_fast_rms_norm", x);
  if (lc_api_check_stream("mlx_fast_rms_norm", s)) return 1;
  return lc_api_set(res, lc_fast_rms_norm(lc_arr(x), lc_arr(weight), eps));
}

int mlx_fast_layer_norm(mlx_array *res, const mlx_array x, const mlx_array weight,
                        const mlx_array bias, float eps, const mlx_stream s) {
  LC_CHECK_RES("mlx_fast_layer_norm", res);
  LC_CHECK_ARR("mlx_fast_layer_norm", x);
  if (lc_api_check_stream("mlx_fast_layer_norm", s)) return 1;
  return lc_api_set(res, lc_fast_layer_norm(lc_arr(x), lc_arr(weight), lc_arr(bias), eps));
}

int mlx_fast_rope(mlx_array *res, const mlx_array x, int dims, bool traditional,
                  mlx_optional_float base, float scale, int offset, const mlx_array freqs,
                  const mlx_stream s) {
  LC_CHECK_RES("mlx_fast_rope", res);
  LC_CHECK_ARR("mlx_fast_rope", x);
  if (lc_api_check_stream("mlx_fast_rope", s)) return 1;
  struct lc_node *off = lc_node_new_scalar(MLX_INT32, offset);
  if (!off) return 1;
  struct lc_node *r = lc_fast_rope(lc_arr(x), dims, traditional, base.has_value, base.value,
                                   scale, off, lc_arr(freqs));
  lc_node_release(off);
  return lc_api_set(res, r);
}

int mlx_fast_rope_dynamic(mlx_array *res, const mlx_array x, int dims, bool traditional,
                          mlx_optional_float base, float scale, const mlx_array offset,
                          const mlx_array freqs, const mlx_stream s) {
  LC_CHECK_RES("mlx_fast_rope_dynamic", res);
  LC_CHECK_ARR("mlx_fast_rope_dynamic", x);
  LC_CHECK_ARR("mlx_fast_rope_dynamic", offset);
  if (lc_api_check_stream("mlx_fast_rope_dynamic", s)) return 1;
  return lc_api_set(res, lc_fast_rope(lc_arr(x), dims, traditional, base.has_value, base.value,
                                      scale, lc_arr(offset), lc_arr(freqs)));
}

int mlx_fast_scaled_dot_product_attention(mlx_array *res, const mlx_array queries,
                                          const mlx_array keys, const mlx_array values,
                                          float scale, const char *mask_mode,
                                          const mlx_array mask_arr, const mlx_array sinks,
                                          const mlx_stream s) {
  const char *fn = "mlx_fast_scaled_dot_product_attention";
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, queries);
  LC_CHECK_ARR(fn, keys);
  LC_CHECK_ARR(fn, values);
  if (lc_api_check_stream(fn, s)) return 1;
  return lc_api_set(res, lc_fast_sdpa(lc_arr(queries), lc_arr(keys), lc_arr(values), scale,
                                      mask_mode, lc_arr(mask_arr), lc_arr(sinks)));
}
