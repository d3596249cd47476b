/* Reading .mlxfn files (layout in export.h) into per-function node lists,
 * and the functions' calls. Everything read is validated: counts against
 * the bytes left, ids against the ids defined before them (so the node
 * list is topologically ordered by construction), constants' sizes
 * against their data, primitive names against the importer tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ptrmap.h"
#include "export/export.h"
#include "ops/elementwise.h"

/* Array ids as map keys (ptrmap keys are non-NULL pointers). */
static const void *id_key(uint64_t id) { return (const void *)(uintptr_t)(id + 1); }

struct parse {
  struct lc_xrd r;
  struct lc_ptrmap consts; /* file-wide: id -> struct lc_node * (borrowed) */
  struct lc_ptrmap ids;    /* this function: id -> slot */
  int cap_vals, cap_consts, cap_nodes;
};

static int grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  void *q = realloc(*p, (size_t)ncap * elem);
  if (!q) return lc_error("import_function: out of memory");
  memset((char *)q + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
  *p = q;
  *cap = ncap;
  return 0;
}

/* A new value slot for id (taking over shape). -1 when bad. */
static int new_slot(struct parse *ps, struct lc_xfun *fn, uint64_t id, mlx_dtype dt, int ndim,
                    int *shape) {
  if (id == UINT64_MAX || lc_ptrmap_get(&ps->ids, id_key(id), NULL)) {
    free(shape);
    lc_xrd_fail(&ps->r, "array id %llu defined twice", (unsigned long long)id);
    return -1;
  }
  if (grow((void **)&fn->vals, &ps->cap_vals, fn->nval + 1, sizeof *fn->vals) ||
      grow((void **)&fn->consts, &ps->cap_consts, fn->nval + 1, sizeof *fn->consts)) {
    free(shape);
    ps->r.bad = true;
    return -1;
  }
  int s = fn->nval++;
  fn->vals[s] = (struct lc_xval){dt, ndim, shape};
  fn->consts[s] = NULL;
  if (lc_ptrmap_put(&ps->ids, id_key(id), s)) {
    ps->r.bad = true;
    return -1;
  }
  return s;
}

static int slot_of(struct parse *ps, uint64_t id) {
  intptr_t s;
  if (ps->r.bad) return -1;
  if (!lc_ptrmap_get(&ps->ids, id_key(id), &s)) {
    lc_xrd_fail(&ps->r, "reference to unknown array id %llu", (unsigned long long)id);
    return -1;
  }
  return (int)s;
}

/* A vector<uint64> of ids resolved to slots: *n and a malloc'd array. */
static int read_refs(struct parse *ps, int *n, int **slots) {
  uint64_t cnt = lc_xrd_count(&ps->r, 8, "array ids");
  *n = 0;
  *slots = NULL;
  if (ps->r.bad) return 1;
  int *s = malloc(sizeof(int) * (cnt ? (size_t)cnt : 1));
  if (!s) return lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < cnt; k++) s[k] = slot_of(ps, lc_xrd_u64(&ps->r));
  if (ps->r.bad) {
    free(s);
    return 1;
  }
  *n = (int)cnt;
  *slots = s;
  return 0;
}

