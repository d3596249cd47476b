/* Shapeless compile retraces only when it must. For every op MLX compiles
 * shapelessly (its primitive has output_shapes; checked against MLX 0.32.4
 * with the same functions and shapes), a compiled closure is called on 2-3
 * input shapes of one rank: it must trace once and give the uncompiled
 * op's shapes and values. For the ops MLX does not (it throws, or silently
 * replays a graph whose shapes were baked in and returns wrong shapes or
 * values), lace traces again for each new shape and is correct: the number
 * of traces is pinned so a change of behaviour shows. MLX's own shapeless
 * cases (python/tests/test_compile.py test_shapeless_compile*) are ported
 * at the end. */
#include "test.h"

static mlx_stream S(void) { return test_stream(); }

struct sl_in {
  int ndim, shape[4];
  int idx_hi; /* > 0: int32 indices in [0, idx_hi) instead of floats */
};
/* One case: fn(out, in) builds the op; shapes[k] are the inputs of call k. */
struct sl_case {
  const char *name;
  int (*fn)(mlx_array *out, const mlx_array *in);
  int nin, ncalls;
  struct sl_in in[3][3];
  int traces; /* expected: 1 where MLX is shapeless */
};

#define ONE(fn_expr)                                                  \
  {                                                                   \
    (void)in;                                                         \
    return fn_expr;                                                   \
  }

static mlx_array vec2(mlx_array a, mlx_array b) { (void)a, (void)b; return a; }

/* ---- the ops ---- */
static int f_sum0(mlx_array *o, const mlx_array *in) ONE(mlx_sum_axis(o, in[0], 0, false, S()))
static int f_mean1k(mlx_array *o, const mlx_array *in) ONE(mlx_mean_axis(o, in[0], 1, true, S()))
static int f_mean(mlx_array *o, const mlx_array *in) ONE(mlx_mean(o, in[0], false, S()))
static int f_var0(mlx_array *o, const mlx_array *in) ONE(mlx_var_axis(o, in[0], 0, false, 0, S()))
static int f_std(mlx_array *o, const mlx_array *in) ONE(mlx_std(o, in[0], false, 1, S()))
static int f_max0k(mlx_array *o, const mlx_array *in) ONE(mlx_max_axis(o, in[0], 0, true, S()))
static int f_argmax1(mlx_array *o, const mlx_array *in)
    ONE(mlx_argmax_axis(o, in[0], 1, false, S()))
static int f_argmin(mlx_array *o, const mlx_array *in) ONE(mlx_argmin(o, in[0], false, S()))
static int f_softmax(mlx_array *o, const mlx_array *in)
    ONE(mlx_softmax_axis(o, in[0], -1, false, S()))
static int f_softmax0(mlx_array *o, const mlx_array *in)
    ONE(mlx_softmax_axis(o, in[0], 0, true, S()))
static int f_lse1(mlx_array *o, const mlx_array *in)
    ONE(mlx_logsumexp_axis(o, in[0], 1, false, S()))
static int f_lse0(mlx_array *o, const mlx_array *in) ONE(mlx_logsumexp_axis(o, in[0], 0, true, S()))
static int f_cumsum(mlx_array *o, const mlx_array *in)
    ONE(mlx_cumsum(o, in[0], 1, false, true, S()))
static int f_cummax(mlx_array *o, const mlx_array *in)
    ONE(mlx_cummax(o, in[0], 0, true, false, S()))
static int f_lcse(mlx_array *o, const mlx_array *in)
    ONE(mlx_logcumsumexp(o, in[0], 1, false, true, S()))
static int f_sort(mlx_array *o, const mlx_array *in) ONE(mlx_sort_axis(o, in[0], -1, S()))
static int f_argsort0(mlx_array *o, const mlx_array *in) ONE(mlx_argsort_axis(o, in[0], 0, S()))
static int f_partition(mlx_array *o, const mlx_array *in)
    ONE(mlx_partition_axis(o, in[0], 1, -1, S()))
static int f_argpart(mlx_array *o, const mlx_array *in)
    ONE(mlx_argpartition_axis(o, in[0], 1, -1, S()))
static int f_any1(mlx_array *o, const mlx_array *in) {
  mlx_array z = mlx_array_new_float(0.0f), g = mlx_array_new();
  int rc = mlx_greater(&g, in[0], z, S());
  if (!rc) rc = mlx_any_axis(o, g, 1, false, S());
  mlx_array_free(z);
  mlx_array_free(g);
  return rc;
}
static int f_concat(mlx_array *o, const mlx_array *in) {
  mlx_vector_array v = mlx_vector_array_new_data(in, 2);
  int rc = mlx_concatenate_axis(o, v, 0, S());
  mlx_vector_array_free(v);
  return rc;
}
static int f_stack(mlx_array *o, const mlx_array *in) {
  mlx_vector_array v = mlx_vector_array_new_data(in, 2);
  int rc = mlx_stack_axis(o, v, 1, S());
  mlx_vector_array_free(v);
  return rc;
}
static int f_expand(mlx_array *o, const mlx_array *in) ONE(mlx_expand_dims(o, in[0], 1, S()))
static int f_squeeze(mlx_array *o, const mlx_array *in) ONE(mlx_squeeze_axis(o, in[0], 1, S()))
static int f_flatten(mlx_array *o, const mlx_array *in) ONE(mlx_flatten(o, in[0], 0, -1, S()))
static int f_flatten01(mlx_array *o, const mlx_array *in) ONE(mlx_flatten(o, in[0], 0, 1, S()))
static int f_reshape_m1(mlx_array *o, const mlx_array *in) {
  int sh = -1;
  return mlx_reshape(o, in[0], &sh, 1, S());
}
static int f_reshape_2m1(mlx_array *o, const mlx_array *in) {
  int sh[2] = {2, -1};
  return mlx_reshape(o, in[0], sh, 2, S());
}
static int f_transpose(mlx_array *o, const mlx_array *in) ONE(mlx_transpose(o, in[0], S()))
static int f_swapaxes(mlx_array *o, const mlx_array *in) ONE(mlx_swapaxes(o, in[0], 0, 2, S()))
static int f_moveaxis(mlx_array *o, const mlx_array *in) ONE(mlx_moveaxis(o, in[0], 0, -1, S()))
static int f_matmul(mlx_array *o, const mlx_array *in) ONE(mlx_matmul(o, in[0], in[1], S()))
static int f_addmm(mlx_array *o, const mlx_array *in)
    ONE(mlx_addmm(o, in[0], in[1], in[2], 2.0f, 0.5f, S()))
