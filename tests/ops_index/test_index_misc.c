/* Indexing: out-of-range indices (clamped gathers, dropped scatters; never
 * out of bounds), non-contiguous and lazy operands, a large parallel take,
 * dynamic-slice clamping, argument errors, no leaks. */
#include "test.h"

static mlx_stream S(void) { return test_stream(); }

static void free_all(mlx_array *a, size_t n) {
  for (size_t i = 0; i < n; i++) mlx_array_free(a[i]);
}

static mlx_array ints(const int32_t *v, const int *shape, int nd) {
  return mlx_array_new_data(v, shape, nd, MLX_INT32);
}

static void test_out_of_range(void) {
  float av[4] = {1, 2, 3, 4};
  int s4[1] = {4}, s3[1] = {3};
  int32_t iv[3] = {100, -100, -1};
  mlx_array a = mlx_array_new_data(av, s4, 1, MLX_FLOAT32), i = ints(iv, s3, 1), r = mlx_array_new();
  CHECK_OK(mlx_take(&r, a, i, S()));
  double ref[3] = {4, 1, 4}; /* clamped after wrapping */
  CHECK_CLOSE(r, ref, 3, 0, 0);
  mlx_array u = mlx_array_new_data(av, s3, 1, MLX_FLOAT32), u3 = mlx_array_new();
  int s311[3] = {3, 1};
  CHECK_OK(mlx_reshape(&u3, u, s311, 2, S()));
  CHECK_OK(mlx_scatter_add_single(&r, a, i, u3, 0, S()));
  double ref2[4] = {1, 2, 3, 4 + 3}; /* only -1 is in range */
  CHECK_CLOSE(r, ref2, 4, 0, 0);
  CHECK_OK(mlx_put_along_axis(&r, a, i, u, 0, S()));
  double ref3[4] = {1, 2, 3, 3};
  CHECK_CLOSE(r, ref3, 4, 0, 0);
  CHECK_OK(mlx_take_along_axis(&r, a, i, 0, S()));
  CHECK_CLOSE(r, ref, 3, 0, 0);
  /* dynamic slices clamp their start so the slice fits */
  int32_t st[1] = {3};
  int s1[1] = {1}, two[1] = {2}, ax0[1] = {0};
  mlx_array start = ints(st, s1, 1);
  CHECK_OK(mlx_slice_dynamic(&r, a, start, ax0, 1, two, 1, S()));
  double ref4[2] = {3, 4};
  CHECK_CLOSE(r, ref4, 2, 0, 0);
  float uv[2] = {9, 8};
  mlx_array u2 = mlx_array_new_data(uv, two, 1, MLX_FLOAT32);
  CHECK_OK(mlx_slice_update_dynamic(&r, a, u2, start, ax0, 1, S()));
  double ref5[4] = {1, 2, 9, 8};
  CHECK_CLOSE(r, ref5, 4, 0, 0);
  mlx_array all[] = {a, i, r, u, u3, start, u2};
  free_all(all, sizeof all / sizeof all[0]);
}

/* take / gather / scatter on transposed inputs with transposed, lazy index
 * arrays; a take of 1M elements runs in parallel. */
