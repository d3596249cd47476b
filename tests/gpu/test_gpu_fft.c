/* FFTs on the GPU (gpu/cuda/eval_fft.c, cuFFT) against the CPU's:
 * fft/ifft/rfft/irfft with odd, prime and power-of-two lengths, padded and
 * cropped (n), along the last, first and a middle axis, batched; fft2,
 * fftn and their inverse and real forms over adjacent, separated and
 * reordered axes, four axes at once; the three norms; strided inputs;
 * extent-1 axes and length-1 transforms; half spectra that are not
 * Hermitian (irfft ignores the imaginary parts of bins 0 and n/2); empty
 * arrays; large batches; the vjp of rfftn on the GPU; repeated evaluations
 * (CUDA graphs refuse the FFT and run normally); concurrent threads (the
 * plan cache); device memory back to its baseline. Errors are measured
 * relative to the largest magnitude of the CPU's result. Skips without a
 * GPU. */
#include <math.h>
#include <pthread.h>

#include "core/node.h"
#include "gpu/graphs.h"
#include "gpu_bits.h"

#define RTOL 1e-4

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

enum { FFT, IFFT, RFFT, IRFFT, FFT2, IFFT2, RFFT2, IRFFT2, FFTN, IFFTN, RFFTN, IRFFTN };
static const char *fn_name[] = {"fft",  "ifft",  "rfft",  "irfft",  "fft2",  "ifft2",
                                "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"};
static const mlx_fft_norm norms[] = {MLX_FFT_NORM_BACKWARD, MLX_FFT_NORM_ORTHO,
                                     MLX_FFT_NORM_FORWARD};

static bool is_real_input(int fn) { return fn == RFFT || fn == RFFT2 || fn == RFFTN; }

/* Transform fn of a on stream s: 1-D ones take n[0] (required) and
 * axes[0]; nn == 0: default sizes. */
static int call(int fn, mlx_array *r, mlx_array a, const int *n, int nn, const int *axes, int na,
                mlx_fft_norm norm, mlx_stream s) {
  size_t zn = (size_t)nn, za = (size_t)na;
  switch (fn) {
    case FFT: return mlx_fft_fft(r, a, n[0], axes[0], norm, s);
    case IFFT: return mlx_fft_ifft(r, a, n[0], axes[0], norm, s);
    case RFFT: return mlx_fft_rfft(r, a, n[0], axes[0], norm, s);
    case IRFFT: return mlx_fft_irfft(r, a, n[0], axes[0], norm, s);
    case FFT2: return mlx_fft_fft2(r, a, n, zn, axes, za, norm, s);
    case IFFT2: return mlx_fft_ifft2(r, a, n, zn, axes, za, norm, s);
    case RFFT2: return mlx_fft_rfft2(r, a, n, zn, axes, za, norm, s);
    case IRFFT2: return mlx_fft_irfft2(r, a, n, zn, axes, za, norm, s);
    case FFTN: return mlx_fft_fftn(r, a, n, zn, axes, za, norm, s);
    case IFFTN: return mlx_fft_ifftn(r, a, n, zn, axes, za, norm, s);
    case RFFTN: return mlx_fft_rfftn(r, a, n, zn, axes, za, norm, s);
    default: return mlx_fft_irfftn(r, a, n, zn, axes, za, norm, s);
  }
}

