/* Compiled functions on the GPU: fused regions (elementwise and row
 * regions) become NVRTC-built kernels (gpu/cuda/fused_src.c, nvrtc.c,
 * eval_fused.c).
 *
 * Part 1, wherever lace is built with CUDA (no GPU needed): every region
 * the cases below compile to is one the GPU kernels support, and its
 * generated source builds with NVRTC for sm_90 under every launch plan
 * (flat, scalar and strided inputs, vector kernel; rows cached in
 * registers by warps and by blocks, and uncached).
 * Part 2, with a GPU: each case compiled on the GPU stream gives the CPU's
 * uncompiled results (tolerances per dtype), through kernels this process
 * built or loaded (no silent CPU fallback), and a second call reuses them.
 * Skips (77) when lace has no CUDA backend; part 2 says when it is skipped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bits.h"

#include "compile/compile.h"
#include "core/node.h"
#include "gpu/cuda/fused.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

/* Present only in CUDA builds. */
__attribute__((weak)) char *lc_fk_source(const struct lc_fused_hdr *h, const struct lc_fk_plan *p);
__attribute__((weak)) bool lc_fk_supported(const struct lc_fused_hdr *h);
__attribute__((weak)) int lc_fk_vector_width(const struct lc_fused_hdr *h);
__attribute__((weak)) int lc_fk_row_arrays(const struct lc_fused_hdr *h);
__attribute__((weak)) void *lc_nvrtc_compile(const char *src, int arch, size_t *len);
__attribute__((weak)) long lc_fk_modules(void);

static mlx_stream S; /* the stream closure bodies run on */

/* ---- closure bodies: temporaries freed together ---- */
#define BODY_TMP 256
static mlx_array tmp[BODY_TMP];
static int ntmp;
static mlx_array *slot(void) {
  if (ntmp == BODY_TMP) abort();
  tmp[ntmp] = mlx_array_new();
  return &tmp[ntmp++];
}
static void drop_tmp(void) {
  while (ntmp) mlx_array_free(tmp[--ntmp]);
}
#define OP(fn, ...) (fn(slot(), __VA_ARGS__, S), tmp[ntmp - 1])
static mlx_array K(double v, mlx_array like) {
  mlx_array *p = slot();
  mlx_array_free(*p);
  *p = mlx_array_new_float64(v);
  return OP(mlx_astype, *p, mlx_array_dtype(like));
}

typedef int (*build_fn)(const mlx_array *x, mlx_array *out); /* returns the outputs' count */

