/* Fuse: groups instructions into regions, each becoming one FUSED
 * instruction.
 *
 * Members are elementwise instructions and reductions over the last axis.
 * A region has a shape F (its first member's, or a reduction's input's);
 * its values are FULL (shape F) or, once a reduction joined, one element
 * per row (ROW kinds, compile.h). Broadcasts and reshapes that keep one
 * element per row (a reduction's result broadcast back over its row) are
 * not members: members read through them ("row aliases").
 *
 * Regions grow in topological order: an instruction joins the region of one
 * of its arguments (a member value or a row alias) when its value has a kind
 * in that region and none of its other arguments depends on the region;
 * otherwise it starts a region. That keeps every region convex (no path
 * leaves it and comes back), so the regions contract to a DAG. Dependencies
 * are tracked as one bitset of regions per value.
 *
 * Then sibling regions (elementwise, one shape, a common outside input,
 * no dependency between them) merge: the common input is read once.
 *
 * Broadcast views feeding a region from outside are absorbed: the region
 * reads the root of the broadcast chain through broadcast strides. A
 * broadcast with a shape partner (lc_broadcast_like) is a chain's root:
 * its shape is not its consumer's in shapeless replay. A region
 * of one instruction stays as it is. Values of a region read outside it (by
 * other instructions, or as program outputs) escape; the rest live in
 * scratch. */
#include <stdlib.h>
#include <string.h>

#include "compile/fuse_internal.h"
#include "core/error.h"
#include "ops/prim.h"
#include "ops/reduce_kern.h"

#define MAX_ALIAS 16 /* longest view chain read as a row alias */

/* A reduction of one axis, the last, of length 2..LC_FUSE_ROW_MAX. */
static bool is_row_reduce(const struct lc_cprog *p, const struct lc_cinstr *ins) {
  if (ins->op != LC_OP_REDUCE || ins->nin != 1) return false;
  const int *q = ins->params; /* kind, ddof, naxes, axes... */
  const struct lc_cval *x = &p->vals[ins->in[0]];
  if (ins->params_size < 4 * sizeof(int) || q[2] != 1 || x->ndim < 1 || q[3] != x->ndim - 1)
    return false;
  int L = x->shape[x->ndim - 1];
  return L >= 2 && L <= LC_FUSE_ROW_MAX && lc_rkern_get(q[0], x->dtype) != NULL;
}

static bool fusable(const struct lc_cprog *p, const struct lc_cinstr *ins) {
  const struct lc_prim *pr = lc_prims[ins->op];
  if (ins->nout != 1 || ins->nin < 1 || ins->nin > LC_FUSED_MAXARG ||
      p->vals[ins->out[0]].ndim > LC_FUSE_MAX_RANK)
    return false;
  return ((pr->flags & LC_PF_ELEMWISE) && pr->ew) || is_row_reduce(p, ins);
}

int lc_fuse_kind(const struct lc_cprog *p, int space_v, int v) {
  const struct lc_cval *f = &p->vals[space_v], *x = &p->vals[v];
  int nd = f->ndim;
  if (lc_shape_equal(x->ndim, x->shape, nd, f->shape)) return LC_FK_FULL;
  if (nd < 1 || f->shape[nd - 1] < 2 || x->ndim < nd - 1 || x->ndim > nd) return -1;
  for (int d = 0; d < nd - 1; d++)
    if (x->shape[d] != f->shape[d]) return -1;
  if (x->ndim == nd - 1) return LC_FK_ROW_DROP;
  return x->shape[nd - 1] == 1 ? LC_FK_ROW_KEEP : -1;
}

