/* Every primitive with a CUDA kernel, on random inputs and layouts,
 * against the CPU backend (tolerances per dtype); mixed CPU/GPU graphs;
 * device memory back to its baseline. Skips without a GPU. */
#include <math.h>

#include "gpu_bits.h"

typedef int (*unary_fn)(mlx_array *, mlx_array, mlx_stream);
typedef int (*binary_fn)(mlx_array *, mlx_array, mlx_array, mlx_stream);

static const mlx_dtype float_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};

/* Runs f on both streams over the same inputs and compares. */
static void same_unary(const char *name, unary_fn f, mlx_array x, double rtol, double atol) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(f(&g, x, gpu_stream));
  CHECK_OK(f(&c, x, test_stream()));
  CHECK_SAME(g, c, rtol, atol, name);
  mlx_array_free(g);
  mlx_array_free(c);
}
static void same_binary(const char *name, binary_fn f, mlx_array x, mlx_array y, double rtol,
                        double atol) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(f(&g, x, y, gpu_stream));
  CHECK_OK(f(&c, x, y, test_stream()));
  CHECK_SAME(g, c, rtol, atol, name);
  mlx_array_free(g);
  mlx_array_free(c);
}

static void test_unary(void) {
  struct {
    const char *name;
    unary_fn f;
    double lo, hi;
  } ops[] = {
      {"abs", mlx_abs, -3, 3},         {"negative", mlx_negative, -3, 3},
      {"sign", mlx_sign, -3, 3},       {"square", mlx_square, -3, 3},
      {"sqrt", mlx_sqrt, 0.01, 4},     {"rsqrt", mlx_rsqrt, 0.01, 4},
      {"exp", mlx_exp, -5, 5},         {"expm1", mlx_expm1, -2, 2},
      {"log", mlx_log, 0.01, 5},       {"log1p", mlx_log1p, -0.5, 5},
      {"log2", mlx_log2, 0.01, 5},     {"log10", mlx_log10, 0.01, 5},
      {"sin", mlx_sin, -4, 4},         {"cos", mlx_cos, -4, 4},
      {"tan", mlx_tan, -1.2, 1.2},     {"arcsin", mlx_arcsin, -0.95, 0.95},
      {"arccos", mlx_arccos, -0.95, 0.95}, {"arctan", mlx_arctan, -4, 4},
      {"sinh", mlx_sinh, -3, 3},       {"cosh", mlx_cosh, -3, 3},
      {"tanh", mlx_tanh, -4, 4},       {"arcsinh", mlx_arcsinh, -4, 4},
      {"arccosh", mlx_arccosh, 1.05, 4}, {"arctanh", mlx_arctanh, -0.95, 0.95},
      {"sigmoid", mlx_sigmoid, -6, 6}, {"erf", mlx_erf, -3, 3},
      {"erfinv", mlx_erfinv, -0.95, 0.95}, {"floor", mlx_floor, -5, 5},
      {"ceil", mlx_ceil, -5, 5},
  };
  int shape[] = {37, 129};
  for (size_t t = 0; t < sizeof float_types / sizeof *float_types; t++)
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
      mlx_array x = gpu_rand(shape, 2, float_types[t], ops[i].lo, ops[i].hi);
      double rtol = gpu_rtol(float_types[t]) * (float_types[t] == MLX_FLOAT32 ? 4 : 1);
      if (float_types[t] == MLX_FLOAT64) rtol = 1e-12;
      same_unary(ops[i].name, ops[i].f, x, rtol, rtol * 1e-2);
      mlx_array_free(x);
      /* strided views whose inner extent packs: a transpose (inner stride
       * 48), every other row of a slice (aligned, inner stride 1) */
      int tsh[] = {64, 48}, sst[] = {0, 0}, sstop[] = {64, 48}, sstr[] = {2, 1};
      mlx_array y = gpu_rand(tsh, 2, float_types[t], ops[i].lo, ops[i].hi);
      mlx_array yt = mlx_array_new(), ys = mlx_array_new();
      CHECK_OK(mlx_transpose(&yt, y, test_stream()));
      CHECK_OK(mlx_slice(&ys, y, sst, 2, sstop, 2, sstr, 2, test_stream()));
      same_unary(ops[i].name, ops[i].f, yt, rtol, rtol * 1e-2);
      same_unary(ops[i].name, ops[i].f, ys, rtol, rtol * 1e-2);
      mlx_array_free(y), mlx_array_free(yt), mlx_array_free(ys);
    }
  /* integer unary ops */
  mlx_dtype ints[] = {MLX_INT32, MLX_INT8, MLX_UINT16, MLX_INT64};
  for (size_t t = 0; t < 4; t++) {
    mlx_array x = gpu_rand(shape, 2, ints[t], -100, 100);
    same_unary("abs int", mlx_abs, x, 0, 0);
    same_unary("negative int", mlx_negative, x, 0, 0);
    same_unary("square int", mlx_square, x, 0, 0);
    same_unary("sign int", mlx_sign, x, 0, 0);
    same_unary("bitwise_invert", mlx_bitwise_invert, x, 0, 0);
    mlx_array_free(x);
  }
}

