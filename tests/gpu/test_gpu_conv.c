/* Convolutions on the GPU (gpu/cuda/eval_conv.c) against the CPU's, on
 * random inputs: 1-3 spatial dims, strides 1/2/3, asymmetric and negative
 * padding, kernel dilation, input dilation (transposed convolutions),
 * groups 1/2/C (depthwise), flip, batch 1/3, odd sizes, pointwise kernels
 * (the direct path), non-contiguous inputs and weights, a case large
 * enough to be split into several im2col blocks; float32, float16,
 * bfloat16, float64; the gradients of both arguments on the GPU; repeated
 * evaluations (CUDA graphs); device memory back to its baseline. Skips
 * without a GPU. */
#include <math.h>

#include "core/node.h"
#include "gpu/graphs.h"
#include "gpu_bits.h"
#include "ops/prim.h"

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

struct ccase {
  int nsp, N, C, O, groups, flip;
  int in[3], k[3], stride[3], lo[3], hi[3], kd[3], id[3];
};

static int64_t kdim(const struct ccase *c) {
  int64_t K = c->C / c->groups;
  for (int i = 0; i < c->nsp; i++) K *= c->k[i];
  return K;
}

/* Tolerances for an output of dtype t summing K products of values in
 * [-1, 1]: float32 rtol 1e-4 with an absolute part growing with K;
 * float16 / bfloat16 about two units in the last place (both sides round
 * the same float32 sums), float64 tight. */
static void tolerances(mlx_dtype t, int64_t K, double *rtol, double *atol) {
  double k = (double)(K > 0 ? K : 1);
  switch (t) {
    case MLX_FLOAT16: *rtol = 2.5e-3, *atol = 1e-5 * k; break;
    case MLX_BFLOAT16: *rtol = 1.6e-2, *atol = 1e-5 * k; break;
    case MLX_FLOAT64: *rtol = 1e-11, *atol = 1e-13 * k; break;
    default: *rtol = 1e-4, *atol = 1e-6 * k;
  }
}

static int conv_on(mlx_array *r, mlx_array x, mlx_array w, const struct ccase *c, mlx_stream s) {
  int n = c->nsp;
  return mlx_conv_general(r, x, w, c->stride, n, c->lo, n, c->hi, n, c->kd, n, c->id, n,
                          c->groups, c->flip, s);
}

/* views: 1 = input stored channels-first and moved back (strided), 2 =
 * weight stored (C/groups, O, k...) and moved back (strided). */
static mlx_array strided_copy(mlx_array a, int nd, int first_to_last) {
  /* a's values in a buffer with the last (or first) axis outermost,
   * viewed back in a's shape */
  mlx_array t = mlx_array_new(), c = mlx_array_new(), r = mlx_array_new();
  if (first_to_last) {
    mlx_moveaxis(&t, a, nd - 1, 0, test_stream());
    mlx_contiguous(&c, t, false, test_stream());
    mlx_moveaxis(&r, c, 0, nd - 1, test_stream());
  } else {
    mlx_moveaxis(&t, a, 0, nd - 1, test_stream());
    mlx_contiguous(&c, t, false, test_stream());
    mlx_moveaxis(&r, c, nd - 1, 0, test_stream());
  }
  mlx_array_eval(r);
  mlx_array_free(t);
  mlx_array_free(c);
  return r;
}

/* Runs case c on the GPU and the CPU in dtype t and compares. views as
 * strided_copy's. False when the CPU refused the case (invalid). */
