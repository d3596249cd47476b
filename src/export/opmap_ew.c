/* MLX <-> lace elementwise primitives: unary math, casts, binary
 * arithmetic and comparisons, select, broadcast.
 *
 * In an MLX graph the inputs of an elementwise primitive already share
 * their shape and dtype (MLX's ops broadcast and cast first), so lace's
 * builders, which broadcast and promote, build the same node. */
#include <string.h>

#include "core/error.h"
#include "export/export.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/ternary.h"
#include "ops/tuple.h"
#include "ops/unary.h"

typedef struct lc_node *(*un_fn)(struct lc_node *);
typedef struct lc_node *(*bin_fn)(struct lc_node *, struct lc_node *);

struct un_row {
  const char *name;
  int op;
  un_fn fn;
};
struct bin_row {
  const char *name;
  int op;
  bin_fn fn;
};

static struct lc_node *round0(struct lc_node *a) { return lc_round(a, 0); }

/* MLX names of unary primitives without state, and their lace ops. */
static const struct un_row un_rows[] = {
    {"Abs", LC_OP_ABS, lc_abs},
    {"ArcCos", LC_OP_ARCCOS, lc_arccos},
    {"ArcCosh", LC_OP_ARCCOSH, lc_arccosh},
    {"ArcSin", LC_OP_ARCSIN, lc_arcsin},
    {"ArcSinh", LC_OP_ARCSINH, lc_arcsinh},
    {"ArcTan", LC_OP_ARCTAN, lc_arctan},
    {"ArcTanh", LC_OP_ARCTANH, lc_arctanh},
    {"Ceil", LC_OP_CEIL, lc_ceil},
    {"Conjugate", LC_OP_CONJUGATE, lc_conjugate},
    {"Copy", LC_OP_EW_COPY, lc_copy},
    {"Cos", LC_OP_COS, lc_cos},
    {"Cosh", LC_OP_COSH, lc_cosh},
    {"Erf", LC_OP_ERF, lc_erf},
    {"ErfInv", LC_OP_ERFINV, lc_erfinv},
    {"Exp", LC_OP_EXP, lc_exp},
    {"Expm1", LC_OP_EXPM1, lc_expm1},
    {"Floor", LC_OP_FLOOR, lc_floor},
    {"Imag", LC_OP_IMAG, lc_imag},
    {"Log1p", LC_OP_LOG1P, lc_log1p},
    {"LogicalNot", LC_OP_LOGICAL_NOT, lc_logical_not},
    {"Negative", LC_OP_NEGATIVE, lc_negative},
    {"Real", LC_OP_REAL, lc_real},
    {"Round", LC_OP_ROUND, round0},
    {"Sigmoid", LC_OP_SIGMOID, lc_sigmoid},
    {"Sign", LC_OP_SIGN, lc_sign},
    {"Sin", LC_OP_SIN, lc_sin},
    {"Sinh", LC_OP_SINH, lc_sinh},
    {"Square", LC_OP_SQUARE, lc_square},
    {"StopGradient", LC_OP_STOP_GRADIENT, lc_stop_gradient},
    {"Tan", LC_OP_TAN, lc_tan},
    {"Tanh", LC_OP_TANH, lc_tanh},
    {NULL, 0, NULL}};

/* Binary primitives without state. (MLX before FloorDivide wrote integer
 * floor_divide as an integer Divide; it is read as floor_divide.) */
static const struct bin_row bin_rows[] = {
    {"Add", LC_OP_ADD, lc_add},
    {"ArcTan2", LC_OP_ARCTAN2, lc_arctan2},
    {"Divide", LC_OP_DIVIDE, lc_divide},
    {"FloorDivide", LC_OP_FLOOR_DIVIDE, lc_floor_divide},
    {"Greater", LC_OP_GREATER, lc_greater},
    {"GreaterEqual", LC_OP_GREATER_EQUAL, lc_greater_equal},
    {"Less", LC_OP_LESS, lc_less},
    {"LessEqual", LC_OP_LESS_EQUAL, lc_less_equal},
    {"LogicalAnd", LC_OP_LOGICAL_AND, lc_logical_and},
    {"LogicalOr", LC_OP_LOGICAL_OR, lc_logical_or},
    {"LogAddExp", LC_OP_LOGADDEXP, lc_logaddexp},
    {"Maximum", LC_OP_MAXIMUM, lc_maximum},
    {"Minimum", LC_OP_MINIMUM, lc_minimum},
    {"Multiply", LC_OP_MULTIPLY, lc_multiply},
    {"NotEqual", LC_OP_NOT_EQUAL, lc_not_equal},
    {"Power", LC_OP_POWER, lc_power},
    {"Remainder", LC_OP_REMAINDER, lc_remainder},
    {"Subtract", LC_OP_SUBTRACT, lc_subtract},
    {NULL, 0, NULL}};

