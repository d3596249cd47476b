/* Backward passes free what they no longer need. value_and_grad of a
 * 100-layer MLP (each layer: a = h @ W, h' = tanh(a) * sigmoid(a) + h)
 * must peak within a small multiple of the forward pass's activations;
 * mlx_checkpoint around each layer must lower that peak. The test prints
 * the figures it measured. */
#include "tx_check.h"
#include "tx_fn.h"

#define LAYERS 100
#define B 256
#define D 128

static mlx_stream S(void) { return test_stream(); }

/* One layer: in = (h, W), out = tanh(h W) * sigmoid(h W) + h. */
static int layer(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array h = mlx_array_new(), W = mlx_array_new(), a = mlx_array_new(), t = mlx_array_new(),
            s = mlx_array_new(), m = mlx_array_new(), o = mlx_array_new();
  int rc = mlx_vector_array_get(&h, in, 0) || mlx_vector_array_get(&W, in, 1) ||
           mlx_matmul(&a, h, W, S()) || mlx_tanh(&t, a, S()) || mlx_sigmoid(&s, a, S()) ||
           mlx_multiply(&m, t, s, S()) || mlx_add(&o, m, h, S()) ||
           mlx_vector_array_set_value(res, o);
  mlx_array arrs[7] = {h, W, a, t, s, m, o};
  for (int i = 0; i < 7; i++) mlx_array_free(arrs[i]);
  return rc;
}

static mlx_closure layer_fn; /* plain or checkpointed */

/* loss(x, W0..W99) = mean(h_100) */
static int model(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array h = mlx_array_new();
  int rc = mlx_vector_array_get(&h, in, 0);
  for (int l = 0; !rc && l < LAYERS; l++) {
    mlx_array W = mlx_array_new();
    mlx_vector_array_get(&W, in, (size_t)l + 1);
    mlx_array hw[2] = {h, W}, o;
    rc = txf_apply(layer_fn, hw, 2, &o, 1);
    mlx_array_free(W);
    mlx_array_free(h);
    h = o;
  }
  mlx_array r = mlx_array_new();
  if (!rc) rc = mlx_mean(&r, h, false, S()) || mlx_vector_array_set_value(res, r);
  mlx_array_free(r);
  mlx_array_free(h);
  return rc;
}

/* Peak bytes while evaluating value_and_grad of the model (grad wrt all
 * weights), or while evaluating the forward only. */
static size_t measure(mlx_array *in, bool backward, double *loss) {
  mlx_closure f = mlx_closure_new_func(model);
  int args[LAYERS];
  for (int l = 0; l < LAYERS; l++) args[l] = l + 1;
  mlx_closure vg = txf_value_and_grad(f, args, LAYERS);
  mlx_vector_array vin = mlx_vector_array_new_data(in, LAYERS + 1), out = mlx_vector_array_new();
  mlx_clear_cache();
  mlx_reset_peak_memory();
  size_t base = test_active_memory(), peak = 0;
  int rc = mlx_closure_apply(&out, backward ? vg : f, vin) || mlx_eval(out);
  CHECK_MSG(rc == 0, "model failed: %s", test_last_error);
  mlx_get_peak_memory(&peak);
  mlx_array l = mlx_array_new();
  mlx_vector_array_get(&l, out, 0);
  double *v = test_values(l);
  *loss = v ? v[0] : NAN;
  free(v);
  mlx_array_free(l);
  mlx_vector_array_free(out);
  mlx_vector_array_free(vin);
  mlx_closure_free(vg);
  mlx_closure_free(f);
  return peak > base ? peak - base : 0;
}

int main(void) {
  test_init();
  mlx_array in[LAYERS + 1];
  int sx[2] = {B, D}, sw[2] = {D, D};
  in[0] = test_rand_f32(sx, 2, -1, 1);
  for (int l = 0; l < LAYERS; l++) in[l + 1] = test_rand_f32(sw, 2, -0.08, 0.08);
  size_t act = (size_t)B * D * sizeof(float); /* one activation */
  size_t weights = (size_t)LAYERS * D * D * sizeof(float);
  double lf, lb, lc;
  layer_fn = mlx_closure_new_func(layer);
  size_t fwd = measure(in, false, &lf);
  size_t bwd = measure(in, true, &lb);
  mlx_closure plain = layer_fn;
  layer_fn = mlx_closure_new();
  CHECK_OK(mlx_checkpoint(&layer_fn, plain));
  size_t ck = measure(in, true, &lc);
  /* a layer keeps 4 activations (a, t, s, m) for its backward, plus h */
  size_t kept = (size_t)LAYERS * 5 * act;
  printf("activation %zu KiB; forward peak %zu KiB; value_and_grad peak %zu KiB "
         "(%.2fx the %zu KiB of kept activations); with checkpoint %zu KiB (%.2fx); "
         "weights %zu KiB (gradients the same)\n",
         act >> 10, fwd >> 10, bwd >> 10, (double)bwd / (double)kept, kept >> 10, ck >> 10,
         (double)ck / (double)kept, weights >> 10);
  CHECK_MSG(fabs(lf - lb) <= 1e-6 * fabs(lf) && fabs(lc - lb) <= 1e-6 * fabs(lb),
            "losses differ: %g %g %g", lf, lb, lc);
  /* gradients of the weights are outputs (= weights' size); on top of them
   * the backward may hold at most about twice the kept activations */
  CHECK_MSG(bwd <= weights + 2 * kept, "backward peak %zu exceeds %zu", bwd, weights + 2 * kept);
  CHECK_MSG(ck < bwd, "checkpointing did not lower the peak (%zu vs %zu)", ck, bwd);
  mlx_closure_free(plain);
  mlx_closure_free(layer_fn);
  for (int l = 0; l <= LAYERS; l++) mlx_array_free(in[l]);
  return test_done();
}
