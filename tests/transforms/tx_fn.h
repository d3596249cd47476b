/* Closures built from closures for transform tests: grad (the gradient of
 * the first output with respect to chosen arguments, as a closure), vmap
 * as a closure, value_and_grad as a closure returning values then grads,
 * compile. Each returns a new mlx_closure (empty on failure) that owns
 * what it needs. Include after test.h. */
#ifndef LACE_TX_FN_H
#define LACE_TX_FN_H

#include "test.h"

struct txf_payload {
  mlx_closure inner;
  mlx_closure_value_and_grad vag;
  int mode; /* 0: grads only; 1: values then grads; 2: vmap */
  int nax, nout_ax;
  int in_axes[8], out_axes[8];
};

static void txf_free(void *p) {
  struct txf_payload *t = p;
  mlx_closure_free(t->inner);
  mlx_closure_value_and_grad_free(t->vag);
  free(t);
}

static int txf_call(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  struct txf_payload *t = payload;
  if (t->mode == 2) {
    mlx_vector_array s_in = mlx_vector_array_new(), s_out = mlx_vector_array_new();
    int rc = mlx_detail_vmap_trace(&s_in, &s_out, t->inner, in, t->in_axes, (size_t)t->nax);
    if (!rc) {
      size_t no = mlx_vector_array_size(s_out);
      int oax[8] = {0};
      for (int i = 0; i < t->nout_ax && i < 8; i++) oax[i] = t->out_axes[i];
      rc = mlx_detail_vmap_replace(res, in, s_in, s_out, t->in_axes, (size_t)t->nax, oax, no);
    }
    mlx_vector_array_free(s_in);
    mlx_vector_array_free(s_out);
    return rc;
  }
  mlx_vector_array v = mlx_vector_array_new(), g = mlx_vector_array_new();
  int rc = mlx_closure_value_and_grad_apply(&v, &g, t->vag, in);
  if (!rc) {
    if (t->mode == 1) {
      for (size_t i = 0; !rc && i < mlx_vector_array_size(g); i++) {
        mlx_array a = mlx_array_new();
        rc = mlx_vector_array_get(&a, g, i) || mlx_vector_array_append_value(v, a);
        mlx_array_free(a);
      }
      if (!rc) rc = mlx_vector_array_set(res, v);
    } else {
      rc = mlx_vector_array_set(res, g);
    }
  }
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  return rc;
}

static mlx_closure txf_vag_mode(mlx_closure f, const int *argnums, int nargs, int mode) {
  struct txf_payload *t = calloc(1, sizeof *t);
  t->inner = mlx_closure_new();
  mlx_closure_set(&t->inner, f);
  t->vag = mlx_closure_value_and_grad_new();
  t->mode = mode;
  if (mlx_value_and_grad(&t->vag, f, argnums, (size_t)nargs)) {
    txf_free(t);
    return mlx_closure_new();
  }
  return mlx_closure_new_func_payload(txf_call, t, txf_free);
}

/* The gradients of f's first output with respect to argnums. */
static mlx_closure txf_grad(mlx_closure f, const int *argnums, int nargs) {
  return txf_vag_mode(f, argnums, nargs, 0);
}
/* f's outputs followed by those gradients. */
static mlx_closure txf_value_and_grad(mlx_closure f, const int *argnums, int nargs) {
  return txf_vag_mode(f, argnums, nargs, 1);
}

/* vmap of f with in_axes (-1 unbatched) and out_axes (NULL: all 0). */
static mlx_closure txf_vmap(mlx_closure f, const int *in_axes, int nin, const int *out_axes,
                            int nout) {
  struct txf_payload *t = calloc(1, sizeof *t);
  t->inner = mlx_closure_new();
  mlx_closure_set(&t->inner, f);
  t->vag = mlx_closure_value_and_grad_new();
  t->mode = 2;
  t->nax = nin;
  for (int i = 0; i < nin; i++) t->in_axes[i] = in_axes[i];
  t->nout_ax = out_axes ? nout : 0;
  for (int i = 0; out_axes && i < nout; i++) t->out_axes[i] = out_axes[i];
  return mlx_closure_new_func_payload(txf_call, t, txf_free);
}

static mlx_closure txf_compile(mlx_closure f, bool shapeless) {
  mlx_closure c = mlx_closure_new();
  if (mlx_compile(&c, f, shapeless)) return mlx_closure_new();
  return c;
}

/* Applies f to the listed arrays; output k into out[k] (new handles). */
static int txf_apply(mlx_closure f, const mlx_array *in, int nin, mlx_array *out, int nout) {
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)nin);
  mlx_vector_array vout = mlx_vector_array_new();
  int rc = mlx_closure_apply(&vout, f, vin);
  if (!rc && (int)mlx_vector_array_size(vout) < nout) rc = 1;
  for (int k = 0; k < nout; k++) {
    out[k] = mlx_array_new();
    if (!rc) mlx_vector_array_get(&out[k], vout, (size_t)k);
  }
  mlx_vector_array_free(vin);
  mlx_vector_array_free(vout);
  return rc;
}

/* Whether a and b have the same shape and values within tol. */
static int txf_allclose(mlx_array a, mlx_array b, double tol) {
  if (mlx_array_ndim(a) != mlx_array_ndim(b) ||
      memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a)))
    return 0;
  double *x = test_values(a), *y = test_values(b);
  int ok = x && y;
  for (size_t i = 0; ok && i < mlx_array_size(a); i++)
    ok = fabs(x[i] - y[i]) <= tol * (1 + fabs(y[i]));
  free(x);
  free(y);
  return ok;
}

#endif
