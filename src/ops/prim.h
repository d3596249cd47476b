/* Primitives: the one table that says what every graph operation is.
 *
 * Each primitive is a `struct lc_prim` row defined in its family's file
 * (ops/unary.c, ops/reduce.c, ...) and listed in that family's .def file;
 * ops.def gathers the families into `enum lc_op` and the table `lc_prims`.
 * Adding a primitive = one line in a .def file + one row in its family file.
 *
 * Contracts:
 *  - eval_cpu(n): every input of n is evaluated; computes n's data, setting
 *    buf/strides/offset (lc_node_alloc_data for fresh output, lc_node_set_view
 *    for views). Returns 0, or 1 after reporting through lc_error. Must not
 *    modify inputs (they may be shared), except to take over an input buffer
 *    that lc_prim_can_donate() allows.
 *  - ew (elementwise primitives only): applies the op to n elements, see
 *    lc_ew_kernel. Used both by the eager evaluator and by fused kernels.
 *  - equal(a, b): same op assumed; whether two nodes compute the same thing
 *    given the same inputs. NULL means: params bytes equal.
 *  - vjp/jvp/vmap: transformation rules, NULL where not supported yet.
 *  - Optional slots are marked. Rows are const and shared by all threads. */
#ifndef LC_PRIM_H
#define LC_PRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

enum lc_op {
#define LC_PRIM(id, row) LC_OP_##id,
#include "ops/ops.def"
#undef LC_PRIM
  LC_OP_COUNT
};

/* Primitive flags. */
#define LC_PF_ELEMWISE 1u  /* pointwise: inputs have the output's shape; has ew */
#define LC_PF_VIEW 2u      /* eval may share an input buffer (a copying one uploads itself) */
#define LC_PF_REDUCE 4u    /* reduction over axes */
#define LC_PF_NOCSE 8u     /* never merge two nodes (random, side effects) */
#define LC_PF_BROADCAST 16u /* the broadcast view: fusable as an index map */

/* Elementwise kernel over n elements. out is contiguous, of the node's
 * dtype; in[k] points at input k's first element, whose element stride is
 * is[k] (0 = the same element throughout; any other value allowed).
 * in_dt is the dtype of the op's data inputs (for where: of x and y; the
 * condition is bool). params: the node's params (may be NULL). */
typedef void (*lc_ew_kernel)(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                             const int64_t *is, mlx_dtype in_dt, const void *params);

