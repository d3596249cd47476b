/* Fuzz harness: the input bytes are a program over a small stack of arrays.
 *
 * Each instruction is an opcode byte and its operands: array creation with
 * dtypes and shapes from bytes (zero, huge and negative dimensions, invalid
 * dtypes), ops with axes from bytes (reductions, reshape, transpose,
 * slicing, concatenate, matmul, take, astype, ...), eval, tostring, and
 * mlx_compile of closures that sometimes fail; operands may be empty
 * handles. Every call either succeeds with a well-formed array or reports.
 *
 * Bounded work: an array is "big" when it has more than SMALL elements or
 * was built from a big array. Big arrays only go through lazy shape ops and
 * one check: materialising one whose bytes exceed the memory limit must
 * fail cleanly (lace rejects it; nothing is computed), tried only on big
 * arrays that are views of creations (cheap to evaluate). Shapes spanning
 * more than 2^56 elements must be rejected when the array is built. */
#include "fuzz.h"

#include <limits.h>

#define SLOTS 8
#define SMALL 4096
#define MAX_STEPS 48

struct prog {
  const uint8_t *p;
  size_t n, pos;
};

static unsigned u8(struct prog *g) { return g->pos < g->n ? g->p[g->pos++] : 0; }
static int i8(struct prog *g) { return (int)(int8_t)u8(g); }
static bool more(const struct prog *g) { return g->pos < g->n; }

struct slot {
  mlx_array a; /* ctx NULL: empty */
  bool big;
  bool view; /* evaluating it is cheap: a creation, or views of one */
};

struct vm {
  struct prog g;
  struct slot s[SLOTS];
  mlx_stream st;
};

/* A dimension: mostly small, sometimes extreme. */
static int dim_of(struct prog *g) {
  static const int special[] = {0, 1, -1, INT_MAX, 1 << 20, 1 << 30, 65536, -7, 3, 1 << 16, 46341};
  unsigned b = u8(g);
  if (b < 224) return (int)(b % 6);
  return special[b % (sizeof special / sizeof special[0])];
}

static mlx_dtype dtype_of(struct prog *g) {
  unsigned b = u8(g);
  if (b >= 250) return (mlx_dtype)(b - 240); /* 10..15: 14 and 15 are invalid */
  return (mlx_dtype)(b % 14);
}

/* A shape of up to 5 dims into sh; returns ndim. *huge: it spans more than
 * 2^56 elements (empty dims counted as 1), which lace must reject. */
static int shape_of(struct prog *g, int *sh, bool *huge) {
  int nd = (int)(u8(g) % 8);
  if (nd > 5) nd = (int)(u8(g) % 3); /* favour low ranks */
  double span = 1;
  for (int i = 0; i < nd; i++) {
    sh[i] = dim_of(g);
    span *= sh[i] > 1 ? sh[i] : 1;
  }
  *huge = span > 72057594037927936.0; /* 2^56 */
  return nd;
}

static struct slot *picked; /* the slot of the last pick, NULL: empty */

static mlx_array pick(struct vm *v, unsigned b, bool *big) {
  unsigned k = b % (SLOTS + 1);
  picked = NULL;
  if (k == SLOTS || !v->s[k].a.ctx) {
    *big = false;
    return (mlx_array){NULL};
  }
  picked = &v->s[k];
  *big = v->s[k].big;
  return v->s[k].a;
}

/* Checks a successful result and stores it in slot (u8) with its taint. */
static void store_as(struct vm *v, mlx_array r, bool from_big, bool view) {
  if (!r.ctx) abort(); /* success gives a non-empty array */
  size_t nd = mlx_array_ndim(r), size = 1;
  const int *sh = mlx_array_shape(r);
  for (size_t i = 0; i < nd; i++) {
    if (sh[i] < 0) abort();
    size *= (size_t)sh[i];
  }
  if (size != mlx_array_size(r)) abort();
  unsigned k = u8(&v->g) % SLOTS;
  mlx_array_free(v->s[k].a);
  v->s[k].a = r;
  v->s[k].big = from_big || size > SMALL;
  v->s[k].view = view;
}

static void store(struct vm *v, mlx_array r, bool from_big) { store_as(v, r, from_big, false); }