/* Random complex64 values (both parts in [-1, 1)). */
static mlx_array rand_complex(const int *shape, int nd) {
  mlx_array re = test_rand_f32(shape, nd, -1, 1), im = test_rand_f32(shape, nd, -1, 1);
  mlx_array i = mlx_array_new_complex(0.0f, 1.0f), t = mlx_array_new(), r = mlx_array_new();
  mlx_multiply(&t, im, i, test_stream());
  mlx_add(&r, re, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(re);
  mlx_array_free(im);
  mlx_array_free(i);
  mlx_array_free(t);
  return r;
}

static mlx_array input_for(int fn, const int *shape, int nd) {
  return is_real_input(fn) ? test_rand_f32(shape, nd, -1, 1) : rand_complex(shape, nd);
}

/* a's values as (re, im) pairs (imaginary 0 for a real a); malloc'd. */
static double *pairs_of(mlx_array a) {
  size_t n = mlx_array_size(a);
  double *p = malloc(sizeof(double) * 2 * (n ? n : 1));
  if (!p) return NULL;
  if (mlx_array_dtype(a) != MLX_COMPLEX64) {
    double *v = test_values(a);
    for (size_t k = 0; v && k < n; k++) p[2 * k] = v[k], p[2 * k + 1] = 0;
    if (!v) free(p);
    p = v ? p : NULL;
    free(v);
    return p;
  }
  mlx_array re = mlx_array_new(), im = mlx_array_new();
  double *r = NULL, *i = NULL;
  if (!mlx_real(&re, a, test_stream()) && !mlx_imag(&im, a, test_stream())) {
    r = test_values(re);
    i = test_values(im);
  }
  for (size_t k = 0; r && i && k < n; k++) p[2 * k] = r[k], p[2 * k + 1] = i[k];
  if (!r || !i) {
    free(p);
    p = NULL;
  }
  free(r);
  free(i);
  mlx_array_free(re);
  mlx_array_free(im);
  return p;
}

/* got (GPU) against want (CPU): shape and dtype equal, and the largest
 * |got - want| at most rtol times the largest |want|. */
#define CLOSE(got, want, rtol, what) close_to(__FILE__, __LINE__, (got), (want), (rtol), (what))
static void close_to(const char *file, int line, mlx_array got, mlx_array want, double rtol,
                     const char *what) {
  test_checks++;
  int nd = (int)mlx_array_ndim(got);
  bool same = nd == (int)mlx_array_ndim(want) && mlx_array_dtype(got) == mlx_array_dtype(want);
  for (int d = 0; same && d < nd; d++) same = mlx_array_shape(got)[d] == mlx_array_shape(want)[d];
  if (!same) {
    test_failures++;
    fprintf(stderr, "%s:%d: %s: shape/dtype differ (ndim %d vs %d, size %zu vs %zu)\n", file,
            line, what, nd, (int)mlx_array_ndim(want), mlx_array_size(got), mlx_array_size(want));
    return;
  }
  size_t n = mlx_array_size(got), at = 0;
  double *g = pairs_of(got), *w = pairs_of(want), emax = 0, wmax = 0;
  for (size_t k = 0; g && w && k < n; k++) {
    double e = hypot(g[2 * k] - w[2 * k], g[2 * k + 1] - w[2 * k + 1]);
    double m = hypot(w[2 * k], w[2 * k + 1]);
    if (!(e <= emax)) emax = e, at = k; /* NaN counts as the worst */
    if (m > wmax) wmax = m;
  }
  if (!g || !w || !(emax <= rtol * (wmax > 1e-30 ? wmax : 1e-30))) {
    test_failures++;
    if (g && w)
      fprintf(stderr,
              "%s:%d: %s: error %.3g relative to max |cpu| %.3g, worst at %zu: gpu (%.7g, %.7g) "
              "cpu (%.7g, %.7g)\n",
              file, line, what, emax / (wmax > 1e-30 ? wmax : 1e-30), wmax, at, g[2 * at],
              g[2 * at + 1], w[2 * at], w[2 * at + 1]);
    else
      fprintf(stderr, "%s:%d: %s: could not read values (%s)\n", file, line, what,
              test_last_error);
  }
  free(g);
  free(w);
}

/* Transform fn of x on the GPU and on the CPU, compared. */
static void both(int fn, mlx_array x, const int *n, int nn, const int *axes, int na,
                 mlx_fft_norm norm, const char *what) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(call(fn, &c, x, n, nn, axes, na, norm, test_stream()));
  CHECK_OK(mlx_array_eval(c));
  CHECK_OK(call(fn, &g, x, n, nn, axes, na, norm, gpu_stream));
  CHECK_OK(mlx_array_eval(g));
  if (mlx_array_size(g)) CHECK_MSG(made_on_gpu(g), "%s: the result was not made on the GPU", what);
  CLOSE(g, c, RTOL, what);
  mlx_array_free(g);
  mlx_array_free(c);
}

/* 1-D transforms: lengths with every kind of factor, padded and cropped,
 * along the last, first and a middle axis; every norm. */