static int gelu(const mlx_array *x, mlx_array *o) {
  mlx_array e = OP(mlx_erf, OP(mlx_multiply, x[0], K(0.7071067811865476, x[0])));
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], K(0.5, x[0])), OP(mlx_add, e, K(1, x[0])));
  return 1;
}
static int silu_mul(const mlx_array *x, mlx_array *o) {
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], OP(mlx_sigmoid, x[0])), x[1]);
  return 1;
}
static int rope_like(const mlx_array *x, mlx_array *o) { /* x, y: (T, D); c, s: (D) */
  o[0] = OP(mlx_subtract, OP(mlx_multiply, x[0], x[2]), OP(mlx_multiply, x[1], x[3]));
  return 1;
}
static int softmax(const mlx_array *x, mlx_array *o) {
  mlx_array e = OP(mlx_exp, OP(mlx_subtract, x[0], OP(mlx_max_axis, x[0], -1, true)));
  o[0] = OP(mlx_divide, e, OP(mlx_sum_axis, e, -1, true));
  return 1;
}
static int layer_norm(const mlx_array *x, mlx_array *o) { /* x (N, D), w, b (D) */
  mlx_array d = OP(mlx_subtract, x[0], OP(mlx_mean_axis, x[0], -1, true));
  mlx_array r = OP(mlx_rsqrt, OP(mlx_add, OP(mlx_var_axis, x[0], -1, true, 0), K(1e-5, x[0])));
  o[0] = OP(mlx_add, OP(mlx_multiply, OP(mlx_multiply, d, r), x[1]), x[2]);
  return 1;
}
static int rms_norm(const mlx_array *x, mlx_array *o) {
  mlx_array m = OP(mlx_mean_axis, OP(mlx_square, x[0]), -1, true);
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], OP(mlx_rsqrt, OP(mlx_add, m, K(1e-6, x[0])))), x[1]);
  return 1;
}
static int logsumexp(const mlx_array *x, mlx_array *o) {
  o[0] = OP(mlx_logsumexp_axis, OP(mlx_multiply, x[0], K(2, x[0])), -1, false);
  return 1;
}
/* as bench_gpu's: max, then exp and sum of the differences, in ops */
static int logsumexp_ops(const mlx_array *x, mlx_array *o) {
  mlx_array m = OP(mlx_max_axis, x[0], -1, true);
  mlx_array e = OP(mlx_sum_axis, OP(mlx_exp, OP(mlx_subtract, x[0], m)), -1, true);
  o[0] = OP(mlx_add, OP(mlx_log, e), m);
  return 1;
}
static int moments(const mlx_array *x, mlx_array *o) {
  mlx_array y = OP(mlx_multiply, x[0], K(1.5, x[0]));
  o[0] = OP(mlx_add, OP(mlx_std_axis, y, -1, true, 1), OP(mlx_var_axis, x[0], -1, true, 0));
  o[1] = OP(mlx_subtract, x[0], o[0]);
  return 2;
}
static int extremes(const mlx_array *x, mlx_array *o) {
  mlx_array y = OP(mlx_add, OP(mlx_multiply, x[0], K(0.01, x[0])), K(1, x[0]));
  o[0] = OP(mlx_prod_axis, y, -1, false);
  o[1] = OP(mlx_min_axis, OP(mlx_negative, y), -1, false);
  return 2;
}
static int int_chain(const mlx_array *x, mlx_array *o) { /* int32 */
  mlx_array a = OP(mlx_add, OP(mlx_multiply, x[0], K(3, x[0])), x[1]);
  mlx_array q = OP(mlx_remainder, OP(mlx_floor_divide, a, K(7, a)), K(5, a));
  o[0] = OP(mlx_bitwise_xor, OP(mlx_left_shift, q, K(2, q)), x[1]);
  return 1;
}
static int int_rows(const mlx_array *x, mlx_array *o) { /* int32 */
  o[0] = OP(mlx_sum_axis, OP(mlx_multiply, x[0], x[0]), -1, false);
  o[1] = OP(mlx_max_axis, OP(mlx_subtract, x[0], x[1]), -1, true);
  return 2;
}
static int bool_where(const mlx_array *x, mlx_array *o) {
  mlx_array c = OP(mlx_logical_and, OP(mlx_greater, x[0], K(0, x[0])), OP(mlx_less, x[1], K(0.5, x[1])));
  o[0] = OP(mlx_where, c, x[0], OP(mlx_multiply, x[1], K(2, x[1])));
  return 1;
}
static int half_mix(const mlx_array *x, mlx_array *o) {
  mlx_array a = OP(mlx_astype, x[0], MLX_FLOAT16), b = OP(mlx_astype, x[1], MLX_BFLOAT16);
  mlx_array c = OP(mlx_add, OP(mlx_multiply, a, a), K(1, a));
  mlx_array d = OP(mlx_astype, OP(mlx_exp, b), MLX_FLOAT32);
  o[0] = OP(mlx_add, OP(mlx_astype, c, MLX_FLOAT32), d);
  o[1] = OP(mlx_astype, OP(mlx_multiply, x[0], K(100, x[0])), MLX_INT16);
  return 2;
}
static int two_outputs(const mlx_array *x, mlx_array *o) {
  o[0] = OP(mlx_add, OP(mlx_exp, x[0]), K(1, x[0]));
  o[1] = OP(mlx_multiply, o[0], x[1]);
  return 2;
}
static int nan_to_num(const mlx_array *x, mlx_array *o) {
  mlx_optional_float none = {0, false};
  o[0] = OP(mlx_nan_to_num, OP(mlx_log, x[0]), 0.5f, none, none);
  return 1;
}

/* isclose(2 x, 2 x + y / 1000) with tolerances that some pairs meet */
static int near_pairs(const mlx_array *x, mlx_array *o) {
  mlx_array a = OP(mlx_multiply, x[0], K(2, x[0]));
  mlx_array b = OP(mlx_add, a, OP(mlx_multiply, x[1], K(1e-3, x[1])));
  o[0] = OP(mlx_isclose, a, b, 1e-3, 2e-4, true);
  return 1;
}

