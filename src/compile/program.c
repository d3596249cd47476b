/* Compiled programs: construction, compaction (topological order, dead
 * code), validation. See compile.h for the invariants. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/prim.h"

struct lc_cprog *lc_cprog_new(int nin) {
  struct lc_cprog *p = calloc(1, sizeof *p);
  if (!p) {
    lc_error("out of memory");
    return NULL;
  }
  p->nin = nin;
  return p;
}

static void free_instr(struct lc_cinstr *ins) {
  free(ins->in);
  free(ins->out);
  if (ins->params && lc_prims[ins->op]->params_ref) lc_prims[ins->op]->params_ref(ins->params, -1);
  free(ins->params);
}

void lc_cprog_free(struct lc_cprog *p) {
  if (!p) return;
  for (int i = 0; i < p->nconst; i++) lc_node_release(p->consts[i]);
  free(p->consts);
  for (int v = 0; v < p->nval; v++) free(p->vals[v].shape);
  free(p->vals);
  for (int i = 0; i < p->ninstr; i++) free_instr(&p->instrs[i]);
  free(p->instrs);
  free(p->outs);
  free(p);
}

int lc_cprog_add_val(struct lc_cprog *p, mlx_dtype dt, int ndim, const int *shape) {
  if (p->nval == p->cap_vals) {
    int ncap = p->cap_vals ? 2 * p->cap_vals : 64;
    struct lc_cval *nv = realloc(p->vals, sizeof *nv * (size_t)ncap);
    if (!nv) return lc_error("out of memory"), -1;
    p->vals = nv;
    p->cap_vals = ncap;
  }
  struct lc_cval *v = &p->vals[p->nval];
  v->dtype = dt;
  v->ndim = ndim;
  v->prod = -1;
  v->shape = NULL;
  if (ndim > 0) {
    v->shape = malloc(sizeof(int) * (size_t)ndim);
    if (!v->shape) return lc_error("out of memory"), -1;
    memcpy(v->shape, shape, sizeof(int) * (size_t)ndim);
  }
  return p->nval++;
}

static void *dup_mem(const void *src, size_t n) {
  if (!n) return NULL;
  void *d = malloc(n);
  if (d) memcpy(d, src, n);
  return d;
}

int lc_cprog_add_instr(struct lc_cprog *p, int op, int nin, const int *in, int nout,
                       const int *out, const void *params, size_t params_size) {
  if (p->ninstr == p->cap_instrs) {
    int ncap = p->cap_instrs ? 2 * p->cap_instrs : 64;
    struct lc_cinstr *ni = realloc(p->instrs, sizeof *ni * (size_t)ncap);
    if (!ni) return lc_error("out of memory"), -1;
    p->instrs = ni;
    p->cap_instrs = ncap;
  }
  struct lc_cinstr ins = {
      .op = op, .nin = nin, .nout = nout, .params_size = params_size, .dev = LC_DEV_ANY};
  ins.in = dup_mem(in, sizeof(int) * (size_t)nin);
  ins.out = dup_mem(out, sizeof(int) * (size_t)nout);
  ins.params = dup_mem(params, params_size);
  if ((nin && !ins.in) || !ins.out || (params_size && !ins.params)) {
    free(ins.in);
    free(ins.out);
    free(ins.params);
    return lc_error("out of memory"), -1;
  }
  if (params_size && lc_prims[op]->params_ref) lc_prims[op]->params_ref(ins.params, +1);
  int idx = p->ninstr++;
  p->instrs[idx] = ins;
  for (int k = 0; k < nout; k++) p->vals[out[k]].prod = idx;
  return idx;
}

struct frame {
  int ins, next;
};

int lc_cprog_compact(struct lc_cprog *p) {
  int rc = 1;
  int ni = p->ninstr, nv = p->nval;
  char *state = calloc((size_t)ni + 1, 1); /* 0 unseen, 1 on stack, 2 done */
  int *order = malloc(sizeof(int) * ((size_t)ni + 1));
  struct frame *stack = malloc(sizeof *stack * ((size_t)ni + 1));
  int *vmap = malloc(sizeof(int) * ((size_t)nv + 1));
  char *cused = calloc((size_t)p->nconst + 1, 1);
  struct lc_cval *nvals = NULL;
  struct lc_cinstr *ninstrs = NULL;
  struct lc_node **nconsts = NULL;
  if (!state || !order || !stack || !vmap || !cused) goto oom;
  int nord = 0;
  /* Post-order DFS from the outputs: inputs of an instruction first. */
  for (int o = 0; o < p->nout; o++) {
    int r = p->vals[p->outs[o]].prod;
    if (r < 0 || state[r]) continue;
    int top = 0;
    stack[top++] = (struct frame){r, 0};
    state[r] = 1;
    while (top) {
      struct frame *f = &stack[top - 1];
      struct lc_cinstr *ins = &p->instrs[f->ins];
      if (f->next == ins->nin) {
        order[nord++] = f->ins;
        state[f->ins] = 2;
        top--;
        continue;
      }
      int c = p->vals[ins->in[f->next++]].prod;
      if (c >= 0 && state[c] == 1) {
        lc_error("internal: compiled program has a cycle");
        goto fail;
      }
      if (c < 0 || state[c]) continue;
      state[c] = 1;
      stack[top++] = (struct frame){c, 0};
    }
  }
  /* Which constants are still used. */
  int base = p->nin;
  for (int i = 0; i < nord; i++) {
    struct lc_cinstr *ins = &p->instrs[order[i]];
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k];
      if (v >= base && v < base + p->nconst) cused[v - base] = 1;
    }
  }
  for (int o = 0; o < p->nout; o++) {
    int v = p->outs[o];
    if (v >= base && v < base + p->nconst) cused[v - base] = 1;
  }
  /* Renumber. */
  for (int v = 0; v < nv; v++) vmap[v] = -1;
  int nn = 0;
  for (int v = 0; v < p->nin; v++) vmap[v] = nn++;
  int ncn = 0;
  for (int c = 0; c < p->nconst; c++)
    if (cused[c]) {
      vmap[base + c] = nn++;
      ncn++;
    }
  for (int i = 0; i < nord; i++) {
    struct lc_cinstr *ins = &p->instrs[order[i]];
    for (int k = 0; k < ins->nout; k++) vmap[ins->out[k]] = nn++;
  }
  nvals = malloc(sizeof *nvals * ((size_t)nn + 1));
  ninstrs = malloc(sizeof *ninstrs * ((size_t)nord + 1));
  nconsts = malloc(sizeof *nconsts * ((size_t)ncn + 1));
  if (!nvals || !ninstrs || !nconsts) goto oom;
  for (int v = 0; v < nv; v++) {
    if (vmap[v] >= 0) {
      nvals[vmap[v]] = p->vals[v];
      nvals[vmap[v]].prod = -1;
    } else {
      free(p->vals[v].shape);
    }
  }
  int j = 0;
  for (int c = 0; c < p->nconst; c++) {
    if (cused[c])
      nconsts[j++] = p->consts[c];
    else
      lc_node_release(p->consts[c]);
  }
  for (int i = 0; i < nord; i++) {
    struct lc_cinstr ins = p->instrs[order[i]];
    for (int k = 0; k < ins.nin; k++) ins.in[k] = vmap[ins.in[k]];
    for (int k = 0; k < ins.nout; k++) {
      ins.out[k] = vmap[ins.out[k]];
      nvals[ins.out[k]].prod = i;
    }
    ninstrs[i] = ins;
    state[order[i]] = 3; /* moved */
  }
  for (int i = 0; i < ni; i++)
    if (state[i] != 3) free_instr(&p->instrs[i]);
  for (int o = 0; o < p->nout; o++) p->outs[o] = vmap[p->outs[o]];
  free(p->vals);
  free(p->instrs);
  free(p->consts);
  p->vals = nvals;
  p->instrs = ninstrs;
  p->consts = nconsts;
  p->nval = p->cap_vals = nn;
  p->ninstr = p->cap_instrs = nord;
  p->nconst = ncn;
  nvals = NULL;
  ninstrs = NULL;
  nconsts = NULL;
  rc = 0;
  goto done;
oom:
  lc_error("out of memory");
fail:
done:
  free(state);
  free(order);
  free(stack);
  free(vmap);
  free(cused);
  free(nvals);
  free(ninstrs);
  free(nconsts);
  return rc;
}

bool lc_cprog_valid(const struct lc_cprog *p) {
  int first = p->nin + p->nconst;
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k];
      if (v < 0 || v >= p->nval) return false;
      if (v >= first && p->vals[v].prod >= i) return false;
    }
    for (int k = 0; k < ins->nout; k++)
      if (ins->out[k] < first || p->vals[ins->out[k]].prod != i) return false;
  }
  for (int o = 0; o < p->nout; o++)
    if (p->outs[o] < 0 || p->outs[o] >= p->nval) return false;
  return true;
}
