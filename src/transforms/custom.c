/* Custom transforms (see custom.h). The CUSTOM primitive's params hold one
 * counted reference to its struct lc_custom (params_ref), so nodes and
 * compiled programs keep the user's closures alive. */
#include "transforms/custom.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/creation.h"
#include "ops/misc.h"
#include "ops/prim.h"
#include "ops/tuple.h"
#include "ops/unary.h"
#include "transforms/fn.h"
#include "transforms/transforms.h"

struct lc_custom {
  atomic_int refs;
  struct lc_closure *fun;
  struct lc_xclosure *vjp, *jvp, *vmap; /* each may be NULL */
  bool checkpoint;
};

struct custom_params {
  struct lc_custom *obj;
  int32_t nprim, nout;
};

static void custom_unref(struct lc_custom *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  lc_closure_release(c->fun);
  lc_xclosure_release(c->vjp);
  lc_xclosure_release(c->jvp);
  lc_xclosure_release(c->vmap);
  free(c);
}

static void custom_params_ref(const void *params, int delta) {
  struct lc_custom *c = ((const struct custom_params *)params)->obj;
  if (delta > 0)
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  else
    custom_unref(c);
}

/* The node holds no data (its outputs are tuple_get views of the function's
 * own outputs, which are its inputs), so on a GPU it is evaluated in place
 * too: answering on the CPU would copy every input to the host first. */
static int custom_eval(struct lc_node *n) { return lc_node_alloc_data(n); }

/* Copies the arrays of a result vector (new references) into out[0..n),
 * checking that there are at least n of them with the given shapes (like,
 * may be NULL). */
static int take_results(const char *what, mlx_vector_array v, int n, struct lc_node *const *like,
                        struct lc_node **out) {
  struct lc_vec_array *va = v.ctx;
  if (!va || va->len < (size_t)n)
    return lc_error("%s returned %zu arrays, expected %d", what, va ? va->len : (size_t)0, n);
  for (int i = 0; i < n; i++) {
    struct lc_node *x = va->items[i];
    if (!x) {
      lc_rule_release(out, (size_t)i);
      return lc_error("%s returned an empty array at position %d", what, i);
    }
    if (like && !lc_shape_equal(x->ndim, x->shape, like[i]->ndim, like[i]->shape)) {
      char a[64], b[64];
      lc_rule_release(out, (size_t)i);
      return lc_error("%s: result %d has shape %s, expected %s", what, i,
                      lc_shape_str(x->ndim, x->shape, a, sizeof a),
                      lc_shape_str(like[i]->ndim, like[i]->shape, b, sizeof b));
    }
    out[i] = lc_node_retain(x);
  }
  return 0;
}

static int vec(mlx_vector_array *v, struct lc_node *const *nodes, int n) {
  v->ctx = NULL;
  return lc_vec_array_assign(v, nodes, (size_t)n);
}

#define XCALL LC_XCLOSURE_CALL

static int user_call_status(const char *what, int st, unsigned long before) {
  if (!st) return 0;
  if (lc_error_count() == before) return lc_error("%s returned a non-zero value", what);
  return 1;
}

/* ---- rules ---- */

