/* Export then import in lace: the imported function gives what the
 * function itself gives (dtypes, shapes, values) for an MLP with captured
 * weights, reductions, shape and indexing ops, integer ops with a
 * multi-output primitive, keyword inputs, shapeless calls with new shapes
 * and several traces in one file; error cases report and return non-zero.
 * With LACE_EXPORT_KEEP=dir the files stay there with inputs and outputs,
 * for tests/gen/check_export_in_mlx.py (lace -> MLX). */
#include "export_util.h"

static mlx_array W1, B1, W2; /* captured by mlp: constants of the file */

static mlx_array in_at(mlx_vector_array in, size_t i) {
  mlx_array a = mlx_array_new();
  mlx_vector_array_get(&a, in, i);
  return a;
}

/* Appends r (consumed) to res. */
static void push(mlx_vector_array res, mlx_array r) {
  mlx_vector_array_append_value(res, r);
  mlx_array_free(r);
}

#define S test_stream()
#define NEW(r) mlx_array r = mlx_array_new()

static int mlp(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0), zero = mlx_array_new_float(0.0f);
  NEW(h);
  NEW(o);
  mlx_matmul(&h, x, W1, S);
  mlx_add(&h, h, B1, S);
  mlx_maximum(&h, h, zero, S);
  mlx_matmul(&o, h, W2, S);
  mlx_vector_array_set_value(res, o);
  NEW(sm);
  mlx_softmax_axis(&sm, o, -1, false, S);
  push(*res, sm);
  NEW(t);
  mlx_tanh(&t, h, S);
  mlx_sigmoid(&t, t, S);
  mlx_erf(&t, t, S);
  push(*res, t);
  mlx_array_free(x);
  mlx_array_free(zero);
  mlx_array_free(h);
  mlx_array_free(o);
  return 0;
}

static int reductions(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0);
  int ax02[2] = {0, 2};
  NEW(r);
  mlx_sum_axis(&r, x, 1, false, S), mlx_vector_array_set_value(res, r);
  mlx_mean_axis(&r, x, 0, true, S), mlx_vector_array_append_value(*res, r);
  mlx_mean_axes(&r, x, ax02, 2, false, S), mlx_vector_array_append_value(*res, r);
  mlx_max_axis(&r, x, -1, false, S), mlx_vector_array_append_value(*res, r);
  mlx_argmax_axis(&r, x, 1, false, S), mlx_vector_array_append_value(*res, r);
  mlx_argmax(&r, x, false, S), mlx_vector_array_append_value(*res, r);
  mlx_logsumexp_axis(&r, x, 1, false, S), mlx_vector_array_append_value(*res, r);
  mlx_logsumexp_axes(&r, x, ax02, 2, true, S), mlx_vector_array_append_value(*res, r);
  mlx_cumsum(&r, x, 2, true, false, S), mlx_vector_array_append_value(*res, r);
  mlx_sort_axis(&r, x, 0, S), mlx_vector_array_append_value(*res, r);
  mlx_mean(&r, x, false, S), mlx_vector_array_append_value(*res, r);
  mlx_array_free(r);
  mlx_array_free(x);
  return 0;
}