/* fp8 codes of 300 x (some past the saturation at 480), back to x's
 * dtype, plus x; and the codes themselves */
static int fp8_round_trip(const mlx_array *x, mlx_array *o) {
  mlx_array q = OP(mlx_to_fp8, OP(mlx_multiply, x[0], K(300, x[0])));
  o[0] = OP(mlx_add, OP(mlx_from_fp8, q, mlx_array_dtype(x[0])), x[0]);
  o[1] = q;
  return 2;
}

/* ---- cases ---- */
struct input {
  int ndim, shape[3];
  mlx_dtype dtype;
  double lo, hi;
  bool transposed; /* passed as the transpose of a random array */
};
struct gcase {
  const char *name;
  build_fn f;
  int nin;
  struct input in[4];
  double rtol, atol;
  int want_rows; /* row regions expected among the FUSED nodes */
};

/* unset fields of the table below are 0 / false */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define F32 MLX_FLOAT32
static const struct gcase cases[] = {
    /* gelu: 1 + erf(x / sqrt 2) cancels for x << 0, so erf's last-bit
     * differences between libdevice and the CPU grow there (atol) */
    {"gelu", gelu, 1, {{2, {64, 4099}, F32, -4, 4}}, 2e-6, 1e-6, 0},
    {"gelu bf16", gelu, 1, {{2, {64, 4099}, MLX_BFLOAT16, -4, 4}}, 1.6e-2, 1e-2, 0},
    {"silu*mul", silu_mul, 2, {{2, {128, 1000}, F32, -6, 6}, {2, {128, 1000}, F32, -1, 1}}, 2e-6, 1e-7, 0},
    {"silu*mul f16", silu_mul, 2,
     {{2, {128, 1000}, MLX_FLOAT16, -6, 6}, {2, {128, 1000}, MLX_FLOAT16, -1, 1}}, 4e-3, 1e-3, 0},
    {"rope-like (broadcast inputs)", rope_like, 4,
     {{2, {300, 128}, F32, -2, 2}, {2, {300, 128}, F32, -2, 2}, {1, {128}, F32, -1, 1},
      {1, {128}, F32, -1, 1}}, 2e-6, 1e-6, 0},
    {"transposed input", gelu, 1, {{2, {513, 77}, F32, -3, 3, true}}, 2e-6, 1e-6, 0},
    {"softmax", softmax, 1, {{2, {100, 1000}, F32, -5, 5}}, 1e-5, 1e-8, 1},
    {"softmax bf16", softmax, 1, {{2, {33, 4096}, MLX_BFLOAT16, -5, 5}}, 2e-2, 1e-4, 1},
    {"softmax short rows", softmax, 1, {{3, {7, 9, 20}, F32, -5, 5}}, 1e-5, 1e-8, 1},
    {"softmax long rows", softmax, 1, {{2, {6, 40000}, F32, -5, 5}}, 1e-5, 1e-9, 1},
    {"layer_norm", layer_norm, 3,
     {{2, {64, 2048}, F32, -3, 3}, {1, {2048}, F32, 0.5, 1.5}, {1, {2048}, F32, -1, 1}}, 1e-4, 1e-5, 1},
    {"rms_norm", rms_norm, 2, {{2, {64, 4096}, F32, -3, 3}, {1, {4096}, F32, 0.5, 1.5}}, 1e-5, 1e-6, 1},
    {"rms_norm bf16", rms_norm, 2,
     {{2, {16, 2048}, MLX_BFLOAT16, -3, 3}, {1, {2048}, MLX_BFLOAT16, 0.5, 1.5}}, 2e-2, 2e-2, 1},
    {"logsumexp", logsumexp, 1, {{2, {50, 3000}, F32, -5, 5}}, 1e-5, 1e-6, 1},
    {"logsumexp bf16", logsumexp, 1, {{2, {37, 4096}, MLX_BFLOAT16, -8, 8}}, 1.6e-2, 1e-2, 1},
    {"logsumexp in ops, bf16", logsumexp_ops, 1, {{2, {37, 4096}, MLX_BFLOAT16, -90, 8}}, 1.6e-2, 1e-2, 1},
    {"std + var, two outputs", moments, 1, {{2, {40, 777}, F32, -2, 2}}, 1e-4, 1e-5, 1},
    {"prod, min", extremes, 1, {{2, {20, 300}, F32, -1, 1}}, 1e-4, 1e-6, 1},
    {"int32 chain", int_chain, 2,
     {{2, {60, 1001}, MLX_INT32, -1000, 1000}, {2, {60, 1001}, MLX_INT32, -50, 50}}, 0, 0, 0},
    {"int32 rows", int_rows, 2,
     {{2, {31, 517}, MLX_INT32, -100, 100}, {2, {31, 517}, MLX_INT32, -100, 100}}, 0, 0, 1},
    {"bool where", bool_where, 2, {{2, {99, 101}, F32, -1, 1}, {2, {99, 101}, F32, 0, 1}}, 0, 0, 0},
    {"float16/bfloat16/int16 mix", half_mix, 2,
     {{2, {64, 257}, F32, -2, 2}, {2, {64, 257}, F32, -2, 2}}, 1.6e-2, 1e-2, 0},
    {"two outputs", two_outputs, 2, {{2, {256, 300}, F32, -3, 3}, {2, {256, 300}, F32, -1, 1}}, 2e-6, 1e-7, 0},
    {"nan_to_num", nan_to_num, 1, {{1, {10000}, F32, -1, 3}}, 2e-6, 1e-7, 0},
    {"isclose", near_pairs, 2, {{2, {70, 300}, F32, -1, 1}, {2, {70, 300}, F32, -1, 1}}, 0, 0, 0},
    {"isclose bf16", near_pairs, 2,
     {{2, {70, 300}, MLX_BFLOAT16, -1, 1}, {2, {70, 300}, MLX_BFLOAT16, -1, 1}}, 0, 0, 0},
    {"fp8 round trip", fp8_round_trip, 1, {{2, {70, 300}, F32, -2, 2}}, 0, 0, 0},
    {"fp8 round trip f16", fp8_round_trip, 1, {{2, {70, 300}, MLX_FLOAT16, -2, 2}}, 0, 0, 0},
};
#define NCASES (int)(sizeof cases / sizeof *cases)

