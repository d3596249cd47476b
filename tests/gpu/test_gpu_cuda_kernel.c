/* Custom CUDA kernels (mlx_fast_cuda_kernel_*, MLX's mx.fast.cuda_kernel).
 *
 * Part 1, wherever lace is built with CUDA (no GPU needed): the generated
 * source of every kernel below, for the inputs it gets, builds with NVRTC
 * for sm_90a (the H100/H200 target) and a broken body fails with NVRTC's
 * log.
 * Part 2, with a GPU: MLX's documented example (exp of a float16 array,
 * verbose source on stdout), strided inputs read through x_shape /
 * x_strides / x_ndim and elem_to_loc (transposed, reversed, broadcast,
 * stepped, 0-d and empty), template arguments of the three kinds,
 * init_value with atomicAdd outputs, several outputs of mixed dtypes, 2-d
 * grids (MLX's rule: the grid counts threads), dynamic shared memory
 * (also beyond 48 KiB), every dtype, kernels inside mlx_compile, CUDA
 * graph replays on fresh inputs (the kernel's argument struct relocated;
 * the replays counted),
 * outputs that outlive the kernel's handle, errors at evaluation (NVRTC's
 * log, too much shared memory), results against CPU-computed expectations
 * and device memory back to its baseline.
 * Skips (77) after part 1 without a GPU, and entirely without CUDA. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "ops/fast_cuda_kernel.h"

/* Present only in CUDA builds. */
__attribute__((weak)) void *lc_ck_cubin(const char *src, const char *kname, int arch, size_t *len,
                                        char **log);

static bool have_gpu;
static int compiled; /* sources part 1 built */

/* ---- kernels and configs ---- */

static mlx_fast_cuda_kernel kernel(const char *name, const char **in, int nin, const char **out,
                                   int nout, const char *src, const char *header, bool rowc,
                                   int smem) {
  mlx_vector_string vi = mlx_vector_string_new_data(in, (size_t)nin);
  mlx_vector_string vo = mlx_vector_string_new_data(out, (size_t)nout);
  mlx_fast_cuda_kernel k = mlx_fast_cuda_kernel_new(name, vi, vo, src, header, rowc, smem);
  CHECK_MSG(k.ctx != NULL, "kernel %s: %s", name, test_last_error);
  mlx_vector_string_free(vi);
  mlx_vector_string_free(vo);
  return k;
}

static mlx_fast_cuda_kernel_config config(int gx, int gy, int gz, int tx, int ty, int tz) {
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new();
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, gx, gy, gz));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, tx, ty, tz));
  return c;
}

static void output(mlx_fast_cuda_kernel_config c, const int *shape, int ndim, mlx_dtype t) {
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, shape, (size_t)ndim, t));
}

/* Part 1: the source of k under c for these inputs builds (or, when
 * !expect_ok, fails with a log). */
static void check_builds(mlx_fast_cuda_kernel k, mlx_fast_cuda_kernel_config c, const mlx_array *in,
                         int nin, bool expect_ok) {
  mlx_dtype dt[16];
  for (int i = 0; i < nin && i < 16; i++) dt[i] = mlx_array_dtype(in[i]);
  char *kname = NULL;
  struct lc_ck_layout lay;
  char *src = lc_ck_source(k.ctx, dt, c.ctx, &kname, &lay);
  CHECK_MSG(src != NULL, "no source: %s", test_last_error);
  if (!src) return;
  if (getenv("LACE_TEST_DUMP_SRC")) fprintf(stderr, "// %s\n%s", kname, src);
  size_t len = 0;
  char *log = NULL;
  void *bin = lc_ck_cubin(src, kname, 90, &len, &log);
  if (expect_ok)
    CHECK_MSG(bin != NULL && len > 0, "%s: NVRTC failed:\n%s", kname, log ? log : "(no log)");
  else
    CHECK_MSG(!bin && log && strstr(log, "error"), "%s: should not compile", kname);
  compiled++;
  free(bin);
  free(log);
  free(src);
  free(kname);
  lc_ck_layout_free(&lay);
}

/* Applies k to in on the GPU (after part 1's build check): the outputs
 * (evaluated unless `lazy`) in out, true. False without a GPU. */
