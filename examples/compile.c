/* compile: one function, run plain and through mlx_compile. The function is
 * the tanh approximation of GELU, a chain of elementwise ops:
 *   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * Plain, each op writes a full intermediate array; compiled, the chain is
 * traced once and fused into one pass over the data. The example checks
 * that both give the same values and prints both times. Public API only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mlx/c/mlx.h"

static mlx_stream stream;

static int gelu(mlx_array *res, const mlx_array x) {
  mlx_array c0 = mlx_array_new_float(0.5f), c1 = mlx_array_new_float(0.044715f),
            c2 = mlx_array_new_float(0.7978845608f), one = mlx_array_new_float(1.0f),
            t = mlx_array_new();
  int rc = mlx_multiply(&t, x, x, stream) || mlx_multiply(&t, t, x, stream) || /* x^3 */
           mlx_multiply(&t, t, c1, stream) || mlx_add(&t, t, x, stream) ||
           mlx_multiply(&t, t, c2, stream) || mlx_tanh(&t, t, stream) ||
           mlx_add(&t, t, one, stream) || mlx_multiply(&t, t, x, stream) ||
           mlx_multiply(res, t, c0, stream);
  mlx_array_free(c0);
  mlx_array_free(c1);
  mlx_array_free(c2);
  mlx_array_free(one);
  mlx_array_free(t);
  return rc;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Applies f to x `reps` times (evaluating each result); the last result
 * goes to *out. Returns the best time of one call in ms, or -1. */
static double run(mlx_closure f, mlx_array x, int reps, mlx_array *out) {
  mlx_vector_array in = mlx_vector_array_new_value(x), res = mlx_vector_array_new();
  double best = -1;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    if (mlx_closure_apply(&res, f, in) || mlx_eval(res)) {
      best = -1;
      break;
    }
    double t = (now() - t0) * 1e3;
    if (best < 0 || t < best) best = t;
  }
  if (best >= 0 && mlx_vector_array_get(out, res, 0)) best = -1;
  mlx_vector_array_free(in);
  mlx_vector_array_free(res);
  return best;
}

int main(void) {
  stream = mlx_default_cpu_stream_new();
  const int n = 1 << 20;
  float *data = malloc(sizeof(float) * n);
  for (int i = 0; data && i < n; i++) data[i] = -4.0f + 8.0f * (float)i / (float)n;
  int shape[1] = {n};
  mlx_array x = mlx_array_new_data(data, shape, 1, MLX_FLOAT32);
  mlx_array y_plain = mlx_array_new(), y_comp = mlx_array_new();
  mlx_closure f = mlx_closure_new_unary(gelu), fc = mlx_closure_new();

  int rc = !data || mlx_compile(&fc, f, false);
  double t_plain = rc ? -1 : run(f, x, 10, &y_plain);
  double t_comp = rc ? -1 : run(fc, x, 10, &y_comp);
  rc = rc || t_plain < 0 || t_comp < 0;

  /* both results against each other and against libm on a few points */
  const float *a = rc ? NULL : mlx_array_data_float32(y_plain);
  const float *b = rc ? NULL : mlx_array_data_float32(y_comp);
  double maxdiff = 0, maxerr = 0;
  for (int i = 0; a && b && i < n; i++) maxdiff = fmax(maxdiff, fabs((double)a[i] - b[i]));
  for (int i = 0; a && i < n; i += n / 8) {
    double v = data[i], ref = 0.5 * v * (1 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    maxerr = fmax(maxerr, fabs(a[i] - ref));
  }
  if (!a || !b || maxdiff > 1e-5 || maxerr > 1e-5) rc = 1;
  if (!rc) {
    printf("gelu over %d floats: plain %.2f ms, compiled %.2f ms (%.2fx)\n", n, t_plain, t_comp,
           t_plain / t_comp);
    printf("max |plain - compiled| = %.3g, max |plain - libm| = %.3g\n", maxdiff, maxerr);
  }

  mlx_closure_free(fc);
  mlx_closure_free(f);
  mlx_array_free(x);
  mlx_array_free(y_plain);
  mlx_array_free(y_comp);
  mlx_stream_free(stream);
  free(data);
  if (rc) fprintf(stderr, "compile example: failed\n");
  return rc;
}