static const struct gcase *current;

static int closure_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x[4], o[4];
  int n = (int)mlx_vector_array_size(in);
  for (int k = 0; k < n && k < 4; k++) {
    x[k] = mlx_array_new();
    mlx_vector_array_get(&x[k], in, (size_t)k);
  }
  int nout = current->f(x, o);
  mlx_vector_array r = mlx_vector_array_new_data(o, (size_t)nout);
  mlx_vector_array_set(res, r);
  mlx_vector_array_free(r);
  drop_tmp();
  for (int k = 0; k < n && k < 4; k++) mlx_array_free(x[k]);
  return 0;
}

static mlx_vector_array make_inputs(const struct gcase *c) {
  mlx_vector_array v = mlx_vector_array_new();
  for (int k = 0; k < c->nin; k++) {
    const struct input *in = &c->in[k];
    int sh[3] = {in->shape[0], in->shape[1], in->shape[2]};
    if (in->transposed) {
      int t = sh[0];
      sh[0] = sh[1];
      sh[1] = t;
    }
    mlx_array a = gpu_rand(sh, in->ndim, in->dtype, in->lo, in->hi);
    if (in->transposed) {
      mlx_array t = mlx_array_new();
      mlx_transpose(&t, a, test_stream());
      mlx_array_free(a);
      a = t;
    }
    mlx_vector_array_append_value(v, a);
    mlx_array_free(a);
  }
  return v;
}

/* The distinct FUSED nodes of the graph of a (not evaluated yet). */
static int collect_fused(struct lc_node *n, struct lc_node **found, int nfound, int cap) {
  if (!n || n->buf) return nfound;
  for (int k = 0; k < nfound; k++)
    if (found[k] == n) return nfound;
  if (n->op == LC_OP_FUSED && nfound < cap) found[nfound++] = n;
  for (int k = 0; k < n->nin; k++) nfound = collect_fused(n->in[k], found, nfound, cap);
  return nfound;
}

static struct lc_node *node_of(mlx_array a) { return (struct lc_node *)a.ctx; }

/* The distinct FUSED nodes of the graphs of outs (at most cap). */
static int collect_fused_outs(mlx_vector_array outs, struct lc_node **found, int cap) {
  int nf = 0;
  for (size_t k = 0; k < mlx_vector_array_size(outs); k++) {
    mlx_array o = mlx_array_new();
    mlx_vector_array_get(&o, outs, k);
    nf = collect_fused(node_of(o), found, nf, cap);
    mlx_array_free(o);
  }
  return nf;
}

