/* Custom CUDA kernels without a GPU (mlx_fast_cuda_kernel_*): creating and
 * freeing kernels and configs, every argument check (each failure
 * reported with a clear message, nothing leaked, results untouched), the
 * generated source (MLX's signature names, template arguments, shape
 * information only where the source names it), verbose printing, apply on
 * a CPU stream failing, and kernel nodes outliving their handles. Runs
 * everywhere; GPU runs are tests/gpu/test_gpu_cuda_kernel.c. */
#include <fcntl.h>

#include "test.h"

#include "core/node.h"
#include "ops/fast_cuda_kernel.h"

static mlx_vector_string names(const char **v, size_t n) { return mlx_vector_string_new_data(v, n); }

static mlx_fast_cuda_kernel make(const char *name, const char **in, size_t nin, const char **out,
                                 size_t nout, const char *src, bool rowc, int smem) {
  mlx_vector_string vi = names(in, nin), vo = names(out, nout);
  mlx_fast_cuda_kernel k = mlx_fast_cuda_kernel_new(name, vi, vo, src, NULL, rowc, smem);
  mlx_vector_string_free(vi);
  mlx_vector_string_free(vo);
  return k;
}

static void test_config(void) {
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new(), none = {NULL};
  CHECK(c.ctx != NULL);
  int sh[2] = {3, 4}, bad[2] = {3, -1};
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, sh, 2, MLX_FLOAT32));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, NULL, 0, MLX_INT32)); /* a scalar */
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_output_arg(c, sh, 2, (mlx_dtype)99), "invalid dtype");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_output_arg(c, NULL, 2, MLX_FLOAT32), "shape");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_output_arg(c, bad, 2, MLX_FLOAT32), "negative");
  int huge[3] = {1 << 30, 1 << 30, 1 << 30};
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_output_arg(c, huge, 3, MLX_FLOAT32), "too large");
  CHECK(((struct lc_ck_config *)c.ctx)->nout == 2); /* failures add nothing */
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 8, 1, 1));
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_grid(c, 0, 1, 1), "positive");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_grid(c, 4, -2, 1), "positive");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 4, 1, 1));
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_thread_group(c, 4, 1, 0), "positive");
  CHECK(((struct lc_ck_config *)c.ctx)->grid[0] == 8); /* failures change nothing */
  CHECK_OK(mlx_fast_cuda_kernel_config_set_init_value(c, 1.5f));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_verbose(c, true));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "T", MLX_FLOAT16));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "N", -3));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_bool(c, "B", true));
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "N", 2), "given twice");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_int(c, NULL, 2), "NULL");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_bool(c, "2x", true), "identifier");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_bool(c, "a b", true), "identifier");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "lc_ck_x", 1), "reserved");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "U", (mlx_dtype)-1),
              "invalid dtype");
  CHECK(((struct lc_ck_config *)c.ctx)->ntarg == 3);
  /* empty handles */
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_output_arg(none, sh, 2, MLX_FLOAT32), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_grid(none, 1, 1, 1), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_thread_group(none, 1, 1, 1), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_init_value(none, 0), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_set_verbose(none, false), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_dtype(none, "T", MLX_FLOAT32), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_int(none, "T", 1), "empty");
  CHECK_FAILS(mlx_fast_cuda_kernel_config_add_template_arg_bool(none, "T", 1), "empty");
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_config_free(none); /* an empty handle frees as nothing */
}

