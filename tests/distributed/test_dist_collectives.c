/* Collectives against values computed locally: every rank can build every
 * other rank's input (inputs are a function of the rank), so each checks
 * its result without trusting MPI. Runs in any world: plain (the singleton
 * group: collectives are identities, send/recv errors) and under
 * `mpirun -np 2` / `-np 3` (tests/distributed/CMakeLists.txt). */
#include <complex.h>

#include "test.h"

#include "core/node.h"
#include "transforms/fn.h"

static mlx_distributed_group G;
static int RANK, SIZE;

static const mlx_dtype ALL_DTYPES[] = {
    MLX_BOOL,  MLX_UINT8, MLX_UINT16,  MLX_UINT32,   MLX_UINT64,  MLX_INT8,    MLX_INT16,
    MLX_INT32, MLX_INT64, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT32, MLX_FLOAT64, MLX_COMPLEX64};
#define NDT (int)(sizeof ALL_DTYPES / sizeof ALL_DTYPES[0])

static bool is_float(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64;
}
static bool is_unsigned(mlx_dtype t) {
  return t == MLX_UINT8 || t == MLX_UINT16 || t == MLX_UINT32 || t == MLX_UINT64;
}

/* Rank r's input value i for dtype t (before rounding to t). */
static double value(mlx_dtype t, int r, int i, int salt) {
  test_seed((uint64_t)(r * 1000003 + i * 7919 + salt * 104729 + (int)t * 31 + 1));
  uint64_t h = test_rand_u64();
  if (t == MLX_BOOL) return (double)(h % 2);
  if (is_unsigned(t)) return (double)(h % 60);
  if (!is_float(t) && t != MLX_COMPLEX64) return (double)(int)(h % 40) - 20;
  return test_uniform(-2, 2);
}

/* Rank r's input of dtype t and the given shape (complex: real parts
 * value(), imaginary parts value() of another salt). */
static mlx_array input(mlx_dtype t, int r, const int *shape, int ndim, int salt) {
  int n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  if (t == MLX_COMPLEX64) {
    float _Complex *c = malloc(sizeof *c * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
      c[i] = (float)value(t, r, i, salt) + I * (float)value(t, r, i, salt + 77);
    mlx_array a = mlx_array_new_data(c, shape, ndim, MLX_COMPLEX64);
    free(c);
    return a;
  }
  double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) v[i] = value(t, r, i, salt);
  mlx_array f = mlx_array_new_data(v, shape, ndim, MLX_FLOAT64), a = mlx_array_new();
  free(v);
  mlx_astype(&a, f, t, test_stream());
  mlx_array_free(f);
  return a;
}

/* Values of an array as doubles (real part for complex). */
static double *vals(mlx_array a) {
  mlx_array_eval(a);
  return test_values(a);
}

static float _Complex *cvals(mlx_array a) {
  mlx_array_eval(a);
  size_t n = mlx_array_size(a);
  float _Complex *out = malloc(sizeof *out * (n ? n : 1));
  const mlx_complex64_t *p = mlx_array_data_complex64(a);
  for (size_t i = 0; p && i < n; i++) out[i] = p[i];
  return out;
}

typedef int (*coll_fn)(mlx_array *, const mlx_array, const mlx_distributed_group, const mlx_stream);

static bool c_greater(float _Complex a, float _Complex b) {
  return crealf(a) > crealf(b) || (crealf(a) == crealf(b) && cimagf(a) > cimagf(b));
}

