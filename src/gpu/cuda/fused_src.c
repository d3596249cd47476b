/* CUDA C++ source of a fused region (the FUSED blob of compile/compile.h)
 * for NVRTC.
 *
 * Every value of the region is a local variable of its arithmetic type
 * (float for the 16-bit floats, rounded to their precision after each
 * instruction, so that values are those the separate GPU kernels store);
 * primitives are ew_ops.cuh's functors, the ones gpu/cuda/ew.cu
 * instantiates, so a fused kernel computes what the unfused GPU kernels
 * compute. Inputs are read once per element, escaping values are written
 * once; nothing else touches memory.
 *
 * Elementwise regions (plan->rows == 0): lc_fk_ew, a grid-stride loop over
 * the flat index with each input read flat ('c'), once ('s') or through
 * strides over plan->nd merged dimensions ('g'); with plan->vec, also
 * lc_fk_ewv, U packs of V consecutive elements per thread, each through
 * one 16-byte (or narrower) access, for when every input is flat, a
 * scalar or repeated, and every pointer is aligned.
 *
 * Row regions: lc_fk_rows, G threads per row. A thread's share of a row's
 * FULL inputs (K elements, j = lane + k * G) is loaded once into registers
 * (K > 0); each reduction is one pass over that share computing the FULL
 * values it depends on, then a fold over the row's threads (lc_grp); ROW
 * values are per-thread scalars; a last pass computes and stores the
 * escaping FULL values. With K == 0 (long rows) each pass reads the inputs
 * again (from L2 for rows of up to a few hundred KiB). */
#ifdef LACE_CUDA
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "fk_src.h"
#include "gpu/cuda/fused.h"
#include "ops/prim.h"
#include "ops/reduce_kern.h"

/* ---- dtypes ---- */

static const char *storage(int dt) {
  switch (dt) {
  case MLX_BOOL: return "bool";
  case MLX_UINT8: return "unsigned char";
  case MLX_UINT16: return "unsigned short";
  case MLX_UINT32: return "unsigned int";
  case MLX_UINT64: return "unsigned long long";
  case MLX_INT8: return "signed char";
  case MLX_INT16: return "short";
  case MLX_INT32: return "int";
  case MLX_INT64: return "long long";
  case MLX_FLOAT16: return "unsigned short";
  case MLX_FLOAT32: return "float";
  case MLX_FLOAT64: return "double";
  case MLX_BFLOAT16: return "unsigned short";
  default: return NULL; /* complex64: not on the GPU */
  }
}

static bool half_like(int dt) { return dt == MLX_FLOAT16 || dt == MLX_BFLOAT16; }
static bool is_float(int dt) { return lc_dtype_is_float((mlx_dtype)dt); }
static bool is_int(int dt) { return lc_dtype_is_int((mlx_dtype)dt); }

static const char *arith(int dt) { return half_like(dt) ? "float" : storage(dt); }

/* Text of a stored element (expression e) as a value of its dtype. */
static void load(struct lc_strbuf *s, int dt, const char *e) {
  if (dt == MLX_FLOAT16)
    lc_strbuf_put(s, "lc_h2f(%s)", e);
  else if (dt == MLX_BFLOAT16)
    lc_strbuf_put(s, "lc_bf2f(%s)", e);
  else
    lc_strbuf_put(s, "%s", e);
}

static void store(struct lc_strbuf *s, int dt, const char *e) {
  if (dt == MLX_FLOAT16)
    lc_strbuf_put(s, "lc_f2h(%s)", e);
  else if (dt == MLX_BFLOAT16)
    lc_strbuf_put(s, "lc_f2bf(%s)", e);
  else
    lc_strbuf_put(s, "%s", e);
}

/* Text converting e, a value of dtype from, to a value of dtype to, with
 * astype's semantics (float to integer saturates, NaN gives 0). */
static void convert(struct lc_strbuf *s, int from, int to, const char *e) {
  if (to == MLX_BOOL)
    lc_strbuf_put(s, "((%s) != 0)", e);
  else if (is_int(to) && is_float(from))
    lc_strbuf_put(s, "lc_sat<%s>((double)(%s))", storage(to), e);
  else if (to == MLX_FLOAT16)
    lc_strbuf_put(s, from == MLX_FLOAT64 ? "lc_h2f(lc_d2h(%s))" : "lc_rh((float)(%s))", e);
  else if (to == MLX_BFLOAT16)
    lc_strbuf_put(s, "lc_rbf((float)(%s))", e);
  else
    lc_strbuf_put(s, "(%s)(%s)", storage(to), e);
}

/* ---- primitives ---- */

/* dtype classes an entry accepts: float32/float64 (CW), float16 (CH),
 * bfloat16 (CBH), any float (CF), integers (CI), bool (CB). A table is
 * searched in order, so an entry for 16-bit floats precedes its op's CF
 * entry. */
enum { CW = 1, CH = 2, CBH = 4, CF = CW | CH | CBH, CI = 8, CB = 16 };

struct fk_fn {
  int op;
  const char *fn;
  int cls;
};