static void test_binary(void) {
  struct {
    const char *name;
    binary_fn f;
    bool ints, floats;
  } ops[] = {
      {"add", mlx_add, true, true},          {"subtract", mlx_subtract, true, true},
      {"multiply", mlx_multiply, true, true}, {"divide", mlx_divide, false, true},
      {"maximum", mlx_maximum, true, true},  {"minimum", mlx_minimum, true, true},
      {"power", mlx_power, true, true},      {"remainder", mlx_remainder, true, true},
      {"floor_divide", mlx_floor_divide, true, true}, {"arctan2", mlx_arctan2, false, true},
      {"logaddexp", mlx_logaddexp, false, true}, {"equal", mlx_equal, true, true},
      {"not_equal", mlx_not_equal, true, true}, {"greater", mlx_greater, true, true},
      {"greater_equal", mlx_greater_equal, true, true}, {"less", mlx_less, true, true},
      {"less_equal", mlx_less_equal, true, true}, {"bitwise_and", mlx_bitwise_and, true, false},
      {"bitwise_or", mlx_bitwise_or, true, false}, {"bitwise_xor", mlx_bitwise_xor, true, false},
      {"left_shift", mlx_left_shift, true, false}, {"right_shift", mlx_right_shift, true, false},
  };
  mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                       MLX_INT32,   MLX_INT64,   MLX_UINT8,    MLX_INT8};
  /* inner extents 33 (element kernels) and 64 (packs of up to 16) */
  int shapes[2][3] = {{5, 64, 33}, {5, 24, 64}};
  for (int si = 0; si < 2; si++)
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    int *shape = shapes[si];
    bool is_float = t < 4;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
      if (is_float ? !ops[i].floats : !ops[i].ints) continue;
      bool shift = strstr(ops[i].name, "shift") != NULL, pw = strcmp(ops[i].name, "power") == 0;
      double lo = shift ? 0 : pw ? 0.2 : -20, hi = shift ? 9 : pw ? 3 : 20;
      mlx_array x = gpu_rand(shape, 3, types[t], is_float || !pw ? -20 : 0, 20);
      mlx_array y = gpu_rand(shape, 3, types[t], lo, hi); /* integer y has zeros: x % 0 etc. */
      if (pw && is_float) {
        mlx_array_free(x);
        x = gpu_rand(shape, 3, types[t], 0.1, 3);
      }
      double rtol = is_float ? gpu_rtol(types[t]) * 4 : 0;
      same_binary(ops[i].name, ops[i].f, x, y, rtol, rtol);
      /* broadcast and strided: y's transpose-of-transpose view, x as a row */
      int ax[] = {0, 2, 1};
      mlx_array yt = mlx_array_new(), ytt = mlx_array_new(), row = mlx_array_new();
      CHECK_OK(mlx_transpose_axes(&yt, y, ax, 3, test_stream()));
      mlx_array_eval(yt);
      CHECK_OK(mlx_contiguous(&ytt, yt, false, test_stream()));
      mlx_array_eval(ytt);
      mlx_array_free(yt);
      yt = mlx_array_new();
      CHECK_OK(mlx_transpose_axes(&yt, ytt, ax, 3, test_stream())); /* y's values, strided */
      int start[] = {2, 0, 0}, stop[] = {3, shape[1], shape[2]}, str[] = {1, 1, 1};
      CHECK_OK(mlx_slice(&row, x, start, 3, stop, 3, str, 3, test_stream()));
      same_binary(ops[i].name, ops[i].f, row, yt, rtol, rtol);
      /* a column broadcast along the inner axis (x - max(x, -1) and the like) */
      mlx_array col = mlx_array_new();
      CHECK_OK(mlx_max_axis(&col, y, -1, true, test_stream()));
      same_binary(ops[i].name, ops[i].f, x, col, rtol, rtol);
      same_binary(ops[i].name, ops[i].f, col, yt, rtol, rtol);
      mlx_array_free(col);
      mlx_array_free(yt);
      mlx_array_free(ytt);
      mlx_array_free(row);
      mlx_array_free(x);
      mlx_array_free(y);
    }
  }
  /* logical ops on bool */
  int *shape = shapes[0];
  mlx_array x = gpu_rand(shape, 3, MLX_BOOL, 0, 1), y = gpu_rand(shape, 3, MLX_BOOL, -1, 1);
  same_binary("logical_and", mlx_logical_and, x, y, 0, 0);
  same_binary("logical_or", mlx_logical_or, x, y, 0, 0);
  same_unary("logical_not", mlx_logical_not, x, 0, 0);
  mlx_array c = mlx_array_new(), g = mlx_array_new(), a = gpu_rand(shape, 3, MLX_FLOAT32, -1, 1),
            b = gpu_rand(shape, 3, MLX_FLOAT32, -1, 1);
  CHECK_OK(mlx_where(&g, x, a, b, gpu_stream));
  CHECK_OK(mlx_where(&c, x, a, b, test_stream()));
  CHECK_SAME(g, c, 0, 0, "where");
  mlx_array_free(g);
  mlx_array_free(c);
  for (int si = 0; si < 2; si++) { /* a broadcast condition; a column; a strided view */
    int *sh = shapes[si], csh[] = {1, sh[1], sh[2]}, ksh[] = {sh[0], sh[1], 1}, ax[] = {0, 2, 1};
    mlx_array cond = gpu_rand(csh, 3, MLX_BOOL, -1, 1), p = gpu_rand(sh, 3, MLX_BFLOAT16, -1, 1),
              q = gpu_rand(ksh, 3, MLX_BFLOAT16, -1, 1), pt = mlx_array_new(), pc = mlx_array_new(),
              ptt = mlx_array_new();
    CHECK_OK(mlx_transpose_axes(&pt, p, ax, 3, test_stream()));
    CHECK_OK(mlx_contiguous(&pc, pt, false, test_stream()));
    CHECK_OK(mlx_transpose_axes(&ptt, pc, ax, 3, test_stream()));
    mlx_array wg = mlx_array_new(), wc = mlx_array_new();
    CHECK_OK(mlx_where(&wg, cond, p, q, gpu_stream));
    CHECK_OK(mlx_where(&wc, cond, p, q, test_stream()));
    CHECK_SAME(wg, wc, 0, 0, "where, broadcast");
    mlx_array_free(wg), mlx_array_free(wc);
    wg = mlx_array_new(), wc = mlx_array_new();
    CHECK_OK(mlx_where(&wg, cond, q, ptt, gpu_stream));
    CHECK_OK(mlx_where(&wc, cond, q, ptt, test_stream()));
    CHECK_SAME(wg, wc, 0, 0, "where, strided");
    mlx_array_free(wg), mlx_array_free(wc);
    mlx_array_free(cond), mlx_array_free(p), mlx_array_free(q), mlx_array_free(pt);
    mlx_array_free(pc), mlx_array_free(ptt);
  }
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(x);
  mlx_array_free(y);
}

static void test_astype(void) {
  mlx_dtype all[] = {MLX_BOOL,  MLX_UINT8,   MLX_UINT16,  MLX_UINT32, MLX_UINT64,
                     MLX_INT8,  MLX_INT16,   MLX_INT32,   MLX_INT64,  MLX_FLOAT16,
                     MLX_FLOAT32, MLX_FLOAT64, MLX_BFLOAT16};
  int shape[] = {300};
  /* out-of-range values, NaN and infinities included */
  mlx_array base = gpu_rand(shape, 1, MLX_FLOAT32, -70000, 70000);
  float special[] = {NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 1e20f, -0.5f, 255.5f};
  int sshape[] = {8};
  mlx_array sp = mlx_array_new_data(special, sshape, 1, MLX_FLOAT32), x = mlx_array_new();
  mlx_vector_array v = mlx_vector_array_new();
  mlx_vector_array_append_value(v, base);
  mlx_vector_array_append_value(v, sp);
  CHECK_OK(mlx_concatenate_axis(&x, v, 0, test_stream()));
  mlx_array_eval(x);
  for (size_t i = 0; i < 13; i++) {
    mlx_array xi = mlx_array_new();
    CHECK_OK(mlx_astype(&xi, x, all[i], test_stream()));
    mlx_array_eval(xi);
    for (size_t o = 0; o < 13; o++) {
      mlx_array g = mlx_array_new(), c = mlx_array_new();
      CHECK_OK(mlx_astype(&g, xi, all[o], gpu_stream));
      CHECK_OK(mlx_astype(&c, xi, all[o], test_stream()));
      char what[64];
      snprintf(what, sizeof what, "astype %d -> %d", (int)all[i], (int)all[o]);
      CHECK_SAME(g, c, 0, 0, what);
      mlx_array_free(g);
      mlx_array_free(c);
    }
    mlx_array_free(xi);
  }
  mlx_vector_array_free(v);
  mlx_array_free(sp);
  mlx_array_free(base);
  mlx_array_free(x);
}