int lc_fuse_region_of_val(const struct lc_fuse_ctx *c, int v, int *root) {
  const struct lc_cprog *p = c->p;
  int chain[MAX_ALIAS], n = 0;
  for (;;) {
    int pr = p->vals[v].prod;
    if (pr < 0 || pr >= c->ni) return -1;
    if (c->region_of[pr] >= 0) break;
    int op = p->instrs[pr].op;
    if ((op != LC_OP_BROADCAST && op != LC_OP_RESHAPE) || p->instrs[pr].nin != 1 ||
        n == MAX_ALIAS)
      return -1;
    chain[n++] = v;
    v = p->instrs[pr].in[0];
  }
  int r = c->region_of[p->vals[v].prod];
  *root = v;
  if (n == 0) return r;
  /* Each step must keep one element per row: reshapes between the ROW
   * kinds, broadcasts of (O..., 1) over the last axis, and of a scalar
   * row over a 1-d region. */
  int sp = c->space[r], k = lc_fuse_kind(p, sp, v);
  if (k != LC_FK_ROW_KEEP && k != LC_FK_ROW_DROP) return -1;
  for (int j = n - 1; j >= 0; j--) {
    int w = chain[j], kw = lc_fuse_kind(p, sp, w);
    bool ok;
    if (p->instrs[p->vals[w].prod].op == LC_OP_RESHAPE)
      ok = kw == LC_FK_ROW_KEEP || kw == LC_FK_ROW_DROP;
    else
      ok = (k == LC_FK_ROW_KEEP && (kw == LC_FK_FULL || kw == LC_FK_ROW_KEEP)) ||
           (k == LC_FK_ROW_DROP && p->vals[sp].ndim == 1 && kw == LC_FK_FULL);
    if (!ok) return -1;
    k = kw;
  }
  return r;
}

static bool has(const uint64_t *bits, size_t words, int row, int b) {
  return bits[(size_t)row * words + (size_t)b / 64] >> (b % 64) & 1;
}
static void set(uint64_t *bits, size_t words, int row, int b) {
  bits[(size_t)row * words + (size_t)b / 64] |= 1ull << (b % 64);
}

/* Whether instruction ins can be a member of region r. */
static bool fits(const struct lc_fuse_ctx *c, int r, const struct lc_cinstr *ins) {
  if (ins->op == LC_OP_REDUCE) return lc_fuse_kind(c->p, c->space[r], ins->in[0]) == LC_FK_FULL;
  return lc_fuse_kind(c->p, c->space[r], ins->out[0]) >= 0;
}

static int arg_region(const struct lc_fuse_ctx *c, int v) {
  int root;
  return lc_fuse_region_of_val(c, v, &root);
}

/* Dependency state of the grouping: deps (per value: the regions it
 * depends on, transitively), rdep (per region: likewise), members per
 * region and each region's device. */
struct fuse_state {
  uint64_t *deps, *rdep;
  int *count, *rdev;
  size_t words;
  int nreg;
};

/* Region cr joins region r (members among instructions [0, upto)). */
static void merge_regions(struct lc_fuse_ctx *c, struct fuse_state *s, int r, int cr, int upto) {
  size_t words = s->words;
  for (int j = 0; j < upto; j++)
    if (c->region_of[j] == cr) c->region_of[j] = r;
  s->count[r] += s->count[cr];
  s->count[cr] = 0;
  c->rows[r] |= c->rows[cr];
  for (size_t w = 0; w < words; w++) s->rdep[(size_t)r * words + w] |= s->rdep[(size_t)cr * words + w];
  for (int v = 0; v < c->p->nval; v++)
    if (has(s->deps, words, v, cr)) set(s->deps, words, v, r);
  for (int q = 0; q < s->nreg; q++)
    if (has(s->rdep, words, q, cr)) set(s->rdep, words, q, r);
}

/* Bounds on a region built of siblings: upper bounds of its outside reads
 * and of its escaping values (every backend keeps them in one launch). */
#define SIBLING_MAX_READS 16
#define SIBLING_MAX_ESCAPES 8

/* Sibling regions: elementwise regions of one shape and device that read
 * a common outside value and depend on each other in neither direction
 * merge, so that the value is read once (rope's two outputs from x and
 * y). No path between the two in the graph with every region contracted
 * keeps the merged region convex; the dependency bitsets miss paths that
 * leave a region through one member and enter through another, so the
 * paths are searched (at most SIBLING_MAX_SEARCHES per program).
 * 0, or 1 after reporting. */
#define SIBLING_MAX_SEARCHES 128

struct sibling_graph {
  int *cstart, *clist; /* consumers of each value (CSR over values) */
  int *mstart, *mlist; /* members of each region (CSR over regions) */
  int *queue;
  char *seen;
};