/* Part 1: the case's regions build under every plan. */
static void build_regions(const struct gcase *c, mlx_vector_array outs) {
  struct lc_node *found[32];
  int nf = collect_fused_outs(outs, found, 32);
  CHECK_MSG(nf >= 1, "%s: the compiled graph has no fused region", c->name);
  int rows = 0;
  for (int r = 0; r < nf; r++) {
    const struct lc_fused_hdr *h = found[r]->params;
    rows += h->rows;
    CHECK_MSG(lc_fk_supported(h), "%s: region %d is not supported on the GPU", c->name, r);
    struct lc_fk_plan plans[4];
    memset(plans, 0, sizeof plans);
    int np = 4;
    if (h->rows) { /* warps, blocks; cached, uncached; packs of 1 and 4 */
      int gkv[4][3] = {{32, 4, 1}, {256, 2, 4}, {1024, 0, 1}, {512, 0, 4}};
      for (int q = 0; q < 4; q++) {
        plans[q].rows = 1;
        plans[q].nd = h->ndim - 1 < LC_FK_MAX_DIMS ? h->ndim - 1 : LC_FK_MAX_DIMS;
        plans[q].G = gkv[q][0];
        plans[q].K = gkv[q][1];
        plans[q].V = gkv[q][2];
      }
      for (int k = 1; k < h->nin && k < 32; k++) /* weight-like inputs, read by each pass */
        if (lc_fused_ins_in(h)[k].mode == LC_FK_FULL) plans[1].nocache |= 1u << k;
    } else { /* flat; scalar; strided; repeated, with the vector kernel */
      for (int k = 0; k < h->nin; k++) {
        plans[0].lay[k] = 'c';
        plans[1].lay[k] = k == 0 ? 's' : 'c';
        plans[2].lay[k] = k == 0 ? 'c' : 'g';
        plans[3].lay[k] = k == 0 ? 'c' : 'r';
      }
      plans[0].vec = plans[1].vec = plans[3].vec = 1;
      plans[3].U = 2;
      plans[0].V = plans[1].V = plans[3].V = lc_fk_vector_width(h);
      plans[2].nd = 3;
      plans[2].idx64 = 1;
      if (h->nin == 1) plans[2].lay[0] = 'g', plans[3].lay[0] = 'r';
    }
    for (int q = 0; q < np; q++) {
      char *src = lc_fk_source(h, &plans[q]);
      CHECK_MSG(src != NULL, "%s: region %d plan %d: no source", c->name, r, q);
      if (!src) continue;
      if (getenv("LACE_TEST_DUMP_SRC")) fprintf(stderr, "// %s, region %d, plan %d\n%s", c->name, r, q, src);
      size_t len = 0;
      void *bin = lc_nvrtc_compile(src, 90, &len);
      CHECK_MSG(bin != NULL && len > 0, "%s: region %d plan %d: NVRTC failed (LACE_CUDA_VERBOSE=1 shows why)",
                c->name, r, q);
      free(bin);
      free(src);
    }
  }
  CHECK_MSG((rows > 0) == (c->want_rows > 0), "%s: %d row regions, expected %s", c->name, rows,
            c->want_rows ? "some" : "none");
}

/* Regions wider than one GPU kernel takes (LC_FUSED_GPU_MAX_IN inputs,
 * _OUT outputs) stay unfused on a GPU instead of falling back to the CPU:
 * the sum of 40 inputs times constants; a chain of 20 steps all returned. */