static bool apply_ex(mlx_fast_cuda_kernel k, mlx_fast_cuda_kernel_config c, const mlx_array *in,
                     int nin, mlx_array *out, int nout, bool expect_builds, bool lazy) {
  check_builds(k, c, in, nin, expect_builds);
  if (!have_gpu) return false;
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)nin), vout = mlx_vector_array_new();
  int rc = mlx_fast_cuda_kernel_apply(&vout, k, vin, c, gpu_stream);
  CHECK_MSG(rc == 0, "apply: %s", test_last_error);
  CHECK(rc != 0 || mlx_vector_array_size(vout) == (size_t)nout);
  for (int j = 0; j < nout; j++) {
    out[j] = mlx_array_new();
    if (rc == 0) mlx_vector_array_get(&out[j], vout, (size_t)j);
    if (rc == 0 && !lazy) CHECK_MSG(mlx_array_eval(out[j]) == 0, "eval: %s", test_last_error);
  }
  mlx_vector_array_free(vin);
  mlx_vector_array_free(vout);
  return rc == 0;
}

static bool apply(mlx_fast_cuda_kernel k, mlx_fast_cuda_kernel_config c, const mlx_array *in,
                  int nin, mlx_array *out, int nout) {
  return apply_ex(k, c, in, nin, out, nout, true, false);
}

static void free_all(mlx_array *a, int n) {
  for (int i = 0; i < n; i++) mlx_array_free(a[i]);
}

/* A CPU op's result (one-array ops on the CPU stream). */
static mlx_array cpu(int (*op)(mlx_array *, mlx_array, mlx_stream), mlx_array x) {
  mlx_array r = mlx_array_new();
  CHECK_OK(op(&r, x, test_stream()));
  return r;
}

/* ---- MLX's example: exp of a float16 array, verbose ---- */

static const char *exp_src = "auto elem = cooperative_groups::this_grid().thread_rank();\n"
                             "T tmp = inp[elem];\n"
                             "out[elem] = exp(tmp);\n";

static void test_exp_example(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("myexp", in, 1, out, 1, exp_src, "", true, 0);
  int sh[2] = {16, 16};
  mlx_array a = gpu_rand(sh, 2, MLX_FLOAT16, -2, 2), b[1];
  mlx_fast_cuda_kernel_config c = config(256, 1, 1, 256, 1, 1);
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "T", MLX_FLOAT32));
  output(c, sh, 2, MLX_FLOAT16);
  CHECK_OK(mlx_fast_cuda_kernel_config_set_verbose(c, true));
  /* the source is printed to stdout when the kernel is applied */
  char path[] = "/tmp/lace_gpu_ck_XXXXXX";
  int fd = mkstemp(path), saved = dup(1);
  fflush(stdout);
  dup2(fd, 1);
  bool ran = apply(k, c, &a, 1, b, 1);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  char text[32768] = {0};
  lseek(fd, 0, SEEK_SET);
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  unlink(path);
  if (ran) {
    CHECK(got > 0 && strstr(text, "Generated source code for `custom_kernel_myexp_float`:\n```\n"));
    CHECK(strstr(text, "out[elem] = exp(tmp);") != NULL);
    mlx_array want = cpu(mlx_exp, a);
    CHECK_SAME(b[0], want, 2e-3, 1e-3, "myexp float16");
    mlx_array_free(want);
    mlx_array_free(b[0]);
  }
  CHECK_OK(mlx_fast_cuda_kernel_config_set_verbose(c, false));
  /* a transposed input is copied row-major first (ensure_row_contiguous) */
  mlx_array t = mlx_array_new();
  CHECK_OK(mlx_transpose(&t, a, test_stream()));
  if (apply(k, c, &t, 1, b, 1)) {
    mlx_array want = cpu(mlx_exp, t);
    CHECK_SAME(b[0], want, 2e-3, 1e-3, "myexp of a transposed input");
    mlx_array_free(want);
    mlx_array_free(b[0]);
  }
  /* outputs outlive the handles: freed before the evaluation */
  if (have_gpu) {
    mlx_vector_array vin = mlx_vector_array_new_data(&a, 1), vout = mlx_vector_array_new();
    CHECK_OK(mlx_fast_cuda_kernel_apply(&vout, k, vin, c, gpu_stream));
    mlx_fast_cuda_kernel_free(k);
    mlx_fast_cuda_kernel_config_free(c);
    k.ctx = NULL;
    c.ctx = NULL;
    mlx_array r = mlx_array_new(), want = cpu(mlx_exp, a);
    CHECK_OK(mlx_vector_array_get(&r, vout, 0));
    CHECK_SAME(r, want, 2e-3, 1e-3, "myexp evaluated after its handles are freed");
    mlx_array_free(r);
    mlx_array_free(want);
    mlx_vector_array_free(vin);
    mlx_vector_array_free(vout);
  }
  mlx_array_free(t);
  mlx_array_free(a);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- strided inputs: x_shape, x_strides, x_ndim, elem_to_loc ---- */