static void test_noncontig_and_large(void) {
  int sh[2] = {40, 30};
  mlx_array a = test_rand_f32(sh, 2, -1, 1), at = mlx_array_new();
  CHECK_OK(mlx_transpose(&at, a, S())); /* (30, 40) */
  int32_t iv[6] = {0, 29, -1, 5, 7, -30};
  int is[2] = {2, 3};
  mlx_array i = ints(iv, is, 2), it = mlx_array_new(), il = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_transpose(&it, i, S())); /* (3, 2) */
  CHECK_OK(mlx_add(&il, it, it, S()));  /* lazy: doubled, some out of range -> clamped */
  CHECK_OK(mlx_take_axis(&r, at, il, 0, S()));
  CHECK_SHAPE(r, 3, 2, 40);
  const float *ad = mlx_array_data_float32(a);
  double *ref = malloc(sizeof(double) * 240);
  int32_t itv[6] = {0, 29, -1, 5, 7, -30}; /* it[j][k] = iv[k*3+j] */
  for (int j = 0; j < 3; j++)
    for (int k = 0; k < 2; k++) {
      int64_t v = 2 * itv[k * 3 + j];
      if (v < 0) v += 30;
      v = v < 0 ? 0 : v > 29 ? 29 : v;
      for (int c = 0; c < 40; c++) ref[(j * 2 + k) * 40 + c] = ad[c * 30 + v];
    }
  CHECK_CLOSE(r, ref, 240, 0, 0);
  free(ref);
  /* large */
  int bs[1] = {1 << 20};
  int32_t *big = malloc(sizeof(int32_t) << 20);
  for (int k = 0; k < (1 << 20); k++) big[k] = (int32_t)((k * 7919u) % 1200u) - 600;
  mlx_array bi = ints(big, bs, 1), br = mlx_array_new();
  CHECK_OK(mlx_take(&br, at, bi, S()));
  CHECK_OK(mlx_array_eval(br));
  const float *bd = mlx_array_data_float32(br);
  int ok = bd != NULL;
  for (int k = 0; ok && k < (1 << 20); k++) {
    int64_t v = big[k] < 0 ? big[k] + 1200 : big[k]; /* flat index into at (30x40) */
    int row = (int)(v / 40), col = (int)(v % 40);
    if (bd[k] != ad[col * 30 + row]) ok = 0;
  }
  CHECK_MSG(ok, "large take");
  free(big);
  /* scatter into a transposed array, updates from a broadcast */
  mlx_array one = mlx_array_new_float(1.0f), ub = mlx_array_new(), sc = mlx_array_new();
  int us[3] = {6, 1, 40};
  CHECK_OK(mlx_broadcast_to(&ub, one, us, 3, S()));
  int32_t rows[6] = {0, 1, 1, -1, 2, 2};
  int s6[1] = {6};
  mlx_array ri = ints(rows, s6, 1);
  CHECK_OK(mlx_scatter_add_single(&sc, at, ri, ub, 0, S()));
  CHECK_OK(mlx_array_eval(sc));
  const float *sd = mlx_array_data_float32(sc);
  ok = sd != NULL;
  for (int rr = 0; ok && rr < 30; rr++)
    for (int c = 0; c < 40; c++) {
      int hits = rr == 0 ? 1 : rr == 1 ? 2 : rr == 2 ? 2 : rr == 29 ? 1 : 0;
      float want = ad[c * 30 + rr];
      for (int h = 0; h < hits; h++) want += 1.0f; /* one float add per update */
      if (sd[rr * 40 + c] != want) {
        fprintf(stderr, "scatter mismatch at %d,%d: %g vs %g\n", rr, c, sd[rr * 40 + c], want);
        ok = 0;
        break;
      }
    }
  CHECK_MSG(ok, "scatter_add into a transposed array");
  mlx_array all[] = {a, at, i, it, il, r, bi, br, one, ub, sc, ri};
  free_all(all, sizeof all / sizeof all[0]);
}