static int f_inner(mlx_array *o, const mlx_array *in) ONE(mlx_inner(o, in[0], in[1], S()))
static int f_tensordot(mlx_array *o, const mlx_array *in)
    ONE(mlx_tensordot_axis(o, in[0], in[1], 1, S()))
static int f_einsum(mlx_array *o, const mlx_array *in) {
  mlx_vector_array v = mlx_vector_array_new_data(in, 2);
  int rc = mlx_einsum(o, "ij,jk->ik", v, S());
  mlx_vector_array_free(v);
  return rc;
}
static int f_take_along(mlx_array *o, const mlx_array *in)
    ONE(mlx_take_along_axis(o, in[0], in[1], 1, S()))
static int f_take_flat(mlx_array *o, const mlx_array *in) ONE(mlx_take(o, in[0], in[1], S()))
static int f_put_along(mlx_array *o, const mlx_array *in) {
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_put_along_axis(o, in[0], in[1], one, 1, S());
  mlx_array_free(one);
  return rc;
}
static int f_put_along_full(mlx_array *o, const mlx_array *in)
    ONE(mlx_put_along_axis(o, in[0], in[1], in[2], 1, S()))
static int f_conv1d(mlx_array *o, const mlx_array *in)
    ONE(mlx_conv1d(o, in[0], in[1], 1, 0, 1, 1, S()))
static int f_conv2d(mlx_array *o, const mlx_array *in)
    ONE(mlx_conv2d(o, in[0], in[1], 1, 1, 1, 1, 1, 1, 1, S()))
static int f_rms(mlx_array *o, const mlx_array *in)
    ONE(mlx_fast_rms_norm(o, in[0], in[1], 1e-5f, S()))
static int f_layer(mlx_array *o, const mlx_array *in)
    ONE(mlx_fast_layer_norm(o, in[0], in[1], in[2], 1e-5f, S()))
static int f_sdpa(mlx_array *o, const mlx_array *in) {
  mlx_array none = mlx_array_new();
  int rc = mlx_fast_scaled_dot_product_attention(o, in[0], in[1], in[2], 0.5f, "", none, none, S());
  mlx_array_free(none);
  return rc;
}
static int f_zeros_like(mlx_array *o, const mlx_array *in) ONE(mlx_zeros_like(o, in[0], S()))
static int f_ones_like(mlx_array *o, const mlx_array *in) ONE(mlx_ones_like(o, in[0], S()))
static int f_full_like(mlx_array *o, const mlx_array *in) {
  mlx_array v = mlx_array_new_float(2.5f);
  int rc = mlx_full_like(o, in[0], v, MLX_INT32, S());
  mlx_array_free(v);
  return rc;
}
/* the result has the broadcast of both shapes */
static int f_full_like_arr(mlx_array *o, const mlx_array *in)
    ONE(mlx_full_like(o, in[0], in[1], MLX_FLOAT32, S()))
static int f_zeros_like_sum(mlx_array *o, const mlx_array *in) {
  mlx_array t = mlx_array_new();
  int rc = mlx_sum_axis(&t, in[0], 0, false, S());
  if (!rc) rc = mlx_zeros_like(o, t, S());
  mlx_array_free(t);
  return rc;
}
/* ones_like(x) + y: the sum has x's shape where y broadcasts to it */
static int f_ones_like_add(mlx_array *o, const mlx_array *in) {
  mlx_array t = mlx_array_new();
  int rc = mlx_ones_like(&t, in[0], S());
  if (!rc) rc = mlx_add(o, t, in[1], S());
  mlx_array_free(t);
  return rc;
}
static int f_astype(mlx_array *o, const mlx_array *in) ONE(mlx_astype(o, in[0], MLX_INT32, S()))
static int f_where(mlx_array *o, const mlx_array *in) {
  mlx_array z = mlx_array_new_float(0.0f), g = mlx_array_new();
  int rc = mlx_greater(&g, in[0], z, S());
  if (!rc) rc = mlx_where(o, g, in[0], z, S());
  mlx_array_free(z);
  mlx_array_free(g);
  return rc;
}
static int f_clip(mlx_array *o, const mlx_array *in) {
  mlx_array lo = mlx_array_new_float(-0.5f), hi = mlx_array_new_float(0.5f);
  int rc = mlx_clip(o, in[0], lo, hi, S());
  mlx_array_free(lo);
  mlx_array_free(hi);
  return rc;
}
static int f_divmod(mlx_array *o, const mlx_array *in) {
  mlx_array d = mlx_array_new_float(0.7f);
  mlx_vector_array qr = mlx_vector_array_new();
  int rc = mlx_divmod(&qr, in[0], d, S());
  mlx_array q = mlx_array_new(), r = mlx_array_new();
  if (!rc) rc = mlx_vector_array_get(&q, qr, 0);
  if (!rc) rc = mlx_vector_array_get(&r, qr, 1);
  if (!rc) rc = mlx_add(o, q, r, S());
  mlx_array_free(q);
  mlx_array_free(r);
  mlx_array_free(d);
  mlx_vector_array_free(qr);
  return rc;
}
/* only the remainder (the quotient's getter is dropped), of broadcast operands */
static int f_divmod_r(mlx_array *o, const mlx_array *in) {
  mlx_vector_array qr = mlx_vector_array_new();
  int rc = mlx_divmod(&qr, in[0], in[1], S());
  if (!rc) rc = mlx_vector_array_get(o, qr, 1);
  mlx_vector_array_free(qr);
  return rc;
}
static int f_qr_r(mlx_array *o, const mlx_array *in) {
  mlx_array q = mlx_array_new();
  int rc = mlx_linalg_qr(&q, o, in[0], S());
  mlx_array_free(q);
  return rc;
}
static int f_svd_s(mlx_array *o, const mlx_array *in) {
  mlx_vector_array usv = mlx_vector_array_new();
  int rc = mlx_linalg_svd(&usv, in[0], true, S());
  if (!rc) rc = mlx_vector_array_get(o, usv, 1);
  mlx_vector_array_free(usv);
  return rc;
}
/* eigenvalues of x + x^T (symmetric) */
static int f_eigh_w(mlx_array *o, const mlx_array *in) {
  mlx_array t = mlx_array_new(), sym = mlx_array_new(), v = mlx_array_new();
  int rc = mlx_swapaxes(&t, in[0], -1, -2, S());
  if (!rc) rc = mlx_add(&sym, in[0], t, S());
  if (!rc) rc = mlx_linalg_eigh(o, &v, sym, "L", S());
  mlx_array_free(t);
  mlx_array_free(sym);
  mlx_array_free(v);
  return rc;
}
static int f_lu_factor(mlx_array *o, const mlx_array *in) {
  mlx_array piv = mlx_array_new();
  int rc = mlx_linalg_lu_factor(o, &piv, in[0], S());
  mlx_array_free(piv);
  return rc;
}
static int f_arange_like(mlx_array *o, const mlx_array *in) {
  mlx_array r = mlx_array_new();
  int rc = mlx_arange(&r, 0, 4, 1, MLX_FLOAT32, S());
  if (!rc) rc = mlx_add(o, in[0], r, S());
  mlx_array_free(r);
  return rc;
}
static int f_broadcast_rows(mlx_array *o, const mlx_array *in) {
  /* x * y.sum(-1, keepdims) + x.max(0) : broadcasting between reductions */
  mlx_array s = mlx_array_new(), m = mlx_array_new(), t = mlx_array_new();
  int rc = mlx_sum_axis(&s, in[1], -1, true, S());
  if (!rc) rc = mlx_max_axis(&m, in[0], 0, false, S());
  if (!rc) rc = mlx_multiply(&t, in[0], s, S());
  if (!rc) rc = mlx_add(o, t, m, S());
  mlx_array_free(s);
  mlx_array_free(m);
  mlx_array_free(t);
  return rc;
}
/* ops MLX does not compile shapelessly */
static int f_topk(mlx_array *o, const mlx_array *in) ONE(mlx_topk_axis(o, in[0], 2, -1, S()))
static int f_slice(mlx_array *o, const mlx_array *in) {
  int start[2] = {1, 0}, stop[2] = {INT32_MAX, INT32_MAX}, step[2] = {1, 1};
  return mlx_slice(o, in[0], start, 2, stop, 2, step, 2, S());
}
static int f_take_axis(mlx_array *o, const mlx_array *in)
    ONE(mlx_take_axis(o, in[0], in[1], 0, S()))
