/* Views that copy where they cannot share (reshape of a strided array,
 * the bitcast view of a strided or misaligned one) stay on the GPU: their
 * results are made there (no host copy appears, of them or of their
 * inputs), they share exactly where the CPU shares, their bytes equal the
 * CPU's, and a loop of them runs as CUDA graph replays (a host copy would
 * make the capture refused). Skips without a GPU. */
#include "gpu/graphs.h"
#include "gpu_bits.h"

static const mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_INT8, MLX_FLOAT64, MLX_UINT16};

/* Whether a's and b's data live in one buffer. */
static bool same_buffer(mlx_array a, mlx_array b) {
  const struct lc_node *x = a.ctx, *y = b.ctx;
  return x && y && x->buf && x->buf == y->buf;
}

/* (2, 6, 5, 4) of dtype t on the GPU, and its (0, 2, 1, 3) transpose. */
static void strided_pair(mlx_dtype t, mlx_array *x, mlx_array *xt) {
  int shape[] = {2, 6, 5, 4}, ax[] = {0, 2, 1, 3};
  mlx_array h = gpu_rand(shape, 4, t, -50, 50);
  *x = on_gpu(h);
  *xt = mlx_array_new();
  CHECK_OK(mlx_transpose_axes(xt, *x, ax, 4, gpu_stream));
  CHECK_OK(mlx_array_eval(*xt));
  mlx_array_free(h);
}

static void reshapes(void) {
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    char what[96];
    mlx_array x, xt;
    strided_pair(types[k], &x, &xt);
    /* merges the transposed axes: a copy; splits the last: a view */
    mlx_array g = mlx_array_new(), c = mlx_array_new(), v = mlx_array_new(),
              cv = mlx_array_new();
    CHECK_OK(mlx_reshape(&g, xt, (int[]){2, 30, 4}, 3, gpu_stream));
    CHECK_OK(mlx_reshape(&c, xt, (int[]){2, 30, 4}, 3, mlx_default_cpu_stream_new()));
    CHECK_OK(mlx_reshape(&v, xt, (int[]){2, 5, 6, 2, 2}, 5, gpu_stream));
    CHECK_OK(mlx_reshape(&cv, xt, (int[]){2, 5, 6, 2, 2}, 5, mlx_default_cpu_stream_new()));
    CHECK_OK(mlx_array_eval(g));
    CHECK_OK(mlx_array_eval(v));
    snprintf(what, sizeof what, "reshape copying (dtype %d)", (int)types[k]);
    CHECK_MSG(made_on_gpu(g) && made_on_gpu(x), "%s: went through the host", what);
    CHECK_MSG(!same_buffer(g, x), "%s: should not share its input", what);
    CHECK_MSG(same_buffer(v, x), "reshape splitting an axis (dtype %d) should share",
              (int)types[k]);
    CHECK_OK(mlx_array_eval(c));
    CHECK_OK(mlx_array_eval(cv));
    GPU_SAME_BITS(g, c, false, what);
    GPU_SAME_BITS(v, cv, false, "reshape sharing");
    mlx_array_free(g), mlx_array_free(c), mlx_array_free(v), mlx_array_free(cv);
    mlx_array_free(x), mlx_array_free(xt);
  }
}

/* bitcasts to a same-size, smaller and larger type, from contiguous,
 * strided and offset (sliced) inputs; the last form's offset (2 items)
 * is misaligned for the larger types, so those copy */
static void bitcasts(void) {
  const mlx_dtype to[] = {MLX_UINT8, MLX_UINT16, MLX_INT32, MLX_UINT64};
  for (size_t k = 0; k < sizeof types / sizeof *types; k++)
    for (size_t j = 0; j < sizeof to / sizeof *to; j++)
      for (int form = 0; form < 4; form++) {
        mlx_array x, xt, src = mlx_array_new();
        strided_pair(types[k], &x, &xt);
        if (form == 0) CHECK_OK(mlx_array_set(&src, x));
        if (form == 1) CHECK_OK(mlx_array_set(&src, xt));
        if (form == 2) { /* drops the first row: offset 4 * 5 items, contiguous */
          int start[] = {0, 1, 0, 0}, stop[] = {1, 6, 5, 4}, step[] = {1, 1, 1, 1};
          CHECK_OK(mlx_slice(&src, x, start, 4, stop, 4, step, 4, gpu_stream));
          CHECK_OK(mlx_array_eval(src));
        }
        if (form == 3) { /* flat, items 2 .. 226 */
          mlx_array flat = mlx_array_new();
          CHECK_OK(mlx_flatten(&flat, x, 0, -1, gpu_stream));
          CHECK_OK(mlx_slice(&src, flat, (int[]){2}, 1, (int[]){226}, 1, (int[]){1}, 1,
                             gpu_stream));
          CHECK_OK(mlx_array_eval(src));
          mlx_array_free(flat);
        }
        int last = mlx_array_shape(src)[mlx_array_ndim(src) - 1];
        size_t isz = mlx_array_itemsize(src), osz = mlx_dtype_size(to[j]);
        mlx_array g = mlx_array_new(), c = mlx_array_new();
        int rc = mlx_view(&g, src, to[j], gpu_stream);
        if (((size_t)last * isz) % osz != 0) { /* the last axis's bytes must divide */
          CHECK(rc != 0);
        } else {
          char what[96];
          snprintf(what, sizeof what, "view %d -> %d (form %d)", (int)types[k], (int)to[j],
                   form);
          CHECK_OK(rc);
          CHECK_OK(mlx_array_eval(g));
          const struct lc_node *sn = src.ctx;
          int64_t off_bytes = sn->offset * (int64_t)isz;
          /* a view to the same type is the input itself, strided or not */
          bool shares = (form != 1 && off_bytes % (int64_t)osz == 0) || types[k] == to[j];
          CHECK_MSG(made_on_gpu(g) && made_on_gpu(x), "%s: went through the host", what);
          CHECK_MSG(same_buffer(g, x) == shares, "%s: shares %d, expected %d", what,
                    (int)same_buffer(g, x), (int)shares);
          CHECK_OK(mlx_view(&c, src, to[j], mlx_default_cpu_stream_new()));
          CHECK_OK(mlx_array_eval(c));
          GPU_SAME_BITS(g, c, false, what);
        }
        mlx_array_free(g), mlx_array_free(c), mlx_array_free(src);
        mlx_array_free(x), mlx_array_free(xt);
      }
}

