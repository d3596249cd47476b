/* Every unary float primitive gives the same bits whatever path its
 * kernel takes for an element: the vectorised body of a long contiguous
 * run, the scalar tail, a one-element call, a strided run and a broadcast
 * scalar (stride 0). Fused kernels rely on it: a row region computes
 * per-row values one element at a time where the uncompiled graph computes
 * them as one long run, and compiled results must match. Binary float
 * primitives likewise, with either operand broadcast. */
#include "test.h"

#include "ops/prim.h"

#define N 4099 /* not a multiple of any vector width: a scalar tail */

/* the unary primitives mapping float32 to float32 without params */
static const int ops[] = {
    LC_OP_ABS,     LC_OP_NEGATIVE, LC_OP_SIGN,    LC_OP_SQUARE,  LC_OP_SQRT,    LC_OP_RSQRT,
    LC_OP_EXP,     LC_OP_EXPM1,    LC_OP_LOG,     LC_OP_LOG1P,   LC_OP_LOG2,    LC_OP_LOG10,
    LC_OP_SIN,     LC_OP_COS,      LC_OP_TAN,     LC_OP_ARCSIN,  LC_OP_ARCCOS,  LC_OP_ARCTAN,
    LC_OP_SINH,    LC_OP_COSH,     LC_OP_TANH,    LC_OP_ARCSINH, LC_OP_ARCCOSH, LC_OP_ARCTANH,
    LC_OP_SIGMOID, LC_OP_ERF,      LC_OP_ERFINV,  LC_OP_FLOOR,   LC_OP_CEIL,    LC_OP_ROUND,
};

static const int binops[] = {LC_OP_ADD,       LC_OP_SUBTRACT,  LC_OP_MULTIPLY,
                              LC_OP_DIVIDE,    LC_OP_REMAINDER,
                              LC_OP_POWER,     LC_OP_MAXIMUM,   LC_OP_MINIMUM,
                              LC_OP_ARCTAN2,   LC_OP_LOGADDEXP};

/* Binary primitive k over (x, y): the contiguous run against one-element
 * calls, and against calls with x or y broadcast (stride 0). */
static int check_binary(int op, const float *x, const float *y) {
  const struct lc_prim *p = lc_prims[op];
  static float whole[N], r[4];
  const void *a[2] = {x, y};
  int64_t s11[2] = {1, 1}, s10[2] = {1, 0}, s01[2] = {0, 1};
  p->ew(N, whole, MLX_FLOAT32, a, s11, MLX_FLOAT32, NULL);
  int bad = 0;
  for (int i = 0; i < N && !bad; i++) {
    const void *b[2] = {x + i, y + i};
    p->ew(1, r, MLX_FLOAT32, b, s11, MLX_FLOAT32, NULL);
    if (i % 29 == 0) {
      p->ew(2, r + 1, MLX_FLOAT32, b, s01, MLX_FLOAT32, NULL); /* x broadcast: r[1] */
      r[2] = r[0];
      const void *c[2] = {x + i, y + i};
      p->ew(1, r + 3, MLX_FLOAT32, c, s10, MLX_FLOAT32, NULL);
    } else {
      r[1] = r[2] = r[3] = r[0];
    }
    for (int j = 0; j < 4; j++)
      if (memcmp(r + j, whole + i, 4)) {
        CHECK_MSG(0, "%s: path %d differs at (%.9g, %.9g)", p->name, j, (double)x[i], (double)y[i]);
        bad = 1;
        break;
      }
  }
  return !bad;
}

int main(void) {
  test_init();
  static float x[2 * N], whole[N], one[N], strided[N], bcast[3];
  test_seed(7);
  for (int i = 0; i < 2 * N; i++) {
    /* a spread of magnitudes and signs, some special values */
    double u = test_uniform(-1, 1);
    x[i] = (float)(u * pow(10.0, test_uniform(-3, 2)));
  }
  x[0] = 0.0f, x[1] = -0.0f, x[2] = INFINITY, x[3] = -INFINITY, x[4] = NAN, x[5] = 1e-40f;
  for (int i = 0; i < N; i++) x[2 * N - 1 - i] = x[i]; /* the strided run sees the same values */
  int checked = 0;
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    const struct lc_prim *p = lc_prims[ops[k]];
    if (!p->ew) continue;
    const void *a[1] = {x};
    int64_t s1[1] = {1}, s0[1] = {0}, s2[1] = {2};
    p->ew(N, whole, MLX_FLOAT32, a, s1, MLX_FLOAT32, NULL);
    int64_t bad_one = -1, bad_str = -1, bad_bc = -1;
    for (int i = 0; i < N; i++) {
      const void *b[1] = {x + i};
      p->ew(1, one + i, MLX_FLOAT32, b, s1, MLX_FLOAT32, NULL);
      if (memcmp(one + i, whole + i, 4) && bad_one < 0) bad_one = i;
      if (i % 37 == 0) { /* stride 0 over a few elements */
        p->ew(3, bcast, MLX_FLOAT32, b, s0, MLX_FLOAT32, NULL);
        for (int j = 0; j < 3; j++)
          if (memcmp(bcast + j, whole + i, 4) && bad_bc < 0) bad_bc = i;
      }
    }
    /* x[0], x[2], ... of the first N elements, through stride 2 */
    const void *c[1] = {x};
    p->ew(N, strided, MLX_FLOAT32, c, s2, MLX_FLOAT32, NULL);
    p->ew(N, whole, MLX_FLOAT32, a, s1, MLX_FLOAT32, NULL);
    static float evens[N];
    for (int i = 0; i < N; i++) evens[i] = x[(2 * i) % (2 * N)];
    static float ref[N];
    const void *e[1] = {evens};
    p->ew(N, ref, MLX_FLOAT32, e, s1, MLX_FLOAT32, NULL);
    for (int i = 0; i < N && bad_str < 0; i++)
      if (memcmp(strided + i, ref + i, 4)) bad_str = i;
    CHECK_MSG(bad_one < 0, "%s: one-element call differs at x=%.9g", p->name,
              bad_one < 0 ? 0.0 : (double)x[bad_one]);
    CHECK_MSG(bad_bc < 0, "%s: broadcast (stride 0) differs at x=%.9g", p->name,
              bad_bc < 0 ? 0.0 : (double)x[bad_bc]);
    CHECK_MSG(bad_str < 0, "%s: strided run differs at element %lld", p->name, (long long)bad_str);
    checked++;
  }
  CHECK_MSG(checked >= 30, "only %d unary primitives checked", checked);
  for (size_t k = 0; k < sizeof binops / sizeof binops[0]; k++)
    check_binary(binops[k], x, x + N);
  return test_done();
}