static const struct fk_fn unary_fns[] = {
    {LC_OP_EW_COPY, "Copy", CF | CI | CB}, {LC_OP_STOP_GRADIENT, "Copy", CF | CI | CB},
    {LC_OP_ABS, "Abs", CF | CI},           {LC_OP_NEGATIVE, "Neg", CF | CI},
    {LC_OP_SQUARE, "Square", CF | CI},     {LC_OP_SIGN, "Sign", CF | CI},
    {LC_OP_SQRT, "Sqrt", CF},              {LC_OP_RSQRT, "Rsqrt", CF},
    /* exp and erf rounded to 16 bits: ew_ops.cuh's forms, as ew.cu's unfused kernels */
    {LC_OP_EXP, "Exp16", CH | CBH},        {LC_OP_ERF, "ErfBf", CBH},
    {LC_OP_EXP, "Exp", CF},                {LC_OP_EXPM1, "Expm1", CF},
    {LC_OP_LOG, "Log", CF},                {LC_OP_LOG1P, "Log1p", CF},
    {LC_OP_LOG2, "Log2", CF},              {LC_OP_LOG10, "Log10", CF},
    {LC_OP_SIN, "Sin", CF},                {LC_OP_COS, "Cos", CF},
    {LC_OP_TAN, "Tan", CF},                {LC_OP_ARCSIN, "Asin", CF},
    {LC_OP_ARCCOS, "Acos", CF},            {LC_OP_ARCTAN, "Atan", CF},
    {LC_OP_SINH, "Sinh", CF},              {LC_OP_COSH, "Cosh", CF},
    {LC_OP_TANH, "Tanh", CF},              {LC_OP_ARCSINH, "Asinh", CF},
    {LC_OP_ARCCOSH, "Acosh", CF},          {LC_OP_ARCTANH, "Atanh", CF},
    {LC_OP_SIGMOID, "Sigmoid", CF},        {LC_OP_ERF, "Erf", CF},
    {LC_OP_ERFINV, "Erfinv", CF},          {LC_OP_FLOOR, "Floor", CF},
    {LC_OP_CEIL, "Ceil", CF},              {LC_OP_ROUND, "Round", CF},
    {LC_OP_LOGICAL_NOT, "LogicalNot", CB}, {LC_OP_BITWISE_INVERT, "BitNot", CI},
};

/* Binary primitives; one primitive may have an entry per class. */
static const struct fk_fn binary_fns[] = {
    {LC_OP_ADD, "Add", CF | CI | CB},      {LC_OP_SUBTRACT, "Sub", CF | CI},
    {LC_OP_MULTIPLY, "Mul", CF | CI | CB}, {LC_OP_DIVIDE, "Div", CF},
    {LC_OP_FLOOR_DIVIDE, "FloorDivI", CI}, {LC_OP_REMAINDER, "RemF", CF},
    {LC_OP_REMAINDER, "RemI", CI},         {LC_OP_POWER, "PowF", CF},
    {LC_OP_POWER, "PowI", CI},             {LC_OP_MAXIMUM, "Max", CF | CI | CB},
    {LC_OP_MINIMUM, "Min", CF | CI | CB},  {LC_OP_ARCTAN2, "Atan2", CF},
    {LC_OP_LOGADDEXP, "LogAddExp", CF},    {LC_OP_EQUAL, "Eq", CF | CI | CB},
    {LC_OP_NOT_EQUAL, "Ne", CF | CI | CB}, {LC_OP_GREATER, "Gt", CF | CI | CB},
    {LC_OP_GREATER_EQUAL, "Ge", CF | CI | CB}, {LC_OP_LESS, "Lt", CF | CI | CB},
    {LC_OP_LESS_EQUAL, "Le", CF | CI | CB}, {LC_OP_NAN_EQUAL, "NanEq", CF},
    {LC_OP_NAN_EQUAL, "Eq", CI | CB},      {LC_OP_LOGICAL_AND, "And", CB},
    {LC_OP_LOGICAL_OR, "Or", CB},          {LC_OP_BITWISE_AND, "And", CB},
    {LC_OP_BITWISE_AND, "BitAnd", CI},     {LC_OP_BITWISE_OR, "Or", CB},
    {LC_OP_BITWISE_OR, "BitOr", CI},       {LC_OP_BITWISE_XOR, "Ne", CB},
    {LC_OP_BITWISE_XOR, "BitXor", CI},     {LC_OP_LEFT_SHIFT, "Shl", CI},
    {LC_OP_RIGHT_SHIFT, "Shr", CI},
};

static bool is_pred(int op) {
  return op == LC_OP_EQUAL || op == LC_OP_NOT_EQUAL || op == LC_OP_GREATER ||
         op == LC_OP_GREATER_EQUAL || op == LC_OP_LESS || op == LC_OP_LESS_EQUAL ||
         op == LC_OP_NAN_EQUAL || op == LC_OP_LOGICAL_AND || op == LC_OP_LOGICAL_OR;
}

static const char *find_fn(const struct fk_fn *t, size_t n, int op, int dt) {
  int c = dt == MLX_FLOAT16 ? CH : dt == MLX_BFLOAT16 ? CBH : is_float(dt) ? CW
        : is_int(dt) ? CI : dt == MLX_BOOL ? CB : 0;
  for (size_t i = 0; i < n; i++)
    if (t[i].op == op && (t[i].cls & c)) return t[i].fn;
  return NULL;
}

/* The dtype of argument a of an instruction. */
static int arg_dtype(const struct lc_fused_hdr *h, int a) {
  return a < 0 ? lc_fused_ins_in(h)[-a - 1].dtype : lc_fused_instrs(h)[a].dtype;
}

static void operand(char *buf, size_t len, int a) {
  snprintf(buf, len, a < 0 ? "x%d" : "v%d", a < 0 ? -a - 1 : a);
}

/* Appends "name{p0, p1, p2}": an ew_ops.cuh functor built from x's first
 * three double params, each spelled by its bits (exact, NaN included). */
static void put_functor3(struct lc_strbuf *s, const char *name, const struct lc_fused_hdr *h,
                         const struct lc_fused_ins *x) {
  unsigned long long b[3];
  memcpy(b, (const char *)h + x->params_off, sizeof b);
  lc_strbuf_put(s, "%s{__longlong_as_double(0x%llxll), __longlong_as_double(0x%llxll), "
                "__longlong_as_double(0x%llxll)}", name, b[0], b[1], b[2]);
}

/* Appends the value of elementwise instruction x (without rounding);
 * false when the GPU has no kernel for it. */
