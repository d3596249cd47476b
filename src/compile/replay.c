/* Replay: a cached program instantiated over real inputs as lazy nodes.
 *
 * Exact replay reuses every traced shape. Shapeless replay (infer) computes
 * shapes from the inputs' instead, with numpy broadcasting as the one rule:
 *  - a BROADCAST instruction is not built where it is traced; its value
 *    stands for its source (the root of a chain of broadcasts);
 *  - except a broadcast with a shape partner (lc_broadcast_like: zeros_like
 *    and the like), which is built in the broadcast of its source's and
 *    its partner's shapes;
 *  - an elementwise or FUSED instruction's shape is the broadcast of its
 *    arguments' (sources') shapes; arguments that were not broadcast in the
 *    trace ("plain") must already have that shape, broadcast ones are
 *    broadcast to it;
 *  - other primitives need their output_shape slot (tuple primitives their
 *    tuple_build slot: getters then take their shapes and byte offsets
 *    from the rebuilt tuple), and input_shape for an argument that was a
 *    broadcast in the trace: it is broadcast to the shape that slot gives.
 * Anything outside these rules (a plain argument of another shape, a rank
 * change, a primitive without those slots) makes replay decline without
 * reporting, and the caller traces the function again for these shapes, so
 * shapeless compile never silently computes a different graph. The rule
 * matches the function whenever its shapes come from implicit broadcasting;
 * functions whose graph depends on input shapes in other ways (explicit
 * broadcast_to a shape read from an input) are outside shapeless compile's
 * contract, as in MLX. lc_compile_check_poly verifies at trace time that
 * the rule reproduces every traced shape, else the program is exact-only. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "core/graph.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/tuple.h"

struct rstate {
  const struct lc_cprog *p;
  struct lc_node **v; /* one owned reference per value (NULL: not built) */
  char *virt;         /* shapeless: value is a broadcast standing for v[] */
  /* shapeless: a rebuilt tuple value's getters (owned references, then
   * NULL-terminated), for its TUPLE_GET instructions; NULL elsewhere */
  struct lc_node ***tup;
  bool infer, reported;
};

/* Broadcasts shape (na, a) into (nd, sh); false when incompatible or when
 * the rank would exceed cap. */
static bool bcast_into(int *nd, int *sh, int cap, int na, const int *a) {
  if (na > cap) return false;
  if (na > *nd) {
    int shift = na - *nd;
    memmove(sh + shift, sh, sizeof(int) * (size_t)*nd);
    for (int i = 0; i < shift; i++) sh[i] = 1;
    *nd = na;
  }
  for (int i = 0; i < na; i++) {
    int *d = &sh[*nd - na + i];
    int x = a[i];
    if (*d == x || x == 1) continue;
    if (*d != 1) return false;
    *d = x;
  }
  return true;
}

/* Node for value id as an argument of a consumer of shape (nd, sh); NULL
 * when nd < 0 (materialise a virtual broadcast with its traced shape). */
static struct lc_node *arg_node(struct rstate *s, int id, int nd, const int *sh) {
  struct lc_node *n = s->v[id];
  if (!s->virt || !s->virt[id]) return lc_node_retain(n);
  const struct lc_cval *tv = &s->p->vals[id];
  if (nd < 0) return lc_broadcast_to(n, tv->ndim, tv->shape);
  return lc_broadcast_to(n, nd, sh);
}

static int decline(struct rstate *s) {
  (void)s;
  return 1;
}

static int fail(struct rstate *s) {
  s->reported = true;
  return 1;
}

/* Shapeless shape of an elementwise-like instruction over args; plain[k]
 * says whether arg k must already have the result's shape. */
static int infer_ew(struct rstate *s, const struct lc_cinstr *ins, const char *plainv, int ndim,
                    int *nd, int *sh) {
  *nd = 0;
  for (int k = 0; k < ins->nin; k++) {
    struct lc_node *a = s->v[ins->in[k]];
    if (!bcast_into(nd, sh, ndim, a->ndim, a->shape)) return decline(s);
  }
  if (*nd != ndim) return decline(s);
  for (int k = 0; k < ins->nin; k++) {
    int id = ins->in[k];
    bool plain = plainv ? plainv[k] != 0 : !(s->virt[id]);
    struct lc_node *a = s->v[id];
    if (plain && !lc_shape_equal(a->ndim, a->shape, *nd, sh)) return decline(s);
  }
  return 0;
}