static void finish(struct vm *v, int rc, mlx_array r, bool from_big) {
  if (rc == 0) store(v, r, from_big);
  else mlx_array_free(r);
}

/* ---- creation ---- */

static void op_create(struct vm *v) {
  int sh[8];
  bool huge;
  unsigned kind = u8(&v->g) % 5;
  mlx_dtype t = dtype_of(&v->g);
  int nd = shape_of(&v->g, sh, &huge);
  mlx_array r = mlx_array_new();
  int rc;
  if (kind == 0) {
    rc = FUZZ_CALL(mlx_zeros(&r, sh, (size_t)nd, t, v->st));
  } else if (kind == 1) {
    rc = FUZZ_CALL(mlx_ones(&r, sh, (size_t)nd, t, v->st));
  } else if (kind == 2) {
    mlx_array val = mlx_array_new_float((float)i8(&v->g) / 4);
    rc = FUZZ_CALL(mlx_full(&r, sh, (size_t)nd, val, t, v->st));
    mlx_array_free(val);
  } else if (kind == 3) {
    double start = i8(&v->g), stop = i8(&v->g), step = i8(&v->g) / 8.0;
    rc = FUZZ_CALL(mlx_arange(&r, start, stop, step, t, v->st));
    huge = false;
  } else {
    /* data from the input; only shapes whose bytes the input can fill */
    float buf[64];
    for (int i = 0; i < 64; i++) buf[i] = (float)i8(&v->g) / 3;
    int n = 1;
    for (int i = 0; i < nd; i++) n = sh[i] < 0 || sh[i] > 64 ? 1000 : n * sh[i];
    if (n > 64 || t != MLX_FLOAT32) return;
    r = mlx_array_new_data(buf, sh, nd, MLX_FLOAT32);
    rc = r.ctx ? 0 : 1;
    huge = false;
  }
  if (huge && rc == 0) {
    fprintf(stderr, "fuzz_api: a shape spanning more than 2^56 elements was accepted\n");
    abort();
  }
  if (rc == 0) store_as(v, r, false, true);
  else mlx_array_free(r);
}

/* Materialising a big array: must fail when its bytes exceed the limit. */
static void op_materialize(struct vm *v, mlx_array a) {
  mlx_array r = mlx_array_new();
  if (FUZZ_CALL(mlx_exp(&r, a, v->st)) == 0) {
    size_t bytes = mlx_array_nbytes(r);
    if (bytes > FUZZ_MEMORY_LIMIT) {
      if (FUZZ_CALL(mlx_array_eval(r)) == 0) {
        fprintf(stderr, "fuzz_api: evaluating %zu bytes beyond the memory limit succeeded\n",
                bytes);
        abort();
      }
    }
  }
  mlx_array_free(r);
}

/* ---- shape ops (lazy; allowed on big arrays) ---- */