static bool ins_expr(struct lc_strbuf *s, const struct lc_fused_hdr *h, const struct lc_fused_ins *x) {
  char a[3][16];
  if (x->nin < 1 || x->nin > 3 || !storage(x->dtype) || !storage(x->in_dt)) return false;
  for (int k = 0; k < x->nin; k++) {
    if (!storage(arg_dtype(h, x->arg[k]))) return false;
    operand(a[k], sizeof a[k], x->arg[k]);
  }
  int dt = x->in_dt;
  switch (x->op) {
  case LC_OP_ASTYPE:
    if (x->nin != 1 || arg_dtype(h, x->arg[0]) != dt) return false;
    convert(s, dt, x->dtype, a[0]);
    return true;
  case LC_OP_SELECT:
    if (x->nin != 3 || arg_dtype(h, x->arg[0]) != MLX_BOOL || arg_dtype(h, x->arg[1]) != dt ||
        arg_dtype(h, x->arg[2]) != dt || x->dtype != dt)
      return false;
    lc_strbuf_put(s, "(%s ? %s : %s)", a[0], a[1], a[2]);
    return true;
  case LC_OP_NAN_TO_NUM: /* params: nan, posinf, neginf */
    if (x->nin != 1 || !is_float(dt) || x->dtype != dt || x->params_size < 3 * (int)sizeof(double))
      return false;
    put_functor3(s, "NanToNum", h, x);
    lc_strbuf_put(s, "(%s)", a[0]);
    return true;
  case LC_OP_ISCLOSE: /* params: rtol, atol, equal_nan */
    if (x->nin != 2 || x->dtype != MLX_BOOL || arg_dtype(h, x->arg[0]) != dt ||
        arg_dtype(h, x->arg[1]) != dt || x->params_size < 3 * (int)sizeof(double))
      return false;
    put_functor3(s, "IsClose", h, x);
    lc_strbuf_put(s, "(%s, %s)", a[0], a[1]);
    return true;
  case LC_OP_TO_FP8: /* float -> uint8 code */
    if (x->nin != 1 || !is_float(dt) || x->dtype != MLX_UINT8 || arg_dtype(h, x->arg[0]) != dt)
      return false;
    lc_strbuf_put(s, "ToFp8()(%s)", a[0]);
    return true;
  case LC_OP_FROM_FP8: /* uint8 code -> float, exact in every float dtype */
    if (x->nin != 1 || dt != MLX_UINT8 || !is_float(x->dtype) || arg_dtype(h, x->arg[0]) != dt)
      return false;
    lc_strbuf_put(s, "FromFp8()(%s)", a[0]);
    return true;
  default: break;
  }
  for (int k = 0; k < x->nin; k++)
    if (arg_dtype(h, x->arg[k]) != dt) return false;
  if (x->dtype != (is_pred(x->op) ? MLX_BOOL : dt)) return false;
  if (x->params_size) return false; /* no other primitive here has params */
  const char *fn = NULL;
  if (x->nin == 1) fn = find_fn(unary_fns, sizeof unary_fns / sizeof *unary_fns, x->op, dt);
  if (x->nin == 2) fn = find_fn(binary_fns, sizeof binary_fns / sizeof *binary_fns, x->op, dt);
  if (!fn) return false;
  if (x->nin == 1)
    lc_strbuf_put(s, "%s()(%s)", fn, a[0]);
  else
    lc_strbuf_put(s, "%s()(%s, %s)", fn, a[0], a[1]);
  return true;
}

/* Whether bfloat16 +, -, * use the GPU's bfloat16 arithmetic (lc_bf_add
 * and co. in fk_prelude.cuh): LACE_CUDA_BF16_NATIVE=0 turns it off. */
static bool bf16_native(void) {
  const char *e = getenv("LACE_CUDA_BF16_NATIVE");
  return !e || atoi(e) != 0;
}

/* The prelude's bfloat16 function for instruction x, or NULL. */
static const char *bf16_fn(const struct lc_fused_hdr *h, const struct lc_fused_ins *x) {
  if (x->dtype != MLX_BFLOAT16 || x->in_dt != MLX_BFLOAT16 || x->nin != 2 || x->params_size ||
      arg_dtype(h, x->arg[0]) != MLX_BFLOAT16 || arg_dtype(h, x->arg[1]) != MLX_BFLOAT16 ||
      !bf16_native())
    return NULL;
  switch (x->op) {
  case LC_OP_ADD: return "lc_bf_add";
  case LC_OP_SUBTRACT: return "lc_bf_sub";
  case LC_OP_MULTIPLY: return "lc_bf_mul";
  default: return NULL;
  }
}

/* Emits "const T vM = <value>;" for instruction m. */
static bool emit_ins(struct lc_strbuf *s, const struct lc_fused_hdr *h, int m, const char *indent) {
  const struct lc_fused_ins *x = &lc_fused_instrs(h)[m];
  const char *bf = bf16_fn(h, x);
  if (bf) {
    char a[2][16];
    operand(a[0], sizeof a[0], x->arg[0]);
    operand(a[1], sizeof a[1], x->arg[1]);
    lc_strbuf_put(s, "%sconst float v%d = %s(%s, %s);\n", indent, m, bf, a[0], a[1]);
    return true;
  }
  struct lc_strbuf e = {0};
  bool ok = ins_expr(&e, h, x);
  if (ok && !e.oom) {
    lc_strbuf_put(s, "%sconst %s v%d = ", indent, arith(x->dtype), m);
    if (half_like(x->dtype) && x->op != LC_OP_ASTYPE) /* astype rounds already */
      lc_strbuf_put(s, "%s(%s);\n", x->dtype == MLX_FLOAT16 ? "lc_rh" : "lc_rbf", e.data);
    else
      lc_strbuf_put(s, "%s;\n", e.data);
  }
  ok = ok && !e.oom;
  free(e.data);
  return ok;
}

/* ---- reductions (row regions) ---- */

struct red {
  int kind, acc;   /* enum lc_reduce_kind; accumulator dtype */
  int ddof;
};