/* all_sum/max/min (which = 0, 1, 2) of dtype t on shape [5, 7]. */
static void check_reduce(mlx_dtype t, int which) {
  static const coll_fn fns[] = {mlx_distributed_all_sum, mlx_distributed_all_max,
                                mlx_distributed_all_min};
  int shape[] = {5, 7}, n = 35;
  mlx_array x = input(t, RANK, shape, 2, which), r = mlx_array_new();
  CHECK_OK(fns[which](&r, x, G, test_stream()));
  CHECK_OK(mlx_array_eval(r));
  CHECK(mlx_array_dtype(r) == t);
  CHECK_SHAPE(r, 5, 7);
  if (t == MLX_COMPLEX64) {
    float _Complex *got = cvals(r), *want = cvals(x);
    for (int q = 0; q < SIZE; q++) {
      if (q == RANK) continue;
      mlx_array y = input(t, q, shape, 2, which);
      float _Complex *o = cvals(y);
      for (int i = 0; i < n; i++) {
        if (which == 0)
          want[i] += o[i];
        else if (which == 1 ? c_greater(o[i], want[i]) : c_greater(want[i], o[i]))
          want[i] = o[i];
      }
      free(o);
      mlx_array_free(y);
    }
    int bad = 0;
    for (int i = 0; i < n; i++) bad += cabsf(got[i] - want[i]) > 1e-5f * (1 + cabsf(want[i]));
    CHECK_MSG(!bad, "complex64 %s: %d elements differ", which == 0 ? "sum" : "max/min", bad);
    free(got);
    free(want);
  } else {
    double *want = vals(x);
    for (int q = 0; q < SIZE; q++) {
      if (q == RANK) continue;
      mlx_array y = input(t, q, shape, 2, which);
      double *o = vals(y);
      for (int i = 0; i < n; i++) {
        bool max = which == 1 || (which == 0 && t == MLX_BOOL); /* bool sum: or */
        if (which == 0 && t != MLX_BOOL)
          want[i] += o[i];
        else if (max ? o[i] > want[i] : o[i] < want[i])
          want[i] = o[i];
      }
      free(o);
      mlx_array_free(y);
    }
    double tol = t == MLX_FLOAT16 ? 8e-3 : t == MLX_BFLOAT16 ? 5e-2 : t == MLX_FLOAT32 ? 1e-6 : 0;
    if (which) tol = 0;
    CHECK_CLOSE(r, want, (size_t)n, tol, tol);
    free(want);
  }
  mlx_array_free(x);
  mlx_array_free(r);
}

/* all_gather of a [3, 2] array and of a 0-d array. */
static void check_gather(mlx_dtype t) {
  int shape[] = {3, 2};
  mlx_array x = input(t, RANK, shape, 2, 5), r = mlx_array_new();
  CHECK_OK(mlx_distributed_all_gather(&r, x, G, test_stream()));
  CHECK_SHAPE(r, 3 * SIZE, 2);
  mlx_array s = input(t, RANK, NULL, 0, 6), rs = mlx_array_new();
  CHECK_OK(mlx_distributed_all_gather(&rs, s, G, test_stream()));
  if (SIZE > 1) CHECK_SHAPE(rs, SIZE);
  double *want = malloc(sizeof(double) * (size_t)(6 * SIZE)),
         *want0 = malloc(sizeof(double) * (size_t)SIZE);
  for (int q = 0; q < SIZE; q++) {
    mlx_array y = input(t, q, shape, 2, 5), y0 = input(t, q, NULL, 0, 6);
    double *o = vals(y), *o0 = vals(y0);
    memcpy(want + 6 * q, o, sizeof(double) * 6);
    want0[q] = o0[0];
    free(o);
    free(o0);
    mlx_array_free(y);
    mlx_array_free(y0);
  }
  CHECK_OK(mlx_array_eval(r));
  CHECK_CLOSE(r, want, (size_t)(6 * SIZE), 0, 0);
  CHECK_CLOSE(rs, want0, (size_t)SIZE, 0, 0);
  free(want);
  free(want0);
  mlx_array_free(x);
  mlx_array_free(r);
  mlx_array_free(s);
  mlx_array_free(rs);
}