static int f_unflatten(mlx_array *o, const mlx_array *in) {
  int sh[2] = {2, -1};
  return mlx_unflatten(o, in[0], 1, sh, 2, S());
}
static int f_slice_update(mlx_array *o, const mlx_array *in) {
  int start[2] = {0, 0}, stop[2] = {1, INT32_MAX}, step[2] = {1, 1};
  mlx_array one = mlx_array_new_float(1.0f), row = mlx_array_new(), upd = mlx_array_new();
  int rc = mlx_slice(&row, in[0], start, 2, stop, 2, step, 2, S());
  if (!rc) rc = mlx_add(&upd, row, one, S());
  if (!rc) rc = mlx_slice_update(o, in[0], upd, start, 2, stop, 2, step, 2, S());
  mlx_array_free(one);
  mlx_array_free(row);
  mlx_array_free(upd);
  return rc;
}
static int f_diagonal(mlx_array *o, const mlx_array *in) ONE(mlx_diagonal(o, in[0], 0, 0, 1, S()))
static int f_tril(mlx_array *o, const mlx_array *in) ONE(mlx_tril(o, in[0], 0, S()))
static int f_hadamard(mlx_array *o, const mlx_array *in) {
  mlx_optional_float none = {0, false};
  return mlx_hadamard_transform(o, in[0], none, S());
}
static int f_pad(mlx_array *o, const mlx_array *in) {
  int axes[2] = {0, 1}, lo[2] = {1, 1}, hi[2] = {1, 1};
  mlx_array z = mlx_array_new_float(0.0f);
  int rc = mlx_pad(o, in[0], axes, 2, lo, 2, hi, 2, z, "constant", S());
  mlx_array_free(z);
  return rc;
}
static int f_outer(mlx_array *o, const mlx_array *in) ONE(mlx_outer(o, in[0], in[1], S()))
static int f_tile(mlx_array *o, const mlx_array *in) {
  int reps[2] = {2, 1};
  return mlx_tile(o, in[0], reps, 2, S());
}
static int f_repeat(mlx_array *o, const mlx_array *in) ONE(mlx_repeat_axis(o, in[0], 2, 0, S()))
static int f_median(mlx_array *o, const mlx_array *in) {
  int ax = 0;
  return mlx_median(o, in[0], &ax, 1, false, S());
}
static int f_rope(mlx_array *o, const mlx_array *in) {
  mlx_optional_float base = {10000.0f, true};
  mlx_array none = mlx_array_new();
  int rc = mlx_fast_rope(o, in[0], 4, false, base, 1.0f, 0, none, S());
  mlx_array_free(none);
  return rc;
}
static int f_scatter_add(mlx_array *o, const mlx_array *in) {
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_scatter_add_axis(o, in[0], in[1], one, 0, S());
  mlx_array_free(one);
  return rc;
}
static int f_gather_mm(mlx_array *o, const mlx_array *in) {
  mlx_array none = mlx_array_new();
  int rc = mlx_gather_mm(o, in[0], in[1], none, in[2], false, S());
  mlx_array_free(none);
  return rc;
}
static int f_broadcast_to(mlx_array *o, const mlx_array *in) {
  int sh[2] = {3, 4};
  return mlx_broadcast_to(o, in[0], sh, 2, S());
}

#define F2(a, b) {2, {a, b}, 0}
#define F3(a, b, c) {3, {a, b, c}, 0}
#define F4(a, b, c, d) {4, {a, b, c, d}, 0}
#define F1(a) {1, {a}, 0}
#define IX(n, hi) {1, {n}, hi}
#define IX2(a, b, hi) {2, {a, b}, hi}
#define U1(name, fn, s0, s1) {name, fn, 1, 2, {{s0}, {s1}}, 1}
#define U1X(name, fn, s0, s1, tr) {name, fn, 1, 2, {{s0}, {s1}}, tr}