static int shapes(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0), idx = in_at(in, 1);
  int sh[2] = {4, 6}, perm[3] = {2, 0, 1}, st[3] = {1, 0, 3}, sp[3] = {2, 3, 4},
      step[3] = {-1, 1, -2};
  int pax[1] = {1}, plo[1] = {1}, phi[1] = {2}, us[3] = {0, 1, 0}, ue[3] = {2, 3, 4};
  NEW(r);
  NEW(t);
  mlx_reshape(&r, x, sh, 2, S), mlx_vector_array_set_value(res, r);
  mlx_transpose_axes(&r, x, perm, 3, S), mlx_vector_array_append_value(*res, r);
  mlx_slice(&r, x, st, 3, (int[3]){-3, 3, 0}, 3, step, 3, S);
  mlx_vector_array_append_value(*res, r);
  mlx_slice(&r, x, (int[3]){0, 0, 0}, 3, sp, 3, (int[3]){1, 2, 2}, 3, S);
  mlx_vector_array_append_value(*res, r);
  mlx_vector_array two = xu_vec(2, (mlx_array[2]){x, x});
  mlx_concatenate_axis(&r, two, 1, S), mlx_vector_array_append_value(*res, r);
  mlx_vector_array_free(two);
  mlx_take_axis(&r, x, idx, 2, S), mlx_vector_array_append_value(*res, r);
  mlx_argsort_axis(&t, x, 1, S);
  mlx_take_along_axis(&r, x, t, 1, S), mlx_vector_array_append_value(*res, r);
  mlx_array half = mlx_array_new_float(0.5f);
  mlx_greater(&t, x, half, S);
  mlx_where(&r, t, x, half, S), mlx_vector_array_append_value(*res, r);
  mlx_pad(&r, x, pax, 1, plo, 1, phi, 1, half, "constant", S);
  mlx_vector_array_append_value(*res, r);
  mlx_expand_dims(&r, x, 1, S), mlx_vector_array_append_value(*res, r);
  mlx_slice_update(&r, x, half, us, 3, ue, 3, (int[3]){1, 1, 2}, 3, S);
  mlx_vector_array_append_value(*res, r);
  mlx_broadcast_to(&r, half, (int[2]){3, 2}, 2, S), mlx_vector_array_append_value(*res, r);
  mlx_array_free(half);
  mlx_array_free(r);
  mlx_array_free(t);
  mlx_array_free(x);
  mlx_array_free(idx);
  return 0;
}

static int ints(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array i = in_at(in, 0), j = in_at(in, 1);
  NEW(r);
  mlx_floor_divide(&r, i, j, S), mlx_vector_array_set_value(res, r);
  mlx_remainder(&r, i, j, S), mlx_vector_array_append_value(*res, r);
  mlx_bitwise_xor(&r, i, j, S), mlx_vector_array_append_value(*res, r);
  mlx_left_shift(&r, i, j, S), mlx_vector_array_append_value(*res, r);
  mlx_less_equal(&r, i, j, S), mlx_vector_array_append_value(*res, r);
  mlx_astype(&r, i, MLX_FLOAT16, S), mlx_vector_array_append_value(*res, r);
  mlx_vector_array dm = mlx_vector_array_new();
  mlx_divmod(&dm, i, j, S);
  for (size_t k = 0; k < mlx_vector_array_size(dm); k++) {
    mlx_vector_array_get(&r, dm, k);
    mlx_vector_array_append_value(*res, r);
  }
  mlx_vector_array_free(dm);
  mlx_array_free(r);
  mlx_array_free(i);
  mlx_array_free(j);
  return 0;
}

/* var/std and the fast norms (written as MLX's compositions). */
static int norms(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0), w = in_at(in, 1), b = in_at(in, 2), none = mlx_array_new();
  int ax[2] = {0, 2};
  NEW(r);
  mlx_var_axis(&r, x, 0, false, 1, S), mlx_vector_array_set_value(res, r);
  mlx_std_axes(&r, x, ax, 2, true, 0, S), mlx_vector_array_append_value(*res, r);
  mlx_fast_rms_norm(&r, x, w, 1e-5f, S), mlx_vector_array_append_value(*res, r);
  mlx_fast_rms_norm(&r, x, none, 1e-5f, S), mlx_vector_array_append_value(*res, r);
  mlx_fast_layer_norm(&r, x, w, b, 1e-5f, S), mlx_vector_array_append_value(*res, r);
  mlx_fast_layer_norm(&r, x, none, none, 1e-5f, S), mlx_vector_array_append_value(*res, r);
  NEW(h);
  mlx_astype(&h, x, MLX_FLOAT16, S);
  mlx_fast_rms_norm(&r, h, none, 1e-5f, S), mlx_vector_array_append_value(*res, r);
  mlx_array_free(h);
  mlx_array_free(r);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(b), mlx_array_free(none);
  return 0;
}