static bool run_case(const struct ccase *c, mlx_dtype t, int views, const char *name) {
  int nd = c->nsp + 2, xs[5], ws[5];
  xs[0] = c->N;
  ws[0] = c->O;
  for (int i = 0; i < c->nsp; i++) xs[i + 1] = c->in[i], ws[i + 1] = c->k[i];
  xs[nd - 1] = c->C;
  ws[nd - 1] = c->C / c->groups;
  mlx_array x = gpu_rand(xs, nd, t, -1, 1), w = gpu_rand(ws, nd, t, -1, 1);
  if (views & 1) {
    mlx_array v = strided_copy(x, nd, 1);
    mlx_array_free(x);
    x = v;
  }
  if (views & 2) {
    mlx_array v = strided_copy(w, nd, 0);
    mlx_array_free(w);
    w = v;
  }
  mlx_array rc = mlx_array_new(), rg = mlx_array_new();
  bool valid = conv_on(&rc, x, w, c, test_stream()) == 0;
  if (valid) {
    CHECK_OK(mlx_array_eval(rc));
    CHECK_OK(conv_on(&rg, x, w, c, gpu_stream));
    /* the CONV node itself (float16 / bfloat16: under the cast back, which
     * the GPU would make even from a CPU-made CONV output) */
    struct lc_node *cn = rg.ctx;
    if (cn && cn->op == LC_OP_ASTYPE && cn->nin == 1) cn = cn->in[0];
    CHECK_MSG(cn && cn->op == LC_OP_CONV, "%s: the result is not a CONV node", name);
    mlx_array conv_node = {cn ? lc_node_retain(cn) : NULL};
    CHECK_OK(mlx_array_eval(rg));
    CHECK_MSG(made_on_gpu(rg) && made_on_gpu(conv_node), "%s: the result was not made on the GPU",
              name);
    if (conv_node.ctx) lc_node_release(conv_node.ctx);
    double rtol, atol;
    tolerances(t, kdim(c), &rtol, &atol);
    CHECK_SAME(rg, rc, rtol, atol, name);
  }
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(rc);
  mlx_array_free(rg);
  return valid;
}

static const char *tname(mlx_dtype t) {
  return t == MLX_FLOAT16 ? "f16" : t == MLX_BFLOAT16 ? "bf16" : t == MLX_FLOAT64 ? "f64" : "f32";
}

static struct ccase base(int nsp, int N, int C, int O, int in, int k) {
  struct ccase c = {.nsp = nsp, .N = N, .C = C, .O = O, .groups = 1};
  for (int i = 0; i < 3; i++) {
    c.in[i] = in + i; /* odd and even extents across axes */
    c.k[i] = k;
    c.stride[i] = c.kd[i] = c.id[i] = 1;
  }
  return c;
}

/* Hand-picked cases per dimension count: each parameter on its own. */
static void test_named(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};
  for (int nsp = 1; nsp <= 3; nsp++) {
    int in = nsp == 3 ? 6 : nsp == 2 ? 9 : 17;
    struct ccase cs[16];
    const char *names[16];
    int m = 0;
    cs[m] = base(nsp, 1, 3, 4, in, 3), names[m++] = "plain batch 1";
    cs[m] = base(nsp, 3, 4, 5, in, 3), names[m++] = "batch 3";
    for (int s = 2; s <= 3; s++) {
      cs[m] = base(nsp, 2, 3, 4, in, 3);
      for (int i = 0; i < nsp; i++) cs[m].stride[i] = s;
      names[m++] = s == 2 ? "stride 2" : "stride 3";
    }
    cs[m] = base(nsp, 2, 3, 2, in, 3);
    for (int i = 0; i < nsp; i++) cs[m].lo[i] = 2, cs[m].hi[i] = i % 2 ? 0 : 1;
    names[m++] = "asymmetric padding";
    cs[m] = base(nsp, 2, 3, 2, in, 3);
    for (int i = 0; i < nsp; i++) cs[m].lo[i] = -1, cs[m].hi[i] = i ? 1 : -2;
    names[m++] = "negative padding";
    cs[m] = base(nsp, 2, 3, 4, in, 3);
    for (int i = 0; i < nsp; i++) cs[m].kd[i] = 2;
    names[m++] = "kernel dilation 2";
    cs[m] = base(nsp, 2, 3, 4, in - 2, 3);
    for (int i = 0; i < nsp; i++) cs[m].id[i] = 2, cs[m].lo[i] = cs[m].hi[i] = 2;
    names[m++] = "input dilation 2 (transposed)";
    cs[m] = base(nsp, 2, 4, 6, in, 3), cs[m].groups = 2, names[m++] = "groups 2";
    cs[m] = base(nsp, 2, 6, 6, in, 3), cs[m].groups = 6, names[m++] = "depthwise";
    cs[m] = base(nsp, 2, 5, 10, in, 2), cs[m].groups = 5, names[m++] = "depthwise x2";
    cs[m] = base(nsp, 2, 3, 4, in, 3), cs[m].flip = 1, names[m++] = "flip";
    cs[m] = base(nsp, 3, 8, 5, in, 1), names[m++] = "pointwise";
    cs[m] = base(nsp, 3, 8, 6, in, 1), cs[m].groups = 2, names[m++] = "pointwise groups 2";
    cs[m] = base(nsp, 2, 3, 4, in, 1);
    for (int i = 0; i < nsp; i++) cs[m].stride[i] = 2;
    names[m++] = "pointwise stride 2";
    cs[m] = base(nsp, 2, 5, 3, in, 3);
    for (int i = 0; i < nsp; i++)
      cs[m].stride[i] = 1 + i % 3, cs[m].kd[i] = 2 - i % 2, cs[m].id[i] = 1 + i % 2,
      cs[m].lo[i] = i, cs[m].hi[i] = 2 - i;
    cs[m].flip = 1, names[m++] = "mixed per axis, flipped";
    for (int j = 0; j < m; j++)
      for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (nsp == 3 && cs[j].groups != 1) continue; /* MLX: groups only in 1-D and 2-D */
        for (int v = 0; v < 4; v++) {
          if (v && types[t] != MLX_FLOAT32) continue;
          bool ok = run_case(&cs[j], types[t], v,
                             WHAT("%dd %s %s views %d", nsp, names[j], tname(types[t]), v));
          CHECK_MSG(ok, "%dd %s: the CPU refused the case", nsp, names[j]);
        }
      }
  }
}

