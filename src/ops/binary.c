/* Binary elementwise primitives and builders. */
#include "ops/ew_loops.h"

#include <complex.h>
#include <math.h>

#include "core/error.h"
#include "core/iter.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/tuple.h"
#include "ops/unary.h"
#include "ops/vmath.h"
#include "transforms/transforms.h"

/* ---- transformation rules ----
 * A differentiable op NAME has NAME_partial(n, k): the partial derivative
 * of n = f(x0, x1) in input k, a lazy node built with the ordinary
 * builders (so it differentiates again). jvp = sum_k tan_k * partial_k and
 * the cotangent of input k = cot * conj(partial_k) (MLX's convention for
 * complex inputs; conj is the identity on real dtypes). Inputs already
 * have the output's shape (the builders broadcast first), so no rule
 * unbroadcasts. Integer and bool results (comparisons, bitwise, integer
 * division) have zero rules, as in MLX. Every op vmaps elementwise;
 * divmod, a tuple, has its own rule. */

/* Chains consume their node arguments (lc_take1/lc_take2, core/node.h). */
static struct lc_node *where_(struct lc_node *c, struct lc_node *a, struct lc_node *b) {
  struct lc_node *r = c && a && b ? lc_where(c, a, b) : NULL;
  lc_node_release(c);
  lc_node_release(a);
  lc_node_release(b);
  return r;
}
static struct lc_node *ref(struct lc_node *x) { return lc_node_retain(x); }
/* The 0-d constant v in x's dtype (so it never promotes x). */
static struct lc_node *kst(const struct lc_node *x, double v) {
  return lc_node_new_scalar(x->dtype, v);
}

#define X0 (n->in[0])
#define X1 (n->in[1])
static struct lc_node *multiply_partial(struct lc_node *n, int k) { return ref(n->in[1 - k]); }
/* 1/y and -x/y^2 = -n/y */
static struct lc_node *divide_partial(struct lc_node *n, int k) {
  if (k == 0) return lc_take2(lc_divide, kst(X1, 1), ref(X1));
  return lc_take1(lc_negative, lc_divide(n, X1));
}
/* x - y floor(x/y): 1 and -floor(x/y) */
static struct lc_node *remainder_partial(struct lc_node *n, int k) {
  if (k == 0) return kst(n, 1);
  return lc_take1(lc_negative, lc_take1(lc_floor, lc_divide(X0, X1)));
}
/* y x^(y-1), and log(x) x^y taken as 0 where x^y == 0 (MLX: 0 log 0 = 0). */
static struct lc_node *power_partial(struct lc_node *n, int k) {
  if (k == 0)
    return lc_take2(lc_multiply, ref(X1),
                 lc_take2(lc_power, ref(X0), lc_take2(lc_subtract, ref(X1), kst(X1, 1))));
  return where_(ref(n), lc_take2(lc_multiply, lc_log(X0), ref(n)), kst(n, 0));
}
/* arctan2(a, b): b / (a^2 + b^2) and -a / (a^2 + b^2) */
static struct lc_node *arctan2_partial(struct lc_node *n, int k) {
  struct lc_node *den = lc_take2(lc_add, lc_square(X0), lc_square(X1));
  if (k == 0) return lc_take2(lc_divide, ref(X1), den);
  return lc_take1(lc_negative, lc_take2(lc_divide, ref(X0), den));
}
/* sigmoid(a - b) and sigmoid(b - a) */
static struct lc_node *logaddexp_partial(struct lc_node *n, int k) {
  return lc_take1(lc_sigmoid, lc_subtract(n->in[k], n->in[1 - k]));
}

typedef struct lc_node *(*partial_fn)(struct lc_node *n, int k);

