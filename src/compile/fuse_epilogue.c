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
 * lc_cprog_compact drops it. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/linalg.h"
#include "ops/prim.h"

/* 0: off, 1: GPU instructions, 2: every device. Read once per call. */
static int epilogue_scope(void) {
  const char *e = getenv("LACE_FUSE_EPILOGUE");
  if (!e || !*e) return 1;
  if (!strcmp(e, "0")) return 0;
  return !strcmp(e, "all") ? 2 : 1;
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
  if (mm->op != LC_OP_MATMUL || mm->nin != 2 || mm->nout != 1 || mm->dev != add->dev ||
      mm->params_size != sizeof(struct lc_matmul_params))
    return false;
  const struct lc_matmul_params *mp = mm->params;
  if (mp->has_c || mp->gather || mp->segmented || mp->alpha != 1.0f) return false;
  return float_dtype(mv->dtype) && mv->dtype == cv->dtype && mv->dtype == ov->dtype &&
         lc_shape_equal(mv->ndim, mv->shape, ov->ndim, ov->shape) &&
         lc_shape_equal(cv->ndim, cv->shape, ov->ndim, ov->shape);
}

int lc_compile_fuse_epilogues(struct lc_cprog *p) {
  int scope = epilogue_scope();
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
