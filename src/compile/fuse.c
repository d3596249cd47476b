/* Fuse: groups elementwise instructions into FUSED instructions.
 *
 * Regions grow in topological order: an elementwise instruction joins the
 * region of one of its arguments' producers (same shape, by the
 * elementwise contract) when none of its other arguments depends on that
 * region; otherwise it starts a region. That keeps every region convex (no
 * path leaves it and comes back), so the regions contract to a DAG.
 * Dependencies are tracked as one bitset of regions per value.
 *
 * Broadcast views feeding a region are absorbed: the region reads the root
 * of the broadcast chain through broadcast strides, so no broadcast node is
 * built. A region of one instruction stays as it is. Values of a region
 * used outside it (by other instructions or as program outputs) escape: a
 * region with one escaping value is one FUSED node; with several, a tuple
 * (ops/tuple.h) and one getter per value. Inside a region, instructions
 * whose value does not escape write to scratch tiles, reused once their
 * last reader in the region has run. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/prim.h"

/* Limits keeping a fused kernel's per-tile state small (stack arrays). */
#define MAX_REGION 1024 /* instructions */
#define MAX_OUTS 64     /* escaping values */
#define MAX_RANK 64

static bool fusable(const struct lc_cprog *p, const struct lc_cinstr *ins) {
  const struct lc_prim *pr = lc_prims[ins->op];
  return (pr->flags & LC_PF_ELEMWISE) && pr->ew && ins->nout == 1 && ins->nin >= 1 &&
         ins->nin <= LC_FUSED_MAXARG && p->vals[ins->out[0]].ndim <= MAX_RANK;
}

/* The root of a broadcast chain ending at value v. */
static int bcast_root(const struct lc_cprog *p, int v, bool *through) {
  *through = false;
  for (;;) {
    int pr = p->vals[v].prod;
    if (pr < 0 || p->instrs[pr].op != LC_OP_BROADCAST) return v;
    v = p->instrs[pr].in[0];
    *through = true;
  }
}

static bool has(const uint64_t *bits, size_t words, int row, int b) {
  return bits[(size_t)row * words + (size_t)b / 64] >> (b % 64) & 1;
}
static void set(uint64_t *bits, size_t words, int row, int b) {
  bits[(size_t)row * words + (size_t)b / 64] |= 1ull << (b % 64);
}

static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* Region under construction. */
struct region {
  int *mem; /* member instruction indices, increasing */
  int nmem;
};

