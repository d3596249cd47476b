/* Epilogue fusion: add(matmul(a, b), c) becomes one MATMUL instruction
 * with c as its third input (c_rounded: the product is rounded to the
 * output dtype, then c is added in that dtype, so the value is the same
 * bit for bit). On a GPU a product of a few rows (the GEMV kernels) then
 * adds c as it writes, one kernel instead of two: a transformer's residual
 * connections after its attention and MLP projections.
 *
 * A pair is rewritten when: the add and the matmul run on the same device,
 * a GPU (LACE_FUSE_EPILOGUE=all: on the CPU too, for tests; =0: nowhere);
 * the matmul is a plain one (no c, alpha 1, not gather or segmented) of a
 * floating dtype, whose result only this add reads and is no output of
 * the program; c has the add's dtype and shape (no broadcast), which are
 * the matmul's. The add instruction becomes the matmul in place, so its
 * arguments (c included) precede it; the old matmul is left dead and
 * lc_cprog_compact drops it.
 *
 * Product grouping (lc_compile_group_products, after): up to
 * LC_MM_GROUP_MAX plain matmuls of one GPU that read the same a, with equal
 * params and dtype, whose b are inputs or constants of the program (so
 * that the group cannot depend on its own results), become one
 * MATMUL_GROUP tuple and a TUPLE_GET per product, in place of the
 * products. Opt-in until it has run on a GPU: LACE_GROUP_PRODUCTS=1 (GPU
 * instructions) or =all (every device, for tests). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"

/* A pass's scope from environment variable `name`: 0 off, 1 GPU
 * instructions, 2 every device ("all"); unset or empty: dflt. Read once
 * per compile. */
static int env_scope(const char *name, int dflt) {
  const char *e = getenv(name);
  if (!e || !*e) return dflt;
  if (!strcmp(e, "0")) return 0;
  return !strcmp(e, "all") ? 2 : 1;
}

/* Whether ins is a plain matmul (one output, two inputs: no c, alpha 1,
 * not gather or segmented). */
static bool plain_matmul(const struct lc_cinstr *ins) {
  if (ins->op != LC_OP_MATMUL || ins->nin != 2 || ins->nout != 1 ||
      ins->params_size != sizeof(struct lc_matmul_params))
    return false;
  const struct lc_matmul_params *mp = ins->params;
  return !mp->has_c && !mp->gather && !mp->segmented && mp->alpha == 1.0f;
}

static bool float_dtype(mlx_dtype t) {
  return t == MLX_FLOAT32 || t == MLX_FLOAT16 || t == MLX_BFLOAT16;
}

/* Whether value v (read by the add at index i, argument k) is a plain
 * matmul's result that may take the other argument as its c. */
static bool fusable_pair(const struct lc_cprog *p, const int *uses, int i, int k) {
  const struct lc_cinstr *add = &p->instrs[i];
  int v = add->in[k], c = add->in[1 - k];
  const struct lc_cval *mv = &p->vals[v], *cv = &p->vals[c], *ov = &p->vals[add->out[0]];
  if (mv->prod < 0 || uses[v] != 1) return false;
  const struct lc_cinstr *mm = &p->instrs[mv->prod];
  if (!plain_matmul(mm) || mm->dev != add->dev) return false;
  return float_dtype(mv->dtype) && mv->dtype == cv->dtype && mv->dtype == ov->dtype &&
         lc_shape_equal(mv->ndim, mv->shape, ov->ndim, ov->shape) &&
         lc_shape_equal(cv->ndim, cv->shape, ov->ndim, ov->shape);
}

int lc_compile_fuse_epilogues(struct lc_cprog *p) {
  int scope = env_scope("LACE_FUSE_EPILOGUE", 1);
  if (!scope) return 0;
  /* how many times each value is read (outputs count: they must survive) */
  int *uses = calloc((size_t)p->nval + 1, sizeof(int));
  if (!uses) return lc_error("out of memory");
  for (int i = 0; i < p->ninstr; i++)
    for (int k = 0; k < p->instrs[i].nin; k++) uses[p->instrs[i].in[k]]++;
  for (int o = 0; o < p->nout; o++) uses[p->outs[o]]++;
  int rewritten = 0, rc = 0;
  for (int i = 0; i < p->ninstr && !rc; i++) {
    struct lc_cinstr *add = &p->instrs[i];
    if (add->op != LC_OP_ADD || add->nin != 2 || add->nout != 1 || add->params_size ||
        (scope == 1 && add->dev < 0))
      continue;
    int k = fusable_pair(p, uses, i, 0) ? 0 : fusable_pair(p, uses, i, 1) ? 1 : -1;
    if (k < 0) continue;
    const struct lc_cinstr *mm = &p->instrs[p->vals[add->in[k]].prod];
    struct lc_matmul_params mp = *(const struct lc_matmul_params *)mm->params;
    mp.has_c = mp.c_rounded = 1;
    mp.beta = 1.0f;
    int *in = malloc(sizeof(int) * 3);
    void *params = malloc(sizeof mp);
    if (!in || !params) {
      free(in);
      free(params);
      rc = lc_error("out of memory");
      break;
    }
    in[0] = mm->in[0];
    in[1] = mm->in[1];
    in[2] = add->in[1 - k];
    memcpy(params, &mp, sizeof mp);
    uses[add->in[k]]--; /* the old matmul's result: now read by nothing */
    free(add->in);
    add->op = LC_OP_MATMUL;
    add->nin = 3;
    add->in = in;
    add->params = params;
    add->params_size = sizeof mp;
    rewritten++;
  }
  free(uses);
  if (rc) return rc;
  return rewritten ? lc_cprog_compact(p) : 0;
}