static void test_1d(void) {
  static const int lens[] = {1,  2,  3,  4,   5,   7,   8,   9,    12,   16,   17,  31,
                             32, 64, 97, 100, 127, 128, 243, 1000, 1024, 4096, 4099};
  int k = 0;
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int L = lens[li];
    for (int fn = FFT; fn <= IRFFT; fn++)
      for (int place = 0; place < 3; place++) {
        /* the transformed axis: last of (3, L), first of (L, 5), middle of (2, L, 3) */
        int shape[3], nd = place == 2 ? 3 : 2, axis = place == 0 ? -1 : place == 1 ? 0 : 1;
        if (place == 0) shape[0] = 3, shape[1] = L;
        if (place == 1) shape[0] = L, shape[1] = 5;
        if (place == 2) shape[0] = 2, shape[1] = L, shape[2] = 3;
        int ax_n = axis < 0 ? nd - 1 : axis;
        /* irfft reads n/2+1 bins of a spectrum of length L */
        if (fn == IRFFT) shape[ax_n] = L / 2 + 1;
        mlx_array x = input_for(fn, shape, nd);
        int sizes[3] = {L, L + 3, L > 2 ? L - 2 : L}; /* as is, padded, cropped */
        for (int si = 0; si < 3; si++) {
          mlx_fft_norm norm = norms[k++ % 3];
          both(fn, x, &sizes[si], 1, &axis, 1, norm,
               WHAT("%s L %d n %d axis %d of %dd norm %d", fn_name[fn], L, sizes[si], axis, nd,
                    (int)norm));
        }
        mlx_array_free(x);
      }
  }
}

/* Multi-axis transforms: adjacent, separated and reordered axes, default
 * and explicit sizes, four axes at once, extent-1 axes among them. */
static void test_nd(void) {
  struct {
    int nd, shape[5], na, axes[4];
  } cases[] = {
      {3, {4, 6, 10}, 2, {-2, -1}},   {3, {4, 6, 10}, 2, {0, 2}},     {3, {4, 6, 10}, 2, {2, 0}},
      {3, {5, 6, 7}, 2, {1, 0}},      {3, {9, 1, 7}, 2, {0, 1}},      {3, {9, 7, 1}, 2, {0, 2}},
      {4, {3, 4, 5, 6}, 4, {0, 1, 2, 3}}, {4, {3, 4, 5, 6}, 3, {0, 1, 3}},
      {4, {3, 4, 5, 6}, 3, {3, 1, 0}},    {4, {3, 4, 5, 6}, 3, {1, 2, 3}},
      {5, {2, 3, 1, 5, 4}, 4, {4, 2, 1, 0}}, {2, {17, 31}, 2, {0, 1}},
      {3, {2, 128, 64}, 2, {1, 2}},
  };
  int k = 0;
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int fn = FFT2; fn <= IRFFTN; fn++) {
      int na = cases[c].na;
      if ((fn <= IRFFT2) != (na == 2)) continue; /* the 2 forms take two axes */
      int nd = cases[c].nd, shape[5], last = cases[c].axes[na - 1];
      memcpy(shape, cases[c].shape, sizeof shape);
      if (last < 0) last += nd;
      bool inv_real = fn == IRFFT2 || fn == IRFFTN;
      int L = shape[last];
      if (inv_real) shape[last] = L / 2 + 1;
      mlx_array x = input_for(fn, shape, nd);
      for (int sz = 0; sz < 3; sz++) {
        /* default sizes (irfft: 2 (m - 1), none for one bin), the extents,
         * or padded/cropped */
        if (sz == 0 && inv_real && shape[last] == 1) continue;
        int n[4];
        for (int i = 0; i < na; i++) {
          int ax = cases[c].axes[i] < 0 ? cases[c].axes[i] + nd : cases[c].axes[i];
          int e = inv_real && i == na - 1 ? L : shape[ax];
          n[i] = sz == 1 ? e : i % 2 ? e + 2 : (e > 1 ? e - 1 : e);
        }
        mlx_fft_norm norm = norms[k++ % 3];
        both(fn, x, n, sz ? na : 0, cases[c].axes, na, norm,
             WHAT("%s case %zu sizes %d norm %d", fn_name[fn], c, sz, (int)norm));
      }
      mlx_array_free(x);
    }
}