#define WIDE_IN 40
#define WIDE_OUT 20
static int wide_body(mlx_vector_array *res, const mlx_vector_array in) {
  int n = (int)mlx_vector_array_size(in);
  mlx_array acc = mlx_array_new(), x = mlx_array_new(), t = mlx_array_new();
  mlx_array outs[WIDE_OUT];
  int nout = 0;
  for (int k = 0; k < n; k++) {
    mlx_vector_array_get(&x, in, (size_t)k);
    mlx_array c = mlx_array_new_float((float)(k + 1) / 8);
    if (k == 0) mlx_multiply(&acc, x, c, S);
    else {
      mlx_multiply(&t, x, c, S);
      mlx_add(&acc, acc, t, S);
    }
    mlx_array_free(c);
  }
  if (n == 1) /* the chain: every step an output */
    for (; nout < WIDE_OUT; nout++) {
      mlx_array c = mlx_array_new_float(0.75f);
      outs[nout] = mlx_array_new();
      mlx_multiply(&outs[nout], nout ? outs[nout - 1] : acc, c, S);
      mlx_array_free(c);
    }
  else
    outs[nout++] = acc, acc = mlx_array_new();
  mlx_vector_array r = mlx_vector_array_new_data(outs, (size_t)nout);
  mlx_vector_array_set(res, r);
  mlx_vector_array_free(r);
  for (int k = 0; k < nout; k++) mlx_array_free(outs[k]);
  mlx_array_free(acc), mlx_array_free(x), mlx_array_free(t);
  return 0;
}

static mlx_vector_array run(mlx_closure f, mlx_vector_array in);

static void wide_regions(void) {
  mlx_closure plain = mlx_closure_new_func(wide_body);
  for (int ninput = 1; ninput <= WIDE_IN; ninput += WIDE_IN - 1) {
    mlx_vector_array in = mlx_vector_array_new();
    int sh[2] = {64, 1000};
    for (int k = 0; k < ninput; k++) {
      mlx_array a = gpu_rand(sh, 2, MLX_FLOAT32, -1, 1);
      mlx_vector_array_append_value(in, a);
      mlx_array_free(a);
    }
    S = test_stream();
    mlx_vector_array want = run(plain, in);
    S = gpu_stream;
    mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
    CHECK_OK(mlx_set_default_device(gdev));
    mlx_closure gf = mlx_closure_new();
    CHECK_OK(mlx_compile(&gf, plain, false));
    mlx_vector_array got = run(gf, in);
    struct lc_node *found[64];
    int nf = collect_fused_outs(got, found, 64);
    for (int r = 0; r < nf; r++) {
      const struct lc_fused_hdr *h = found[r]->params;
      CHECK_MSG(h->nin <= LC_FUSED_GPU_MAX_IN && h->nout <= LC_FUSED_GPU_MAX_OUT,
                "wide (%d inputs): a GPU region of %d inputs and %d outputs", ninput, h->nin, h->nout);
    }
    CHECK(mlx_vector_array_size(got) == mlx_vector_array_size(want));
    for (size_t k = 0; k < mlx_vector_array_size(want); k++) {
      mlx_array g = mlx_array_new(), w = mlx_array_new();
      mlx_vector_array_get(&g, got, k);
      mlx_vector_array_get(&w, want, k);
      char what[80];
      snprintf(what, sizeof what, "wide (%d inputs), output %zu", ninput, k);
      CHECK_SAME(g, w, 1e-5, 1e-5, what);
      mlx_array_free(g), mlx_array_free(w);
    }
    CHECK_OK(mlx_set_default_device(cdev));
    mlx_device_free(gdev), mlx_device_free(cdev);
    mlx_vector_array_free(got), mlx_vector_array_free(want), mlx_vector_array_free(in);
    mlx_closure_free(gf);
  }
  mlx_closure_free(plain);
}

/* A compiled function with two outputs of 1 GiB each: the FUSED tuple
 * holds 2 GiB, more than an int32 extent (its shape is two-dimensional). */
static int two_big_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new(), o[2] = {mlx_array_new(), mlx_array_new()};
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&y, in, 1);
  mlx_multiply(&o[0], x, y, S);
  mlx_add(&o[1], x, y, S);
  mlx_vector_array r = mlx_vector_array_new_data(o, 2);
  mlx_vector_array_set(res, r);
  mlx_vector_array_free(r);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(o[0]), mlx_array_free(o[1]);
  return 0;
}