struct lc_prim {
  const char *name;
  unsigned flags;
  int (*eval_cpu)(struct lc_node *n);
  /* optional: as eval_cpu, for a node on a GPU, with device copies of the
   * inputs current (lc_node_dev_data); may answer LC_EVAL_ON_CPU (nothing
   * done, nothing reported) for inputs it does not handle yet */
  int (*eval_cuda)(struct lc_node *n);
  lc_ew_kernel ew;                     /* LC_PF_ELEMWISE only */
  bool (*equal)(const struct lc_node *a, const struct lc_node *b); /* optional */
  /* Transformation rules (src/transforms/ runs them; NULL: the primitive
   * has no rule, which the transforms report by name). n is the forward
   * node: its inputs, params, shape and dtype are intact while a rule runs
   * (rules only read them). A tuple primitive (ops/tuple.h) has one entry
   * per output in the per-output arrays below; any other has one.
   * Every node a rule returns is a new reference or NULL, NULL meaning a
   * zero of the expected shape and dtype. Rules build their results with
   * the ordinary builders, so the results are differentiable again.
   *
   * vjp: cot[k] is output k's cotangent (its shape and dtype; NULL for an
   *   output without one, at least one is non-NULL). out[j] receives the
   *   cotangent of input argnums[j] (j < nargs; argnums ascending) in that
   *   input's shape and dtype.
   * jvp: tan[k] is input k's tangent (input k's shape and dtype; NULL =
   *   zero, at least one is non-NULL). out[k] receives output k's tangent.
   * vmap: in[k] replaces input k with a batch axis at ax[k], or is input k
   *   itself when ax[k] == -1 (unbatched; at least one input is batched).
   *   out[k] receives output k batched, with its batch axis at out_ax[k]
   *   (or -1 when unbatched).
   * Each returns 0, or 1 after reporting (then out holds nothing). */
  int (*vjp)(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
             struct lc_node **out);
  int (*jvp)(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
  int (*vmap)(struct lc_node *n, struct lc_node *const *in, const int *ax, struct lc_node **out,
              int *out_ax);
  /* Optional, for params that hold one counted reference to an object
   * (custom transforms): called with +1 when params are copied into a new
   * node or program and with -1 when such a copy is freed. All other
   * params are plain data and leave this NULL. */
  void (*params_ref)(const void *params, int delta);
  /* Optional, for params that hold pointers: a hash of what they mean
   * (equal for params that evaluate alike), used where params are keyed by
   * value (CUDA graph signatures). Without it the params' bytes are hashed. */
  uint64_t (*params_hash)(const void *params);
  /* Writes a short description of params for graph dumps (optional). */
  int (*describe)(const struct lc_node *n, char *buf, size_t len);
  /* Shapeless compile (optional; elementwise and broadcast need none): the
   * output shape of a node of this op with these params on inputs `in`,
   * written to shape[0..ndim) (ndim is the traced output's rank, which
   * never changes). 0, or 1 without reporting when it cannot be inferred;
   * compile then re-traces for the new input shapes. */
  int (*output_shape)(const void *params, int nin, struct lc_node *const *in, int ndim,
                      int *shape);
  /* Shapeless compile (optional): the shape (rank ndim, the traced one)
   * that input k must have given the others, for an input that was a
   * broadcast in the trace. bcast[j] != 0 marks inputs that are such
   * broadcasts' sources (their shapes are not the inputs'); in[k] is one.
   * A primitive has this slot only where an invariant of its own fixes the
   * shape (scatter_axis: updates have the indices' shape; matmul: c has
   * the product's). 0, or 1 without
   * reporting when the shape cannot be inferred. */
  int (*input_shape)(const void *params, int nin, struct lc_node *const *in, const char *bcast,
                     int k, int ndim, int *shape);
  /* Shapeless compile, tuple primitives (optional; they have no
   * output_shape): builds the primitive again with these params over `in`
   * (the traced dtypes and ranks), giving new references to its getters
   * in outs, whose shapes and byte offsets follow in's shapes. 0, or 1
   * (possibly after reporting: replay mutes errors and declines). */
  int (*tuple_build)(const void *params, int nin, struct lc_node *const *in,
                     struct lc_node **outs);
};

#define LC_EVAL_ON_CPU 2

/* eval_cuda slots: the function in CUDA builds, NULL otherwise. */
#ifdef LACE_CUDA
#define LC_CUDA(fn) fn
/* The CUDA evaluators (gpu/cuda/eval_*.c). */
int lc_cuda_eval_elementwise(struct lc_node *n);
int lc_cuda_eval_reduce(struct lc_node *n);
int lc_cuda_eval_softmax(struct lc_node *n);
int lc_cuda_eval_matmul(struct lc_node *n);
int lc_cuda_eval_matmul_group(struct lc_node *n);
int lc_cuda_eval_fused(struct lc_node *n);
/* index and copy family (gpu/cuda/eval_index.c) */
int lc_cuda_eval_copy(struct lc_node *n);
int lc_cuda_eval_reshape(struct lc_node *n);
int lc_cuda_eval_bitcast(struct lc_node *n);
int lc_cuda_eval_concatenate(struct lc_node *n);
int lc_cuda_eval_remap(struct lc_node *n);
int lc_cuda_eval_gather(struct lc_node *n);
int lc_cuda_eval_gather_axis(struct lc_node *n);
int lc_cuda_eval_dynamic_slice(struct lc_node *n);
int lc_cuda_eval_scatter(struct lc_node *n);
int lc_cuda_eval_scatter_axis(struct lc_node *n);
int lc_cuda_eval_slice_update(struct lc_node *n);
int lc_cuda_eval_dynamic_slice_update(struct lc_node *n);
int lc_cuda_eval_arange(struct lc_node *n);
/* fast family (gpu/cuda/eval_fast.c) */
int lc_cuda_eval_rms_norm(struct lc_node *n);
int lc_cuda_eval_layer_norm(struct lc_node *n);
int lc_cuda_eval_rope(struct lc_node *n);
int lc_cuda_eval_sdpa(struct lc_node *n);
/* random family (gpu/cuda/eval_random.c; random bits too) */
int lc_cuda_eval_random_dist(struct lc_node *n);
int lc_cuda_eval_random_cnormal(struct lc_node *n);
int lc_cuda_eval_random_categorical(struct lc_node *n);
int lc_cuda_eval_random_argsort(struct lc_node *n);
int lc_cuda_eval_random_take(struct lc_node *n);
/* quantized matmul (gpu/cuda/eval_quant.c) */
int lc_cuda_eval_quantized_matmul(struct lc_node *n);
/* custom kernels (gpu/cuda/eval_custom_kernel.c) */
int lc_cuda_eval_custom_kernel(struct lc_node *n);
/* arg reductions (eval_reduce.c), scans (eval_scan.c), sorts (eval_sort.c), random bits (eval_random.c) */
int lc_cuda_eval_arg_reduce(struct lc_node *n);
int lc_cuda_eval_scan(struct lc_node *n);
int lc_cuda_eval_sort(struct lc_node *n);
int lc_cuda_eval_random_bits(struct lc_node *n);
/* convolution (gpu/cuda/eval_conv.c) and FFT (gpu/cuda/eval_fft.c) */
int lc_cuda_eval_conv(struct lc_node *n);
int lc_cuda_eval_fft(struct lc_node *n);
/* divmod, creation, diag, hadamard, masked_scatter, size (gpu/cuda/eval_misc.c) */
int lc_cuda_eval_divmod(struct lc_node *n);
int lc_cuda_eval_linspace(struct lc_node *n);
int lc_cuda_eval_tri(struct lc_node *n);
int lc_cuda_eval_tril(struct lc_node *n);
int lc_cuda_eval_diag(struct lc_node *n);
int lc_cuda_eval_hadamard(struct lc_node *n);
int lc_cuda_eval_masked_scatter(struct lc_node *n);
int lc_cuda_eval_number_of_elements(struct lc_node *n);
#else
#define LC_CUDA(fn) NULL
#endif

extern const struct lc_prim *const lc_prims[LC_OP_COUNT];

static inline const struct lc_prim *lc_prim_of(const struct lc_node *n) { return lc_prims[n->op]; }

/* Whether n may take over input k's buffer for its output: the input node
 * and its buffer are referenced only by n, the buffer is lace's, the input
 * is contiguous with the output's size and itemsize. */
bool lc_prim_can_donate(const struct lc_node *n, int k);
/* Makes input k's buffer n's own (row-major, offset 0); k must pass
 * lc_prim_can_donate. */
void lc_prim_take_buffer(struct lc_node *n, int k);
/* Gives n its output buffer: the first input's that lc_prim_can_donate
 * allows, else a fresh one. 0, or 1 after reporting. */
int lc_prim_donate_or_alloc(struct lc_node *n);

/* output_shape for primitives whose output has input 0's shape: that shape
 * (1 when the rank differs or input 0 is empty, which builders treat apart). */
int lc_prim_shape_of_input0(const void *params, int nin, struct lc_node *const *in, int ndim,
                            int *shape);

/* input_shape for primitives that broadcast all their inputs to one shape
 * (elementwise-like tuples): the broadcast of every input's shape. */
int lc_prim_input_bcast_all(const void *params, int nin, struct lc_node *const *in,
                            const char *bcast, int k, int ndim, int *shape);

#define LC_PRIM(id, row) extern const struct lc_prim row;
#include "ops/ops.def"
#undef LC_PRIM

#endif
