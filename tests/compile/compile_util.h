/* Shared by the compile tests: the node behind a handle, and calling a
 * closure for its first output. */
#ifndef LC_TEST_COMPILE_UTIL_H
#define LC_TEST_COMPILE_UTIL_H

#include <stdlib.h>
#include <string.h>

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

/* Whether a and b (evaluated here) have the same dtype, size and bytes. */
static bool test_same_bits(mlx_array a, mlx_array b) {
  if (mlx_array_eval(a) || mlx_array_eval(b)) return false;
  if (mlx_array_dtype(a) != mlx_array_dtype(b) || mlx_array_ndim(a) != mlx_array_ndim(b) ||
      mlx_array_size(a) != mlx_array_size(b))
    return false;
  size_t isz = mlx_dtype_size(mlx_array_dtype(a)), n = mlx_array_size(a);
  char *pa = malloc(n * isz + 1), *pb = malloc(n * isz + 1);
  bool same = pa && pb;
  if (same) {
    lc_node_copy_out(node(a), pa);
    lc_node_copy_out(node(b), pb);
    same = memcmp(pa, pb, n * isz) == 0;
  }
  free(pa);
  free(pb);
  return same;
}

/* Element k of a closure's argument vector (a new handle). */
static mlx_array test_vec_get(const mlx_vector_array in, size_t k) {
  mlx_array a = mlx_array_new();
  mlx_vector_array_get(&a, in, k);
  return a;
}

/* A closure's results: o[0..n) into *res, the handles freed. */
static int test_vec_put(mlx_vector_array *res, mlx_array *o, size_t n) {
  int rc = mlx_vector_array_set_data(res, o, n);
  for (size_t k = 0; k < n; k++) mlx_array_free(o[k]);
  return rc;
}

#endif