/* sum_scatter of a [2 * size, 3] array: this rank's 2 rows of the sum. */
static void check_scatter(mlx_dtype t) {
  int shape[] = {2 * SIZE, 3};
  mlx_array x = input(t, RANK, shape, 2, 9), r = mlx_array_new();
  CHECK_OK(mlx_distributed_sum_scatter(&r, x, G, test_stream()));
  CHECK_SHAPE(r, 2, 3);
  double want[6] = {0};
  for (int q = 0; q < SIZE; q++) {
    mlx_array y = input(t, q, shape, 2, 9);
    double *o = vals(y);
    for (int i = 0; i < 6; i++) want[i] += o[6 * RANK + i];
    free(o);
    mlx_array_free(y);
  }
  CHECK_OK(mlx_array_eval(r));
  CHECK_CLOSE(r, want, 6, t == MLX_FLOAT32 ? 1e-6 : 0, t == MLX_FLOAT32 ? 1e-6 : 0);
  mlx_array_free(x);
  mlx_array_free(r);
}

/* A non-contiguous input (a transposed view) and an input that is an
 * intermediate (donated to the output). */
static void check_layouts(void) {
  int shape[] = {4, 6};
  mlx_array x = input(MLX_FLOAT32, RANK, shape, 2, 11), xt = mlx_array_new(), r = mlx_array_new();
  mlx_transpose(&xt, x, test_stream());
  mlx_array_eval(xt);
  CHECK_OK(mlx_distributed_all_sum(&r, xt, G, test_stream()));
  mlx_array g = mlx_array_new();
  CHECK_OK(mlx_distributed_all_gather(&g, xt, G, test_stream()));
  double want[24] = {0}, *wg = calloc((size_t)(24 * SIZE), sizeof(double));
  for (int q = 0; q < SIZE; q++) {
    mlx_array y = input(MLX_FLOAT32, q, shape, 2, 11);
    double *o = vals(y);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 4; j++) {
        want[i * 4 + j] += o[j * 6 + i];
        wg[24 * q + i * 4 + j] = o[j * 6 + i];
      }
    free(o);
    mlx_array_free(y);
  }
  CHECK_OK(mlx_array_eval(r));
  CHECK_CLOSE(r, want, 24, 1e-6, 1e-6);
  CHECK_OK(mlx_array_eval(g));
  CHECK_CLOSE(g, wg, (size_t)(24 * SIZE), 0, 0);
  /* x * 2 is used only by the all_sum: its buffer becomes the output */
  mlx_array two = mlx_array_new_float(2), x2 = mlx_array_new(), r2 = mlx_array_new();
  mlx_multiply(&x2, x, two, test_stream());
  CHECK_OK(mlx_distributed_all_sum(&r2, x2, G, test_stream()));
  mlx_array_free(x2);
  CHECK_OK(mlx_array_eval(r2));
  double w2[24];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 4; j++) w2[j * 6 + i] = 2 * want[i * 4 + j];
  CHECK_CLOSE(r2, w2, 24, 1e-6, 1e-6);
  free(wg);
  mlx_array_free(two);
  mlx_array_free(r2);
  mlx_array_free(x);
  mlx_array_free(xt);
  mlx_array_free(r);
  mlx_array_free(g);
}

/* Ring exchange: rank r sends to r+1 and receives from r-1; even ranks
 * send first, odd ranks receive first (blocking sends). */