static int read_const(struct parse *ps, struct lc_xfun *fn, uint64_t id) {
  intptr_t known;
  if (lc_ptrmap_get(&ps->consts, id_key(id), &known)) {
    struct lc_node *c = (struct lc_node *)known;
    int *shape = c->ndim ? malloc(sizeof(int) * (size_t)c->ndim) : NULL;
    if (c->ndim && !shape) return lc_xrd_fail(&ps->r, "out of memory");
    if (shape) memcpy(shape, c->shape, sizeof(int) * (size_t)c->ndim);
    int s = new_slot(ps, fn, id, c->dtype, c->ndim, shape);
    if (s < 0) return 1;
    fn->consts[s] = lc_node_retain(c);
    return 0;
  }
  int ndim, *shape;
  mlx_dtype dt;
  if (lc_xrd_shape(&ps->r, &ndim, &shape)) return 1;
  if (lc_xrd_dtype(&ps->r, &dt)) {
    free(shape);
    return 1;
  }
  uint64_t left = ps->r.len - ps->r.pos, isz = lc_dtype_size(dt), n = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] && n > left / isz / (uint64_t)shape[d]) {
      free(shape);
      return lc_xrd_fail(&ps->r, "constant larger than the file");
    }
    n *= (uint64_t)shape[d];
  }
  const uint8_t *data = lc_xrd_bytes(&ps->r, (size_t)(n * isz));
  struct lc_node *c = data ? lc_node_new_data(dt, ndim, shape, data) : NULL;
  int s = c ? new_slot(ps, fn, id, dt, ndim, shape) : -1;
  if (!c) free(shape);
  if (s < 0) {
    lc_node_release(c);
    ps->r.bad = true;
    return 1;
  }
  fn->consts[s] = c;
  if (lc_ptrmap_put(&ps->consts, id_key(id), (intptr_t)c)) return ps->r.bad = true, 1;
  return 0;
}

/* Reads the outputs of a primitive entry into new slots of node x. */
static int read_outputs(struct parse *ps, struct lc_xfun *fn, uint64_t id, struct lc_xnode *x) {
  uint64_t nsib = lc_xrd_u64(&ps->r);
  if (ps->r.bad) return 1;
  if (nsib == 0) {
    int ndim, *shape;
    mlx_dtype dt;
    if (lc_xrd_shape(&ps->r, &ndim, &shape)) return 1;
    if (lc_xrd_dtype(&ps->r, &dt)) return free(shape), 1;
    if (!(x->out = malloc(sizeof(int)))) return free(shape), lc_xrd_fail(&ps->r, "out of memory");
    x->nout = 1;
    return (x->out[0] = new_slot(ps, fn, id, dt, ndim, shape)) < 0;
  }
  uint64_t n = lc_xrd_count(&ps->r, 8, "output ids");
  if (ps->r.bad) return 1;
  if (n == 0 || n > 64) return lc_xrd_fail(&ps->r, "primitive with %llu outputs", (unsigned long long)n);
  uint64_t ids[64];
  for (uint64_t k = 0; k < n; k++) ids[k] = lc_xrd_u64(&ps->r);
  if (lc_xrd_u64(&ps->r) != n && !ps->r.bad) return lc_xrd_fail(&ps->r, "output shapes do not match output ids");
  int nd[64], *sh[64];
  memset(sh, 0, sizeof sh);
  for (uint64_t k = 0; k < n; k++) lc_xrd_shape(&ps->r, &nd[k], &sh[k]);
  if (lc_xrd_u64(&ps->r) != n && !ps->r.bad) lc_xrd_fail(&ps->r, "output dtypes do not match output ids");
  mlx_dtype dt[64];
  for (uint64_t k = 0; k < n && !ps->r.bad; k++) lc_xrd_dtype(&ps->r, &dt[k]);
  x->out = ps->r.bad ? NULL : malloc(sizeof(int) * (size_t)n);
  if (!ps->r.bad && !x->out) lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < n; k++) {
    if (ps->r.bad) {
      free(sh[k]);
      continue;
    }
    x->out[k] = new_slot(ps, fn, ids[k], dt[k], nd[k], sh[k]);
    x->nout = (int)k + 1;
  }
  return ps->r.bad;
}