typedef int (*reduce_fn)(mlx_array *, mlx_array, const int *, size_t, bool, mlx_stream);

static void test_reduce(void) {
  struct {
    const char *name;
    reduce_fn f;
  } ops[] = {{"sum", mlx_sum_axes},   {"mean", mlx_mean_axes}, {"max", mlx_max_axes},
             {"min", mlx_min_axes},   {"prod", mlx_prod_axes}, {"logsumexp", mlx_logsumexp_axes},
             {"all", mlx_all_axes},   {"any", mlx_any_axes}};
  /* rows of 70 (element loads), 64 (a few 16-byte packs), 4096 (four packs
   * in flight per thread for float32, two for 16-bit) and 8200 (a partial
   * last group); the last three only over the trailing axes */
  int shapes[4][3] = {{6, 50, 70}, {6, 50, 64}, {3, 5, 4096}, {2, 3, 8200}};
  int axes_sets[][3] = {{2}, {1}, {0}, {0, 2}, {1, 2}, {0, 1, 2}};
  size_t naxes[] = {1, 1, 1, 2, 2, 3};
  mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_INT32};
  for (int si = 0; si < 4; si++)
  for (size_t t = 0; t < 4; t++) {
    int *shape = shapes[si];
    bool prod_safe = si == 0;
    mlx_array x = gpu_rand(shape, 3, types[t], t == 3 ? -5 : 0.5, t == 3 ? 5 : 1.5);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
      for (size_t s = 0; s < 6; s++)
        for (int keep = 0; keep < 2; keep++) {
          if (si > 0 && s != 0 && s != 4) continue;
          if (!strcmp(ops[i].name, "prod") && (t == 3 || naxes[s] > 1 || !prod_safe)) continue;
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          CHECK_OK(ops[i].f(&g, x, axes_sets[s], naxes[s], keep, gpu_stream));
          CHECK_OK(ops[i].f(&c, x, axes_sets[s], naxes[s], keep, test_stream()));
          /* summation order differs: tolerance grows with the row length */
          double rtol = types[t] == MLX_INT32 ? 0 : types[t] == MLX_FLOAT32 ? 2e-5 : 2e-2;
          CHECK_SAME(g, c, rtol, rtol, ops[i].name);
          mlx_array_free(g);
          mlx_array_free(c);
        }
    /* var and std over a non-trailing axis, ddof 1 */
    for (int k = 0; k < 2; k++) {
      mlx_array g = mlx_array_new(), c = mlx_array_new();
      int ax = k ? 1 : 2;
      if (k) {
        CHECK_OK(mlx_var_axes(&g, x, &ax, 1, false, 1, gpu_stream));
        CHECK_OK(mlx_var_axes(&c, x, &ax, 1, false, 1, test_stream()));
      } else {
        CHECK_OK(mlx_std_axes(&g, x, &ax, 1, true, 0, gpu_stream));
        CHECK_OK(mlx_std_axes(&c, x, &ax, 1, true, 0, test_stream()));
      }
      double rtol = types[t] == MLX_FLOAT32 || types[t] == MLX_INT32 ? 1e-4 : 3e-2;
      CHECK_SAME(g, c, rtol, rtol, k ? "var" : "std");
      mlx_array_free(g);
      mlx_array_free(c);
    }
    mlx_array_free(x);
  }
}

/* Row reductions on the layouts the GPU plans differently: many short rows
 * (a warp per row, several rows per block; the last block part empty),
 * rows of a few packs (two warps per row), and few long rows cut into
 * segments whose partial results are merged (aligned and not), with
 * infinities and NaN in the segments (logsumexp, max, min: the CPU's
 * rules), var/std merged from segments, and a full reduction. */
static void test_reduce_layouts(void) {
  int shapes[][2] = {{8192, 64}, {9001, 70}, {4096, 512}, {3, 300000}, {2, 1000003}};
  mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_FLOAT16, MLX_INT32, MLX_FLOAT64};
  struct {
    const char *name;
    reduce_fn f;
  } ops[] = {{"sum", mlx_sum_axes}, {"mean", mlx_mean_axes}, {"max", mlx_max_axes},
             {"min", mlx_min_axes}, {"logsumexp", mlx_logsumexp_axes}, {"any", mlx_any_axes}};
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
      bool is_int = types[t] == MLX_INT32;
      mlx_array x = gpu_rand(shapes[si], 2, types[t], is_int ? -5 : -2, is_int ? 5 : 2);
      int last[] = {1}, both[] = {0, 1};
      if (!is_int) { /* var and std (from segments, on the long rows) */
        for (int k = 0; k < 2; k++) {
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          if (k) {
            CHECK_OK(mlx_var_axes(&g, x, last, 1, false, 1, gpu_stream));
            CHECK_OK(mlx_var_axes(&c, x, last, 1, false, 1, test_stream()));
          } else {
            CHECK_OK(mlx_std_axes(&g, x, last, 1, true, 0, gpu_stream));
            CHECK_OK(mlx_std_axes(&c, x, last, 1, true, 0, test_stream()));
          }
          double rtol = types[t] == MLX_FLOAT64 ? 1e-10 : types[t] == MLX_FLOAT32 ? 1e-4 : 3e-2;
          CHECK_SAME(g, c, rtol, rtol, k ? "var (layouts)" : "std (layouts)");
          mlx_array_free(g);
          mlx_array_free(c);
        }
      }
      if (si >= 3 && !is_int) { /* -inf in row 0, NaN in row 1, +inf in the last row */
        int64_t R = shapes[si][0], L = shapes[si][1];
        mlx_array f = mlx_array_new();
        CHECK_OK(mlx_astype(&f, x, MLX_FLOAT64, test_stream()));
        mlx_array_eval(f);
        double *h = malloc((size_t)(R * L) * sizeof *h);
        memcpy(h, mlx_array_data_float64(f), (size_t)(R * L) * sizeof *h);
        h[L / 2] = -INFINITY;
        h[L + 7] = NAN;
        h[R * L - 1] = INFINITY;
        mlx_array hf = mlx_array_new_data(h, shapes[si], 2, MLX_FLOAT64);
        CHECK_OK(mlx_astype(&x, hf, types[t], test_stream()));
        mlx_array_eval(x);
        free(h);
        mlx_array_free(hf);
        mlx_array_free(f);
      }
      for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int full = 0; full < 2; full++) {
          if (full && si < 3) continue;
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          CHECK_OK(ops[i].f(&g, x, full ? both : last, full ? 2 : 1, false, gpu_stream));
          CHECK_OK(ops[i].f(&c, x, full ? both : last, full ? 2 : 1, false, test_stream()));
          double rtol = is_int ? 0 : types[t] == MLX_FLOAT64 ? 1e-10 : types[t] == MLX_FLOAT32 ? 1e-4 : 2e-2;
          char what[96];
          snprintf(what, sizeof what, "%s over (%d, %d)%s, dtype %d", ops[i].name, shapes[si][0],
                   shapes[si][1], full ? " all" : "", (int)types[t]);
          /* sums of L values of about 1: their float rounding grows with L */
          double atol = is_int ? 0 : i == 0 ? 1e-6 * shapes[si][1] : 1e-6;
          CHECK_SAME(g, c, rtol, atol, what);
          mlx_array_free(g);
          mlx_array_free(c);
        }
      mlx_array_free(x);
    }
}