static void op_shape(struct vm *v, mlx_array a, bool big, bool view) {
  int buf[8], buf2[8], buf3[8];
  int nd = (int)(u8(&v->g) % 6);
  bool huge;
  mlx_array r = mlx_array_new();
  int rc = 1;
  unsigned op = u8(&v->g) % 10;
  switch (op) {
    case 0:
      for (int i = 0; i < nd; i++) buf[i] = dim_of(&v->g);
      rc = FUZZ_CALL(mlx_reshape(&r, a, buf, (size_t)nd, v->st));
      break;
    case 1:
      for (int i = 0; i < nd; i++) buf[i] = i8(&v->g) % 8;
      rc = FUZZ_CALL(mlx_transpose_axes(&r, a, buf, (size_t)nd, v->st));
      break;
    case 2:
      for (int i = 0; i < nd; i++) buf[i] = i8(&v->g), buf2[i] = i8(&v->g), buf3[i] = i8(&v->g) % 4;
      rc = FUZZ_CALL(mlx_slice(&r, a, buf, (size_t)nd, buf2, (size_t)nd, buf3, (size_t)nd, v->st));
      break;
    case 3:
      nd = shape_of(&v->g, buf, &huge);
      rc = FUZZ_CALL(mlx_broadcast_to(&r, a, buf, (size_t)nd, v->st));
      if (huge && rc == 0) abort();
      break;
    case 4:
      for (int i = 0; i < nd; i++) buf[i] = i8(&v->g) % 8;
      rc = FUZZ_CALL(mlx_expand_dims_axes(&r, a, buf, (size_t)nd, v->st));
      break;
    case 5:
      for (int i = 0; i < nd; i++) buf[i] = i8(&v->g) % 8;
      rc = FUZZ_CALL(mlx_squeeze_axes(&r, a, buf, (size_t)nd, v->st));
      break;
    case 6: rc = FUZZ_CALL(mlx_swapaxes(&r, a, i8(&v->g) % 8, i8(&v->g) % 8, v->st)); break;
    case 7: rc = FUZZ_CALL(mlx_flatten(&r, a, i8(&v->g) % 8, i8(&v->g) % 8, v->st)); break;
    case 8: {
      int64_t strides[8];
      for (int i = 0; i < nd; i++) {
        buf[i] = dim_of(&v->g);
        int s = i8(&v->g);
        strides[i] = s == -128 ? INT64_MAX : s == 127 ? INT64_MIN : s;
      }
      rc = FUZZ_CALL(mlx_as_strided(&r, a, buf, (size_t)nd, strides, (size_t)nd, u8(&v->g) % 16,
                                    v->st));
      break;
    }
    default:
      for (int i = 0; i < nd; i++) buf[i] = dim_of(&v->g);
      rc = FUZZ_CALL(mlx_tile(&r, a, buf, (size_t)nd, v->st));
      break;
  }
  /* reshape (may copy), flatten and tile compute; the others are views */
  bool still_view = view && op != 0 && op != 7 && op != 9;
  if (rc == 0) store_as(v, r, big, still_view);
  else mlx_array_free(r);
}

/* ---- compute ops (small arrays only) ---- */

static int reduce(struct vm *v, mlx_array *r, mlx_array a) {
  int axes[8];
  int na = (int)(u8(&v->g) % 4);
  for (int i = 0; i < na; i++) axes[i] = i8(&v->g) % 8;
  bool keep = u8(&v->g) & 1;
  switch (u8(&v->g) % 8) {
    case 0: return FUZZ_CALL(mlx_sum_axes(r, a, axes, (size_t)na, keep, v->st));
    case 1: return FUZZ_CALL(mlx_max_axis(r, a, axes[0], keep, v->st));
    case 2: return FUZZ_CALL(mlx_mean_axes(r, a, axes, (size_t)na, keep, v->st));
    case 3: return FUZZ_CALL(mlx_prod_axes(r, a, axes, (size_t)na, keep, v->st));
    case 4: return FUZZ_CALL(mlx_var_axes(r, a, axes, (size_t)na, keep, i8(&v->g) % 4, v->st));
    case 5: return FUZZ_CALL(mlx_logsumexp_axes(r, a, axes, (size_t)na, keep, v->st));
    case 6: return FUZZ_CALL(mlx_argmax_axis(r, a, axes[0], keep, v->st));
    default: return FUZZ_CALL(mlx_softmax_axes(r, a, axes, (size_t)na, keep, v->st));
  }
}

static int two_arrays(struct vm *v, mlx_array *r, mlx_array a, mlx_array b) {
  mlx_vector_array vec = mlx_vector_array_new();
  int rc = 1;
  switch (u8(&v->g) % 8) {
    case 0: rc = FUZZ_CALL(mlx_add(r, a, b, v->st)); break;
    case 1: rc = FUZZ_CALL(mlx_divide(r, a, b, v->st)); break;
    case 2: rc = FUZZ_CALL(mlx_matmul(r, a, b, v->st)); break;
    case 3: rc = FUZZ_CALL(mlx_take_axis(r, a, b, i8(&v->g) % 4, v->st)); break;
    case 4:
    case 5:
      if (a.ctx) mlx_vector_array_append_value(vec, a);
      if (b.ctx) mlx_vector_array_append_value(vec, b);
      rc = u8(&v->g) & 1 ? FUZZ_CALL(mlx_concatenate_axis(r, vec, i8(&v->g) % 4, v->st))
                         : FUZZ_CALL(mlx_stack_axis(r, vec, i8(&v->g) % 4, v->st));
      break;
    case 6: rc = FUZZ_CALL(mlx_where(r, a, b, a, v->st)); break;
    default: {
      mlx_array idx = mlx_array_new();
      if (FUZZ_CALL(mlx_astype(&idx, b, MLX_INT32, v->st)) == 0) {
        mlx_vector_array_append_value(vec, idx);
        int axes[1] = {i8(&v->g) % 3}, sizes[4] = {1, 1, 1, 1};
        int nd = (int)mlx_array_ndim(a);
        rc = FUZZ_CALL(mlx_gather(r, a, vec, axes, 1, sizes, nd < 4 ? (size_t)nd : 4, v->st));
      }
      mlx_array_free(idx);
      break;
    }
  }
  mlx_vector_array_free(vec);
  return rc;
}