static const struct sl_case cases[] = {
    /* MLX: shapeless (one trace) */
    {"sum_axis0", f_sum0, 1, 3, {{F2(3, 4)}, {F2(5, 2)}, {F2(1, 7)}}, 1},
    {"mean_axis1_keepdims", f_mean1k, 1, 3, {{F2(3, 4)}, {F2(5, 2)}, {F2(2, 9)}}, 1},
    {"mean_all", f_mean, 1, 3, {{F2(3, 4)}, {F2(5, 2)}, {F2(2, 9)}}, 1},
    U1("var_axis0", f_var0, F2(3, 4), F2(5, 2)),
    U1("std_all_ddof1", f_std, F2(3, 4), F2(5, 2)),
    U1("max_axis0_keepdims", f_max0k, F2(3, 4), F2(5, 2)),
    U1("any_axis1", f_any1, F2(3, 4), F2(5, 2)),
    U1("argmax_axis1", f_argmax1, F2(3, 4), F2(5, 2)),
    U1("argmin_all", f_argmin, F2(3, 4), F2(5, 2)),
    U1("softmax_last", f_softmax, F2(3, 4), F2(5, 2)),
    U1("softmax_axis0_precise", f_softmax0, F2(3, 4), F2(5, 2)),
    U1("logsumexp_axis1", f_lse1, F2(3, 4), F2(5, 2)),
    U1("logsumexp_axis0_keepdims", f_lse0, F2(3, 4), F2(5, 2)),
    U1("cumsum", f_cumsum, F2(3, 4), F2(5, 2)),
    U1("cummax_reverse", f_cummax, F2(3, 4), F2(5, 2)),
    U1("logcumsumexp", f_lcse, F2(3, 4), F2(5, 2)),
    U1("sort_last", f_sort, F2(3, 4), F2(5, 2)),
    U1("argsort_axis0", f_argsort0, F2(3, 4), F2(5, 2)),
    U1("partition", f_partition, F2(3, 4), F2(5, 3)),
    U1("argpartition", f_argpart, F2(3, 4), F2(5, 3)),
    {"concatenate", f_concat, 2, 2, {{F2(3, 4), F2(2, 4)}, {F2(5, 2), F2(1, 2)}}, 1},
    {"stack", f_stack, 2, 2, {{F2(3, 4), F2(3, 4)}, {F2(5, 2), F2(5, 2)}}, 1},
    U1("expand_dims", f_expand, F2(3, 4), F2(5, 2)),
    U1("squeeze", f_squeeze, F3(3, 1, 4), F3(5, 1, 2)),
    U1("flatten", f_flatten, F2(3, 4), F2(5, 2)),
    U1("flatten01", f_flatten01, F3(3, 4, 2), F3(5, 2, 3)),
    U1("reshape_m1", f_reshape_m1, F2(3, 4), F2(5, 2)),
    U1("reshape_2_m1", f_reshape_2m1, F2(3, 4), F2(5, 2)),
    U1("transpose", f_transpose, F2(3, 4), F2(5, 2)),
    U1("swapaxes", f_swapaxes, F3(3, 4, 2), F3(5, 2, 3)),
    U1("moveaxis", f_moveaxis, F3(3, 4, 2), F3(5, 2, 3)),
    {"matmul", f_matmul, 2, 2, {{F2(3, 4), F2(4, 5)}, {F2(2, 6), F2(6, 3)}}, 1},
    {"addmm", f_addmm, 3, 2, {{F2(3, 5), F2(3, 4), F2(4, 5)}, {F2(2, 3), F2(2, 6), F2(6, 3)}}, 1},
    {"inner", f_inner, 2, 2, {{F2(3, 4), F2(2, 4)}, {F2(5, 2), F2(3, 2)}}, 1},
    {"tensordot", f_tensordot, 2, 2, {{F2(3, 4), F2(4, 2)}, {F2(5, 2), F2(2, 3)}}, 1},
    {"einsum", f_einsum, 2, 2, {{F2(3, 4), F2(4, 2)}, {F2(5, 2), F2(2, 3)}}, 1},
    {"take_along_axis", f_take_along, 2, 2, {{F2(3, 4), IX2(3, 2, 4)}, {F2(5, 6), IX2(5, 3, 6)}}, 1},
    {"take_flat", f_take_flat, 2, 2, {{F2(5, 4), IX(3, 20)}, {F2(7, 2), IX(6, 14)}}, 1},
    /* a scalar value is broadcast to the indices' shape: scatter_axis's
     * input_shape gives the broadcast's new shape */
    {"put_along_axis_scalar", f_put_along, 2, 2,
     {{F2(3, 4), IX2(3, 2, 4)}, {F2(5, 6), IX2(5, 3, 6)}}, 1},
    {"put_along_axis", f_put_along_full, 3, 2,
     {{F2(3, 4), IX2(3, 2, 4), F2(3, 2)}, {F2(5, 6), IX2(5, 3, 6), F2(5, 3)}}, 1},
    {"conv1d", f_conv1d, 2, 2, {{F3(1, 8, 3), F3(4, 3, 3)}, {F3(2, 10, 3), F3(4, 3, 3)}}, 1},
    {"conv2d", f_conv2d, 2, 2,
     {{F4(1, 6, 6, 2), F4(3, 3, 3, 2)}, {F4(2, 5, 7, 2), F4(3, 3, 3, 2)}}, 1},
    {"rms_norm", f_rms, 2, 2, {{F2(3, 4), F1(4)}, {F2(5, 6), F1(6)}}, 1},
    {"layer_norm", f_layer, 3, 2, {{F2(3, 4), F1(4), F1(4)}, {F2(5, 6), F1(6), F1(6)}}, 1},
    {"sdpa", f_sdpa, 3, 2,
     {{F4(1, 2, 3, 4), F4(1, 2, 5, 4), F4(1, 2, 5, 4)},
      {F4(2, 2, 4, 4), F4(2, 2, 6, 4), F4(2, 2, 6, 4)}}, 1},
    /* a broadcast constant as the output follows the array it is like (as
     * MLX's Full follows its input) */
    U1("zeros_like", f_zeros_like, F2(3, 4), F2(5, 2)),
    U1("ones_like", f_ones_like, F2(3, 4), F2(5, 2)),
    U1("full_like", f_full_like, F2(3, 4), F2(5, 2)),
    {"full_like_array", f_full_like_arr, 2, 3,
     {{F2(3, 4), F2(3, 1)}, {F2(5, 2), F2(5, 1)}, {F2(1, 2), F2(4, 2)}}, 1},
    U1("zeros_like_of_sum", f_zeros_like_sum, F2(3, 4), F2(5, 2)),
    {"ones_like_add", f_ones_like_add, 2, 3,
     {{F2(3, 4), F2(1, 4)}, {F2(5, 2), F2(1, 2)}, {F2(2, 6), F2(2, 6)}}, 1},
    U1("astype", f_astype, F2(3, 4), F2(5, 2)),
    U1("where", f_where, F2(3, 4), F2(5, 2)),
    U1("clip", f_clip, F2(3, 4), F2(5, 2)),
    /* tuple primitives are built again (tuple_build): getters' shapes and
     * byte offsets follow the new shapes */
    U1("divmod", f_divmod, F2(3, 4), F2(5, 2)),
    {"divmod_broadcast_r", f_divmod_r, 2, 3,
     {{F2(3, 4), F2(1, 4)}, {F2(5, 2), F2(5, 1)}, {F2(2, 3), F2(2, 3)}}, 1},
    U1("arange_constant", f_arange_like, F2(3, 4), F2(5, 4)),
    {"reductions_broadcast", f_broadcast_rows, 2, 2, {{F2(3, 4), F2(3, 4)}, {F2(5, 2), F2(5, 2)}}, 1},
    /* beyond MLX (it throws: topk and rope slice; outer's reshape is baked
     * in; unflatten replays the traced split, a wrong shape) */
    U1("topk", f_topk, F2(3, 4), F2(5, 3)),
    U1("unflatten", f_unflatten, F2(3, 4), F2(5, 6)),
    {"outer", f_outer, 2, 2, {{F1(3), F1(4)}, {F1(5), F1(2)}}, 1},
    /* not checked against MLX: a scalar broadcast to the indices' shape, as
     * put_along_axis_scalar; linalg tuples built again over new shapes */
    {"scatter_add_axis", f_scatter_add, 2, 2,
     {{F2(5, 4), IX2(3, 4, 5)}, {F2(7, 2), IX2(6, 2, 7)}}, 1},
    U1("qr_r", f_qr_r, F3(2, 4, 3), F3(3, 3, 5)),
    U1("svd_s", f_svd_s, F3(2, 4, 3), F3(3, 3, 5)),
    U1("eigh_w", f_eigh_w, F3(2, 3, 3), F3(3, 4, 4)),
    U1("lu_factor", f_lu_factor, F3(2, 3, 3), F3(3, 4, 4)),
    U1("rope", f_rope, F4(1, 2, 3, 4), F4(2, 1, 5, 4)),
    /* MLX: throws (Slice, Pad, Scatter, Split cannot infer output shapes) or
     * replays baked-in shapes (wrong results); lace traces again */
    U1X("slice", f_slice, F2(3, 4), F2(5, 2), 2),
    {"take_axis", f_take_axis, 2, 2, {{F2(5, 4), IX(3, 5)}, {F2(7, 2), IX(6, 7)}}, 2},
    U1X("slice_update", f_slice_update, F2(3, 4), F2(5, 2), 2),
    U1X("diagonal", f_diagonal, F2(3, 4), F2(5, 2), 2),
    U1X("tril", f_tril, F2(3, 4), F2(5, 2), 2),
    U1X("hadamard", f_hadamard, F2(3, 4), F2(5, 8), 2),
    U1X("pad", f_pad, F2(3, 4), F2(5, 2), 2),
    U1X("tile", f_tile, F2(3, 4), F2(5, 2), 2),
    U1X("repeat", f_repeat, F2(3, 4), F2(5, 2), 2),
    U1X("median", f_median, F2(3, 4), F2(5, 2), 2),

    {"gather_mm", f_gather_mm, 3, 2,
     {{F3(3, 1, 4), F3(2, 4, 5), IX(3, 2)}, {F3(5, 1, 4), F3(2, 4, 5), IX(5, 2)}}, 2},
    U1X("broadcast_to_fixed", f_broadcast_to, F1(4), F1(1), 2),
};