static int partial_vjp(struct lc_node *n, struct lc_node *cot, const int *argnums, int nargs,
                       partial_fn d, struct lc_node **out) {
  for (int j = 0; j < nargs; j++) {
    out[j] = lc_take2(lc_multiply, ref(cot), lc_take1(lc_conjugate, d(n, argnums[j])));
    if (!out[j]) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}
/* *acc += v (both consumed; *acc may start NULL). 0, or 1 on failure. */
static int accum(struct lc_node **acc, struct lc_node *v) {
  *acc = *acc ? lc_take2(lc_add, *acc, v) : v;
  return !*acc;
}
static int partial_jvp(struct lc_node *n, struct lc_node *const *tan, partial_fn d,
                       struct lc_node **out) {
  struct lc_node *acc = NULL;
  for (int k = 0; k < 2; k++)
    if (tan[k] && accum(&acc, lc_take2(lc_multiply, ref(tan[k]), d(n, k)))) return 1;
  out[0] = acc;
  return 0;
}
#define PARTIAL_RULES(NAME)                                                                 \
  static int NAME##_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,  \
                        int nargs, struct lc_node **out) {                                  \
    return partial_vjp(n, cot[0], argnums, nargs, NAME##_partial, out);                     \
  }                                                                                         \
  static int NAME##_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) { \
    return partial_jvp(n, tan, NAME##_partial, out);                                        \
  }
PARTIAL_RULES(multiply)
PARTIAL_RULES(divide)
PARTIAL_RULES(remainder)
PARTIAL_RULES(power)
PARTIAL_RULES(arctan2)
PARTIAL_RULES(logaddexp)

/* add and subtract pass cotangents and tangents through (negated for
 * subtract's second input). */
static int add_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  (void)n, (void)argnums;
  for (int j = 0; j < nargs; j++) out[j] = ref(cot[0]);
  return 0;
}
static int add_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n;
  struct lc_node *acc = NULL;
  for (int k = 0; k < 2; k++)
    if (tan[k] && accum(&acc, ref(tan[k]))) return 1;
  out[0] = acc;
  return 0;
}
static int subtract_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                        int nargs, struct lc_node **out) {
  (void)n;
  for (int j = 0; j < nargs; j++) {
    out[j] = argnums[j] == 0 ? ref(cot[0]) : lc_negative(cot[0]);
    if (!out[j]) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}
static int subtract_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n;
  if (tan[0] && tan[1]) out[0] = lc_subtract(tan[0], tan[1]);
  else out[0] = tan[0] ? ref(tan[0]) : lc_negative(tan[1]);
  return !out[0];
}

/* maximum and minimum route the cotangent to the input they picked; on
 * ties it goes to the second input, as in MLX (maximum: x0 > x1 picks x0,
 * else x1; minimum: x0 < x1 picks x0). */
static struct lc_node *maximum_mask(struct lc_node *n, int k) {
  return k == 0 ? lc_greater(X0, X1) : lc_less_equal(X0, X1);
}
static struct lc_node *minimum_mask(struct lc_node *n, int k) {
  return k == 0 ? lc_less(X0, X1) : lc_greater_equal(X0, X1);
}
typedef struct lc_node *(*mask_fn)(struct lc_node *n, int k);

static int masked_vjp(struct lc_node *n, struct lc_node *cot, const int *argnums, int nargs,
                      mask_fn m, struct lc_node **out) {
  for (int j = 0; j < nargs; j++) {
    out[j] = where_(m(n, argnums[j]), ref(cot), kst(cot, 0));
    if (!out[j]) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}
static int masked_jvp(struct lc_node *n, struct lc_node *const *tan, mask_fn m,
                      struct lc_node **out) {
  struct lc_node *acc = NULL;
  for (int k = 0; k < 2; k++)
    if (tan[k] && accum(&acc, where_(m(n, k), ref(tan[k]), kst(tan[k], 0)))) return 1;
  out[0] = acc;
  return 0;
}
#define MASKED_RULES(NAME)                                                                  \
  static int NAME##_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,  \
                        int nargs, struct lc_node **out) {                                  \
    return masked_vjp(n, cot[0], argnums, nargs, NAME##_mask, out);                         \
  }                                                                                         \
  static int NAME##_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) { \
    return masked_jvp(n, tan, NAME##_mask, out);                                            \
  }
MASKED_RULES(maximum)
MASKED_RULES(minimum)
#undef X0
#undef X1

/* Zero cotangents and tangents (NULL results), for every output of n. */
#define ZERO_RULES(NAME)                                                                    \
  static int NAME##_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,  \
                        int nargs, struct lc_node **out) {                                  \
    return lc_rule_zero_vjp(n, cot, argnums, nargs, out);                                   \
  }                                                                                         \
  static int NAME##_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) { \
    return lc_rule_zero_jvp(n, tan, out);                                                   \
  }
ZERO_RULES(floor_divide)
ZERO_RULES(equal)
ZERO_RULES(nan_equal)
ZERO_RULES(not_equal)
ZERO_RULES(greater)
ZERO_RULES(greater_equal)
ZERO_RULES(less)
ZERO_RULES(less_equal)
ZERO_RULES(logical_and)
ZERO_RULES(logical_or)
ZERO_RULES(bitwise_and)
ZERO_RULES(bitwise_or)
ZERO_RULES(bitwise_xor)
ZERO_RULES(left_shift)
ZERO_RULES(right_shift)
ZERO_RULES(isclose)

#define B LC_B_LOOP
/* An elementwise row with its rules NAME_vjp and NAME_jvp (above). */
#define PRIM(NAME)                                                                          \
  const struct lc_prim lc_prim_##NAME = {.name = #NAME,                                     \
                                         .flags = LC_PF_ELEMWISE,                           \
                                         .eval_cpu = lc_ew_eval_cpu,                        \
                                         .eval_cuda = LC_CUDA(lc_cuda_eval_elementwise),    \
                                         .ew = NAME##_kernel,                               \
                                         .vjp = NAME##_vjp,                                 \
                                         .jvp = NAME##_jvp,                                 \
                                         .vmap = lc_rule_vmap_elementwise};

