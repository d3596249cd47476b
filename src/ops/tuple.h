/* Multi-output primitives.
 * A primitive with k outputs is one "tuple" node whose data is a single
 * uint8 buffer holding the k outputs back to back (each contiguous, starting
 * at a 64-byte aligned offset), plus k TUPLE_GET nodes that view it. The
 * tuple's eval_cpu fills the buffer; lc_tuple_layout gives the offsets. */
#ifndef LC_TUPLE_H
#define LC_TUPLE_H

#include "core/node.h"

/* The most outputs a primitive's tuple_build slot may give (ops/prim.h). */
#define LC_TUPLE_MAXOUT 8

/* Byte offsets of outputs with the given byte sizes; returns the total. */
int64_t lc_tuple_layout(int nout, const int64_t *nbytes, int64_t *offsets);

/* The uint8 shape of a tuple of `total` bytes (lc_tuple_layout's): one
 * dimension while an int32 extent holds it, else (total / 64, 64). Its
 * ndim, or 0 when total is too large for either. */
int lc_tuple_shape(int64_t total, int *shape);

/* Builds the tuple node for primitive `op` and its nout getters (new
 * references in outs). Output k has dtypes[k], ndims[k], shapes[k].
 * 0, or 1 after reporting (nothing is left allocated). */
int lc_tuple_new(int op, int nin, struct lc_node *const *in, const void *params,
                 size_t params_size, int nout, const mlx_dtype *dtypes, const int *ndims,
                 const int *const *shapes, struct lc_node **outs);

/* TUPLE_GET's params: output `index` of `nout`, at byte_offset in the
 * tuple's buffer (lc_tuple_layout). */
struct lc_tuple_get_params {
  int64_t byte_offset;
  int32_t index, nout;
};

/* Which output (0..*nout) of its tuple a TUPLE_GET node reads. */
int lc_tuple_index(const struct lc_node *getter, int *nout);

/* A TUPLE_GET for output k (of nout) of `tuple` whose data is src's (a
 * view of src, the tuple itself holding no data): for primitives whose
 * outputs are computed by other nodes (custom transforms). */
struct lc_node *lc_tuple_get_view(struct lc_node *tuple, struct lc_node *src, int k, int nout);

/* Output k's data inside an evaluated tuple node. */
void *lc_tuple_data(const struct lc_node *tuple, int nout, const int64_t *nbytes, int k);

#endif