/* Reductions over a middle or leading axis, read in place by the column
 * kernel: many columns; few columns with long R cut into segments (a
 * partial last column tile too); var, which takes the row path. */
static void test_reduce_columns(void) {
  int shapes[][3] = {{1, 4096, 96}, {3, 2000, 33}, {64, 9, 300}};
  mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_INT32, MLX_FLOAT64};
  struct {
    const char *name;
    reduce_fn f;
  } ops[] = {{"sum", mlx_sum_axes}, {"mean", mlx_mean_axes}, {"max", mlx_max_axes},
             {"min", mlx_min_axes}, {"any", mlx_any_axes}, {"all", mlx_all_axes}};
  for (int si = 0; si < 3; si++)
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
      bool is_int = types[t] == MLX_INT32;
      mlx_array x = gpu_rand(shapes[si], 3, types[t], is_int ? -5 : -2, is_int ? 5 : 2);
      int axes[][2] = {{1}, {0, 1}};
      for (int ai = 0; ai < 2; ai++)
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          CHECK_OK(ops[i].f(&g, x, axes[ai], (size_t)ai + 1, ai == 0, gpu_stream));
          CHECK_OK(ops[i].f(&c, x, axes[ai], (size_t)ai + 1, ai == 0, test_stream()));
          double rtol = is_int ? 0 : types[t] == MLX_FLOAT64 ? 1e-10 : types[t] == MLX_FLOAT32 ? 1e-4 : 2e-2;
          double atol = is_int ? 0 : i == 0 ? 1e-6 * shapes[si][1] * (ai ? shapes[si][0] : 1) : 1e-6;
          char what[96];
          snprintf(what, sizeof what, "%s over columns of (%d, %d, %d), axes %d, dtype %d", ops[i].name,
                   shapes[si][0], shapes[si][1], shapes[si][2], ai, (int)types[t]);
          CHECK_SAME(g, c, rtol, atol, what);
          mlx_array_free(g);
          mlx_array_free(c);
        }
      if (!is_int) {
        mlx_array g = mlx_array_new(), c = mlx_array_new();
        int ax = 1;
        CHECK_OK(mlx_var_axes(&g, x, &ax, 1, false, 0, gpu_stream));
        CHECK_OK(mlx_var_axes(&c, x, &ax, 1, false, 0, test_stream()));
        CHECK_SAME(g, c, types[t] == MLX_FLOAT64 ? 1e-10 : types[t] == MLX_FLOAT32 ? 1e-4 : 3e-2, 1e-6,
                   "var over columns (the row path)");
        mlx_array_free(g);
        mlx_array_free(c);
      }
      mlx_array_free(x);
    }
}

typedef int (*softmax_fn)(mlx_array *, mlx_array, const int *, size_t, bool, mlx_stream);

/* Softmax on the GPU over any axes: the last one (in place), others and
 * several (rows in permuted scratch, copied back), all of them, and
 * inputs that are transposed, sliced (the last position of a sequence) or
 * broadcast; every result made on the GPU. */
static void softmax_case(mlx_array x, const int *axes, int naxes, const char *what) {
  mlx_dtype t = mlx_array_dtype(x);
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_softmax_axes(&g, x, axes, (size_t)naxes, false, gpu_stream));
  CHECK_OK(mlx_softmax_axes(&c, x, axes, (size_t)naxes, false, test_stream()));
  CHECK_OK(mlx_array_eval(g));
  char msg[128];
  snprintf(msg, sizeof msg, "softmax %s, dtype %d, %d axes from %d", what, (int)t, naxes, axes[0]);
  CHECK_MSG(made_on_gpu(g), "%s: computed on the host", msg);
  double rtol = t == MLX_FLOAT64 ? 1e-12 : gpu_rtol(t) * 8;
  CHECK_SAME(g, c, rtol, 1e-7, msg);
  mlx_array_free(g), mlx_array_free(c);
}
/* Rows of 1000 (a block per row); many rows of 64 and of 512 (a warp or
 * two per row, several rows per block, the last block part empty). */
static void test_softmax(void) {
  int shapes[][3] = {{7, 33, 1000}, {1, 8201, 64}, {1, 4097, 512}};
  for (int si = 0; si < 3; si++)
    for (size_t t = 0; t < 4; t++) {
      mlx_array x = gpu_rand(shapes[si], 3, float_types[t], -8, 8);
      int last[1] = {2}, mid[1] = {1}, first[1] = {0}, outer[2] = {0, 2}, two[2] = {1, 2},
          all[3] = {0, 1, 2};
      softmax_case(x, last, 1, "last axis");
      if (si == 0) {
        softmax_case(x, mid, 1, "middle axis");
        softmax_case(x, first, 1, "first axis");
        softmax_case(x, outer, 2, "axes 0 and 2");
        softmax_case(x, two, 2, "the last two axes");
        softmax_case(x, all, 3, "every axis");
        mlx_array xt = mlx_array_new(), sl = mlx_array_new(), b = mlx_array_new();
        CHECK_OK(mlx_transpose(&xt, x, test_stream())); /* (1000, 33, 7) */
        softmax_case(xt, last, 1, "transposed");
        softmax_case(xt, first, 1, "transposed, first axis");
        int start[3] = {0, 32, 0}, stop[3] = {7, 33, 1000}, step[3] = {1, 1, 1};
        CHECK_OK(mlx_slice(&sl, x, start, 3, stop, 3, step, 3, test_stream()));
        softmax_case(sl, last, 1, "sliced (the last position)");
        int bs[3] = {7, 33, 1000};
        mlx_array row = mlx_array_new();
        CHECK_OK(mlx_slice(&row, x, (int[]){0, 0, 0}, 3, (int[]){1, 33, 1000}, 3, step, 3,
                           test_stream()));
        CHECK_OK(mlx_broadcast_to(&b, row, bs, 3, test_stream())); /* over axis 0 */
        softmax_case(b, last, 1, "broadcast");
        softmax_case(b, mid, 1, "broadcast, middle axis");
        mlx_array_free(xt), mlx_array_free(sl), mlx_array_free(b), mlx_array_free(row);
      }
      mlx_array_free(x);
    }
}