static void check_send_recv(void) {
  int shape[] = {3, 4};
  mlx_array x = input(MLX_FLOAT32, RANK, shape, 2, 13), s = mlx_array_new(), r = mlx_array_new();
  int dst = (RANK + 1) % SIZE, src = (RANK + SIZE - 1) % SIZE;
  CHECK_OK(mlx_distributed_send(&s, x, dst, G, test_stream()));
  CHECK_OK(mlx_distributed_recv_like(&r, x, src, G, test_stream()));
  if (RANK % 2 == 0) {
    CHECK_OK(mlx_array_eval(s));
    CHECK_OK(mlx_array_eval(r));
  } else {
    CHECK_OK(mlx_array_eval(r));
    CHECK_OK(mlx_array_eval(s));
  }
  double *mine = vals(x);
  CHECK_CLOSE(s, mine, 12, 0, 0); /* send's value is its input */
  mlx_array y = input(MLX_FLOAT32, src, shape, 2, 13);
  double *theirs = vals(y);
  CHECK_CLOSE(r, theirs, 12, 0, 0);
  free(mine);
  free(theirs);
  mlx_array_free(y);
  /* recv with an explicit shape and dtype, int64 */
  if (SIZE >= 2) {
    int sh[] = {5};
    mlx_array xi = input(MLX_INT64, RANK, sh, 1, 14), si = mlx_array_new(), ri = mlx_array_new();
    if (RANK == 0) {
      CHECK_OK(mlx_distributed_send(&si, xi, 1, G, test_stream()));
      CHECK_OK(mlx_array_eval(si));
    } else if (RANK == 1) {
      CHECK_OK(mlx_distributed_recv(&ri, sh, 1, MLX_INT64, 0, G, test_stream()));
      CHECK_OK(mlx_array_eval(ri));
      mlx_array y0 = input(MLX_INT64, 0, sh, 1, 14);
      double *w = vals(y0);
      CHECK_CLOSE(ri, w, 5, 0, 0);
      free(w);
      mlx_array_free(y0);
    }
    mlx_array_free(xi);
    mlx_array_free(si);
    mlx_array_free(ri);
  }
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(r);
}

/* Errors detected locally, before anything reaches MPI. */
static void check_local_errors(void) {
  int shape[] = {2 * SIZE + 1, 3}, bad[] = {-1};
  mlx_array x = input(MLX_FLOAT32, RANK, shape, 2, 15), r = mlx_array_new();
  mlx_array s0 = mlx_array_new_float(1);
  mlx_distributed_group empty = mlx_distributed_group_new();
  if (SIZE == 1) {
    CHECK_FAILS(mlx_distributed_send(&r, x, 0, G, test_stream()), "singleton");
    CHECK_FAILS(mlx_distributed_recv_like(&r, x, 0, G, test_stream()), "singleton");
    mlx_distributed_group sub = mlx_distributed_group_new();
    CHECK_FAILS(mlx_distributed_group_split(&sub, G, 0, 0), "Cannot split");
  } else {
    CHECK_FAILS(mlx_distributed_send(&r, x, SIZE, G, test_stream()), "Invalid destination");
    CHECK_FAILS(mlx_distributed_send(&r, x, -1, G, test_stream()), "Invalid destination");
    CHECK_FAILS(mlx_distributed_send(&r, x, RANK, G, test_stream()), "itself");
    CHECK_FAILS(mlx_distributed_recv_like(&r, x, SIZE + 3, G, test_stream()), "Invalid source");
    CHECK_FAILS(mlx_distributed_sum_scatter(&r, x, G, test_stream()), "divisible");
    CHECK_FAILS(mlx_distributed_sum_scatter(&r, s0, G, test_stream()), "divisible");
  }
  CHECK_FAILS(mlx_distributed_recv(&r, bad, 1, MLX_FLOAT32, 0, G, test_stream()), "");
  CHECK_FAILS(mlx_distributed_recv(&r, NULL, 1, MLX_FLOAT32, 0, G, test_stream()), "");
  CHECK_FAILS(mlx_distributed_all_sum(&r, mlx_array_new(), G, test_stream()), "empty");
  CHECK_FAILS(mlx_distributed_all_sum(NULL, x, G, test_stream()), "NULL");
  CHECK_FAILS(mlx_distributed_group_split(&empty, empty, 0, 0), "non-empty");
  CHECK(mlx_distributed_group_size(empty) == 0 && test_last_error[0]);
  CHECK_FAILS(mlx_distributed_init(&empty, false, "carrier-pigeon"), "only valid values");
  CHECK_FAILS(mlx_distributed_init(&empty, true, "ring"), "not available");
  CHECK(!mlx_distributed_is_available("nccl") && !mlx_distributed_is_available("bogus"));
  CHECK(r.ctx == NULL); /* failures leave res as it was */
  mlx_array_free(x);
  mlx_array_free(s0);
  mlx_array_free(r);
}