/* ---- harness ---- */

struct sl_payload {
  const struct sl_case *c;
  int calls;
};

static int traced_fn(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct sl_payload *p = pl;
  p->calls++;
  mlx_array a[3] = {{0}, {0}, {0}}, r = mlx_array_new();
  int n = (int)mlx_vector_array_size(in), rc = 0;
  for (int k = 0; k < n && k < 3; k++) {
    a[k] = mlx_array_new();
    rc |= mlx_vector_array_get(&a[k], in, (size_t)k);
  }
  if (!rc) rc = p->c->fn(&r, a);
  if (!rc) rc = mlx_vector_array_append_value(*res, r);
  for (int k = 0; k < n && k < 3; k++) mlx_array_free(a[k]);
  mlx_array_free(r);
  return rc;
}

static mlx_array make_input(const struct sl_in *d) {
  if (!d->idx_hi) return test_rand_f32(d->shape, d->ndim, -2, 2);
  int64_t n = 1;
  for (int i = 0; i < d->ndim; i++) n *= d->shape[i];
  int32_t *v = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = test_randint(0, d->idx_hi - 1);
  mlx_array a = mlx_array_new_data(v, d->shape, d->ndim, MLX_INT32);
  free(v);
  return a;
}

/* Same dtype and shape, values within float32 rounding (compiled kernels
 * may fuse and reassociate). */
