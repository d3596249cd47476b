/* The GPU's own math for results rounded to 16 bits (ew_ops.cuh), in
 * unfused and fused kernels alike: exp of float16 and bfloat16 (Exp16,
 * 2^(x log2 e) by the GPU's ex2) and erf of bfloat16 (ErfBf, a clamped
 * polynomial). Over every bit pattern of the type, the results are faithful,
 * one of the two 16-bit floats around the function's value computed in
 * double (exactly that value when it is one, signed zeros included); NaN
 * gives NaN; fused (compiled) and unfused results are the same bits. How
 * often the result is not the nearest one is printed, not asserted. For
 * every pair of bfloat16 values (2^32), unfused and fused quotients are
 * the float quotient rounded, bit for bit (any NaN matches any NaN).
 * Skips without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bits.h"
#include "ops/prim.h"

static double half_value(mlx_dtype t, uint16_t b) {
  if (t == MLX_BFLOAT16) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int s = b >> 15, e = (b >> 10) & 31, m = b & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

/* Whether the graph of a (not evaluated) has a FUSED node. */
static bool has_fused(const struct lc_node *n, int depth) {
  if (!n || depth > 8) return false;
  if (n->op == LC_OP_FUSED) return true;
  for (int k = 0; k < n->nin; k++)
    if (has_fused(n->in[k], depth + 1)) return true;
  return false;
}

/* The positive patterns of t in increasing value: 0 .. +inf. */
static uint16_t half_inf(mlx_dtype t) { return t == MLX_BFLOAT16 ? 0x7f80 : 0x7c00; }

/* lo: the largest pattern of value <= e; hi: the smallest of value >= e
 * (e >= 0, not -0). */
static void around_pos(mlx_dtype t, double e, uint16_t *lo, uint16_t *hi) {
  uint16_t a = 0, b = half_inf(t);
  if (e >= half_value(t, b)) {
    *lo = *hi = b;
    return;
  }
  while (b - a > 1) { /* value(a) <= e < value(b) */
    uint16_t m = (uint16_t)((a + b) / 2);
    if (half_value(t, m) <= e) a = m;
    else b = m;
  }
  *lo = a;
  *hi = half_value(t, a) == e ? a : b;
}

/* The same for any e: for e < 0 (or -0), lo and hi of -e with the sign set. */
static void around(mlx_dtype t, double e, uint16_t *lo, uint16_t *hi) {
  if (!signbit(e)) {
    around_pos(t, e, lo, hi);
    return;
  }
  uint16_t a, b;
  around_pos(t, -e, &a, &b);
  *lo = (uint16_t)(b | 0x8000);
  *hi = (uint16_t)(a | 0x8000);
}

enum fn { FN_EXP, FN_ERF };
static enum fn cur_fn;

static int apply_fn(mlx_array *r, mlx_array x, enum fn f) {
  return f == FN_EXP ? mlx_exp(r, x, gpu_stream) : mlx_erf(r, x, gpu_stream);
}

static int fn_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), z = mlx_array_new(), e = mlx_array_new(), o = mlx_array_new();
  mlx_vector_array_get(&x, in, 0), mlx_vector_array_get(&z, in, 1);
  apply_fn(&e, x, cur_fn);
  mlx_add(&o, e, z, gpu_stream); /* + -0 (x for every x): a second op, so that the region is fused */
  mlx_vector_array_set_value(res, o);
  mlx_array_free(x), mlx_array_free(z), mlx_array_free(e), mlx_array_free(o);
  return 0;
}

static void every_pattern(enum fn fn, mlx_dtype t, const char *tn) {
  char name[64];
  snprintf(name, sizeof name, "%s %s", tn, fn == FN_EXP ? "exp" : "erf");
  cur_fn = fn;
  int n = 65536;
  uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)n);
  for (int i = 0; i < n; i++) bits[i] = (uint16_t)i;
  mlx_array u = mlx_array_new_data(bits, &n, 1, MLX_UINT16), x = mlx_array_new();
  CHECK_OK(mlx_view(&x, u, t, gpu_stream));
  mlx_array g = mlx_array_new(), zf = mlx_array_new_float(-0.0f), z = mlx_array_new();
  CHECK_OK(mlx_astype(&z, zf, t, gpu_stream));
  CHECK_OK(apply_fn(&g, x, fn));
  CHECK_OK(mlx_array_eval(g));
  CHECK_MSG(made_on_gpu(g), "%s: not computed on the GPU", name);
  size_t nb = 0;
  uint8_t *gb = bytes_of(g, &nb);
  int bad = 0, not_nearest = 0;
  for (int i = 0; gb && i < n; i++) {
    uint16_t r;
    memcpy(&r, gb + 2 * (size_t)i, 2);
    if (nan_bits(t, (const uint8_t *)&bits[i])) {
      if (!nan_bits(t, gb + 2 * (size_t)i) && bad++ < 5)
        CHECK_MSG(false, "%s(NaN pattern 0x%04x) = 0x%04x, not NaN", name, bits[i], r);
      continue;
    }
    double e = fn == FN_EXP ? exp(half_value(t, bits[i])) : erf(half_value(t, bits[i]));
    uint16_t lo, hi;
    around(t, e, &lo, &hi);
    if (r != lo && r != hi) {
      if (bad++ < 5)
        CHECK_MSG(false, "%s(%.9g) = 0x%04x (%.9g): not 0x%04x or 0x%04x around %.9g", name,
                  half_value(t, bits[i]), r, half_value(t, r), lo, hi, e);
      continue;
    }
    double dl = fabs(e - half_value(t, lo)), dh = fabs(half_value(t, hi) - e);
    uint16_t nearest = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
    if (fn == FN_EXP && hi == half_inf(t) && lo != hi) /* past the largest finite value, by half its spacing: inf */
      nearest = dl >= (half_value(t, lo) - half_value(t, (uint16_t)(lo - 1))) / 2 ? hi : lo;
    if (hi != lo && r != nearest) not_nearest++;
  }
  CHECK_MSG(bad == 0, "%s: %d of %d results not faithful", name, bad, n);
  printf("%s: %d of %d results faithful but not the nearest\n", name, not_nearest, n);
  /* the fused kernel: the same bits */
  mlx_closure plain = mlx_closure_new_func(fn_body), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, plain, false));
  mlx_array ins[2] = {x, z};
  mlx_vector_array in = mlx_vector_array_new_data(ins, 2), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, cf, in));
  mlx_array f = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&f, out, 0));
  CHECK_MSG(has_fused(f.ctx, 0), "%s: the compiled function is not a fused region", name);
  GPU_SAME_BITS(f, g, true, name);
  free(gb);
  free(bits);
  mlx_array tmp[] = {u, x, g, zf, z, f};
  for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) mlx_array_free(tmp[k]);
  mlx_vector_array_free(in), mlx_vector_array_free(out);
  mlx_closure_free(plain), mlx_closure_free(cf);
}