static int kwfun(mlx_vector_array *res, const mlx_vector_array in, const mlx_map_string_to_array kw) {
  mlx_array x = in_at(in, 0), scale = mlx_array_new(), shift = mlx_array_new();
  mlx_map_string_to_array_get(&scale, kw, "scale");
  mlx_map_string_to_array_get(&shift, kw, "shift");
  NEW(r);
  mlx_multiply(&r, x, scale, S);
  mlx_add(&r, r, shift, S);
  mlx_vector_array_set_value(res, r);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_array_free(scale);
  mlx_array_free(shift);
  return 0;
}

static int shapeless_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0), b = in_at(in, 1), two = mlx_array_new_float(2.0f);
  NEW(r);
  NEW(s);
  mlx_exp(&r, x, S);
  mlx_multiply(&r, r, two, S);
  mlx_add(&r, r, b, S);
  mlx_sum_axis(&s, r, -1, true, S);
  mlx_vector_array_set_value(res, r);
  push(*res, s);
  NEW(m);
  mlx_mean_axis(&m, x, 0, false, S);
  push(*res, m);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_array_free(b);
  mlx_array_free(two);
  return 0;
}

/* Sum of tanh of every input: one trace per arity. */
static int multi(mlx_vector_array *res, const mlx_vector_array in) {
  NEW(acc);
  NEW(t);
  for (size_t i = 0; i < mlx_vector_array_size(in); i++) {
    mlx_array x = in_at(in, i);
    mlx_tanh(&t, x, S);
    if (i == 0)
      mlx_array_set(&acc, t);
    else
      mlx_add(&acc, acc, t, S);
    mlx_array_free(x);
  }
  mlx_vector_array_set_value(res, acc);
  mlx_array_free(acc);
  mlx_array_free(t);
  return 0;
}


static void test_functions(void) {
  int sx[2] = {4, 8}, s1[2] = {8, 16}, s2[2] = {16, 3}, sb[1] = {16};
  W1 = test_rand_f32(s1, 2, -1, 1), B1 = test_rand_f32(sb, 1, -1, 1),
  W2 = test_rand_f32(s2, 2, -1, 1);
  mlx_array x = test_rand_f32(sx, 2, -1, 1);
  mlx_vector_array a = xu_vec(1, &x);
  xu_roundtrip("lace_mlp", mlp, a, false, (mlx_vector_array){NULL}, 1e-6, NULL);
  mlx_vector_array_free(a);
  mlx_array_free(x);

  int s3[3] = {3, 4, 5};
  x = test_rand_f32(s3, 3, -2, 2);
  a = xu_vec(1, &x);
  xu_roundtrip("lace_reductions", reductions, a, false, (mlx_vector_array){NULL}, 1e-6, NULL);
  mlx_vector_array_free(a);

  int s5[1] = {5};
  mlx_array w = test_rand_f32(s5, 1, -1, 1), bb = test_rand_f32(s5, 1, -1, 1);
  a = xu_vec(3, (mlx_array[3]){x, w, bb});
  xu_roundtrip("lace_norms", norms, a, false, (mlx_vector_array){NULL}, 2e-6, NULL);
  mlx_vector_array_free(a);
  mlx_array_free(w), mlx_array_free(bb);

  int si[1] = {3};
  mlx_array idx = xu_int(si, 1, -5, 4);
  a = xu_vec(2, (mlx_array[2]){x, idx});
  xu_roundtrip("lace_shapes", shapes, a, false, (mlx_vector_array){NULL}, 0, NULL);
  mlx_vector_array_free(a);
  mlx_array_free(idx);
  mlx_array_free(x);

  int s34[2] = {3, 4};
  mlx_array i = xu_int(s34, 2, -40, 40), j = xu_int(s34, 2, 1, 6);
  a = xu_vec(2, (mlx_array[2]){i, j});
  xu_roundtrip("lace_ints", ints, a, false, (mlx_vector_array){NULL}, 0, NULL);
  mlx_vector_array_free(a);
  mlx_array_free(i);
  mlx_array_free(j);

  int s57[2] = {5, 7}, s7[1] = {7}, s4[1] = {4};
  mlx_array p = test_rand_f32(s34, 2, -1, 1), q = test_rand_f32(s4, 1, -1, 1);
  mlx_array p2 = test_rand_f32(s57, 2, -1, 1), q2 = test_rand_f32(s7, 1, -1, 1);
  a = xu_vec(2, (mlx_array[2]){p, q});
  mlx_vector_array b = xu_vec(2, (mlx_array[2]){p2, q2});
  xu_roundtrip("lace_shapeless", shapeless_fn, a, true, b, 1e-6, NULL);
  mlx_vector_array_free(a);
  mlx_vector_array_free(b);
  mlx_array_free(p), mlx_array_free(q), mlx_array_free(p2), mlx_array_free(q2);
  mlx_array_free(W1), mlx_array_free(B1), mlx_array_free(W2);
}