static bool reduction(const struct lc_fused_hdr *h, const struct lc_fused_ins *x, struct red *r) {
  if (x->op != LC_OP_REDUCE || x->nin != 1 || x->params_size < (int)(2 * sizeof(int))) return false;
  const int *q = (const int *)(const void *)((const char *)h + x->params_off);
  r->kind = q[0];
  r->ddof = q[1];
  int dt = x->in_dt;
  if (!storage(dt) || !storage(x->dtype) || arg_dtype(h, x->arg[0]) != dt) return false;
  bool moments = r->kind == LC_RED_MEAN || r->kind == LC_RED_VAR || r->kind == LC_RED_STD ||
                 r->kind == LC_RED_LSE;
  if (r->kind < LC_RED_SUM || r->kind > LC_RED_LSE) return false;
  if (dt == MLX_FLOAT64)
    r->acc = MLX_FLOAT64;
  else if (is_float(dt))
    r->acc = MLX_FLOAT32;
  else if (moments)
    r->acc = MLX_FLOAT64;
  else
    r->acc = lc_dtype_is_unsigned((mlx_dtype)dt) ? MLX_UINT64 : MLX_INT64;
  return true;
}

static const char *fold_name(int kind) {
  switch (kind) {
  case LC_RED_PROD: return "RProd";
  case LC_RED_MAX: return "RMax";
  case LC_RED_MIN: return "RMin";
  case LC_RED_AND: return "RAnd";
  case LC_RED_OR: return "ROr";
  default: return "RSum";
  }
}

/* The fold's identity in accumulator dtype acc. */
static void identity(struct lc_strbuf *s, int kind, int acc) {
  const char *t = storage(acc);
  bool fl = is_float(acc);
  const char *inf = acc == MLX_FLOAT64 ? "__longlong_as_double(0x7ff0000000000000ll)"
                                       : "__int_as_float(0x7f800000)";
  switch (kind) {
  case LC_RED_PROD: case LC_RED_AND: lc_strbuf_put(s, "(%s)1", t); return;
  case LC_RED_MAX:
    if (fl) lc_strbuf_put(s, "(-%s)", inf);
    else lc_strbuf_put(s, acc == MLX_INT64 ? "(long long)(1ull << 63)" : "0ull");
    return;
  case LC_RED_MIN:
    if (fl) lc_strbuf_put(s, "%s", inf);
    else lc_strbuf_put(s, acc == MLX_INT64 ? "(long long)((1ull << 63) - 1)" : "(~0ull)");
    return;
  default: lc_strbuf_put(s, "(%s)0", t); return;
  }
}

/* ---- the row kernel ---- */

/* Marks in need[] the FULL instructions that instruction m reads,
 * transitively, stopping at values already held (held[], may be NULL),
 * and in inneed[] the FULL-mode inputs read. */
static void mark(const struct lc_fused_hdr *h, int m, bool *need, bool *inneed, const bool *held) {
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  for (int k = 0; k < fi[m].nin; k++) {
    int a = fi[m].arg[k];
    if (a < 0) {
      if (fin[-a - 1].mode == LC_FK_FULL) inneed[-a - 1] = true;
    } else if (fi[a].kind == LC_FK_FULL && fi[a].op != LC_OP_REDUCE && !need[a]) {
      need[a] = true;
      if (!held || !held[a]) mark(h, a, need, inneed, held);
    }
  }
}

/* The passes over a row: one per reduction (two for var, std and
 * logsumexp), then one storing the FULL outputs. target[q] is the
 * reduction of pass q, or -1 for the output pass. Returns the count. */
static int passes(const struct lc_fused_hdr *h, int *target) {
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  int n = 0;
  for (int m = 0; m < h->ninstr; m++) {
    if (fi[m].op != LC_OP_REDUCE) continue;
    struct red r;
    int twice = reduction(h, &fi[m], &r) &&
                (r.kind == LC_RED_VAR || r.kind == LC_RED_STD || r.kind == LC_RED_LSE);
    target[n++] = m;
    if (twice) target[n++] = m;
  }
  for (int o = 0; o < h->nout; o++)
    if (fo[o].kind == LC_FK_FULL) {
      target[n++] = -1;
      break;
    }
  return n;
}

/* The need set of pass q (held: values kept from earlier passes). */
static void pass_need(const struct lc_fused_hdr *h, int target, bool *need, bool *inneed,
                      const bool *held) {
  memset(need, 0, sizeof(bool) * (size_t)h->ninstr);
  memset(inneed, 0, sizeof(bool) * (size_t)(h->nin > 0 ? h->nin : 1));
  if (target >= 0) {
    mark(h, target, need, inneed, held);
    return;
  }
  const struct lc_fused_out *fo = lc_fused_outs(h);
  for (int o = 0; o < h->nout; o++) {
    if (fo[o].kind != LC_FK_FULL) continue;
    int m = fo[o].ins;
    if (need[m]) continue;
    need[m] = true;
    if (!held || !held[m]) mark(h, m, need, inneed, held);
  }
}

/* Which FULL values a thread keeps in registers between passes (kept[m]
 * set in pass order: computed in pass q and read again in a later one);
 * the count. */
static int plan_kept(const struct lc_fused_hdr *h, bool *kept) {
  int target[2 * h->ninstr + 2];
  int np = passes(h, target), n = 0;
  bool need[h->ninstr], later[h->ninstr], inneed[h->nin > 0 ? h->nin : 1];
  memset(kept, 0, sizeof(bool) * (size_t)h->ninstr);
  for (int q = 0; q < np; q++) {
    pass_need(h, target[q], need, inneed, kept);
    /* what later passes read when everything this pass computes is held */
    bool avail[h->ninstr];
    for (int m = 0; m < h->ninstr; m++) {
      avail[m] = kept[m] || need[m];
      later[m] = false;
    }
    for (int r = q + 1; r < np; r++) {
      bool nr[h->ninstr];
      pass_need(h, target[r], nr, inneed, avail);
      for (int m = 0; m < h->ninstr; m++) later[m] |= nr[m];
    }
    for (int m = 0; m < h->ninstr; m++)
      if (need[m] && !kept[m] && later[m]) {
        kept[m] = true;
        n++;
      }
  }
  return n;
}

int lc_fk_row_arrays(const struct lc_fused_hdr *h) {
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  int n = 0;
  for (int k = 0; k < h->nin; k++) n += fin[k].mode == LC_FK_FULL;
  if (h->ninstr > 0) {
    bool kept[h->ninstr];
    n += plan_kept(h, kept);
  }
  return n;
}

