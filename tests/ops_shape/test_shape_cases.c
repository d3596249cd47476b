/* Shape ops against numpy references (tests/gen/gen_shape.py): each case
 * replays a sequence of ops through the public API on a random float32
 * array; chains mix views and copies, so non-contiguous inputs are covered. */
#include "test.h"

struct shape_step {
  const char *op;
  int np;
  int p[24];
};
struct shape_case {
  const char *name;
  int ndim;
  int shape[6];
  int nsteps;
  struct shape_step steps[4];
  const float *in;
  int out_ndim;
  int out_shape[8];
  const float *out;
};
#include "../data/shape_cases.h"

static mlx_array self_pair(mlx_array y, mlx_vector_array *v) {
  mlx_array y2 = mlx_array_new(); /* y + y == 2 * y exactly */
  mlx_add(&y2, y, y, test_stream());
  *v = mlx_vector_array_new();
  mlx_vector_array_append_value(*v, y);
  mlx_vector_array_append_value(*v, y2);
  return y2;
}

/* Applies one step to y; 0 on success. */
static int apply(mlx_array *r, mlx_array y, const struct shape_step *st) {
  mlx_stream s = test_stream();
  const char *op = st->op;
  const int *p = st->p;
  int np = st->np, nd = (int)mlx_array_ndim(y);
  if (!strcmp(op, "reshape")) return mlx_reshape(r, y, p, (size_t)np, s);
  if (!strcmp(op, "transpose")) return mlx_transpose_axes(r, y, p, (size_t)np, s);
  if (!strcmp(op, "transpose_all")) return mlx_transpose(r, y, s);
  if (!strcmp(op, "swapaxes")) return mlx_swapaxes(r, y, p[0], p[1], s);
  if (!strcmp(op, "moveaxis")) return mlx_moveaxis(r, y, p[0], p[1], s);
  if (!strcmp(op, "squeeze_axes")) return mlx_squeeze_axes(r, y, p, (size_t)np, s);
  if (!strcmp(op, "squeeze")) return mlx_squeeze(r, y, s);
  if (!strcmp(op, "expand_dims_axes")) return mlx_expand_dims_axes(r, y, p, (size_t)np, s);
  if (!strcmp(op, "flatten")) return mlx_flatten(r, y, p[0], p[1], s);
  if (!strcmp(op, "unflatten")) return mlx_unflatten(r, y, p[0], p + 1, (size_t)np - 1, s);
  if (!strcmp(op, "slice"))
    return mlx_slice(r, y, p, (size_t)nd, p + nd, (size_t)nd, p + 2 * nd, (size_t)nd, s);
  if (!strcmp(op, "diagonal")) return mlx_diagonal(r, y, p[0], p[1], p[2], s);
  if (!strcmp(op, "as_strided")) {
    int n = p[0];
    int64_t strides[8];
    for (int i = 0; i < n; i++) strides[i] = p[1 + n + i];
    return mlx_as_strided(r, y, p + 1, (size_t)n, strides, (size_t)n, (size_t)p[1 + 2 * n], s);
  }
  if (!strcmp(op, "broadcast_to")) return mlx_broadcast_to(r, y, p, (size_t)np, s);
  if (!strcmp(op, "add_arange")) {
    size_t n = mlx_array_size(y);
    float *buf = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) buf[i] = (float)i;
    mlx_array k = mlx_array_new_data(buf, mlx_array_shape(y), nd, MLX_FLOAT32);
    free(buf);
    int rc = mlx_add(r, y, k, s);
    mlx_array_free(k);
    return rc;
  }
  if (!strcmp(op, "atleast")) {
    if (p[0] == 1) return mlx_atleast_1d(r, y, s);
    if (p[0] == 2) return mlx_atleast_2d(r, y, s);
    return mlx_atleast_3d(r, y, s);
  }
  if (!strcmp(op, "split") || !strcmp(op, "split_sections")) {
    mlx_vector_array v = mlx_vector_array_new();
    int rc = !strcmp(op, "split") ? mlx_split(&v, y, p[0], p[1], s)
                                  : mlx_split_sections(&v, y, p + 2, (size_t)np - 2, p[0], s);
    if (!rc) rc = mlx_vector_array_get(r, v, (size_t)(!strcmp(op, "split") ? p[2] : p[1]));
    mlx_vector_array_free(v);
    return rc;
  }
  if (!strncmp(op, "pad_", 4)) {
    int edge = strcmp(op, "pad_const") != 0;
    const int *pp = edge ? p : p + 1;
    int axes[8], lo[8], hi[8];
    for (int i = 0; i < nd; i++) {
      axes[i] = i;
      lo[i] = pp[2 * i];
      hi[i] = pp[2 * i + 1];
    }
    mlx_array v = mlx_array_new_float(edge ? 0.0f : (float)p[0]);
    int rc = mlx_pad(r, y, axes, (size_t)nd, lo, (size_t)nd, hi, (size_t)nd, v,
                     edge ? op + 4 : "constant", s);
    mlx_array_free(v);
    return rc;
  }
  if (!strcmp(op, "tile")) return mlx_tile(r, y, p, (size_t)np, s);
  if (!strcmp(op, "repeat")) return mlx_repeat_axis(r, y, p[0], p[1], s);
  if (!strcmp(op, "repeat_flat")) return mlx_repeat(r, y, p[0], s);
  if (!strcmp(op, "roll"))
    return mlx_roll_axes(r, y, p + 1, (size_t)p[0], p + 1 + p[0], (size_t)p[0], s);
  if (!strcmp(op, "roll_flat")) return mlx_roll(r, y, p, 1, s);
  if (!strcmp(op, "diag")) return mlx_diag(r, y, p[0], s);
  if (!strcmp(op, "concat_self") || !strcmp(op, "stack_self")) {
    mlx_vector_array v;
    mlx_array y2 = self_pair(y, &v);
    int rc = !strcmp(op, "concat_self") ? mlx_concatenate_axis(r, v, p[0], s)
                                        : mlx_stack_axis(r, v, p[0], s);
    mlx_array_free(y2);
    mlx_vector_array_free(v);
    return rc;
  }
  if (!strcmp(op, "trace")) return mlx_trace(r, y, p[0], p[1], p[2], MLX_FLOAT32, s);
  if (!strcmp(op, "kron_self_t") || !strcmp(op, "kron_vec")) {
    mlx_array other = mlx_array_new(), t = mlx_array_new();
    int rc;
    if (!strcmp(op, "kron_vec")) {
      float v[3] = {1, -2, 3};
      int s3 = 3;
      other = mlx_array_new_data(v, &s3, 1, MLX_FLOAT32);
      rc = 0;
    } else {
      int st[2] = {0, 0}, sp[2] = {2, 2}, one[2] = {1, 1};
      rc = mlx_transpose(&t, y, s);
      sp[1] = (int)mlx_array_shape(t)[1];
      if (!rc) rc = mlx_slice(&other, t, st, 2, sp, 2, one, 2, s);
    }
    if (!rc) rc = mlx_kron(r, y, other, s);
    mlx_array_free(other);
    mlx_array_free(t);
    return rc;
  }
  if (!strcmp(op, "fftshift")) return mlx_fft_fftshift(r, y, p, (size_t)np, s);
  if (!strcmp(op, "ifftshift")) return mlx_fft_ifftshift(r, y, p, (size_t)np, s);
  if (!strcmp(op, "contiguous")) return mlx_contiguous(r, y, false, s);
  fprintf(stderr, "unknown step %s\n", op);
  return 1;
}