static void big_tuple(void) {
  S = gpu_stream;
  double n = (double)(1 << 28);
  mlx_array a = mlx_array_new(), b = mlx_array_new(), x = mlx_array_new(), y = mlx_array_new(),
            k = mlx_array_new_float(1.0f / (1 << 20));
  CHECK_OK(mlx_arange(&a, 0, n, 1, MLX_FLOAT32, gpu_stream));
  CHECK_OK(mlx_multiply(&x, a, k, gpu_stream));
  CHECK_OK(mlx_arange(&b, n, 0, -1, MLX_FLOAT32, gpu_stream));
  CHECK_OK(mlx_multiply(&y, b, k, gpu_stream));
  mlx_array xy[2] = {x, y};
  mlx_vector_array in = mlx_vector_array_new_data(xy, 2);
  mlx_closure plain = mlx_closure_new_func(two_big_body), cf = mlx_closure_new();
  mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
  CHECK_OK(mlx_set_default_device(gdev));
  CHECK_OK(mlx_compile(&cf, plain, false));
  mlx_vector_array want = run(plain, in), got = run(cf, in);
  for (size_t i = 0; i < 2; i++) {
    mlx_array g = mlx_array_new(), w = mlx_array_new(), eq = mlx_array_new();
    mlx_vector_array_get(&g, got, i);
    mlx_vector_array_get(&w, want, i);
    CHECK_OK(mlx_array_equal(&eq, g, w, false, gpu_stream));
    bool same = false;
    CHECK_OK(mlx_array_eval(eq));
    CHECK_OK(mlx_array_item_bool(&same, eq));
    CHECK_MSG(same, "two 1 GiB outputs: output %zu differs from the uncompiled one", i);
    mlx_array_free(g), mlx_array_free(w), mlx_array_free(eq);
  }
  CHECK_OK(mlx_set_default_device(cdev));
  mlx_device_free(gdev), mlx_device_free(cdev);
  mlx_vector_array_free(in), mlx_vector_array_free(want), mlx_vector_array_free(got);
  mlx_closure_free(plain), mlx_closure_free(cf);
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(x), mlx_array_free(y), mlx_array_free(k);
}

/* bfloat16 +, -, * in fused kernels (the GPU's bfloat16 instructions)
 * against the unfused kernels (float, then rounded): the same bits, NaNs
 * aside (any NaN matches any NaN), over every bit pattern for sums and
 * differences (subnormals, infinities, NaNs) and for products whose exact
 * value is in float's normal range or beyond. */
static int bf16_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new(), u = mlx_array_new(), v = mlx_array_new();
  mlx_array o[4] = {mlx_array_new(), mlx_array_new(), mlx_array_new(), mlx_array_new()};
  mlx_vector_array_get(&x, in, 0), mlx_vector_array_get(&y, in, 1);
  mlx_vector_array_get(&u, in, 2), mlx_vector_array_get(&v, in, 3);
  mlx_add(&o[0], x, y, S);
  mlx_subtract(&o[1], x, y, S);
  mlx_multiply(&o[2], u, v, S);
  mlx_add(&o[3], o[2], y, S);
  mlx_vector_array r = mlx_vector_array_new_data(o, 4);
  mlx_vector_array_set(res, r);
  mlx_vector_array_free(r);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(u), mlx_array_free(v);
  for (int k = 0; k < 4; k++) mlx_array_free(o[k]);
  return 0;
}

/* n bfloat16 values of random bits; with exponent fields in [lo, hi]. */
static mlx_array bf16_bits(int n, int lo, int hi) {
  uint16_t *b = malloc(sizeof(uint16_t) * (size_t)n);
  for (int i = 0; i < n; i++) {
    uint16_t r = (uint16_t)test_rand_u64();
    int e = lo + (int)(test_rand_u64() % (uint64_t)(hi - lo + 1));
    b[i] = (uint16_t)((r & 0x807f) | (e << 7));
  }
  if (n > 8) b[0] = 0x7f80, b[1] = 0xff80, b[2] = 0x7fc0, b[3] = 0x8000, b[4] = 0x0001; /* inf, -inf, NaN, -0, subnormal */
  mlx_array u = mlx_array_new_data(b, &n, 1, MLX_UINT16), r = mlx_array_new();
  CHECK_OK(mlx_view(&r, u, MLX_BFLOAT16, test_stream()));
  CHECK_OK(mlx_array_eval(r));
  mlx_array_free(u);
  free(b);
  return r;
}