struct rowgen {
  const struct lc_fused_hdr *h;
  const struct lc_fk_plan *p;
  const int *target;
  int np, q;    /* passes; the next one to emit */
  bool *kept;   /* values held in t<m>[] (K > 0) */
  bool *planned; /* plan_kept's answer */
};

/* One pass over a thread's share of the row: per pack of V elements, the
 * needed inputs, the needed FULL instructions (kept ones read back, ones
 * to keep stored), then `tail` (text using j, e and the values); pre and
 * post wrap the pack (the output pass's stores). */
static bool emit_pass(struct lc_strbuf *s, struct rowgen *g, const char *pre, const char *tail,
                      const char *post) {
  const struct lc_fused_hdr *h = g->h;
  const struct lc_fk_plan *p = g->p;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  bool need[h->ninstr], inneed[h->nin > 0 ? h->nin : 1];
  int V = p->V;
  pass_need(h, g->target[g->q], need, inneed, p->K > 0 ? g->kept : NULL);
  bool store[h->ninstr];
  for (int m = 0; m < h->ninstr; m++) {
    store[m] = p->K > 0 && need[m] && !g->kept[m] && g->planned[m];
    if (store[m]) lc_strbuf_put(s, "  %s t%d[%d];\n", arith(fi[m].dtype), m, p->K * V);
  }
  if (p->K > 0)
    lc_strbuf_put(s, "#pragma unroll\n  for (int kk = 0; kk < %d; kk++) {\n"
                  "    const long long jp = lane + (long long)kk * %d;\n    if (jp * %d < L) {\n",
                  p->K, p->G, V);
  else
    lc_strbuf_put(s, "  for (long long jp = lane; jp * %d < L; jp += %d) {\n    {\n", V, p->G);
  for (int k = 0; k < h->nin; k++) {
      if (!inneed[k] || (p->K > 0 && !(p->nocache >> k & 1))) continue;
      const char *S = storage(fin[k].dtype);
      if (V == 1)
        lc_strbuf_put(s, "      const lc_pk<%s, 1> P%d = {r%d[jp * s%d]};\n", S, k, k, k);
      else
        lc_strbuf_put(s, "      const lc_pk<%s, %d> P%d = ((const lc_pk<%s, %d> *)r%d)[jp];\n", S, V, k,
                      S, V, k);
    }
  lc_strbuf_put(s, "%s#pragma unroll\n      for (int e = 0; e < %d; e++) {\n"
                "        const long long j = jp * %d + e;\n        (void)j;\n", pre, V, V);
  for (int k = 0; k < h->nin; k++) {
    if (!inneed[k]) continue;
    if (p->K > 0 && !(p->nocache >> k & 1)) {
      lc_strbuf_put(s, "        const %s x%d = c%d[kk * %d + e];\n", arith(fin[k].dtype), k, k, V);
    } else {
      char e[32];
      snprintf(e, sizeof e, "P%d.e[e]", k);
      lc_strbuf_put(s, "        const %s x%d = ", arith(fin[k].dtype), k);
      load(s, fin[k].dtype, e);
      lc_strbuf_put(s, ";\n");
    }
  }
  for (int m = 0; m < h->ninstr; m++) {
    if (!need[m]) continue;
    if (p->K > 0 && g->kept[m]) {
      lc_strbuf_put(s, "        const %s v%d = t%d[kk * %d + e];\n", arith(fi[m].dtype), m, m, V);
      continue;
    }
    if (!emit_ins(s, h, m, "        ")) return false;
    if (store[m]) lc_strbuf_put(s, "        t%d[kk * %d + e] = v%d;\n", m, V, m);
  }
  lc_strbuf_put(s, "%s      }\n%s    }\n  }\n", tail, post);
  for (int m = 0; m < h->ninstr; m++)
    if (store[m]) g->kept[m] = true;
  g->q++;
  return true;
}

static bool emit_reduce(struct lc_strbuf *s, struct rowgen *g, int m) {
  const struct lc_fused_hdr *h = g->h;
  const struct lc_fk_plan *p = g->p;
  const struct lc_fused_ins *x = &lc_fused_instrs(h)[m];
  struct red r;
  if (!reduction(h, x, &r)) return false;
  char val[16], line[256];
  operand(val, sizeof val, x->arg[0]);
  const char *A = storage(r.acc);
  struct lc_strbuf id = {0};
  int kind = r.kind;
  int first = kind == LC_RED_LSE ? LC_RED_MAX
              : (kind == LC_RED_MEAN || kind == LC_RED_VAR || kind == LC_RED_STD) ? LC_RED_SUM
                                                                                  : kind;
  identity(&id, first, r.acc);
  if (id.oom) return false;
  lc_strbuf_put(s, "  %s a%d = %s;\n", A, m, id.data);
  snprintf(line, sizeof line, "        a%d = %s()(a%d, (%s)%s);\n", m, fold_name(first), m, A, val);
  bool ok = emit_pass(s, g, "", line, "");
  lc_strbuf_put(s, "  a%d = lc_grp<%d>(a%d, %s(), (%s)%s, (%s *)lc_sh);\n", m, p->G, m,
                fold_name(first), A, id.data, A);
  free(id.data);
  char res[128];
  if (kind == LC_RED_MEAN || kind == LC_RED_VAR || kind == LC_RED_STD) {
    lc_strbuf_put(s, "  const %s m%d = a%d / (%s)L;\n", A, m, m, A);
    snprintf(res, sizeof res, "m%d", m);
  }
  if (kind == LC_RED_VAR || kind == LC_RED_STD) {
    lc_strbuf_put(s, "  %s q%d = 0;\n", A, m);
    snprintf(line, sizeof line, "        { const %s d = (%s)%s - m%d; q%d += d * d; }\n", A, A, val, m, m);
    ok = ok && emit_pass(s, g, "", line, "");
    lc_strbuf_put(s, "  q%d = lc_grp<%d>(q%d, RSum(), (%s)0, (%s *)lc_sh);\n", m, p->G, m, A, A);
    lc_strbuf_put(s, "  const %s den%d = (%s)(L - %d);\n", A, m, A, r.ddof);
    lc_strbuf_put(s, "  const %s vr%d = den%d > 0 ? q%d / den%d : (%s)__longlong_as_double(0x7ff8000000000000ll);\n",
                  A, m, m, m, m, A);
    snprintf(res, sizeof res, kind == LC_RED_STD ? "sqrt(vr%d)" : "vr%d", m);
  }
  if (kind == LC_RED_LSE) {
    lc_strbuf_put(s, "  const bool f%d = isfinite(a%d);\n  %s e%d = 0;\n", m, m, A, m);
    snprintf(line, sizeof line, "        if (f%d) e%d += exp((%s)%s - a%d);\n", m, m, A, val, m);
    ok = ok && emit_pass(s, g, "", line, "");
    lc_strbuf_put(s, "  e%d = lc_grp<%d>(e%d, RSum(), (%s)0, (%s *)lc_sh);\n", m, p->G, m, A, A);
    snprintf(res, sizeof res, "(f%d ? a%d + log(e%d) : a%d)", m, m, m, m);
  }
  if (first == kind) snprintf(res, sizeof res, "a%d", m);
  lc_strbuf_put(s, "  const %s v%d = ", arith(x->dtype), m);
  convert(s, r.acc, x->dtype, res);
  lc_strbuf_put(s, ";\n");
  return ok;
}