/* Whether instruction i is a plain matmul on an allowed device whose b is
 * an input or a constant. */
static bool groupable(const struct lc_cprog *p, int i, int scope) {
  const struct lc_cinstr *ins = &p->instrs[i];
  if (!plain_matmul(ins) || (scope == 1 && ins->dev < 0)) return false;
  const struct lc_cval *a = &p->vals[ins->in[0]], *b = &p->vals[ins->in[1]],
                       *o = &p->vals[ins->out[0]];
  return float_dtype(o->dtype) && a->dtype == o->dtype && b->dtype == o->dtype && b->prod < 0 &&
         o->ndim <= LC_MM_GROUP_MAX_NDIM;
}

/* Rewrites the group members[0..n) (instruction indices) as one tuple and
 * its getters. 0, or 1 after reporting. */
static int make_group(struct lc_cprog *p, const int *members, int n) {
  const struct lc_cinstr *first = &p->instrs[members[0]];
  struct lc_mm_group_params gp = {.n = n};
  memcpy(&gp.mm, first->params, sizeof gp.mm);
  int in[1 + LC_MM_GROUP_MAX], dev = first->dev, stream = first->stream;
  in[0] = first->in[0];
  int64_t nbytes[LC_MM_GROUP_MAX], offs[LC_MM_GROUP_MAX];
  for (int k = 0; k < n; k++) {
    const struct lc_cinstr *m = &p->instrs[members[k]];
    const struct lc_cval *o = &p->vals[m->out[0]];
    in[1 + k] = m->in[1];
    nbytes[k] = lc_shape_size(o->ndim, o->shape) * (int64_t)lc_dtype_size(o->dtype);
  }
  int tshape[2], tnd = lc_tuple_shape(lc_tuple_layout(n, nbytes, offs), tshape);
  if (!tnd) return 0; /* too large: left alone */
  int t = lc_cprog_add_val(p, MLX_UINT8, tnd, tshape);
  if (t < 0) return 1;
  int gi = lc_cprog_add_instr(p, LC_OP_MATMUL_GROUP, 1 + n, in, 1, &t, &gp, sizeof gp);
  if (gi < 0) return 1;
  p->instrs[gi].dev = dev;
  p->instrs[gi].stream = stream; /* first is stale: adding an instruction may move them */
  for (int k = 0; k < n; k++) {
    struct lc_cinstr *m = &p->instrs[members[k]];
    struct lc_tuple_get_params tg = {offs[k], k, n};
    void *params = malloc(sizeof tg);
    if (!params) return lc_error("out of memory");
    memcpy(params, &tg, sizeof tg);
    free(m->params);
    m->params = params;
    m->params_size = sizeof tg;
    m->op = LC_OP_TUPLE_GET;
    m->nin = 1;
    m->in[0] = t; /* in has room for 2 */
  }
  return 0;
}

int lc_compile_group_products(struct lc_cprog *p) {
  int scope = env_scope("LACE_GROUP_PRODUCTS", 0); /* off by default */
  if (!scope) return 0;
  int ni = p->ninstr, groups = 0;
  char *taken = calloc((size_t)ni + 1, 1);
  if (!taken) return lc_error("out of memory");
  int rc = 0;
  for (int i = 0; i < ni && !rc; i++) {
    if (taken[i] || !groupable(p, i, scope)) continue;
    int members[LC_MM_GROUP_MAX], n = 0;
    members[n++] = i;
    const struct lc_cinstr *x = &p->instrs[i];
    for (int j = i + 1; j < ni && n < LC_MM_GROUP_MAX; j++) {
      const struct lc_cinstr *y = &p->instrs[j];
      if (taken[j] || !groupable(p, j, scope) || y->in[0] != x->in[0] || y->dev != x->dev ||
          memcmp(y->params, x->params, sizeof(struct lc_matmul_params)) ||
          p->vals[y->out[0]].dtype != p->vals[x->out[0]].dtype)
        continue;
      members[n++] = j;
    }
    if (n < 2) continue;
    for (int k = 0; k < n; k++) taken[members[k]] = 1;
    rc = make_group(p, members, n);
    groups++;
  }
  free(taken);
  if (rc) return rc;
  return groups ? lc_cprog_compact(p) : 0;
}