/* Arrays that differ across ranks: reported on every rank, no hang. */
static void check_mismatch(void) {
  if (SIZE == 1) return;
  int shape[] = {RANK == 0 ? 4 : 5};
  mlx_array x = input(MLX_FLOAT32, RANK, shape, 1, 16), r = mlx_array_new();
  CHECK_OK(mlx_distributed_all_sum(&r, x, G, test_stream()));
  CHECK_FAILS(mlx_array_eval(r), "disagree");
  mlx_array_free(x);
  mlx_array_free(r);
  int same[] = {4};
  x = input(RANK == 0 ? MLX_FLOAT32 : MLX_INT32, RANK, same, 1, 16);
  r = mlx_array_new();
  CHECK_OK(mlx_distributed_all_gather(&r, x, G, test_stream()));
  CHECK_FAILS(mlx_array_eval(r), "disagree");
  mlx_array_free(x);
  mlx_array_free(r);
  /* a message of the wrong size: rank 0 sends 5 elements, rank 1 expects 4 */
  int five[] = {5}, four[] = {4};
  if (RANK <= 1) {
    x = input(MLX_FLOAT32, RANK, RANK == 0 ? five : four, 1, 17);
    r = mlx_array_new();
    if (RANK == 0) {
      CHECK_OK(mlx_distributed_send(&r, x, 1, G, test_stream()));
      CHECK_OK(mlx_array_eval(r));
    } else {
      CHECK_OK(mlx_distributed_recv_like(&r, x, 0, G, test_stream()));
      CHECK_FAILS(mlx_array_eval(r), "MPI_Recv");
    }
    mlx_array_free(x);
    mlx_array_free(r);
  }
  /* the world still works afterwards */
  mlx_array one = mlx_array_new_float(1), s = mlx_array_new();
  CHECK_OK(mlx_distributed_all_sum(&s, one, G, test_stream()));
  float v = 0;
  CHECK_OK(mlx_array_item_float32(&v, s));
  CHECK(v == (float)SIZE);
  mlx_array_free(one);
  mlx_array_free(s);
}

/* Sub-groups: even and odd ranks, in reverse order of rank. */
static void check_split(void) {
  if (SIZE == 1) return;
  mlx_distributed_group sub = mlx_distributed_group_new();
  CHECK_OK(mlx_distributed_group_split(&sub, G, RANK % 2, SIZE - RANK));
  int members = (SIZE + (RANK % 2 ? 0 : 1)) / 2, higher = 0;
  for (int q = RANK + 2; q < SIZE; q += 2) higher++;
  CHECK(mlx_distributed_group_size(sub) == members);
  CHECK(mlx_distributed_group_rank(sub) == higher);
  mlx_array x = mlx_array_new_int(RANK + 1), r = mlx_array_new();
  CHECK_OK(mlx_distributed_all_sum(&r, x, sub, test_stream()));
  int want = 0;
  for (int q = RANK % 2; q < SIZE; q += 2) want += q + 1;
  double w = want;
  CHECK_OK(mlx_array_eval(r));
  CHECK_CLOSE(r, &w, 1, 0, 0);
  mlx_array_free(x);
  mlx_array_free(r);
  CHECK_OK(mlx_distributed_group_free(sub));
}

/* ---- transforms and compile ---- */

static int f_sum_times2_plus1(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new(), t = mlx_array_new(),
            one = mlx_array_new_float(1), two = mlx_array_new_float(2);
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_multiply(&t, x, two, test_stream()) ||
           mlx_distributed_all_sum(&s, t, G, test_stream()) || mlx_add(&t, s, one, test_stream());
  if (!rc) mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(t);
  mlx_array_free(one);
  mlx_array_free(two);
  return rc;
}