static bool gen_rows(struct lc_strbuf *s, const struct lc_fused_hdr *h, const struct lc_fk_plan *p) {
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  int block = p->G > 32 ? p->G : LC_FK_THREADS, V = p->V;
  if (p->G < 32 || p->G > 1024 || (p->G & (p->G - 1)) || p->K < 0 || p->K > 64 || V < 1 ||
      V > 16 || (V & (V - 1)))
    return false;
  int target[2 * h->ninstr + 2];
  bool kept[h->ninstr], planned[h->ninstr];
  memset(kept, 0, sizeof kept);
  plan_kept(h, planned);
  struct rowgen g = {h, p, target, passes(h, target), 0, kept, planned};
  lc_strbuf_put(s, "extern \"C\" __global__ void __launch_bounds__(%d) lc_fk_rows(const lc_fk_args a) {\n"
                "  lc_pdl_begin();\n",
                block);
  lc_strbuf_put(s, "  __shared__ unsigned long long lc_sh[32];\n  (void)lc_sh;\n");
  lc_strbuf_put(s, "  const int lane = threadIdx.x %% %d;\n", p->G);
  lc_strbuf_put(s, "  const long long row = (long long)blockIdx.x * %d + threadIdx.x / %d;\n",
                block / p->G, p->G);
  lc_strbuf_put(s, "  if (row >= a.n) return;\n  const long long L = a.L;\n  (void)L;\n");
  /* each input's row: outer offsets from the row's index, in 32-bit
   * divisions (rows < 2^31, eval_fused.c), none for the outermost dim (the
   * rest of the index is its coordinate) */
  for (int k = 0; k < h->nin; k++) lc_strbuf_put(s, "  long long o%d = 0;\n", k);
  if (p->nd > 0) {
    lc_strbuf_put(s, "  {\n    long long r = row;\n#pragma unroll\n    for (int d = %d; d >= 0; d--) {\n"
                  "      const long long q = d > 0 ? (long long)((unsigned)r / (unsigned)a.shape[d]) : 0,"
                  " c = r - q * a.shape[d];\n", p->nd - 1);
    for (int k = 0; k < h->nin; k++) lc_strbuf_put(s, "      o%d += c * a.st[%d][d];\n", k, k);
    lc_strbuf_put(s, "      r = q;\n    }\n  }\n");
  }
  for (int k = 0; k < h->nin; k++) {
    const char *S = storage(fin[k].dtype);
    if (!S) return false;
    lc_strbuf_put(s, "  const %s *__restrict__ r%d = (const %s *)a.in[%d] + o%d;\n", S, k, S, k, k);
    if (fin[k].mode == LC_FK_FULL) {
      if (V == 1) /* strided rows: packs of one element, at the inner stride */
        lc_strbuf_put(s, "  const long long s%d = a.inner[%d];\n", k, k);
      if (p->K > 0 && !(p->nocache >> k & 1)) {
        lc_strbuf_put(s, "  %s c%d[%d];\n#pragma unroll\n  for (int kk = 0; kk < %d; kk++) {\n"
                      "    const long long jp = lane + (long long)kk * %d;\n",
                      arith(fin[k].dtype), k, p->K * V, p->K, p->G);
        if (V > 1)
          lc_strbuf_put(s, "    const lc_pk<%s, %d> P = jp * %d < L ? ((const lc_pk<%s, %d> *)r%d)[jp] "
                        ": lc_pk<%s, %d>{};\n", S, V, V, S, V, k, S, V);
        lc_strbuf_put(s, "#pragma unroll\n    for (int e = 0; e < %d; e++) c%d[kk * %d + e] = ", V, k, V);
        char e[96];
        if (V > 1)
          snprintf(e, sizeof e, "P.e[e]");
        else
          snprintf(e, sizeof e, "(jp < L ? r%d[jp * s%d] : (%s)0)", k, k, S);
        load(s, fin[k].dtype, e);
        lc_strbuf_put(s, ";\n  }\n");
      } else if (V == 1) { /* uncached, strided: the pass loads read through the stride */
        lc_strbuf_put(s, "  (void)s%d;\n", k);
      }
      /* uncached inputs (K == 0, or the same row for every row: weights)
       * are read by each pass that needs them, from L1/L2 */
    } else {
      char e[16];
      snprintf(e, sizeof e, "r%d[0]", k);
      lc_strbuf_put(s, "  const %s x%d = ", arith(fin[k].dtype), k);
      load(s, fin[k].dtype, e);
      lc_strbuf_put(s, ";\n");
    }
  }
  /* ROW values and reductions in order; FULL values inside passes */
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &fi[m];
    if (x->op == LC_OP_REDUCE) {
      if (!emit_reduce(s, &g, m)) return false;
    } else if (x->kind != LC_FK_FULL) {
      for (int k = 0; k < x->nin; k++) {
        int a = x->arg[k];
        if (a < 0 ? fin[-a - 1].mode == LC_FK_FULL : fi[a].kind == LC_FK_FULL) return false;
      }
      if (!emit_ins(s, h, m, "  ")) return false;
    }
  }
  /* outputs: FULL ones as packs in the last pass, ROW ones by lane 0 */
  struct lc_strbuf pre = {0}, tail = {0}, post = {0};
  bool any_full = false;
  for (int o = 0; o < h->nout; o++) {
    int m = fo[o].ins;
    const char *S = storage(fo[o].dtype);
    if (m < 0 || m >= h->ninstr || !S || fo[o].dtype != fi[m].dtype) {
      free(pre.data);
      free(tail.data);
      free(post.data);
      return false;
    }
    bool full = fo[o].kind == LC_FK_FULL;
    lc_strbuf_put(s, "  %s *__restrict__ w%d = (%s *)a.out[%d] + row%s;\n", S, o, S, o,
                  full ? " * L" : "");
    char v[16];
    snprintf(v, sizeof v, "v%d", m);
    if (full) {
      any_full = true;
      lc_strbuf_put(&pre, "      lc_pk<%s, %d> W%d;\n", S, V, o);
      lc_strbuf_put(&tail, "        W%d.e[e] = ", o);
      store(&tail, fo[o].dtype, v);
      lc_strbuf_put(&tail, ";\n");
      lc_strbuf_put(&post, "      ((lc_pk<%s, %d> *)w%d)[jp] = W%d;\n", S, V, o, o);
    } else {
      lc_strbuf_put(s, "  if (lane == 0) w%d[0] = ", o);
      store(s, fo[o].dtype, v);
      lc_strbuf_put(s, ";\n");
    }
  }
  bool ok = !pre.oom && !tail.oom && !post.oom &&
            (!any_full || emit_pass(s, &g, pre.data, tail.data, post.data));
  free(pre.data);
  free(tail.data);
  free(post.data);
  lc_strbuf_put(s, "}\n");
  return ok && g.q == g.np;
}