static void test_kernel_new(void) {
  const char *in[] = {"a", "b"}, *out[] = {"out"}, *dup[] = {"a", "a"}, *clash[] = {"a"};
  const char *badn[] = {"a", "b-c"}, *res[] = {"lc_ck_args"}, *nul[] = {"a", NULL};
  const char *src = "out[0] = a[0] + b[0];";
  mlx_fast_cuda_kernel k = make("add", in, 2, out, 1, src, true, 0);
  CHECK(k.ctx != NULL);
  struct lc_ck_kernel *kk = k.ctx;
  CHECK(kk->nin == 2 && kk->nout == 1 && !kk->uses[0][0] && !kk->uses[1][2]);
  mlx_fast_cuda_kernel_free(k);
  /* header NULL is "", no inputs is fine, names may start with digits */
  k = make("2d", NULL, 0, out, 1, "out[0] = 1;", false, 1024);
  CHECK(k.ctx != NULL);
  mlx_fast_cuda_kernel_free(k);
  mlx_fast_cuda_kernel_free((mlx_fast_cuda_kernel){NULL});

  test_last_error[0] = 0;
  CHECK(make(NULL, in, 2, out, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "name is empty") != NULL);
  CHECK(make("", in, 2, out, 1, src, true, 0).ctx == NULL);
  CHECK(make("my kernel", in, 2, out, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "letters, digits") != NULL);
  CHECK(make("k", in, 2, out, 1, NULL, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "source is NULL") != NULL);
  CHECK(make("k", in, 2, out, 0, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "at least one output") != NULL);
  CHECK(make("k", in, 2, out, 1, src, true, -1).ctx == NULL);
  CHECK(strstr(test_last_error, "shared_memory") != NULL);
  CHECK(make("k", dup, 2, out, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "twice") != NULL);
  CHECK(make("k", in, 2, clash, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "both an input and an output") != NULL);
  CHECK(make("k", badn, 2, out, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "not a C identifier") != NULL);
  CHECK(make("k", in, 2, res, 1, src, true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "reserved") != NULL);
  /* a vector cannot hold NULL strings, so the NULL check goes inside */
  CHECK(lc_ck_kernel_new("k", 2, nul, 1, out, src, "", true, 0) == NULL);
  CHECK(strstr(test_last_error, "is NULL") != NULL);
  mlx_vector_string vo = names(out, 1), empty = {NULL};
  CHECK(mlx_fast_cuda_kernel_new("k", empty, vo, src, "", true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "input_names is an empty vector handle") != NULL);
  CHECK(mlx_fast_cuda_kernel_new("k", vo, empty, src, "", true, 0).ctx == NULL);
  CHECK(strstr(test_last_error, "output_names") != NULL);
  mlx_vector_string_free(vo);
}

/* The source of kernel `k` under config c on inputs of dtypes dt. */
static char *source_of(mlx_fast_cuda_kernel k, mlx_fast_cuda_kernel_config c, const mlx_dtype *dt,
                       char **kname, struct lc_ck_layout *lay) {
  return lc_ck_source(k.ctx, dt, c.ctx, kname, lay);
}

static bool has(const char *s, const char *needle) {
  bool ok = s && strstr(s, needle) != NULL;
  if (!ok) fprintf(stderr, "generated source lacks: %s\n", needle);
  return ok;
}

static void test_source(void) {
  const char *in[] = {"inp", "w"}, *out[] = {"out", "cnt"};
  const char *src = "auto i = cooperative_groups::this_grid().thread_rank();\n"
                    "int64_t l = elem_to_loc((int64_t)i, inp_shape.data(), inp_strides.data(), "
                    "inp_ndim);\nout[i] = T(inp[l]) * N + w[0]; if (B) atomicAdd(cnt, 1);";
  mlx_fast_cuda_kernel k = make("myk", in, 2, out, 2, src, false, 0);
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new();
  int sh[1] = {8};
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, sh, 1, MLX_FLOAT16));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, NULL, 0, MLX_INT32));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "T", MLX_FLOAT32));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "N", 4));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_bool(c, "B", false));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_dtype(c, "H", MLX_BFLOAT16));
  CHECK_OK(mlx_fast_cuda_kernel_config_add_template_arg_int(c, "M", -12));
  mlx_dtype dt[2] = {MLX_BFLOAT16, MLX_COMPLEX64};
  char *kname = NULL;
  struct lc_ck_layout lay;
  char *s = source_of(k, c, dt, &kname, &lay);
  CHECK(s != NULL && kname != NULL);
  CHECK(kname && !strcmp(kname, "custom_kernel_myk_float_4_f_bfloat16_t_n12"));
  CHECK(has(s, "namespace mlx::core::cu"));
  CHECK(has(s, "extern \"C\" __global__ void custom_kernel_myk_float_4_f_bfloat16_t_n12("));
  CHECK(has(s, "const __nv_bfloat16 *inp = lc_ck_args.inp;"));
  CHECK(has(s, "const mlx::core::cu::complex64_t *w = lc_ck_args.w;"));
  CHECK(has(s, "__half *out = lc_ck_args.out;"));
  CHECK(has(s, "int32_t *cnt = lc_ck_args.cnt;"));
  CHECK(has(s, "const Shape &inp_shape = lc_ck_args.inp_shape;"));
  CHECK(has(s, "const Strides &inp_strides = lc_ck_args.inp_strides;"));
  CHECK(has(s, "const int inp_ndim = lc_ck_args.inp_ndim;"));
  CHECK(!strstr(s, "w_shape") && !strstr(s, "w_strides") && !strstr(s, "w_ndim"));
  CHECK(has(s, "using T = float;"));
  CHECK(has(s, "constexpr int N = 4;"));
  CHECK(has(s, "constexpr bool B = false;"));
  CHECK(has(s, "using H = __nv_bfloat16;"));
  CHECK(has(s, "constexpr int M = -12;"));
  CHECK(has(s, src));
  CHECK(has(s, "elem_to_loc"));
  /* layout: 4 pointers, then inp's strides, shape and ndim */
  CHECK(lay.size == 4 * 8 + 80 + 40 + 8);
  CHECK(lay.ptr[0] == 0 && lay.ptr[3] == 24 && lay.strides[0] == 32 && lay.strides[1] == -1);
  CHECK(lay.shape[0] == 112 && lay.ndim[0] == 152 && lay.ndim[1] == -1);
  char want[64];
  snprintf(want, sizeof want, "== %d, \"argument layout\"", lay.size);
  CHECK(has(s, want));
  free(s);
  free(kname);
  lc_ck_layout_free(&lay);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