/* loss = sum(coll(x) * w) with w a function of the rank. */
static int which_coll;
static int f_loss(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), w = mlx_array_new(), c = mlx_array_new(), l = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&w, in, 1);
  int rc = which_coll == 0   ? mlx_distributed_all_sum(&c, x, G, test_stream())
           : which_coll == 1 ? mlx_distributed_all_gather(&c, x, G, test_stream())
                             : mlx_distributed_sum_scatter(&c, x, G, test_stream());
  rc = rc || mlx_multiply(&l, c, w, test_stream()) || mlx_sum(&c, l, false, test_stream());
  if (!rc) mlx_vector_array_append_value(*res, c);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(c);
  mlx_array_free(l);
  return rc;
}

static mlx_array grad_of(int coll, mlx_array x, mlx_array w) {
  which_coll = coll;
  mlx_closure f = mlx_closure_new_func(f_loss);
  mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
  int arg = 0;
  CHECK_OK(mlx_value_and_grad(&vg, f, &arg, 1));
  mlx_array xw[] = {x, w};
  mlx_vector_array in = mlx_vector_array_new_data(xw, 2), v = mlx_vector_array_new(),
                   g = mlx_vector_array_new();
  CHECK_OK(mlx_closure_value_and_grad_apply(&v, &g, vg, in));
  mlx_array r = mlx_array_new();
  mlx_vector_array_get(&r, g, 0);
  mlx_array_eval(r);
  mlx_vector_array_free(in);
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  mlx_closure_value_and_grad_free(vg);
  mlx_closure_free(f);
  return r;
}

static void check_transforms(void) {
  /* compiled: all_sum inside, twice with the same shapes (cache hit) */
  mlx_closure f = mlx_closure_new_func(f_sum_times2_plus1), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int shape[] = {3, 5};
  for (int rep = 0; rep < 2; rep++) {
    mlx_array x = input(MLX_FLOAT32, RANK, shape, 2, 20 + rep);
    mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    mlx_array r = mlx_array_new();
    mlx_vector_array_get(&r, out, 0);
    double want[15] = {0};
    for (int q = 0; q < SIZE; q++) {
      mlx_array y = input(MLX_FLOAT32, q, shape, 2, 20 + rep);
      double *o = vals(y);
      for (int i = 0; i < 15; i++) want[i] += 2 * o[i];
      free(o);
      mlx_array_free(y);
    }
    for (int i = 0; i < 15; i++) want[i] += 1;
    CHECK_OK(mlx_array_eval(r));
    CHECK_CLOSE(r, want, 15, 1e-6, 1e-6);
    mlx_array_free(r);
    mlx_array_free(x);
    mlx_vector_array_free(in);
    mlx_vector_array_free(out);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);

  /* vjp of all_sum: the cotangent itself (MLX's rule) */
  int sh[] = {4};
  mlx_array x = input(MLX_FLOAT32, RANK, sh, 1, 30), w = input(MLX_FLOAT32, RANK, sh, 1, 31);
  mlx_array g = grad_of(0, x, w);
  double *wv = vals(w);
  CHECK_CLOSE(g, wv, 4, 0, 0);
  free(wv);
  mlx_array_free(g);
  mlx_array_free(w);
  /* vjp of all_gather: this rank's block of the cotangent */
  int shw[] = {4 * SIZE};
  w = input(MLX_FLOAT32, RANK, shw, 1, 32);
  g = grad_of(1, x, w);
  wv = vals(w);
  CHECK_CLOSE(g, wv + 4 * RANK, 4, 0, 0);
  free(wv);
  mlx_array_free(g);
  mlx_array_free(w);
  mlx_array_free(x);
  /* vjp of sum_scatter: every rank's cotangent, gathered */
  int shx[] = {2 * SIZE, 3}, shc[] = {2, 3};
  x = input(MLX_FLOAT32, RANK, shx, 2, 33);
  w = input(MLX_FLOAT32, RANK, shc, 2, 34);
  g = grad_of(2, x, w);
  double *want = malloc(sizeof(double) * (size_t)(6 * SIZE));
  for (int q = 0; q < SIZE; q++) {
    mlx_array y = input(MLX_FLOAT32, q, shc, 2, 34);
    double *o = vals(y);
    memcpy(want + 6 * q, o, sizeof(double) * 6);
    free(o);
    mlx_array_free(y);
  }
  CHECK_CLOSE(g, want, (size_t)(6 * SIZE), 0, 0);
  CHECK_SHAPE(g, 2 * SIZE, 3);
  free(want);
  mlx_array_free(g);
  mlx_array_free(w);
  mlx_array_free(x);
}