/* Random parameter combinations (those the builder accepts). */
static void test_random(void) {
  int done = 0;
  for (int it = 0; it < 400 && done < 150; it++) {
    struct ccase c = {.nsp = 1 + it % 3};
    int g = test_randint(1, 3);
    c.groups = g;
    c.N = test_randint(1, 3);
    c.C = g * test_randint(1, 4);
    c.O = g * test_randint(1, 3);
    c.flip = test_randint(0, 1);
    for (int i = 0; i < c.nsp; i++) {
      c.in[i] = test_randint(1, c.nsp == 3 ? 7 : 12);
      c.k[i] = test_randint(1, 4);
      c.stride[i] = test_randint(1, 3);
      c.kd[i] = test_randint(1, 2);
      c.id[i] = test_randint(1, 2);
      c.lo[i] = test_randint(-1, 3);
      c.hi[i] = test_randint(-1, 3);
    }
    mlx_dtype t = it % 7 == 3 ? MLX_FLOAT16 : it % 7 == 5 ? MLX_BFLOAT16 : MLX_FLOAT32;
    /* an invalid combination is refused (and reported) by the CPU call */
    done += run_case(&c, t, it % 4,
                     WHAT("random %d: nsp %d N %d C %d O %d g %d flip %d %s", it, c.nsp, c.N,
                          c.C, c.O, c.groups, c.flip, tname(t)));
  }
  CHECK_MSG(done >= 100, "only %d random cases were valid", done);
}

/* Large enough for several im2col blocks (about 210 MB of col matrices
 * with two groups), the last block partial. */
static void test_blocks(void) {
  struct ccase c = base(2, 8, 64, 16, 64, 5);
  c.in[1] = 64;
  c.groups = 2;
  c.lo[0] = c.lo[1] = c.hi[0] = c.hi[1] = 2;
  CHECK(run_case(&c, MLX_FLOAT32, 0, "blocks of im2col rows"));
}

/* Empty batch, and no input channels per group is impossible (C >= groups);
 * an empty batch gives an empty result on the GPU too. */
static void test_empty(void) {
  int xs[] = {0, 7, 3}, ws[] = {4, 3, 3};
  mlx_array x = gpu_rand(xs, 3, MLX_FLOAT32, -1, 1), w = gpu_rand(ws, 3, MLX_FLOAT32, -1, 1);
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_conv1d(&r, x, w, 1, 0, 1, 1, gpu_stream));
  CHECK_OK(mlx_array_eval(r));
  CHECK(mlx_array_size(r) == 0 && mlx_array_ndim(r) == 3 && mlx_array_shape(r)[1] == 5);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(r);
}

