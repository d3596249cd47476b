/* View semantics of the shape ops: no copies (active memory unchanged),
 * correct values through chains of views over random shapes, views of lazy
 * inputs, other dtypes, argument errors, and no leaks. */
#include "test.h"

static mlx_stream S(void) { return test_stream(); }

/* Element (idx) of a row-major float buffer with the given shape. */
static float at(const float *d, int nd, const int *shape, const int64_t *idx) {
  int64_t off = 0;
  for (int i = 0; i < nd; i++) off = off * shape[i] + idx[i];
  return d[off];
}

static void test_no_copy(void) {
  int shape[3] = {64, 128, 32};
  mlx_array x = test_rand_f32(shape, 3, -1, 1);
  CHECK_OK(mlx_array_eval(x));
  size_t base = test_active_memory();
  mlx_array t = mlx_array_new(), sl = mlx_array_new(), r = mlx_array_new(), e = mlx_array_new(),
            q = mlx_array_new(), d = mlx_array_new(), b = mlx_array_new(), st = mlx_array_new();
  int perm[3] = {2, 0, 1};
  CHECK_OK(mlx_transpose_axes(&t, x, perm, 3, S()));
  int start[3] = {31, 0, 5}, stop[3] = {-33, 64, 120}, steps[3] = {-2, 3, 1};
  CHECK_OK(mlx_slice(&sl, t, start, 3, stop, 3, steps, 3, S()));
  int rs[2] = {64 * 128, 32};
  CHECK_OK(mlx_reshape(&r, x, rs, 2, S()));
  CHECK_OK(mlx_expand_dims(&e, sl, 1, S()));
  CHECK_OK(mlx_squeeze(&q, e, S()));
  CHECK_OK(mlx_diagonal(&d, x, 3, 0, 2, S()));
  int bs[4] = {5, 64, 128, 32};
  CHECK_OK(mlx_broadcast_to(&b, x, bs, 4, S()));
  int ss[2] = {100, 7};
  int64_t sst[2] = {3, 1};
  CHECK_OK(mlx_as_strided(&st, x, ss, 2, sst, 2, 11, S()));
  mlx_array all[] = {t, sl, r, e, q, d, b, st};
  for (int i = 0; i < 8; i++) CHECK_OK(mlx_array_eval(all[i]));
  CHECK_MSG(test_active_memory() == base, "views allocated %zu bytes",
            test_active_memory() - base);
  CHECK_SHAPE(sl, 16, 22, 115);
  CHECK_SHAPE(q, 16, 22, 115);
  CHECK_SHAPE(d, 128, 29);
  /* spot-check values through the views */
  const float *xd = mlx_array_data_float32(x);
  const float *qd = NULL;
  mlx_array qc = mlx_array_new();
  CHECK_OK(mlx_contiguous(&qc, q, false, S()));
  qd = mlx_array_data_float32(qc);
  int ok = qd != NULL;
  for (int i = 0; ok && i < 16; i++)
    for (int j = 0; j < 22; j++)
      for (int k = 0; k < 115; k++) {
        int64_t idx[3] = {3 * j, 5 + k, 31 - 2 * i}; /* t[i',j',k'] = x[j', k', i'] */
        if (qd[(i * 22 + j) * 115 + k] != at(xd, 3, shape, idx)) {
          ok = 0;
          break;
        }
      }
  CHECK_MSG(ok, "values through transpose+slice+expand+squeeze");
  /* reshape of a non-contiguous view copies */
  mlx_array rc = mlx_array_new();
  int rs2[1] = {16 * 22 * 115};
  CHECK_OK(mlx_reshape(&rc, sl, rs2, 1, S()));
  CHECK_OK(mlx_array_eval(rc));
  CHECK(test_active_memory() > base);
  mlx_array_free(rc);
  mlx_array_free(qc);
  for (int i = 0; i < 8; i++) mlx_array_free(all[i]);
  mlx_array_free(x);
}

/* Random chains transpose -> slice -> reshape checked against direct index
 * arithmetic on the input data. */