static int read_prim(struct parse *ps, struct lc_xfun *fn, uint64_t id) {
  if (grow((void **)&fn->nodes, &ps->cap_nodes, fn->nnode + 1, sizeof *fn->nodes))
    return ps->r.bad = true, 1;
  struct lc_xnode *x = &fn->nodes[fn->nnode++];
  memset(x, 0, sizeof *x);
  if (read_refs(ps, &x->nin, &x->in)) return 1;
  lc_xrd_i32(&ps->r); /* stream: index, device type, device index */
  int dev = lc_xrd_i32(&ps->r);
  lc_xrd_i32(&ps->r);
  if (!ps->r.bad && dev != 0 && dev != 1) return lc_xrd_fail(&ps->r, "unknown device type %d", dev);
  char *name = lc_xrd_str(&ps->r);
  if (!name) return 1;
  x->imp = lc_ximp_find(name);
  if (!x->imp) {
    lc_xrd_fail(&ps->r, "unsupported primitive '%s'", name);
    free(name);
    return 1;
  }
  free(name);
  if (x->nin < x->imp->nin_min || x->nin > x->imp->nin_max)
    return lc_xrd_fail(&ps->r, "primitive %s with %d inputs", x->imp->name, x->nin);
  if (lc_xstate_read(&ps->r, x->imp->sig, &x->st)) return 1;
  return read_outputs(ps, fn, id, x);
}

static int read_entry(struct parse *ps, struct lc_xfun *fn) {
  uint64_t id = lc_xrd_u64(&ps->r);
  bool prim = lc_xrd_bool(&ps->r);
  if (ps->r.bad) return 1;
  if (prim) return read_prim(ps, fn, id);
  bool constant = lc_xrd_bool(&ps->r);
  if (ps->r.bad) return 1;
  if (constant) return read_const(ps, fn, id);
  return slot_of(ps, id) < 0; /* an input, already known */
}

static int read_inputs(struct parse *ps, struct lc_xfun *fn) {
  uint64_t nk = lc_xrd_count(&ps->r, 8, "keyword names");
  if (ps->r.bad) return 1;
  if (!(fn->kw = calloc(nk ? (size_t)nk : 1, sizeof *fn->kw))) return lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < nk && !ps->r.bad; k++) {
    fn->kw[k] = lc_xrd_str(&ps->r);
    fn->nkw = (int)k + 1;
  }
  uint64_t ni = lc_xrd_count(&ps->r, 8, "input ids");
  if (ps->r.bad) return 1;
  uint64_t *ids = malloc(sizeof(uint64_t) * (ni ? (size_t)ni : 1));
  if (!ids) return lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < ni; k++) ids[k] = lc_xrd_u64(&ps->r);
  if (lc_xrd_u64(&ps->r) != ni && !ps->r.bad) lc_xrd_fail(&ps->r, "input arrays do not match input ids");
  if (!ps->r.bad && (uint64_t)fn->nkw > ni) lc_xrd_fail(&ps->r, "more keywords than inputs");
  fn->in = ps->r.bad ? NULL : malloc(sizeof(int) * (ni ? (size_t)ni : 1));
  if (!ps->r.bad && !fn->in) lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < ni && !ps->r.bad; k++) {
    int ndim, *shape;
    mlx_dtype dt;
    if (lc_xrd_shape(&ps->r, &ndim, &shape)) break;
    if (lc_xrd_dtype(&ps->r, &dt)) {
      free(shape);
      break;
    }
    fn->in[k] = new_slot(ps, fn, ids[k], dt, ndim, shape);
    fn->nin = (int)k + 1;
  }
  free(ids);
  return ps->r.bad;
}

