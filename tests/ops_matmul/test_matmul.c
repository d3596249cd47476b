/* The matmul family against numpy references: batching, broadcasting,
 * 1-d operands, transposed/broadcast views, dtypes, addmm, tensordot,
 * inner, outer, errors, leaks. */
#include <complex.h>

#include "../data/matmul_ref.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "test.h"

static mlx_array from_f64(const double *v, int nd, const int *shape, mlx_dtype t) {
  mlx_array a = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, a, t, test_stream());
  mlx_array_free(a);
  return r;
}

static size_t shape_size(int nd, const int *s) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)s[i];
  return n;
}

static double tol_for(mlx_dtype t, int k) {
  switch (t) {
  case MLX_FLOAT64: return 1e-13 * k;
  case MLX_FLOAT32: return 1e-6 * k;
  case MLX_FLOAT16: return 2e-3 * k;
  case MLX_BFLOAT16: return 2e-2 * k;
  default: return 1e-6 * k; /* complex64 */
  }
}

static void run_case(const struct mm_case *c, mlx_dtype t) {
  mlx_stream s = test_stream();
  mlx_array a = from_f64(c->a, c->nda, c->sa, t), b = from_f64(c->b, c->ndb, c->sb, t);
  mlx_array r = mlx_array_new(), cc = mlx_array_new();
  int rc;
  if (!strcmp(c->kind, "matmul")) rc = mlx_matmul(&r, a, b, s);
  else if (!strcmp(c->kind, "addmm")) {
    cc = from_f64(c->c, c->ndc, c->sc, t);
    rc = mlx_addmm(&r, cc, a, b, (float)c->alpha, (float)c->beta, s);
  } else if (!strcmp(c->kind, "tensordot"))
    rc = mlx_tensordot(&r, a, b, c->axes_a, (size_t)c->naxes, c->axes_b, (size_t)c->naxes, s);
  else if (!strcmp(c->kind, "inner")) rc = mlx_inner(&r, a, b, s);
  else rc = mlx_outer(&r, a, b, s);
  CHECK_MSG(rc == 0, "%s case failed: %s", c->kind, test_last_error);
  if (rc == 0) {
    CHECK_MSG(mlx_array_dtype(r) == t, "%s: dtype %d", c->kind, (int)mlx_array_dtype(r));
    CHECK_MSG(mlx_array_ndim(r) == (size_t)c->ndr &&
                  !memcmp(mlx_array_shape(r), c->sr, sizeof(int) * (size_t)c->ndr),
              "%s: wrong shape (ndim %zu)", c->kind, mlx_array_ndim(r));
    int k = c->nda ? c->sa[c->nda - 1] : 1;
    if (k < 1) k = 1;
    if (t == MLX_COMPLEX64) { /* compare the real part; imaginary must stay 0 */
      mlx_array f = mlx_array_new();
      mlx_astype(&f, r, MLX_FLOAT32, s);
      CHECK_CLOSE(f, c->r, shape_size(c->ndr, c->sr), tol_for(t, k), tol_for(t, k));
      mlx_array_free(f);
    } else {
      CHECK_CLOSE(r, c->r, shape_size(c->ndr, c->sr), tol_for(t, k), tol_for(t, k));
    }
  }
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(cc);
  mlx_array_free(r);
}

static void test_fixtures(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_BFLOAT16,
                                    MLX_COMPLEX64};
  for (int i = 0; i < MM_NCASES; i++)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) run_case(&mm_cases[i], types[t]);
}

/* A transposed view of a 2-d array (the private permute view). */
static mlx_array transposed(mlx_array x) {
  int perm[2] = {1, 0};
  struct lc_node *n = x.ctx;
  int shape[2] = {n->shape[1], n->shape[0]};
  return (mlx_array){lc_node_new_op(LC_OP_MM_PERMUTE, n->dtype, 2, shape, 1, &n, perm, sizeof perm)};
}

static void ref_matmul(const double *a, int64_t ars, int64_t acs, const double *b, int64_t brs,
                       int64_t bcs, int M, int K, int N, double *out) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += a[i * ars + k * acs] * b[k * brs + j * bcs];
      out[i * N + j] = acc;
    }
}