static const char *strided_src =
    "int64_t n = 1;\n"
    "for (int d = 0; d < inp_ndim; d++) n *= inp_shape[d];\n"
    "int64_t elem = cooperative_groups::this_grid().thread_rank();\n"
    "if (elem >= n) return;\n"
    "int64_t loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);\n"
    "out[elem] = inp[loc] * 2.0f + 1.0f;\n";

static void check_strided(mlx_fast_cuda_kernel k, mlx_array x, const char *what) {
  int nd = (int)mlx_array_ndim(x), n = (int)mlx_array_size(x);
  int sh[16];
  for (int d = 0; d < nd; d++) sh[d] = mlx_array_shape(x)[d];
  mlx_fast_cuda_kernel_config c = config(n > 0 ? n : 1, 1, 1, 64, 1, 1);
  output(c, sh, nd, MLX_FLOAT32);
  mlx_array got[1];
  if (apply(k, c, &x, 1, got, 1)) {
    mlx_array two = mlx_array_new_float(2.0f), one = mlx_array_new_float(1.0f);
    mlx_array m = mlx_array_new(), want = mlx_array_new();
    CHECK_OK(mlx_multiply(&m, x, two, test_stream()));
    CHECK_OK(mlx_add(&want, m, one, test_stream()));
    CHECK_SAME(got[0], want, 0, 0, what);
    free_all((mlx_array[]){two, one, m, want, got[0]}, 5);
  }
  mlx_fast_cuda_kernel_config_free(c);
}

static void test_strided(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("strided", in, 1, out, 1, strided_src, NULL, false, 0);
  mlx_stream s = test_stream();
  int sh[3] = {3, 4, 5}, ax[3] = {2, 0, 1};
  mlx_array x = gpu_rand(sh, 3, MLX_FLOAT32, -1, 1), v = mlx_array_new();
  check_strided(k, x, "strided: contiguous");
  CHECK_OK(mlx_transpose_axes(&v, x, ax, 3, s));
  check_strided(k, v, "strided: transposed (5, 3, 4)");
  int st[3] = {0, 0, 0}, sp[3] = {3, 4, 5}, rev[3] = {1, -1, 2};
  int st2[3] = {0, 3, 0}, sp2[3] = {3, -5, 5};
  CHECK_OK(mlx_slice(&v, x, st2, 3, sp2, 3, rev, 3, s)); /* reversed along axis 1 */
  check_strided(k, v, "strided: negative stride");
  int step[3] = {2, 1, 2};
  CHECK_OK(mlx_slice(&v, x, st, 3, sp, 3, step, 3, s));
  check_strided(k, v, "strided: stepped slice");
  int row[2] = {1, 5}, bsh[3] = {4, 6, 5};
  mlx_array r = gpu_rand(row, 2, MLX_FLOAT32, -1, 1);
  CHECK_OK(mlx_broadcast_to(&v, r, bsh, 3, s));
  check_strided(k, v, "strided: broadcast (stride 0)");
  mlx_array z = mlx_array_new_float(0.75f);
  check_strided(k, z, "strided: 0-d input");
  int big[1] = {100000};
  mlx_array l = gpu_rand(big, 1, MLX_FLOAT32, -1, 1);
  CHECK_OK(mlx_slice(&v, l, (int[]){99999}, 1, (int[]){-100001}, 1, (int[]){-3}, 1, s));
  check_strided(k, v, "strided: 1-d reversed, step 3, 33334 elements");
  free_all((mlx_array[]){x, v, r, z, l}, 5);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- template arguments ---- */

static const char *tmpl_src = "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "if (i >= inp_shape[0]) return;\n"
                              "out[i] = B ? static_cast<T>(inp[i]) * T(N) : static_cast<T>(inp[i]) - T(N);\n";

static void check_tmpl(mlx_fast_cuda_kernel k, mlx_dtype in_t, mlx_dtype t, int n, bool b) {
  int sh[1] = {1000};
  mlx_array x = gpu_rand(sh, 1, in_t, -20, 20), got[1];
  mlx_fast_cuda_kernel_config c = config(1000, 1, 1, 128, 1, 1);
  output(c, sh, 1, t);
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "T", t));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "N", n));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_bool(c, "B", b));
  if (apply(k, c, &x, 1, got, 1)) {
    mlx_stream s = test_stream();
    mlx_array xt = mlx_array_new(), nv = mlx_array_new(), nn = mlx_array_new_int(n);
    mlx_array want = mlx_array_new();
    CHECK_OK(mlx_astype(&xt, x, t, s));
    CHECK_OK(mlx_astype(&nv, nn, t, s));
    CHECK_OK(b ? mlx_multiply(&want, xt, nv, s) : mlx_subtract(&want, xt, nv, s));
    char what[96];
    snprintf(what, sizeof what, "template T=%d N=%d B=%d", (int)t, n, (int)b);
    CHECK_SAME(got[0], want, 0, 0, what);
    free_all((mlx_array[]){xt, nv, nn, want, got[0]}, 5);
  }
  mlx_array_free(x);
  mlx_fast_cuda_kernel_config_free(c);
}