/* [x (8, 16, 32)] -> [reshape(transpose(x) * 2, (16, 256)) viewed as
 * uint32, + 1]: every step copies on the GPU */
static int step(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_stream s = gpu_stream;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), m = mlx_array_new(),
            r = mlx_array_new(), tr = mlx_array_new(), v = mlx_array_new(),
            one = mlx_array_new_int(1), o = mlx_array_new(), two = mlx_array_new_float(2.0f);
  int ax[] = {1, 0, 2};
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_transpose_axes(&t, x, ax, 3, s) ||
           mlx_multiply(&m, t, two, s) || mlx_transpose_axes(&tr, m, ax, 3, s) ||
           mlx_reshape(&r, tr, (int[]){8, 512}, 2, s) || mlx_view(&v, r, MLX_INT32, s) ||
           mlx_add(&o, v, one, s);
  if (!rc) {
    mlx_vector_array out = mlx_vector_array_new_data(&o, 1);
    rc = mlx_vector_array_set(res, out);
    mlx_vector_array_free(out);
  }
  mlx_array_free(x), mlx_array_free(t), mlx_array_free(m), mlx_array_free(r);
  mlx_array_free(tr), mlx_array_free(v), mlx_array_free(one), mlx_array_free(o);
  mlx_array_free(two);
  return rc;
}

static void graph_loop(void) {
  mlx_closure f = mlx_closure_new_func_payload(step, NULL, NULL);
  mlx_array h = gpu_rand((int[]){8, 16, 32}, 3, MLX_FLOAT32, -3, 3), x = on_gpu(h), want;
  mlx_vector_array in = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  struct lc_gpu_graph_stats a, b;
  lc_gpu_graph_stats(&a);
  mlx_array first = mlx_array_new();
  for (int i = 0; i < 6; i++) {
    CHECK_OK(mlx_closure_apply(&out, f, in));
    mlx_array o = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&o, out, 0));
    CHECK_OK(mlx_array_eval(o));
    CHECK_MSG(made_on_gpu(o), "step %d: the result went through the host", i);
    if (i == 0)
      CHECK_OK(mlx_array_set(&first, o));
    else
      GPU_SAME_BITS(o, first, false, "graph replay");
    mlx_array_free(o);
  }
  lc_gpu_graph_stats(&b);
  CHECK_MSG(b.refused == a.refused, "a capture was refused (%lu)", b.refused - a.refused);
  CHECK_MSG(b.replayed - a.replayed >= 3, "only %lu of 6 steps were graph replays",
            b.replayed - a.replayed);
  /* the CPU's answer: the same ops on the host copy */
  mlx_array xc = mlx_array_new(), tc = mlx_array_new(), rc = mlx_array_new();
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_array two = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_multiply(&xc, h, two, cpu));
  mlx_array_free(two);
  want = mlx_array_new();
  CHECK_OK(mlx_reshape(&rc, xc, (int[]){8, 512}, 2, cpu));
  CHECK_OK(mlx_view(&tc, rc, MLX_INT32, cpu));
  mlx_array one = mlx_array_new_int(1);
  CHECK_OK(mlx_add(&want, tc, one, cpu));
  CHECK_OK(mlx_array_eval(want));
  GPU_SAME_BITS(first, want, false, "graph loop vs CPU");
  mlx_array_free(one), mlx_array_free(xc), mlx_array_free(tc), mlx_array_free(rc);
  mlx_array_free(want), mlx_array_free(first), mlx_array_free(h), mlx_array_free(x);
  mlx_vector_array_free(in), mlx_vector_array_free(out);
  mlx_closure_free(f);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  size_t base = test_active_memory();
  reshapes();
  bitcasts();
  graph_loop();
  mlx_clear_cache();
  size_t now = test_active_memory();
  CHECK_MSG(now == base, "active memory %zu, was %zu", now, base);
  return test_done();
}