/* Builds the FUSED instruction for region r. 0, or 1 after reporting. */
static int emit(struct lc_cprog *p, const struct region *r, const int *region_of, int ni, int rid,
                const char *escapes) {
  int nm = r->nmem;
  int *ins_of_val = NULL, *in_vals = NULL, *out_vals = NULL, *last_use = NULL, *slot_of = NULL;
  char *in_plain = NULL;
  int *free_slots = NULL;
  void *blob = NULL;
  int rc = 1;
  ins_of_val = malloc(sizeof(int) * (size_t)p->nval);
  in_vals = malloc(sizeof(int) * ((size_t)nm * LC_FUSED_MAXARG + 1));
  in_plain = malloc((size_t)nm * LC_FUSED_MAXARG + 1);
  out_vals = malloc(sizeof(int) * ((size_t)nm + 1));
  last_use = malloc(sizeof(int) * ((size_t)nm + 1));
  slot_of = malloc(sizeof(int) * ((size_t)nm + 1));
  free_slots = malloc(sizeof(int) * ((size_t)nm + 1));
  if (!ins_of_val || !in_vals || !in_plain || !out_vals || !last_use || !slot_of || !free_slots) {
    lc_error("out of memory");
    goto done;
  }
  for (int m = 0; m < nm; m++) {
    ins_of_val[p->instrs[r->mem[m]].out[0]] = m;
    last_use[m] = -1;
  }
  /* Inputs (deduplicated) and last uses inside the region. */
  int nin = 0, nout = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[r->mem[m]];
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k];
      int pr = p->vals[v].prod;
      if (pr >= 0 && pr < ni && region_of[pr] == rid) {
        last_use[ins_of_val[v]] = m;
        continue;
      }
      bool through;
      v = bcast_root(p, v, &through);
      int j = 0;
      while (j < nin && in_vals[j] != v) j++;
      if (j == nin) {
        in_vals[nin] = v;
        in_plain[nin++] = (char)!through;
      }
    }
    if (escapes[r->mem[m]]) out_vals[nout++] = ins->out[0];
  }
  if (nout > MAX_OUTS) { /* left unfused: the members stay as they are */
    rc = 0;
    goto done;
  }
  /* Scratch slots. */
  int nslot = 0, nfree = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[r->mem[m]];
    slot_of[m] = -1;
    if (!escapes[r->mem[m]]) slot_of[m] = nfree ? free_slots[--nfree] : nslot++;
    for (int k = 0; k < ins->nin; k++) {
      int pr = p->vals[ins->in[k]].prod;
      if (pr < 0 || pr >= ni || region_of[pr] != rid) continue;
      int a = ins_of_val[ins->in[k]];
      if (last_use[a] == m && slot_of[a] >= 0) {
        bool dup = false; /* an argument used twice is freed once */
        for (int q = 0; q < nfree; q++) dup |= free_slots[q] == slot_of[a];
        if (!dup) free_slots[nfree++] = slot_of[a];
      }
    }
  }
  /* The blob. */
  const struct lc_cval *rv = &p->vals[p->instrs[r->mem[0]].out[0]];
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
  for (int m = 0; m < nm; m++) off = align16(off + p->instrs[r->mem[m]].params_size);
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
  *h = (struct lc_fused_hdr){(int32_t)off, rv->ndim, nin, nm, nout, nslot, (int32_t)shape_off,
                             (int32_t)in_off, (int32_t)instr_off, (int32_t)out_off};
  int32_t *sh = (int32_t *)((char *)blob + shape_off);
  for (int d = 0; d < rv->ndim; d++) sh[d] = rv->shape[d];
  struct lc_fused_in *fin = (struct lc_fused_in *)((char *)blob + in_off);
  for (int j = 0; j < nin; j++)
    fin[j] = (struct lc_fused_in){(int32_t)p->vals[in_vals[j]].dtype, in_plain[j]};
  struct lc_fused_ins *fi = (struct lc_fused_ins *)((char *)blob + instr_off);
  struct lc_fused_out *fo = (struct lc_fused_out *)((char *)blob + out_off);
  size_t poff = params_base;
  int oi = 0;
  for (int m = 0; m < nm; m++) {
    const struct lc_cinstr *ins = &p->instrs[r->mem[m]];
    struct lc_fused_ins *x = &fi[m];
    memset(x, 0, sizeof *x);
    x->op = ins->op;
    x->dtype = p->vals[ins->out[0]].dtype;
    x->in_dt = p->vals[ins->in[ins->nin - 1]].dtype;
    x->nin = ins->nin;
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], pr = p->vals[v].prod;
      if (pr >= 0 && pr < ni && region_of[pr] == rid) {
        x->arg[k] = ins_of_val[v];
      } else {
        bool through;
        v = bcast_root(p, v, &through);
        int j = 0;
        while (in_vals[j] != v) j++;
        x->arg[k] = -j - 1;
      }
    }
    x->slot = slot_of[m];
    x->out = -1;
    if (escapes[r->mem[m]]) {
      x->out = oi;
      fo[oi++] = (struct lc_fused_out){m, x->dtype};
    }
    x->params_off = (int32_t)poff;
    x->params_size = (int32_t)ins->params_size;
    if (ins->params_size) memcpy((char *)blob + poff, ins->params, ins->params_size);
    poff = align16(poff + ins->params_size);
  }
  rc = lc_cprog_add_instr(p, LC_OP_FUSED, nin, in_vals, nout, out_vals, blob, off) < 0;
done:
  free(ins_of_val);
  free(in_vals);
  free(in_plain);
  free(out_vals);
  free(last_use);
  free(slot_of);
  free(free_slots);
  free(blob);
  return rc;
}

