/* Simplify: common-subexpression elimination over a traced program.
 * Two instructions merge when they have the same op, arguments (after
 * earlier merges), params bytes, and output dtypes and shapes, unless the
 * op is LC_PF_NOCSE. Size-1 constants with equal dtype, shape and bytes
 * merge. No-ops (copy, stop_gradient: the value of their argument) are
 * replaced by their argument, so they cost nothing and split no fused
 * region; a program is never differentiated (a compiled function called
 * under a transform runs as itself), so no gradient needs them. Dead
 * instructions and constants are dropped by lc_cprog_compact.
 * One pass in topological order reaches the fixed point: arguments are
 * replaced before an instruction is compared. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/prim.h"

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_instr(const struct lc_cprog *p, const struct lc_cinstr *ins) {
  uint64_t h = mix((uint64_t)ins->op, (uint64_t)ins->nin);
  for (int k = 0; k < ins->nin; k++) h = mix(h, (uint64_t)ins->in[k]);
  const unsigned char *b = ins->params;
  for (size_t i = 0; i < ins->params_size; i++) h = mix(h, b[i]);
  for (int k = 0; k < ins->nout; k++) {
    const struct lc_cval *v = &p->vals[ins->out[k]];
    h = mix(h, (uint64_t)v->dtype);
    for (int d = 0; d < v->ndim; d++) h = mix(h, (uint64_t)v->shape[d]);
  }
  return h;
}

static bool same_instr(const struct lc_cprog *p, const struct lc_cinstr *a,
                       const struct lc_cinstr *b) {
  if (a->op != b->op || a->nin != b->nin || a->nout != b->nout ||
      a->params_size != b->params_size || a->dev != b->dev)
    return false;
  if (a->nin && memcmp(a->in, b->in, sizeof(int) * (size_t)a->nin)) return false;
  if (a->params_size && memcmp(a->params, b->params, a->params_size)) return false;
  for (int k = 0; k < a->nout; k++) {
    const struct lc_cval *x = &p->vals[a->out[k]], *y = &p->vals[b->out[k]];
    if (x->dtype != y->dtype || !lc_shape_equal(x->ndim, x->shape, y->ndim, y->shape))
      return false;
  }
  return true;
}

static bool is_noop(const struct lc_cprog *p, const struct lc_cinstr *ins) {
  if ((ins->op != LC_OP_EW_COPY && ins->op != LC_OP_STOP_GRADIENT) || ins->nin != 1 ||
      ins->nout != 1)
    return false;
  const struct lc_cval *a = &p->vals[ins->in[0]], *r = &p->vals[ins->out[0]];
  return a->dtype == r->dtype && lc_shape_equal(a->ndim, a->shape, r->ndim, r->shape);
}

static void merge_scalar_constants(struct lc_cprog *p, int *rep) {
  for (int c = 0; c < p->nconst; c++) {
    struct lc_node *a = p->consts[c];
    if (a->size != 1) continue;
    for (int e = 0; e < c; e++) {
      struct lc_node *b = p->consts[e];
      if (b->size != 1 || b->dtype != a->dtype ||
          !lc_shape_equal(a->ndim, a->shape, b->ndim, b->shape) ||
          memcmp(lc_node_data(a), lc_node_data(b), lc_dtype_size(a->dtype)))
        continue;
      rep[p->nin + c] = rep[p->nin + e];
      break;
    }
  }
}

int lc_compile_simplify(struct lc_cprog *p) {
  int *rep = malloc(sizeof(int) * ((size_t)p->nval + 1));
  size_t cap = 16;
  while (cap < 2 * (size_t)p->ninstr) cap *= 2;
  int *table = malloc(sizeof(int) * cap);
  uint64_t *hashes = malloc(sizeof(uint64_t) * ((size_t)p->ninstr + 1));
  if (!rep || !table || !hashes) {
    free(rep);
    free(table);
    free(hashes);
    return lc_error("out of memory");
  }
  for (int v = 0; v < p->nval; v++) rep[v] = v;
  for (size_t i = 0; i < cap; i++) table[i] = -1;
  merge_scalar_constants(p, rep);
  for (int i = 0; i < p->ninstr; i++) {
    struct lc_cinstr *ins = &p->instrs[i];
    for (int k = 0; k < ins->nin; k++) ins->in[k] = rep[ins->in[k]];
    if (is_noop(p, ins)) {
      rep[ins->out[0]] = ins->in[0];
      continue;
    }
    if (lc_prims[ins->op]->flags & LC_PF_NOCSE) continue;
    uint64_t h = hash_instr(p, ins);
    hashes[i] = h;
    size_t slot = (size_t)h & (cap - 1);
    for (; table[slot] >= 0; slot = (slot + 1) & (cap - 1)) {
      int j = table[slot];
      if (hashes[j] != h || !same_instr(p, &p->instrs[j], ins)) continue;
      for (int k = 0; k < ins->nout; k++) rep[ins->out[k]] = p->instrs[j].out[k];
      break;
    }
    if (table[slot] < 0) table[slot] = i;
  }
  for (int o = 0; o < p->nout; o++) p->outs[o] = rep[p->outs[o]];
  free(rep);
  free(table);
  free(hashes);
  return lc_cprog_compact(p);
}