static void matmul_case(int M, int K, int N, mlx_dtype t, bool ta, bool tb, int batch) {
  int sa[] = {batch, ta ? K : M, ta ? M : K}, sb[] = {1, tb ? N : K, tb ? K : N};
  mlx_array a = gpu_rand(batch ? sa : sa + 1, batch ? 3 : 2, t, -1, 1);
  mlx_array b = gpu_rand(batch ? sb : sb + 1, batch ? 3 : 2, t, -1, 1);
  mlx_array at = mlx_array_new(), bt = mlx_array_new(), g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(ta ? mlx_swapaxes(&at, a, -1, -2, test_stream()) : mlx_array_set(&at, a));
  CHECK_OK(tb ? mlx_swapaxes(&bt, b, -1, -2, test_stream()) : mlx_array_set(&bt, b));
  CHECK_OK(mlx_matmul(&g, at, bt, gpu_stream));
  CHECK_OK(mlx_matmul(&c, at, bt, test_stream()));
  double tol = t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 1e-5 * sqrt(K) : 2e-2;
  char what[96];
  snprintf(what, sizeof what, "matmul %dx%dx%d dtype %d ta %d tb %d batch %d", M, K, N, (int)t,
           ta, tb, batch);
  CHECK_SAME(g, c, tol, tol, what);
  mlx_array_free(g);
  mlx_array_free(c);
  if (!batch && t == MLX_FLOAT32) { /* addmm: out = 0.5 a b + 2 c */
    int so[] = {M, N};
    mlx_array cc = gpu_rand(so, 2, t, -1, 1);
    g = mlx_array_new();
    c = mlx_array_new();
    CHECK_OK(mlx_addmm(&g, cc, at, bt, 0.5f, 2.0f, gpu_stream));
    CHECK_OK(mlx_addmm(&c, cc, at, bt, 0.5f, 2.0f, test_stream()));
    CHECK_SAME(g, c, tol, tol, "addmm");
    mlx_array_free(g);
    mlx_array_free(c);
    mlx_array_free(cc);
  }
  mlx_array_free(at);
  mlx_array_free(bt);
  mlx_array_free(a);
  mlx_array_free(b);
}

/* gather_mm on the GPU (one batched GEMM over pointers built from the
 * indices on the device) against the CPU: a mixture of experts' decode
 * (each token's row times its top-2 experts, broadcast indices) and
 * prefill (16 rows, expert weights transposed, no lhs indices), every
 * float dtype, each made on the GPU. */
static void gather_mm_case(mlx_array a, mlx_array b, mlx_array li, mlx_array ri, const char *what) {
  mlx_dtype t = mlx_array_dtype(a);
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_gather_mm(&g, a, b, li, ri, false, gpu_stream));
  CHECK_OK(mlx_gather_mm(&c, a, b, li, ri, false, test_stream()));
  CHECK_OK(mlx_array_eval(g));
  char msg[96];
  snprintf(msg, sizeof msg, "gather_mm %s, dtype %d", what, (int)t);
  CHECK_MSG(made_on_gpu(g), "%s: computed on the host", msg);
  int K = mlx_array_shape(a)[mlx_array_ndim(a) - 1];
  double tol = t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 1e-5 * sqrt(K) : 2e-2;
  CHECK_SAME(g, c, tol, tol, msg);
  mlx_array_free(g), mlx_array_free(c);
}
static void test_gather_mm(void) {
  enum { T = 6, E = 8, K = 256, N = 384 };
  for (size_t ti = 0; ti < 4; ti++) {
    mlx_dtype t = float_types[ti];
    int sx[] = {T, 1, K}, sw[] = {E, K, N}, swt[] = {E, N, K}, sp[] = {3, 16, K};
    int stok[] = {T, 1}, stop2[] = {T, 2}, s5[] = {5};
    mlx_array x = gpu_rand(sx, 3, t, -1, 1), w = gpu_rand(sw, 3, t, -1, 1);
    mlx_array tok = gpu_rand(stok, 2, MLX_UINT32, 0, T - 1);
    mlx_array top2 = gpu_rand(stop2, 2, MLX_UINT32, 0, E - 1);
    mlx_array ar = mlx_array_new(), tokr = mlx_array_new();
    CHECK_OK(mlx_arange(&ar, 0, T, 1, MLX_UINT32, test_stream()));
    CHECK_OK(mlx_reshape(&tokr, ar, stok, 2, test_stream()));
    gather_mm_case(x, w, tokr, top2, "decode, top-2 experts");
    gather_mm_case(x, w, tok, top2, "decode, shuffled rows");
    mlx_array wt0 = gpu_rand(swt, 3, t, -1, 1), wt = mlx_array_new();
    CHECK_OK(mlx_swapaxes(&wt, wt0, -1, -2, test_stream()));
    mlx_array p = gpu_rand(sp, 3, t, -1, 1);
    mlx_array l5 = gpu_rand(s5, 1, MLX_UINT32, 0, 2), r5 = gpu_rand(s5, 1, MLX_UINT32, 0, E - 1);
    gather_mm_case(p, wt, l5, r5, "prefill, transposed experts");
    mlx_array none = {0}, r3 = gpu_rand((int[]){3}, 1, MLX_UINT32, 0, E - 1);
    gather_mm_case(p, w, none, r3, "no lhs indices");
    mlx_array_free(x), mlx_array_free(w), mlx_array_free(tok), mlx_array_free(top2);
    mlx_array_free(ar), mlx_array_free(tokr), mlx_array_free(wt0), mlx_array_free(wt);
    mlx_array_free(p), mlx_array_free(l5), mlx_array_free(r5), mlx_array_free(r3);
  }
}

/* complex64 products through cuBLAS's cgemm: random real and imaginary
 * parts, transposed operands, a broadcast batch, a vector times a matrix
 * and addmm with c; made on the GPU, within float rounding of the CPU's. */
