/* data_parallel: data-parallel training over mlx_distributed (public API
 * only). Run alone (one rank) or under `mpirun -np N`.
 *
 * A small MLP (linear -> tanh -> linear) is fitted by SGD to synthetic
 * regression data: a global batch of N_GLOBAL rows, of which rank r holds
 * rows [r * N/size, (r + 1) * N/size). Each step computes the loss and
 * gradients of the local shard (mlx_value_and_grad), averages the gradients
 * over the ranks with mlx_distributed_all_sum, and updates the weights.
 * Since the shards are equal, the averaged gradient is the gradient of the
 * mean loss over the whole batch, so the result must equal a one-process
 * run on the concatenated batch; every rank also computes that reference
 * run itself (no collective involved) and checks
 *   (a) its weights equal the reference within TOL,
 *   (b) the weights are identical on all ranks (all_max == all_min),
 *   (c) the loss went down.
 * Prints the loss curve, the checks and a checksum of the weights (equal
 * for any number of ranks up to float rounding); exits non-zero if a check
 * fails. Usage: data_parallel [steps]   (default 60) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlx/c/mlx.h"

enum { N_GLOBAL = 96, D_IN = 8, D_HID = 16, NPARAM = 4 };
#define LR 0.1f
#define TOL 1e-5

static mlx_stream S;
static mlx_distributed_group G;

/* Deterministic data and initial weights, the same on every rank. */
static float uniform(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static mlx_array random_array(int rows, int cols, float scale, unsigned seed) {
  float *v = malloc(sizeof *v * (size_t)(rows * cols));
  for (int i = 0; i < rows * cols; i++) v[i] = scale * uniform(&seed);
  int shape[] = {rows, cols};
  mlx_array a = mlx_array_new_data(v, shape, cols > 0 ? 2 : 1, MLX_FLOAT32);
  free(v);
  return a;
}

/* Inputs and targets (y = sin(x . a) + x0 x1), rows [lo, hi). */
static void make_data(int lo, int hi, mlx_array *x, mlx_array *y) {
  static float xs[N_GLOBAL * D_IN], ys[N_GLOBAL];
  unsigned seed = 12345;
  for (int i = 0; i < N_GLOBAL; i++) {
    float dot = 0;
    for (int j = 0; j < D_IN; j++) {
      xs[i * D_IN + j] = uniform(&seed);
      dot += xs[i * D_IN + j] * (float)(j + 1) / D_IN;
    }
    ys[i] = sinf(dot) + xs[i * D_IN] * xs[i * D_IN + 1];
  }
  int sx[] = {hi - lo, D_IN}, sy[] = {hi - lo, 1};
  *x = mlx_array_new_data(xs + lo * D_IN, sx, 2, MLX_FLOAT32);
  *y = mlx_array_new_data(ys + lo, sy, 2, MLX_FLOAT32);
}

/* loss(W1, b1, W2, b2, x, y) = mean((tanh(x W1 + b1) W2 + b2 - y)^2) */
static int loss_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array a[6], h = mlx_array_new(), t = mlx_array_new();
  for (int i = 0; i < 6; i++) {
    a[i] = mlx_array_new();
    mlx_vector_array_get(&a[i], in, (size_t)i);
  }
  int rc = mlx_matmul(&h, a[4], a[0], S) || mlx_add(&h, h, a[1], S) || mlx_tanh(&h, h, S) ||
           mlx_matmul(&t, h, a[2], S) || mlx_add(&t, t, a[3], S) || mlx_subtract(&t, t, a[5], S) ||
           mlx_square(&t, t, S) || mlx_mean(&t, t, false, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  for (int i = 0; i < 6; i++) mlx_array_free(a[i]);
  mlx_array_free(h);
  mlx_array_free(t);
  return rc;
}

/* One SGD step on params over (x, y); gradients averaged over the group
 * when `distributed`. Returns the (local) loss, NAN on failure. */
static float step(mlx_closure_value_and_grad vg, mlx_array *params, mlx_array x, mlx_array y,
                  bool distributed) {
  mlx_array args[] = {params[0], params[1], params[2], params[3], x, y};
  mlx_vector_array in = mlx_vector_array_new_data(args, 6), val = mlx_vector_array_new(),
                   grads = mlx_vector_array_new();
  float loss = NAN;
  int rc = mlx_closure_value_and_grad_apply(&val, &grads, vg, in);
  mlx_array g = mlx_array_new(), l = mlx_array_new();
  mlx_array scale = mlx_array_new_float(LR / (float)mlx_distributed_group_size(G));
  mlx_array lr = mlx_array_new_float(LR);
  for (int i = 0; !rc && i < NPARAM; i++) {
    rc = mlx_vector_array_get(&g, grads, (size_t)i);
    if (!rc && distributed) rc = mlx_distributed_all_sum(&g, g, G, S);
    if (!rc) rc = mlx_multiply(&g, g, distributed ? scale : lr, S);
    if (!rc) rc = mlx_subtract(&params[i], params[i], g, S);
  }
  mlx_vector_array all = mlx_vector_array_new_data(params, NPARAM);
  if (!rc)
    rc = mlx_eval(all) || mlx_vector_array_get(&l, val, 0) || mlx_array_item_float32(&loss, l);
  mlx_vector_array_free(all);
  mlx_vector_array_free(in);
  mlx_vector_array_free(val);
  mlx_vector_array_free(grads);
  mlx_array_free(g);
  mlx_array_free(l);
  mlx_array_free(scale);
  mlx_array_free(lr);
  return rc ? NAN : loss;
}

static void init_params(mlx_array *p) {
  p[0] = random_array(D_IN, D_HID, 0.5f, 1);
  p[1] = random_array(1, D_HID, 0.1f, 2);
  p[2] = random_array(D_HID, 1, 0.5f, 3);
  p[3] = random_array(1, 1, 0.1f, 4);
}

/* max |a - b| over every element (0-d result read as a float). */
static float max_abs_diff(mlx_array a, mlx_array b) {
  mlx_array d = mlx_array_new();
  float v = INFINITY;
  if (!mlx_subtract(&d, a, b, S) && !mlx_abs(&d, d, S) && !mlx_max(&d, d, false, S))
    mlx_array_item_float32(&v, d);
  mlx_array_free(d);
  return v;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 60;
  S = mlx_default_cpu_stream_new();
  G = mlx_distributed_group_new();
  if (mlx_distributed_init(&G, false, NULL)) return 1;
  int rank = mlx_distributed_group_rank(G), size = mlx_distributed_group_size(G);
  if (N_GLOBAL % size) {
    fprintf(stderr, "data_parallel: %d rows do not split over %d ranks\n", N_GLOBAL, size);
    return 1;
  }
  int lo = rank * (N_GLOBAL / size), hi = lo + N_GLOBAL / size;
  mlx_array x, y, xall, yall, p[NPARAM], ref[NPARAM];
  make_data(lo, hi, &x, &y);
  make_data(0, N_GLOBAL, &xall, &yall);
  init_params(p);
  init_params(ref);

  mlx_closure f = mlx_closure_new_func(loss_fn);
  mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
  int argnums[] = {0, 1, 2, 3};
  if (mlx_value_and_grad(&vg, f, argnums, NPARAM)) return 1;

  float first = NAN, last = NAN, ref_last = NAN;
  for (int s = 0; s < steps; s++) {
    last = step(vg, p, x, y, true);
    ref_last = step(vg, ref, xall, yall, false);
    if (s == 0) first = ref_last;
    if (isnan(last) || isnan(ref_last)) return 1;
    if (rank == 0 && (s % 10 == 0 || s == steps - 1))
      printf("step %3d  loss (rank 0 shard) %.6f  full batch (reference) %.6f\n", s, last,
             ref_last);
  }

  float err = 0, spread = 0;
  double checksum = 0;
  for (int i = 0; i < NPARAM; i++) {
    mlx_array hi_v = mlx_array_new(), lo_v = mlx_array_new(), sum = mlx_array_new();
    err = fmaxf(err, max_abs_diff(p[i], ref[i]));
    mlx_distributed_all_max(&hi_v, p[i], G, S);
    mlx_distributed_all_min(&lo_v, p[i], G, S);
    spread = fmaxf(spread, max_abs_diff(hi_v, lo_v));
    float c = 0;
    mlx_sum(&sum, p[i], false, S);
    mlx_array_item_float32(&c, sum);
    checksum += c;
    mlx_array_free(hi_v);
    mlx_array_free(lo_v);
    mlx_array_free(sum);
  }
  bool ok_ref = err <= TOL, ok_same = spread == 0, ok_loss = ref_last < first;
  printf(
      "rank %d of %d: max |w - w(1 rank, whole batch)| = %.3g (%s), spread over ranks = %.3g "
      "(%s), loss %.4f -> %.4f (%s), weights checksum %.6f\n",
      rank, size, err, ok_ref ? "ok" : "FAIL", spread, ok_same ? "ok" : "FAIL", first, ref_last,
      ok_loss ? "ok" : "FAIL", checksum);

  for (int i = 0; i < NPARAM; i++) {
    mlx_array_free(p[i]);
    mlx_array_free(ref[i]);
  }
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(xall);
  mlx_array_free(yall);
  mlx_closure_value_and_grad_free(vg);
  mlx_closure_free(f);
  mlx_distributed_group_free(G);
  mlx_stream_free(S);
  return ok_ref && ok_same && ok_loss ? 0 : 1;
}