/* Shapeless region shape of a row region: the broadcast of its FULL-mode
 * inputs; every input must broadcast to the shape of its mode (plain ones
 * must have it), and rows must stay at least 2 long (reductions over
 * shorter axes are traced again, with the reduction's own checks). */
static int infer_rows(struct rstate *s, const struct lc_cinstr *ins, const struct lc_fused_hdr *h,
                      int *nd, int *sh) {
  const struct lc_fused_in *fi = lc_fused_ins_in(h);
  int ndim = h->ndim;
  *nd = 0;
  for (int k = 0; k < ins->nin; k++) {
    struct lc_node *a = s->v[ins->in[k]];
    if (fi[k].mode == LC_FK_FULL && !bcast_into(nd, sh, ndim, a->ndim, a->shape))
      return decline(s);
  }
  if (*nd != ndim || ndim < 1 || sh[ndim - 1] < 2) return decline(s);
  for (int k = 0; k < ins->nin; k++) {
    struct lc_node *a = s->v[ins->in[k]];
    int t[ndim], tnd = lc_fused_kind_shape(fi[k].mode, ndim, sh, t);
    int b[ndim], bnd = tnd;
    memcpy(b, t, sizeof(int) * (size_t)tnd);
    if (!bcast_into(&bnd, b, tnd, a->ndim, a->shape) || !lc_shape_equal(bnd, b, tnd, t))
      return decline(s);
    bool plain = fi[k].plain && !s->virt[ins->in[k]];
    if (plain && !lc_shape_equal(a->ndim, a->shape, tnd, t)) return decline(s);
  }
  return 0;
}

/* Whether shape (na, a) broadcasts to (nd, sh). */
static bool bcasts_to(int na, const int *a, int nd, const int *sh) {
  if (na > nd) return false;
  for (int i = 0; i < na; i++) {
    int x = a[i], y = sh[nd - na + i];
    if (x != y && x != 1) return false;
  }
  return true;
}

/* A broadcast with a shape partner: built in the broadcast of its
 * (materialised) source's and partner's shapes. In the lazy graph the
 * partner is kept only while a transform traces (lc_broadcast_like). */
static int run_like(struct rstate *s, const struct lc_cinstr *ins, int ndim) {
  int src = ins->in[0], like = ins->in[1];
  if (s->virt[like]) return decline(s);
  struct lc_node *a = s->v[src], *b = s->v[like];
  int nd = 0, sh[ndim > 0 ? ndim : 1];
  if (!bcast_into(&nd, sh, ndim, a->ndim, a->shape) ||
      !bcast_into(&nd, sh, ndim, b->ndim, b->shape) || nd != ndim)
    return decline(s);
  struct lc_node *x = arg_node(s, src, nd, sh), *r = NULL;
  if (!x) return fail(s);
  if (lc_tracing()) {
    struct lc_node *in[2] = {x, b};
    r = lc_node_new_op(LC_OP_BROADCAST, x->dtype, nd, sh, 2, in, NULL, 0);
  } else {
    r = lc_broadcast_to(x, nd, sh);
  }
  lc_node_release(x);
  if (!r) return fail(s);
  s->v[ins->out[0]] = r;
  return 0;
}

/* Shapeless arguments of a non-elementwise instruction: arguments that were
 * broadcast in the trace are broadcast to the shape the primitive's
 * input_shape gives, the others are the replayed values. 0 with args[0..nin)
 * new references, or 1 (declined or failed; nothing held). */
static int infer_args(struct rstate *s, const struct lc_cinstr *ins, struct lc_node **args) {
  const struct lc_prim *prim = lc_prims[ins->op];
  int nin = ins->nin;
  char bc[nin > 0 ? nin : 1];
  struct lc_node *in[nin > 0 ? nin : 1];
  bool any = false;
  for (int k = 0; k < nin; k++) {
    bc[k] = s->virt[ins->in[k]];
    in[k] = s->v[ins->in[k]];
    any |= bc[k] != 0;
  }
  if (any && !prim->input_shape) return decline(s);
  for (int k = 0; k < nin; k++) {
    if (!bc[k]) {
      args[k] = lc_node_retain(in[k]);
      continue;
    }
    int nd = s->p->vals[ins->in[k]].ndim, sh[nd > 0 ? nd : 1];
    int rc = prim->input_shape(ins->params, nin, in, bc, k, nd, sh);
    if (!rc && !bcasts_to(in[k]->ndim, in[k]->shape, nd, sh)) rc = decline(s);
    if (!rc && !(args[k] = lc_broadcast_to(in[k], nd, sh))) rc = fail(s);
    if (rc) {
      while (k-- > 0) lc_node_release(args[k]);
      return 1;
    }
  }
  return 0;
}