static void bf16_native(void) {
  S = gpu_stream;
  int n = 1 << 20;
  mlx_array a[4] = {bf16_bits(n, 0, 255), bf16_bits(n, 0, 255), bf16_bits(n, 64, 190),
                    bf16_bits(n, 64, 190)};
  mlx_vector_array in = mlx_vector_array_new_data(a, 4);
  mlx_closure plain = mlx_closure_new_func(bf16_body), cf = mlx_closure_new();
  mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
  CHECK_OK(mlx_set_default_device(gdev));
  CHECK_OK(mlx_compile(&cf, plain, false));
  mlx_vector_array want = run(plain, in), got = run(cf, in);
  const char *what[] = {"x + y", "x - y", "u * v", "u * v + y"};
  for (size_t i = 0; i < 4; i++) {
    mlx_array g = mlx_array_new(), w = mlx_array_new();
    mlx_vector_array_get(&g, got, i);
    mlx_vector_array_get(&w, want, i);
    long bad = gpu_count_differing(g, w);
    CHECK_MSG(bad == 0, "bfloat16 %s: fused and unfused GPU results differ in %ld elements' bits",
              what[i], bad);
    mlx_array tmp[] = {g, w};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) mlx_array_free(tmp[k]);
  }
  CHECK_OK(mlx_set_default_device(cdev));
  mlx_device_free(gdev), mlx_device_free(cdev);
  mlx_vector_array_free(in), mlx_vector_array_free(want), mlx_vector_array_free(got);
  mlx_closure_free(plain), mlx_closure_free(cf);
  for (int k = 0; k < 4; k++) mlx_array_free(a[k]);
}

static mlx_vector_array run(mlx_closure f, mlx_vector_array in) {
  mlx_vector_array out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, in));
  return out;
}

int main(void) {
  test_init();
  if (!lc_gpu_built() || !lc_fk_source) {
    printf("SKIP: lace was built without the CUDA backend\n");
    return TEST_SKIP;
  }
  char dir[] = "/tmp/lace-gpu-compile-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("LACE_JIT_CACHE", dir, 1);
  mlx_closure plain = mlx_closure_new_func(closure_body);
  int ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  if (ngpu > 0) gpu_stream = mlx_default_gpu_stream_new();
  else printf("part 2 skipped: no GPU on this machine (%s)\n", lc_gpu_unavailable_reason());
  for (int i = 0; i < NCASES; i++) {
    current = &cases[i];
    mlx_vector_array in = make_inputs(current);
    /* reference: uncompiled on the CPU */
    S = test_stream();
    mlx_vector_array want = run(plain, in);
    /* part 1: the regions of the CPU-compiled graph */
    mlx_closure cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, plain, false));
    mlx_vector_array cpu = run(cf, in);
    build_regions(current, cpu);
    mlx_vector_array_free(cpu);
    if (ngpu > 0) { /* part 2 */
      /* replays run on the default device (as the trace's ops, here) */
      S = gpu_stream;
      mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
      CHECK_OK(mlx_set_default_device(gdev));
      long m0 = lc_fk_modules();
      mlx_closure gf = mlx_closure_new();
      CHECK_OK(mlx_compile(&gf, plain, false));
      for (int rep = 0; rep < 2; rep++) {
        mlx_vector_array got = run(gf, in);
        for (size_t k = 0; k < mlx_vector_array_size(want); k++) {
          mlx_array g = mlx_array_new(), w = mlx_array_new();
          mlx_vector_array_get(&g, got, k);
          mlx_vector_array_get(&w, want, k);
          char what[160];
          snprintf(what, sizeof what, "%s, output %zu, call %d", current->name, k, rep + 1);
          CHECK_SAME(g, w, current->rtol, current->atol, what);
          mlx_array_free(g);
          mlx_array_free(w);
        }
        mlx_vector_array_free(got);
        long m1 = lc_fk_modules();
        if (rep == 0) CHECK_MSG(m1 > m0, "%s: no GPU kernel was built (CPU fallback?)", current->name);
        if (rep == 1) CHECK_MSG(m1 == m0, "%s: the second call built kernels again", current->name);
        m0 = m1;
      }
      mlx_closure_free(gf);
      CHECK_OK(mlx_set_default_device(cdev));
      mlx_device_free(gdev);
      mlx_device_free(cdev);
    }
    mlx_closure_free(cf);
    mlx_vector_array_free(want);
    mlx_vector_array_free(in);
  }
  if (ngpu > 0) wide_regions();
  if (ngpu > 0) big_tuple();
  if (ngpu > 0) bf16_native();
  mlx_closure_free(plain);
  test_remove_dir(dir);
  return test_done();
}