/* vmap of all_gather over axis 0: each example gathered on its own. */
static int f_gather(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), r = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_distributed_all_gather(&r, x, G, test_stream());
  if (!rc) mlx_vector_array_append_value(*res, r);
  mlx_array_free(x);
  mlx_array_free(r);
  return rc;
}

static void check_vmap(void) {
  mlx_closure f = mlx_closure_new_func(f_gather);
  for (int scalar = 0; scalar < 2; scalar++) {
    int shape[] = {2, 3}, e = scalar ? 1 : 3;
    mlx_array x = input(MLX_FLOAT32, RANK, shape, scalar ? 1 : 2, 40);
    struct lc_node *xn = x.ctx, **outs = NULL;
    size_t nout = 0;
    int ax = 0;
    CHECK_OK(lc_fn_vmap(f.ctx, 1, &xn, &ax, NULL, 0, &outs, &nout));
    if (nout == 1) {
      mlx_array r = {outs[0]};
      CHECK_OK(mlx_array_eval(r));
      if (SIZE > 1) CHECK_SHAPE(r, 2, SIZE * e);
      double *want = malloc(sizeof(double) * (size_t)(2 * SIZE * e));
      for (int q = 0; q < SIZE; q++) {
        mlx_array y = input(MLX_FLOAT32, q, shape, scalar ? 1 : 2, 40);
        double *o = vals(y);
        for (int b = 0; b < 2; b++)
          for (int j = 0; j < e; j++) want[b * SIZE * e + q * e + j] = o[b * e + j];
        free(o);
        mlx_array_free(y);
      }
      CHECK_CLOSE(r, want, (size_t)(2 * SIZE * e), 0, 0);
      free(want);
      mlx_array_free(r);
    }
    free(outs);
    mlx_array_free(x);
  }
  mlx_closure_free(f);
}

static int f_allsum(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), r = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_distributed_all_sum(&r, x, G, test_stream());
  if (!rc) mlx_vector_array_append_value(*res, r);
  mlx_array_free(x);
  mlx_array_free(r);
  return rc;
}

/* jvp of all_sum: the tangents summed; all_gather compiled shapeless,
 * called on two shapes (output_shape of the gather). */
static void check_jvp_shapeless(void) {
  int sh[] = {6};
  mlx_array x = input(MLX_FLOAT32, RANK, sh, 1, 50), t = input(MLX_FLOAT32, RANK, sh, 1, 51);
  mlx_closure f = mlx_closure_new_func(f_allsum);
  mlx_vector_array px = mlx_vector_array_new_value(x), pt = mlx_vector_array_new_value(t),
                   o = mlx_vector_array_new(), ot = mlx_vector_array_new();
  CHECK_OK(mlx_jvp(&o, &ot, f, px, pt));
  mlx_array r = mlx_array_new();
  mlx_vector_array_get(&r, ot, 0);
  double want[6] = {0};
  for (int q = 0; q < SIZE; q++) {
    mlx_array y = input(MLX_FLOAT32, q, sh, 1, 51);
    double *v = vals(y);
    for (int i = 0; i < 6; i++) want[i] += v[i];
    free(v);
    mlx_array_free(y);
  }
  CHECK_OK(mlx_array_eval(r));
  CHECK_CLOSE(r, want, 6, 1e-6, 1e-6);
  mlx_array_free(r);
  mlx_vector_array_free(px);
  mlx_vector_array_free(pt);
  mlx_vector_array_free(o);
  mlx_vector_array_free(ot);
  mlx_closure_free(f);
  mlx_array_free(x);
  mlx_array_free(t);

  mlx_closure g = mlx_closure_new_func(f_gather), cg = mlx_closure_new();
  CHECK_OK(mlx_compile(&cg, g, true));
  for (int rows = 3; rows <= 5; rows += 2) {
    int shape[] = {rows, 2};
    mlx_array a = input(MLX_INT32, RANK, shape, 2, 52);
    mlx_vector_array in = mlx_vector_array_new_value(a), out = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cg, in));
    mlx_array res = mlx_array_new();
    mlx_vector_array_get(&res, out, 0);
    CHECK_OK(mlx_array_eval(res));
    CHECK_SHAPE(res, rows * SIZE, 2);
    double *w = malloc(sizeof(double) * (size_t)(2 * rows * SIZE));
    for (int q = 0; q < SIZE; q++) {
      mlx_array y = input(MLX_INT32, q, shape, 2, 52);
      double *v = vals(y);
      memcpy(w + 2 * rows * q, v, sizeof(double) * (size_t)(2 * rows));
      free(v);
      mlx_array_free(y);
    }
    CHECK_CLOSE(res, w, (size_t)(2 * rows * SIZE), 0, 0);
    free(w);
    mlx_array_free(res);
    mlx_array_free(a);
    mlx_vector_array_free(in);
    mlx_vector_array_free(out);
  }
  mlx_closure_free(cg);
  mlx_closure_free(g);
}