static void check_same(mlx_array got, mlx_array want, const char *name, int call) {
  CHECK_MSG(mlx_array_dtype(got) == mlx_array_dtype(want), "%s call %d: dtype %d, want %d", name,
            call, (int)mlx_array_dtype(got), (int)mlx_array_dtype(want));
  size_t nd = mlx_array_ndim(got);
  bool shape_ok = nd == mlx_array_ndim(want) &&
                  (nd == 0 || !memcmp(mlx_array_shape(got), mlx_array_shape(want), nd * sizeof(int)));
  CHECK_MSG(shape_ok, "%s call %d: shape differs (ndim %zu vs %zu, first extent %d vs %d)", name,
            call, nd, mlx_array_ndim(want), nd ? mlx_array_shape(got)[0] : 0,
            mlx_array_ndim(want) ? mlx_array_shape(want)[0] : 0);
  if (!shape_ok) return;
  double *w = test_values(want);
  if (w) CHECK_CLOSE(got, w, mlx_array_size(want), 1e-5, 1e-5);
  free(w);
}

static void run_case(const struct sl_case *c) {
  struct sl_payload p = {c, 0};
  mlx_closure f = mlx_closure_new_func_payload(traced_fn, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  for (int call = 0; call < c->ncalls; call++) {
    mlx_array in[3] = {{0}, {0}, {0}};
    for (int k = 0; k < c->nin; k++) in[k] = make_input(&c->in[call][k]);
    mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)c->nin);
    mlx_vector_array out = mlx_vector_array_new();
    mlx_array got = mlx_array_new(), want = mlx_array_new();
    int rc = mlx_closure_apply(&out, cf, vin);
    CHECK_MSG(rc == 0, "%s call %d failed: %s", c->name, call, test_last_error);
    if (!rc) rc = mlx_vector_array_get(&got, out, 0);
    int rc2 = c->fn(&want, in);
    CHECK_MSG(rc2 == 0, "%s call %d: uncompiled op failed: %s", c->name, call, test_last_error);
    if (!rc && !rc2) check_same(got, want, c->name, call);
    for (int k = 0; k < c->nin; k++) mlx_array_free(in[k]);
    mlx_array_free(got);
    mlx_array_free(want);
    mlx_vector_array_free(vin);
    mlx_vector_array_free(out);
  }
  CHECK_MSG(p.calls == c->traces, "%s: %d traces for %d shapes, expected %d", c->name, p.calls,
            c->ncalls, c->traces);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* ---- MLX's shapeless cases (python/tests/test_compile.py) ---- */

/* A closure fn(payload) counting its traces in *calls. */
struct port {
  int calls;
  double k;       /* a captured Python scalar (y, z in MLX's tests) */
  int which;      /* selects a variant */
};
typedef int (*port_fn)(struct port *p, const mlx_array *in, int nin, mlx_array *out);
struct port_closure {
  struct port *p;
  port_fn fn;
};
static int port_tramp(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct port_closure *c = pl;
  c->p->calls++;
  int n = (int)mlx_vector_array_size(in), rc = 0;
  mlx_array a[4] = {{0}, {0}, {0}, {0}}, r = mlx_array_new();
  for (int k = 0; k < n && k < 4; k++) {
    a[k] = mlx_array_new();
    rc |= mlx_vector_array_get(&a[k], in, (size_t)k);
  }
  if (!rc) rc = c->fn(c->p, a, n, &r);
  if (!rc) rc = mlx_vector_array_append_value(*res, r);
  for (int k = 0; k < n && k < 4; k++) mlx_array_free(a[k]);
  mlx_array_free(r);
  return rc;
}
/* Calls cf on in[0..n); 0 and the first output, or the failure's rc. */
static int call_c(mlx_closure cf, const mlx_array *in, int n, mlx_array *out) {
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)n), vo = mlx_vector_array_new();
  int rc = mlx_closure_apply(&vo, cf, vin);
  if (!rc) rc = mlx_vector_array_get(out, vo, 0);
  mlx_vector_array_free(vin);
  mlx_vector_array_free(vo);
  return rc;
}
static mlx_closure compiled(struct port_closure *pc) {
  mlx_closure f = mlx_closure_new_func_payload(port_tramp, pc, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  mlx_closure_free(f);
  return cf;
}
static mlx_array arr_i32(const int32_t *v, int ndim, const int *shape) {
  return mlx_array_new_data(v, shape, ndim, MLX_INT32);
}
static void check_vals(mlx_array a, int ndim, const int *shape, const double *v, const char *what) {
  size_t n = 1;
  for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
  bool ok = (int)mlx_array_ndim(a) == ndim &&
            (ndim == 0 || !memcmp(mlx_array_shape(a), shape, sizeof(int) * (size_t)ndim));
  CHECK_MSG(ok, "%s: shape", what);
  if (ok && v) CHECK_CLOSE(a, v, n, 1e-6, 1e-6);
}

/* x + y with y a captured scalar: no retrace for new shapes (so y's change
 * is not seen); dtype and rank changes trace again. */
static int p_add_y(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)n;
  mlx_array y = mlx_array_new_int((int)p->k);
  int rc = mlx_add(o, in[0], y, S());
  mlx_array_free(y);
  return rc;
}
static void port_shapeless_compile(void) {
  struct port p = {.k = 1};
  struct port_closure pc = {&p, p_add_y};
  mlx_closure cf = compiled(&pc);
  mlx_array r = mlx_array_new();
  int32_t v2[2] = {1, 2}, v3[3] = {1, 2, 3};
  int s2 = 2, s3 = 3, s13[2] = {1, 3};
  mlx_array x = arr_i32(v2, 1, &s2);
  CHECK_OK(call_c(cf, &x, 1, &r));
  check_vals(r, 1, &s2, (double[]){2, 3}, "x + 1");
  mlx_array_free(x);
  p.k = 2;
  x = arr_i32(v3, 1, &s3);
  CHECK_OK(call_c(cf, &x, 1, &r));
  check_vals(r, 1, &s3, (double[]){2, 3, 4}, "x + 1 (not retraced)");
  CHECK(p.calls == 1);
  mlx_array_free(x);
  float f3[3] = {1, 2, 3};
  x = mlx_array_new_data(f3, &s3, 1, MLX_FLOAT32);
  CHECK_OK(call_c(cf, &x, 1, &r));
  check_vals(r, 1, &s3, (double[]){3, 4, 5}, "float x + 2 (retraced)");
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32 && p.calls == 2);
  mlx_array_free(x);
  x = arr_i32(v3, 2, s13);
  CHECK_OK(call_c(cf, &x, 1, &r));
  check_vals(r, 2, s13, (double[]){3, 4, 5}, "rank 2 (retraced)");
  CHECK(p.calls == 3);
  mlx_array_free(x);
  mlx_array_free(r);
  mlx_closure_free(cf);
}

