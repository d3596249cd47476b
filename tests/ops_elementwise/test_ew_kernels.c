/* The ew kernel contract (src/ops/prim.h), which fused kernels rely on:
 * for every elementwise primitive, results do not depend on how inputs are
 * laid out: element stride 1, 2, -1, 0 (broadcast), or out being exactly
 * the input buffer (in place) all give the values of the contiguous run. */
#include "test.h"

#include "core/dtype.h"
#include "ops/prim.h"

enum { N = 301 }; /* odd, longer than a trig block, not a vector multiple */

static void fill(void *p, mlx_dtype t, int n, int op) {
  for (int i = 0; i < n; i++) {
    double v;
    if (t == MLX_BOOL) v = test_randint(0, 1);
    else if (lc_dtype_is_unsigned(t)) v = test_randint(0, 200);
    else if (lc_dtype_is_int(t)) v = test_randint(-100, 100);
    else v = test_uniform(-3, 3);
    if (op == LC_OP_ERFINV || op == LC_OP_ARCTANH) v = test_uniform(-0.99, 0.99);
    if ((op == LC_OP_LEFT_SHIFT || op == LC_OP_RIGHT_SHIFT) && lc_dtype_is_int(t)) v = test_randint(0, 9);
    if (i % 97 == 5 && lc_dtype_is_float(t)) v = 1e6; /* sin/cos slow path */
    lc_dtype_store((char *)p + (size_t)i * lc_dtype_size(t), t, v);
  }
}

static int same(const void *a, const void *b, mlx_dtype t, int n) {
  size_t sz = lc_dtype_size(t);
  for (int i = 0; i < n; i++) {
    double x = lc_dtype_load((const char *)a + i * sz, t), y = lc_dtype_load((const char *)b + i * sz, t);
    if (!(x == y || (isnan(x) && isnan(y)))) return 0;
  }
  return 1;
}

struct kcase {
  int op, nin;
  mlx_dtype in_dt, out_dt;
};

static void check_case(const struct kcase *c) {
  const struct lc_prim *p = lc_prims[c->op];
  size_t osz = lc_dtype_size(c->out_dt);
  char *in[3], *rev[3], *str[3], bcast_val[3][16];
  mlx_dtype dts[3];
  for (int k = 0; k < c->nin; k++) {
    dts[k] = (c->op == LC_OP_SELECT && k == 0) ? MLX_BOOL : c->in_dt;
    size_t sz = lc_dtype_size(dts[k]);
    in[k] = malloc(sz * N);
    rev[k] = malloc(sz * N);
    str[k] = calloc(2 * N, sz);
    fill(in[k], dts[k], N, c->op);
    for (int i = 0; i < N; i++) {
      memcpy(rev[k] + (size_t)(N - 1 - i) * sz, in[k] + (size_t)i * sz, sz);
      memcpy(str[k] + (size_t)(2 * i) * sz, in[k] + (size_t)i * sz, sz);
    }
    memcpy(bcast_val[k], in[k] + 7 * sz, sz);
  }
  char *ref = malloc(osz * N), *out = malloc(osz * N), *bref = malloc(osz * N);
  const void *ptrs[3];
  int64_t is[3];
  /* contiguous reference */
  for (int k = 0; k < c->nin; k++) ptrs[k] = in[k], is[k] = 1;
  p->ew(N, ref, c->out_dt, ptrs, is, c->in_dt, NULL);
  /* stride 2 */
  for (int k = 0; k < c->nin; k++) ptrs[k] = str[k], is[k] = 2;
  p->ew(N, out, c->out_dt, ptrs, is, c->in_dt, NULL);
  CHECK_MSG(same(ref, out, c->out_dt, N), "%s (%s): stride 2 differs", p->name, lc_dtype_name(c->in_dt));
  /* stride -1 (pointer at the last element of the reversed copy) */
  for (int k = 0; k < c->nin; k++)
    ptrs[k] = rev[k] + (size_t)(N - 1) * lc_dtype_size(dts[k]), is[k] = -1;
  p->ew(N, out, c->out_dt, ptrs, is, c->in_dt, NULL);
  CHECK_MSG(same(ref, out, c->out_dt, N), "%s (%s): stride -1 differs", p->name, lc_dtype_name(c->in_dt));
  /* each input broadcast (stride 0) in turn, against a filled contiguous copy */
  for (int b = 0; b < c->nin; b++) {
    size_t sz = lc_dtype_size(dts[b]);
    char *filled = malloc(sz * N);
    for (int i = 0; i < N; i++) memcpy(filled + (size_t)i * sz, bcast_val[b], sz);
    for (int k = 0; k < c->nin; k++) ptrs[k] = k == b ? (const void *)filled : in[k], is[k] = 1;
    p->ew(N, bref, c->out_dt, ptrs, is, c->in_dt, NULL);
    ptrs[b] = bcast_val[b];
    is[b] = 0;
    p->ew(N, out, c->out_dt, ptrs, is, c->in_dt, NULL);
    CHECK_MSG(same(bref, out, c->out_dt, N), "%s (%s): broadcast input %d differs", p->name,
              lc_dtype_name(c->in_dt), b);
    free(filled);
  }
  /* in place: out is the (last) data input's buffer, when sizes allow */
  int k = c->nin - 1;
  if (lc_dtype_size(dts[k]) == osz) {
    char *buf = malloc(osz * N);
    memcpy(buf, in[k], osz * N);
    for (int j = 0; j < c->nin; j++) ptrs[j] = j == k ? (const void *)buf : in[j], is[j] = 1;
    p->ew(N, buf, c->out_dt, ptrs, is, c->in_dt, NULL);
    CHECK_MSG(same(ref, buf, c->out_dt, N), "%s (%s): in place differs", p->name, lc_dtype_name(c->in_dt));
    free(buf);
  }
  for (int j = 0; j < c->nin; j++) {
    free(in[j]);
    free(rev[j]);
    free(str[j]);
  }
  free(ref);
  free(out);
  free(bref);
}