static void test_views(void) {
  mlx_stream s = test_stream();
  const int M = 37, K = 23, N = 19;
  for (int dt = 0; dt < 2; dt++) {
    mlx_dtype t = dt ? MLX_FLOAT64 : MLX_FLOAT32;
    /* at is (K, M) in memory: a = at^T; bt is (N, K): b = bt^T */
    double at[K * M], bt[N * K], ref[M * N];
    for (int i = 0; i < K * M; i++) at[i] = test_uniform(-1, 1);
    for (int i = 0; i < N * K; i++) bt[i] = test_uniform(-1, 1);
    int sat[2] = {K, M}, sbt[2] = {N, K};
    mlx_array xat = from_f64(at, 2, sat, t), xbt = from_f64(bt, 2, sbt, t);
    /* from_f64 rounds through t; reference from the rounded values */
    double *av = test_values(xat), *bv = test_values(xbt);
    mlx_array a = transposed(xat), b = transposed(xbt), r = mlx_array_new();
    CHECK_OK(mlx_matmul(&r, a, b, s));
    ref_matmul(av, 1, M, bv, 1, K, M, K, N, ref);
    CHECK_SHAPE(r, M, N);
    CHECK_CLOSE(r, ref, (size_t)(M * N), tol_for(t, K), tol_for(t, K));
    /* transposed a times a broadcast b (row stride 0: packed) */
    double row[N];
    for (int j = 0; j < N; j++) row[j] = test_uniform(-1, 1);
    int srow[2] = {1, N}, sb[2] = {K, N};
    mlx_array xr = from_f64(row, 2, srow, t);
    double *rv = test_values(xr);
    mlx_array bb = {lc_broadcast_to(xr.ctx, 2, sb)};
    CHECK_OK(mlx_matmul(&r, a, bb, s));
    ref_matmul(av, 1, M, rv, 0, 1, M, K, N, ref);
    CHECK_CLOSE(r, ref, (size_t)(M * N), tol_for(t, K), tol_for(t, K));
    /* a batch of 3 copies of a (broadcast batch) times b^T^T */
    int s3[3] = {3, M, K};
    mlx_array a3 = {lc_broadcast_to(a.ctx, 3, s3)};
    CHECK_OK(mlx_matmul(&r, a3, b, s));
    CHECK_SHAPE(r, 3, M, N);
    ref_matmul(av, 1, M, bv, 1, K, M, K, N, ref);
    double ref3[3 * M * N];
    for (int i = 0; i < 3; i++) memcpy(ref3 + i * M * N, ref, sizeof ref);
    CHECK_CLOSE(r, ref3, (size_t)(3 * M * N), tol_for(t, K), tol_for(t, K));
    free(av);
    free(bv);
    free(rv);
    mlx_array_free(a3);
    mlx_array_free(bb);
    mlx_array_free(xr);
    mlx_array_free(a);
    mlx_array_free(b);
    mlx_array_free(xat);
    mlx_array_free(xbt);
    mlx_array_free(r);
  }
}