/* A tuple primitive rebuilt over args (shapeless): its value is the new
 * tuple, its getters wait in s->tup for the TUPLE_GET instructions. */
static int run_tuple(struct rstate *s, const struct lc_cinstr *ins, struct lc_node **args) {
  const struct lc_prim *prim = lc_prims[ins->op];
  const struct lc_cval *tv = &s->p->vals[ins->out[0]];
  struct lc_node *outs[LC_TUPLE_MAXOUT];
  for (int k = 0; k < LC_TUPLE_MAXOUT; k++) outs[k] = NULL;
  lc_error_mute(1);
  int rc = prim->tuple_build(ins->params, ins->nin, args, outs);
  lc_error_mute(-1);
  if (rc) return decline(s);
  int nout = 0;
  struct lc_node *t = outs[0] && outs[0]->op == LC_OP_TUPLE_GET ? outs[0]->in[0] : NULL;
  if (t) lc_tuple_index(outs[0], &nout);
  bool ok = t && t->op == ins->op && t->nin == ins->nin && t->dtype == tv->dtype &&
            t->ndim == tv->ndim && t->params_size == ins->params_size &&
            (!t->params_size || !memcmp(t->params, ins->params, t->params_size)) &&
            nout >= 1 && nout <= LC_TUPLE_MAXOUT;
  struct lc_node **g = ok ? calloc((size_t)nout + 1, sizeof *g) : NULL;
  if (ok && !g) {
    lc_error("out of memory");
    s->reported = true;
  }
  for (int k = 0; k < LC_TUPLE_MAXOUT; k++) {
    if (g && k < nout) g[k] = outs[k];
    else lc_node_release(outs[k]);
  }
  if (!g) return ok ? 1 : decline(s);
  s->v[ins->out[0]] = lc_node_retain(t);
  s->tup[ins->out[0]] = g;
  return 0;
}

/* A getter of a rebuilt tuple: the rebuilt getter, which must keep its
 * traced dtype and rank. */
static int run_getter(struct rstate *s, const struct lc_cinstr *ins) {
  struct lc_node **g = s->tup[ins->in[0]];
  const struct lc_cval *ov = &s->p->vals[ins->out[0]];
  struct lc_node view = {.params = ins->params, .params_size = ins->params_size};
  int nout, k = lc_tuple_index(&view, &nout);
  int have = 0;
  while (g[have]) have++;
  if (k < 0 || k >= have || nout != have || g[k]->dtype != ov->dtype || g[k]->ndim != ov->ndim)
    return decline(s);
  s->v[ins->out[0]] = lc_node_retain(g[k]);
  return 0;
}