static void test_errors(void) {
  int sh[2] = {3, 4};
  mlx_array a = test_rand_f32(sh, 2, 0, 1), r = mlx_array_new(), empty = mlx_array_new();
  float fv[2] = {0, 1};
  int s2[1] = {2};
  mlx_array fi = mlx_array_new_data(fv, s2, 1, MLX_FLOAT32);
  bool bv[2] = {true, false};
  mlx_array bi = mlx_array_new_data(bv, s2, 1, MLX_BOOL);
  int32_t iv[2] = {0, 1};
  mlx_array i = ints(iv, s2, 1);
  CHECK_FAILS(mlx_take(&r, a, fi, S()), "integral");
  CHECK_FAILS(mlx_take(&r, a, bi, S()), "boolean");
  CHECK_FAILS(mlx_take_axis(&r, a, i, 2, S()), "invalid axis");
  CHECK_FAILS(mlx_take(&r, a, empty, S()), "empty array");
  CHECK_FAILS(mlx_take_along_axis(&r, a, i, 0, S()), "dimension");
  mlx_vector_array v = mlx_vector_array_new_value(i);
  int ax[2] = {0, 0}, sl[2] = {1, 4}, slbad[2] = {4, 4};
  CHECK_FAILS(mlx_gather(&r, a, v, ax, 2, sl, 2, S()), "number of index arrays");
  CHECK_FAILS(mlx_gather(&r, a, v, ax, 1, slbad, 2, S()), "slice sizes");
  CHECK_FAILS(mlx_gather(&r, a, v, ax, 1, sl, 1, S()), "slice sizes");
  int ax5[1] = {5};
  CHECK_FAILS(mlx_gather(&r, a, v, ax5, 1, sl, 2, S()), "out of bounds");
  CHECK_OK(mlx_gather(&r, a, v, ax, 1, sl, 2, S()));
  CHECK_SHAPE(r, 2, 1, 4);
  mlx_array u = mlx_array_new();
  int us[2] = {2, 4};
  u = test_rand_f32(us, 2, 0, 1);
  CHECK_FAILS(mlx_scatter(&r, a, v, u, ax, 1, S()), "dimensions");
  int us3[3] = {2, 1, 5};
  mlx_array u3 = test_rand_f32(us3, 3, 0, 1);
  CHECK_FAILS(mlx_scatter(&r, a, v, u3, ax, 1, S()), "too large");
  int us4[3] = {3, 1, 4};
  mlx_array u4 = test_rand_f32(us4, 3, 0, 1);
  CHECK_FAILS(mlx_scatter(&r, a, v, u4, ax, 1, S()), "not valid");
  int st[2] = {0, 0}, sp[2] = {3, 4}, stp[2] = {1, 0};
  CHECK_FAILS(mlx_slice_update(&r, a, u, st, 2, sp, 2, stp, 2, S()), "cannot be 0");
  CHECK_FAILS(mlx_slice_update(&r, a, u, st, 1, sp, 2, stp, 2, S()), "invalid number");
  stp[1] = 1;
  CHECK_FAILS(mlx_slice_update(&r, a, u, st, 2, sp, 2, stp, 2, S()), "broadcast");
  int ax01[2] = {0, 1}, big[2] = {4, 1};
  CHECK_FAILS(mlx_slice_dynamic(&r, a, i, ax01, 2, big, 2, S()), "invalid slice size");
  CHECK_FAILS(mlx_slice_dynamic(&r, a, i, ax01, 1, sl, 2, S()), "does not match");
  CHECK_FAILS(mlx_slice_dynamic(&r, a, fi, ax01, 2, sl, 2, S()), "integral");
  int dup[2] = {1, -1};
  CHECK_FAILS(mlx_slice_dynamic(&r, a, i, dup, 2, sl, 2, S()), "repeated");
  CHECK_FAILS(mlx_put_along_axis(&r, a, fi, u, 0, S()), "integral");
  mlx_vector_array_free(v);
  mlx_array all[] = {a, r, empty, fi, bi, i, u, u3, u4};
  free_all(all, sizeof all / sizeof all[0]);
}

/* Gather/scatter over other dtypes: int64 data, uint8 indices; complex max. */
static void test_dtypes(void) {
  int64_t dv[5] = {10, -20, 30, -40, 50};
  int s5[1] = {5}, s2[1] = {2};
  mlx_array a = mlx_array_new_data(dv, s5, 1, MLX_INT64), r = mlx_array_new();
  uint8_t iv[2] = {4, 1};
  mlx_array i = mlx_array_new_data(iv, s2, 1, MLX_UINT8);
  int64_t uv[2] = {7, 9};
  int s21[2] = {2, 1};
  mlx_array u = mlx_array_new_data(uv, s21, 2, MLX_INT64);
  CHECK_OK(mlx_scatter_prod_single(&r, a, i, u, 0, S()));
  CHECK(mlx_array_dtype(r) == MLX_INT64);
  CHECK_OK(mlx_array_eval(r));
  const int64_t *rd = mlx_array_data_int64(r);
  CHECK(rd && rd[4] == 350 && rd[1] == -180 && rd[0] == 10);
  CHECK_OK(mlx_scatter_min_single(&r, a, i, u, 0, S()));
  CHECK_OK(mlx_array_eval(r));
  rd = mlx_array_data_int64(r);
  CHECK(rd && rd[4] == 7 && rd[1] == -20);
  mlx_array all[] = {a, r, i, u};
  free_all(all, sizeof all / sizeof all[0]);
}

static void test_masked_and_meshgrid_errors(void) {
  int sh[2] = {2, 3}, s3[1] = {3};
  mlx_array a = test_rand_f32(sh, 2, 0, 1), r = mlx_array_new();
  bool mv[6] = {true, true, false, true, true, true};
  mlx_array m = mlx_array_new_data(mv, sh, 2, MLX_BOOL), v = test_rand_f32(s3, 1, 0, 1);
  CHECK_OK(mlx_masked_scatter(&r, a, m, v, S())); /* 5 masked, 3 values: fails at eval */
  CHECK_FAILS(mlx_array_eval(r), "not have enough elements");
  mlx_array mf = test_rand_f32(sh, 2, 0, 1), m2 = mlx_array_new_data(mv, s3, 1, MLX_BOOL);
  CHECK_FAILS(mlx_masked_scatter(&r, a, mf, v, S()), "boolean");
  CHECK_FAILS(mlx_masked_scatter(&r, a, m2, v, S()), "same shape");
  int s13[3] = {1, 1, 3};
  mlx_array v3 = test_rand_f32(s13, 3, 0, 1);
  CHECK_FAILS(mlx_masked_scatter(&r, a, m, v3, S()), "broadcastable");
  mlx_vector_array in = mlx_vector_array_new_value(v), out = mlx_vector_array_new();
  CHECK_FAILS(mlx_meshgrid(&out, in, false, "yx", S()), "invalid indexing");
  CHECK_OK(mlx_meshgrid(&out, in, false, "xy", S()));
  CHECK(mlx_vector_array_size(out) == 1);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_array all[] = {a, r, m, v, mf, m2, v3};
  free_all(all, sizeof all / sizeof all[0]);
}