static void test_special(void) {
  mlx_stream s = test_stream();
  mlx_array r = mlx_array_new();
  /* K = 0: zeros; addmm with K = 0: beta * c */
  int sa[2] = {3, 0}, sb[2] = {0, 4};
  mlx_array a = mlx_array_new_data(NULL, sa, 2, MLX_FLOAT32);
  mlx_array b = mlx_array_new_data(NULL, sb, 2, MLX_FLOAT32);
  CHECK_OK(mlx_matmul(&r, a, b, s));
  CHECK_SHAPE(r, 3, 4);
  double z[12] = {0};
  CHECK_CLOSE(r, z, 12, 0, 0);
  mlx_array c = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_addmm(&r, c, a, b, 1.0f, 3.0f, s));
  double six[12];
  for (int i = 0; i < 12; i++) six[i] = 6;
  CHECK_CLOSE(r, six, 12, 0, 0);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(c);

  /* complex values: (1+2i)(3-i) = 5+5i */
  mlx_array x = mlx_array_new_complex(1, 2), y = mlx_array_new_complex(3, -1);
  int one[2] = {1, 1};
  mlx_array x2 = mlx_array_new(), y2 = mlx_array_new();
  x2 = (mlx_array){lc_broadcast_to(x.ctx, 2, one)};
  y2 = (mlx_array){lc_broadcast_to(y.ctx, 2, one)};
  CHECK_OK(mlx_matmul(&r, x2, y2, s));
  mlx_complex64_t v = 0;
  CHECK_OK(mlx_array_item_complex64(&v, r));
  CHECK(crealf(v) == 5.0f && cimagf(v) == 5.0f);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(x2);
  mlx_array_free(y2);

  /* outer and 0-d inner keep exact types, like MLX's multiply */
  int32_t ia[3] = {1, -2, 3}, ib[2] = {4, 5};
  int s3[1] = {3}, s2[1] = {2};
  mlx_array ai = mlx_array_new_data(ia, s3, 1, MLX_INT32), bi = mlx_array_new_data(ib, s2, 1, MLX_INT32);
  CHECK_OK(mlx_outer(&r, ai, bi, s));
  CHECK(mlx_array_dtype(r) == MLX_INT32);
  double ro[6] = {4, 5, -8, -10, 12, 15};
  CHECK_CLOSE(r, ro, 6, 0, 0);
  mlx_array sc = mlx_array_new_int(3);
  CHECK_OK(mlx_inner(&r, sc, ai, s));
  CHECK_SHAPE(r, 3);
  double r3[3] = {3, -6, 9};
  CHECK_CLOSE(r, r3, 3, 0, 0);

  /* errors */
  CHECK_FAILS(mlx_matmul(&r, ai, bi, s), "must match");
  CHECK_FAILS(mlx_matmul(&r, ai, ai, s), "only inexact types");
  CHECK_FAILS(mlx_matmul(&r, sc, ai, s), "0 dimension");
  CHECK_FAILS(mlx_inner(&r, ai, bi, s), "same last dimension");
  int ax[1] = {0}, bx[1] = {0};
  mlx_array af = mlx_array_new(), bf = mlx_array_new();
  mlx_astype(&af, ai, MLX_FLOAT32, s);
  mlx_astype(&bf, bi, MLX_FLOAT32, s);
  CHECK_FAILS(mlx_tensordot(&r, af, bf, ax, 1, bx, 1, s), "same shape on the contracted axes");
  CHECK_FAILS(mlx_tensordot(&r, af, bf, ax, 1, bx, 0, s), "same size");
  int bad[1] = {3};
  CHECK_FAILS(mlx_tensordot(&r, af, af, bad, 1, ax, 1, s), "out of bounds");
  CHECK_FAILS(mlx_tensordot_axis(&r, af, af, 2, s), "axis 2");
  CHECK_FAILS(mlx_tensordot_axis(&r, af, af, -1, s), "greater or equal");
  CHECK_OK(mlx_tensordot_axis(&r, af, af, 1, s));
  double dot = 1 + 4 + 9;
  CHECK_CLOSE(r, &dot, 1, 0, 0);
  int s23[2] = {2, 3};
  mlx_array m23 = mlx_array_new_data(NULL, s23, 2, MLX_FLOAT32), cbad = mlx_array_new();
  mlx_zeros(&cbad, s2, 1, MLX_FLOAT32, s);
  int s33[2] = {3, 3};
  mlx_array m33 = mlx_array_new();
  mlx_ones(&m33, s33, 2, MLX_FLOAT32, s);
  CHECK_FAILS(mlx_addmm(&r, cbad, m33, m33, 1, 1, s), "cannot broadcast");
  CHECK_FAILS(mlx_matmul(&r, mlx_array_new(), m33, s), "empty");
  mlx_array_free(m23);
  mlx_array_free(cbad);
  mlx_array_free(m33);
  mlx_array_free(af);
  mlx_array_free(bf);
  mlx_array_free(sc);
  mlx_array_free(ai);
  mlx_array_free(bi);
  mlx_array_free(r);
}

/* Views from the public shape ops: swapaxes (batched Trans), strided
 * slices (packed), against a reference on the same values. */
static void test_public_views(void) {
  mlx_stream s = test_stream();
  const int B = 3, M = 9, K = 13, N = 7;
  int sbkm[3] = {B, K, M}, skn2[2] = {K, 2 * N};
  mlx_array x = test_rand_f32(sbkm, 3, -1, 1), y = test_rand_f32(skn2, 2, -1, 1);
  mlx_array a = mlx_array_new(), b = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_swapaxes(&a, x, 1, 2, s)); /* (B, M, K), each matrix transposed */
  int st[2] = {0, 1}, sp[2] = {K, 2 * N}, step[2] = {1, 2};
  CHECK_OK(mlx_slice(&b, y, st, 2, sp, 2, step, 2, s)); /* (K, N), column stride 2 */
  CHECK_OK(mlx_matmul(&r, a, b, s));
  CHECK_SHAPE(r, B, M, N);
  double *xv = test_values(x), *yv = test_values(y), ref[B * M * N];
  for (int bi = 0; bi < B; bi++)
    ref_matmul(xv + bi * K * M, 1, M, yv + 1, 2 * N, 2, M, K, N, ref + bi * M * N);
  CHECK_CLOSE(r, ref, (size_t)(B * M * N), 1e-5, 1e-5);
  /* addmm on the same views, c a broadcast row */
  float crow[N];
  for (int j = 0; j < N; j++) crow[j] = (float)j;
  int sn[1] = {N};
  mlx_array c = mlx_array_new_data(crow, sn, 1, MLX_FLOAT32);
  CHECK_OK(mlx_addmm(&r, c, a, b, -0.5f, 2.0f, s));
  for (int i = 0; i < B * M * N; i++) ref[i] = -0.5 * ref[i] + 2.0 * (i % N);
  CHECK_CLOSE(r, ref, (size_t)(B * M * N), 1e-5, 1e-5);
  free(xv);
  free(yv);
  mlx_array_free(c);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

