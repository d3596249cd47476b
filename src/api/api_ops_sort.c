/* Public sorting ops: argument checks, then the builders. Variants without
 * an axis work on the flattened array. */
#include "api/api.h"
#include "ops/sort.h"


#define CHECKED(FN, CALL)                                      \
  struct lc_node *x = NULL;                                    \
  if (lc_api_prologue(FN, res, a, s, &x)) return 1;                   \
  return lc_api_set(res, CALL)

#define CHECKED_AXIS(FN, CALL)                                                  \
  struct lc_node *x = NULL;                                    \
  if (lc_api_prologue(FN, res, a, s, &x) || lc_axis_check(FN, &axis, x->ndim)) return 1; \
  return lc_api_set(res, CALL)

int mlx_sort(mlx_array *res, const mlx_array a, const mlx_stream s) {
  CHECKED("mlx_sort", lc_sort(x, LC_SORT_FLAT));
}
int mlx_sort_axis(mlx_array *res, const mlx_array a, int axis, const mlx_stream s) {
  CHECKED_AXIS("mlx_sort_axis", lc_sort(x, axis));
}
int mlx_argsort(mlx_array *res, const mlx_array a, const mlx_stream s) {
  CHECKED("mlx_argsort", lc_argsort(x, LC_SORT_FLAT));
}
int mlx_argsort_axis(mlx_array *res, const mlx_array a, int axis, const mlx_stream s) {
  CHECKED_AXIS("mlx_argsort_axis", lc_argsort(x, axis));
}
int mlx_partition(mlx_array *res, const mlx_array a, int kth, const mlx_stream s) {
  CHECKED("mlx_partition", lc_partition(x, kth, LC_SORT_FLAT));
}
int mlx_partition_axis(mlx_array *res, const mlx_array a, int kth, int axis,
                       const mlx_stream s) {
  CHECKED_AXIS("mlx_partition_axis", lc_partition(x, kth, axis));
}
int mlx_argpartition(mlx_array *res, const mlx_array a, int kth, const mlx_stream s) {
  CHECKED("mlx_argpartition", lc_argpartition(x, kth, LC_SORT_FLAT));
}
int mlx_argpartition_axis(mlx_array *res, const mlx_array a, int kth, int axis,
                          const mlx_stream s) {
  CHECKED_AXIS("mlx_argpartition_axis", lc_argpartition(x, kth, axis));
}
int mlx_topk(mlx_array *res, const mlx_array a, int k, const mlx_stream s) {
  CHECKED("mlx_topk", lc_topk(x, k, LC_SORT_FLAT));
}
int mlx_topk_axis(mlx_array *res, const mlx_array a, int k, int axis, const mlx_stream s) {
  CHECKED_AXIS("mlx_topk_axis", lc_topk(x, k, axis));
}