#define CASES_REAL(NAME) LC_CASES_INT(LC_BCASE, NAME) LC_CASES_FLOAT(LC_BCASE, NAME)
#define CASES_ALL(NAME) CASES_REAL(NAME) LC_CASES_CX(LC_BCASE, NAME)

/* An op on every dtype: FI for integers and bool, FF for floats and complex. */
#define ALL_OP(NAME, FI, FF)            \
  LC_LOOPS_INT(B, NAME, FI, FI)         \
  LC_LOOPS_FLOAT(B, NAME, FF, FF)       \
  LC_LOOP_CX(B, NAME, lc_c64, FF)       \
  LC_KERNEL(NAME, CASES_ALL(NAME))      \
  PRIM(NAME)

#define ADD_F(x, y, C) ((x) + (y))
#define SUB_F(x, y, C) ((x) - (y))
#define MUL_F(x, y, C) ((x) * (y))
ALL_OP(add, LC_WADD, ADD_F)
ALL_OP(subtract, LC_WSUB, SUB_F)
ALL_OP(multiply, LC_WMUL, MUL_F)

#define DIV_F(x, y, C) ((x) / (y))
LC_LOOPS_FLOAT(B, divide, DIV_F, DIV_F)
LC_LOOP_CX(B, divide, lc_c64, DIV_F)
LC_KERNEL(divide, LC_CASES_FLOAT(LC_BCASE, divide) LC_CASES_CX(LC_BCASE, divide))
PRIM(divide)

/* Integer floor division and remainder with Python's signs. By zero, as
 * MLX 0.32: the quotient is 0 and the remainder x (x == q * y + r still
 * holds); INT_MIN / -1 wraps to INT_MIN, remainder 0. */