/* mlx_function_exporter: three traces (arity 1, 2 and 3) in one file;
 * each call picks its own; a fourth signature is not in the file. */
static void test_multiple_traces(void) {
  char file[600];
  xu_path(file, sizeof file, "lace_multi.mlxfn");
  mlx_closure c = mlx_closure_new_func(multi);
  mlx_function_exporter ex = mlx_function_exporter_new(file, c, false);
  CHECK(ex.ctx != NULL);
  int s22[2] = {2, 2}, s3[1] = {3};
  mlx_array x = test_rand_f32(s22, 2, -1, 1), y = test_rand_f32(s3, 1, -1, 1);
  mlx_vector_array v1 = xu_vec(1, &x), v2 = xu_vec(2, (mlx_array[2]){y, y}),
                   v3 = xu_vec(3, (mlx_array[3]){x, x, x}), v4 = xu_vec(1, &y);
  CHECK_OK(mlx_function_exporter_apply(ex, v1));
  CHECK_OK(mlx_function_exporter_apply(ex, v2));
  CHECK_OK(mlx_function_exporter_apply(ex, v3));
  CHECK_FAILS(mlx_function_exporter_apply(ex, v1), "same signature");
  mlx_function_exporter_free(ex);
  mlx_imported_function f = mlx_imported_function_new(file);
  CHECK(f.ctx != NULL);
  mlx_vector_array got = mlx_vector_array_new(), want = mlx_vector_array_new();
  mlx_vector_array *calls[3] = {&v1, &v2, &v3};
  for (int k = 0; k < 3 && f.ctx; k++) {
    CHECK_OK(mlx_closure_apply(&want, c, *calls[k]));
    CHECK_OK(mlx_imported_function_apply(&got, f, *calls[k]));
    xu_compare("lace_multi", got, want, 1e-6);
    char call[32];
    snprintf(call, sizeof call, "lace_multi_%d", k + 1);
    xu_keep_call(call, "lace_multi.mlxfn", *calls[k], NULL, NULL, 0, want);
  }
  CHECK_FAILS(mlx_imported_function_apply(&got, f, v4), "no imported function matches");
  mlx_vector_array_free(got), mlx_vector_array_free(want);
  mlx_vector_array_free(v1), mlx_vector_array_free(v2), mlx_vector_array_free(v3);
  mlx_vector_array_free(v4);
  mlx_array_free(x), mlx_array_free(y);
  mlx_imported_function_free(f);
  mlx_closure_free(c);
}

/* Keyword inputs: exported with kwargs, called with kwargs in another
 * insertion order; a missing keyword matches nothing. */