static mlx_array complex_rand(const int *shape, int nd) {
  mlx_array re = gpu_rand(shape, nd, MLX_FLOAT32, -1, 1), im = gpu_rand(shape, nd, MLX_FLOAT32, -1, 1);
  mlx_array j = mlx_array_new_complex(0.0f, 1.0f), ij = mlx_array_new(), z = mlx_array_new();
  CHECK_OK(mlx_multiply(&ij, im, j, test_stream()));
  CHECK_OK(mlx_add(&z, re, ij, test_stream()));
  CHECK_OK(mlx_array_eval(z));
  mlx_array_free(re), mlx_array_free(im), mlx_array_free(j), mlx_array_free(ij);
  return z;
}
/* CHECK_SAME of the real parts (astype's float64), then of the imaginary */
static void same_complex(mlx_array g, mlx_array c, double tol, const char *what) {
  CHECK_SAME(g, c, tol, tol, what);
  mlx_array gi = mlx_array_new(), ci = mlx_array_new();
  CHECK_OK(mlx_imag(&gi, g, test_stream()));
  CHECK_OK(mlx_imag(&ci, c, test_stream()));
  char msg[112];
  snprintf(msg, sizeof msg, "%s (imaginary parts)", what);
  CHECK_SAME(gi, ci, tol, tol, msg);
  mlx_array_free(gi), mlx_array_free(ci);
}
static void test_matmul_complex(void) {
  int shapes[][2][3] = {{{33, 70}, {70, 45}}, {{1, 256}, {256, 300}}};
  for (int si = 0; si < 2; si++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        int *sa = shapes[si][0], *sb = shapes[si][1];
        int sa2[2] = {ta ? sa[1] : sa[0], ta ? sa[0] : sa[1]}, sb2[2] = {tb ? sb[1] : sb[0], tb ? sb[0] : sb[1]};
        mlx_array a = complex_rand(sa2, 2), b = complex_rand(sb2, 2);
        mlx_array at = mlx_array_new(), bt = mlx_array_new(), g = mlx_array_new(), c = mlx_array_new();
        CHECK_OK(ta ? mlx_transpose(&at, a, test_stream()) : mlx_array_set(&at, a));
        CHECK_OK(tb ? mlx_transpose(&bt, b, test_stream()) : mlx_array_set(&bt, b));
        CHECK_OK(mlx_matmul(&g, at, bt, gpu_stream));
        CHECK_OK(mlx_matmul(&c, at, bt, test_stream()));
        CHECK_OK(mlx_array_eval(g));
        char what[80];
        snprintf(what, sizeof what, "complex matmul %dx%dx%d ta %d tb %d", sa[0], sa[1], sb[1], ta, tb);
        CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
        double tol = 2e-5 * sqrt(sa[1]);
        same_complex(g, c, tol, what);
        if (si == 0 && !ta && !tb) { /* addmm: 0.5 a b + 2 c */
          int so[2] = {sa[0], sb[1]};
          mlx_array cc = complex_rand(so, 2), g2 = mlx_array_new(), c2 = mlx_array_new();
          CHECK_OK(mlx_addmm(&g2, cc, at, bt, 0.5f, 2.0f, gpu_stream));
          CHECK_OK(mlx_addmm(&c2, cc, at, bt, 0.5f, 2.0f, test_stream()));
          CHECK_OK(mlx_array_eval(g2));
          CHECK_MSG(made_on_gpu(g2), "complex addmm: computed on the host");
          same_complex(g2, c2, tol, "complex addmm");
          mlx_array_free(cc), mlx_array_free(g2), mlx_array_free(c2);
        }
        mlx_array_free(a), mlx_array_free(b), mlx_array_free(at), mlx_array_free(bt);
        mlx_array_free(g), mlx_array_free(c);
      }
  /* a batch of 3 against one broadcast matrix */
  int s3[3] = {3, 8, 64}, s1[3] = {1, 64, 16};
  mlx_array a = complex_rand(s3, 3), b = complex_rand(s1, 3), g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_matmul(&g, a, b, gpu_stream));
  CHECK_OK(mlx_matmul(&c, a, b, test_stream()));
  CHECK_OK(mlx_array_eval(g));
  CHECK_MSG(made_on_gpu(g), "complex batched matmul: computed on the host");
  same_complex(g, c, 2e-4, "complex batched matmul");
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(g), mlx_array_free(c);
}

static void test_matmul(void) {
  for (size_t t = 0; t < 4; t++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        matmul_case(33, 70, 45, float_types[t], ta, tb, 0);
        matmul_case(8, 64, 16, float_types[t], ta, tb, 3); /* b broadcast over the batch */
      }
  matmul_case(1, 256, 300, MLX_FLOAT32, false, true, 0); /* vector x matrix (decode) */
  matmul_case(300, 256, 1, MLX_FLOAT32, false, false, 0);
}

/* GPU results feed CPU ops and back; host reads see the GPU's values. */
static void test_mixed(void) {
  int shape[] = {1000};
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -1, 1);
  mlx_array g = mlx_array_new(), h = mlx_array_new(), k = mlx_array_new(), ref = mlx_array_new();
  CHECK_OK(mlx_exp(&g, x, gpu_stream));              /* GPU */
  CHECK_OK(mlx_cumsum(&h, g, 0, false, true, test_stream())); /* CPU reads the GPU's result */
  CHECK_OK(mlx_multiply(&k, h, g, gpu_stream));      /* GPU reads the CPU's result */
  mlx_array e = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_exp(&e, x, test_stream()));
  CHECK_OK(mlx_cumsum(&c, e, 0, false, true, test_stream()));
  CHECK_OK(mlx_multiply(&ref, c, e, test_stream()));
  CHECK_SAME(k, ref, 1e-5, 1e-6, "mixed graph");
  /* item and data of a GPU array */
  mlx_array s = mlx_array_new();
  CHECK_OK(mlx_sum(&s, k, false, gpu_stream));
  CHECK_OK(mlx_array_eval(s));
  float v = 0;
  CHECK_OK(mlx_array_item_float32(&v, s));
  const float *kd = mlx_array_data_float32(k);
  double total = 0;
  for (int i = 0; kd && i < 1000; i++) total += kd[i];
  CHECK(kd != NULL && fabs(total - v) <= 1e-4 * fabs(total));
  mlx_array_free(s);
  mlx_array_free(e);
  mlx_array_free(c);
  mlx_array_free(x);
  mlx_array_free(g);
  mlx_array_free(h);
  mlx_array_free(k);
  mlx_array_free(ref);
}