/* Members by region (g->mstart, g->mlist) as region_of now stands. */
static void list_members(const struct lc_fuse_ctx *c, struct sibling_graph *g, int nreg) {
  int ni = c->ni;
  memset(g->mstart, 0, sizeof(int) * ((size_t)nreg + 2));
  for (int i = 0; i < ni; i++)
    if (c->region_of[i] >= 0) g->mstart[c->region_of[i] + 2]++;
  for (int r = 0; r < nreg; r++) g->mstart[r + 2] += g->mstart[r + 1];
  for (int i = 0; i < ni; i++)
    if (c->region_of[i] >= 0) g->mlist[g->mstart[c->region_of[i] + 1]++] = i;
}

/* Whether region b is reachable from region a, regions contracted
 * (members listed by list_members since the last merge). */
static bool reaches(const struct lc_fuse_ctx *c, struct sibling_graph *g, int nreg, int a, int b) {
  const struct lc_cprog *p = c->p;
  int ni = c->ni;
  memset(g->seen, 0, (size_t)nreg + (size_t)ni + 1);
  char *rseen = g->seen + ni;
  int head = 0, tail = 0;
  rseen[a] = 1;
  for (int m = g->mstart[a]; m < g->mstart[a + 1]; m++) g->seen[g->mlist[m]] = 1, g->queue[tail++] = g->mlist[m];
  while (head < tail) {
    const struct lc_cinstr *ins = &p->instrs[g->queue[head++]];
    for (int k = 0; k < ins->nout; k++)
      for (int e = g->cstart[ins->out[k]]; e < g->cstart[ins->out[k] + 1]; e++) {
        int j = g->clist[e], q = c->region_of[j];
        if (q == b) return true;
        if (q >= 0 && !rseen[q]) { /* the whole region is reached */
          rseen[q] = 1;
          for (int m = g->mstart[q]; m < g->mstart[q + 1]; m++)
            if (!g->seen[g->mlist[m]]) g->seen[g->mlist[m]] = 1, g->queue[tail++] = g->mlist[m];
        } else if (q < 0 && !g->seen[j]) {
          g->seen[j] = 1;
          g->queue[tail++] = j;
        }
      }
  }
  return false;
}