/* ---- the elementwise kernels ---- */

/* Loads of the non-scalar inputs at index expressions, instructions and
 * stores (`out` formats the destination of output o, e.g. "w%d[i]"). */
static bool ew_body(struct lc_strbuf *s, const struct lc_fused_hdr *h, const struct lc_fk_plan *p,
                    const char *in_fmt_c, const char *in_fmt_g, const char *in_fmt_r,
                    const char *out_fmt) {
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  for (int k = 0; k < h->nin; k++) {
    if (p->lay[k] == 's') continue;
    char e[64];
    snprintf(e, sizeof e, p->lay[k] == 'g' ? in_fmt_g : p->lay[k] == 'r' ? in_fmt_r : in_fmt_c, k, k);
    lc_strbuf_put(s, "    const %s x%d = ", arith(fin[k].dtype), k);
    load(s, fin[k].dtype, e);
    lc_strbuf_put(s, ";\n");
  }
  for (int m = 0; m < h->ninstr; m++) {
    if (!emit_ins(s, h, m, "    ")) return false;
    if (fi[m].out >= 0) {
      char d[64], v[16];
      snprintf(d, sizeof d, out_fmt, fi[m].out);
      snprintf(v, sizeof v, "v%d", m);
      lc_strbuf_put(s, "    %s = ", d);
      store(s, lc_fused_outs(h)[fi[m].out].dtype, v);
      lc_strbuf_put(s, ";\n");
    }
  }
  return true;
}

/* Pointer declarations and scalar loads shared by both kernels. */
static void ew_prologue(struct lc_strbuf *s, const struct lc_fused_hdr *h, const struct lc_fk_plan *p) {
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  for (int k = 0; k < h->nin; k++) {
    const char *S = storage(fin[k].dtype);
    lc_strbuf_put(s, "  const %s *__restrict__ p%d = (const %s *)a.in[%d];\n", S, k, S, k);
    if (p->lay[k] == 'r') /* repeats its first D elements: element i at i % D */
      lc_strbuf_put(s, "  const %s D%d = (%s)a.st[%d][0];\n", p->idx64 ? "long long" : "unsigned",
                    k, p->idx64 ? "long long" : "unsigned", k);
    if (p->lay[k] == 's') {
      lc_strbuf_put(s, "  const %s x%d = ", arith(fin[k].dtype), k);
      char e[16];
      snprintf(e, sizeof e, "p%d[0]", k);
      load(s, fin[k].dtype, e);
      lc_strbuf_put(s, ";\n");
    }
  }
  for (int o = 0; o < h->nout; o++) {
    const char *S = storage(lc_fused_outs(h)[o].dtype);
    lc_strbuf_put(s, "  %s *__restrict__ w%d = (%s *)a.out[%d];\n", S, o, S, o);
  }
}

