/* Building one FUSED instruction from a region's members (see compile.h for
 * the blob layout).
 *
 * Arguments read from outside the region become region inputs, deduplicated
 * by (root of their broadcast chain, mode); row aliases become references
 * to their root member. Scratch: in elementwise regions, values that do not
 * escape get tiles, reused once their last reader in the region has run
 * (escaping values are written to the outputs directly); in row regions
 * every FULL value gets a row of scratch (escaping ones are copied out)
 * and ROW values live in per-instruction cells. */
#include <stdlib.h>
#include <string.h>

#include "compile/fuse_internal.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

/* The root of a broadcast chain ending at value v (a broadcast with a
 * shape partner is a root). */
static int bcast_root(const struct lc_cprog *p, int v, bool *through) {
  *through = false;
  for (;;) {
    int pr = p->vals[v].prod;
    if (pr < 0 || p->instrs[pr].op != LC_OP_BROADCAST || p->instrs[pr].nin != 1) return v;
    v = p->instrs[pr].in[0];
    *through = true;
  }
}

static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* The kind of a member's value; a reduction reads its argument as FULL. */
static int member_kind(const struct lc_fuse_ctx *c, int rid, const struct lc_cinstr *ins) {
  return lc_fuse_kind(c->p, c->space[rid], ins->out[0]);
}

