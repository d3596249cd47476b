/* Helpers for the public API layer (src/api/).
 * The API layer validates arguments, unwraps handles, calls the internal
 * builders and reports failures; it holds no logic of its own.
 * Handle representation: mlx_array.ctx is a struct lc_node* owning one
 * reference (NULL: empty handle). Other handles point at structs defined in
 * src/api/handles.h. */
#ifndef LC_API_H
#define LC_API_H

#include "core/error.h"
#include "core/node.h"
#include "mlx/c/mlx.h"

static inline struct lc_node *lc_arr(mlx_array a) { return (struct lc_node *)a.ctx; }

/* Reports and returns 1 when an array argument is an empty handle. */
#define LC_CHECK_ARR(fn, a)                                                       \
  do {                                                                            \
    if (!(a).ctx) return lc_error("%s: argument '%s' is an empty array", fn, #a); \
  } while (0)

#define LC_CHECK_RES(fn, res)                                                  \
  do {                                                                         \
    if (!(res)) return lc_error("%s: result pointer '%s' is NULL", fn, #res); \
  } while (0)

/* Stores n (consumed) into *res, releasing what res held. n == NULL means
 * the builder failed and already reported: returns 1, res untouched. */
int lc_api_set(mlx_array *res, struct lc_node *n);

/* Wraps a node (consumed) as a new handle. */
static inline mlx_array lc_api_wrap(struct lc_node *n) { return (mlx_array){n}; }

/* Validates a stream argument (empty = default). 0 or 1 after reporting. */
int lc_api_check_stream(const char *fn, mlx_stream s);

/* Normalises axis (negative counts from the end) against ndim; 0 or 1 after
 * reporting "fn: axis 5 is out of bounds for an array of 2 dimensions". */
int lc_api_axis(const char *fn, int *axis, int ndim);

/* Reads the arrays of a vector into a malloc'd array of borrowed node
 * pointers (*out, *n). Every element must be non-empty. */
int lc_api_vector_nodes(const char *fn, mlx_vector_array v, struct lc_node ***out, size_t *n);

#endif
