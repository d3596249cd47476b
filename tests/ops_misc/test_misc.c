/* Windows, median, einsum, hadamard_transform against numpy references
 * (tests/gen/gen_misc.py); depends; errors; leaks. */
#include "test.h"
/* after test.h: the data uses NAN and NULL */
#include "../data/misc_cases.h"
#include "core/node.h"

static mlx_array from_f64(const double *v, int nd, const int *shape, mlx_dtype t) {
  mlx_array a = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, a, t, test_stream());
  mlx_array_free(a);
  return r;
}

static size_t shape_size(int nd, const int *s) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)s[i];
  return n;
}

static void test_windows(void) {
  mlx_stream s = test_stream();
  int (*fns[])(mlx_array *, int, mlx_stream) = {mlx_bartlett, mlx_hanning, mlx_hamming,
                                                mlx_blackman};
  for (size_t i = 0; i < sizeof win_cases / sizeof win_cases[0]; i++) {
    const struct win_case *c = &win_cases[i];
    mlx_array r = mlx_array_new();
    CHECK_OK(fns[c->kind](&r, c->M, s));
    CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
    CHECK_SHAPE(r, c->M);
    CHECK_CLOSE(r, c->r, (size_t)c->M, 1e-6, 1e-6);
    mlx_array_free(r);
  }
  for (int k = 0; k < 4; k++) {
    mlx_array r = mlx_array_new();
    CHECK_OK(fns[k](&r, 0, s));
    CHECK_SHAPE(r, 0);
    CHECK_OK(fns[k](&r, -3, s));
    CHECK_SHAPE(r, 0);
    mlx_array_free(r);
  }
  CHECK_FAILS(mlx_hanning(NULL, 3, s), "NULL");
}

static void test_median(void) {
  mlx_stream s = test_stream();
  for (size_t i = 0; i < sizeof med_cases / sizeof med_cases[0]; i++) {
    const struct med_case *c = &med_cases[i];
    mlx_array x = from_f64(c->x, c->nd, c->shape, MLX_FLOAT32), r = mlx_array_new();
    int all[6] = {0, 1, 2, 3, 4, 5};
    CHECK_OK(mlx_median(&r, x, c->naxes < 0 ? all : c->axes,
                        c->naxes < 0 ? (size_t)c->nd : (size_t)c->naxes, c->keep, s));
    CHECK_MSG(mlx_array_ndim(r) == (size_t)c->rnd &&
                  !memcmp(mlx_array_shape(r), c->rshape, sizeof(int) * c->rnd),
              "median case %zu shape", i);
    CHECK_CLOSE(r, c->r, shape_size(c->rnd, c->rshape), 1e-6, 1e-7);
    /* a transposed view of the same values */
    if (c->nd == 2) {
      mlx_array t = mlx_array_new(), tt = mlx_array_new(), r2 = mlx_array_new();
      int ts[2] = {c->shape[1], c->shape[0]};
      double *tv = malloc(sizeof(double) * shape_size(2, c->shape));
      for (int a = 0; a < c->shape[0]; a++)
        for (int b = 0; b < c->shape[1]; b++) tv[b * c->shape[0] + a] = c->x[a * c->shape[1] + b];
      mlx_array base = from_f64(tv, 2, ts, MLX_FLOAT32);
      free(tv);
      CHECK_OK(mlx_transpose(&tt, base, s));
      CHECK_OK(mlx_median(&r2, tt, c->axes, (size_t)c->naxes, c->keep, s));
      CHECK_CLOSE(r2, c->r, shape_size(c->rnd, c->rshape), 1e-6, 1e-7);
      mlx_array_free(t), mlx_array_free(tt), mlx_array_free(r2), mlx_array_free(base);
    }
    mlx_array_free(x);
    mlx_array_free(r);
  }
  /* integers give float32 */
  int v[] = {5, 1, 4, 2}, sh[] = {4}, ax = 0;
  mlx_array xi = mlx_array_new_data(v, sh, 1, MLX_INT32), r = mlx_array_new();
  CHECK_OK(mlx_median(&r, xi, &ax, 1, false, s));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  double want = 3.0;
  CHECK_CLOSE(r, &want, 1, 0, 0);
  int bad = 2, dup[] = {0, 0};
  CHECK_FAILS(mlx_median(&r, xi, &bad, 1, false, s), "out of bounds");
  CHECK_FAILS(mlx_median(&r, xi, dup, 2, false, s), "duplicate");
  int z[] = {0};
  mlx_array e = mlx_array_new_data(v, z, 1, MLX_FLOAT32);
  CHECK_FAILS(mlx_median(&r, e, &ax, 1, false, s), "empty axis");
  mlx_array_free(xi), mlx_array_free(r), mlx_array_free(e);
}

