/* Indexing builders: gather / take and scatter / slice updates.
 *
 * Builders borrow their node arguments and return a new reference, or NULL
 * after reporting. Index arrays may have any integer dtype (not bool, not
 * floating). A negative index i along an axis of extent n means i + n, as in
 * MLX. Indices still out of range after that never touch memory outside the
 * array: gathers clamp them into range, scatters drop the update (MLX leaves
 * both undefined). Dynamic slice starts clamp so the slice fits. */
#ifndef LC_INDEX_H
#define LC_INDEX_H

#include "core/node.h"

enum lc_scatter_mode {
  LC_SCATTER_NONE,
  LC_SCATTER_ADD,
  LC_SCATTER_PROD,
  LC_SCATTER_MAX,
  LC_SCATTER_MIN
};

/* MLX gather: the index arrays (broadcast together, shape I) select, along
 * axes[k], the start of a slice of extent slice_sizes (a->ndim entries);
 * the result has shape I + slice_sizes. */
struct lc_node *lc_gather(struct lc_node *a, int nidx, struct lc_node *const *idx, const int *axes,
                          const int *slice_sizes);
/* take along axis: shape a.shape[:axis] + idx.shape + a.shape[axis+1:]. */
struct lc_node *lc_take(struct lc_node *a, struct lc_node *idx, int axis);
/* take of the flattened a. */
struct lc_node *lc_take_flat(struct lc_node *a, struct lc_node *idx);
/* numpy take_along_axis (idx broadcast against a except along axis). */
struct lc_node *lc_take_along_axis(struct lc_node *a, struct lc_node *idx, int axis);
/* put_along_axis (NONE) / scatter_add_axis (ADD). */
struct lc_node *lc_scatter_axis(struct lc_node *a, struct lc_node *idx, struct lc_node *values,
                                int axis, enum lc_scatter_mode mode);
/* MLX scatter: updates has shape I + slice (a->ndim dims, each <= a's). */
struct lc_node *lc_scatter(struct lc_node *a, int nidx, struct lc_node *const *idx,
                           struct lc_node *updates, const int *axes, enum lc_scatter_mode mode);
/* src with the slice (start/stop/step as lc_slice) combined with update
 * (broadcast to the slice's shape). */
struct lc_node *lc_slice_update(struct lc_node *src, struct lc_node *update, const int *start,
                                const int *stop, const int *step, enum lc_scatter_mode mode);
/* Slice of extent slice_size starting at start[k] (a 0-d or 1-d integer
 * array) along axes[k], 0 elsewhere. */
struct lc_node *lc_slice_dynamic(struct lc_node *a, struct lc_node *start, int naxes,
                                 const int *axes, const int *slice_size);
struct lc_node *lc_slice_update_dynamic(struct lc_node *src, struct lc_node *update,
                                        struct lc_node *start, int naxes, const int *axes);
/* MLX masked_scatter: mask (bool) matches a's leading axes; the masked
 * positions take the values' elements in row-major order. */
struct lc_node *lc_masked_scatter(struct lc_node *a, struct lc_node *mask, struct lc_node *values);

#endif