static int merge_siblings(struct lc_fuse_ctx *c, struct fuse_state *s) {
  const struct lc_cprog *p = c->p;
  int ni = c->ni, nv = p->nval, nreg = s->nreg, rc = 0;
  size_t edges = 0;
  for (int i = 0; i < ni; i++) edges += (size_t)p->instrs[i].nin;
  struct sibling_graph g;
  int *reader = malloc(sizeof(int) * ((size_t)nv + 1));
  int *fwd = malloc(sizeof(int) * ((size_t)nreg + 1));
  int *reads = calloc((size_t)nreg + 1, sizeof(int)), *esc = calloc((size_t)nreg + 1, sizeof(int));
  g.cstart = calloc((size_t)nv + 2, sizeof(int));
  g.clist = malloc(sizeof(int) * (edges + 1));
  g.mstart = malloc(sizeof(int) * ((size_t)nreg + 2));
  g.mlist = malloc(sizeof(int) * ((size_t)ni + 1));
  g.queue = malloc(sizeof(int) * ((size_t)ni + 1));
  g.seen = malloc((size_t)ni + (size_t)nreg + 1);
  if (!reader || !fwd || !reads || !esc || !g.cstart || !g.clist || !g.mstart || !g.mlist ||
      !g.queue || !g.seen) {
    rc = lc_error("out of memory");
    goto done;
  }
  for (int i = 0; i < ni; i++)
    for (int k = 0; k < p->instrs[i].nin; k++) g.cstart[p->instrs[i].in[k] + 2]++;
  for (int v = 0; v < nv; v++) g.cstart[v + 2] += g.cstart[v + 1];
  for (int i = 0; i < ni; i++)
    for (int k = 0; k < p->instrs[i].nin; k++) g.clist[g.cstart[p->instrs[i].in[k] + 1]++] = i;
  for (int v = 0; v < nv; v++) reader[v] = -1;
  for (int r = 0; r < nreg; r++) fwd[r] = r;
  for (int o = 0; o < p->nout; o++) {
    int pr = p->vals[p->outs[o]].prod;
    if (pr >= 0 && pr < ni && c->region_of[pr] >= 0) esc[c->region_of[pr]]++;
  }
  for (int i = 0; i < ni; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    int ri = c->region_of[i];
    for (int k = 0; k < ins->nin; k++) {
      int pr = p->vals[ins->in[k]].prod;
      if (pr >= 0 && pr < ni && c->region_of[pr] >= 0 && c->region_of[pr] != ri)
        esc[c->region_of[pr]]++;
      if (ri >= 0 && arg_region(c, ins->in[k]) != ri) reads[ri]++;
    }
  }
  int searches = 0;
  for (int i = 0; i < ni && searches < SIBLING_MAX_SEARCHES; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    for (int k = 0; k < ins->nin; k++) {
      int r = c->region_of[i], v = ins->in[k];
      if (r < 0 || c->rows[r]) break;
      if (arg_region(c, v) == r) continue;
      if (reader[v] < 0) {
        reader[v] = r;
        continue;
      }
      int a = reader[v];
      while (fwd[a] != a) a = fwd[a];
      if (a == r || c->rows[a]) continue;
      const struct lc_cval *x = &p->vals[c->space[a]], *y = &p->vals[c->space[r]];
      if (s->rdev[a] != s->rdev[r] || s->count[a] + s->count[r] > LC_FUSE_MAX_REGION ||
          reads[a] + reads[r] > SIBLING_MAX_READS || esc[a] + esc[r] > SIBLING_MAX_ESCAPES ||
          !lc_shape_equal(x->ndim, x->shape, y->ndim, y->shape) ||
          searches++ >= SIBLING_MAX_SEARCHES)
        continue;
      list_members(c, &g, nreg); /* merges since the last search moved members */
      if (reaches(c, &g, nreg, a, r) || reaches(c, &g, nreg, r, a)) continue;
      merge_regions(c, s, a, r, ni);
      fwd[r] = a;
      reads[a] += reads[r];
      esc[a] += esc[r];
    }
  }
done:
  free(reader), free(fwd), free(reads), free(esc);
  free(g.cstart), free(g.clist), free(g.mstart), free(g.mlist), free(g.queue), free(g.seen);
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
  int *count = calloc((size_t)nf + 1, sizeof(int));
  int *memb = malloc(sizeof(int) * ((size_t)ni + 1));
  int *start = malloc(sizeof(int) * ((size_t)nf + 1));
  int *fill = calloc((size_t)nf + 1, sizeof(int));
  char *used = calloc((size_t)nv + 1, 1);
  int *rdev = calloc((size_t)nf + 1, sizeof(int)); /* a region's device: one per kernel */
  struct lc_fuse_ctx c = {.p = p, .ni = ni};
  c.region_of = malloc(sizeof(int) * ((size_t)ni + 1));
  c.space = malloc(sizeof(int) * ((size_t)nf + 1));
  c.rows = calloc((size_t)nf + 1, 1);
  c.escapes = calloc((size_t)ni + 1, 1);
  if (!deps || !tmp || !rdep || !count || !memb || !start || !fill || !used || !rdev || !c.region_of ||
      !c.space || !c.rows || !c.escapes) {
    lc_error("out of memory");
    goto done;
  }
  for (int i = 0; i < ni; i++) c.region_of[i] = -1;
  int nreg = 0;
  for (int i = 0; i < ni; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    if (fusable(p, ins)) {
      /* Join the first argument region that fits and that no other
       * argument depends on through an outside path... */
      int r = -1;
      for (int k = 0; k < ins->nin && r < 0; k++) {
        int cr = arg_region(&c, ins->in[k]);
        if (cr < 0 || count[cr] >= LC_FUSE_MAX_REGION || rdev[cr] != ins->dev ||
            !fits(&c, cr, ins))
          continue;
        bool ok = true;
        for (int q = 0; q < ins->nin && ok; q++)
          ok = arg_region(&c, ins->in[q]) == cr || !has(deps, words, ins->in[q], cr);
        if (ok) r = cr;
      }
      if (r < 0) {
        r = nreg++;
        rdev[r] = ins->dev;
        c.space[r] = ins->op == LC_OP_REDUCE ? ins->in[0] : ins->out[0];
      } else {
        /* ...then merge the other argument regions of the same shape that
         * are mergeable: no outside path between them and r either way,
         * and no other argument depending on them. */
        for (int k = 0; k < ins->nin; k++) {
          int cr = arg_region(&c, ins->in[k]);
          if (cr < 0 || cr == r) continue;
          const struct lc_cval *a = &p->vals[c.space[r]], *b = &p->vals[c.space[cr]];
          bool ok = count[r] + count[cr] < LC_FUSE_MAX_REGION && rdev[cr] == rdev[r] &&
                    lc_shape_equal(a->ndim, a->shape, b->ndim, b->shape) &&
                    !has(rdep, words, cr, r) && !has(rdep, words, r, cr);
          for (int q = 0; q < ins->nin && ok; q++) {
            int rq = arg_region(&c, ins->in[q]);
            if (rq == cr || rq == r) continue;
            ok = !has(deps, words, ins->in[q], cr);
          }
          if (!ok) continue;
          struct fuse_state st = {deps, rdep, count, rdev, words, nreg};
          merge_regions(&c, &st, r, cr, i);
        }
      }
      c.region_of[i] = r;
      count[r]++;
      if (ins->op == LC_OP_REDUCE) c.rows[r] = 1;
      for (int k = 0; k < ins->nin; k++) {
        if (arg_region(&c, ins->in[k]) == r) continue;
        for (size_t w = 0; w < words; w++)
          rdep[(size_t)r * words + w] |= deps[(size_t)ins->in[k] * words + w];
      }
    }
    memset(tmp, 0, sizeof(uint64_t) * words);
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], pr = p->vals[v].prod;
      for (size_t w = 0; w < words; w++) tmp[w] |= deps[(size_t)v * words + w];
      if (pr >= 0 && c.region_of[pr] >= 0) tmp[c.region_of[pr] / 64] |= 1ull << (c.region_of[pr] % 64);
    }
    for (int k = 0; k < ins->nout; k++)
      memcpy(&deps[(size_t)ins->out[k] * words], tmp, sizeof(uint64_t) * words);
  }
  struct fuse_state st = {deps, rdep, count, rdev, words, nreg};
  if (merge_siblings(&c, &st)) goto done;
  /* Regions of one instruction stay unfused. */
  for (int i = 0; i < ni; i++)
    if (c.region_of[i] >= 0 && count[c.region_of[i]] < 2) c.region_of[i] = -1;
  /* Escaping values, consumers last to first: a value escapes when read by
   * a non-member, except that a row alias read by members of its own
   * region is no read at all, and an alias instruction nobody else reads
   * is dropped (compaction removes it). */
  for (int o = 0; o < p->nout; o++) {
    used[p->outs[o]] = 1;
    int pr = p->vals[p->outs[o]].prod;
    if (pr >= 0 && c.region_of[pr] >= 0) c.escapes[pr] = 1;
  }
  for (int i = ni - 1; i >= 0; i--) {
    const struct lc_cinstr *ins = &p->instrs[i];
    if (c.region_of[i] < 0 && (ins->op == LC_OP_BROADCAST || ins->op == LC_OP_RESHAPE) &&
        arg_region(&c, ins->out[0]) >= 0 && !used[ins->out[0]])
      continue;
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], pr = p->vals[v].prod;
      if (c.region_of[i] >= 0 && arg_region(&c, v) == c.region_of[i]) continue;
      used[v] = 1;
      if (pr >= 0 && c.region_of[pr] >= 0 && c.region_of[pr] != c.region_of[i]) c.escapes[pr] = 1;
    }
  }
  /* Members by region, in program order. */
  int at = 0;
  for (int r = 0; r < nreg; r++) {
    start[r] = at;
    at += count[r] >= 2 ? count[r] : 0;
  }
  for (int i = 0; i < ni; i++)
    if (c.region_of[i] >= 0) memb[start[c.region_of[i]] + fill[c.region_of[i]]++] = i;
  for (int r = 0; r < nreg; r++)
    if (count[r] >= 2 && lc_fuse_emit(&c, memb + start[r], count[r], r)) goto done;
  rc = lc_cprog_compact(p);
done:
  free(deps);
  free(tmp);
  free(rdep);
  free(count);
  free(memb);
  free(start);
  free(fill);
  free(used);
  free(rdev);
  free(c.region_of);
  free(c.space);
  free(c.rows);
  free(c.escapes);
  return rc;
}