int lc_fuse_emit(struct lc_fuse_ctx *c, const int *mem, int nm, int rid) {
  struct lc_cprog *p = c->p;
  bool rows = c->rows[rid] != 0;
  size_t cap = (size_t)nm * LC_FUSED_MAXARG + 1;
  int *ins_of_val = malloc(sizeof(int) * (size_t)p->nval);
  int *in_vals = malloc(sizeof(int) * cap), *in_mode = malloc(sizeof(int) * cap);
  char *in_plain = malloc(cap);
  int *arg = malloc(sizeof(int) * cap); /* resolved argument per (member, k) */
  int *out_vals = malloc(sizeof(int) * ((size_t)nm + 1));
  int *last_use = malloc(sizeof(int) * ((size_t)nm + 1));
  int *slot_of = malloc(sizeof(int) * ((size_t)nm + 1));
  int *kind = malloc(sizeof(int) * ((size_t)nm + 1));
  int *free_slots = malloc(sizeof(int) * ((size_t)nm + 1));
  void *blob = NULL;
  int rc = 1;
  if (!ins_of_val || !in_vals || !in_mode || !in_plain || !arg || !out_vals || !last_use ||
      !slot_of || !kind || !free_slots) {
    lc_error("out of memory");
    goto done;
  }
  for (int m = 0; m < nm; m++) {
    ins_of_val[p->instrs[mem[m]].out[0]] = m;
    last_use[m] = -1;
    kind[m] = member_kind(c, rid, &p->instrs[mem[m]]);
  }
  /* Arguments: members (directly or through row aliases) or inputs. */
  int nin = 0, nout = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[mem[m]];
    int mode = ins->op == LC_OP_REDUCE ? LC_FK_FULL : kind[m];
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], root;
      if (lc_fuse_region_of_val(c, v, &root) == rid) {
        arg[m * LC_FUSED_MAXARG + k] = ins_of_val[root];
        last_use[ins_of_val[root]] = m;
        continue;
      }
      bool through;
      v = bcast_root(p, v, &through);
      int j = 0;
      while (j < nin && !(in_vals[j] == v && in_mode[j] == mode)) j++;
      if (j == nin) {
        in_vals[nin] = v;
        in_mode[nin] = mode;
        in_plain[nin++] = (char)!through;
      }
      arg[m * LC_FUSED_MAXARG + k] = -j - 1;
    }
    if (c->escapes[mem[m]]) out_vals[nout++] = ins->out[0];
  }
  int dev = p->instrs[mem[0]].dev; /* one per region */
  bool stay_unfused = dev >= 0 && (nin > LC_FUSED_GPU_MAX_IN || nout > LC_FUSED_GPU_MAX_OUT);
  /* the GPU's fused kernels have no complex values; its unfused ones do */
  for (int m = 0; m < nm && dev >= 0 && !stay_unfused && lc_gpu_complex_kernels(); m++) {
    const struct lc_cinstr *ins = &p->instrs[mem[m]];
    stay_unfused = p->vals[ins->out[0]].dtype == MLX_COMPLEX64;
    for (int k = 0; k < ins->nin && !stay_unfused; k++)
      stay_unfused = p->vals[ins->in[k]].dtype == MLX_COMPLEX64;
  }
  if (nout > LC_FUSE_MAX_OUTS || stay_unfused) { /* left unfused: the members stay as they are */
    rc = 0;
    goto done;
  }
  /* Scratch slots, freed after their value's last reader. */
  int nslot = 0, nfree = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[mem[m]];
    bool wants = rows ? kind[m] == LC_FK_FULL : !c->escapes[mem[m]];
    slot_of[m] = wants ? (nfree ? free_slots[--nfree] : nslot++) : -1;
    for (int k = 0; k < ins->nin; k++) {
      int a = arg[m * LC_FUSED_MAXARG + k];
      if (a < 0 || last_use[a] != m || slot_of[a] < 0) continue;
      bool dup = false; /* an argument used twice is freed once */
      for (int q = 0; q < nfree; q++) dup |= free_slots[q] == slot_of[a];
      if (!dup) free_slots[nfree++] = slot_of[a];
    }
    if (slot_of[m] >= 0 && last_use[m] < 0) free_slots[nfree++] = slot_of[m]; /* copied out */
  }
  /* The blob. */
  const struct lc_cval *rv = &p->vals[c->space[rid]];
  size_t off = align16(sizeof(struct lc_fused_hdr));
  size_t shape_off = off;
  off = align16(off + sizeof(int32_t) * (size_t)rv->ndim);
  size_t in_off = off;
  off = align16(off + sizeof(struct lc_fused_in) * (size_t)nin);
  size_t instr_off = off;
  off = align16(off + sizeof(struct lc_fused_ins) * (size_t)nm);
  size_t out_off = off;
  off = align16(off + sizeof(struct lc_fused_out) * (size_t)nout);
  size_t params_base = off;
  for (int m = 0; m < nm; m++) off = align16(off + p->instrs[mem[m]].params_size);
  if (off > INT32_MAX) {
    lc_error("compile: fused region too large");
    goto done;
  }
  blob = calloc(1, off);
  if (!blob) {
    lc_error("out of memory");
    goto done;
  }
  struct lc_fused_hdr *h = blob;
  *h = (struct lc_fused_hdr){(int32_t)off,       rv->ndim,          nin,
                             nm,                 nout,              nslot,
                             (int32_t)shape_off, (int32_t)in_off,   (int32_t)instr_off,
                             (int32_t)out_off,   rows};
  int32_t *sh = (int32_t *)((char *)blob + shape_off);
  for (int d = 0; d < rv->ndim; d++) sh[d] = rv->shape[d];
  struct lc_fused_in *fin = (struct lc_fused_in *)((char *)blob + in_off);
  for (int j = 0; j < nin; j++)
    fin[j] = (struct lc_fused_in){(int32_t)p->vals[in_vals[j]].dtype, in_plain[j], in_mode[j]};
  struct lc_fused_ins *fi = (struct lc_fused_ins *)((char *)blob + instr_off);
  struct lc_fused_out *fo = (struct lc_fused_out *)((char *)blob + out_off);
  size_t poff = params_base;
  int oi = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[mem[m]];
    struct lc_fused_ins *x = &fi[m];
    memset(x, 0, sizeof *x);
    x->op = ins->op;
    x->dtype = p->vals[ins->out[0]].dtype;
    x->in_dt = p->vals[ins->in[ins->nin - 1]].dtype;
    x->nin = ins->nin;
    for (int k = 0; k < ins->nin; k++) x->arg[k] = arg[m * LC_FUSED_MAXARG + k];
    x->slot = slot_of[m];
    x->kind = kind[m];
    x->out = -1;
    if (c->escapes[mem[m]]) {
      x->out = oi;
      fo[oi++] = (struct lc_fused_out){m, x->dtype, kind[m]};
    }
    x->params_off = (int32_t)poff;
    x->params_size = (int32_t)ins->params_size;
    if (ins->params_size) memcpy((char *)blob + poff, ins->params, ins->params_size);
    poff = align16(poff + ins->params_size);
  }
  int at = lc_cprog_add_instr(p, LC_OP_FUSED, nin, in_vals, nout, out_vals, blob, off);
  rc = at < 0;
  if (!rc) { /* members share one device (fuse.c); the region runs on the first's stream */
    p->instrs[at].dev = p->instrs[mem[0]].dev;
    p->instrs[at].stream = p->instrs[mem[0]].stream;
  }
done:
  free(ins_of_val);
  free(in_vals);
  free(in_mode);
  free(in_plain);
  free(arg);
  free(out_vals);
  free(last_use);
  free(slot_of);
  free(kind);
  free(free_slots);
  free(blob);
  return rc;
}