/* Strided inputs: transposed and sliced with steps. */
static void test_strided(void) {
  int shape[] = {12, 10, 18};
  for (int fn = FFT; fn <= IRFFTN; fn++) {
    mlx_array x = input_for(fn, shape, 3), v[2] = {mlx_array_new(), mlx_array_new()};
    int perm[] = {2, 0, 1}, st[] = {1, 0, 1}, sp[] = {12, 10, 17}, step[] = {2, 3, 2};
    CHECK_OK(mlx_transpose_axes(&v[0], x, perm, 3, test_stream()));
    CHECK_OK(mlx_slice(&v[1], x, st, 3, sp, 3, step, 3, test_stream()));
    for (int j = 0; j < 2; j++) {
      int nd = (int)mlx_array_ndim(v[j]), axes2[] = {0, 2}, ax1 = 1, axes3[] = {0, 1, 2};
      const int *sh = mlx_array_shape(v[j]);
      bool one = fn <= IRFFT, two = fn >= FFT2 && fn <= IRFFT2;
      const int *axes = one ? &ax1 : two ? axes2 : axes3;
      int na = one ? 1 : two ? 2 : 3, n[3];
      for (int i = 0; i < na; i++) n[i] = sh[axes[i]];
      if (fn == IRFFT || fn == IRFFT2 || fn == IRFFTN) n[na - 1] = 2 * (sh[axes[na - 1]] - 1);
      (void)nd;
      both(fn, v[j], n, na, axes, na, MLX_FFT_NORM_BACKWARD,
           WHAT("%s of a %s view", fn_name[fn], j ? "sliced" : "transposed"));
    }
    mlx_array_free(x);
    mlx_array_free(v[0]);
    mlx_array_free(v[1]);
  }
}

/* Length-1 transforms and axes, empty arrays. */
static void test_edges(void) {
  int s51[] = {5, 1}, s41[] = {4, 1}, one = 1, m1 = -1, z[] = {0, 8}, ax2[] = {0, 1};
  mlx_array c = rand_complex(s51, 2), r = test_rand_f32(s41, 2, -1, 1);
  both(FFT, c, &one, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "fft of length 1");
  both(IFFT, c, &one, 1, &m1, 1, MLX_FFT_NORM_ORTHO, "ifft of length 1");
  both(RFFT, r, &one, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "rfft of length 1");
  both(IRFFT, c, &one, 1, &m1, 1, MLX_FFT_NORM_FORWARD, "irfft to length 1");
  int n2[] = {5, 1};
  both(FFT2, c, n2, 2, ax2, 2, MLX_FFT_NORM_BACKWARD, "fft2 with an extent-1 axis");
  both(RFFT2, r, n2, 2, ax2, 2, MLX_FFT_NORM_ORTHO, "rfft2 with length 1 last");
  int n3[] = {1, 1};
  both(FFT2, c, n3, 2, ax2, 2, MLX_FFT_NORM_BACKWARD, "fft2 cropped to 1 x 1");
  mlx_array e = rand_complex(z, 2), er = test_rand_f32(z, 2, -1, 1);
  int eight = 8, fourteen = 14, zero_ax = 0;
  both(FFT, e, &eight, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "fft of an empty batch");
  both(RFFT, er, &eight, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "rfft of an empty batch");
  both(IRFFT, e, &fourteen, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "irfft of an empty batch");
  both(FFT, e, &eight, 1, &zero_ax, 1, MLX_FFT_NORM_BACKWARD, "fft padding an empty axis");
  mlx_array_free(c);
  mlx_array_free(r);
  mlx_array_free(e);
  mlx_array_free(er);
}

/* Large batches and 3-D transforms. */
static void test_large(void) {
  int s1[] = {64, 4096}, s3[] = {16, 32, 64}, s3h[] = {16, 32, 33}, m1 = -1, n1 = 4096;
  int ax3[] = {0, 1, 2}, n3[] = {16, 32, 64};
  mlx_array a = test_rand_f32(s1, 2, -1, 1), b = rand_complex(s3, 3), h = rand_complex(s3h, 3);
  both(RFFT, a, &n1, 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "rfft 64 x 4096");
  both(FFT, b, &n3[2], 1, &m1, 1, MLX_FFT_NORM_BACKWARD, "fft 16 x 32 x 64 along the last");
  both(FFTN, b, n3, 3, ax3, 3, MLX_FFT_NORM_ORTHO, "fftn 16 x 32 x 64");
  both(IRFFTN, h, n3, 3, ax3, 3, MLX_FFT_NORM_BACKWARD, "irfftn to 16 x 32 x 64");
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(h);
}