static int run_instr(struct rstate *s, int i) {
  const struct lc_cprog *p = s->p;
  const struct lc_cinstr *ins = &p->instrs[i];
  const struct lc_prim *prim = lc_prims[ins->op];
  const struct lc_cval *ov = &p->vals[ins->out[0]];
  int ndim = ov->ndim;
  /* a fused row region's shape can have one more dimension than its first
   * output (a ROW_DROP value) */
  int cap = ins->op == LC_OP_FUSED ? ((const struct lc_fused_hdr *)ins->params)->ndim : ndim;
  if (cap < ndim) cap = ndim;
  int shbuf[cap > 0 ? cap : 1];
  const int *shape = ov->shape;
  int nd = ndim;
  struct lc_node *args[ins->nin > 0 ? ins->nin : 1];
  int nargs = 0, rc = 1;

  if (s->infer && ins->op == LC_OP_BROADCAST && ins->nin == 2) return run_like(s, ins, ndim);
  if (s->infer && ins->op == LC_OP_BROADCAST) {
    int src = ins->in[0];
    s->v[ins->out[0]] = lc_node_retain(s->v[src]); /* the root, chains compose */
    s->virt[ins->out[0]] = 1;
    return 0;
  }
  if (ins->op == LC_OP_FUSED) {
    const struct lc_fused_hdr *h = ins->params;
    if (s->infer && h->rows) {
      if (infer_rows(s, ins, h, &nd, shbuf)) return 1;
      shape = shbuf;
    } else if (s->infer) {
      char plain[ins->nin > 0 ? ins->nin : 1];
      const struct lc_fused_in *fi = lc_fused_ins_in(h);
      for (int k = 0; k < ins->nin; k++) plain[k] = (char)fi[k].plain;
      if (infer_ew(s, ins, plain, h->ndim, &nd, shbuf)) return 1;
      shape = shbuf;
    } else {
      nd = h->ndim;
      for (int d = 0; d < nd; d++) shbuf[d] = lc_fused_shape(h)[d];
      shape = shbuf;
    }
    const struct lc_fused_in *fin = lc_fused_ins_in(h);
    for (; nargs < ins->nin; nargs++) {
      int t[nd > 0 ? nd : 1], tnd = lc_fused_kind_shape(h->rows ? fin[nargs].mode : LC_FK_FULL,
                                                         nd, shape, t);
      args[nargs] = arg_node(s, ins->in[nargs], tnd, t);
      if (!args[nargs]) goto out_fail;
    }
    struct lc_node *outs[ins->nout];
    if (lc_fused_build(h, nd, shape, args, outs)) goto out_fail;
    for (int k = 0; k < ins->nout; k++) s->v[ins->out[k]] = outs[k];
    rc = 0;
    goto out;
  }
  if (ins->nout != 1) {
    rc = lc_error("internal: compile replay of a %d-output instruction", ins->nout);
    s->reported = true;
    return rc;
  }
  if (s->infer && ins->op == LC_OP_TUPLE_GET && s->tup[ins->in[0]]) return run_getter(s, ins);
  if (s->infer && !(prim->flags & LC_PF_ELEMWISE)) {
    if (!prim->output_shape && !prim->tuple_build) return decline(s);
    if (infer_args(s, ins, args)) return 1;
    nargs = ins->nin;
    if (prim->tuple_build) {
      rc = run_tuple(s, ins, args);
      goto out;
    }
    if (prim->output_shape(ins->params, ins->nin, args, ndim, shbuf)) {
      rc = decline(s);
      goto out;
    }
    shape = shbuf;
  } else if (s->infer) {
    if (infer_ew(s, ins, NULL, ndim, &nd, shbuf)) return 1;
    shape = shbuf;
  }
  for (; nargs < ins->nin; nargs++) {
    args[nargs] = s->infer ? arg_node(s, ins->in[nargs], nd, shape)
                           : lc_node_retain(s->v[ins->in[nargs]]);
    if (!args[nargs]) goto out_fail;
  }
  s->v[ins->out[0]] = lc_node_new_op(ins->op, ov->dtype, nd, shape, ins->nin, args, ins->params,
                                     ins->params_size);
  if (!s->v[ins->out[0]]) goto out_fail;
  rc = 0;
  goto out;
out_fail:
  rc = fail(s);
out:
  for (int k = 0; k < nargs; k++) lc_node_release(args[k]);
  return rc;
}

static void free_state(struct rstate *s) {
  if (s->v)
    for (int v = 0; v < s->p->nval; v++) lc_node_release(s->v[v]);
  if (s->tup)
    for (int v = 0; v < s->p->nval; v++) {
      for (struct lc_node **g = s->tup[v]; g && *g; g++) lc_node_release(*g);
      free(s->tup[v]);
    }
  free(s->v);
  free(s->virt);
  free(s->tup);
}