static void test_kwargs(void) {
  char file[600];
  xu_path(file, sizeof file, "lace_kwargs.mlxfn");
  int s23[2] = {2, 3}, s3[1] = {3};
  mlx_array x = test_rand_f32(s23, 2, -1, 1), sc = test_rand_f32(s23, 2, -1, 1),
            sh = test_rand_f32(s3, 1, -1, 1);
  mlx_vector_array args = xu_vec(1, &x), got = mlx_vector_array_new(),
                   want = mlx_vector_array_new();
  mlx_map_string_to_array kw = mlx_map_string_to_array_new(), kw2 = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(kw, "shift", sh);
  mlx_map_string_to_array_insert(kw, "scale", sc);
  mlx_map_string_to_array_insert(kw2, "scale", sc);
  mlx_closure_kwargs c = mlx_closure_kwargs_new_func(kwfun);
  CHECK_OK(mlx_export_function_kwargs(file, c, args, kw, false));
  mlx_imported_function f = mlx_imported_function_new(file);
  CHECK(f.ctx != NULL);
  CHECK_OK(mlx_closure_kwargs_apply(&want, c, args, kw));
  CHECK_OK(mlx_imported_function_apply_kwargs(&got, f, args, kw));
  xu_compare("lace_kwargs", got, want, 0);
  const char *names[2] = {"scale", "shift"};
  xu_keep_call("lace_kwargs", "lace_kwargs.mlxfn", args, names, (mlx_array[2]){sc, sh}, 2, want);
  CHECK_FAILS(mlx_imported_function_apply_kwargs(&got, f, args, kw2), "no imported function");
  CHECK_FAILS(mlx_imported_function_apply(&got, f, args), "no imported function");
  mlx_imported_function_free(f);
  mlx_closure_kwargs_free(c);
  mlx_map_string_to_array_free(kw);
  mlx_map_string_to_array_free(kw2);
  mlx_vector_array_free(args), mlx_vector_array_free(got), mlx_vector_array_free(want);
  mlx_array_free(x), mlx_array_free(sc), mlx_array_free(sh);
}

static int isclose_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = in_at(in, 0);
  NEW(r);
  mlx_isclose(&r, x, x, 1e-5, 1e-8, false, S);
  mlx_vector_array_set_value(res, r);
  mlx_array_free(r);
  mlx_array_free(x);
  return 0;
}

static int failing_fn(mlx_vector_array *res, const mlx_vector_array in) {
  (void)res, (void)in;
  return 1;
}

static void test_errors(void) {
  char file[600];
  xu_path(file, sizeof file, "lace_err.mlxfn");
  int s[1] = {4};
  mlx_array x = test_rand_f32(s, 1, -1, 1);
  mlx_vector_array args = xu_vec(1, &x), res = mlx_vector_array_new();
  mlx_closure c = mlx_closure_new_func(isclose_fn), bad = mlx_closure_new_func(failing_fn);
  CHECK_FAILS(mlx_export_function(NULL, c, args, false), "NULL");
  CHECK_FAILS(mlx_export_function(file, (mlx_closure){NULL}, args, false), "empty closure");
  CHECK_FAILS(mlx_export_function("/nonexistent/dir/f.mlxfn", c, args, false), "failed to open");
  CHECK_FAILS(mlx_export_function(file, c, args, false), "'isclose' has no MLX equivalent");
  CHECK_FAILS(mlx_export_function(file, bad, args, false), "failed");
  mlx_imported_function f = mlx_imported_function_new("/nonexistent/f.mlxfn");
  CHECK(f.ctx == NULL && strstr(test_last_error, "failed to open"));
  CHECK_FAILS(mlx_imported_function_apply(&res, f, args), "empty imported function");
  CHECK_FAILS(mlx_function_exporter_apply((mlx_function_exporter){NULL}, args), "empty exporter");
  CHECK(mlx_imported_function_free(f) == 0);
  mlx_closure_free(c);
  mlx_closure_free(bad);
  mlx_vector_array_free(args);
  mlx_vector_array_free(res);
  mlx_array_free(x);
}

int main(void) {
  test_init();
  test_seed(10);
  size_t mem0 = test_active_memory();
  test_functions();
  test_multiple_traces();
  test_kwargs();
  test_errors();
  CHECK_MSG(test_active_memory() <= mem0, "active memory grew from %zu to %zu", mem0,
            test_active_memory());
  xu_cleanup();
  return test_done();
}