static inline int64_t fdiv_s(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return (int64_t)(0u - (uint64_t)x);
  int64_t q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
static inline uint64_t fdiv_u(uint64_t x, uint64_t y) { return y ? x / y : 0; }
static inline int64_t rem_s(int64_t x, int64_t y) {
  if (y == 0) return x;
  if (y == -1) return 0;
  int64_t r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
static inline uint64_t rem_u(uint64_t x, uint64_t y) { return y ? x % y : x; }
static inline float rem_f(float x, float y) {
  float r = fmodf(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
static inline double rem_d(double x, double y) {
  double r = fmod(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
#define FDIV_S(x, y, C) ((C)fdiv_s(x, y))
#define FDIV_U(x, y, C) ((C)fdiv_u(x, y))
#define REM_S(x, y, C) ((C)rem_s(x, y))
#define REM_U(x, y, C) ((C)rem_u(x, y))
#define REM_F(x, y, C) rem_f(x, y)
#define REM_D(x, y, C) rem_d(x, y)
LC_LOOPS_INT(B, floor_divide, FDIV_S, FDIV_U)
LC_KERNEL(floor_divide, LC_CASES_INT(LC_BCASE, floor_divide))
PRIM(floor_divide)
LC_LOOPS_INT(B, remainder, REM_S, REM_U)
LC_LOOPS_FLOAT_COLD(B, remainder, REM_F, REM_D)
LC_KERNEL(remainder, CASES_REAL(remainder))
PRIM(remainder)

/* Integer power by squaring in wrapping arithmetic; negative exponents of
 * signed types give 0 (MLX). */
static inline uint64_t ipow(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= base;
    e >>= 1;
    base *= base;
  }
  return r;
}
#define POW_S(x, y, C) ((y) < 0 ? (C)0 : (C)ipow((uint64_t)(x), (uint64_t)(y)))
#define POW_U(x, y, C) ((C)ipow((uint64_t)(x), (uint64_t)(y)))
#define POW_F(x, y, C) powf(x, y)
#define POW_D(x, y, C) pow(x, y)
#define POW_C(x, y, C) cpowf(x, y)
LC_LOOPS_INT(B, power, POW_S, POW_U)
LC_LOOPS_FLOAT_COLD(B, power, POW_F, POW_D)
LC_LOOP_CX(B, power, lc_c64, POW_C)
LC_KERNEL(power, CASES_ALL(power))
PRIM(power)

/* NaN propagates from either side. */
#define MAX_I(x, y, C) ((x) > (y) ? (x) : (y))
#define MIN_I(x, y, C) ((x) < (y) ? (x) : (y))
#define MAX_F(x, y, C) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define MIN_F(x, y, C) (((x) < (y) || (x) != (x)) ? (x) : (y))
LC_LOOPS_INT(B, maximum, MAX_I, MAX_I)
LC_LOOPS_FLOAT(B, maximum, MAX_F, MAX_F)
LC_KERNEL(maximum, CASES_REAL(maximum))
PRIM(maximum)
LC_LOOPS_INT(B, minimum, MIN_I, MIN_I)
LC_LOOPS_FLOAT(B, minimum, MIN_F, MIN_F)
LC_KERNEL(minimum, CASES_REAL(minimum))
PRIM(minimum)

#define ATAN2_F(x, y, C) atan2f(x, y)
#define ATAN2_D(x, y, C) atan2(x, y)
LC_LOOPS_FLOAT_COLD(B, arctan2, ATAN2_F, ATAN2_D)
LC_KERNEL(arctan2, LC_CASES_FLOAT(LC_BCASE, arctan2))
PRIM(arctan2)

/* log(e^x + e^y) = max + log1p(e^(min - max)); log1p(z) for z in [0, 1] as
 * log(u) * z / (u - 1), u = 1 + z (exact correction of u's rounding). */
static inline float logaddexp_f(float x, float y) {
  float hi = MAX_F(x, y, float), lo = MIN_F(x, y, float);
  float z = lc_vexpf(lo - hi), u = 1.0f + z;
  float l = lc_vlogf(u) * (z / (u - 1.0f));
  float r = hi + (u == 1.0f ? z : l);
  return (lo == -INFINITY || hi == INFINITY) ? hi : r;
}
static inline double logaddexp_d(double x, double y) {
  double hi = MAX_F(x, y, double), lo = MIN_F(x, y, double);
  double z = lc_vexp(lo - hi), u = 1.0 + z;
  double r = hi + (u == 1.0 ? z : log(u) * (z / (u - 1.0)));
  return (lo == -INFINITY || hi == INFINITY) ? hi : r;
}
#define LAE_F(x, y, C) logaddexp_f(x, y)
#define LAE_D(x, y, C) logaddexp_d(x, y)
B(LC_EW_HOT, logaddexp_MLX_FLOAT32, float, float, float, LC_ID, LC_ID, LAE_F)
B(LC_EW_HOT, logaddexp_MLX_FLOAT16, uint16_t, float, uint16_t, lc_ew_f16_ld, lc_ew_f16_st, LAE_F)
B(LC_EW_HOT, logaddexp_MLX_BFLOAT16, uint16_t, float, uint16_t, lc_bf16_to_f32, lc_f32_to_bf16, LAE_F)
B(, logaddexp_MLX_FLOAT64, double, double, double, LC_ID, LC_ID, LAE_D) /* libm log: scalar */
LC_KERNEL(logaddexp, LC_CASES_FLOAT(LC_BCASE, logaddexp))
PRIM(logaddexp)

/* ---- predicates: bool output ---- */

#define PRED_LOOPS(NAME, F)                        \
  LC_LOOPS_INT_TO(B, NAME, LC_OS_BOOL, F, F)       \
  LC_LOOPS_FLOAT_TO(B, NAME, bool, F, F)
#define EQ_F(x, y, C) ((x) == (y))
#define NE_F(x, y, C) ((x) != (y))
#define GT_F(x, y, C) ((x) > (y))
#define GE_F(x, y, C) ((x) >= (y))
#define LT_F(x, y, C) ((x) < (y))
#define LE_F(x, y, C) ((x) <= (y))
#define NANEQ_F(x, y, C) ((x) == (y) || ((x) != (x) && (y) != (y)))
PRED_LOOPS(equal, EQ_F)
LC_LOOP_CX(B, equal, bool, EQ_F)
LC_KERNEL(equal, CASES_ALL(equal))
PRIM(equal)
PRED_LOOPS(not_equal, NE_F)
LC_LOOP_CX(B, not_equal, bool, NE_F)
LC_KERNEL(not_equal, CASES_ALL(not_equal))
PRIM(not_equal)
PRED_LOOPS(greater, GT_F)
LC_KERNEL(greater, CASES_REAL(greater))
PRIM(greater)
PRED_LOOPS(greater_equal, GE_F)
LC_KERNEL(greater_equal, CASES_REAL(greater_equal))
PRIM(greater_equal)
PRED_LOOPS(less, LT_F)
LC_KERNEL(less, CASES_REAL(less))
PRIM(less)
PRED_LOOPS(less_equal, LE_F)
LC_KERNEL(less_equal, CASES_REAL(less_equal))
PRIM(less_equal)
LC_LOOPS_FLOAT_TO(B, nan_equal, bool, NANEQ_F, NANEQ_F)
static inline bool nan_equal_c(lc_c64 x, lc_c64 y) {
  return x == y || ((x != x) && (y != y));
}
#define NANEQ_C(x, y, C) nan_equal_c(x, y)
LC_LOOP_CX(B, nan_equal, bool, NANEQ_C)
LC_KERNEL(nan_equal, LC_CASES_FLOAT(LC_BCASE, nan_equal) LC_CASES_CX(LC_BCASE, nan_equal))
PRIM(nan_equal)

#define AND_F(x, y, C) ((x) && (y))
#define OR_F(x, y, C) ((x) || (y))
B(, logical_and_MLX_BOOL, bool, bool, bool, LC_ID, LC_ID, AND_F)
B(, logical_or_MLX_BOOL, bool, bool, bool, LC_ID, LC_ID, OR_F)
LC_KERNEL(logical_and, LC_BCASE(logical_and, MLX_BOOL))
LC_KERNEL(logical_or, LC_BCASE(logical_or, MLX_BOOL))
PRIM(logical_and)
PRIM(logical_or)

/* ---- bitwise: integers and bool ---- */

#define BAND_F(x, y, C) ((C)((x) & (y)))
#define BOR_F(x, y, C) ((C)((x) | (y)))
#define BXOR_F(x, y, C) ((C)((x) ^ (y)))
#define BITS(C) ((int64_t)sizeof(C) * 8)
/* Shift counts outside [0, bits) shift everything out. */
static inline bool shift_in_range(int64_t y, int64_t bits) { return y >= 0 && y < bits; }
#define SHL_F(x, y, C) \
  (shift_in_range((int64_t)(y), BITS(C)) ? (C)((uint64_t)(x) << (y)) : (C)0)
#define SHR_U(x, y, C) (shift_in_range((int64_t)(y), BITS(C)) ? (C)((x) >> (y)) : (C)0)
#define SHR_S(x, y, C) \
  (shift_in_range((int64_t)(y), BITS(C)) ? (C)((x) >> (y)) : (C)((x) < 0 ? -1 : 0))
#define INT_OP(NAME, FS, FU)               \
  LC_LOOPS_INT(B, NAME, FS, FU)            \
  LC_KERNEL(NAME, LC_CASES_INT(LC_BCASE, NAME)) \
  PRIM(NAME)
INT_OP(bitwise_and, BAND_F, BAND_F)
INT_OP(bitwise_or, BOR_F, BOR_F)
INT_OP(bitwise_xor, BXOR_F, BXOR_F)
INT_OP(left_shift, SHL_F, SHL_F)
INT_OP(right_shift, SHR_S, SHR_U)

/* ---- isclose ---- */

struct isclose_params {
  double rtol, atol, equal_nan; /* equal_nan: 0 or 1 (no padding bytes) */
};

/* Computes in float for float32/float16/bfloat16 (as MLX, whose tolerances
 * are float32 scalars), in double otherwise. */
#define ISCLOSE_LOOP(DT, S, C, LD)                                                          \
  static void isclose_##DT(int64_t n, bool *restrict o, const S *restrict xp, int64_t sx,    \
                           const S *restrict yp, int64_t sy, const struct isclose_params *p) { \
    C rtol = (C)p->rtol, atol = (C)p->atol;                                                  \
    bool en = p->equal_nan != 0;                                                             \
    for (int64_t i = 0; i < n; i++) {                                                        \
      C x = (C)LD(xp[i * sx]), y = (C)LD(yp[i * sy]);                                        \
      C d = x - y, ay = y < 0 ? -y : y;                                                      \
      bool inf = x == (C)INFINITY || x == -(C)INFINITY || y == (C)INFINITY || y == -(C)INFINITY; \
      bool ok = inf ? x == y : (d < 0 ? -d : d) <= atol + rtol * ay;                         \
      o[i] = ok || (en && x != x && y != y);                                                 \
    }                                                                                        \
  }
#define ISCLOSE_ANY(DT, S, C) ISCLOSE_LOOP(DT, S, double, LC_ID)
LC_FOR_INT_DTYPES(ISCLOSE_ANY)
ISCLOSE_LOOP(MLX_BOOL, bool, double, LC_ID)
ISCLOSE_LOOP(MLX_FLOAT16, uint16_t, float, lc_ew_f16_ld)
ISCLOSE_LOOP(MLX_FLOAT32, float, float, LC_ID)
ISCLOSE_LOOP(MLX_FLOAT64, double, double, LC_ID)
ISCLOSE_LOOP(MLX_BFLOAT16, uint16_t, float, lc_bf16_to_f32)

static void isclose_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                           const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)out_dt;
  switch (in_dt) {
#define IC_CASE(NAME, DT) \
  case DT: isclose_##DT(n, out, in[0], is[0], in[1], is[1], params); break;
    LC_CASES_INT(IC_CASE, isclose)
    LC_CASES_FLOAT(IC_CASE, isclose)
#undef IC_CASE
  default: break;
  }
}
PRIM(isclose)

/* ---- divmod: one tuple node, outputs (quotient, remainder) ---- */

#define DIVMOD_LOOP(DT, S, C, LD, ST, Q, R)                                                \
  static void divmod_##DT(int64_t n, S *q, S *r, const S *x, int64_t sx, const S *y,      \
                          int64_t sy) {                                                    \
    for (int64_t i = 0; i < n; i++) {                                                      \
      C a = (C)LD(x[i * sx]), b = (C)LD(y[i * sy]);                                        \
      q[i] = ST(Q(a, b, C));                                                               \
      r[i] = ST(R(a, b, C));                                                               \
    }                                                                                      \
  }
#define FLOORDIV_F(x, y, C) floorf((x) / (y))
#define FLOORDIV_D(x, y, C) floor((x) / (y))
#define DM_S(DT, S, C) DIVMOD_LOOP(DT, S, C, LC_ID, LC_ID, FDIV_S, REM_S)
#define DM_U(DT, S, C) DIVMOD_LOOP(DT, S, C, LC_ID, LC_ID, FDIV_U, REM_U)
DM_U(MLX_BOOL, bool, bool)
DM_U(MLX_UINT8, uint8_t, uint8_t)
DM_U(MLX_UINT16, uint16_t, uint16_t)
DM_U(MLX_UINT32, uint32_t, uint32_t)
DM_U(MLX_UINT64, uint64_t, uint64_t)
DM_S(MLX_INT8, int8_t, int8_t)
DM_S(MLX_INT16, int16_t, int16_t)
DM_S(MLX_INT32, int32_t, int32_t)
DM_S(MLX_INT64, int64_t, int64_t)
DIVMOD_LOOP(MLX_FLOAT16, uint16_t, float, lc_ew_f16_ld, lc_ew_f16_st, FLOORDIV_F, REM_F)
DIVMOD_LOOP(MLX_FLOAT32, float, float, LC_ID, LC_ID, FLOORDIV_F, REM_F)
DIVMOD_LOOP(MLX_FLOAT64, double, double, LC_ID, LC_ID, FLOORDIV_D, REM_D)
DIVMOD_LOOP(MLX_BFLOAT16, uint16_t, float, lc_bf16_to_f32, lc_f32_to_bf16, FLOORDIV_F, REM_F)

struct divmod_ctx {
  char *base[4];
  size_t isz;
  mlx_dtype dt;
};

static void divmod_run(void *arg, int64_t n, const int64_t *offs, const int64_t *inner) {
  struct divmod_ctx *c = arg;
  void *q = c->base[0] + offs[0] * (int64_t)c->isz, *r = c->base[1] + offs[1] * (int64_t)c->isz;
  const void *x = c->base[2] + offs[2] * (int64_t)c->isz;
  const void *y = c->base[3] + offs[3] * (int64_t)c->isz;
  switch (c->dt) {
#define DM_CASE(NAME, DT) \
  case DT: divmod_##DT(n, q, r, x, inner[2], y, inner[3]); break;
    LC_CASES_INT(DM_CASE, divmod)
    LC_CASES_FLOAT(DM_CASE, divmod)
#undef DM_CASE
  default: break;
  }
}

static int divmod_eval(struct lc_node *n) {
  const struct lc_node *a = n->in[0], *b = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  struct divmod_ctx c = {.isz = lc_dtype_size(a->dtype), .dt = a->dtype};
  int64_t nbytes[2] = {a->size * (int64_t)c.isz, a->size * (int64_t)c.isz};
  c.base[0] = lc_tuple_data(n, 2, nbytes, 0);
  c.base[1] = lc_tuple_data(n, 2, nbytes, 1);
  c.base[2] = a->buf->data;
  c.base[3] = b->buf->data;
  int64_t contig[a->ndim > 0 ? a->ndim : 1];
  lc_shape_strides(a->ndim, a->shape, contig);
  const int64_t *strides[4] = {contig, contig, a->strides, b->strides};
  int64_t offs[4] = {0, 0, a->offset, b->offset};
  return lc_iter_runs(a->ndim, a->shape, 4, strides, offs, divmod_run, &c, true);
}
/* divmod: both outputs are integer-valued (floor division) or have zero
 * derivative in MLX, so its rules are zero; vmap is the op over batch-
 * first operands, one batched output each. */
static int divmod_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n, (void)tan;
  out[0] = out[1] = NULL;
  return 0;
}
static int divmod_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  (void)n;
  struct lc_node *a = lc_rule_batch_front(in[0], ax[0], true);
  struct lc_node *b = a ? lc_rule_batch_front(in[1], ax[1], true) : NULL;
  int rc = !b || lc_divmod(a, b, &out[0], &out[1]);
  lc_node_release(a);
  lc_node_release(b);
  out_ax[0] = out_ax[1] = 0;
  return rc;
}
/* Shapeless compile: the builder broadcasts both operands to one shape. */
static int divmod_tuple_build(const void *params, int nin, struct lc_node *const *in,
                              struct lc_node **outs) {
  (void)params;
  return nin != 2 || lc_divmod(in[0], in[1], &outs[0], &outs[1]);
}
const struct lc_prim lc_prim_divmod = {.name = "divmod",
                                       .eval_cpu = divmod_eval,
                                       .eval_cuda = LC_CUDA(lc_cuda_eval_divmod),
                                       .vjp = lc_rule_zero_vjp,
                                       .jvp = divmod_jvp,
                                       .vmap = divmod_vmap,
                                       .input_shape = lc_prim_input_bcast_all,
                                       .tuple_build = divmod_tuple_build};

