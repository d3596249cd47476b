/* Transformation rules of the binary and ternary elementwise primitives:
 * vjp and jvp against finite differences (broadcast, transposed and
 * reversed float64 operands, and one operand constant so that only one
 * tangent is given), vmap against a loop with batched and unbatched
 * operands, second derivatives, MLX's tie rule for maximum/minimum, power
 * at x == 0, the zero rules of comparisons, integer and bitwise ops,
 * divmod (a tuple). */
#include "tx_check.h"

typedef int (*bin_fn)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);

struct bin_case {
  const char *name;
  bin_fn f;
  double lo0, hi0, lo1, hi1; /* domains of the two operands */
};

static int f_bin(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct bin_case *c = ctx;
  return c->f(out, in[0], in[1], test_stream());
}

static const struct bin_case smooth[] = {
    {"add", mlx_add, -2, 2, -2, 2},
    {"subtract", mlx_subtract, -2, 2, -2, 2},
    {"multiply", mlx_multiply, -2, 2, -2, 2},
    {"divide", mlx_divide, -2, 2, 0.5, 2},
    {"remainder", mlx_remainder, -3, 3, 0.7, 2},
    {"power", mlx_power, 0.5, 2, -2, 2},
    {"maximum", mlx_maximum, -2, 2, -2, 2},
    {"minimum", mlx_minimum, -2, 2, -2, 2},
    {"arctan2", mlx_arctan2, 0.3, 2, -2, 2},
    {"logaddexp", mlx_logaddexp, -3, 3, -3, 3},
};

/* One operand fixed (ctx->fixed, at position ctx->pos): the function of
 * the other alone, so its jvp sees one tangent only. */
struct half_ctx {
  const struct bin_case *c;
  mlx_array fixed;
  int pos;
};

static int f_half(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct half_ctx *h = ctx;
  mlx_array a = h->pos == 0 ? h->fixed : in[0], b = h->pos == 0 ? in[0] : h->fixed;
  return h->c->f(out, a, b, test_stream());
}

/* a float64 array of shape sh (ndim 2) in layout 0 (contiguous), 1
 * (transpose) or 2 (reversed rows and columns). */
static mlx_array layout_input(int layout, const int *sh, double lo, double hi) {
  if (layout == 0) return tx_rand(sh, 2, lo, hi);
  mlx_array x = mlx_array_new();
  if (layout == 1) {
    int st[2] = {sh[1], sh[0]};
    mlx_array t = tx_rand(st, 2, lo, hi);
    mlx_transpose(&x, t, test_stream());
    mlx_array_free(t);
    return x;
  }
  mlx_array t = tx_rand(sh, 2, lo, hi);
  int start[2] = {sh[0] - 1, sh[1] - 1}, stop[2] = {-sh[0] - 1, -sh[1] - 1}, str[2] = {-1, -1};
  mlx_slice(&x, t, start, 2, stop, 2, str, 2, test_stream());
  mlx_array_free(t);
  return x;
}