static void test_templates(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("tmpl", in, 1, out, 1, tmpl_src, "", true, 0);
  check_tmpl(k, MLX_FLOAT32, MLX_FLOAT32, 3, true);
  check_tmpl(k, MLX_FLOAT32, MLX_FLOAT64, -2, false);
  check_tmpl(k, MLX_INT32, MLX_INT32, 5, true);
  check_tmpl(k, MLX_INT32, MLX_INT64, 7, false);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- init_value and atomic outputs ---- */

static const char *hist_src =
    "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "if (i >= inp_shape[0]) return;\n"
    "atomicAdd(&total[0], inp[i]);\n"
    "atomicAdd(&hist[inp[i] & 15], 1);\n";

static void test_init_atomic(void) {
  const char *in[] = {"inp"}, *out[] = {"total", "hist", "unused_f", "unused_h", "unused_b"};
  mlx_fast_cuda_kernel k = kernel("hist", in, 1, out, 5, hist_src, "", true, 0);
  enum { N = 5000 };
  int32_t v[N];
  test_seed(11);
  for (int i = 0; i < N; i++) v[i] = test_randint(0, 200);
  int sh[1] = {N}, one[1] = {1}, bins[1] = {16}, three[1] = {3}, five[1] = {5}, two[2] = {2, 2};
  mlx_array x = mlx_array_new_data(v, sh, 1, MLX_INT32), got[5];
  mlx_fast_cuda_kernel_config c = config(N, 1, 1, 256, 1, 1);
  output(c, one, 1, MLX_INT32);
  output(c, bins, 1, MLX_INT32);
  output(c, three, 1, MLX_FLOAT32);
  output(c, five, 1, MLX_FLOAT16);
  output(c, two, 2, MLX_BOOL);
  CHECK_OK(mlx_fast_cuda_kernel_config_set_init_value(c, 1.5f));
  if (apply(k, c, &x, 1, got, 5)) {
    double total = 1, hist[16], f[5] = {1.5, 1.5, 1.5, 1.5, 1.5}, b[4] = {1, 1, 1, 1};
    for (int j = 0; j < 16; j++) hist[j] = 1; /* 1.5 as int32 */
    for (int i = 0; i < N; i++) total += v[i], hist[v[i] & 15] += 1;
    CHECK_CLOSE(got[0], &total, 1, 0, 0);
    CHECK_CLOSE(got[1], hist, 16, 0, 0);
    CHECK_CLOSE(got[2], f, 3, 0, 0);
    CHECK_CLOSE(got[3], f, 5, 0, 0);
    CHECK_CLOSE(got[4], b, 4, 0, 0);
    free_all(got, 5);
  }
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
  mlx_array_free(x);

  /* float atomics into an output that starts at init_value */
  const char *fin[] = {"inp"}, *fout[] = {"out"};
  k = kernel("fsum", fin, 1, fout, 1,
             "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "if (i < inp_shape[0]) atomicAdd(out, inp[i]);\n", "", true, 0);
  int fs[1] = {4096};
  x = gpu_rand(fs, 1, MLX_FLOAT32, 0, 1);
  c = config(4096, 1, 1, 512, 1, 1);
  output(c, NULL, 0, MLX_FLOAT32);
  CHECK_OK(mlx_fast_cuda_kernel_config_set_init_value(c, -100.0f));
  if (apply(k, c, &x, 1, got, 1)) {
    double *xv = test_values(x), want = -100;
    for (int i = 0; xv && i < 4096; i++) want += xv[i];
    CHECK_CLOSE(got[0], &want, 1, 1e-5, 1e-3);
    free(xv);
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
  mlx_array_free(x);
}

/* ---- several outputs of mixed dtypes and shapes ---- */

static void test_multi_output(void) {
  const char *in[] = {"x", "y"}, *out[] = {"sq", "idx", "mix"};
  const char *src = "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "if (i < x_shape[0]) sq[i] = x[i] * x[i];\n"
                    "if (i < 15) idx[i] = (int64_t)i * i - 7;\n"
                    "if (i < 6) mix[i] = __float2half(float(y[i]) + 0.5f);\n";
  mlx_fast_cuda_kernel k = kernel("multi", in, 2, out, 3, src, "", true, 0);
  int n37[1] = {37}, s53[2] = {5, 3}, s6[1] = {6};
  mlx_array x = gpu_rand(n37, 1, MLX_FLOAT32, -3, 3), y = gpu_rand(s6, 1, MLX_INT16, -9, 9);
  mlx_array got[3];
  mlx_fast_cuda_kernel_config c = config(37, 1, 1, 32, 1, 1);
  output(c, n37, 1, MLX_FLOAT32);
  output(c, s53, 2, MLX_INT64);
  output(c, s6, 1, MLX_FLOAT16);
  if (apply(k, c, (mlx_array[]){x, y}, 2, got, 3)) {
    mlx_array sq = mlx_array_new();
    CHECK_OK(mlx_multiply(&sq, x, x, test_stream()));
    CHECK_SAME(got[0], sq, 0, 0, "multi: sq");
    double idx[15], *yv = test_values(y), mix[6];
    for (int i = 0; i < 15; i++) idx[i] = (double)i * i - 7;
    for (int i = 0; yv && i < 6; i++) mix[i] = yv[i] + 0.5;
    CHECK_CLOSE(got[1], idx, 15, 0, 0);
    CHECK_SHAPE(got[1], 5, 3);
    if (yv) CHECK_CLOSE(got[2], mix, 6, 0, 0); /* small halves are exact */
    CHECK(mlx_array_dtype(got[2]) == MLX_FLOAT16);
    free(yv);
    mlx_array_free(sq);
    free_all(got, 3);
  }
  free_all((mlx_array[]){x, y}, 2);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- 2-d grids: the grid counts threads; blocks are min(group, grid) ---- */

static void check_grid2d(mlx_fast_cuda_kernel k, int h, int w, int tx, int ty) {
  int sh[2] = {h, w};
  mlx_fast_cuda_kernel_config c = config(w, h, 1, tx, ty, 1);
  output(c, sh, 2, MLX_INT32);
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "H", h));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "W", w));
  mlx_array dummy = mlx_array_new_float(0), got[1];
  if (apply(k, c, &dummy, 1, got, 1)) {
    double *want = malloc(sizeof(double) * (size_t)(h * w));
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) want[y * w + x] = x + 1000 * y;
    CHECK_CLOSE(got[0], want, (size_t)(h * w), 0, 0);
    free(want);
    mlx_array_free(got[0]);
  }
  mlx_array_free(dummy);
  mlx_fast_cuda_kernel_config_free(c);
}