static int gelu_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), t = mlx_array_new(), u = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_array half = mlx_array_new_float(0.5f), one = mlx_array_new_float(1.0f),
            r2 = mlx_array_new_float(0.70710678f);
  mlx_stream s = mlx_stream_new();
  int rc = mlx_multiply(&t, x, r2, s) || mlx_erf(&u, t, s) || mlx_add(&t, u, one, s) ||
           mlx_multiply(&u, t, x, s) || mlx_multiply(&t, u, half, s) ||
           mlx_vector_array_set_value(res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  mlx_array_free(u);
  mlx_array_free(half);
  mlx_array_free(one);
  mlx_array_free(r2);
  return rc;
}

/* A compiled function with the GPU as default device gives the CPU's
 * values. */
static void test_compile_on_gpu(void) {
  int shape[] = {4096};
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -3, 3);
  mlx_closure f = mlx_closure_new_func(gelu_fn), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_vector_array in = mlx_vector_array_new_value(x), og = mlx_vector_array_new(),
                   oc = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&oc, cf, in)); /* CPU default */
  mlx_device gpu = mlx_device_new_type(MLX_GPU, 0), cpu = mlx_device_new_type(MLX_CPU, 0);
  CHECK_OK(mlx_set_default_device(gpu));
  CHECK_OK(mlx_closure_apply(&og, cf, in));
  CHECK_OK(mlx_closure_apply(&og, cf, in)); /* cached */
  CHECK_OK(mlx_set_default_device(cpu));
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  mlx_vector_array_get(&g, og, 0);
  mlx_vector_array_get(&c, oc, 0);
  CHECK_SAME(g, c, 1e-5, 1e-6, "compiled gelu on the GPU");
  mlx_array_free(g);
  mlx_array_free(c);
  mlx_device_free(gpu);
  mlx_device_free(cpu);
  mlx_vector_array_free(in);
  mlx_vector_array_free(og);
  mlx_vector_array_free(oc);
  mlx_closure_free(f);
  mlx_closure_free(cf);
  mlx_array_free(x);
}

/* argmax / argmin: every axis and the whole array, contiguous and
 * transposed, with ties (small integers as values) and NaNs. */
static void test_argreduce(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_FLOAT16, MLX_FLOAT64, MLX_INT32,
                                    MLX_UINT8};
  int sh[3] = {5, 7, 300};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    mlx_array x = gpu_rand(sh, 3, types[t], -4, 4), y = mlx_array_new(), tr = mlx_array_new();
    if (types[t] == MLX_UINT8) {
      mlx_array_free(x);
      x = gpu_rand(sh, 3, MLX_INT32, 0, 9);
      mlx_array u = mlx_array_new();
      mlx_astype(&u, x, MLX_UINT8, test_stream());
      mlx_array_free(x);
      x = u;
    }
    if (types[t] == MLX_FLOAT32 || types[t] == MLX_FLOAT64) { /* NaNs at a few places */
      mlx_array nan = mlx_array_new_float(NAN), m = mlx_array_new(), r = mlx_array_new(),
                k = mlx_array_new_float(3.5f);
      mlx_array u = gpu_rand(sh, 3, MLX_FLOAT32, 0, 4);
      mlx_greater(&m, u, k, test_stream());
      mlx_where(&r, m, nan, x, test_stream());
      mlx_array_free(x);
      x = mlx_array_new();
      mlx_astype(&x, r, types[t], test_stream());
      mlx_array_free(nan), mlx_array_free(m), mlx_array_free(r), mlx_array_free(k), mlx_array_free(u);
    }
    mlx_array_eval(x);
    CHECK_OK(mlx_transpose(&tr, x, test_stream()));
    mlx_array srcs[2] = {x, tr};
    for (int v = 0; v < 2; v++)
      for (int axis = -1; axis < 3; axis++)
        for (int mx = 0; mx < 2; mx++) {
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          if (axis < 0) {
            CHECK_OK((mx ? mlx_argmax : mlx_argmin)(&g, srcs[v], false, gpu_stream));
            CHECK_OK((mx ? mlx_argmax : mlx_argmin)(&c, srcs[v], false, test_stream()));
          } else {
            CHECK_OK((mx ? mlx_argmax_axis : mlx_argmin_axis)(&g, srcs[v], axis, false, gpu_stream));
            CHECK_OK((mx ? mlx_argmax_axis : mlx_argmin_axis)(&c, srcs[v], axis, false,
                                                              test_stream()));
          }
          char what[96];
          snprintf(what, sizeof what, "%s dtype %d axis %d %s", mx ? "argmax" : "argmin",
                   (int)types[t], axis, v ? "transposed" : "contiguous");
          CHECK_SAME(g, c, 0, 0, what);
          mlx_array_free(g);
          mlx_array_free(c);
        }
    mlx_array_free(x), mlx_array_free(y), mlx_array_free(tr);
  }
}

/* isclose on the GPU gives the CPU's booleans exactly (no contraction on
 * either side): y = x perturbed by up to a few tolerances, so that many
 * pairs fall on either side of atol + rtol |y|; NaNs, infinities, equal
 * and opposite infinities; equal_nan both ways; integer inputs (in
 * double); views (a transposed x). */
static void test_isclose(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                                    MLX_INT32,   MLX_UINT8,   MLX_INT64};
  int shape[] = {48, 65};
  float sv[8] = {NAN, NAN, INFINITY, INFINITY, -INFINITY, 1.0f, 0.0f, NAN};
  float tv[8] = {NAN, 1.0f, INFINITY, -INFINITY, -INFINITY, INFINITY, -0.0f, 2.0f};
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    bool is_float = t < 4;
    mlx_array x = gpu_rand(shape, 2, types[t], -4, 4), d = gpu_rand(shape, 2, types[t], -1, 1);
    mlx_array y = mlx_array_new(), xt = mlx_array_new();
    if (is_float) {
      mlx_array s = mlx_array_new_float(3e-3f), ds = mlx_array_new();
      CHECK_OK(mlx_multiply(&ds, d, s, test_stream()));
      CHECK_OK(mlx_add(&y, x, ds, test_stream()));
      mlx_array_free(s), mlx_array_free(ds);
    } else {
      CHECK_OK(mlx_add(&y, x, d, test_stream()));
    }
    CHECK_OK(mlx_transpose(&xt, x, test_stream()));
    mlx_array yt = mlx_array_new();
    CHECK_OK(mlx_transpose(&yt, y, test_stream()));
    for (int en = 0; en < 2; en++) {
      double rtol[2] = {1e-3, 1e-5}, atol[2] = {1e-3, 1e-8};
      for (int k = 0; k < 2; k++)
        for (int view = 0; view < 2; view++) {
          mlx_array g = mlx_array_new(), c = mlx_array_new();
          mlx_array a = view ? xt : x, b = view ? yt : y;
          CHECK_OK(mlx_isclose(&g, a, b, rtol[k], atol[k], en, gpu_stream));
          CHECK_OK(mlx_isclose(&c, a, b, rtol[k], atol[k], en, test_stream()));
          CHECK_OK(mlx_array_eval(g));
          char what[96];
          snprintf(what, sizeof what, "isclose dtype %d rtol %g equal_nan %d view %d",
                   (int)types[t], rtol[k], en, view);
          CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
          CHECK_SAME(g, c, 0, 0, what);
          mlx_array_free(g), mlx_array_free(c);
        }
      if (is_float) { /* special values, x against y elementwise */
        int n8[] = {8};
        mlx_array s32 = mlx_array_new_data(sv, n8, 1, MLX_FLOAT32);
        mlx_array t32 = mlx_array_new_data(tv, n8, 1, MLX_FLOAT32);
        mlx_array sa = mlx_array_new(), ta = mlx_array_new(), g = mlx_array_new(),
                  c = mlx_array_new();
        CHECK_OK(mlx_astype(&sa, s32, types[t], test_stream()));
        CHECK_OK(mlx_astype(&ta, t32, types[t], test_stream()));
        CHECK_OK(mlx_isclose(&g, sa, ta, 1e-5, 1e-8, en, gpu_stream));
        CHECK_OK(mlx_isclose(&c, sa, ta, 1e-5, 1e-8, en, test_stream()));
        CHECK_SAME(g, c, 0, 0, en ? "isclose specials, equal_nan" : "isclose specials");
        mlx_array_free(s32), mlx_array_free(t32), mlx_array_free(sa), mlx_array_free(ta);
        mlx_array_free(g), mlx_array_free(c);
      }
    }
    mlx_array_free(x), mlx_array_free(d), mlx_array_free(y), mlx_array_free(xt);
    mlx_array_free(yt);
  }
}

