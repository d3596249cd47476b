/* The array node: one array of the lazy graph.
 *
 * Ownership: nodes are refcounted (lc_node_retain / lc_node_release); an
 * mlx_array handle owns one reference. A node owns one reference to each of
 * its inputs and to its buffer. Releasing walks an explicit worklist, so
 * dropping a chain of any length never recurses.
 *
 * Invariants:
 *  - shape has ndim entries >= 0; size is their product (1 for ndim 0);
 *    !lc_shape_too_large(ndim, shape), so sizes and strides never overflow.
 *  - buf != NULL  <=>  the node is evaluated; then element (i0..ik) lives at
 *    data(buf) + (offset + sum i_j * strides[j]) * itemsize.
 *  - op == LC_OP_NONE  =>  buf != NULL (leaves are born evaluated; evaluated
 *    nodes are detached: inputs and params dropped).
 *  - params is plain old data, compared bytewise for equivalence (CSE).
 *  - Once a node is reachable from more than one thread it is only read,
 *    except for refcounts (atomic). Evaluation mutates only nodes that the
 *    evaluating thread's graph alone reaches, or that are already evaluated
 *    (never touched). */
#ifndef LC_NODE_H
#define LC_NODE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buffer.h"
#include "core/dtype.h"

/* Node flags. */
#define LC_NF_CONTIG 1u /* evaluated, row-major contiguous from offset */
/* Depends on the inputs of a transform's trace: set on placeholders and
 * tracers, inherited by every node built on a flagged input, cleared when
 * the node is evaluated and detached. Meaningful only while this thread is
 * tracing (lc_tracing()): a flag that outlived its trace is stale. */
#define LC_NF_TRACED 2u

struct lc_node {
  atomic_int refs;
  int op; /* enum lc_op (ops/prim.h) */
  mlx_dtype dtype;
  int ndim;
  int64_t size;
  int *shape;       /* ndim entries, stored after the struct */
  int64_t *strides; /* ndim entries, element units; valid when buf != NULL */
  int64_t offset;   /* element units */
  struct lc_buffer *buf;
  unsigned flags;
  int dev; /* where it is computed: LC_DEV_CPU or a GPU index (unevaluated nodes) */
  int stream; /* the mlx stream index it was built for (on a GPU: its slot, gpu/gpu.h) */
  int nin;
  struct lc_node **in;
  void *params;
  size_t params_size;
};

#define LC_DEV_CPU (-1)
/* The device new lazy nodes of this thread are computed on (set by the API
 * from each call's stream: LC_DEV_CPU or a GPU index). */
void lc_set_build_device(int dev);
int lc_build_device(void);
/* Likewise the mlx stream index of the call (0: the device's default). */
void lc_set_build_stream(int index);
int lc_build_stream(void);

/* A node with the given metadata and nothing else (op NONE, no buffer,
 * refs 1). Shape entries must be >= 0. NULL (reported) on failure. */
struct lc_node *lc_node_alloc(mlx_dtype dtype, int ndim, const int *shape);

/* A lazy node computing primitive `op` of `in` (retained) with a copy of
 * params. NULL (reported) on failure; the inputs are untouched then. */
struct lc_node *lc_node_new_op(int op, mlx_dtype dtype, int ndim, const int *shape, int nin,
                               struct lc_node *const *in, const void *params, size_t params_size);

/* An evaluated node holding a copy of `data` (row-major, size elements). */
struct lc_node *lc_node_new_data(mlx_dtype dtype, int ndim, const int *shape, const void *data);

/* A 0-d evaluated node of the given dtype holding `v` (converted). */
struct lc_node *lc_node_new_scalar(mlx_dtype dtype, double v);

struct lc_node *lc_node_retain(struct lc_node *n);
void lc_node_release(struct lc_node *n); /* NULL is fine */

/* Gives n a fresh contiguous buffer for its data (row-major strides,
 * offset 0, LC_NF_CONTIG). 0, or 1 after reporting. */