static void check_case(const struct bin_case *c, tx_fn f, void *ctx) {
  char label[96];
  int r = test_randint(1, 4), k = test_randint(2, 4);
  /* same shapes, in every layout pairing */
  for (int layout = 0; layout < 3; layout++) {
    int sh[2] = {r, k};
    mlx_array in[2] = {layout_input(layout, sh, c->lo0, c->hi0),
                       layout_input((layout + 1) % 3, sh, c->lo1, c->hi1)};
    snprintf(label, sizeof label, "%s layout %d", c->name, layout);
    tx_check_grad(label, f, ctx, 2, in, 1e-6);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  /* broadcasting operands: (r, 1, k) against (3, 1) */
  {
    int s0[3] = {r, 1, k}, s1[2] = {3, 1};
    mlx_array in[2] = {tx_rand(s0, 3, c->lo0, c->hi0), tx_rand(s1, 2, c->lo1, c->hi1)};
    snprintf(label, sizeof label, "%s broadcast", c->name);
    tx_check_grad(label, f, ctx, 2, in, 1e-6);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  /* one operand constant, either side */
  for (int pos = 0; pos < 2; pos++) {
    int sh[2] = {r, k};
    struct half_ctx h = {c, tx_rand(sh, 2, pos ? c->lo1 : c->lo0, pos ? c->hi1 : c->hi0), pos};
    mlx_array x = tx_rand(sh, 2, pos ? c->lo0 : c->lo1, pos ? c->hi0 : c->hi1);
    snprintf(label, sizeof label, "%s constant operand %d", c->name, pos);
    tx_check_grad(label, f_half, &h, 1, &x, 1e-6);
    mlx_array_free(x);
    mlx_array_free(h.fixed);
  }
  /* vmap: both batched (axes 0/0, 1/0), one unbatched (either side), and
   * an unbatched operand that broadcasts */
  int B = test_randint(2, 4);
  int axes[4][2] = {{0, 0}, {1, 0}, {0, -1}, {-1, 1}};
  for (int a = 0; a < 4; a++) {
    mlx_array in[2];
    for (int i = 0; i < 2; i++) {
      int sh[3] = {r, k, 0}; /* (r, k) per example, unbatched ones too */
      if (axes[a][i] >= 0) {
        sh[0] = axes[a][i] == 0 ? B : r;
        sh[1] = axes[a][i] == 1 ? B : r;
        sh[2] = k;
      }
      in[i] = tx_rand(sh, axes[a][i] >= 0 ? 3 : 2, i ? c->lo1 : c->lo0, i ? c->hi1 : c->hi0);
    }
    snprintf(label, sizeof label, "%s vmap axes %d %d", c->name, axes[a][0], axes[a][1]);
    tx_check_vmap(label, f, ctx, 2, in, axes[a], 1e-12);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  {
    int s0[3] = {B, r, k}, s1[1] = {k};
    mlx_array in[2] = {tx_rand(s0, 3, c->lo0, c->hi0), tx_rand(s1, 1, c->lo1, c->hi1)};
    int ax[2] = {0, -1};
    snprintf(label, sizeof label, "%s vmap broadcast unbatched", c->name);
    tx_check_vmap(label, f, ctx, 2, in, ax, 1e-12);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
}

static mlx_array vec(const double *v, int n) {
  int sh[1] = {n};
  return mlx_array_new_data(v, sh, 1, MLX_FLOAT64);
}

/* vjp with a cotangent of ones: grads of x and y against w0, w1; jvp with
 * tangents (1, 0) and (0, 1) likewise. */
static void check_exact(const char *what, bin_fn op, const double *x, const double *y,
                        const double *w0, const double *w1, int n) {
  struct bin_case c = {what, op, 0, 0, 0, 0};
  mlx_array in[2] = {vec(x, n), vec(y, n)}, ones = mlx_array_new(), zeros = mlx_array_new();
  mlx_ones_like(&ones, in[0], test_stream());
  mlx_zeros_like(&zeros, in[0], test_stream());
  mlx_array g[2], t;
  CHECK_OK(tx_vjp_grads(f_bin, &c, 2, in, ones, g));
  CHECK_CLOSE(g[0], w0, (size_t)n, 1e-12, 1e-12);
  CHECK_CLOSE(g[1], w1, (size_t)n, 1e-12, 1e-12);
  for (int k = 0; k < 2; k++) {
    mlx_array tans[2] = {k == 0 ? ones : zeros, k == 0 ? zeros : ones};
    CHECK_OK(tx_jvp_tangent(f_bin, &c, 2, in, tans, &t));
    CHECK_CLOSE(t, k == 0 ? w0 : w1, (size_t)n, 1e-12, 1e-12);
    mlx_array_free(t);
  }
  mlx_array_free(g[0]);
  mlx_array_free(g[1]);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  mlx_array_free(ones);
  mlx_array_free(zeros);
}

/* maximum/minimum ties go to the second operand (MLX); power at x == 0
 * has finite derivatives (0 log 0 taken as 0). */
static void check_special(void) {
  double x[3] = {1, 2, -1}, y[3] = {1, 2, 3};
  double hi0[3] = {0, 0, 0}, hi1[3] = {1, 1, 1};
  check_exact("maximum ties", mlx_maximum, x, y, hi0, hi1, 3);
  double lo0[3] = {0, 0, 1}, lo1[3] = {1, 1, 0};
  check_exact("minimum ties", mlx_minimum, x, y, lo0, lo1, 3);
  double px[3] = {0, 0, 2}, py[3] = {2, 1, 3};
  /* d/dx = y x^(y-1): 0, 1, 12; d/dy = log(x) x^y, 0 where x^y == 0 */
  double p0[3] = {0, 1, 12}, p1[3] = {0, 0, log(2.0) * 8};
  check_exact("power at 0", mlx_power, px, py, p0, p1, 3);
}

/* ---- second derivatives ---- */


static void check_second(tx_fn f, void *ctx, const char *name, const double *dom) {
  char label[96];
  int sh[2] = {test_randint(1, 3), test_randint(2, 4)};
  for (int arg = 0; arg < 2; arg++) {
    struct tx_grad_ctx g = {f, ctx, arg};
    mlx_array in[2] = {tx_rand(sh, 2, dom[0], dom[1]), tx_rand(sh, 2, dom[2], dom[3])};
    snprintf(label, sizeof label, "grad of grad %s, d/dx%d", name, arg);
    tx_check_grad(label, tx_f_grad, &g, 2, in, 1e-5);
    int ax[2] = {0, 0};
    snprintf(label, sizeof label, "vmap of grad %s, d/dx%d", name, arg);
    tx_check_vmap(label, tx_f_grad, &g, 2, in, ax, 1e-12);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
}

/* ---- where ---- */

/* where(x > y, x * y, y - x) */
static int f_where(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array c = mlx_array_new(), a = mlx_array_new(), b = mlx_array_new();
  int rc = mlx_greater(&c, in[0], in[1], test_stream()) ||
           mlx_multiply(&a, in[0], in[1], test_stream()) ||
           mlx_subtract(&b, in[1], in[0], test_stream()) ||
           mlx_where(out, c, a, b, test_stream());
  mlx_array_free(c);
  mlx_array_free(a);
  mlx_array_free(b);
  return rc;
}

/* where(x > 0, x, y) with y constant (pos 0) or where(y > 0, y, x) with
 * y constant (pos 1): one branch only has a tangent. */
static int f_where_half(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct half_ctx *h = ctx;
  mlx_array z = mlx_array_new_float64(0), c = mlx_array_new();
  mlx_array xa = h->pos == 0 ? in[0] : h->fixed, ya = h->pos == 0 ? h->fixed : in[0];
  int rc = mlx_greater(&c, xa, z, test_stream()) || mlx_where(out, c, xa, ya, test_stream());
  mlx_array_free(z);
  mlx_array_free(c);
  return rc;
}

static void check_where(void) {
  char label[64];
  for (int layout = 0; layout < 3; layout++) {
    int sh[2] = {3, 4};
    mlx_array in[2] = {layout_input(layout, sh, -2, 2), layout_input((layout + 2) % 3, sh, -2, 2)};
    snprintf(label, sizeof label, "where layout %d", layout);
    tx_check_grad(label, f_where, NULL, 2, in, 1e-6);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  {
    int s0[2] = {3, 1}, s1[1] = {4};
    mlx_array in[2] = {tx_rand(s0, 2, -2, 2), tx_rand(s1, 1, -2, 2)};
    tx_check_grad("where broadcast", f_where, NULL, 2, in, 1e-6);
    int axes[3][2] = {{0, 0}, {1, -1}, {-1, 0}};
    int sb[3] = {3, 3, 4}, su[2] = {3, 4};
    for (int a = 0; a < 3; a++) {
      mlx_array v[2] = {axes[a][0] >= 0 ? tx_rand(sb, 3, -2, 2) : tx_rand(su, 2, -2, 2),
                        axes[a][1] >= 0 ? tx_rand(sb, 3, -2, 2) : tx_rand(su, 2, -2, 2)};
      snprintf(label, sizeof label, "where vmap %d %d", axes[a][0], axes[a][1]);
      tx_check_vmap(label, f_where, NULL, 2, v, axes[a], 1e-12);
      mlx_array_free(v[0]);
      mlx_array_free(v[1]);
    }
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  for (int pos = 0; pos < 2; pos++) {
    int sh[2] = {2, 5};
    struct half_ctx h = {NULL, tx_rand(sh, 2, -2, 2), pos};
    mlx_array x = tx_rand(sh, 2, -2, 2);
    snprintf(label, sizeof label, "where one branch %d", pos);
    tx_check_grad(label, f_where_half, &h, 1, &x, 1e-6);
    mlx_array_free(x);
    mlx_array_free(h.fixed);
  }
  double dom[4] = {-2, 2, -2, 2};
  check_second(f_where, NULL, "where", dom);
}

/* ---- zero rules: comparisons, logical, bitwise, integer division ---- */

/* in[0] * astype(g(in[0], in[1]), float64) + in[1]: derivatives
 * g(x, y) and 1 exactly when g's rules are zero. */
static int f_gated(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  bin_fn g = (bin_fn)ctx;
  mlx_array m = mlx_array_new(), mf = mlx_array_new(), p = mlx_array_new();
  int rc = g(&m, in[0], in[1], test_stream()) ||
           mlx_astype(&mf, m, MLX_FLOAT64, test_stream()) ||
           mlx_multiply(&p, in[0], mf, test_stream()) || mlx_add(out, p, in[1], test_stream());
  mlx_array_free(m);
  mlx_array_free(mf);
  mlx_array_free(p);
  return rc;
}

/* integer versions: the op on (int32)(4 x), (int32)(4 y) */
#define INT_WRAP(NAME, OP)                                                                \
  static int NAME(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) { \
    mlx_array k = mlx_array_new_float64(4), a4 = mlx_array_new(), b4 = mlx_array_new();   \
    mlx_array ai = mlx_array_new(), bi = mlx_array_new();                                 \
    int rc = mlx_multiply(&a4, a, k, s) || mlx_multiply(&b4, b, k, s) ||                  \
             mlx_astype(&ai, a4, MLX_INT32, s) || mlx_astype(&bi, b4, MLX_INT32, s) ||    \
             OP(r, ai, bi, s);                                                            \
    mlx_array_free(k);                                                                    \
    mlx_array_free(a4);                                                                   \
    mlx_array_free(b4);                                                                   \
    mlx_array_free(ai);                                                                   \
    mlx_array_free(bi);                                                                   \
    return rc;                                                                            \
  }
INT_WRAP(int_floor_divide, mlx_floor_divide)
INT_WRAP(int_and, mlx_bitwise_and)
INT_WRAP(int_or, mlx_bitwise_or)
INT_WRAP(int_xor, mlx_bitwise_xor)

/* shifts by a small non-negative count: ((int32)(4 x)) << ((int32)|y| % 4) */
static int shift_by(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s,
                    int left) {
  mlx_array k = mlx_array_new_float64(4), a4 = mlx_array_new(), ai = mlx_array_new();
  mlx_array ab = mlx_array_new(), bi = mlx_array_new(), four = mlx_array_new_int(4),
            bm = mlx_array_new();
  int rc = mlx_multiply(&a4, a, k, s) || mlx_astype(&ai, a4, MLX_INT32, s) ||
           mlx_abs(&ab, b, s) || mlx_astype(&bi, ab, MLX_INT32, s) ||
           mlx_remainder(&bm, bi, four, s) ||
           (left ? mlx_left_shift(r, ai, bm, s) : mlx_right_shift(r, ai, bm, s));
  mlx_array_free(k);
  mlx_array_free(a4);
  mlx_array_free(ai);
  mlx_array_free(ab);
  mlx_array_free(bi);
  mlx_array_free(four);
  mlx_array_free(bm);
  return rc;
}
static int shl(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  return shift_by(r, a, b, s, 1);
}
static int shr(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  return shift_by(r, a, b, s, 0);
}
static int pos_and(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  mlx_array z = mlx_array_new_float64(0), pa = mlx_array_new(), pb = mlx_array_new();
  int rc = mlx_greater(&pa, a, z, s) || mlx_greater(&pb, b, z, s) || mlx_logical_and(r, pa, pb, s);
  mlx_array_free(z);
  mlx_array_free(pa);
  mlx_array_free(pb);
  return rc;
}
static int pos_or(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  mlx_array z = mlx_array_new_float64(0), pa = mlx_array_new(), pb = mlx_array_new();
  int rc = mlx_greater(&pa, a, z, s) || mlx_greater(&pb, b, z, s) || mlx_logical_or(r, pa, pb, s);
  mlx_array_free(z);
  mlx_array_free(pa);
  mlx_array_free(pb);
  return rc;
}
static int close_loose(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  return mlx_isclose(r, a, b, 0.5, 0.5, false, s);
}
/* equal / not_equal on rounded values (so ties happen). */
static int eq_rounded(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  mlx_array ra = mlx_array_new(), rb = mlx_array_new();
  int rc = mlx_round(&ra, a, 0, s) || mlx_round(&rb, b, 0, s) || mlx_equal(r, ra, rb, s);
  mlx_array_free(ra);
  mlx_array_free(rb);
  return rc;
}
static int ne_rounded(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  mlx_array ra = mlx_array_new(), rb = mlx_array_new();
  int rc = mlx_round(&ra, a, 0, s) || mlx_round(&rb, b, 0, s) || mlx_not_equal(r, ra, rb, s);
  mlx_array_free(ra);
  mlx_array_free(rb);
  return rc;
}

struct zero_case {
  const char *name;
  bin_fn g;
};
static const struct zero_case zero_cases[] = {
    {"equal", eq_rounded},       {"not_equal", ne_rounded},
    {"greater", mlx_greater},    {"greater_equal", mlx_greater_equal},
    {"less", mlx_less},          {"less_equal", mlx_less_equal},
    {"logical_and", pos_and},    {"logical_or", pos_or},
    {"bitwise_and", int_and},    {"bitwise_or", int_or},
    {"bitwise_xor", int_xor},    {"left_shift", shl},
    {"right_shift", shr},        {"floor_divide (int)", int_floor_divide},
    {"isclose", close_loose},
};

static void check_zero_rules(void) {
  char label[96];
  for (size_t i = 0; i < sizeof zero_cases / sizeof zero_cases[0]; i++) {
    int sh[2] = {3, 4};
    mlx_array in[2] = {layout_input(1, sh, -2, 2), tx_rand(sh, 2, -2, 2)};
    snprintf(label, sizeof label, "zero rule %s", zero_cases[i].name);
    tx_check_grad(label, f_gated, (void *)zero_cases[i].g, 2, in, 1e-6);
    int sb[3] = {3, 2, 4}, ax[2] = {1, -1};
    mlx_array v[2] = {tx_rand(sb, 3, -2, 2), tx_rand(sh, 2, -2, 2)};
    snprintf(label, sizeof label, "vmap %s", zero_cases[i].name);
    tx_check_vmap(label, f_gated, (void *)zero_cases[i].g, 2, v, ax, 1e-12);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
    mlx_array_free(v[0]);
    mlx_array_free(v[1]);
  }
}

/* ---- divmod ---- */

/* q * 10 + r of divmod(x, y), or one of them (ctx: 0 both, 1 q, 2 r) */
static int f_divmod(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  int which = (int)(intptr_t)ctx;
  mlx_vector_array qr = mlx_vector_array_new();
  mlx_array q = mlx_array_new(), r = mlx_array_new(), ten = mlx_array_new_float64(10),
            q10 = mlx_array_new();
  int rc = mlx_divmod(&qr, in[0], in[1], test_stream()) || mlx_vector_array_get(&q, qr, 0) ||
           mlx_vector_array_get(&r, qr, 1);
  if (!rc && which == 0)
    rc = mlx_multiply(&q10, q, ten, test_stream()) || mlx_add(out, q10, r, test_stream());
  else if (!rc)
    rc = mlx_array_set(out, which == 1 ? q : r);
  mlx_vector_array_free(qr);
  mlx_array_free(q);
  mlx_array_free(r);
  mlx_array_free(ten);
  mlx_array_free(q10);
  return rc;
}

static void check_divmod(void) {
  int sh[2] = {3, 4};
  mlx_array in[2] = {tx_rand(sh, 2, -3, 3), tx_rand(sh, 2, 0.5, 2)};
  /* MLX: zero cotangents and tangents for both outputs */
  for (int which = 0; which < 3; which++) {
    mlx_array ones = mlx_array_new(), g[2], t;
    mlx_ones_like(&ones, in[0], test_stream());
    double zero[12] = {0};
    CHECK_OK(tx_vjp_grads(f_divmod, (void *)(intptr_t)which, 2, in, ones, g));
    CHECK_CLOSE(g[0], zero, 12, 0, 0);
    CHECK_CLOSE(g[1], zero, 12, 0, 0);
    mlx_array tans[2] = {ones, ones};
    CHECK_OK(tx_jvp_tangent(f_divmod, (void *)(intptr_t)which, 2, in, tans, &t));
    CHECK_CLOSE(t, zero, 12, 0, 0);
    mlx_array_free(g[0]);
    mlx_array_free(g[1]);
    mlx_array_free(t);
    mlx_array_free(ones);
  }
  int axes[3][2] = {{0, 0}, {1, -1}, {-1, 0}};
  int sb[3] = {3, 3, 4};
  for (int a = 0; a < 3; a++) {
    mlx_array v[2] = {axes[a][0] >= 0 ? tx_rand(sb, 3, -3, 3) : tx_rand(sh, 2, -3, 3),
                      axes[a][1] >= 0 ? tx_rand(sb, 3, 0.5, 2) : tx_rand(sh, 2, 0.5, 2)};
    tx_check_vmap("divmod vmap", f_divmod, (void *)(intptr_t)0, 2, v, axes[a], 1e-12);
    mlx_array_free(v[0]);
    mlx_array_free(v[1]);
  }
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
}

int main(void) {
  test_init();
  for (size_t i = 0; i < sizeof smooth / sizeof smooth[0]; i++)
    check_case(&smooth[i], f_bin, (void *)&smooth[i]);
  const char *second[] = {"multiply", "divide", "power", "maximum", "arctan2", "logaddexp",
                          "subtract", "remainder"};
  for (size_t k = 0; k < sizeof second / sizeof second[0]; k++)
    for (size_t i = 0; i < sizeof smooth / sizeof smooth[0]; i++)
      if (!strcmp(smooth[i].name, second[k])) {
        double dom[4] = {smooth[i].lo0, smooth[i].hi0, smooth[i].lo1, smooth[i].hi1};
        check_second(f_bin, (void *)&smooth[i], smooth[i].name, dom);
      }
  check_special();
  check_where();
  check_zero_rules();
  check_divmod();
  return test_done();
}
