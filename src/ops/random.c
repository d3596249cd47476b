/* Keys, the global key sequence, threefry bits and the distribution
 * builders (kernels in ops/random_dist.c). */
#include "ops/random.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/random_internal.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

/* ---- threefry ---- */

static inline uint32_t rotl(uint32_t x, unsigned r) { return (x << r) | (x >> (32 - r)); }

/* Threefry-2x32 with 20 rounds (Salmon et al.), as JAX and MLX use it. */
static void threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t *o0,
                         uint32_t *o1) {
  static const unsigned rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 4; j++) {
      x0 += x1;
      x1 = rotl(x1, rot[i % 2][j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + (uint32_t)i + 1;
  }
  *o0 = x0;
  *o1 = x1;
}

/* Writes word `loc` (or its leading bytes when the stream ends inside it). */
static void put_word(char *out, size_t bytes, size_t loc, uint32_t v) {
  if (4 * loc + 4 <= bytes)
    memcpy(out + 4 * loc, &v, 4);
  else if (4 * loc < bytes)
    memcpy(out + 4 * loc, &v, bytes - 4 * loc);
}

/* MLX's layout: the stream's ceil(bytes/4) words are split in two halves;
 * counter (i, half + odd + i) fills word i of the first half and the
 * matching word of the second; an odd middle word comes from (half, 0). */
void lc_threefry_fill(uint32_t k0, uint32_t k1, void *out_, size_t bytes) {
  char *out = out_;
  size_t words = (bytes + 3) / 4, half = words / 2;
  bool even = words % 2 == 0;
  size_t c0 = 0, c1 = half + !even;
  uint32_t a, b;
  for (; c0 + 1 < half; c0++, c1++) {
    threefry2x32(k0, k1, (uint32_t)c0, (uint32_t)c1, &a, &b);
    put_word(out, bytes, c0, a);
    put_word(out, bytes, c1, b);
  }
  if (c0 < half) {
    threefry2x32(k0, k1, (uint32_t)c0, (uint32_t)c1, &a, &b);
    put_word(out, bytes, c0++, a);
    put_word(out, bytes, c1, b);
  }
  if (!even) {
    threefry2x32(k0, k1, (uint32_t)c0, 0, &a, &b);
    put_word(out, bytes, half, a);
  }
}

/* ---- keys ---- */

struct lc_node *lc_random_key(uint64_t seed) {
  uint32_t k[2] = {(uint32_t)(seed >> 32), (uint32_t)seed};
  int two = 2;
  return lc_node_new_data(MLX_UINT32, 1, &two, k);
}

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static bool global_init;
static uint32_t global_key[2];

static void set_global(uint64_t seed) {
  global_key[0] = (uint32_t)(seed >> 32);
  global_key[1] = (uint32_t)seed;
  global_init = true;
}

void lc_random_seed(uint64_t seed) {
  pthread_mutex_lock(&global_lock);
  set_global(seed);
  pthread_mutex_unlock(&global_lock);
}

/* MLX's KeySequence::next: split the global key, keep the first half,
 * hand out the second. */
static struct lc_node *next_key(void) {
  uint32_t w[4];
  pthread_mutex_lock(&global_lock);
  if (!global_init) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    set_global((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
  }
  lc_threefry_fill(global_key[0], global_key[1], w, sizeof w);
  global_key[0] = w[0];
  global_key[1] = w[1];
  pthread_mutex_unlock(&global_lock);
  int two = 2;
  return lc_node_new_data(MLX_UINT32, 1, &two, w + 2);
}

/* A new reference to the key to use: key validated, or the next global. */
static struct lc_node *resolve_key(const char *fn, struct lc_node *key) {
  if (!key) return next_key();
  if (key->dtype != MLX_UINT32) {
    lc_error("%s: expected key type uint32 but received %s", fn, lc_dtype_name(key->dtype));
    return NULL;
  }
  if (key->ndim != 1 || key->shape[0] != 2) {
    char s[64];
    lc_error("%s: expected key shape (2) but received %s", fn,
             lc_shape_str(key->ndim, key->shape, s, sizeof s));
    return NULL;
  }
  return lc_node_retain(key);
}

/* ---- bits ---- */

static int bits_eval(struct lc_node *n) {
  const struct lc_node *keys = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  int64_t nkeys = keys->size / 2;
  uint32_t *kv = malloc(sizeof(uint32_t) * (size_t)(keys->size > 0 ? keys->size : 1));
  if (!kv) return lc_error("random bits: out of memory");
  lc_node_copy_out(keys, kv);
  size_t bytes_per_key = nkeys ? (size_t)n->size * lc_dtype_size(n->dtype) / (size_t)nkeys : 0;
  for (int64_t i = 0; i < nkeys; i++)
    lc_threefry_fill(kv[2 * i], kv[2 * i + 1], (char *)n->buf->data + (size_t)i * bytes_per_key,
                     bytes_per_key);
  free(kv);
  return 0;
}

/* A batch of keys (B, ..., 2) draws B blocks of the per-key shape: the
 * evaluator gives key i the i-th contiguous block, the bits that key alone
 * would give (as MLX's vmap of random bits). */
static int bits_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  struct lc_node *key = lc_rule_batch_front(in[0], ax[0], false);
  if (!key) return 1;
  int sh[n->ndim + 1];
  sh[0] = key->shape[0];
  memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
  out[0] = lc_node_new_op(LC_OP_RANDOM_BITS, n->dtype, n->ndim + 1, sh, 1, &key, NULL, 0);
  lc_node_release(key);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_random_bits = {.name = "random_bits",
                                            .eval_cpu = bits_eval,
                                            .eval_cuda = LC_CUDA(lc_cuda_eval_random_bits),
                                            .vjp = lc_rule_zero_vjp,
                                            .jvp = lc_rule_zero_jvp,
                                            .vmap = bits_vmap};

/* bits with an already resolved key (borrowed). */
static struct lc_node *bits_node(int ndim, const int *shape, int width, struct lc_node *key) {
  mlx_dtype t = width == 4 ? MLX_UINT32 : width == 2 ? MLX_UINT16 : MLX_UINT8;
  return lc_node_new_op(LC_OP_RANDOM_BITS, t, ndim, shape, 1, &key, NULL, 0);
}

struct lc_node *lc_random_bits(int ndim, const int *shape, int width, struct lc_node *key) {
  if (width != 1 && width != 2 && width != 4) {
    lc_error("random_bits: bit width must be in {1, 2, 4} but got %d", width);
    return NULL;
  }
  if (lc_shape_check("random_bits", ndim, shape)) return NULL;
  struct lc_node *k = resolve_key("random_bits", key);
  if (!k) return NULL;
  struct lc_node *r = bits_node(ndim, shape, width, k);
  lc_node_release(k);
  return r;
}

struct lc_node *lc_random_split(struct lc_node *key, int num) {
  if (num < 0) {
    lc_error("random_split: num must be non-negative (got %d)", num);
    return NULL;
  }
  int shape[2] = {num, 2};
  return lc_random_bits(2, shape, 4, key);
}

/* ---- distributions ---- */

/* The RANDOM_DIST node over fresh bits of `shape` and the extra inputs
 * (borrowed; each cast to its dtype and broadcast to shape). */
static struct lc_node *dist(const char *fn, struct lc_dist_params p, mlx_dtype ot, int ndim,
                            const int *shape, struct lc_node *key, int nx,
                            struct lc_node *const *x, const mlx_dtype *xt) {
  if (lc_shape_check(fn, ndim, shape)) return NULL;
  struct lc_node *in[5] = {NULL}, *r = NULL, *k = NULL;
  for (int i = 0; i < nx; i++) {
    int nd, cap = (x[i]->ndim > ndim ? x[i]->ndim : ndim) + 1, bs[cap];
    if (lc_broadcast_shapes(fn, ndim, shape, x[i]->ndim, x[i]->shape, &nd, bs)) goto out;
    if (!lc_shape_equal(nd, bs, ndim, shape)) {
      char a[128], b[128];
      lc_error("%s: cannot generate random values of shape %s from broadcasted shape %s", fn,
               lc_shape_str(ndim, shape, a, sizeof a), lc_shape_str(nd, bs, b, sizeof b));
      goto out;
    }
    struct lc_node *c = lc_astype(x[i], xt[i]);
    if (!c) goto out;
    in[i + 1] = lc_broadcast_to(c, ndim, shape);
    lc_node_release(c);
    if (!in[i + 1]) goto out;
  }
  if (!(k = resolve_key(fn, key)) || !(in[0] = bits_node(ndim, shape, 4, k))) goto out;
  r = lc_node_new_op(LC_OP_RANDOM_DIST, ot, ndim, shape, nx + 1, in, &p, sizeof p);
out:
  lc_node_release(k);
  for (int i = 0; i < 5; i++) lc_node_release(in[i]);
  return r;
}

static int check_float(const char *fn, mlx_dtype t, bool allow_f64) {
  if (!lc_dtype_valid(t)) return lc_error("%s: invalid dtype %d", fn, (int)t);
  if (!lc_dtype_is_float(t))
    return lc_error("%s: can only generate numbers with a real floating point type, not %s", fn,
                    lc_dtype_name(t));
  if (t == MLX_FLOAT64 && !allow_f64)
    return lc_error("%s: float64 is not supported (as in MLX's uniform)", fn);
  return 0;
}

struct lc_node *lc_random_uniform(struct lc_node *low, struct lc_node *high, int ndim,
                                  const int *shape, mlx_dtype t, struct lc_node *key) {
  if (check_float("uniform", t, false)) return NULL;
  struct lc_node *x[2] = {low, high};
  mlx_dtype xt[2] = {t, t};
  struct lc_dist_params p = {.kind = LC_DIST_UNIFORM};
  return dist("uniform", p, t, ndim, shape, key, 2, x, xt);
}

static struct lc_node *complex_normal(int ndim, const int *shape, struct lc_node *loc,
                                      struct lc_node *scale, struct lc_node *key) {
  if (lc_shape_check("normal", ndim, shape)) return NULL;
  struct lc_node *in[3] = {NULL}, *k = NULL, *r = NULL;
  struct lc_node *x[2] = {scale, loc};
  int nin = 1, bshape[ndim + 1];
  for (int i = 0; i < ndim; i++) bshape[i] = shape[i];
  bshape[ndim] = 2;
  for (int i = 0; i < 2; i++) {
    if (!x[i]) continue;
    struct lc_node *c = lc_astype(x[i], MLX_COMPLEX64);
    in[nin] = c ? lc_broadcast_to(c, ndim, shape) : NULL;
    lc_node_release(c);
    if (!in[nin++]) goto out;
  }
  if (!(k = resolve_key("normal", key)) || !(in[0] = bits_node(ndim + 1, bshape, 4, k))) goto out;
  int p[2] = {scale != NULL, loc != NULL};
  r = lc_node_new_op(LC_OP_RANDOM_CNORMAL, MLX_COMPLEX64, ndim, shape, nin, in, p, sizeof p);
out:
  lc_node_release(k);
  for (int i = 0; i < 3; i++) lc_node_release(in[i]);
  return r;
}

struct lc_node *lc_random_normal(int ndim, const int *shape, mlx_dtype t, struct lc_node *loc,
                                 struct lc_node *scale, struct lc_node *key) {
  if (t == MLX_COMPLEX64) return complex_normal(ndim, shape, loc, scale, key);
  if (check_float("normal", t, true)) return NULL;
  struct lc_node *zero = lc_node_new_scalar(t, 0.0);
  if (!zero) return NULL;
  struct lc_node *x[2] = {scale ? scale : zero, loc ? loc : zero};
  mlx_dtype xt[2] = {t, t};
  struct lc_dist_params p = {.kind = LC_DIST_NORMAL, .has_scale = scale != NULL,
                             .has_loc = loc != NULL};
  struct lc_node *r = dist("normal", p, t, ndim, shape, key, 2, x, xt);
  lc_node_release(zero);
  return r;
}

struct lc_node *lc_random_laplace(int ndim, const int *shape, mlx_dtype t, float loc,
                                  float scale, struct lc_node *key) {
  if (check_float("laplace", t, true)) return NULL;
  struct lc_dist_params p = {.kind = LC_DIST_LAPLACE, .loc = loc, .scale = scale};
  return dist("laplace", p, t, ndim, shape, key, 0, NULL, NULL);
}

struct lc_node *lc_random_gumbel(int ndim, const int *shape, mlx_dtype t, struct lc_node *key) {
  if (check_float("gumbel", t, false)) return NULL;
  struct lc_dist_params p = {.kind = LC_DIST_GUMBEL};
  return dist("gumbel", p, t, ndim, shape, key, 0, NULL, NULL);
}

struct lc_node *lc_random_truncated_normal(struct lc_node *lower, struct lc_node *upper, int ndim,
                                           const int *shape, mlx_dtype t, struct lc_node *key) {
  if (check_float("truncated_normal", t, false)) return NULL;
  struct lc_node *x[2] = {lower, upper};
  mlx_dtype xt[2] = {t, t};
  struct lc_dist_params p = {.kind = LC_DIST_TRUNC};
  return dist("truncated_normal", p, t, ndim, shape, key, 2, x, xt);
}

struct lc_node *lc_random_bernoulli(struct lc_node *pr, int ndim, const int *shape,
                                    struct lc_node *key) {
  if (!lc_dtype_is_float(pr->dtype)) {
    lc_error("bernoulli: probability p must be a float type, not %s", lc_dtype_name(pr->dtype));
    return NULL;
  }
  bool f64 = pr->dtype == MLX_FLOAT64;
  mlx_dtype xt[1] = {f64 ? MLX_FLOAT64 : MLX_FLOAT32};
  struct lc_dist_params p = {.kind = LC_DIST_BERNOULLI, .p_f64 = f64};
  return dist("bernoulli", p, MLX_BOOL, ndim, shape, key, 1, &pr, xt);
}

struct lc_node *lc_random_randint(struct lc_node *low, struct lc_node *high, int ndim,
                                  const int *shape, mlx_dtype t, struct lc_node *key) {
  if (!lc_dtype_valid(t) || lc_dtype_is_inexact(t)) {
    lc_error("randint: randint only accepts integer dtypes and bool (got %s)", lc_dtype_name(t));
    return NULL;
  }
  struct lc_node *x[4] = {low, high, low, high};
  mlx_dtype xt[4] = {MLX_FLOAT32, MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT64};
  struct lc_dist_params p = {.kind = LC_DIST_RANDINT};
  return dist("randint", p, t, ndim, shape, key, 4, x, xt);
}

/* ---- categorical, permutation ---- */

struct lc_node *lc_random_categorical(struct lc_node *logits, int axis, int ndim, const int *shape,
                                      struct lc_node *key) {
  int ax = axis < 0 ? axis + logits->ndim : axis;
  if (ax < 0 || ax >= logits->ndim) {
    lc_error("categorical: invalid axis %d for logits with %d dimensions", axis, logits->ndim);
    return NULL;
  }
  if (lc_shape_check("categorical", ndim, shape)) return NULL;
  if (!lc_dtype_is_float(logits->dtype)) {
    lc_error("categorical: logits must be a real floating point type, not %s",
             lc_dtype_name(logits->dtype));
    return NULL;
  }
  /* shape must hold logits' shape without axis, broadcast */
  int rnd = logits->ndim - 1, reduced[rnd > 0 ? rnd : 1];
  for (int i = 0, k = 0; i < logits->ndim; i++)
    if (i != ax) reduced[k++] = logits->shape[i];
  int cap = (ndim > rnd ? ndim : rnd) + 1, nd, bs[cap];
  if (lc_broadcast_shapes("categorical", ndim, shape, rnd, reduced, &nd, bs) ||
      !lc_shape_equal(nd, bs, ndim, shape)) {
    char a[128], b[128];
    lc_error("categorical: requested shape %s is not broadcast compatible with reduced logits "
             "shape %s", lc_shape_str(ndim, shape, a, sizeof a),
             lc_shape_str(rnd, reduced, b, sizeof b));
    return NULL;
  }
  /* gumbel noise of shape with logits' axis inserted where it lands */
  int off = ax + ndim - logits->ndim + 1, gnd = ndim + 1, gshape[gnd];
  for (int i = 0, k = 0; i < gnd; i++) gshape[i] = i == off ? logits->shape[ax] : shape[k++];
  struct lc_node *g = lc_random_gumbel(gnd, gshape, MLX_FLOAT32, key), *r = NULL;
  struct lc_node *lc = g ? lc_astype(logits, lc_dtype_promote(MLX_FLOAT32, logits->dtype)) : NULL;
  struct lc_node *lb = lc ? lc_broadcast_to(lc, gnd, gshape) : NULL;
  if (lb) {
    struct lc_node *in[2] = {g, lb};
    int p = off;
    r = lc_node_new_op(LC_OP_RANDOM_CATEGORICAL, MLX_UINT32, ndim, shape, 2, in, &p, sizeof p);
  }
  lc_node_release(g);
  lc_node_release(lc);
  lc_node_release(lb);
  return r;
}

struct lc_node *lc_random_permutation_arange(int n, struct lc_node *key) {
  if (n < 0) {
    lc_error("permutation: size must be non-negative (got %d)", n);
    return NULL;
  }
  struct lc_node *b = lc_random_bits(1, &n, 4, key);
  if (!b) return NULL;
  struct lc_node *r = lc_node_new_op(LC_OP_RANDOM_ARGSORT, MLX_UINT32, 1, &n, 1, &b, NULL, 0);
  lc_node_release(b);
  return r;
}

struct lc_node *lc_random_permutation(struct lc_node *x, int axis, struct lc_node *key) {
  int ax = axis < 0 ? axis + x->ndim : axis;
  if (ax < 0 || ax >= x->ndim) {
    lc_error("permutation: axis %d is out of bounds for an array with %d dimensions", axis,
             x->ndim);
    return NULL;
  }
  struct lc_node *perm = lc_random_permutation_arange(x->shape[ax], key);
  if (!perm) return NULL;
  struct lc_node *in[2] = {x, perm};
  struct lc_node *r =
      lc_node_new_op(LC_OP_RANDOM_TAKE, x->dtype, x->ndim, x->shape, 2, in, &ax, sizeof ax);
  lc_node_release(perm);
  return r;
}
