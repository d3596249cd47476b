/* Shared by the reduction and sort fixture tests: the case record written by
 * tests/gen/gen_reduce.py, building (possibly non-contiguous) inputs from
 * it, and dtype-aware tolerances. Uses internal headers to build views. */
#ifndef LACE_TEST_FIXTURE_H
#define LACE_TEST_FIXTURE_H

#include "core/node.h"
#include "ops/elementwise.h"
#include "test.h"

struct fixture {
  const char *op;
  int variant; /* 0: over everything / flattened, 1: one axis, 2: axis list */
  int dtype, ndim, shape[4];
  int layout; /* 0 contiguous, 1 transposed, 2 broadcast, 3 reversed axis 0 */
  int perm[4], bshape[4];
  int naxes, axes[4], keepdims, ddof, p1, p2;
  int out_dtype, out_ndim, out_shape[4];
  int in_off, in_n, out_off, out_n;
};

/* The fixture's input as an array (new handle), built as a view of its data
 * in the case's layout. */
static mlx_array fixture_input(const struct fixture *f, const double *data) {
  int nd = f->ndim, dshape[4];
  for (int i = 0; i < nd; i++)
    dshape[i] = f->layout == 1 ? f->shape[f->perm[i]] : f->layout == 2 ? f->bshape[i] : f->shape[i];
  mlx_array d = mlx_array_new_data(data + f->in_off, dshape, nd, MLX_FLOAT64);
  mlx_array base = mlx_array_new();
  mlx_astype(&base, d, (mlx_dtype)f->dtype, test_stream());
  mlx_array_free(d);
  mlx_array_eval(base);
  struct lc_node *b = base.ctx, *v = NULL;
  if (f->layout == 0) return base;
  if (f->layout == 2) {
    v = lc_broadcast_to(b, nd, f->shape);
  } else {
    int64_t st[4], bst[4], off = 0;
    lc_shape_strides(nd, dshape, bst);
    for (int i = 0; i < nd; i++) st[i] = bst[i];
    if (f->layout == 1)
      for (int i = 0; i < nd; i++) st[f->perm[i]] = bst[i];
    if (f->layout == 3) {
      st[0] = -bst[0];
      off = (int64_t)(f->shape[0] - 1) * bst[0];
    }
    v = lc_node_alloc((mlx_dtype)f->dtype, nd, f->shape);
    lc_node_set_view(v, b, st, off);
  }
  mlx_array_free(base);
  return (mlx_array){v};
}

static void fixture_tol(int dtype, double *rtol, double *atol) {
  switch (dtype) {
  case MLX_FLOAT16: *rtol = 2e-3, *atol = 2e-3; break;
  case MLX_BFLOAT16: *rtol = 1e-2, *atol = 1e-2; break;
  case MLX_FLOAT32: *rtol = 1e-5, *atol = 1e-6; break;
  case MLX_FLOAT64: *rtol = 1e-12, *atol = 1e-12; break;
  default: *rtol = 0, *atol = 0; break;
  }
}

/* Checks dtype and shape against the fixture; 1 when they match. */
static int fixture_meta(const struct fixture *f, int idx, mlx_array r) {
  int ok = (int)mlx_array_dtype(r) == f->out_dtype && (int)mlx_array_ndim(r) == f->out_ndim &&
           (f->out_ndim == 0 ||
            !memcmp(mlx_array_shape(r), f->out_shape, sizeof(int) * (size_t)f->out_ndim));
  CHECK_MSG(ok, "case %d (%s dtype %d variant %d): got dtype %d ndim %zu, want dtype %d ndim %d",
            idx, f->op, f->dtype, f->variant, (int)mlx_array_dtype(r), mlx_array_ndim(r),
            f->out_dtype, f->out_ndim);
  return ok;
}

#endif