static int custom_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                      struct lc_node **out) {
  const struct custom_params *p = n->params;
  struct lc_custom *c = p->obj;
  int np = p->nprim, no = p->nout;
  struct lc_node *const *prim = n->in, *const *outs = n->in + np;
  struct lc_node **cots = calloc((size_t)no + 1, sizeof *cots);
  struct lc_node **grads = calloc((size_t)np + 1, sizeof *grads);
  int rc = 1;
  if (!cots || !grads) {
    lc_error("out of memory");
    goto done;
  }
  for (int k = 0; k < no; k++)
    if (!(cots[k] = cot[k] ? lc_node_retain(cot[k]) : lc_zeros_like(outs[k]))) goto done;
  if (c->vjp) {
    mlx_vector_array r = mlx_vector_array_new(), vp = {0}, vc = {0}, vo = {0};
    if (!vec(&vp, prim, np) && !vec(&vc, cots, no) && !vec(&vo, outs, no)) {
      unsigned long before = lc_error_count();
      int st = XCALL(c->vjp, lc_cu_fn, lc_cu_fnp, &r, vp, vc, vo);
      rc = user_call_status("custom vjp", st, before) ||
           take_results("custom vjp", r, np, prim, grads);
    }
    mlx_vector_array_free(r);
    mlx_vector_array_free(vp);
    mlx_vector_array_free(vc);
    mlx_vector_array_free(vo);
  } else {
    /* checkpoint: recompute from the primals once the outputs exist */
    struct lc_node **from = calloc((size_t)np + 1, sizeof *from);
    struct lc_node **fo = NULL;
    size_t nfo = 0;
    if (!from) {
      lc_error("out of memory");
      goto done;
    }
    rc = c->checkpoint ? lc_depends(np, prim, no, outs, from) : 0;
    if (!c->checkpoint)
      for (int i = 0; i < np; i++) from[i] = lc_node_retain(prim[i]);
    if (!rc) rc = lc_fn_vjp(c->fun, np, from, no, cots, &fo, &nfo, grads);
    if (!rc) {
      lc_rule_release(fo, nfo);
      free(fo);
    }
    lc_rule_release(from, (size_t)np);
    free(from);
  }
  if (rc) goto done;
  for (int j = 0; j < nargs; j++) {
    int a = argnums[j];
    out[j] = a < np ? grads[a] : NULL;
    if (a < np) grads[a] = NULL;
  }
done:
  lc_rule_release(cots, (size_t)no);
  lc_rule_release(grads, (size_t)np);
  free(cots);
  free(grads);
  return rc;
}

static int custom_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct custom_params *p = n->params;
  struct lc_custom *c = p->obj;
  int np = p->nprim, no = p->nout;
  struct lc_node *const *prim = n->in, *const *outs = n->in + np;
  if (!c->jvp) {
    struct lc_node **fo = NULL, **to = NULL;
    size_t nfo = 0;
    if (lc_fn_jvp(c->fun, np, prim, tan, &fo, &to, &nfo)) return 1;
    for (size_t k = 0; k < nfo; k++) {
      if ((int)k < no) out[k] = to[k];
      else lc_node_release(to[k]);
    }
    lc_rule_release(fo, nfo);
    free(fo);
    free(to);
    return 0;
  }
  int argn[np > 0 ? np : 1], na = 0;
  struct lc_node *tv[np > 0 ? np : 1];
  for (int i = 0; i < np; i++)
    if (tan[i]) {
      argn[na] = i;
      tv[na++] = tan[i];
    }
  mlx_vector_array r = mlx_vector_array_new(), vp = {0}, vt = {0};
  int rc = 1;
  if (!vec(&vp, prim, np) && !vec(&vt, tv, na)) {
    unsigned long before = lc_error_count();
    int st = XCALL(c->jvp, lc_jv_fn, lc_jv_fnp, &r, vp, vt, argn, (size_t)na);
    rc = user_call_status("custom jvp", st, before) || take_results("custom jvp", r, no, outs, out);
  }
  mlx_vector_array_free(r);
  mlx_vector_array_free(vp);
  mlx_vector_array_free(vt);
  return rc;
}

static int custom_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  const struct custom_params *p = n->params;
  struct lc_custom *c = p->obj;
  int np = p->nprim, no = p->nout;
  if (!c->vmap) {
    struct lc_node **fo = NULL;
    size_t nfo = 0;
    if (lc_fn_vmap(c->fun, np, in, ax, NULL, 0, &fo, &nfo)) return 1;
    for (size_t k = 0; k < nfo; k++) {
      if ((int)k < no) {
        out[k] = fo[k];
        out_ax[k] = 0;
      } else {
        lc_node_release(fo[k]);
      }
    }
    free(fo);
    return 0;
  }
  mlx_vector_array r = mlx_vector_array_new(), vi = {0};
  mlx_vector_int ra = mlx_vector_int_new();
  int rc = 1;
  if (!vec(&vi, in, np)) {
    unsigned long before = lc_error_count();
    int st = XCALL(c->vmap, lc_vm_fn, lc_vm_fnp, &r, &ra, vi, ax, (size_t)np);
    rc = user_call_status("custom vmap", st, before) || take_results("custom vmap", r, no, NULL, out);
    struct lc_vec_int *axv = ra.ctx;
    if (!rc && (!axv || axv->len < (size_t)no)) {
      rc = lc_error("custom vmap returned %zu axes for %d outputs", axv ? axv->len : (size_t)0, no);
      lc_rule_release(out, no);
    }
    for (int k = 0; !rc && k < no; k++) {
      out_ax[k] = axv->items[k];
      if (out_ax[k] < -1 || out_ax[k] >= out[k]->ndim) {
        rc = lc_error("custom vmap: axis %d is invalid for output %d with %d dimensions",
                      out_ax[k], k, out[k]->ndim);
        lc_rule_release(out, no);
      }
    }
  }
  mlx_vector_array_free(r);
  mlx_vector_array_free(vi);
  mlx_vector_int_free(ra);
  return rc;
}

