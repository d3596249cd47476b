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
/* For calls without a stream argument that build nodes (a compiled
 * function's replay): nodes go to the default device. 0 or 1 after
 * reporting (a GPU default without the GPU). */
int lc_api_use_default_device(const char *fn);
/* This thread's default device and stream as one number (compile's cache
 * key: a function called on another default stream is traced again). */
uint64_t lc_api_default_stream_key(void);

/* Reads the arrays of a vector into a malloc'd array of borrowed node
 * pointers (*out, *n). Every element must be non-empty. */
int lc_api_vector_nodes(const char *fn, mlx_vector_array v, struct lc_node ***out, size_t *n);

/* Lists of per-dimension values (shapes, axes, strides, ...) have at most
 * LC_API_MAX_DIMS entries, which bounds the stack arrays sized by them. */
#define LC_API_MAX_DIMS 4096

/* Checks a (pointer, count) list argument: non-NULL when n > 0, n <= max.
 * 0, or 1 after reporting. */
int lc_api_check_list_max(const char *fn, const char *what, const void *p, size_t n, size_t max);
static inline int lc_api_check_list(const char *fn, const char *what, const void *p, size_t n) {
  return lc_api_check_list_max(fn, what, p, n, LC_API_MAX_DIMS);
}

/* The common start of a one-array op: res non-NULL, a non-empty, s valid;
 * *x = a's node. 0, or 1 after reporting. */
int lc_api_prologue(const char *fn, mlx_array *res, mlx_array a, mlx_stream s, struct lc_node **x);

/* The same checks as a statement, for functions that read `s` and `a`. */
#define LC_API_PROLOGUE(fn, res, a) \
  LC_CHECK_RES(fn, res);            \
  LC_CHECK_ARR(fn, a);              \
  if (lc_api_check_stream(fn, s)) return 1

#endif
