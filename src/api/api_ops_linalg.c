/* Public matmul-family ops (ops.h): checks, then ops/linalg.h. */
#include <limits.h>

#include "api/api.h"
#include "ops/linalg.h"

#define BINARY(NAME, BUILDER)                                                     \
  int mlx_##NAME(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) { \
    LC_CHECK_RES("mlx_" #NAME, res);                                              \
    LC_CHECK_ARR("mlx_" #NAME, a);                                                \
    LC_CHECK_ARR("mlx_" #NAME, b);                                                \
    if (lc_api_check_stream("mlx_" #NAME, s)) return 1;                          \
    return lc_api_set(res, BUILDER(lc_arr(a), lc_arr(b)));                        \
  }
BINARY(matmul, lc_matmul)
BINARY(inner, lc_inner)
BINARY(outer, lc_outer)

int mlx_addmm(mlx_array *res, const mlx_array c, const mlx_array a, const mlx_array b, float alpha,
              float beta, const mlx_stream s) {
  LC_CHECK_RES("mlx_addmm", res);
  LC_CHECK_ARR("mlx_addmm", c);
  LC_CHECK_ARR("mlx_addmm", a);
  LC_CHECK_ARR("mlx_addmm", b);
  if (lc_api_check_stream("mlx_addmm", s)) return 1;
  return lc_api_set(res, lc_addmm(lc_arr(c), lc_arr(a), lc_arr(b), alpha, beta));
}

int mlx_tensordot(mlx_array *res, const mlx_array a, const mlx_array b, const int *axes_a,
                  size_t axes_a_num, const int *axes_b, size_t axes_b_num, const mlx_stream s) {
  LC_CHECK_RES("mlx_tensordot", res);
  LC_CHECK_ARR("mlx_tensordot", a);
  LC_CHECK_ARR("mlx_tensordot", b);
  if (lc_api_check_stream("mlx_tensordot", s)) return 1;
  if (axes_a_num != axes_b_num)
    return lc_error("mlx_tensordot: axes must have the same size (%zu and %zu)", axes_a_num,
                    axes_b_num);
  if (axes_a_num > INT_MAX || (axes_a_num && (!axes_a || !axes_b)))
    return lc_error("mlx_tensordot: invalid axes arguments");
  return lc_api_set(res, lc_tensordot(lc_arr(a), lc_arr(b), axes_a, axes_b, (int)axes_a_num));
}

int mlx_tensordot_axis(mlx_array *res, const mlx_array a, const mlx_array b, int axis,
                       const mlx_stream s) {
  LC_CHECK_RES("mlx_tensordot_axis", res);
  LC_CHECK_ARR("mlx_tensordot_axis", a);
  LC_CHECK_ARR("mlx_tensordot_axis", b);
  if (lc_api_check_stream("mlx_tensordot_axis", s)) return 1;
  return lc_api_set(res, lc_tensordot_axis(lc_arr(a), lc_arr(b), axis));
}

/* sorted_indices is a performance hint in MLX; results do not depend on it. */
int mlx_gather_mm(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_array lhs_indices,
                  const mlx_array rhs_indices, bool sorted_indices, const mlx_stream s) {
  LC_CHECK_RES("mlx_gather_mm", res);
  LC_CHECK_ARR("mlx_gather_mm", a);
  LC_CHECK_ARR("mlx_gather_mm", b);
  if (lc_api_check_stream("mlx_gather_mm", s)) return 1;
  (void)sorted_indices;
  return lc_api_set(res, lc_gather_mm(lc_arr(a), lc_arr(b), lc_arr(lhs_indices),
                                      lc_arr(rhs_indices)));
}

int mlx_segmented_mm(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_array segments,
                     const mlx_stream s) {
  LC_CHECK_RES("mlx_segmented_mm", res);
  LC_CHECK_ARR("mlx_segmented_mm", a);
  LC_CHECK_ARR("mlx_segmented_mm", b);
  LC_CHECK_ARR("mlx_segmented_mm", segments);
  if (lc_api_check_stream("mlx_segmented_mm", s)) return 1;
  return lc_api_set(res, lc_segmented_mm(lc_arr(a), lc_arr(b), lc_arr(segments)));
}

int mlx_block_masked_mm(mlx_array *res, const mlx_array a, const mlx_array b, int block_size,
                        const mlx_array mask_out, const mlx_array mask_lhs,
                        const mlx_array mask_rhs, const mlx_stream s) {
  LC_CHECK_RES("mlx_block_masked_mm", res);
  LC_CHECK_ARR("mlx_block_masked_mm", a);
  LC_CHECK_ARR("mlx_block_masked_mm", b);
  if (lc_api_check_stream("mlx_block_masked_mm", s)) return 1;
  return lc_api_set(res, lc_block_masked_mm(lc_arr(a), lc_arr(b), block_size, lc_arr(mask_out),
                                            lc_arr(mask_lhs), lc_arr(mask_rhs)));
}