const struct lc_prim lc_prim_custom = {.name = "custom",
                                       .flags = LC_PF_NOCSE,
                                       .eval_cpu = custom_eval,
                                       .eval_cuda = LC_CUDA(custom_eval),
                                       .vjp = custom_vjp,
                                       .jvp = custom_jvp,
                                       .vmap = custom_vmap,
                                       .params_ref = custom_params_ref};

/* ---- the closure ---- */

static int custom_call(mlx_vector_array *res, const mlx_vector_array vin, void *payload) {
  struct lc_custom *c = payload;
  struct lc_vec_array *va = vin.ctx;
  int np = (int)va->len;
  struct lc_node **outs = NULL;
  size_t no = 0;
  if (lc_closure_call_nodes(c->fun, va->items, va->len, &outs, &no)) return 1;
  int nin = np + (int)no;
  struct lc_node **ins = malloc(sizeof *ins * ((size_t)nin + 1));
  struct lc_node **res_n = calloc(no + 1, sizeof *res_n);
  struct lc_node *t = NULL;
  int rc = 1;
  if (!ins || !res_n) {
    lc_error("out of memory");
    goto done;
  }
  for (size_t k = 0; k < no; k++)
    if (!outs[k]) {
      lc_error("custom function: output %zu is an empty array", k);
      goto done;
    }
  for (int i = 0; i < np; i++) ins[i] = va->items[i];
  size_t k = 0;
  for (; k < no; k++)
    if (!(ins[np + k] = lc_stop_gradient(outs[k]))) break;
  if (k == no) {
    struct custom_params p = {c, np, (int32_t)no};
    int zero = 0;
    t = lc_node_new_op(LC_OP_CUSTOM, MLX_UINT8, 1, &zero, nin, ins, &p, sizeof p);
    for (size_t j = 0; t && j < no; j++)
      if (!(res_n[j] = lc_tuple_get_view(t, ins[np + j], (int)j, (int)no))) break;
    rc = !t || (no && !res_n[no - 1]) || lc_vec_array_assign(res, res_n, no);
  }
  for (size_t j = 0; j < k; j++) lc_node_release(ins[np + j]);
done:
  lc_node_release(t);
  lc_rule_release(res_n, no);
  free(res_n);
  lc_rule_release(outs, no);
  free(outs);
  free(ins);
  return rc;
}

static void custom_closure_free(void *payload) { custom_unref(payload); }

struct lc_closure *lc_custom_make(struct lc_closure *fun, struct lc_xclosure *vjp,
                                  struct lc_xclosure *jvp, struct lc_xclosure *vmap,
                                  bool checkpoint) {
  if (!vjp && !jvp && !vmap && !checkpoint) return lc_closure_retain(fun);
  struct lc_custom *c = calloc(1, sizeof *c);
  if (!c) {
    lc_error("out of memory");
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->fun = lc_closure_retain(fun);
  c->vjp = lc_xclosure_retain(vjp);
  c->jvp = lc_xclosure_retain(jvp);
  c->vmap = lc_xclosure_retain(vmap);
  c->checkpoint = checkpoint;
  return lc_closure_make(custom_call, c, custom_closure_free);
}
