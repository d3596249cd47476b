/* Sorting along an axis: sort, argsort, partition, argpartition, topk.
 *
 * Order: ascending; NaN sorts last (complex: by real part, then imaginary
 * part, NaN last); equal elements keep their original order (the sort is
 * stable, and argsort/argpartition break ties by index, so results are
 * deterministic). Index outputs are uint32.
 * partition(kth): element kth is where a full sort would put it, the ones
 * before are not greater and the ones after not smaller. topk(k): the k
 * largest elements along the axis, returned in ascending order (MLX leaves
 * the order unspecified); k == extent returns the input itself.
 * axis == LC_SORT_FLAT sorts the flattened array (row-major), giving a 1-D
 * output, as mlx_sort/mlx_argsort/... without an axis do.
 * One SORT primitive (params: {mode, axis or -1 for flat, kth or k}). */
#ifndef LC_SORT_H
#define LC_SORT_H

#include "core/node.h"

#define LC_SORT_FLAT (-0x7fffffff - 1)

struct lc_node *lc_sort(struct lc_node *a, int axis);
struct lc_node *lc_argsort(struct lc_node *a, int axis);
struct lc_node *lc_partition(struct lc_node *a, int kth, int axis);
struct lc_node *lc_argpartition(struct lc_node *a, int kth, int axis);
struct lc_node *lc_topk(struct lc_node *a, int k, int axis);

#endif