/* Runs every instruction; on success s->v holds every value. */
static int run_all(struct rstate *s, struct lc_node *const *in) {
  const struct lc_cprog *p = s->p;
  s->v = calloc((size_t)p->nval + 1, sizeof *s->v);
  if (s->infer) {
    s->virt = calloc((size_t)p->nval + 1, 1);
    s->tup = calloc((size_t)p->nval + 1, sizeof *s->tup);
  }
  if (!s->v || (s->infer && (!s->virt || !s->tup))) {
    lc_error("out of memory");
    return fail(s);
  }
  for (int i = 0; i < p->nin; i++) s->v[i] = lc_node_retain(in[i]);
  for (int c = 0; c < p->nconst; c++) s->v[p->nin + c] = lc_node_retain(p->consts[c]);
  int dev = lc_build_device(), stream = lc_build_stream(), rc = 0;
  for (int i = 0; i < p->ninstr && !rc; i++) {
    bool any = p->instrs[i].dev == LC_DEV_ANY;
    lc_set_build_device(any ? dev : p->instrs[i].dev);
    lc_set_build_stream(any ? stream : p->instrs[i].stream);
    rc = run_instr(s, i);
  }
  lc_set_build_device(dev);
  lc_set_build_stream(stream);
  return rc;
}

int lc_compile_replay(const struct lc_cprog *p, struct lc_node *const *in, bool infer,
                      struct lc_node **outs, bool *reported) {
  struct rstate s = {.p = p, .infer = infer};
  int rc = run_all(&s, in);
  int o = 0;
  for (; !rc && o < p->nout; o++) {
    outs[o] = infer ? arg_node(&s, p->outs[o], -1, NULL) : lc_node_retain(s.v[p->outs[o]]);
    if (!outs[o]) rc = fail(&s);
  }
  if (rc)
    while (o-- > 0) lc_node_release(outs[o]);
  *reported = s.reported;
  free_state(&s);
  return rc;
}

/* ---- shape polymorphism check ---- */

void lc_compile_check_poly(struct lc_cprog *p) {
  p->poly = false;
  /* Virtual broadcasts (without a shape partner) may only feed elementwise
   * or broadcast instructions, or primitives with input_shape. */
  for (int o = 0; o < p->nout; o++) {
    int pr = p->vals[p->outs[o]].prod;
    if (pr >= 0 && p->instrs[pr].op == LC_OP_BROADCAST && p->instrs[pr].nin == 1) {
      lc_compile_dump_note("shapeless: output %d is a broadcast of one input: not polymorphic", o);
      return;
    }
  }
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    const struct lc_prim *pr = lc_prims[ins->op];
    if (pr->flags & LC_PF_ELEMWISE || ins->op == LC_OP_BROADCAST || ins->op == LC_OP_FUSED)
      continue;
    for (int k = 0; k < ins->nin && !pr->input_shape; k++) {
      int q = p->vals[ins->in[k]].prod;
      if (q >= 0 && p->instrs[q].op == LC_OP_BROADCAST && p->instrs[q].nin == 1) {
        lc_compile_dump_note("shapeless: i%d (%s) reads a virtual broadcast: not polymorphic", i,
                             pr->name);
        return;
      }
    }
    if (!pr->output_shape && !pr->tuple_build && ins->op != LC_OP_TUPLE_GET) {
      lc_compile_dump_note("shapeless: i%d (%s) has no output_shape: not polymorphic", i,
                           pr->name);
      return;
    }
  }
  /* Replaying with the traced input shapes must give every traced shape. */
  struct lc_node **ph = calloc((size_t)p->nin + 1, sizeof *ph);
  if (!ph) return;
  bool ok = true;
  for (int i = 0; i < p->nin && ok; i++) {
    const struct lc_cval *v = &p->vals[i];
    ph[i] = lc_node_new_op(LC_OP_PLACEHOLDER, v->dtype, v->ndim, v->shape, 0, NULL, &i, sizeof i);
    ok = ph[i] != NULL;
  }
  if (ok) {
    struct rstate s = {.p = p, .infer = true};
    lc_error_mute(1);
    ok = run_all(&s, ph) == 0;
    lc_error_mute(-1);
    if (!ok) lc_compile_dump_note("shapeless: replay at the traced shapes failed");
    for (int v = 0; ok && v < p->nval; v++) {
      if (s.virt[v]) continue;
      const struct lc_cval *tv = &p->vals[v];
      const struct lc_node *n = s.v[v];
      ok = lc_shape_equal(n->ndim, n->shape, tv->ndim, tv->shape);
      if (!ok) lc_compile_dump_note("shapeless: replay gives value %d another shape", v);
    }
    free_state(&s);
  }
  for (int i = 0; i < p->nin; i++) lc_node_release(ph[i]);
  free(ph);
  p->poly = ok;
}