/* The public wrappers (conv2d, conv_transpose2d with output padding). */
static void test_wrappers(void) {
  int xs[] = {2, 11, 10, 4}, ws[] = {6, 3, 3, 2}, wts[] = {6, 3, 3, 2};
  mlx_array x = gpu_rand(xs, 4, MLX_FLOAT32, -1, 1), w = gpu_rand(ws, 4, MLX_FLOAT32, -1, 1);
  mlx_array wt = gpu_rand(wts, 4, MLX_FLOAT32, -1, 1);
  mlx_array r[2] = {mlx_array_new(), mlx_array_new()}, q[2] = {mlx_array_new(), mlx_array_new()};
  for (int side = 0; side < 2; side++) {
    mlx_stream s = side ? test_stream() : gpu_stream;
    CHECK_OK(mlx_conv2d(&r[side], x, w, 2, 1, 1, 2, 1, 2, 2, s));
    CHECK_OK(mlx_array_eval(r[side]));
    mlx_array xin = mlx_array_new();
    int sl0[] = {0, 0, 0, 0}, sl1[] = {2, 11, 10, 2}, st[] = {1, 1, 1, 1};
    mlx_slice(&xin, x, sl0, 4, sl1, 4, st, 4, test_stream()); /* 2 channels: strided */
    /* stride (2,3), padding (1,0), dilation (1,2), output padding (1,0) */
    CHECK_OK(mlx_conv_transpose2d(&q[side], xin, wt, 2, 3, 1, 0, 1, 2, 1, 0, 1, s));
    CHECK_OK(mlx_array_eval(q[side]));
    mlx_array_free(xin);
  }
  /* before the comparisons, whose reads leave a host copy */
  CHECK(made_on_gpu(r[0]) && made_on_gpu(q[0]));
  CHECK_SAME(r[0], r[1], 1e-4, 1e-6 * 18,
             "conv2d stride (2,1) padding (1,2) dilation (1,2) groups 2");
  CHECK_SAME(q[0], q[1], 1e-4, 1e-6 * 18, "conv_transpose2d with output padding");
  for (int i = 0; i < 2; i++) mlx_array_free(r[i]), mlx_array_free(q[i]);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(wt);
}

/* ---- gradients ---- */

static struct ccase grad_case;

static int conv_loss(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), w = mlx_array_new(), y = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&w, in, 1);
  int rc = conv_on(&y, x, w, &grad_case, mlx_stream_new()) || mlx_vector_array_set_value(res, y);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(y);
  return rc;
}

/* d(input) and d(weight) of a strided, padded, dilated, grouped, flipped
 * convolution with a random cotangent, with the GPU as default device
 * (every node of the backward pass on the GPU) against the CPU. */
static void test_grad(void) {
  struct ccase cases[3];
  cases[0] = base(2, 2, 4, 6, 9, 3);
  cases[0].groups = 2, cases[0].flip = 1;
  for (int i = 0; i < 2; i++)
    cases[0].stride[i] = 2, cases[0].kd[i] = 1 + i, cases[0].lo[i] = 1, cases[0].hi[i] = 2 - i;
  cases[1] = base(1, 3, 3, 4, 13, 3);
  cases[1].id[0] = 2, cases[1].lo[0] = cases[1].hi[0] = 2, cases[1].stride[0] = 1;
  cases[2] = base(3, 1, 2, 3, 5, 2);
  cases[2].stride[0] = 2, cases[2].lo[1] = -1;
  mlx_device gpu = mlx_device_new_type(MLX_GPU, 0), cpu = mlx_device_new_type(MLX_CPU, 0);
  for (int k = 0; k < 3; k++) {
    grad_case = cases[k];
    const struct ccase *c = &grad_case;
    int nd = c->nsp + 2, xs[5], ws[5];
    xs[0] = c->N, ws[0] = c->O;
    for (int i = 0; i < c->nsp; i++) xs[i + 1] = c->in[i], ws[i + 1] = c->k[i];
    xs[nd - 1] = c->C, ws[nd - 1] = c->C / c->groups;
    mlx_array x = gpu_rand(xs, nd, MLX_FLOAT32, -1, 1), w = gpu_rand(ws, nd, MLX_FLOAT32, -1, 1);
    mlx_array y = mlx_array_new();
    CHECK_OK(conv_on(&y, x, w, c, test_stream()));
    CHECK_OK(mlx_array_eval(y));
    mlx_array ct = gpu_rand(mlx_array_shape(y), (int)mlx_array_ndim(y), MLX_FLOAT32, -1, 1);
    mlx_array prim[2] = {x, w};
    mlx_vector_array p = mlx_vector_array_new_data(prim, 2), cv = mlx_vector_array_new_value(ct);
    mlx_closure f = mlx_closure_new_func(conv_loss);
    mlx_vector_array o[2] = {mlx_vector_array_new(), mlx_vector_array_new()},
                     gr[2] = {mlx_vector_array_new(), mlx_vector_array_new()};
    for (int side = 0; side < 2; side++) {
      CHECK_OK(mlx_set_default_device(side ? cpu : gpu));
      CHECK_OK(mlx_vjp(&o[side], &gr[side], f, p, cv));
      CHECK_OK(mlx_set_default_device(cpu));
    }
    for (int j = 0; j < 2; j++) {
      mlx_array g = mlx_array_new(), h = mlx_array_new();
      mlx_vector_array_get(&g, gr[0], (size_t)j);
      mlx_vector_array_get(&h, gr[1], (size_t)j);
      CHECK_OK(mlx_array_eval(g));
      CHECK_OK(mlx_array_eval(h));
      CHECK_MSG(made_on_gpu(g), "grad case %d arg %d: not made on the GPU", k, j);
      /* terms per gradient element: output channels of a group times
       * kernel taps (input), output rows (weight) */
      int64_t ktaps = kdim(c) / (c->C / c->groups);
      int64_t K = j ? (int64_t)mlx_array_size(y) / c->O : (c->O / c->groups) * ktaps;
      CHECK_SAME(g, h, 1e-4, 1e-6 * (double)K, WHAT("grad case %d of argument %d", k, j));
      mlx_array_free(g);
      mlx_array_free(h);
    }
    for (int side = 0; side < 2; side++) {
      mlx_vector_array_free(o[side]);
      mlx_vector_array_free(gr[side]);
    }
    mlx_closure_free(f);
    mlx_vector_array_free(p);
    mlx_vector_array_free(cv);
    mlx_array_free(x);
    mlx_array_free(w);
    mlx_array_free(y);
    mlx_array_free(ct);
  }
  mlx_device_free(gpu);
  mlx_device_free(cpu);
}