static int one_array(struct vm *v, mlx_array *r, mlx_array a) {
  int ax = i8(&v->g) % 4;
  switch (u8(&v->g) % 9) {
    case 0: return FUZZ_CALL(mlx_astype(r, a, dtype_of(&v->g), v->st));
    case 1: return FUZZ_CALL(mlx_exp(r, a, v->st));
    case 2: return FUZZ_CALL(mlx_reciprocal(r, a, v->st));
    case 3: return FUZZ_CALL(mlx_sort_axis(r, a, ax, v->st));
    case 4: return FUZZ_CALL(mlx_argsort_axis(r, a, ax, v->st));
    case 5: return FUZZ_CALL(mlx_cumsum(r, a, ax, u8(&v->g) & 1, u8(&v->g) & 1, v->st));
    case 6: return FUZZ_CALL(mlx_repeat_axis(r, a, i8(&v->g) % 5, ax, v->st));
    case 7: return FUZZ_CALL(mlx_moveaxis(r, a, ax, i8(&v->g) % 4, v->st));
    default: {
      int axes[2] = {ax, i8(&v->g) % 4}, lo[2] = {i8(&v->g) % 3, 1}, hi[2] = {i8(&v->g) % 3, 0};
      mlx_array pv = mlx_array_new_int(7);
      int rc = FUZZ_CALL(mlx_pad(r, a, axes, 2, lo, 2, hi, 2, pv, u8(&v->g) & 1 ? "edge" : "constant",
                                 v->st));
      mlx_array_free(pv);
      return rc;
    }
  }
}

static void op_compute(struct vm *v, mlx_array a) {
  mlx_array r = mlx_array_new();
  int rc;
  unsigned kind = u8(&v->g) % 3;
  if (kind == 0) {
    rc = reduce(v, &r, a);
  } else if (kind == 1) {
    rc = one_array(v, &r, a);
  } else {
    bool bb;
    mlx_array b = pick(v, u8(&v->g), &bb);
    if (bb) return;
    rc = two_arrays(v, &r, a, b);
  }
  finish(v, rc, r, false);
}

static void op_split(struct vm *v, mlx_array a) {
  mlx_vector_array parts = mlx_vector_array_new();
  if (FUZZ_CALL(mlx_split(&parts, a, i8(&v->g) % 5, i8(&v->g) % 4, v->st)) == 0) {
    size_t n = mlx_vector_array_size(parts);
    if (n) {
      mlx_array p = mlx_array_new();
      if (FUZZ_CALL(mlx_vector_array_get(&p, parts, u8(&v->g) % n))) abort();
      store(v, p, false);
    }
  }
  mlx_vector_array_free(parts);
}

static void op_print(struct vm *v, mlx_array a) {
  if (u8(&v->g) & 1 || !fuzz_print_is_small(a)) {
    FUZZ_CALL(mlx_array_eval(a));
    return;
  }
  mlx_string s = mlx_string_new();
  FUZZ_CALL(mlx_array_tostring(&s, a));
  mlx_string_free(s);
}

/* ---- closures under mlx_compile ---- */

struct fn_code {
  uint8_t ops[4];
  int fail; /* 0: none; 1: return non-zero; 2: return non-zero after an op failed */
};