static int div_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new(), z = mlx_array_new(), q = mlx_array_new(),
            o = mlx_array_new();
  mlx_vector_array_get(&x, in, 0), mlx_vector_array_get(&y, in, 1), mlx_vector_array_get(&z, in, 2);
  mlx_divide(&q, x, y, gpu_stream);
  mlx_add(&o, q, z, gpu_stream);
  mlx_vector_array_set_value(res, o);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(z), mlx_array_free(q), mlx_array_free(o);
  return 0;
}

/* x: all 65536 patterns as a column; y: 4096 of them at a time as a row. */
static void div_every_pair(void) {
  mlx_stream s = gpu_stream;
  int n = 65536, chunk = 4096, xs[2] = {n, 1}, ys[2] = {1, chunk};
  uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)n);
  for (int i = 0; i < n; i++) bits[i] = (uint16_t)i;
  mlx_array ux = mlx_array_new_data(bits, xs, 2, MLX_UINT16), x = mlx_array_new(),
            xf = mlx_array_new(), zf = mlx_array_new_float(-0.0f), z = mlx_array_new();
  CHECK_OK(mlx_view(&x, ux, MLX_BFLOAT16, s));
  CHECK_OK(mlx_astype(&xf, x, MLX_FLOAT32, s));
  CHECK_OK(mlx_astype(&z, zf, MLX_BFLOAT16, s));
  mlx_closure plain = mlx_closure_new_func(div_body), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, plain, false));
  long bad_unfused = 0, bad_fused = 0;
  for (int c = 0; c < n / chunk; c++) {
    mlx_array uy = mlx_array_new_data(bits + (size_t)c * chunk, ys, 2, MLX_UINT16), y = mlx_array_new(),
              yf = mlx_array_new(), qf = mlx_array_new(), want = mlx_array_new(), got = mlx_array_new(),
              fused = mlx_array_new();
    CHECK_OK(mlx_view(&y, uy, MLX_BFLOAT16, s));
    CHECK_OK(mlx_astype(&yf, y, MLX_FLOAT32, s));
    CHECK_OK(mlx_divide(&qf, xf, yf, s));
    CHECK_OK(mlx_astype(&want, qf, MLX_BFLOAT16, s));
    CHECK_OK(mlx_divide(&got, x, y, s));
    mlx_array ins[3] = {x, y, z};
    mlx_vector_array in = mlx_vector_array_new_data(ins, 3), out = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    CHECK_OK(mlx_vector_array_get(&fused, out, 0));
    if (c == 0) CHECK_MSG(has_fused(fused.ctx, 0), "bfloat16 divide: the compiled one is not fused");
    bad_unfused += gpu_count_differing(got, want);
    bad_fused += gpu_count_differing(fused, want);
    mlx_array tmp[] = {uy, y, yf, qf, want, got, fused};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) mlx_array_free(tmp[k]);
    mlx_vector_array_free(in), mlx_vector_array_free(out);
  }
  CHECK_MSG(bad_unfused == 0, "bfloat16 divide: %ld of 2^32 quotients differ from float's rounded",
            bad_unfused);
  CHECK_MSG(bad_fused == 0, "bfloat16 divide, fused: %ld of 2^32 quotients differ from float's rounded",
            bad_fused);
  free(bits);
  mlx_array tmp[] = {ux, x, xf, zf, z};
  for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) mlx_array_free(tmp[k]);
  mlx_closure_free(plain), mlx_closure_free(cf);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  every_pattern(FN_EXP, MLX_BFLOAT16, "bfloat16");
  every_pattern(FN_EXP, MLX_FLOAT16, "float16");
  every_pattern(FN_ERF, MLX_BFLOAT16, "bfloat16");
  every_pattern(FN_ERF, MLX_FLOAT16, "float16"); /* erff, rounded: the same property */
  div_every_pair();
  mlx_stream_free(gpu_stream);
  return test_done();
}