/* MLX's enums: Log::Base {two, ten, e}; BitwiseBinary::Op {And, Or, Xor,
 * LeftShift, RightShift}. */
enum { LOG_TWO, LOG_TEN, LOG_E };
static const int bitwise_ops[5] = {LC_OP_BITWISE_AND, LC_OP_BITWISE_OR, LC_OP_BITWISE_XOR,
                                   LC_OP_LEFT_SHIFT, LC_OP_RIGHT_SHIFT};
static const bin_fn bitwise_fns[5] = {lc_bitwise_and, lc_bitwise_or, lc_bitwise_xor,
                                      lc_left_shift, lc_right_shift};

/* ---- import ---- */

static int im_unary(const struct lc_xbuild *b) {
  for (const struct un_row *r = un_rows; r->name; r++)
    if (!strcmp(r->name, b->name)) return !(b->out[0] = r->fn(b->in[0]));
  return lc_error("internal: no unary importer for %s", b->name);
}

static int im_binary(const struct lc_xbuild *b) {
  for (const struct bin_row *r = bin_rows; r->name; r++) {
    if (strcmp(r->name, b->name)) continue;
    bool int_div = r->op == LC_OP_DIVIDE && !lc_dtype_is_inexact(b->in[0]->dtype);
    return !(b->out[0] = (int_div ? lc_floor_divide : r->fn)(b->in[0], b->in[1]));
  }
  return lc_error("internal: no binary importer for %s", b->name);
}

static int im_log(const struct lc_xbuild *b) {
  switch (b->st->items[0].i) {
  case LOG_TWO: return !(b->out[0] = lc_log2(b->in[0]));
  case LOG_TEN: return !(b->out[0] = lc_log10(b->in[0]));
  case LOG_E: return !(b->out[0] = lc_log(b->in[0]));
  default: return lc_error("import_function: Log with unknown base %lld", (long long)b->st->items[0].i);
  }
}

static int im_sqrt(const struct lc_xbuild *b) {
  return !(b->out[0] = (b->st->items[0].i ? lc_rsqrt : lc_sqrt)(b->in[0]));
}

static int im_astype(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_astype(b->in[0], (mlx_dtype)b->st->items[0].i));
}

static int im_view(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_view(b->in[0], (mlx_dtype)b->st->items[0].i));
}

static int im_equal(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_equal_nan(b->in[0], b->in[1], b->st->items[0].i != 0));
}

static int im_bitwise(const struct lc_xbuild *b) {
  int64_t op = b->st->items[0].i;
  if (op < 0 || op > 4) return lc_error("import_function: BitwiseBinary with unknown op %lld", (long long)op);
  return !(b->out[0] = bitwise_fns[op](b->in[0], b->in[1]));
}

static int im_divmod(const struct lc_xbuild *b) {
  if (b->nout != 2) return lc_error("import_function: DivMod with %d outputs", b->nout);
  return lc_divmod(b->in[0], b->in[1], &b->out[0], &b->out[1]);
}

static int im_select(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_where(b->in[0], b->in[1], b->in[2]));
}

#define UN(name) {name, "", 1, 1, im_unary}
#define BIN(name) {name, "", 2, 2, im_binary}
const struct lc_ximp lc_ximp_ew[] = {
    UN("Abs"), UN("ArcCos"), UN("ArcCosh"), UN("ArcSin"), UN("ArcSinh"), UN("ArcTan"),
    UN("ArcTanh"), UN("Ceil"), UN("Conjugate"), UN("Copy"), UN("Cos"), UN("Cosh"), UN("Erf"),
    UN("ErfInv"), UN("Exp"), UN("Expm1"), UN("Floor"), UN("Imag"), UN("Log1p"),
    UN("LogicalNot"), UN("Negative"), UN("Real"), UN("Round"), UN("Sigmoid"), UN("Sign"),
    UN("Sin"), UN("Sinh"), UN("Square"), UN("StopGradient"), UN("Tan"), UN("Tanh"),
    BIN("Add"), BIN("ArcTan2"), BIN("Divide"), BIN("FloorDivide"), BIN("Greater"), BIN("GreaterEqual"), BIN("Less"),
    BIN("LessEqual"), BIN("LogicalAnd"), BIN("LogicalOr"), BIN("LogAddExp"), BIN("Maximum"),
    BIN("Minimum"), BIN("Multiply"), BIN("NotEqual"), BIN("Power"), BIN("Remainder"),
    BIN("Subtract"),
    {"Log", "i", 1, 1, im_log},
    {"Sqrt", "b", 1, 1, im_sqrt},
    {"AsType", "D", 1, 1, im_astype},
    {"View", "D", 1, 1, im_view},
    {"Equal", "b", 2, 2, im_equal},
    {"BitwiseBinary", "i", 2, 2, im_bitwise},
    {"DivMod", "", 2, 2, im_divmod},
    {"Select", "", 3, 3, im_select},
    {NULL, NULL, 0, 0, NULL}};