static int read_function(struct parse *ps, struct lc_xfun *fn) {
  lc_ptrmap_free(&ps->ids);
  lc_ptrmap_init(&ps->ids);
  ps->cap_vals = ps->cap_consts = ps->cap_nodes = 0;
  if (read_inputs(ps, fn)) return 1;
  uint64_t no = lc_xrd_count(&ps->r, 8, "output ids");
  if (ps->r.bad) return 1;
  uint64_t *oids = malloc(sizeof(uint64_t) * (no ? (size_t)no : 1));
  if (!oids) return lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < no; k++) oids[k] = lc_xrd_u64(&ps->r);
  uint64_t nt = lc_xrd_count(&ps->r, 9, "tape entries");
  for (uint64_t t = 0; t < nt && !ps->r.bad; t++) read_entry(ps, fn);
  fn->out = ps->r.bad ? NULL : malloc(sizeof(int) * (no ? (size_t)no : 1));
  if (!ps->r.bad && !fn->out) lc_xrd_fail(&ps->r, "out of memory");
  for (uint64_t k = 0; k < no && !ps->r.bad; k++) {
    fn->out[k] = slot_of(ps, oids[k]);
    fn->nout = (int)k + 1;
  }
  free(oids);
  return ps->r.bad;
}

static int read_header(struct lc_xrd *r, struct lc_xfile *f, int *count) {
  char *version = lc_xrd_str(r);
  if (!version) return 1;
  if (strncmp(version, "0.32.", 5) != 0) {
    lc_xrd_fail(r, "unsupported .mlxfn version '%.40s' (lace reads files of MLX 0.32)", version);
    free(version);
    return 1;
  }
  free(version);
  *count = lc_xrd_i32(r);
  f->shapeless = lc_xrd_bool(r);
  free(lc_xrd_str(r)); /* metadata */
  if (!r->bad && (*count < 0 || (uint64_t)*count > (r->len - r->pos) / 40))
    return lc_xrd_fail(r, "invalid function count %d", *count);
  return r->bad;
}

struct lc_xfile *lc_xfile_parse(const uint8_t *data, size_t len, const char *path) {
  struct parse ps = {.r = {.p = data, .len = len, .file = path}};
  lc_ptrmap_init(&ps.consts);
  lc_ptrmap_init(&ps.ids);
  struct lc_xfile *f = calloc(1, sizeof *f);
  int count = 0;
  if (!f) {
    lc_error("import_function: out of memory");
  } else if (!read_header(&ps.r, f, &count)) {
    if (!(f->funs = calloc(count ? (size_t)count : 1, sizeof *f->funs))) {
      lc_xrd_fail(&ps.r, "out of memory");
    }
    for (int k = 0; k < count && !ps.r.bad; k++) {
      f->nfun = k + 1;
      read_function(&ps, &f->funs[k]);
    }
  }
  bool bad = !f || ps.r.bad;
  lc_ptrmap_free(&ps.consts);
  lc_ptrmap_free(&ps.ids);
  if (bad) {
    lc_xfile_free(f);
    return NULL;
  }
  return f;
}

struct lc_xfile *lc_xfile_read(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    lc_error("import_function: failed to open %s", path);
    return NULL;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      size_t ncap = cap ? cap * 2 : 65536;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        fclose(fp);
        lc_error("import_function: out of memory reading %s", path);
        return NULL;
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, fp);
    len += got;
    if (got == 0) break;
  }
  bool err = ferror(fp);
  fclose(fp);
  struct lc_xfile *f = NULL;
  if (err)
    lc_error("import_function: failed to read %s", path);
  else
    f = lc_xfile_parse(buf, len, path);
  free(buf);
  return f;
}

static void free_fun(struct lc_xfun *fn) {
  for (int k = 0; k < fn->nkw; k++) free(fn->kw[k]);
  free(fn->kw);
  for (int v = 0; v < fn->nval; v++) {
    free(fn->vals[v].shape);
    lc_node_release(fn->consts[v]);
  }
  free(fn->vals);
  free(fn->consts);
  for (int k = 0; k < fn->nnode; k++) {
    lc_xstate_free(&fn->nodes[k].st);
    free(fn->nodes[k].in);
    free(fn->nodes[k].out);
  }
  free(fn->nodes);
  free(fn->in);
  free(fn->out);
}

void lc_xfile_free(struct lc_xfile *f) {
  if (!f) return;
  for (int k = 0; k < f->nfun; k++) free_fun(&f->funs[k]);
  free(f->funs);
  free(f);
}