static void test_grid2d(void) {
  const char *in[] = {"unused"}, *out[] = {"out"};
  const char *src = "int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                    "if (x >= W || y >= H) return;\n"
                    "out[y * W + x] = x + 1000 * y;\n";
  mlx_fast_cuda_kernel k = kernel("grid2d", in, 1, out, 1, src, "", true, 0);
  check_grid2d(k, 37, 45, 16, 8);
  check_grid2d(k, 3, 45, 16, 8); /* 3 threads along y: exactly the grid */
  check_grid2d(k, 1, 1, 32, 32);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- dynamic shared memory ---- */

static const char *blocksum_src =
    "extern __shared__ float smem[];\n"
    "int t = threadIdx.x;\n"
    "int64_t i = blockIdx.x * (int64_t)blockDim.x + t;\n"
    "smem[t] = i < inp_shape[0] ? inp[i] : 0.0f;\n"
    "__syncthreads();\n"
    "for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "  if (t < s) smem[t] += smem[t + s];\n"
    "  __syncthreads();\n"
    "}\n"
    "if (t == 0) out[blockIdx.x] = smem[0];\n";

static const char *bigsmem_src =
    "extern __shared__ unsigned char big[];\n"
    "for (int j = threadIdx.x; j < BYTES; j += blockDim.x) big[j] = (unsigned char)(j * 7 + blockIdx.x);\n"
    "__syncthreads();\n"
    "if (threadIdx.x == 0) {\n"
    "  unsigned s = 0;\n"
    "  for (int j = 0; j < BYTES; j++) s += big[j];\n"
    "  out[blockIdx.x] = s;\n"
    "}\n";

static void test_shared_memory(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("blocksum", in, 1, out, 1, blocksum_src, "", true, 256 * 4);
  int n[1] = {2500}, nb[1] = {10};
  mlx_array x = gpu_rand(n, 1, MLX_FLOAT32, -1, 1), got[1];
  mlx_fast_cuda_kernel_config c = config(2560, 1, 1, 256, 1, 1);
  output(c, nb, 1, MLX_FLOAT32);
  if (apply(k, c, &x, 1, got, 1)) {
    double *xv = test_values(x), want[10] = {0};
    for (int i = 0; xv && i < 2500; i++) want[i / 256] += xv[i];
    CHECK_CLOSE(got[0], want, 10, 1e-5, 1e-5);
    free(xv);
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);

  /* beyond the default 48 KiB: the kernel's attribute is raised */
  enum { BYTES = 100 * 1024 };
  k = kernel("bigsmem", in, 1, out, 1, bigsmem_src, "", true, BYTES);
  int two[1] = {2};
  c = config(256, 1, 1, 128, 1, 1);
  output(c, two, 1, MLX_UINT32);
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "BYTES", BYTES));
  if (apply(k, c, &x, 1, got, 1)) {
    double want[2] = {0, 0};
    for (int b = 0; b < 2; b++)
      for (int j = 0; j < BYTES; j++) want[b] += (unsigned char)(j * 7 + b);
    CHECK_CLOSE(got[0], want, 2, 0, 0);
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_free(k);
  /* more than any GPU has: evaluation fails, saying why */
  k = kernel("toobig", in, 1, out, 1, bigsmem_src, "", true, 1 << 22);
  if (apply_ex(k, c, &x, 1, got, 1, true, true)) {
    CHECK_FAILS(mlx_array_eval(got[0]), "shared memory");
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
  mlx_array_free(x);
}

/* ---- every dtype in and out ---- */

static void test_dtypes(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("copy", in, 1, out, 1,
                                  "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "if (i < inp_shape[0]) out[i] = inp[i];\n", "", true, 0);
  int sh[1] = {37};
  for (int t = 0; t <= MLX_COMPLEX64; t++) {
    bool nonneg = t == MLX_BOOL || (t >= MLX_UINT8 && t <= MLX_UINT64);
    mlx_array x = gpu_rand(sh, 1, (mlx_dtype)t, nonneg ? 0 : -50, 50), got[1];
    mlx_fast_cuda_kernel_config c = config(37, 1, 1, 64, 1, 1);
    output(c, sh, 1, (mlx_dtype)t);
    if (apply(k, c, &x, 1, got, 1)) {
      char what[64];
      snprintf(what, sizeof what, "copy of dtype %d", t);
      CHECK_SAME(got[0], x, 0, 0, what);
      mlx_array_free(got[0]);
    }
    mlx_array_free(x);
    mlx_fast_cuda_kernel_config_free(c);
  }
  mlx_fast_cuda_kernel_free(k);
}

/* ---- 0-d and empty inputs, their shape information ---- */

static void test_meta(void) {
  const char *in[] = {"s", "e"}, *out[] = {"out"};
  const char *src = "if (threadIdx.x == 0) {\n"
                    "  out[0] = s_ndim;\n  out[1] = e_ndim;\n  out[2] = e_shape[0];\n"
                    "  out[3] = e_shape[1] + (int)s[0];\n  out[4] = (int)e_strides[0];\n}\n";
  mlx_fast_cuda_kernel k = kernel("meta", in, 2, out, 1, src, "", true, 0);
  int e03[2] = {0, 3}, five[1] = {5};
  float none = 0;
  mlx_array s = mlx_array_new_float(2.5f), e = mlx_array_new_data(&none, e03, 2, MLX_FLOAT32);
  mlx_array got[1];
  mlx_fast_cuda_kernel_config c = config(1, 1, 1, 32, 1, 1);
  output(c, five, 1, MLX_INT32);
  if (apply(k, c, (mlx_array[]){s, e}, 2, got, 1)) {
    double want[5] = {0, 2, 0, 5, 3};
    CHECK_CLOSE(got[0], want, 5, 0, 0);
    mlx_array_free(got[0]);
  }
  free_all((mlx_array[]){s, e}, 2);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

/* ---- a header, and a body NVRTC refuses ---- */

static void test_header_and_errors(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  const char *header = "__device__ inline float twice_plus(float v, float w) { return 2 * v + w; }\n"
                       "float host_style(float v) { return v - 1; } // device by default\n";
  mlx_fast_cuda_kernel k = kernel("hdr", in, 1, out, 1,
                                  "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "if (i < inp_shape[0]) out[i] = host_style(twice_plus(inp[i], 3.0f));\n",
                                  header, true, 0);
  int sh[1] = {300};
  mlx_array x = gpu_rand(sh, 1, MLX_FLOAT32, -1, 1), got[1];
  mlx_fast_cuda_kernel_config c = config(300, 1, 1, 128, 1, 1);
  output(c, sh, 1, MLX_FLOAT32);
  if (apply(k, c, &x, 1, got, 1)) {
    double *xv = test_values(x), want[300];
    for (int i = 0; xv && i < 300; i++) want[i] = (double)((2 * (float)xv[i] + 3.0f) - 1.0f);
    CHECK_CLOSE(got[0], want, 300, 1e-6, 1e-6);
    free(xv);
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_free(k);
  k = kernel("broken", in, 1, out, 1, "out[0] = inp[0] +* ;\n", "", true, 0);
  if (apply_ex(k, c, &x, 1, got, 1, false, true)) {
    CHECK_FAILS(mlx_array_eval(got[0]), "NVRTC could not compile it");
    CHECK(strstr(test_last_error, "custom_kernel_broken") && strstr(test_last_error, "error"));
    mlx_array_free(got[0]);
  }
  mlx_fast_cuda_kernel_free(k);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_array_free(x);
}

/* ---- inside mlx_compile ---- */

static mlx_fast_cuda_kernel sq_kernel;
static mlx_fast_cuda_kernel_config sq_config;
enum { SQ_N = 300 };

/* f(x) = (x * x + 1) * 2: the kernel, then an op on its output */
static int sq_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_vector_array out = mlx_vector_array_new();
  int rc = mlx_fast_cuda_kernel_apply(&out, sq_kernel, in, sq_config, gpu_stream);
  mlx_array y = mlx_array_new(), two = mlx_array_new_float(2.0f), z = mlx_array_new();
  if (!rc) rc = mlx_vector_array_get(&y, out, 0);
  if (!rc) rc = mlx_multiply(&z, y, two, gpu_stream);
  if (!rc) rc = mlx_vector_array_set_data(res, &z, 1);
  free_all((mlx_array[]){y, two, z}, 3);
  mlx_vector_array_free(out);
  return rc;
}

static void test_compile(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  sq_kernel = kernel("sq", in, 1, out, 1,
                     "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "if (i < inp_shape[0]) out[i] = inp[i] * inp[i] + 1.0f;\n", "", true, 0);
  sq_config = config(SQ_N, 1, 1, 128, 1, 1);
  int sh[1] = {SQ_N};
  output(sq_config, sh, 1, MLX_FLOAT32);
  mlx_array x0 = gpu_rand(sh, 1, MLX_FLOAT32, -2, 2);
  check_builds(sq_kernel, sq_config, &x0, 1, true);
  mlx_array_free(x0);
  if (have_gpu) {
    mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
    CHECK_OK(mlx_set_default_device(gdev)); /* replays run on the default device */
    mlx_closure plain = mlx_closure_new_func(sq_body), cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, plain, false));
    for (int rep = 0; rep < 5; rep++) { /* fresh inputs: graphs replay relocated */
      mlx_array x = gpu_rand(sh, 1, MLX_FLOAT32, -2, 2);
      mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), got = mlx_vector_array_new();
      CHECK_OK(mlx_closure_apply(&got, rep % 2 ? plain : cf, vin));
      double *xv = test_values(x), want[SQ_N];
      for (int i = 0; xv && i < SQ_N; i++) want[i] = ((float)xv[i] * (float)xv[i] + 1.0f) * 2.0f;
      mlx_array g = mlx_array_new();
      if (mlx_vector_array_size(got) == 1 && !mlx_vector_array_get(&g, got, 0) && xv)
        CHECK_CLOSE(g, want, SQ_N, 1e-6, 1e-6);
      else
        CHECK_MSG(false, "compiled call %d: %s", rep, test_last_error);
      free(xv);
      mlx_array_free(g);
      mlx_array_free(x);
      mlx_vector_array_free(vin);
      mlx_vector_array_free(got);
    }
    /* the compiled function alone, several times, for CUDA graphs */
    for (int rep = 0; rep < 4; rep++) {
      mlx_array x = gpu_rand(sh, 1, MLX_FLOAT32, -2, 2);
      mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), got = mlx_vector_array_new();
      CHECK_OK(mlx_closure_apply(&got, cf, vin));
      double *xv = test_values(x), want[SQ_N];
      for (int i = 0; xv && i < SQ_N; i++) want[i] = ((float)xv[i] * (float)xv[i] + 1.0f) * 2.0f;
      mlx_array g = mlx_array_new();
      if (mlx_vector_array_size(got) == 1 && !mlx_vector_array_get(&g, got, 0) && xv)
        CHECK_CLOSE(g, want, SQ_N, 1e-6, 1e-6);
      free(xv);
      mlx_array_free(g);
      mlx_array_free(x);
      mlx_vector_array_free(vin);
      mlx_vector_array_free(got);
    }
    mlx_closure_free(cf);
    mlx_closure_free(plain);
    CHECK_OK(mlx_set_default_device(cdev));
    mlx_device_free(gdev);
    mlx_device_free(cdev);
  }
  mlx_fast_cuda_kernel_config_free(sq_config);
  mlx_fast_cuda_kernel_free(sq_kernel);
}

