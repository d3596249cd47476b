/* Calling imported functions: choosing the function of a file that takes
 * the given inputs (MLX's matching), and rebuilding its nodes over them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "export/export.h"
#include "ops/elementwise.h"

static bool input_ok(const struct lc_xval *v, const struct lc_node *x, bool shapeless) {
  if (v->dtype != x->dtype || v->ndim != x->ndim) return false;
  return shapeless || lc_shape_equal(v->ndim, v->shape, x->ndim, x->shape);
}

bool lc_xfun_matches(const struct lc_xfun *fn, bool shapeless, int nargs,
                     struct lc_node *const *args, int nkw, const char *const *keys,
                     struct lc_node *const *kwv) {
  if (fn->nin != nargs + nkw) return false;
  for (int k = 0; k < fn->nkw; k++) {
    bool found = false;
    for (int j = 0; j < nkw && !found; j++) found = !strcmp(fn->kw[k], keys[j]);
    if (!found) return false;
  }
  for (int i = 0; i < nargs; i++)
    if (!input_ok(&fn->vals[fn->in[i]], args[i], shapeless)) return false;
  for (int j = 0; j < nkw; j++)
    if (!input_ok(&fn->vals[fn->in[nargs + j]], kwv[j], shapeless)) return false;
  return true;
}

static void describe(struct lc_strbuf *sb, const char *label, int ndim, const int *shape,
                     mlx_dtype dt) {
  char s[256];
  lc_strbuf_put(sb, "   %s: %s %s\n", label, lc_shape_str(ndim, shape, s, sizeof s),
                   lc_dtype_name(dt));
}

/* MLX's message: the functions the file holds, then what was given. */
static void report_no_match(const struct lc_xfile *f, int nargs, struct lc_node *const *args,
                            int nkw, const char *const *keys, struct lc_node *const *kwv) {
  struct lc_strbuf sb = {0};
  lc_strbuf_put(&sb, "import_function: no imported function matches the given %d positional "
                        "and %d keyword inputs. The file holds:\n", nargs, nkw);
  char label[160];
  for (int k = 0; k < f->nfun; k++) {
    const struct lc_xfun *fn = &f->funs[k];
    int npos = fn->nin - fn->nkw;
    lc_strbuf_put(&sb, " %d. Function with %d positional inputs and %d keyword inputs:\n",
                     k + 1, npos, fn->nkw);
    for (int i = 0; i < fn->nin; i++) {
      const struct lc_xval *v = &fn->vals[fn->in[i]];
      if (i < npos)
        snprintf(label, sizeof label, "%d", i + 1);
      else
        snprintf(label, sizeof label, "\"%.100s\"", fn->kw[i - npos]);
      describe(&sb, label, v->ndim, v->shape, v->dtype);
    }
  }
  lc_strbuf_put(&sb, "Called with:\n");
  for (int i = 0; i < nargs; i++) {
    snprintf(label, sizeof label, "%d", i + 1);
    describe(&sb, label, args[i]->ndim, args[i]->shape, args[i]->dtype);
  }
  for (int j = 0; j < nkw; j++) {
    snprintf(label, sizeof label, "\"%.100s\"", keys[j]);
    describe(&sb, label, kwv[j]->ndim, kwv[j]->shape, kwv[j]->dtype);
  }
  lc_error("%s", sb.data ? sb.data : "import_function: no imported function matches");
  free(sb.data);
}

int lc_xfile_match(const struct lc_xfile *f, int nargs, struct lc_node *const *args, int nkw,
                   const char *const *keys, struct lc_node *const *kwv) {
  for (int k = 0; k < f->nfun; k++)
    if (lc_xfun_matches(&f->funs[k], f->shapeless, nargs, args, nkw, keys, kwv)) return k;
  report_no_match(f, nargs, args, nkw, keys, kwv);
  return -1;
}

/* Output k of x as built: cast to the recorded dtype (MLX's arrays have
 * the dtype the file records), shape checked unless shapeless. */
static int settle(const struct lc_xnode *x, int k, const struct lc_xval *rec, bool shapeless,
                  struct lc_node **n) {
  if ((*n)->dtype != rec->dtype) {
    struct lc_node *c = lc_astype(*n, rec->dtype);
    lc_node_release(*n);
    if (!(*n = c)) return 1;
  }
  if (shapeless || lc_shape_equal((*n)->ndim, (*n)->shape, rec->ndim, rec->shape)) return 0;
  char a[256], b[256];
  return lc_error("import_function: %s output %d has shape %s where the file records %s",
                  x->imp->name, k, lc_shape_str((*n)->ndim, (*n)->shape, a, sizeof a),
                  lc_shape_str(rec->ndim, rec->shape, b, sizeof b));
}

static int run_node(const struct lc_xfun *fn, const struct lc_xnode *x, bool shapeless,
                    struct lc_node **v) {
  struct lc_node *in[x->nin > 0 ? x->nin : 1], *out[x->nout];
  struct lc_xval rec[x->nout];
  for (int k = 0; k < x->nin; k++) in[k] = v[x->in[k]];
  for (int k = 0; k < x->nout; k++) {
    rec[k] = fn->vals[x->out[k]];
    out[k] = NULL;
  }
  struct lc_xbuild b = {x->imp->name, &x->st, x->nin, x->nout, in, rec, out};
  int rc = x->imp->build(&b);
  for (int k = 0; k < x->nout && !rc; k++) {
    if (!out[k]) rc = lc_error("internal: import of %s built no output %d", x->imp->name, k);
    else rc = settle(x, k, &rec[k], shapeless, &out[k]);
  }
  for (int k = 0; k < x->nout; k++) {
    if (rc) lc_node_release(out[k]);
    else v[x->out[k]] = out[k];
  }
  return rc;
}

int lc_xfun_call(const struct lc_xfile *f, int fi, struct lc_node *const *in,
                 struct lc_node **out) {
  const struct lc_xfun *fn = &f->funs[fi];
  struct lc_node **v = calloc((size_t)fn->nval + 1, sizeof *v);
  if (!v) return lc_error("import_function: out of memory");
  for (int i = 0; i < fn->nin; i++) v[fn->in[i]] = lc_node_retain(in[i]);
  for (int s = 0; s < fn->nval; s++)
    if (fn->consts[s]) v[s] = lc_node_retain(fn->consts[s]);
  int rc = 0;
  for (int k = 0; k < fn->nnode && !rc; k++) rc = run_node(fn, &fn->nodes[k], f->shapeless, v);
  for (int o = 0; o < fn->nout; o++) out[o] = rc ? NULL : lc_node_retain(v[fn->out[o]]);
  for (int s = 0; s < fn->nval; s++) lc_node_release(v[s]);
  free(v);
  return rc;
}