static mlx_array iota(int n) {
  float v[64];
  for (int i = 0; i < n; i++) v[i] = (float)i;
  return mlx_array_new_data(v, &n, 1, MLX_FLOAT32);
}

static void test_apply_errors(void) {
  const char *in[] = {"inp"}, *out[] = {"out"};
  mlx_fast_cuda_kernel k = make("e", in, 1, out, 1, "out[0] = inp[0];", true, 0), nk = {NULL};
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new(), nc = {NULL};
  int sh[1] = {4};
  mlx_array x = iota(4);
  mlx_vector_array ins = mlx_vector_array_new_data(&x, 1), none = mlx_vector_array_new();
  mlx_vector_array two = mlx_vector_array_new_data((mlx_array[]){x, x}, 2);
  mlx_vector_array outs = mlx_vector_array_new(), empty = {NULL};
  mlx_stream s = test_stream(), ds = {NULL};
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(NULL, k, ins, c, s), "result pointer");
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, nk, ins, c, s), "empty mlx_fast_cuda_kernel");
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, ins, nc, s), "empty mlx_fast_cuda_kernel_config");
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, empty, c, s), "empty vector");
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, none, c, s), "takes 1 inputs");
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, two, c, s), "but got 2");
  /* a complete config on the CPU: MLX refuses non-GPU streams */
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, sh, 1, MLX_FLOAT32));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 4, 1, 1));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 4, 1, 1));
  mlx_stream cpu = mlx_default_cpu_stream_new(); /* s may be a GPU's (LACE_TEST_DEVICE) */
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, ins, c, cpu), "needs a GPU stream");
  mlx_stream_free(cpu);
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, ins, c, ds), "needs a GPU stream");
  mlx_stream g = mlx_default_gpu_stream_new();
  int ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  if (ngpu == 0) CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, k, ins, c, g), "GPU");
  mlx_stream_free(g);
  CHECK(mlx_vector_array_size(outs) == 0); /* failures leave the result untouched */
  mlx_vector_array_free(outs);
  mlx_vector_array_free(ins);
  mlx_vector_array_free(none);
  mlx_vector_array_free(two);
  mlx_array_free(x);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

/* Checks of lc_ck_apply itself (what apply does once the stream is a
 * GPU's), building on this thread's build device: output count and launch
 * limits, verbose output, and nodes that outlive the kernel and config
 * handles (their evaluation then fails cleanly: only GPUs run them). */