/* ---- CUDA graphs: the kernel's argument struct relocated ----
 * The same tape (kernel, its output, multiply, add: enough nodes for a
 * graph) evaluated on fresh inputs, its intermediates held only by their
 * consumers: the second evaluation is captured, later ones replay with the
 * noted argument blob moved to the new input and output. */
static void test_graph_replay(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = kernel("sqg", in, 1, out, 1,
                                  "uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "if (i < inp_shape[0]) out[i] = inp[i] * inp[i] + 1.0f;\n",
                                  "", true, 0);
  enum { N = 300, REPS = 6 };
  int sh[1] = {N};
  mlx_fast_cuda_kernel_config c = config(N, 1, 1, 128, 1, 1);
  output(c, sh, 1, MLX_FLOAT32);
  mlx_array x0 = gpu_rand(sh, 1, MLX_FLOAT32, -2, 2);
  check_builds(k, c, &x0, 1, true);
  mlx_array_free(x0);
  if (!have_gpu) {
    mlx_fast_cuda_kernel_config_free(c);
    mlx_fast_cuda_kernel_free(k);
    return;
  }
  struct lc_gpu_graph_stats g0, g1;
  lc_gpu_graph_stats(&g0);
  mlx_array two = mlx_array_new_float(2.0f), one = mlx_array_new_float(1.0f);
  for (int rep = 0; rep < REPS; rep++) {
    mlx_array x = gpu_rand(sh, 1, MLX_FLOAT32, -2, 2), y = mlx_array_new(), z = mlx_array_new(),
              u = mlx_array_new();
    mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), vout = mlx_vector_array_new();
    CHECK_OK(mlx_fast_cuda_kernel_apply(&vout, k, vin, c, gpu_stream));
    CHECK_OK(mlx_vector_array_get(&y, vout, 0));
    CHECK_OK(mlx_multiply(&z, y, two, gpu_stream));
    CHECK_OK(mlx_add(&u, z, one, gpu_stream));
    mlx_vector_array_free(vout);
    mlx_array_free(y);
    mlx_array_free(z);
    CHECK_OK(mlx_array_eval(u));
    double *xv = test_values(x), want[N];
    for (int i = 0; xv && i < N; i++)
      want[i] = ((float)xv[i] * (float)xv[i] + 1.0f) * 2.0f + 1.0f;
    if (xv) CHECK_CLOSE(u, want, N, 1e-6, 1e-6);
    free(xv);
    mlx_vector_array_free(vin);
    free_all((mlx_array[]){x, u}, 2);
  }
  lc_gpu_graph_stats(&g1);
  /* evaluation 0 warms, 1 is captured, 2.. replay */
  CHECK_MSG(!lc_gpu_graphs_on() || g1.replayed - g0.replayed >= REPS - 2,
            "custom kernel: %lu graph replays of %d (%lu captured, %lu mismatched, %lu refused)",
            g1.replayed - g0.replayed, REPS - 2, g1.captured - g0.captured,
            g1.mismatched - g0.mismatched, g1.refused - g0.refused);
  free_all((mlx_array[]){two, one}, 2);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