static int fn_body(mlx_vector_array *out, const mlx_vector_array in, void *payload) {
  const struct fn_code *c = payload;
  mlx_stream st = mlx_default_cpu_stream_new();
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t = mlx_array_new();
  int rc = 1;
  size_t n = mlx_vector_array_size(in);
  if (n == 0 || mlx_vector_array_get(&x, in, 0)) goto done;
  if (mlx_vector_array_get(&y, in, n - 1)) goto done;
  if (c->fail == 1) goto done;
  for (int i = 0; i < 4; i++) {
    int b = c->ops[i] % 8, k = c->ops[i] / 8 % 4 - 1;
    switch (b) {
      case 0: rc = mlx_add(&t, x, y, st); break;
      case 1: rc = mlx_exp(&t, x, st); break;
      case 2: rc = mlx_multiply(&t, x, y, st); break;
      case 3: rc = mlx_sum_axis(&t, x, k, true, st); break;
      case 4: rc = mlx_max_axis(&t, x, k, false, st); break;
      case 5: rc = mlx_softmax_axis(&t, x, k, false, st); break;
      case 6: rc = mlx_astype(&t, x, c->ops[i] % 2 ? MLX_INT32 : MLX_FLOAT16, st); break;
      default: rc = mlx_divide(&t, y, x, st); break;
    }
    if (rc) {
      if (c->fail == 2) goto done;
      rc = 0; /* carry on with x */
      continue;
    }
    if (mlx_array_size(t) > SMALL) continue; /* bounded work: broadcasts can grow */
    mlx_array_set(&x, t);
  }
  rc = mlx_vector_array_append_value(*out, x);
done:
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(t);
  mlx_stream_free(st);
  return rc;
}

static void op_compile(struct vm *v, mlx_array a, mlx_array b) {
  struct fn_code *c = malloc(sizeof *c);
  if (!c) return;
  for (int i = 0; i < 4; i++) c->ops[i] = (uint8_t)u8(&v->g);
  unsigned f = u8(&v->g);
  c->fail = f < 200 ? 0 : f < 228 ? 1 : 2;
  bool shapeless = u8(&v->g) & 1;
  mlx_closure fn = mlx_closure_new_func_payload(fn_body, c, free);
  mlx_closure cf = mlx_closure_new();
  if (FUZZ_CALL(mlx_compile(&cf, fn, shapeless)) == 0) {
    mlx_vector_array in = mlx_vector_array_new(), out = mlx_vector_array_new();
    if (a.ctx) mlx_vector_array_append_value(in, a);
    if (b.ctx) mlx_vector_array_append_value(in, b);
    for (int rep = 0; rep < 2; rep++)
      if (FUZZ_CALL(mlx_closure_apply(&out, cf, in)) == 0) {
        if (mlx_vector_array_size(out) != 1) abort();
        mlx_array r = mlx_array_new();
        if (FUZZ_CALL(mlx_vector_array_get(&r, out, 0))) abort();
        if (FUZZ_CALL(mlx_array_eval(r)) == 0 && rep) store(v, r, false);
        else mlx_array_free(r);
      }
    mlx_vector_array_free(in);
    mlx_vector_array_free(out);
  }
  mlx_closure_free(cf);
  mlx_closure_free(fn);
}

static void step(struct vm *v) {
  unsigned op = u8(&v->g) % 10;
  bool big, big2;
  if (op < 2) {
    op_create(v);
    return;
  }
  mlx_array a = pick(v, u8(&v->g), &big);
  switch (op) {
    case 2:
    case 3: op_shape(v, a, big, picked && picked->view); break;
    case 4:
    case 5:
      if (big && picked && picked->view) op_materialize(v, a);
      else if (big) break;
      else op_compute(v, a);
      break;
    case 6:
      if (!big) op_print(v, a);
      break;
    case 7:
      if (!big) op_split(v, a);
      break;
    case 8: {
      mlx_array b = pick(v, u8(&v->g), &big2);
      if (!big && !big2) op_compile(v, a, b);
      break;
    }
    default: { /* drop a slot */
      unsigned k = u8(&v->g) % SLOTS;
      mlx_array_free(v->s[k].a);
      v->s[k].a = mlx_array_new();
      break;
    }
  }
}

FUZZ_ENTRY(api) {
  fuzz_setup();
  struct vm v;
  memset(&v, 0, sizeof v);
  v.g = (struct prog){data, size, 0};
  v.st = mlx_default_cpu_stream_new();
  for (int i = 0; i < SLOTS; i++) v.s[i].a = mlx_array_new();
  for (int i = 0; i < MAX_STEPS && more(&v.g); i++) step(&v);
  for (int i = 0; i < SLOTS; i++) mlx_array_free(v.s[i].a);
  mlx_stream_free(v.st);
  return 0;
}