static int p_mul(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)p, (void)n;
  return mlx_multiply(o, in[0], in[1], S());
}
static void port_with_broadcasts(void) {
  struct port p = {0};
  struct port_closure pc = {&p, p_mul};
  mlx_closure cf = compiled(&pc);
  int s22[2] = {2, 2}, s2 = 2, s11[2] = {1, 1};
  float ones[4] = {1, 1, 1, 1}, twos[2] = {2, 2}, three = 3;
  mlx_array x = mlx_array_new_data(ones, s22, 2, MLX_FLOAT32);
  mlx_array ys[2] = {mlx_array_new_data(twos, &s2, 1, MLX_FLOAT32),
                     mlx_array_new_data(&three, s11, 2, MLX_FLOAT32)};
  for (int k = 0; k < 2; k++)
    for (int swap = 0; swap < 2; swap++) {
      mlx_array in[2] = {swap ? ys[k] : x, swap ? x : ys[k]}, r = mlx_array_new();
      CHECK_OK(call_c(cf, in, 2, &r));
      double want[4];
      for (int i = 0; i < 4; i++) want[i] = k ? 3 : 2;
      check_vals(r, 2, s22, want, "x * y broadcast");
      mlx_array_free(r);
    }
  mlx_array_free(x);
  mlx_array_free(ys[0]);
  mlx_array_free(ys[1]);
  mlx_closure_free(cf);
}

/* x + y.sum(0, keepdims) + z; then x * x.sum(-1, keepdims or not) */
static int p_reduce(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)n;
  mlx_array s = mlx_array_new(), t = mlx_array_new();
  int rc;
  if (p->which == 0) {
    mlx_array z = mlx_array_new_int((int)p->k);
    rc = mlx_sum_axis(&s, in[1], 0, true, S());
    if (!rc) rc = mlx_add(&t, in[0], s, S());
    if (!rc) rc = mlx_add(o, t, z, S());
    mlx_array_free(z);
  } else {
    rc = mlx_sum_axis(&s, in[0], -1, p->which == 1, S());
    if (!rc) rc = mlx_multiply(o, in[0], s, S());
  }
  mlx_array_free(s);
  mlx_array_free(t);
  return rc;
}
static void port_with_reduction(void) {
  struct port p = {.k = 1};
  struct port_closure pc = {&p, p_reduce};
  mlx_closure cf = compiled(&pc);
  int32_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int s22[2] = {2, 2}, s33[2] = {3, 3};
  mlx_array in[2] = {arr_i32(ones, 2, s22), arr_i32(ones, 2, s22)}, r = mlx_array_new();
  CHECK_OK(call_c(cf, in, 2, &r));
  check_vals(r, 2, s22, (double[]){4, 4, 4, 4}, "x + y.sum(0) + 1");
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  p.k = 2;
  in[0] = arr_i32(ones, 2, s33);
  in[1] = arr_i32(ones, 2, s33);
  CHECK_OK(call_c(cf, in, 2, &r));
  check_vals(r, 2, s33, (double[]){5, 5, 5, 5, 5, 5, 5, 5, 5}, "new shape, z not seen");
  CHECK(p.calls == 1);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  mlx_closure_free(cf);
  for (int keep = 1; keep <= 2; keep++) {
    struct port q = {.which = keep};
    struct port_closure qc = {&q, p_reduce};
    cf = compiled(&qc);
    int32_t v1[6] = {1, 2, 3, 4, 5, 6}, v2[2] = {1, 2};
    int s32[2] = {3, 2}, s12[2] = {1, 2};
    mlx_array x1 = arr_i32(v1, 2, s32), x2 = arr_i32(v2, 2, s12);
    if (keep == 1) CHECK_OK(call_c(cf, &x1, 1, &r)); /* (3, 2) * (3,) does not broadcast */
    CHECK_OK(call_c(cf, &x2, 1, &r));
    check_vals(r, 2, s12, (double[]){3, 6}, "x * x.sum(-1)");
    mlx_array_free(x1);
    mlx_array_free(x2);
    mlx_closure_free(cf);
  }
  mlx_array_free(r);
}

/* mean(x, keepdims) over all axes on new sizes divides by the new count */
static int p_mean(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)p, (void)n;
  return mlx_mean(o, in[0], true, S());
}
static void port_mean(void) {
  struct port p = {0};
  struct port_closure pc = {&p, p_mean};
  mlx_closure cf = compiled(&pc);
  const int sizes[3] = {2, 4, 7};
  for (int i = 0; i < 3; i++) {
    float v[7];
    for (int k = 0; k < 7; k++) v[k] = (float)(k + 1);
    mlx_array x = mlx_array_new_data(v, &sizes[i], 1, MLX_FLOAT32), r = mlx_array_new();
    CHECK_OK(call_c(cf, &x, 1, &r));
    int one = 1;
    check_vals(r, 1, &one, (double[]){(sizes[i] + 1) / 2.0}, "mean");
    mlx_array_free(x);
    mlx_array_free(r);
  }
  CHECK_MSG(p.calls == 1, "mean: %d traces", p.calls);
  mlx_closure_free(cf);
}

/* x.reshape(x.shape[0] * x.shape[1], -1): the -1 follows the input; the
 * product is baked in, so (5, 5, 5) cannot be reshaped to (6, -1): MLX
 * raises, lace traces again (giving the function's (25, 5)). */
static int p_reshape(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)p, (void)n;
  const int *sh = mlx_array_shape(in[0]);
  int to[2] = {sh[0] * sh[1], -1};
  return mlx_reshape(o, in[0], to, 2, S());
}
static void port_with_reshape(void) {
  struct port p = {0};
  struct port_closure pc = {&p, p_reshape};
  mlx_closure cf = compiled(&pc);
  const int shapes[3][3] = {{2, 3, 4}, {2, 3, 8}, {5, 5, 5}}, want[3][2] = {{6, 4}, {6, 8}, {25, 5}};
  const int traces[3] = {1, 1, 2};
  for (int i = 0; i < 3; i++) {
    mlx_array x = test_rand_f32(shapes[i], 3, -1, 1), r = mlx_array_new();
    CHECK_OK(call_c(cf, &x, 1, &r));
    check_vals(r, 2, want[i], NULL, "reshape");
    CHECK_MSG(p.calls == traces[i], "reshape call %d: %d traces", i, p.calls);
    mlx_array_free(x);
    mlx_array_free(r);
  }
  mlx_closure_free(cf);
}