int lc_compile_fuse(struct lc_cprog *p) {
  int ni = p->ninstr, nv = p->nval;
  int nf = 0;
  for (int i = 0; i < ni; i++) nf += fusable(p, &p->instrs[i]);
  if (nf < 2) return 0;
  size_t words = ((size_t)nf + 63) / 64;
  if ((size_t)nv * words > ((size_t)8 << 20)) return 0; /* huge graph: skip fusion */
  int rc = 1;
  uint64_t *deps = calloc((size_t)nv * words, sizeof(uint64_t));
  uint64_t *tmp = malloc(sizeof(uint64_t) * words);
  uint64_t *rdep = calloc((size_t)nf * words, sizeof(uint64_t));
  int *region_of = malloc(sizeof(int) * ((size_t)ni + 1));
  int *count = calloc((size_t)nf + 1, sizeof(int));
  char *escapes = calloc((size_t)ni + 1, 1);
  struct region *regs = calloc((size_t)nf + 1, sizeof *regs);
  int *memb = malloc(sizeof(int) * ((size_t)ni + 1));
  if (!deps || !tmp || !rdep || !region_of || !count || !escapes || !regs || !memb) {
    lc_error("out of memory");
    goto done;
  }
  int nreg = 0;
  for (int i = 0; i < ni; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    region_of[i] = -1;
    if (fusable(p, ins)) {
      /* Join the first argument region that no other argument depends on
       * through an outside path... */
      int r = -1;
      for (int k = 0; k < ins->nin && r < 0; k++) {
        int pr = p->vals[ins->in[k]].prod;
        if (pr < 0 || region_of[pr] < 0) continue;
        int c = region_of[pr];
        bool ok = count[c] < MAX_REGION;
        for (int q = 0; q < ins->nin && ok; q++) {
          int pq = p->vals[ins->in[q]].prod;
          if (pq >= 0 && region_of[pq] == c) continue;
          ok = !has(deps, words, ins->in[q], c);
        }
        if (ok) r = c;
      }
      if (r < 0) {
        r = nreg++;
      } else {
        /* ...then merge the other argument regions that are mergeable:
         * no outside path between them and r either way, and no other
         * argument depending on them. */
        for (int k = 0; k < ins->nin; k++) {
          int pr = p->vals[ins->in[k]].prod;
          if (pr < 0 || region_of[pr] < 0 || region_of[pr] == r) continue;
          int c = region_of[pr];
          bool ok = count[r] + count[c] < MAX_REGION && !has(rdep, words, c, r) &&
                    !has(rdep, words, r, c);
          for (int q = 0; q < ins->nin && ok; q++) {
            int pq = p->vals[ins->in[q]].prod;
            if (pq >= 0 && (region_of[pq] == c || region_of[pq] == r)) continue;
            ok = !has(deps, words, ins->in[q], c);
          }
          if (!ok) continue;
          for (int j = 0; j < i; j++)
            if (region_of[j] == c) region_of[j] = r;
          count[r] += count[c];
          count[c] = 0;
          for (int w = 0; w < (int)words; w++) rdep[(size_t)r * words + w] |= rdep[(size_t)c * words + w];
          for (int v = 0; v < nv; v++)
            if (has(deps, words, v, c)) set(deps, words, v, r);
          for (int q = 0; q < nreg; q++)
            if (has(rdep, words, q, c)) set(rdep, words, q, r);
        }
      }
      region_of[i] = r;
      count[r]++;
      for (int k = 0; k < ins->nin; k++) {
        int pr = p->vals[ins->in[k]].prod;
        if (pr >= 0 && region_of[pr] == r) continue;
        for (size_t w = 0; w < words; w++)
          rdep[(size_t)r * words + w] |= deps[(size_t)ins->in[k] * words + w];
      }
    }
    memset(tmp, 0, sizeof(uint64_t) * words);
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], pr = p->vals[v].prod;
      for (size_t w = 0; w < words; w++) tmp[w] |= deps[(size_t)v * words + w];
      if (pr >= 0 && region_of[pr] >= 0) tmp[region_of[pr] / 64] |= 1ull << (region_of[pr] % 64);
    }
    for (int k = 0; k < ins->nout; k++)
      memcpy(&deps[(size_t)ins->out[k] * words], tmp, sizeof(uint64_t) * words);
  }
  /* Regions of one instruction stay unfused. */
  for (int i = 0; i < ni; i++)
    if (region_of[i] >= 0 && count[region_of[i]] < 2) region_of[i] = -1;
  /* Escaping values: used by a non-member (broadcasts included) or output. */
  for (int i = 0; i < ni; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    for (int k = 0; k < ins->nin; k++) {
      int pr = p->vals[ins->in[k]].prod;
      if (pr >= 0 && region_of[pr] >= 0 && region_of[pr] != region_of[i]) escapes[pr] = 1;
    }
  }
  for (int o = 0; o < p->nout; o++) {
    int pr = p->vals[p->outs[o]].prod;
    if (pr >= 0 && region_of[pr] >= 0) escapes[pr] = 1;
  }
  /* Members by region, in order. */
  int at = 0;
  for (int r = 0; r < nreg; r++) {
    regs[r].mem = memb + at;
    at += count[r] >= 2 ? count[r] : 0;
  }
  for (int i = 0; i < ni; i++)
    if (region_of[i] >= 0) {
      struct region *g = &regs[region_of[i]];
      g->mem[g->nmem++] = i;
    }
  for (int r = 0; r < nreg; r++)
    if (regs[r].nmem >= 2 && emit(p, &regs[r], region_of, ni, r, escapes)) goto done;
  rc = lc_cprog_compact(p);
done:
  free(deps);
  free(tmp);
  free(rdep);
  free(region_of);
  free(count);
  free(escapes);
  free(regs);
  free(memb);
  return rc;
}