static void test_gather_mm(void) {
  mlx_stream s = test_stream();
  const int E = 4, F = 2, M = 3, K = 5, N = 6;
  int sa[3] = {E, M, K}, sb[3] = {F, K, N};
  mlx_array a = test_rand_f32(sa, 3, -1, 1), b = test_rand_f32(sb, 3, -1, 1), r = mlx_array_new();
  double *av = test_values(a), *bv = test_values(b);
  int32_t li[3] = {3, 0, 3}, ri[2] = {1, 0};
  int s3[1] = {3}, s21[2] = {2, 1};
  mlx_array lix = mlx_array_new_data(li, s3, 1, MLX_INT32), rix = mlx_array_new_data(ri, s21, 2, MLX_INT32);
  CHECK_OK(mlx_gather_mm(&r, a, b, lix, rix, false, s));
  CHECK_SHAPE(r, 2, 3, M, N);
  double ref[2 * 3 * M * N];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      ref_matmul(av + li[j] * M * K, K, 1, bv + ri[i] * K * N, N, 1, M, K, N,
                 ref + (i * 3 + j) * M * N);
  CHECK_CLOSE(r, ref, (size_t)(2 * 3 * M * N), 1e-5, 1e-5);
  /* no lhs indices: a's batch in order (a has 2 matrices here) */
  int sa2[3] = {2, M, K};
  mlx_array a2 = test_rand_f32(sa2, 3, -1, 1), none = mlx_array_new();
  double *a2v = test_values(a2);
  int32_t r2[2] = {1, 1};
  int s2[1] = {2};
  mlx_array r2x = mlx_array_new_data(r2, s2, 1, MLX_INT32);
  CHECK_OK(mlx_gather_mm(&r, a2, b, none, r2x, true, s));
  CHECK_SHAPE(r, 2, M, N);
  for (int i = 0; i < 2; i++)
    ref_matmul(a2v + i * M * K, K, 1, bv + K * N, N, 1, M, K, N, ref + i * M * N);
  CHECK_CLOSE(r, ref, (size_t)(2 * M * N), 1e-5, 1e-5);
  /* no indices at all: plain matmul */
  CHECK_OK(mlx_gather_mm(&r, a2, b, none, none, false, s));
  CHECK_SHAPE(r, 2, M, N);
  /* out-of-range index fails at evaluation; float indices are refused */
  int32_t bad[1] = {7};
  int s1[1] = {1};
  mlx_array bx = mlx_array_new_data(bad, s1, 1, MLX_INT32);
  CHECK_OK(mlx_gather_mm(&r, a, b, bx, rix, false, s));
  CHECK_FAILS(mlx_array_eval(r), "out of range");
  mlx_array fi = mlx_array_new_float(1.0f);
  CHECK_FAILS(mlx_gather_mm(&r, a, b, fi, rix, false, s), "integral");
  mlx_array_free(fi);
  mlx_array_free(bx);
  free(av);
  free(bv);
  free(a2v);
  mlx_array_free(r2x);
  mlx_array_free(a2);
  mlx_array_free(lix);
  mlx_array_free(rix);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

static void test_segmented_mm(void) {
  mlx_stream s = test_stream();
  const int M = 4, K = 10, N = 3;
  int sat[2] = {K, M}, sb[2] = {K, N};
  mlx_array at = test_rand_f32(sat, 2, -1, 1), b = test_rand_f32(sb, 2, -1, 1);
  mlx_array a = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_transpose(&a, at, s)); /* (M, K) with column stride M */
  double *atv = test_values(at), *bv = test_values(b);
  int32_t seg[8] = {0, 4, 4, 10, 2, 2, 0, 10};
  int ss[3] = {2, 2, 2};
  mlx_array sg = mlx_array_new_data(seg, ss, 3, MLX_INT32);
  CHECK_OK(mlx_segmented_mm(&r, a, b, sg, s));
  CHECK_SHAPE(r, 2, 2, M, N);
  double ref[4 * M * N];
  for (int i = 0; i < 4; i++) {
    int k0 = seg[2 * i], k1 = seg[2 * i + 1];
    if (k1 <= k0) {
      for (int j = 0; j < M * N; j++) ref[i * M * N + j] = 0;
      continue;
    }
    ref_matmul(atv + k0 * M, 1, M, bv + k0 * N, N, 1, M, k1 - k0, N, ref + i * M * N);
  }
  CHECK_CLOSE(r, ref, (size_t)(4 * M * N), 1e-5, 1e-5);
  int32_t bad[2] = {3, 11};
  int s2[1] = {2};
  mlx_array bs = mlx_array_new_data(bad, s2, 1, MLX_INT32);
  CHECK_OK(mlx_segmented_mm(&r, a, b, bs, s));
  CHECK_FAILS(mlx_array_eval(r), "out of range");
  int s3[1] = {3};
  mlx_array b3 = mlx_array_new_data(seg, s3, 1, MLX_INT32);
  CHECK_FAILS(mlx_segmented_mm(&r, a, b, b3, s), "(..., 2)");
  float fseg[2] = {0, 1};
  mlx_array fs = mlx_array_new_data(fseg, s2, 1, MLX_FLOAT32);
  CHECK_FAILS(mlx_segmented_mm(&r, a, b, fs, s), "integral");
  CHECK_FAILS(mlx_segmented_mm(&r, sg, b, bs, s), "2-d");
  mlx_array_free(fs);
  free(atv);
  free(bv);
  mlx_array_free(b3);
  mlx_array_free(bs);
  mlx_array_free(sg);
  mlx_array_free(at);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

static void test_block_masked_mm(void) {
  mlx_stream s = test_stream();
  const int B = 2, M = 70, K = 40, N = 50, bs = 32, tm = 3, tk = 2, tn = 2;
  int sa[3] = {B, M, K}, sb[2] = {K, N};
  mlx_array a = test_rand_f32(sa, 3, -1, 1), b = test_rand_f32(sb, 2, -1, 1), r = mlx_array_new();
  bool ml[12], mo[6];
  float mr[4] = {0.5f, -2.0f, 1.0f, 3.0f};
  for (int i = 0; i < B * tm * tk; i++) ml[i] = test_randint(0, 3) != 0;
  for (int i = 0; i < tm * tn; i++) mo[i] = test_randint(0, 3) != 0;
  int sml[3] = {B, tm, tk}, smr[2] = {tk, tn}, smo[2] = {tm, tn};
  mlx_array xml = mlx_array_new_data(ml, sml, 3, MLX_BOOL), xmr = mlx_array_new_data(mr, smr, 2, MLX_FLOAT32),
            xmo = mlx_array_new_data(mo, smo, 2, MLX_BOOL);
  CHECK_OK(mlx_block_masked_mm(&r, a, b, bs, xmo, xml, xmr, s));
  CHECK_SHAPE(r, B, M, N);
  double *av = test_values(a), *bv = test_values(b);
  double *ref = malloc(sizeof(double) * B * M * N);
  for (int bi = 0; bi < B; bi++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double acc = 0;
        for (int k = 0; k < K; k++) {
          double x = ml[(bi * tm + i / bs) * tk + k / bs] ? av[(bi * M + i) * K + k] : 0;
          acc += x * bv[k * N + j] * mr[(k / bs) * tn + j / bs];
        }
        ref[(bi * M + i) * N + j] = mo[(i / bs) * tn + j / bs] ? acc : 0;
      }
  CHECK_CLOSE(r, ref, (size_t)(B * M * N), 1e-5, 1e-5);
  /* no masks: matmul; errors */
  mlx_array none = mlx_array_new();
  CHECK_OK(mlx_block_masked_mm(&r, a, b, bs, none, none, none, s));
  CHECK_SHAPE(r, B, M, N);
  CHECK_FAILS(mlx_block_masked_mm(&r, a, b, 16, xmo, none, none, s), "32 and 64");
  CHECK_FAILS(mlx_block_masked_mm(&r, a, b, bs, xmr, none, none, s), "broadcast");
  free(ref);
  free(av);
  free(bv);
  mlx_array_free(xml);
  mlx_array_free(xmr);
  mlx_array_free(xmo);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_fixtures();
  test_views();
  test_public_views();
  test_gather_mm();
  test_segmented_mm();
  test_block_masked_mm();
  test_special();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