/* Degenerate shapes: no index arrays, empty index arrays, empty inputs. */
static void test_degenerate(void) {
  float av[6] = {1, 2, 3, 4, 5, 6};
  int sh[2] = {2, 3}, s0[1] = {0};
  mlx_array a = mlx_array_new_data(av, sh, 2, MLX_FLOAT32), r = mlx_array_new();
  /* scatter with no index arrays writes the update block at the origin */
  float uv[2] = {-1, -2};
  int us[2] = {1, 2};
  mlx_array u = mlx_array_new_data(uv, us, 2, MLX_FLOAT32);
  mlx_vector_array none = mlx_vector_array_new();
  CHECK_OK(mlx_scatter_add(&r, a, none, u, NULL, 0, S()));
  double ref[6] = {0, 0, 3, 4, 5, 6};
  CHECK_CLOSE(r, ref, 6, 0, 0);
  int sl[2] = {2, 2};
  CHECK_OK(mlx_gather(&r, a, none, NULL, 0, sl, 2, S()));
  CHECK_SHAPE(r, 2, 2);
  double ref2[4] = {1, 2, 4, 5};
  CHECK_CLOSE(r, ref2, 4, 0, 0);
  /* empty index arrays */
  int32_t dummy = 0;
  mlx_array e = mlx_array_new_data(&dummy, s0, 1, MLX_INT32);
  CHECK_OK(mlx_take_axis(&r, a, e, 1, S()));
  CHECK_SHAPE(r, 2, 0);
  CHECK_OK(mlx_array_eval(r));
  int eus[3] = {0, 1, 3};
  mlx_array eu = mlx_array_new_data(av, eus, 3, MLX_FLOAT32);
  CHECK_OK(mlx_scatter_single(&r, a, e, eu, 0, S()));
  double unchanged[6] = {1, 2, 3, 4, 5, 6};
  CHECK_CLOSE(r, unchanged, 6, 0, 0);
  /* empty input: empty take works, a non-empty one is refused */
  int es[2] = {0, 3};
  mlx_array ea = mlx_array_new_data(av, es, 2, MLX_FLOAT32);
  CHECK_OK(mlx_take_axis(&r, ea, e, 0, S()));
  CHECK_SHAPE(r, 0, 3);
  int32_t one = 0;
  int s1[1] = {1};
  mlx_array i1 = mlx_array_new_data(&one, s1, 1, MLX_INT32);
  CHECK_FAILS(mlx_take_axis(&r, ea, i1, 0, S()), "empty axis");
  /* slice_update of all of a lazy slice (the update must not inherit the
   * inner slice's offsets) */
  mlx_array inner = mlx_array_new();
  int st[2] = {0, 1}, sp[2] = {2, 3}, one2[2] = {1, 1};
  CHECK_OK(mlx_slice(&inner, a, st, 2, sp, 2, one2, 2, S())); /* (2,2): cols 1..2 */
  int z[2] = {0, 0}, full[2] = {2, 2};
  mlx_array nine = mlx_array_new_float(9.0f);
  CHECK_OK(mlx_slice_update_add(&r, inner, nine, z, 2, full, 2, one2, 2, S()));
  double ref3[4] = {11, 12, 14, 15};
  CHECK_CLOSE(r, ref3, 4, 0, 0);
  mlx_array_free(inner);
  mlx_array_free(nine);
  mlx_vector_array_free(none);
  mlx_array all[] = {a, r, u, e, eu, ea, i1};
  free_all(all, sizeof all / sizeof all[0]);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_out_of_range();
  test_noncontig_and_large();
  test_errors();
  test_dtypes();
  test_masked_and_meshgrid_errors();
  test_degenerate();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, expected %zu", test_active_memory(),
            base);
  return test_done();
}