static void test_apply_internal(void) {
  const char *in[] = {"inp"}, *out[] = {"out", "o2"};
  mlx_fast_cuda_kernel k = make("vk", in, 1, out, 2, "out[0] = inp_shape[0];", true, 0);
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new();
  int sh[1] = {4}, big[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2};
  struct lc_node *outs[2] = {NULL, NULL};
  float z[2] = {0, 0};
  mlx_array x = iota(6), x11 = mlx_array_new_data(z, big, 11, MLX_FLOAT32), t = mlx_array_new();
  int sh23[2] = {2, 3};
  mlx_reshape(&t, x, sh23, 2, test_stream());
  mlx_array tt = mlx_array_new();
  mlx_transpose(&tt, t, test_stream()); /* not row-contiguous: gets a copy */
  struct lc_node *xin = tt.ctx;
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, sh, 1, MLX_FLOAT32));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "config gives 1 output");
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, NULL, 0, MLX_BOOL));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "grid is not set");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 2048, 1, 1));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "thread group is not set");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 2048, 1, 1));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "threads per block");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 1, 1, 128));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 1, 1, 128));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "64 along z");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 1, 65536 * 2, 1));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 1, 1, 1));
  CHECK_FAILS(lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs), "65535");
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 1000, 1, 1));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 256, 1, 1));
  struct lc_node *x11n = x11.ctx;
  CHECK_FAILS(lc_ck_apply(k.ctx, &x11n, 1, c.ctx, outs), "at most 10");
  CHECK(outs[0] == NULL && outs[1] == NULL);

  /* verbose: the source goes to stdout when applied */
  CHECK_OK(mlx_fast_cuda_kernel_config_set_verbose(c, true));
  char path[] = "/tmp/lace_ck_verbose_XXXXXX";
  int fd = mkstemp(path), saved = dup(1);
  fflush(stdout);
  dup2(fd, 1);
  int rc = lc_ck_apply(k.ctx, &xin, 1, c.ctx, outs);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  CHECK(rc == 0);
  char text[16384] = {0};
  lseek(fd, 0, SEEK_SET);
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  unlink(path);
  CHECK(got > 0);
  CHECK(has(text, "Generated source code for `custom_kernel_vk`:\n```\n"));
  CHECK(has(text, "out[0] = inp_shape[0];"));
  CHECK(has(text, "```\n"));
  if (rc == 0) {
    /* the tuple's layout: 4 floats, then a bool at 64 bytes; blocks of 256 */
    CHECK(outs[0]->dtype == MLX_FLOAT32 && outs[0]->ndim == 1 && outs[0]->shape[0] == 4);
    CHECK(outs[1]->dtype == MLX_BOOL && outs[1]->ndim == 0);
    struct lc_node *tup = outs[0]->in[0];
    const struct lc_ck_launch *L = ((const struct lc_ck_params *)tup->params)->L;
    CHECK(L->grid[0] == 4 && L->block[0] == 256 && L->grid[1] == 1 && L->block[2] == 1);
    CHECK(tup->nin == 1 && tup->in[0] != xin); /* the transposed input goes through a copy */
    /* the nodes outlive the handles */
    mlx_fast_cuda_kernel_free(k);
    mlx_fast_cuda_kernel_config_free(c);
    k.ctx = NULL;
    c.ctx = NULL;
    mlx_array o = {outs[0]};
    if (test_on_gpu()) { /* the stream is a GPU's: the kernel runs */
      CHECK_OK(mlx_array_eval(o));
    } else {
      CHECK_FAILS(mlx_array_eval(o), "runs only on a GPU");
      CHECK(strstr(test_last_error, "custom_kernel_vk") != NULL);
    }
    lc_node_release(outs[0]);
    lc_node_release(outs[1]);
  }
  mlx_fast_cuda_kernel_free(k);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_array_free(x);
  mlx_array_free(x11);
  mlx_array_free(t);
  mlx_array_free(tt);
}

/* An argument struct beyond CUDA's 4 KiB is refused when applied. */
static void test_too_many_args(void) {
  enum { N = 40 };
  char buf[N][16], src[N * 24 + 16] = "";
  const char *in[N], *out[] = {"out"};
  for (int i = 0; i < N; i++) {
    snprintf(buf[i], sizeof buf[i], "x%d", i);
    in[i] = buf[i];
    char use[32];
    snprintf(use, sizeof use, "x%d_strides;x%d_shape;", i, i);
    strcat(src, use);
  }
  mlx_fast_cuda_kernel k = make("wide", in, N, out, 1, src, false, 0);
  mlx_fast_cuda_kernel_config c = mlx_fast_cuda_kernel_config_new();
  CHECK_OK(mlx_fast_cuda_kernel_config_add_output_arg(c, NULL, 0, MLX_FLOAT32));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_grid(c, 1, 1, 1));
  CHECK_OK(mlx_fast_cuda_kernel_config_set_thread_group(c, 1, 1, 1));
  mlx_array x = iota(2);
  struct lc_node *xs[N], *outs[1] = {NULL};
  for (int i = 0; i < N; i++) xs[i] = x.ctx;
  CHECK_FAILS(lc_ck_apply(k.ctx, xs, N, c.ctx, outs), "more than CUDA's 4096");
  CHECK(outs[0] == NULL);
  mlx_array_free(x);
  mlx_fast_cuda_kernel_config_free(c);
  mlx_fast_cuda_kernel_free(k);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_config();
  test_kernel_new();
  test_source();
  test_apply_errors();
  test_apply_internal();
  test_too_many_args();
  CHECK(test_active_memory() <= base);
  return test_done();
}