int main(void) {
  test_init();
  static const mlx_dtype floats[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_BFLOAT16};
  static const mlx_dtype ints[] = {MLX_INT32, MLX_UINT8, MLX_INT64, MLX_INT8};
  static const int float_unary[] = {
      LC_OP_ABS, LC_OP_NEGATIVE, LC_OP_SIGN, LC_OP_SQUARE, LC_OP_SQRT, LC_OP_RSQRT, LC_OP_EXP,
      LC_OP_EXPM1, LC_OP_LOG, LC_OP_LOG1P, LC_OP_LOG2, LC_OP_LOG10, LC_OP_SIN, LC_OP_COS,
      LC_OP_TAN, LC_OP_ARCSIN, LC_OP_ARCCOS, LC_OP_ARCTAN, LC_OP_SINH, LC_OP_COSH, LC_OP_TANH,
      LC_OP_ARCSINH, LC_OP_ARCCOSH, LC_OP_ARCTANH, LC_OP_SIGMOID, LC_OP_ERF, LC_OP_ERFINV,
      LC_OP_FLOOR, LC_OP_CEIL, LC_OP_ROUND, LC_OP_EW_COPY};
  static const int float_binary[] = {LC_OP_ADD, LC_OP_SUBTRACT, LC_OP_MULTIPLY, LC_OP_DIVIDE,
                                     LC_OP_REMAINDER, LC_OP_POWER, LC_OP_MAXIMUM, LC_OP_MINIMUM,
                                     LC_OP_ARCTAN2, LC_OP_LOGADDEXP, LC_OP_SELECT};
  static const int cmp[] = {LC_OP_EQUAL, LC_OP_NOT_EQUAL, LC_OP_GREATER, LC_OP_GREATER_EQUAL,
                            LC_OP_LESS, LC_OP_LESS_EQUAL, LC_OP_NAN_EQUAL};
  static const int int_unary[] = {LC_OP_ABS, LC_OP_NEGATIVE, LC_OP_SIGN, LC_OP_SQUARE,
                                  LC_OP_BITWISE_INVERT, LC_OP_EW_COPY};
  static const int int_binary[] = {LC_OP_ADD, LC_OP_SUBTRACT, LC_OP_MULTIPLY, LC_OP_FLOOR_DIVIDE,
                                   LC_OP_REMAINDER, LC_OP_POWER, LC_OP_MAXIMUM, LC_OP_MINIMUM,
                                   LC_OP_BITWISE_AND, LC_OP_BITWISE_OR, LC_OP_BITWISE_XOR,
                                   LC_OP_LEFT_SHIFT, LC_OP_RIGHT_SHIFT, LC_OP_SELECT};
  for (size_t d = 0; d < 4; d++) {
    for (size_t i = 0; i < sizeof float_unary / sizeof float_unary[0]; i++)
      check_case(&(struct kcase){float_unary[i], 1, floats[d], floats[d]});
    for (size_t i = 0; i < sizeof float_binary / sizeof float_binary[0]; i++)
      check_case(&(struct kcase){float_binary[i], float_binary[i] == LC_OP_SELECT ? 3 : 2,
                                 floats[d], floats[d]});
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
      check_case(&(struct kcase){cmp[i], 2, floats[d], MLX_BOOL});
    check_case(&(struct kcase){LC_OP_TO_FP8, 1, floats[d], MLX_UINT8});
    for (size_t i = 0; i < sizeof int_unary / sizeof int_unary[0]; i++)
      check_case(&(struct kcase){int_unary[i], 1, ints[d], ints[d]});
    for (size_t i = 0; i < sizeof int_binary / sizeof int_binary[0]; i++)
      check_case(&(struct kcase){int_binary[i], int_binary[i] == LC_OP_SELECT ? 3 : 2, ints[d],
                                 ints[d]});
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0] - 1; i++)
      check_case(&(struct kcase){cmp[i], 2, ints[d], MLX_BOOL});
  }
  check_case(&(struct kcase){LC_OP_LOGICAL_NOT, 1, MLX_BOOL, MLX_BOOL});
  check_case(&(struct kcase){LC_OP_LOGICAL_AND, 2, MLX_BOOL, MLX_BOOL});
  check_case(&(struct kcase){LC_OP_LOGICAL_OR, 2, MLX_BOOL, MLX_BOOL});
  check_case(&(struct kcase){LC_OP_FROM_FP8, 1, MLX_UINT8, MLX_FLOAT32});
  return test_done();
}