/* ---- builders ---- */

static struct lc_node *bin_t(const char *fn, int op, struct lc_node *a, struct lc_node *b,
                             mlx_dtype t, mlx_dtype out_t, const void *params, size_t psize) {
  struct lc_node *x, *y;
  if (lc_ew_prepare2(fn, a, b, t, &x, &y)) return NULL;
  struct lc_node *in[2] = {x, y};
  struct lc_node *r = lc_ew_new(op, out_t, 2, in, params, psize);
  lc_node_release(x);
  lc_node_release(y);
  return r;
}

static int check_complex(const char *fn, mlx_dtype t) {
  if (t == MLX_COMPLEX64) return lc_error("%s: not supported for complex64", fn);
  return 0;
}

/* Promoted dtype, complex allowed. */
#define BIN_ALL(NAME, ID)                                              \
  struct lc_node *lc_##NAME(struct lc_node *a, struct lc_node *b) {   \
    mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);               \
    return bin_t(#NAME, LC_OP_##ID, a, b, t, t, NULL, 0);              \
  }
/* Promoted dtype, real only. */
#define BIN_REAL(NAME, ID)                                             \
  struct lc_node *lc_##NAME(struct lc_node *a, struct lc_node *b) {   \
    mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);               \
    if (check_complex(#NAME, t)) return NULL;                          \
    return bin_t(#NAME, LC_OP_##ID, a, b, t, t, NULL, 0);              \
  }
/* At least float32, real only. */
#define BIN_FLOAT(NAME, ID)                                            \
  struct lc_node *lc_##NAME(struct lc_node *a, struct lc_node *b) {   \
    mlx_dtype t = lc_dtype_inexact(lc_dtype_promote(a->dtype, b->dtype)); \
    if (check_complex(#NAME, t)) return NULL;                          \
    return bin_t(#NAME, LC_OP_##ID, a, b, t, t, NULL, 0);              \
  }
/* Comparison: promoted dtype in, bool out. */
#define BIN_CMP(NAME, ID, CX)                                          \
  struct lc_node *lc_##NAME(struct lc_node *a, struct lc_node *b) {   \
    mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);               \
    if (!(CX) && check_complex(#NAME, t)) return NULL;                 \
    return bin_t(#NAME, LC_OP_##ID, a, b, t, MLX_BOOL, NULL, 0);       \
  }
/* Integer or bool only; shifts compute bool in uint8. */
#define BIN_INT(NAME, ID, BOOL_AS)                                          \
  struct lc_node *lc_##NAME(struct lc_node *a, struct lc_node *b) {        \
    mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);                    \
    if (lc_dtype_is_inexact(t)) {                                          \
      lc_error("%s: only allowed on integer or boolean types but got types %s and %s", #NAME, \
               lc_dtype_name(a->dtype), lc_dtype_name(b->dtype));          \
      return NULL;                                                         \
    }                                                                      \
    if (t == MLX_BOOL) t = BOOL_AS;                                        \
    return bin_t(#NAME, LC_OP_##ID, a, b, t, t, NULL, 0);                   \
  }

BIN_ALL(add, ADD)
BIN_ALL(subtract, SUBTRACT)
BIN_ALL(multiply, MULTIPLY)
BIN_ALL(power, POWER)
BIN_REAL(maximum, MAXIMUM)
BIN_REAL(minimum, MINIMUM)
BIN_REAL(remainder, REMAINDER)
BIN_FLOAT(arctan2, ARCTAN2)
BIN_FLOAT(logaddexp, LOGADDEXP)
BIN_CMP(equal, EQUAL, true)
BIN_CMP(not_equal, NOT_EQUAL, true)
BIN_CMP(greater, GREATER, false)
BIN_CMP(greater_equal, GREATER_EQUAL, false)
BIN_CMP(less, LESS, false)
BIN_CMP(less_equal, LESS_EQUAL, false)
BIN_INT(bitwise_and, BITWISE_AND, MLX_BOOL)
BIN_INT(bitwise_or, BITWISE_OR, MLX_BOOL)
BIN_INT(bitwise_xor, BITWISE_XOR, MLX_BOOL)
BIN_INT(left_shift, LEFT_SHIFT, MLX_UINT8)
BIN_INT(right_shift, RIGHT_SHIFT, MLX_UINT8)

struct lc_node *lc_divide(struct lc_node *a, struct lc_node *b) {
  mlx_dtype t = lc_dtype_inexact(lc_dtype_promote(a->dtype, b->dtype));
  return bin_t("divide", LC_OP_DIVIDE, a, b, t, t, NULL, 0);
}

struct lc_node *lc_floor_divide(struct lc_node *a, struct lc_node *b) {
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (check_complex("floor_divide", t)) return NULL;
  if (lc_dtype_is_float(t)) {
    struct lc_node *d = lc_divide(a, b);
    struct lc_node *r = d ? lc_floor(d) : NULL;
    lc_node_release(d);
    return r;
  }
  return bin_t("floor_divide", LC_OP_FLOOR_DIVIDE, a, b, t, t, NULL, 0);
}

struct lc_node *lc_equal_nan(struct lc_node *a, struct lc_node *b, bool equal_nan) {
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (!equal_nan || !lc_dtype_is_inexact(t)) return lc_equal(a, b);
  return bin_t("equal", LC_OP_NAN_EQUAL, a, b, t, MLX_BOOL, NULL, 0);
}

static struct lc_node *logical(const char *fn, int op, struct lc_node *a, struct lc_node *b) {
  return bin_t(fn, op, a, b, MLX_BOOL, MLX_BOOL, NULL, 0);
}
struct lc_node *lc_logical_and(struct lc_node *a, struct lc_node *b) {
  return logical("logical_and", LC_OP_LOGICAL_AND, a, b);
}
struct lc_node *lc_logical_or(struct lc_node *a, struct lc_node *b) {
  return logical("logical_or", LC_OP_LOGICAL_OR, a, b);
}

int lc_divmod(struct lc_node *a, struct lc_node *b, struct lc_node **q, struct lc_node **r) {
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (check_complex("divmod", t)) return 1;
  struct lc_node *x, *y;
  if (lc_ew_prepare2("divmod", a, b, t, &x, &y)) return 1;
  struct lc_node *in[2] = {x, y}, *outs[2];
  mlx_dtype dts[2] = {t, t};
  int nds[2] = {x->ndim, x->ndim};
  const int *shapes[2] = {x->shape, x->shape};
  int rc = lc_tuple_new(LC_OP_DIVMOD, 2, in, NULL, 0, 2, dts, nds, shapes, outs);
  lc_node_release(x);
  lc_node_release(y);
  if (rc) return 1;
  *q = outs[0];
  *r = outs[1];
  return 0;
}

struct lc_node *lc_clip(struct lc_node *a, struct lc_node *lo, struct lc_node *hi) {
  if (!lo && !hi) {
    lc_error("clip: at most one of a_min and a_max may be empty");
    return NULL;
  }
  struct lc_node *r = lc_node_retain(a);
  if (lo) {
    struct lc_node *t = lc_maximum(r, lo);
    lc_node_release(r);
    r = t;
  }
  if (r && hi) {
    struct lc_node *t = lc_minimum(r, hi);
    lc_node_release(r);
    r = t;
  }
  return r;
}

struct lc_node *lc_isclose(struct lc_node *a, struct lc_node *b, double rtol, double atol,
                           bool equal_nan) {
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (check_complex("isclose", t)) return NULL;
  struct isclose_params p = {rtol, atol, equal_nan ? 1.0 : 0.0};
  return bin_t("isclose", LC_OP_ISCLOSE, a, b, t, MLX_BOOL, &p, sizeof p);
}

struct lc_node *lc_scalar_for(struct lc_node *a, double v) {
  mlx_dtype t = a->dtype;
  if (!lc_dtype_is_inexact(t) && (!lc_dtype_is_int(t) || v != floor(v))) t = MLX_FLOAT32;
  return lc_node_new_scalar(t, v);
}

/* all() over every axis of n (consumed); NULL passes through. */
static struct lc_node *all_of(struct lc_node *n) {
  if (!n) return NULL;
  int axes[n->ndim > 0 ? n->ndim : 1];
  for (int i = 0; i < n->ndim; i++) axes[i] = i;
  struct lc_node *r = lc_all(n, axes, n->ndim, false);
  lc_node_release(n);
  return r;
}

struct lc_node *lc_allclose(struct lc_node *a, struct lc_node *b, double rtol, double atol,
                            bool equal_nan) {
  return all_of(lc_isclose(a, b, rtol, atol, equal_nan));
}

struct lc_node *lc_array_equal(struct lc_node *a, struct lc_node *b, bool equal_nan) {
  if (!lc_shape_equal(a->ndim, a->shape, b->ndim, b->shape)) return lc_node_new_scalar(MLX_BOOL, 0);
  return all_of(lc_equal_nan(a, b, equal_nan));
}