static void check_init(bool launched) {
  CHECK(mlx_distributed_is_available("mpi") == mlx_distributed_is_available("any"));
  CHECK(mlx_distributed_is_available(NULL) == mlx_distributed_is_available("any"));
  mlx_distributed_group g = mlx_distributed_group_new();
  if (launched) {
    CHECK_OK(mlx_distributed_init(&G, true, "mpi"));
    CHECK_OK(mlx_distributed_init(&g, false, NULL)); /* "any": the same world */
    CHECK(g.ctx == G.ctx);
  } else {
    if (mlx_distributed_is_available("mpi"))
      CHECK_FAILS(mlx_distributed_init(&g, true, "mpi"), "mpirun");
    else
      CHECK_FAILS(mlx_distributed_init(&g, true, "mpi"), "Cannot initialize MPI");
    CHECK_FAILS(mlx_distributed_init(&g, true, "any"), "Couldn't initialize");
    CHECK_OK(mlx_distributed_init(&G, false, "mpi"));
    CHECK_OK(mlx_distributed_init(&g, false, NULL));
    CHECK(mlx_distributed_group_size(g) == 1 && mlx_distributed_group_rank(g) == 0);
  }
  CHECK_OK(mlx_distributed_group_free(g));
  CHECK_OK(mlx_distributed_group_free(mlx_distributed_group_new()));
  RANK = mlx_distributed_group_rank(G);
  SIZE = mlx_distributed_group_size(G);
  const char *want = getenv("OMPI_COMM_WORLD_SIZE");
  CHECK(SIZE == (want ? atoi(want) : 1));
}

int main(void) {
  test_init();
  bool launched = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
  check_init(launched);
  if (test_failures) return test_done();
  size_t mem0 = test_active_memory();
  for (int k = 0; k < NDT; k++) {
    for (int which = 0; which < 3; which++) check_reduce(ALL_DTYPES[k], which);
    check_gather(ALL_DTYPES[k]);
  }
  check_scatter(MLX_FLOAT32);
  check_scatter(MLX_INT32);
  check_scatter(MLX_UINT8);
  check_layouts();
  if (SIZE > 1) check_send_recv();
  check_local_errors();
  check_mismatch();
  check_split();
  check_transforms();
  check_vmap();
  check_jvp_shapeless();
  CHECK_MSG(test_active_memory() <= mem0, "active memory grew from %zu to %zu", mem0,
            test_active_memory());
  CHECK_OK(mlx_distributed_group_free(G));
  if (test_failures) fprintf(stderr, "rank %d of %d\n", RANK, SIZE);
  return test_done();
}
