/* Shared by the compile tests: the node behind a handle, and calling a
 * closure for its first output. */
#ifndef LC_TEST_COMPILE_UTIL_H
#define LC_TEST_COMPILE_UTIL_H

#include "test.h"

#include "core/node.h"

static struct lc_node *node(mlx_array a) { return (struct lc_node *)a.ctx; }

/* f applied to args[0..n): its first output (a new handle; empty on
 * failure), with the status in *rc_out when given. */
static mlx_array call1(mlx_closure f, int n, const mlx_array *args, int *rc_out) {
  mlx_vector_array in = mlx_vector_array_new_data(args, (size_t)n), out = mlx_vector_array_new();
  int rc = mlx_closure_apply(&out, f, in);
  mlx_array r = mlx_array_new();
  if (!rc) rc = mlx_vector_array_get(&r, out, 0);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  if (rc_out) *rc_out = rc;
  return r;
}

#endif