static void test_einsum(void) {
  mlx_stream s = test_stream();
  for (size_t i = 0; i < sizeof ein_cases / sizeof ein_cases[0]; i++) {
    const struct ein_case *c = &ein_cases[i];
    mlx_vector_array v = mlx_vector_array_new();
    for (int k = 0; k < c->n; k++) {
      mlx_array x = from_f64(c->x[k], c->nd[k], c->shape[k], MLX_FLOAT32);
      mlx_vector_array_append_value(v, x);
      mlx_array_free(x);
    }
    mlx_array r = mlx_array_new();
    CHECK_OK(mlx_einsum(&r, c->sub, v, s));
    CHECK_MSG(mlx_array_ndim(r) == (size_t)c->rnd &&
                  !memcmp(mlx_array_shape(r), c->rshape, sizeof(int) * c->rnd),
              "einsum '%s' shape (ndim %zu)", c->sub, mlx_array_ndim(r));
    CHECK_CLOSE(r, c->r, shape_size(c->rnd, c->rshape), 1e-5, 1e-5);
    mlx_array_free(r);
    mlx_vector_array_free(v);
  }
  int s34[] = {3, 4}, s45[] = {5, 5};
  mlx_array a = test_rand_f32(s34, 2, -1, 1), b = test_rand_f32(s45, 2, -1, 1);
  mlx_array r = mlx_array_new();
  mlx_array ab[2] = {a, b};
  mlx_vector_array v2 = mlx_vector_array_new_data(ab, 2), v1 = mlx_vector_array_new_data(ab, 1);
  CHECK_FAILS(mlx_einsum(&r, "ij,jk->ik", v2, s), "does not match");
  CHECK_FAILS(mlx_einsum(&r, "ij->ik", v1, s), "not in any input");
  CHECK_FAILS(mlx_einsum(&r, "ij->ii", v1, s), "repeated");
  CHECK_FAILS(mlx_einsum(&r, "ijk", v1, s), "subscripts");
  CHECK_FAILS(mlx_einsum(&r, "ij,jk", v1, s), "more operands");
  CHECK_FAILS(mlx_einsum(&r, "ij", v2, s), "operands");
  CHECK_FAILS(mlx_einsum(&r, "i1", v1, s), "invalid character");
  CHECK_FAILS(mlx_einsum(&r, NULL, v1, s), "NULL");
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(r);
  mlx_vector_array_free(v1), mlx_vector_array_free(v2);
}

static void test_hadamard(void) {
  mlx_stream s = test_stream();
  int sh[] = {3, 8};
  mlx_array x = from_f64(had_x, 2, sh, MLX_FLOAT32), r = mlx_array_new();
  CHECK_OK(mlx_hadamard_transform(&r, x, (mlx_optional_float){0, false}, s));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_CLOSE(r, had_r, 24, 1e-5, 1e-6);
  CHECK_OK(mlx_hadamard_transform(&r, x, (mlx_optional_float){0.25f, true}, s));
  CHECK_CLOSE(r, had_r2, 24, 1e-5, 1e-6);
  mlx_array h = mlx_array_new();
  CHECK_OK(mlx_astype(&h, x, MLX_FLOAT16, s));
  CHECK_OK(mlx_hadamard_transform(&r, h, (mlx_optional_float){0, false}, s));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT16);
  CHECK_CLOSE(r, had_r, 24, 1e-2, 1e-2);
  int s6[] = {2, 6};
  mlx_array y = test_rand_f32(s6, 2, -1, 1);
  CHECK_FAILS(mlx_hadamard_transform(&r, y, (mlx_optional_float){0, false}, s), "power of two");
  mlx_array_free(x), mlx_array_free(r), mlx_array_free(h), mlx_array_free(y);
}

static void test_depends(void) {
  mlx_stream s = test_stream();
  int sh[] = {4};
  mlx_array a = test_rand_f32(sh, 1, -1, 1), b = test_rand_f32(sh, 1, -1, 1);
  mlx_array d = mlx_array_new(), e = mlx_array_new();
  CHECK_OK(mlx_exp(&d, b, s));
  CHECK_OK(mlx_sqrt(&e, a, s));
  mlx_vector_array in = mlx_vector_array_new_data(&e, 1), dep = mlx_vector_array_new_data(&d, 1);
  mlx_vector_array out = mlx_vector_array_new();
  CHECK_OK(mlx_depends(&out, in, dep));
  CHECK(mlx_vector_array_size(out) == 1);
  mlx_array o = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&o, out, 0));
  CHECK_OK(mlx_array_eval(o));
  CHECK_MSG(((struct lc_node *)d.ctx)->buf != NULL, "the dependency was evaluated");
  double *ev = test_values(e);
  CHECK_CLOSE(o, ev, 4, 0, 0);
  free(ev);
  mlx_vector_array empty = mlx_vector_array_new();
  CHECK_FAILS(mlx_depends(&out, empty, dep), "at least one");
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(d), mlx_array_free(e), mlx_array_free(o);
  mlx_vector_array_free(in), mlx_vector_array_free(dep), mlx_vector_array_free(out);
  mlx_vector_array_free(empty);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_windows();
  test_median();
  test_einsum();
  test_hadamard();
  test_depends();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  return test_done();
}