/* ---- the vjp of rfftn on the GPU ---- */

static int rfftn_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int axes[] = {0, 2};
  int rc = mlx_fft_rfftn(&y, x, NULL, 0, axes, 2, MLX_FFT_NORM_ORTHO, mlx_stream_new()) ||
           mlx_vector_array_set_value(res, y);
  mlx_array_free(x);
  mlx_array_free(y);
  return rc;
}

static void test_vjp(void) {
  int sh[] = {6, 3, 9}, ch[] = {6, 3, 5};
  mlx_array x = test_rand_f32(sh, 3, -1, 1), ct = rand_complex(ch, 3);
  mlx_vector_array p = mlx_vector_array_new_value(x), cv = mlx_vector_array_new_value(ct);
  mlx_closure f = mlx_closure_new_func(rfftn_fn);
  mlx_device gpu = mlx_device_new_type(MLX_GPU, 0), cpu = mlx_device_new_type(MLX_CPU, 0);
  mlx_vector_array o[2] = {mlx_vector_array_new(), mlx_vector_array_new()},
                   gr[2] = {mlx_vector_array_new(), mlx_vector_array_new()};
  for (int side = 0; side < 2; side++) {
    CHECK_OK(mlx_set_default_device(side ? cpu : gpu));
    CHECK_OK(mlx_vjp(&o[side], &gr[side], f, p, cv));
    CHECK_OK(mlx_set_default_device(cpu));
  }
  mlx_array g = mlx_array_new(), h = mlx_array_new(), y = mlx_array_new(), z = mlx_array_new();
  mlx_vector_array_get(&g, gr[0], 0);
  mlx_vector_array_get(&h, gr[1], 0);
  mlx_vector_array_get(&y, o[0], 0);
  mlx_vector_array_get(&z, o[1], 0);
  CHECK_OK(mlx_array_eval(g));
  CHECK_OK(mlx_array_eval(y));
  CHECK_MSG(made_on_gpu(y), "vjp: the primal output was not made on the GPU");
  CLOSE(y, z, RTOL, "rfftn output under vjp");
  CLOSE(g, h, RTOL, "vjp of rfftn");
  mlx_array arrs[] = {x, ct, g, h, y, z};
  for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) mlx_array_free(arrs[i]);
  for (int side = 0; side < 2; side++) {
    mlx_vector_array_free(o[side]);
    mlx_vector_array_free(gr[side]);
  }
  mlx_vector_array_free(p);
  mlx_vector_array_free(cv);
  mlx_closure_free(f);
  mlx_device_free(gpu);
  mlx_device_free(cpu);
}

/* The same tape (scale, shift, rfft, abs, multiply) evaluated repeatedly
 * on new inputs: a CUDA graph would be captured on the second one; the
 * FFT refuses it and every evaluation still equals the CPU's. */
static void test_repeated(void) {
  struct lc_gpu_graph_stats g0, g1;
  lc_gpu_graph_stats(&g0);
  int errors = test_errors_seen;
  int sh[] = {8, 30}, m1 = -1, n = 30;
  mlx_array two = mlx_array_new_float(2.0f), half = mlx_array_new_float(0.5f);
  for (int it = 0; it < 5; it++) {
    mlx_array x = test_rand_f32(sh, 2, -1, 1), r[2];
    for (int side = 0; side < 2; side++) {
      mlx_stream s = side ? test_stream() : gpu_stream;
      mlx_array a = mlx_array_new(), b = mlx_array_new(), f = mlx_array_new(),
                m = mlx_array_new();
      r[side] = mlx_array_new();
      CHECK_OK(mlx_multiply(&a, x, two, s));
      CHECK_OK(mlx_add(&b, a, half, s));
      CHECK_OK(mlx_fft_rfft(&f, b, n, m1, MLX_FFT_NORM_BACKWARD, s));
      CHECK_OK(mlx_abs(&m, f, s));
      CHECK_OK(mlx_multiply(&r[side], m, two, s));
      CHECK_OK(mlx_array_eval(r[side]));
      mlx_array_free(a), mlx_array_free(b), mlx_array_free(f), mlx_array_free(m);
    }
    CLOSE(r[0], r[1], RTOL, WHAT("repeated evaluation %d", it));
    mlx_array_free(r[0]);
    mlx_array_free(r[1]);
    mlx_array_free(x);
  }
  mlx_array_free(two);
  mlx_array_free(half);
  lc_gpu_graph_stats(&g1);
  if (lc_gpu_graphs_on()) {
    CHECK_MSG(g1.refused > g0.refused, "the capture of a tape with an FFT was not refused");
    CHECK_MSG(g1.replayed == g0.replayed, "a tape with an FFT replayed as a graph %lu times",
              g1.replayed - g0.replayed);
  }
  CHECK_MSG(test_errors_seen == errors, "the refused capture reported %d errors (last: %s)",
            test_errors_seen - errors, test_last_error);
}

