/* Writing .mlxfn files: the exporter (header, one traced function per
 * apply, the header's count rewritten after each), the tape writer and the
 * helpers the opmap writers emit primitives with. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "export/export.h"
#include "ops/prim.h"

/* ---- emitting primitives ---- */

struct lc_xout lc_xe_val(const struct lc_xemit *e, int v) {
  const struct lc_cval *c = &e->p->vals[v];
  return (struct lc_xout){lc_xe_id(e, v), c->dtype, c->ndim, c->shape};
}

static int prim_v(struct lc_xemit *e, const char *name, int nin, const uint64_t *in, int nout,
                  const struct lc_xout *out, const char *sig, va_list ap) {
  struct lc_xwr *w = &e->tape;
  lc_xwr_u64(w, out[0].id);
  lc_xwr_bool(w, true);
  lc_xwr_u64(w, (uint64_t)nin);
  for (int k = 0; k < nin; k++) lc_xwr_u64(w, in[k]);
  for (int k = 0; k < 3; k++) lc_xwr_i32(w, 0); /* stream 0 of device cpu 0 */
  lc_xwr_str(w, name);
  lc_xstate_vwrite(w, sig, ap);
  lc_xwr_u64(w, (uint64_t)(nout - 1)); /* siblings */
  if (nout == 1) {
    lc_xwr_shape(w, out[0].ndim, out[0].shape);
    lc_xwr_dtype(w, out[0].dtype);
  } else {
    lc_xwr_u64(w, (uint64_t)nout);
    for (int k = 0; k < nout; k++) lc_xwr_u64(w, out[k].id);
    lc_xwr_u64(w, (uint64_t)nout);
    for (int k = 0; k < nout; k++) lc_xwr_shape(w, out[k].ndim, out[k].shape);
    lc_xwr_u64(w, (uint64_t)nout);
    for (int k = 0; k < nout; k++) lc_xwr_dtype(w, out[k].dtype);
  }
  e->ntape++;
  return w->bad;
}

int lc_xe_prim(struct lc_xemit *e, const char *name, int nin, const uint64_t *in, int nout,
               const struct lc_xout *out, const char *sig, ...) {
  va_list ap;
  va_start(ap, sig);
  int rc = prim_v(e, name, nin, in, nout, out, sig, ap);
  va_end(ap);
  return rc;
}

int lc_xe_same(struct lc_xemit *e, const struct lc_cinstr *ins, const char *name,
               const char *sig, ...) {
  uint64_t in[ins->nin > 0 ? ins->nin : 1];
  for (int k = 0; k < ins->nin; k++) in[k] = lc_xe_id(e, ins->in[k]);
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  va_list ap;
  va_start(ap, sig);
  int rc = prim_v(e, name, ins->nin, in, 1, &o, sig, ap);
  va_end(ap);
  return rc;
}

static void write_const_entry(struct lc_xemit *e, uint64_t id, const struct lc_node *c,
                              const void *data) {
  struct lc_xwr *w = &e->tape;
  lc_xwr_u64(w, id);
  lc_xwr_bool(w, false);
  lc_xwr_bool(w, true);
  lc_xwr_shape(w, c->ndim, c->shape);
  lc_xwr_dtype(w, c->dtype);
  lc_xwr_bytes(w, data, (size_t)c->size * lc_dtype_size(c->dtype));
  e->ntape++;
}

static int write_const(struct lc_xemit *e, uint64_t id, const struct lc_node *c) {
  size_t n = (size_t)c->size * lc_dtype_size(c->dtype);
  void *data = malloc(n ? n : 1);
  if (!data) return lc_error("export_function: out of memory");
  int rc = lc_node_copy_out(c, data);
  if (!rc) write_const_entry(e, id, c, data);
  free(data);
  return rc || e->tape.bad;
}

int lc_xe_scalar(struct lc_xemit *e, mlx_dtype dt, double v, uint64_t *id) {
  struct lc_node *c = lc_node_new_scalar(dt, v);
  if (!c) return 1;
  *id = lc_xe_new_id(e);
  int rc = write_const(e, *id, c);
  lc_node_release(c);
  return rc;
}

/* ---- one function ---- */

static int write_tape(struct lc_xemit *e) {
  const struct lc_cprog *p = e->p;
  for (int i = 0; i < p->nin; i++) { /* inputs: no primitive, no data */
    lc_xwr_u64(&e->tape, lc_xe_id(e, i));
    lc_xwr_bool(&e->tape, false);
    lc_xwr_bool(&e->tape, false);
    e->ntape++;
  }
  for (int c = 0; c < p->nconst; c++)
    if (write_const(e, lc_xe_id(e, p->nin + c), p->consts[c])) return 1;
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    const struct lc_xexp *x = lc_xexp_find(ins->op);
    if (!x)
      return lc_error("export_function: lace primitive '%s' has no MLX equivalent to export",
                      lc_prims[ins->op]->name);
    if (x->emit(e, ins)) return 1;
  }
  return e->tape.bad;
}

/* The function's record: kwarg keys, input ids and arrays, output ids,
 * the tape. */