static void test_random_chains(void) {
  test_seed(7);
  for (int iter = 0; iter < 200; iter++) {
    int nd = test_randint(1, 4), shape[4];
    for (int i = 0; i < nd; i++) shape[i] = test_randint(1, 6);
    mlx_array x = test_rand_f32(shape, nd, -10, 10);
    int perm[4];
    for (int i = 0; i < nd; i++) perm[i] = i;
    for (int i = nd - 1; i > 0; i--) {
      int j = test_randint(0, i), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    int tshape[4], start[4], stop[4], step[4], oshape[4];
    for (int i = 0; i < nd; i++) {
      tshape[i] = shape[perm[i]];
      int n = tshape[i];
      step[i] = test_randint(1, 3) * (test_randint(0, 1) ? 1 : -1);
      if (step[i] > 0) {
        start[i] = test_randint(0, n - 1);
        stop[i] = test_randint(start[i] + 1, n);
        oshape[i] = (stop[i] - start[i] + step[i] - 1) / step[i];
      } else {
        start[i] = test_randint(0, n - 1);
        stop[i] = test_randint(-1, start[i] - 1);
        oshape[i] = (start[i] - stop[i] - step[i] - 1) / -step[i];
        if (stop[i] == -1) stop[i] = -n - 1; /* "to the beginning" */
      }
    }
    int negperm[4];
    for (int i = 0; i < nd; i++) negperm[i] = test_randint(0, 1) ? perm[i] - nd : perm[i];
    mlx_array t = mlx_array_new(), s = mlx_array_new(), f = mlx_array_new();
    CHECK_OK(mlx_transpose_axes(&t, x, negperm, (size_t)nd, S()));
    CHECK_OK(mlx_slice(&s, t, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, S()));
    CHECK_OK(mlx_flatten(&f, s, 0, -1, S()));
    int64_t total = 1;
    for (int i = 0; i < nd; i++) total *= oshape[i];
    const float *xd = mlx_array_data_float32(x);
    double *ref = malloc(sizeof(double) * (size_t)total);
    for (int64_t lin = 0; lin < total; lin++) {
      int64_t rem = lin, o[4], idx[4];
      for (int i = nd - 1; i >= 0; i--) {
        o[i] = rem % oshape[i];
        rem /= oshape[i];
      }
      for (int i = 0; i < nd; i++) idx[perm[i]] = start[i] + o[i] * step[i];
      ref[lin] = at(xd, nd, shape, idx);
    }
    CHECK_MSG(mlx_array_size(f) == (size_t)total, "iteration %d size", iter);
    CHECK_CLOSE(f, ref, (size_t)total, 0, 0);
    free(ref);
    mlx_array_free(x);
    mlx_array_free(t);
    mlx_array_free(s);
    mlx_array_free(f);
  }
}

/* Views of lazy (unevaluated) inputs, and of other dtypes. */
static void test_lazy_and_dtypes(void) {
  int32_t iv[6] = {1, -2, 3, -4, 5, -6};
  int sh[2] = {2, 3};
  mlx_array a = mlx_array_new_data(iv, sh, 2, MLX_INT32), s = mlx_array_new(), t = mlx_array_new();
  CHECK_OK(mlx_add(&s, a, a, S())); /* lazy */
  CHECK_OK(mlx_transpose(&t, s, S()));
  double ref[6] = {2, -8, -4, 10, 6, -12};
  CHECK_SHAPE(t, 3, 2);
  CHECK_CLOSE(t, ref, 6, 0, 0);
  CHECK(mlx_array_dtype(t) == MLX_INT32);
  bool bv[4] = {true, false, false, true};
  int sb[1] = {4};
  mlx_array b = mlx_array_new_data(bv, sb, 1, MLX_BOOL), br = mlx_array_new();
  int start = 3, stop = -5, step = -1;
  CHECK_OK(mlx_slice(&br, b, &start, 1, &stop, 1, &step, 1, S()));
  double refb[4] = {1, 0, 0, 1};
  CHECK_CLOSE(br, refb, 4, 0, 0);
  CHECK(mlx_array_dtype(br) == MLX_BOOL);
  /* int64 / float16 through a reshape + moveaxis */
  int64_t lv[24];
  for (int i = 0; i < 24; i++) lv[i] = (int64_t)i * 1000000007LL;
  int sl[1] = {24}, rs[3] = {2, 3, 4};
  mlx_array l = mlx_array_new_data(lv, sl, 1, MLX_INT64), lr = mlx_array_new(), lm = mlx_array_new(),
            lf = mlx_array_new();
  CHECK_OK(mlx_reshape(&lr, l, rs, 3, S()));
  CHECK_OK(mlx_moveaxis(&lm, lr, -1, 0, S()));
  CHECK_OK(mlx_flatten(&lf, lm, 0, -1, S()));
  CHECK_OK(mlx_array_eval(lf));
  const int64_t *ld = mlx_array_data_int64(lf);
  int ok = ld != NULL;
  for (int k = 0; ok && k < 4; k++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) ok = ok && ld[(k * 2 + i) * 3 + j] == lv[(i * 3 + j) * 4 + k];
  CHECK_MSG(ok, "int64 moveaxis values");
  mlx_array arrs[] = {a, s, t, b, br, l, lr, lm, lf};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_empty_and_scalar(void) {
  int sh[3] = {0, 3, 2};
  float dummy = 0;
  mlx_array z = mlx_array_new_data(&dummy, sh, 3, MLX_FLOAT32), r = mlx_array_new(),
            t = mlx_array_new();
  int rs[2] = {3, 0};
  CHECK_OK(mlx_reshape(&r, z, rs, 2, S()));
  CHECK_SHAPE(r, 3, 0);
  CHECK_OK(mlx_array_eval(r));
  int bad[2] = {-1, 0};
  CHECK_FAILS(mlx_reshape(&r, z, bad, 2, S()), "infer");
  CHECK_OK(mlx_transpose(&t, z, S()));
  CHECK_SHAPE(t, 2, 3, 0);
  CHECK_OK(mlx_array_eval(t));
  mlx_array sc = mlx_array_new_float(4.5f), e = mlx_array_new();
  CHECK_OK(mlx_transpose(&e, sc, S()));
  CHECK(mlx_array_ndim(e) == 0);
  CHECK_OK(mlx_atleast_2d(&e, sc, S()));
  CHECK_SHAPE(e, 1, 1);
  CHECK_OK(mlx_flatten(&e, sc, 0, -1, S()));
  CHECK_SHAPE(e, 1);
  double ref = 4.5;
  CHECK_CLOSE(e, &ref, 1, 0, 0);
  mlx_vector_array v = mlx_vector_array_new();
  int sv[2] = {5, 3};
  mlx_array y = test_rand_f32(sv, 2, 0, 1);
  int cut[3] = {4, 2, 9}; /* unsorted: pieces [0,4), [4,2) = empty, [2,5) */
  CHECK_OK(mlx_split_sections(&v, y, cut, 3, 0, S()));
  CHECK(mlx_vector_array_size(v) == 4);
  mlx_array p = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&p, v, 1));
  CHECK_SHAPE(p, 0, 3);
  CHECK_OK(mlx_vector_array_get(&p, v, 2));
  CHECK_SHAPE(p, 3, 3);
  CHECK_OK(mlx_vector_array_get(&p, v, 3));
  CHECK_SHAPE(p, 0, 3);
  mlx_vector_array_free(v);
  mlx_array arrs[] = {z, r, t, sc, e, y, p};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_broadcast_arrays(void) {
  int s1[2] = {3, 1}, s2[1] = {4}, s3[3] = {2, 1, 1};
  mlx_array a = test_rand_f32(s1, 2, 0, 1), b = test_rand_f32(s2, 1, 0, 1),
            c = test_rand_f32(s3, 3, 0, 1);
  mlx_array in[3] = {a, b, c};
  mlx_vector_array v = mlx_vector_array_new_data(in, 3), r = mlx_vector_array_new();
  CHECK_OK(mlx_broadcast_arrays(&r, v, S()));
  CHECK(mlx_vector_array_size(r) == 3);
  mlx_array x = mlx_array_new();
  for (size_t i = 0; i < 3; i++) {
    CHECK_OK(mlx_vector_array_get(&x, r, i));
    CHECK_SHAPE(x, 2, 3, 4);
  }
  CHECK_OK(mlx_vector_array_get(&x, r, 1));
  const float *bd = mlx_array_data_float32(b);
  double ref[24];
  for (int i = 0; i < 24; i++) ref[i] = bd[i % 4];
  CHECK_CLOSE(x, ref, 24, 0, 0);
  int s4[1] = {5};
  mlx_array d = test_rand_f32(s4, 1, 0, 1);
  CHECK_OK(mlx_vector_array_append_value(v, d));
  CHECK_FAILS(mlx_broadcast_arrays(&r, v, S()), "cannot be broadcast");
  mlx_vector_array_free(v);
  mlx_vector_array_free(r);
  mlx_array arrs[] = {a, b, c, d, x};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_errors(void) {
  int sh[3] = {2, 3, 4};
  mlx_array x = test_rand_f32(sh, 3, 0, 1), r = mlx_array_new(), empty = mlx_array_new();
  mlx_vector_array v = mlx_vector_array_new();
  int s5[1] = {5}, s2m[2] = {-1, -1}, sneg[2] = {-2, 12};
  CHECK_FAILS(mlx_reshape(&r, x, s5, 1, S()), "cannot reshape array of size 24");
  CHECK_FAILS(mlx_reshape(&r, x, s2m, 2, S()), "only infer one");
  CHECK_FAILS(mlx_reshape(&r, x, sneg, 2, S()), "negative");
  CHECK_FAILS(mlx_reshape(&r, empty, s5, 1, S()), "empty array");
  CHECK_FAILS(mlx_reshape(NULL, x, s5, 1, S()), "NULL");
  CHECK_FAILS(mlx_reshape(&r, x, NULL, 2, S()), "NULL");
  int p2[2] = {0, 1}, pdup[3] = {0, 1, -3}, pbad[3] = {0, 1, 3};
  CHECK_FAILS(mlx_transpose_axes(&r, x, p2, 2, S()), "received 2 axes");
  CHECK_FAILS(mlx_transpose_axes(&r, x, pdup, 3, S()), "repeated axis");
  CHECK_FAILS(mlx_transpose_axes(&r, x, pbad, 3, S()), "out of bounds");
  CHECK_FAILS(mlx_swapaxes(&r, x, 0, 3, S()), "out of bounds");
  CHECK_FAILS(mlx_moveaxis(&r, x, -4, 0, S()), "out of bounds");
  CHECK_FAILS(mlx_squeeze_axis(&r, x, 1, S()), "cannot squeeze axis 1 with size 3");
  CHECK_FAILS(mlx_squeeze_axis(&r, x, 5, S()), "out of bounds");
  CHECK_FAILS(mlx_expand_dims(&r, x, 4, S()), "out of bounds");
  int edup[2] = {0, -5};
  CHECK_FAILS(mlx_expand_dims_axes(&r, x, edup, 2, S()), "duplicate");
  CHECK_OK(mlx_expand_dims(&r, x, -1, S()));
  CHECK_SHAPE(r, 2, 3, 4, 1);
  int one[3] = {0, 0, 0}, two[2] = {0, 0};
  CHECK_FAILS(mlx_slice(&r, x, two, 2, two, 2, two, 2, S()), "invalid number");
  CHECK_FAILS(mlx_slice(&r, x, one, 3, sh, 3, one, 3, S()), "cannot be 0");
  int ss[1] = {5};
  int64_t st[1] = {6};
  CHECK_FAILS(mlx_as_strided(&r, x, ss, 1, st, 1, 0, S()), "outside");
  st[0] = -1;
  CHECK_FAILS(mlx_as_strided(&r, x, ss, 1, st, 1, 3, S()), "outside");
  CHECK_OK(mlx_as_strided(&r, x, ss, 1, st, 1, 4, S()));
  CHECK_FAILS(mlx_as_strided(&r, x, ss, 1, st, 0, 4, S()), "strides");
  CHECK_FAILS(mlx_diagonal(&r, x, 0, 1, -2, S()), "same axis");
  CHECK_FAILS(mlx_diagonal(&r, x, 0, 1, 3, S()), "axis2");
  CHECK_FAILS(mlx_split(&v, x, 2, 1, S()), "equal size");
  CHECK_FAILS(mlx_split(&v, x, 0, 1, S()), "positive");
  CHECK_FAILS(mlx_split(&v, x, 1, 3, S()), "out of bounds");
  int bs[2] = {3, 5}, bneg[3] = {2, -3, 4};
  CHECK_FAILS(mlx_broadcast_to(&r, x, bs, 2, S()), "broadcast");
  CHECK_FAILS(mlx_broadcast_to(&r, x, bneg, 3, S()), "negative");
  CHECK_FAILS(mlx_flatten(&r, x, 2, 1, S()), "start_axis");
  CHECK_FAILS(mlx_flatten(&r, x, 3, 5, S()), "start_axis");
  int u[2] = {4, 2};
  CHECK_FAILS(mlx_unflatten(&r, x, 1, u, 2, S()), "cannot reshape");
  CHECK_FAILS(mlx_unflatten(&r, x, 1, u, 0, S()), "cannot be empty");
  mlx_array sc = mlx_array_new_float(1.0f);
  CHECK_FAILS(mlx_diagonal(&r, sc, 0, 0, 1, S()), "at least two");
  int *many = calloc(100000, sizeof(int));
  CHECK_FAILS(mlx_reshape(&r, x, many, 100000, S()), "too many entries");
  CHECK_FAILS(mlx_tile(&r, x, many, 100000, S()), "too many entries");
  free(many);
  /* failures leave the result untouched */
  CHECK_SHAPE(r, 5);
  mlx_array_free(sc);
  mlx_array_free(x);
  mlx_array_free(r);
  mlx_vector_array_free(v);
}

/* Copies of permuted, reversed views large enough for the tiled path:
 * every permutation of a 3-d array, with and without reversed axes. */
static void test_tiled_copies(void) {
  int shape[3] = {37, 20, 45};
  mlx_array x = test_rand_f32(shape, 3, -1, 1);
  const float *xd = mlx_array_data_float32(x);
  int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int pi = 0; pi < 6; pi++)
    for (int rev = 0; rev < 2; rev++) {
      const int *p = perms[pi];
      mlx_array t = mlx_array_new(), v = mlx_array_new(), c = mlx_array_new(), f = mlx_array_new();
      CHECK_OK(mlx_transpose_axes(&t, x, p, 3, S()));
      int start[3], stop[3], step[3], ts[3];
      for (int i = 0; i < 3; i++) {
        ts[i] = shape[p[i]];
        bool r = rev && i != 1;
        start[i] = r ? ts[i] - 1 : 0;
        stop[i] = r ? -ts[i] - 1 : ts[i];
        step[i] = r ? -1 : 1;
      }
      CHECK_OK(mlx_slice(&v, t, start, 3, stop, 3, step, 3, S()));
      CHECK_OK(mlx_contiguous(&c, v, false, S()));
      int flat = shape[0] * shape[1] * shape[2];
      CHECK_OK(mlx_reshape(&f, v, &flat, 1, S())); /* the reshape copy path */
      CHECK_OK(mlx_array_eval(c));
      CHECK_OK(mlx_array_eval(f));
      const float *cd = mlx_array_data_float32(c), *fd = mlx_array_data_float32(f);
      int ok = cd && fd;
      for (int a = 0; ok && a < ts[0]; a++)
        for (int b = 0; ok && b < ts[1]; b++)
          for (int k = 0; k < ts[2]; k++) {
            int o[3] = {a, b, k}, idx[3];
            for (int i = 0; i < 3; i++) idx[p[i]] = step[i] < 0 ? ts[i] - 1 - o[i] : o[i];
            float want = xd[(idx[0] * shape[1] + idx[1]) * shape[2] + idx[2]];
            int64_t lin = ((int64_t)a * ts[1] + b) * ts[2] + k;
            if (cd[lin] != want || fd[lin] != want) {
              ok = 0;
              break;
            }
          }
      CHECK_MSG(ok, "perm %d rev %d", pi, rev);
      mlx_array_free(t);
      mlx_array_free(v);
      mlx_array_free(c);
      mlx_array_free(f);
    }
  /* other element sizes: uint8 and int64 transposes */
  int s2[2] = {70, 50};
  uint8_t *bv = malloc(3500);
  int64_t *lv = malloc(3500 * sizeof(int64_t));
  for (int i = 0; i < 3500; i++) {
    bv[i] = (uint8_t)(i * 13);
    lv[i] = (int64_t)i * 1000003;
  }
  mlx_array b = mlx_array_new_data(bv, s2, 2, MLX_UINT8), l = mlx_array_new_data(lv, s2, 2, MLX_INT64);
  mlx_array bt = mlx_array_new(), lt = mlx_array_new(), bc = mlx_array_new(), lc = mlx_array_new();
  CHECK_OK(mlx_transpose(&bt, b, S()));
  CHECK_OK(mlx_transpose(&lt, l, S()));
  CHECK_OK(mlx_contiguous(&bc, bt, false, S()));
  CHECK_OK(mlx_contiguous(&lc, lt, false, S()));
  CHECK_OK(mlx_array_eval(bc));
  CHECK_OK(mlx_array_eval(lc));
  const uint8_t *bd = mlx_array_data_uint8(bc);
  const int64_t *ld = mlx_array_data_int64(lc);
  int ok = bd && ld;
  for (int i = 0; ok && i < 50; i++)
    for (int j = 0; j < 70; j++) ok = ok && bd[i * 70 + j] == bv[j * 50 + i] && ld[i * 70 + j] == lv[j * 50 + i];
  CHECK_MSG(ok, "uint8/int64 transposed copies");
  free(bv);
  free(lv);
  mlx_array all[] = {x, b, l, bt, lt, bc, lc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mlx_array_free(all[i]);
}

static void test_contiguous(void) {
  int sh[2] = {300, 200};
  mlx_array x = test_rand_f32(sh, 2, -1, 1), t = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_array_eval(x));
  CHECK_OK(mlx_transpose(&t, x, S()));
  size_t base = test_active_memory();
  CHECK_OK(mlx_contiguous(&c, x, false, S())); /* already row-major: shared */
  CHECK_OK(mlx_array_eval(c));
  CHECK(test_active_memory() == base);
  CHECK_OK(mlx_contiguous(&c, t, true, S())); /* column-major allowed: shared */
  CHECK_OK(mlx_array_eval(c));
  CHECK(test_active_memory() == base);
  CHECK(mlx_array_strides(c)[0] == 1 && mlx_array_strides(c)[1] == 200);
  CHECK_OK(mlx_contiguous(&c, t, false, S())); /* row-major required: a copy */
  CHECK_OK(mlx_array_eval(c));
  CHECK(test_active_memory() >= base + 300 * 200 * 4);
  CHECK(mlx_array_strides(c)[0] == 300 && mlx_array_strides(c)[1] == 1);
  const float *xd = mlx_array_data_float32(x), *cd = mlx_array_data_float32(c);
  int ok = 1;
  for (int i = 0; ok && i < 200; i++)
    for (int j = 0; j < 300; j++) ok = ok && cd[i * 300 + j] == xd[j * 200 + i];
  CHECK_MSG(ok, "contiguous copy of a transpose");
  mlx_array_free(x);
  mlx_array_free(t);
  mlx_array_free(c);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_no_copy();
  test_contiguous();
  test_tiled_copies();
  test_random_chains();
  test_lazy_and_dtypes();
  test_empty_and_scalar();
  test_broadcast_arrays();
  test_errors();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, expected %zu", test_active_memory(),
            base);
  return test_done();
}