/* addmm on new shapes of the same ranks: no retrace */
static int p_addmm(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)n;
  return mlx_addmm(o, in[0], in[1], in[2], p->which ? 2.0f : 1.0f, p->which ? 3.0f : 1.0f, S());
}
static void port_addmm(void) {
  for (int w = 0; w < 2; w++) {
    struct port p = {.which = w};
    struct port_closure pc = {&p, p_addmm};
    mlx_closure cf = compiled(&pc);
    const int sc[2][2] = {{2, 4}, {3, 5}}, sa[2][2] = {{2, 3}, {3, 6}}, sb[2][2] = {{3, 4}, {6, 5}};
    for (int i = 0; i < 2; i++) {
      mlx_array in[3] = {mlx_array_new(), mlx_array_new(), mlx_array_new()}, r = mlx_array_new();
      mlx_array one = mlx_array_new_float(1.0f);
      CHECK_OK(mlx_full(&in[0], sc[i], 2, one, MLX_FLOAT32, S()));
      CHECK_OK(mlx_full(&in[1], sa[i], 2, one, MLX_FLOAT32, S()));
      CHECK_OK(mlx_full(&in[2], sb[i], 2, one, MLX_FLOAT32, S()));
      CHECK_OK(call_c(cf, in, 3, &r));
      double want[15];
      for (int k = 0; k < 15; k++) want[k] = w ? 3.0 + 2.0 * sa[i][1] : 1.0 + sa[i][1];
      check_vals(r, 2, sc[i], want, "addmm");
      for (int k = 0; k < 3; k++) mlx_array_free(in[k]);
      mlx_array_free(one);
      mlx_array_free(r);
    }
    CHECK_MSG(p.calls == 1, "addmm: %d traces", p.calls);
    mlx_closure_free(cf);
  }
}

/* reduction(take(buf, arange(n))) traced at n = 1 (a reduction over an
 * axis of extent 1, which must stay in the graph: MLX issue 3201) and
 * replayed for larger n, and the other way round. */
static int p_reduce_take(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)n;
  mlx_array t = mlx_array_new();
  int rc = mlx_take_axis(&t, in[0], in[1], 0, S());
  if (!rc) switch (p->which) {
    case 0: rc = mlx_sum(o, t, false, S()); break;
    case 1: rc = mlx_mean(o, t, false, S()); break;
    case 2: rc = mlx_prod(o, t, false, S()); break;
    case 3: rc = mlx_min(o, t, false, S()); break;
    case 4: rc = mlx_max(o, t, false, S()); break;
    case 5: rc = mlx_all(o, t, false, S()); break;
    case 6: rc = mlx_any(o, t, false, S()); break;
    case 7: rc = mlx_argmin(o, t, false, S()); break;
    default: rc = mlx_argmax(o, t, false, S()); break;
    }
  mlx_array_free(t);
  return rc;
}
static void port_reduce_after_gather(void) {
  float bv[5] = {10, 20, 30, 40, 50};
  int five = 5;
  mlx_array buf = mlx_array_new_data(bv, &five, 1, MLX_FLOAT32);
  const int seqs[2][4] = {{1, 2, 3, 4}, {2, 1, 0, 0}};
  for (int which = 0; which < 9; which++)
    for (int q = 0; q < 2; q++) {
      struct port p = {.which = which};
      struct port_closure pc = {&p, p_reduce_take};
      mlx_closure cf = compiled(&pc);
      for (int i = 0; i < 4 && seqs[q][i]; i++) {
        int n = seqs[q][i];
        mlx_array idx = mlx_array_new(), r = mlx_array_new(), want = mlx_array_new();
        CHECK_OK(mlx_arange(&idx, 0, n, 1, MLX_INT32, S()));
        mlx_array in[2] = {buf, idx};
        CHECK_OK(call_c(cf, in, 2, &r));
        CHECK_OK(p_reduce_take(&p, in, 2, &want));
        double *wv = test_values(want);
        CHECK_MSG(wv != NULL, "reduction %d", which);
        if (wv) {
          int before = test_failures;
          CHECK_CLOSE(r, wv, 1, 1e-6, 0);
          if (test_failures != before) fprintf(stderr, "  reduction %d, n = %d\n", which, n);
        }
        free(wv);
        mlx_array_free(idx);
        mlx_array_free(r);
        mlx_array_free(want);
      }
      mlx_closure_free(cf);
    }
  mlx_array_free(buf);
}

/* broadcast_to(a, (2, 2)): a rank change traces again, where the function
 * itself fails (MLX raises too) */
static int p_bcast(struct port *p, const mlx_array *in, int n, mlx_array *o) {
  (void)p, (void)n;
  int sh[2] = {2, 2};
  return mlx_broadcast_to(o, in[0], sh, 2, S());
}
static void port_broadcast(void) {
  struct port p = {0};
  struct port_closure pc = {&p, p_bcast};
  mlx_closure cf = compiled(&pc);
  mlx_array a = mlx_array_new_float(0.0f), r = mlx_array_new();
  CHECK_OK(call_c(cf, &a, 1, &r));
  mlx_array_free(a);
  float z = 0;
  int s3[3] = {1, 1, 1};
  a = mlx_array_new_data(&z, s3, 3, MLX_FLOAT32);
  CHECK_FAILS(call_c(cf, &a, 1, &r), "broadcast");
  mlx_array_free(a);
  mlx_array_free(r);
  mlx_closure_free(cf);
}

int main(void) {
  test_init();
  test_seed(20261205);
  (void)vec2;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
  port_shapeless_compile();
  port_with_broadcasts();
  port_with_reduction();
  port_mean();
  port_with_reshape();
  port_addmm();
  port_reduce_after_gather();
  port_broadcast();
  return test_done();
}