static void run_case(const struct shape_case *c) {
  mlx_array y = mlx_array_new_data(c->in, c->shape, c->ndim, MLX_FLOAT32);
  for (int k = 0; k < c->nsteps; k++) {
    mlx_array r = mlx_array_new();
    int rc = apply(&r, y, &c->steps[k]);
    CHECK_MSG(rc == 0, "case %s step %s failed: %s", c->name, c->steps[k].op, test_last_error);
    mlx_array_free(y);
    y = r;
    if (rc) {
      mlx_array_free(y);
      return;
    }
  }
  CHECK_MSG(mlx_array_ndim(y) == (size_t)c->out_ndim &&
                (c->out_ndim == 0 ||
                 !memcmp(mlx_array_shape(y), c->out_shape, sizeof(int) * (size_t)c->out_ndim)),
            "case %s: wrong shape", c->name);
  size_t n = 1;
  for (int i = 0; i < c->out_ndim; i++) n *= (size_t)c->out_shape[i];
  double *ref = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) ref[i] = c->out[i];
  int before = test_failures;
  double tol = !strcmp(c->steps[c->nsteps - 1].op, "trace") ? 1e-6 : 0; /* sums may reorder */
  CHECK_CLOSE(y, ref, n, tol, tol);
  if (test_failures != before) fprintf(stderr, "  (in case %s)\n", c->name);
  free(ref);
  mlx_array_free(y);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  const char *only = getenv("SHAPE_CASE");
  for (size_t i = 0; i < sizeof shape_cases / sizeof shape_cases[0]; i++)
    if (!only || !strcmp(only, shape_cases[i].name)) run_case(&shape_cases[i]);
  CHECK_MSG(test_active_memory() == base, "active memory %zu, expected %zu", test_active_memory(),
            base);
  return test_done();
}