/* ---- export ---- */

static int ex_unary(struct lc_xemit *e, const struct lc_cinstr *ins) {
  for (const struct un_row *r = un_rows; r->name; r++)
    if (r->op == ins->op) return lc_xe_same(e, ins, r->name, "");
  return lc_error("internal: no unary writer for %s", lc_prims[ins->op]->name);
}

static int ex_binary(struct lc_xemit *e, const struct lc_cinstr *ins) {
  for (const struct bin_row *r = bin_rows; r->name; r++)
    if (r->op == ins->op) return lc_xe_same(e, ins, r->name, "");
  for (int k = 0; k < 5; k++)
    if (bitwise_ops[k] == ins->op) return lc_xe_same(e, ins, "BitwiseBinary", "i", k);
  return lc_error("internal: no binary writer for %s", lc_prims[ins->op]->name);
}

static int ex_log(struct lc_xemit *e, const struct lc_cinstr *ins) {
  int base = ins->op == LC_OP_LOG2 ? LOG_TWO : ins->op == LC_OP_LOG10 ? LOG_TEN : LOG_E;
  return lc_xe_same(e, ins, "Log", "i", base);
}

static int ex_sqrt(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Sqrt", "b", ins->op == LC_OP_RSQRT);
}

static int ex_astype(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, ins->op == LC_OP_VIEW ? "View" : "AsType", "D",
                    (int)e->p->vals[ins->out[0]].dtype);
}

static int ex_equal(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Equal", "b", ins->op == LC_OP_NAN_EQUAL);
}

/* The tuple's outputs are its TUPLE_GET instructions' values (ids of
 * getters that were dropped are fresh). */
static int ex_divmod(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cprog *p = e->p;
  struct lc_xout out[2];
  uint64_t in[2] = {lc_xe_id(e, ins->in[0]), lc_xe_id(e, ins->in[1])};
  const struct lc_cval *a = &p->vals[ins->in[0]];
  mlx_dtype dt = a->dtype;
  for (int k = 0; k < 2; k++) out[k] = (struct lc_xout){0, dt, a->ndim, a->shape};
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *g = &p->instrs[i];
    if (g->op != LC_OP_TUPLE_GET || g->in[0] != ins->out[0]) continue;
    struct lc_node view = {.params = g->params, .params_size = g->params_size};
    int nout, k = lc_tuple_index(&view, &nout);
    if (k >= 0 && k < 2) out[k] = lc_xe_val(e, g->out[0]);
  }
  for (int k = 0; k < 2; k++)
    if (!out[k].id) out[k].id = lc_xe_new_id(e);
  return lc_xe_prim(e, "DivMod", 2, in, 2, out, "");
}

static int ex_tuple_get(struct lc_xemit *e, const struct lc_cinstr *ins) {
  (void)e, (void)ins; /* written with its tuple */
  return 0;
}

static int ex_select(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Select", "");
}

/* The value v seen before any broadcast (its broadcast's input; one with
 * a shape partner, lc_broadcast_like, has its own shape). */
static int unbroadcast(const struct lc_cprog *p, int v) {
  int pr = p->vals[v].prod;
  return pr >= 0 && p->instrs[pr].op == LC_OP_BROADCAST && p->instrs[pr].nin == 1
             ? p->instrs[pr].in[0]
             : v;
}

/* Shapeless files broadcast as MLX's shapeless traces do: Broadcast over
 * [x, the other operands of the elementwise op it feeds], whose output is
 * the broadcast of all their shapes. *n partners go to part. */
static int partners(const struct lc_xemit *e, const struct lc_cinstr *ins, int *part) {
  const struct lc_cprog *p = e->p;
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *c = &p->instrs[i];
    if (!(lc_prims[c->op]->flags & LC_PF_ELEMWISE) || c->nin > LC_FUSED_MAXARG) continue;
    int n = 0, k;
    for (k = 0; k < c->nin && c->in[k] != ins->out[0]; k++) {}
    if (k == c->nin) continue;
    for (k = 0; k < c->nin; k++)
      if (c->in[k] != ins->out[0]) part[n++] = unbroadcast(p, c->in[k]);
    return n;
  }
  return 0;
}

/* A broadcast with a shape partner is MLX's shapeless form already:
 * Broadcast over [x, partner]; exact files drop the partner. */
