/* Helpers shared by the shape and index families, and TRANSPOSE's rules,
 * which linalg's private MM_PERMUTE view (same params) uses too (not
 * public API). */
#ifndef LC_SHAPE_INTERNAL_H
#define LC_SHAPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

#include "core/copy.h"

/* Whether CONTIGUOUS shares its evaluated input as is (it is row-major
 * contiguous, or column-major and that is allowed) rather than copying;
 * the CPU and GPU evaluators decide alike. Defined in shape_copy.c. */
bool lc_contiguous_shares(const struct lc_node *in, bool allow_col_major);

/* Whether RESHAPE (n) and the bitcast VIEW (n) share their evaluated
 * input: if so n is made that view of it and true returned; false when
 * the bytes must be copied row-major into a fresh buffer instead. The
 * CPU and GPU evaluators decide alike. Defined in shape_views.c and
 * unary.c. */
bool lc_reshape_shares(struct lc_node *n);
bool lc_bitcast_shares(struct lc_node *n);

/* TRANSPOSE's rules (params: the permutation); lc_view_jvp is the jvp of
 * any view whose only differentiable input is input 0. Defined in
 * shape_views.c. */
int lc_transpose_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out);
int lc_view_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
int lc_transpose_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                      struct lc_node **out, int *out_ax);
int lc_transpose_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                       int *shape);

/* RESHAPE's shape rules (shape_reshape_rules.c): params of a reshape whose
 * shape follows its input's, and the output_shape that applies them. */
enum { LC_RS_INFER = 1, LC_RS_SQUEEZE, LC_RS_EXPAND, LC_RS_FLATTEN, LC_RS_UNFLATTEN };
int lc_reshape_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                            int *shape);
/* The RESHAPE of a to (ndim, shape) (a itself when the shapes agree and
 * keep_identity is false) carrying the rule params[0..np) (np == 0: none).
 * Defined in shape_views.c. */
struct lc_node *lc_reshape_rule(struct lc_node *a, int ndim, const int *shape, const int *params,
                                int np, bool keep_identity);

/* ---- builders over normalised slice parameters (transform rules) ----
 * start_step holds start[nd] then step[nd] exactly as the SLICE primitive
 * stores them (lc_slice's normalised form: in-range starts, non-zero steps). */

/* The SLICE of a with those parameters and result shape `shape` (a->ndim
 * entries). Defined in shape_views.c. */
struct lc_node *lc_slice_norm(struct lc_node *a, const int *start_step, const int *shape);

/* src with that slice combined with update (cast to src's dtype; it must
 * have the slice's shape) by mode (enum lc_scatter_mode). Defined in
 * scatter.c. */
struct lc_node *lc_slice_update_norm(struct lc_node *src, struct lc_node *update,
                                     const int *start_step, int mode);

/* Zeros of shape v.shape[:-1] + [n1, n2] whose diagonal `offset` of the
 * last two axes holds v's last axis (its extent must be that diagonal's
 * length). The adjoint of lc_diagonal. Defined in shape_views.c. */
struct lc_node *lc_embed_diagonal(struct lc_node *v, int n1, int n2, int offset);

/* The integers 0..b-1 (int32) shaped [b, 1, ..., 1] with ndim axes, for
 * indexing the batch axis next to index arrays of ndim - 1 axes. */
struct lc_node *lc_batch_iota(int b, int ndim);

#endif