int lc_node_alloc_data(struct lc_node *n);

/* The element strides of a's data seen through its numpy broadcast to
 * rank ndim (>= a->ndim): new leading dims and extents of 1 get 0. */
void lc_node_broadcast_strides(const struct lc_node *a, int ndim, int64_t *strides);

/* Makes n a view of src's buffer with the given strides and offset. */
void lc_node_set_view(struct lc_node *n, const struct lc_node *src, const int64_t *strides,
                      int64_t offset);

/* Row-major strides for shape, into out. */
void lc_shape_strides(int ndim, const int *shape, int64_t *out);

/* True when the evaluated node's elements are row-major contiguous
 * (dimensions of extent 1 are ignored). Also recomputes LC_NF_CONTIG. */
bool lc_node_is_contiguous(struct lc_node *n);

/* Pointer to element 0 (offset applied) in host memory. n must be
 * evaluated. A buffer only on a GPU is copied back first; NULL (reported)
 * only when that copy fails. */
static inline void *lc_node_data(const struct lc_node *n) {
  if (lc_buffer_on_host(n->buf)) return NULL;
  return (char *)n->buf->data + n->offset * (int64_t)lc_dtype_size(n->dtype);
}

/* Pointer to element 0 in GPU memory: the buffer's device copy must be
 * current (lc_buffer_to_device). */
static inline void *lc_node_dev_data(const struct lc_node *n) {
  return (char *)n->buf->dev_data + n->offset * (int64_t)lc_dtype_size(n->dtype);
}

/* Replaces an evaluated node's data by a row-major contiguous copy if it is
 * not already contiguous. 0, or 1 after reporting. */
int lc_node_make_contiguous(struct lc_node *n);

/* Copies an evaluated node's elements, row-major, into dst (size*itemsize).
 * 0, or 1 after reporting. */
int lc_node_copy_out(const struct lc_node *n, void *dst);

/* Drops inputs and params of an evaluated node (MLX's detach). */
void lc_node_detach(struct lc_node *n);

/* Chaining builders: op over arguments that are consumed (released
 * after the call); a NULL argument (a failure already reported) gives NULL
 * without calling op. */
static inline struct lc_node *lc_take1(struct lc_node *(*op)(struct lc_node *),
                                       struct lc_node *a) {
  struct lc_node *r = a ? op(a) : NULL;
  lc_node_release(a);
  return r;
}
static inline struct lc_node *lc_take2(struct lc_node *(*op)(struct lc_node *, struct lc_node *),
                                       struct lc_node *a, struct lc_node *b) {
  struct lc_node *r = a && b ? op(a, b) : NULL;
  lc_node_release(a);
  lc_node_release(b);
  return r;
}

/* Shape helpers. */
/* A user-given shape: ndim >= 0, shape non-NULL when ndim > 0, no negative
 * dimension. 0, or 1 after reporting "fn: ...". */
int lc_shape_check(const char *fn, int ndim, const int *shape);
/* Normalises *axis (negative counts from the end) against ndim. 0, or 1
 * after reporting "fn: axis 5 is out of bounds for an array with 2 dimensions". */
int lc_axis_check(const char *fn, int *axis, int ndim);
/* The number of elements; INT64_MAX when the product overflows. */
int64_t lc_shape_size(int ndim, const int *shape);
/* Shapes of nodes span at most LC_MAX_ELEMS elements, dimensions of extent 0
 * counted as 1 (what row-major strides reach), so that sizes, strides and
 * byte counts of every dtype fit int64_t. lc_node_alloc rejects larger ones. */
#define LC_MAX_ELEMS_LOG2 56
#define LC_MAX_ELEMS ((int64_t)1 << LC_MAX_ELEMS_LOG2)
bool lc_shape_too_large(int ndim, const int *shape);
bool lc_shape_equal(int na, const int *a, int nb, const int *b);
/* Formats "[2, 3]" into buf. Returns buf. */
char *lc_shape_str(int ndim, const int *shape, char *buf, int len);

#endif