/* ---- threads sharing the plan cache ---- */

#define NTHREADS 4
#define NITER 12

struct job {
  mlx_array x[NITER], want[NITER];
  int len[NITER];
  int bad;
};

static void *thread_main(void *arg) {
  struct job *j = arg;
  mlx_stream s = mlx_default_gpu_stream_new();
  int m1 = -1;
  for (int i = 0; i < NITER; i++) {
    mlx_array g = mlx_array_new();
    if (mlx_fft_fft(&g, j->x[i], j->len[i], m1, MLX_FFT_NORM_BACKWARD, s) || mlx_array_eval(g)) {
      j->bad++;
    } else {
      /* compared here (no test counters from threads): relative error */
      mlx_array d = mlx_array_new(), a = mlx_array_new(), mx = mlx_array_new(),
                wa = mlx_array_new(), wm = mlx_array_new();
      mlx_stream c = mlx_default_cpu_stream_new();
      if (mlx_subtract(&d, g, j->want[i], c) || mlx_abs(&a, d, c) || mlx_max(&mx, a, false, c) ||
          mlx_abs(&wa, j->want[i], c) || mlx_max(&wm, wa, false, c) || mlx_array_eval(mx) ||
          mlx_array_eval(wm)) {
        j->bad++;
      } else {
        float e = 0, w = 0;
        mlx_array_item_float32(&e, mx);
        mlx_array_item_float32(&w, wm);
        if (!(e <= RTOL * w)) j->bad++;
      }
      mlx_stream_free(c);
      mlx_array_free(d), mlx_array_free(a), mlx_array_free(mx), mlx_array_free(wa),
          mlx_array_free(wm);
    }
    mlx_array_free(g);
  }
  mlx_stream_free(s);
  return NULL;
}

static void test_threads(void) {
  static struct job jobs[NTHREADS];
  int m1 = -1;
  for (int t = 0; t < NTHREADS; t++)
    for (int i = 0; i < NITER; i++) {
      int L = 8 + 7 * ((t * NITER + i) % 9), sh[] = {3 + t, L};
      jobs[t].len[i] = L;
      jobs[t].x[i] = rand_complex(sh, 2);
      jobs[t].want[i] = mlx_array_new();
      CHECK_OK(mlx_fft_fft(&jobs[t].want[i], jobs[t].x[i], L, m1, MLX_FFT_NORM_BACKWARD,
                           test_stream()));
      CHECK_OK(mlx_array_eval(jobs[t].want[i]));
    }
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    CHECK(pthread_create(&th[t], NULL, thread_main, &jobs[t]) == 0);
  for (int t = 0; t < NTHREADS; t++) {
    pthread_join(th[t], NULL);
    CHECK_MSG(jobs[t].bad == 0, "thread %d: %d of %d transforms failed or differed", t,
              jobs[t].bad, NITER);
    for (int i = 0; i < NITER; i++) {
      mlx_array_free(jobs[t].x[i]);
      mlx_array_free(jobs[t].want[i]);
    }
  }
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(11);
  size_t base = 0, after = 0;
  mlx_get_active_memory(&base);
  test_1d();
  test_nd();
  test_strided();
  test_edges();
  test_large();
  test_vjp();
  test_repeated();
  test_threads();
  mlx_clear_cache();
  mlx_get_active_memory(&after);
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  return test_done();
}