int main(void) {
  test_init();
  if (!lc_gpu_built() || !lc_ck_cubin) {
    printf("SKIP: lace was built without the CUDA backend\n");
    return TEST_SKIP;
  }
  char dir[] = "/tmp/lace-gpu-ck-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("LACE_JIT_CACHE", dir, 1); /* part 1 really compiles */
  int ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  have_gpu = ngpu > 0;
  if (have_gpu) gpu_stream = mlx_default_gpu_stream_new();
  else printf("part 2 skipped: no GPU on this machine (%s)\n", lc_gpu_unavailable_reason());
  size_t base = 0, after = 0;
  mlx_get_active_memory(&base);
  test_exp_example();
  test_strided();
  test_templates();
  test_init_atomic();
  test_multi_output();
  test_grid2d();
  test_shared_memory();
  test_dtypes();
  test_meta();
  test_header_and_errors();
  test_compile();
  test_graph_replay();
  mlx_clear_cache();
  mlx_get_active_memory(&after);
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  printf("part 1: %d kernel sources built with NVRTC\n", compiled);
  test_remove_dir(dir);
  if (have_gpu) mlx_stream_free(gpu_stream);
  int rc = test_done();
  if (rc == 0 && !have_gpu) {
    printf("SKIP: part 2 needs a GPU\n");
    return TEST_SKIP;
  }
  return rc;
}