/* fp8 (e4m3) codes: to_fp8 from every float dtype (random values over the
 * whole range and past the saturation at 480, the subnormal range, the
 * rounding ties and specials; contiguous and transposed) and from_fp8 of
 * all 256 codes to every float dtype give the CPU's bits, on the GPU. */
static void test_fp8(void) {
  int shape[] = {40, 67}, n256[] = {256}, n12[] = {12};
  float sv[12] = {NAN, INFINITY, -INFINITY, 480.0f, 479.9f, 448.0f, -464.0f, 0.0f, -0.0f,
                  0x1p-10f, 0x1.8p-9f /* a subnormal tie */, 1.0625f /* a normal tie */};
  uint8_t codes[256];
  for (int c = 0; c < 256; c++) codes[c] = (uint8_t)c;
  mlx_array all = mlx_array_new_data(codes, n256, 1, MLX_UINT8);
  mlx_array spec = mlx_array_new_data(sv, n12, 1, MLX_FLOAT32);
  for (int t = 0; t < 4; t++) {
    mlx_dtype dt = float_types[t];
    mlx_array wide = gpu_rand(shape, 2, dt, -600, 600), small = gpu_rand(shape, 2, dt, -0.03, 0.03);
    mlx_array wt = mlx_array_new(), sp = mlx_array_new();
    CHECK_OK(mlx_transpose(&wt, wide, test_stream()));
    CHECK_OK(mlx_astype(&sp, spec, dt, test_stream()));
    mlx_array xs[4] = {wide, small, wt, sp};
    for (int k = 0; k < 4; k++) {
      mlx_array g = mlx_array_new(), c = mlx_array_new();
      CHECK_OK(mlx_to_fp8(&g, xs[k], gpu_stream));
      CHECK_OK(mlx_to_fp8(&c, xs[k], test_stream()));
      CHECK_OK(mlx_array_eval(g));
      char what[64];
      snprintf(what, sizeof what, "to_fp8 dtype %d input %d", (int)dt, k);
      CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
      CHECK_SAME(g, c, 0, 0, what);
      mlx_array_free(g), mlx_array_free(c);
    }
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_from_fp8(&g, all, dt, gpu_stream));
    CHECK_OK(mlx_from_fp8(&c, all, dt, test_stream()));
    CHECK_OK(mlx_array_eval(g));
    CHECK_MSG(made_on_gpu(g), "from_fp8 dtype %d: computed on the host", (int)dt);
    CHECK_SAME(g, c, 0, 0, "from_fp8 of every code");
    mlx_array_free(g), mlx_array_free(c);
    mlx_array_free(wide), mlx_array_free(small), mlx_array_free(wt), mlx_array_free(sp);
  }
  mlx_array_free(all), mlx_array_free(spec);
}

/* Found by running the CPU tests' cases on a GPU (LACE_TEST_DEVICE=gpu):
 * sign(NaN) is 0 (MLX's value), and an addmm over an empty contraction is
 * beta c. */
static void test_found_on_gpu(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_BFLOAT16};
  float v[6] = {NAN, 0.0f, -0.0f, 2.5f, -INFINITY, -3.0f};
  int sh[1] = {6};
  mlx_array f = mlx_array_new_data(v, sh, 1, MLX_FLOAT32);
  for (int t = 0; t < 4; t++) {
    mlx_array x = mlx_array_new(), g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_astype(&x, f, types[t], test_stream()));
    CHECK_OK(mlx_sign(&g, x, gpu_stream));
    CHECK_OK(mlx_sign(&c, x, test_stream()));
    CHECK_OK(mlx_array_eval(g));
    CHECK_SAME(g, c, 0, 0, "sign with NaN and zeros");
    mlx_array_free(x), mlx_array_free(g), mlx_array_free(c);
  }
  mlx_array_free(f);
  int sa[2] = {3, 0}, sb[2] = {0, 4};
  mlx_array a = mlx_array_new_data(NULL, sa, 2, MLX_FLOAT32);
  mlx_array b = mlx_array_new_data(NULL, sb, 2, MLX_FLOAT32);
  mlx_array c = mlx_array_new_float(2.0f), g = mlx_array_new(), w = mlx_array_new();
  CHECK_OK(mlx_addmm(&g, c, a, b, 1.0f, 3.0f, gpu_stream));
  CHECK_OK(mlx_addmm(&w, c, a, b, 1.0f, 3.0f, test_stream()));
  CHECK_OK(mlx_array_eval(g));
  CHECK_SAME(g, w, 0, 0, "addmm over an empty contraction");
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(c), mlx_array_free(g), mlx_array_free(w);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261203);
  test_found_on_gpu();
  size_t base = test_active_memory();
  test_unary();
  test_binary();
  test_isclose();
  test_fp8();
  test_astype();
  test_reduce();
  test_reduce_layouts();
  test_reduce_columns();
  test_argreduce();
  test_softmax();
  test_matmul();
  test_gather_mm();
  test_matmul_complex();
  test_mixed();
  test_compile_on_gpu();
  return gpu_test_done(base);
}