static bool gen_ew(struct lc_strbuf *s, const struct lc_fused_hdr *h, const struct lc_fk_plan *p) {
  bool strided = false;
  for (int k = 0; k < h->nin; k++) {
    if (p->lay[k] != 'c' && p->lay[k] != 's' && p->lay[k] != 'g' && p->lay[k] != 'r') return false;
    strided |= p->lay[k] == 'g';
  }
  if (strided && (p->nd < 1 || p->nd > LC_FK_MAX_DIMS)) return false;
  const char *ix = p->idx64 ? "long long" : "unsigned";
  lc_strbuf_put(s, "extern \"C\" __global__ void __launch_bounds__(%d) lc_fk_ew(const lc_fk_args a) {\n"
                "  lc_pdl_begin();\n",
                LC_FK_THREADS);
  ew_prologue(s, h, p);
  lc_strbuf_put(s, "  const %s n = (%s)a.n;\n", ix, ix);
  lc_strbuf_put(s, "  for (%s i = (%s)blockIdx.x * %d + threadIdx.x; i < n; i += (%s)gridDim.x * %d) {\n",
                ix, ix, LC_FK_THREADS, ix, LC_FK_THREADS);
  if (strided) {
    for (int k = 0; k < h->nin; k++)
      if (p->lay[k] == 'g') lc_strbuf_put(s, "    long long g%d = 0;\n", k);
    lc_strbuf_put(s, "    {\n      %s r = i;\n#pragma unroll\n      for (int d = %d; d >= 0; d--) {\n"
                  "        const %s q = r / (%s)a.shape[d], c = r - q * (%s)a.shape[d];\n",
                  ix, p->nd - 1, ix, ix, ix);
    for (int k = 0; k < h->nin; k++)
      if (p->lay[k] == 'g') lc_strbuf_put(s, "        g%d += (long long)c * a.st[%d][d];\n", k, k);
    lc_strbuf_put(s, "        r = q;\n      }\n    }\n");
  }
  if (!ew_body(s, h, p, "p%d[i]", "p%d[g%d]", "p%d[i %% D%d]", "w%d[i]")) return false;
  lc_strbuf_put(s, "  }\n}\n");
  if (!p->vec) return true;
  if (strided || p->V < 1 || p->V > 16) return false;
  lc_strbuf_put(s, "extern \"C\" __global__ void __launch_bounds__(%d) lc_fk_ewv(const lc_fk_args a) {\n"
                "  lc_pdl_begin();\n",
                LC_FK_THREADS);
  ew_prologue(s, h, p);
  int U = p->U > 1 ? p->U : 1;
  lc_strbuf_put(s, "  const long long nv = a.n / %d;\n"
                "  const long long c0 = (long long)blockIdx.x * %d + threadIdx.x;\n"
                "#pragma unroll\n  for (int u = 0; u < %d; u++) {\n"
                "  const long long c = c0 + u * %d;\n"
                "  if (c < nv) {\n", p->V, LC_FK_THREADS * U, U, LC_FK_THREADS);
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  for (int k = 0; k < h->nin; k++) {
    if (p->lay[k] == 'c')
      lc_strbuf_put(s, "    const lc_pk<%s, %d> P%d = ((const lc_pk<%s, %d> *)p%d)[c];\n",
                    storage(fin[k].dtype), p->V, k, storage(fin[k].dtype), p->V, k);
    if (p->lay[k] == 'r') /* D is a multiple of V: packs repeat too */
      lc_strbuf_put(s, "    const lc_pk<%s, %d> P%d = ((const lc_pk<%s, %d> *)p%d)[(%s)c %% (D%d / %d)];\n",
                    storage(fin[k].dtype), p->V, k, storage(fin[k].dtype), p->V, k,
                    p->idx64 ? "long long" : "unsigned", k, p->V);
  }
  for (int o = 0; o < h->nout; o++)
    lc_strbuf_put(s, "    lc_pk<%s, %d> W%d;\n", storage(lc_fused_outs(h)[o].dtype), p->V, o);
  lc_strbuf_put(s, "#pragma unroll\n    for (int e = 0; e < %d; e++) {\n", p->V);
  if (!ew_body(s, h, p, "P%d.e[e]", "", "P%d.e[e]", "W%d.e[e]")) return false;
  lc_strbuf_put(s, "    }\n");
  for (int o = 0; o < h->nout; o++)
    lc_strbuf_put(s, "    ((lc_pk<%s, %d> *)w%d)[c] = W%d;\n", storage(lc_fused_outs(h)[o].dtype),
                  p->V, o, o);
  lc_strbuf_put(s, "  } else {\n    const long long i = nv * %d + (c - nv);\n    if (i >= a.n) break;\n",
                p->V);
  if (!ew_body(s, h, p, "p%d[i]", "", "p%d[i %% D%d]", "w%d[i]")) return false;
  lc_strbuf_put(s, "  }\n  }\n}\n");
  return true;
}

/* ---- entry points ---- */

bool lc_fk_supported(const struct lc_fused_hdr *h) {
  if (h->nin > LC_FK_MAX_IN || h->nout > LC_FK_MAX_OUT || h->nout < 1 || h->ninstr < 1)
    return false;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  for (int k = 0; k < h->nin; k++)
    if (!storage(fin[k].dtype)) return false;
  for (int o = 0; o < h->nout; o++)
    if (!storage(fo[o].dtype)) return false;
  for (int m = 0; m < h->ninstr; m++) {
    struct lc_strbuf probe = {0};
    struct red r;
    bool ok = fi[m].op == LC_OP_REDUCE ? h->rows && reduction(h, &fi[m], &r)
                                       : ins_expr(&probe, h, &fi[m]);
    free(probe.data);
    if (!ok) return false;
  }
  return true;
}

int lc_fk_vector_width(const struct lc_fused_hdr *h) {
  size_t widest = 1;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  for (int k = 0; k < h->nin; k++)
    if (lc_dtype_size((mlx_dtype)fin[k].dtype) > widest) widest = lc_dtype_size((mlx_dtype)fin[k].dtype);
  for (int o = 0; o < h->nout; o++) {
    size_t z = lc_dtype_size((mlx_dtype)lc_fused_outs(h)[o].dtype);
    if (z > widest) widest = z;
  }
  return (int)(16 / widest);
}

char *lc_fk_source(const struct lc_fused_hdr *h, const struct lc_fk_plan *p) {
  if (!lc_fk_supported(h) || (bool)p->rows != (bool)h->rows) return NULL;
  struct lc_strbuf s = {0};
  lc_strbuf_put(&s, "// lace fused kernel (NVRTC, fmad off)\n%s\n", lc_fk_prelude_src);
  bool ok = p->rows ? gen_rows(&s, h, p) : gen_ew(&s, h, p);
  if (!ok || s.oom) {
    free(s.data);
    return NULL;
  }
  return s.data;
}
#endif