/* The same small network evaluated repeatedly on new inputs (the second
 * evaluation is captured into a CUDA graph, later ones replay it): every
 * result equals the CPU's, and the GPU side did replay. The intermediates
 * are freed before the evaluation, so that only their consumers hold them
 * (private nodes keep the capture's blocks: the cuBLAS kernels, which are
 * guarded rather than relocated, see unmoved buffers). */
static void test_repeated(void) {
  struct lc_gpu_graph_stats g0, g1;
  lc_gpu_graph_stats(&g0);
  struct ccase c = base(2, 2, 4, 6, 10, 3);
  c.groups = 2;
  c.lo[0] = c.lo[1] = c.hi[0] = c.hi[1] = 1;
  int xs[] = {2, 10, 11, 4}, ws[] = {6, 3, 3, 2};
  mlx_array w = gpu_rand(ws, 4, MLX_FLOAT32, -1, 1), two = mlx_array_new_float(2.0f);
  for (int it = 0; it < 5; it++) {
    mlx_array x = gpu_rand(xs, 4, MLX_FLOAT32, -1, 1);
    mlx_array r[2];
    for (int side = 0; side < 2; side++) {
      mlx_stream s = side ? test_stream() : gpu_stream;
      mlx_array a = mlx_array_new(), b = mlx_array_new(), y = mlx_array_new();
      r[side] = mlx_array_new();
      CHECK_OK(mlx_multiply(&a, x, two, s));
      CHECK_OK(conv_on(&b, a, w, &c, s));
      CHECK_OK(mlx_tanh(&y, b, s));
      CHECK_OK(mlx_add(&r[side], y, b, s));
      mlx_array_free(a);
      mlx_array_free(b);
      mlx_array_free(y);
      CHECK_OK(mlx_array_eval(r[side]));
    }
    CHECK_SAME(r[0], r[1], 1e-4, 4e-5, WHAT("repeated evaluation %d", it));
    mlx_array_free(r[0]);
    mlx_array_free(r[1]);
    mlx_array_free(x);
  }
  mlx_array_free(w);
  mlx_array_free(two);
  lc_gpu_graph_stats(&g1);
  /* evaluation 0 warms, 1 is captured, 2..4 replay */
  CHECK_MSG(!lc_gpu_graphs_on() || g1.replayed - g0.replayed >= 3,
            "repeated conv: %lu graph replays of 3 (%lu captured, %lu mismatched, %lu refused)",
            g1.replayed - g0.replayed, g1.captured - g0.captured, g1.mismatched - g0.mismatched,
            g1.refused - g0.refused);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(7);
  size_t base_mem = 0, after = 0;
  mlx_get_active_memory(&base_mem);
  test_named();
  test_random();
  test_blocks();
  test_empty();
  test_wrappers();
  test_grad();
  test_repeated();
  mlx_clear_cache();
  mlx_get_active_memory(&after);
  CHECK_MSG(after <= base_mem, "active memory %zu after, %zu before", after, base_mem);
  return test_done();
}