static int write_function(struct lc_xporter *x, const struct lc_cprog *p, int nkw,
                          const char *const *keys, struct lc_xwr *w) {
  struct lc_xemit e = {.p = p, .id_base = x->next_id, .next_id = x->next_id + (uint64_t)p->nval,
                        .shapeless = x->shapeless};
  int rc = write_tape(&e);
  if (!rc) {
    lc_xwr_u64(w, (uint64_t)nkw);
    for (int k = 0; k < nkw; k++) lc_xwr_str(w, keys[k]);
    lc_xwr_u64(w, (uint64_t)p->nin);
    for (int i = 0; i < p->nin; i++) lc_xwr_u64(w, lc_xe_id(&e, i));
    lc_xwr_u64(w, (uint64_t)p->nin);
    for (int i = 0; i < p->nin; i++) {
      lc_xwr_shape(w, p->vals[i].ndim, p->vals[i].shape);
      lc_xwr_dtype(w, p->vals[i].dtype);
    }
    lc_xwr_u64(w, (uint64_t)p->nout);
    for (int o = 0; o < p->nout; o++) lc_xwr_u64(w, lc_xe_id(&e, p->outs[o]));
    lc_xwr_u64(w, e.ntape);
    lc_xwr_bytes(w, e.tape.buf, e.tape.len);
    rc = w->bad;
  }
  x->next_id = e.next_id;
  lc_xwr_free(&e.tape);
  return rc;
}

static int write_header(struct lc_xporter *x) {
  struct lc_xwr w = {0};
  lc_xwr_str(&w, LC_XFN_VERSION);
  lc_xwr_i32(&w, x->count);
  lc_xwr_bool(&w, x->shapeless);
  lc_xwr_str(&w, ""); /* metadata */
  int rc = w.bad;
  if (!rc && (fseek(x->f, 0, SEEK_SET) || fwrite(w.buf, 1, w.len, x->f) != w.len))
    rc = lc_error("export_function: failed to write %s", x->path);
  lc_xwr_free(&w);
  return rc;
}

/* ---- the exporter ---- */

struct lc_xporter *lc_xporter_new(const char *path, struct lc_closure *fun,
                                  struct lc_xclosure *kwfun, bool shapeless) {
  struct lc_xporter *x = calloc(1, sizeof *x);
  if (!x || !(x->path = strdup(path))) {
    free(x);
    lc_error("export_function: out of memory");
    return NULL;
  }
  x->shapeless = shapeless;
  x->next_id = 1;
  x->done.shapeless = shapeless;
  if (!(x->f = fopen(path, "wb+"))) {
    lc_error("export_function: failed to open %s", path);
    lc_xporter_free(x);
    return NULL;
  }
  if (write_header(x) || fflush(x->f)) {
    lc_xporter_free(x);
    return NULL;
  }
  x->fun = fun ? lc_closure_retain(fun) : NULL;
  x->kwfun = kwfun ? lc_xclosure_retain(kwfun) : NULL;
  return x;
}

void lc_xporter_free(struct lc_xporter *x) {
  if (!x) return;
  if (x->f) fclose(x->f);
  free(x->path);
  if (x->fun) lc_closure_release(x->fun);
  if (x->kwfun) lc_xclosure_release(x->kwfun);
  for (int k = 0; k < x->done.nfun; k++) {
    struct lc_xfun *fn = &x->done.funs[k];
    for (int j = 0; j < fn->nkw; j++) free(fn->kw[j]);
    for (int v = 0; v < fn->nval; v++) free(fn->vals[v].shape);
    free(fn->kw);
    free(fn->vals);
    free(fn->in);
  }
  free(x->done.funs);
  free(x);
}

/* Appends the signature of an exported function (for MLX's "exported twice
 * with the same signature" check). */
int lc_xporter_remember(struct lc_xporter *x, int nin, struct lc_node *const *in, int nkw,
                        const char *const *keys) {
  struct lc_xfun *funs = realloc(x->done.funs, sizeof *funs * (size_t)(x->done.nfun + 1));
  if (!funs) return lc_error("export_function: out of memory");
  x->done.funs = funs;
  struct lc_xfun *fn = &funs[x->done.nfun];
  memset(fn, 0, sizeof *fn);
  fn->kw = calloc((size_t)nkw + 1, sizeof *fn->kw);
  fn->vals = calloc((size_t)nin + 1, sizeof *fn->vals);
  fn->in = malloc(sizeof(int) * ((size_t)nin + 1));
  x->done.nfun++;
  if (!fn->kw || !fn->vals || !fn->in) return lc_error("export_function: out of memory");
  for (int j = 0; j < nkw; j++) {
    if (!(fn->kw[j] = strdup(keys[j]))) return lc_error("export_function: out of memory");
    fn->nkw = j + 1;
  }
  for (int i = 0; i < nin; i++) {
    const struct lc_node *n = in[i];
    fn->vals[i] = (struct lc_xval){n->dtype, n->ndim, NULL};
    fn->nval = i + 1;
    if (n->ndim && !(fn->vals[i].shape = malloc(sizeof(int) * (size_t)n->ndim)))
      return lc_error("export_function: out of memory");
    if (n->ndim) memcpy(fn->vals[i].shape, n->shape, sizeof(int) * (size_t)n->ndim);
    fn->in[i] = i;
    fn->nin = i + 1;
  }
  return 0;
}

/* Appends a traced program to the file and rewrites the header. */
int lc_xporter_write(struct lc_xporter *x, const struct lc_cprog *p, int nkw,
                     const char *const *keys) {
  struct lc_xwr w = {0};
  int rc = write_function(x, p, nkw, keys, &w);
  if (!rc && (fseek(x->f, 0, SEEK_END) || fwrite(w.buf, 1, w.len, x->f) != w.len))
    rc = lc_error("export_function: failed to write %s", x->path);
  lc_xwr_free(&w);
  if (rc) return 1;
  x->count++;
  return write_header(x) || (fflush(x->f) ? lc_error("export_function: failed to write %s", x->path) : 0);
}