static int ex_broadcast(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  if (ins->nin == 2 && !e->shapeless) {
    uint64_t in = lc_xe_id(e, ins->in[0]);
    struct lc_xout out = lc_xe_val(e, ins->out[0]);
    return lc_xe_prim(e, "Broadcast", 1, &in, 1, &out, "I", o->ndim, o->shape);
  }
  if (ins->nin == 2) return lc_xe_same(e, ins, "Broadcast", "I", o->ndim, o->shape);
  int part[LC_FUSED_MAXARG], n = e->shapeless ? partners(e, ins, part) : 0;
  int nd = e->p->vals[ins->in[0]].ndim, sh[64];
  if (n && nd <= 64) { /* the dynamic form only when it gives the traced shape */
    if (nd) memcpy(sh, e->p->vals[ins->in[0]].shape, sizeof(int) * (size_t)nd);
    for (int k = 0; k < n && nd >= 0; k++) {
      const struct lc_cval *v = &e->p->vals[part[k]];
      int on, os[64];
      lc_error_mute(1);
      if (v->ndim > 64 || lc_broadcast_shapes("export", nd, sh, v->ndim, v->shape, &on, os))
        on = -1;
      lc_error_mute(-1);
      nd = on;
      if (on > 0) memcpy(sh, os, sizeof(int) * (size_t)on);
    }
    if (lc_shape_equal(nd, sh, o->ndim, o->shape)) {
      uint64_t in[1 + LC_FUSED_MAXARG];
      in[0] = lc_xe_id(e, ins->in[0]);
      for (int k = 0; k < n; k++) in[1 + k] = lc_xe_id(e, part[k]);
      struct lc_xout out = lc_xe_val(e, ins->out[0]);
      return lc_xe_prim(e, "Broadcast", 1 + n, in, 1, &out, "I", o->ndim, o->shape);
    }
  }
  return lc_xe_same(e, ins, "Broadcast", "I", o->ndim, o->shape);
}

#define EX(ID, fn) {LC_OP_##ID, fn}
const struct lc_xexp lc_xexp_ew[] = {
    EX(ABS, ex_unary), EX(ARCCOS, ex_unary), EX(ARCCOSH, ex_unary), EX(ARCSIN, ex_unary),
    EX(ARCSINH, ex_unary), EX(ARCTAN, ex_unary), EX(ARCTANH, ex_unary), EX(CEIL, ex_unary),
    EX(CONJUGATE, ex_unary), EX(EW_COPY, ex_unary), EX(COS, ex_unary), EX(COSH, ex_unary),
    EX(ERF, ex_unary), EX(ERFINV, ex_unary), EX(EXP, ex_unary), EX(EXPM1, ex_unary),
    EX(FLOOR, ex_unary), EX(IMAG, ex_unary), EX(LOG1P, ex_unary), EX(LOGICAL_NOT, ex_unary),
    EX(NEGATIVE, ex_unary), EX(REAL, ex_unary), EX(ROUND, ex_unary), EX(SIGMOID, ex_unary),
    EX(SIGN, ex_unary), EX(SIN, ex_unary), EX(SINH, ex_unary), EX(SQUARE, ex_unary),
    EX(STOP_GRADIENT, ex_unary), EX(TAN, ex_unary), EX(TANH, ex_unary),
    EX(ADD, ex_binary), EX(ARCTAN2, ex_binary), EX(DIVIDE, ex_binary), EX(GREATER, ex_binary),
    EX(GREATER_EQUAL, ex_binary), EX(LESS, ex_binary), EX(LESS_EQUAL, ex_binary),
    EX(LOGICAL_AND, ex_binary), EX(LOGICAL_OR, ex_binary), EX(LOGADDEXP, ex_binary),
    EX(MAXIMUM, ex_binary), EX(MINIMUM, ex_binary), EX(MULTIPLY, ex_binary),
    EX(NOT_EQUAL, ex_binary), EX(POWER, ex_binary), EX(REMAINDER, ex_binary),
    EX(SUBTRACT, ex_binary), EX(BITWISE_AND, ex_binary), EX(BITWISE_OR, ex_binary),
    EX(BITWISE_XOR, ex_binary), EX(LEFT_SHIFT, ex_binary), EX(RIGHT_SHIFT, ex_binary),
    EX(LOG, ex_log), EX(LOG2, ex_log), EX(LOG10, ex_log), EX(SQRT, ex_sqrt), EX(RSQRT, ex_sqrt),
    EX(ASTYPE, ex_astype), EX(VIEW, ex_astype), EX(EQUAL, ex_equal), EX(NAN_EQUAL, ex_equal),
    EX(FLOOR_DIVIDE, ex_binary), EX(DIVMOD, ex_divmod), EX(TUPLE_GET, ex_tuple_get),
    EX(SELECT, ex_select), EX(BROADCAST, ex_broadcast),
    {-1, NULL}};
