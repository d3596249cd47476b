/* mlx_vjp, mlx_jvp, mlx_value_and_grad, vmap's detail entry points and the
 * custom transforms (the work is in src/transforms/). */
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"
#include "mlx/c/transforms.h"
#include "mlx/c/transforms_impl.h"
#include "transforms/custom.h"
#include "transforms/fn.h"
#include "transforms/transforms.h"

/* Stores nodes (consumed, malloc'd array freed) into *res. */
static int give(mlx_vector_array *res, struct lc_node **nodes, size_t n) {
  int rc = lc_vec_array_assign(res, nodes, n);
  lc_rule_release(nodes, n);
  free(nodes);
  return rc;
}

int mlx_vjp(mlx_vector_array *res_0, mlx_vector_array *res_1, const mlx_closure fun,
            const mlx_vector_array primals, const mlx_vector_array cotangents) {
  const char *fn = "mlx_vjp";
  LC_CHECK_RES(fn, res_0);
  LC_CHECK_RES(fn, res_1);
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  struct lc_node **p, **c;
  size_t np, nc;
  if (lc_api_vector_nodes(fn, primals, &p, &np)) return 1;
  if (lc_api_vector_nodes(fn, cotangents, &c, &nc)) {
    free(p);
    return 1;
  }
  struct lc_node **outs = NULL, **grads = calloc(np + 1, sizeof *grads);
  size_t no = 0;
  int rc = !grads ? lc_error("out of memory")
                  : lc_fn_vjp(lc_closure_of(fun), (int)np, p, (int)nc, c, &outs, &no, grads);
  free(p);
  free(c);
  if (rc) {
    free(grads);
    return 1;
  }
  rc = give(res_0, outs, no);
  return give(res_1, grads, np) || rc;
}

int mlx_jvp(mlx_vector_array *res_0, mlx_vector_array *res_1, const mlx_closure fun,
            const mlx_vector_array primals, const mlx_vector_array tangents) {
  const char *fn = "mlx_jvp";
  LC_CHECK_RES(fn, res_0);
  LC_CHECK_RES(fn, res_1);
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  struct lc_node **p, **t;
  size_t np, nt;
  if (lc_api_vector_nodes(fn, primals, &p, &np)) return 1;
  if (lc_api_vector_nodes(fn, tangents, &t, &nt)) {
    free(p);
    return 1;
  }
  int rc = 0;
  struct lc_node **outs = NULL, **tout = NULL;
  size_t no = 0;
  if (np != nt)
    rc = lc_error("%s: the number of inputs (%zu) does not match the number of tangents (%zu)", fn,
                  np, nt);
  else
    rc = lc_fn_jvp(lc_closure_of(fun), (int)np, p, t, &outs, &tout, &no);
  free(p);
  free(t);
  if (rc) return 1;
  rc = give(res_0, outs, no);
  return give(res_1, tout, no) || rc;
}

/* ---- value_and_grad ---- */

struct vag {
  struct lc_closure *fun;
  int nargs;
  int argnums[];
};

static void vag_free(void *payload) {
  struct vag *g = payload;
  lc_closure_release(g->fun);
  free(g);
}

static int vag_apply(mlx_vector_array *res_0, mlx_vector_array *res_1, const mlx_vector_array input,
                     void *payload) {
  struct vag *g = payload;
  struct lc_node **in;
  size_t nin;
  if (lc_api_vector_nodes("mlx_closure_value_and_grad_apply", input, &in, &nin)) return 1;
  struct lc_node **outs, **grads;
  size_t no, ng;
  int rc = lc_fn_value_and_grad(g->fun, (int)nin, in, g->argnums, g->nargs, &outs, &no, &grads,
                                &ng);
  free(in);
  if (rc) return 1;
  rc = give(res_0, outs, no);
  return give(res_1, grads, ng) || rc;
}

int mlx_value_and_grad(mlx_closure_value_and_grad *res, const mlx_closure fun, const int *argnums,
                       size_t argnums_num) {
  const char *fn = "mlx_value_and_grad";
  LC_CHECK_RES(fn, res);
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  if (lc_api_check_list(fn, "argnums", argnums, argnums_num)) return 1;
  if (argnums_num == 0) return lc_error("%s: at least one argument must be differentiated", fn);
  for (size_t i = 0; i < argnums_num; i++)
    for (size_t j = 0; j < i; j++)
      if (argnums[i] == argnums[j])
        return lc_error("%s: repeated argument number %d", fn, argnums[i]);
  struct vag *g = malloc(sizeof *g + sizeof(int) * argnums_num);
  if (!g) return lc_error("out of memory");
  g->fun = lc_closure_retain(lc_closure_of(fun));
  g->nargs = (int)argnums_num;
  for (size_t i = 0; i < argnums_num; i++) g->argnums[i] = argnums[i];
  struct lc_xclosure *c = lc_xclosure_make((void (*)(void))(lc_vag_fnp)vag_apply, true, g, vag_free);
  if (!c) return 1;
  lc_xclosure_release(res->ctx);
  res->ctx = c;
  return 0;
}

/* ---- vmap ---- */

int mlx_detail_vmap_trace(mlx_vector_array *res_0, mlx_vector_array *res_1, const mlx_closure fun,
                          const mlx_vector_array inputs, const int *in_axes, size_t in_axes_num) {
  const char *fn = "mlx_detail_vmap_trace";
  LC_CHECK_RES(fn, res_0);
  LC_CHECK_RES(fn, res_1);
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  if (lc_api_check_list(fn, "in_axes", in_axes, in_axes_num)) return 1;
  struct lc_node **in;
  size_t nin;
  if (lc_api_vector_nodes(fn, inputs, &in, &nin)) return 1;
  if (nin != in_axes_num) {
    free(in);
    return lc_error("%s: the number of in axes (%zu) must match the number of inputs (%zu)", fn,
                    in_axes_num, nin);
  }
  struct lc_node **s_in = calloc(nin + 1, sizeof *s_in), **s_out = NULL;
  size_t no = 0;
  int rc = !s_in ? lc_error("out of memory")
                 : lc_fn_vmap_trace(lc_closure_of(fun), (int)nin, in, in_axes, s_in, &s_out, &no);
  free(in);
  if (rc) {
    free(s_in);
    return 1;
  }
  rc = give(res_0, s_in, nin);
  return give(res_1, s_out, no) || rc;
}

int mlx_detail_vmap_replace(mlx_vector_array *res, const mlx_vector_array inputs,
                            const mlx_vector_array s_inputs, const mlx_vector_array s_outputs,
                            const int *in_axes, size_t in_axes_num, const int *out_axes,
                            size_t out_axes_num) {
  const char *fn = "mlx_detail_vmap_replace";
  LC_CHECK_RES(fn, res);
  if (lc_api_check_list(fn, "in_axes", in_axes, in_axes_num) ||
      lc_api_check_list(fn, "out_axes", out_axes, out_axes_num))
    return 1;
  struct lc_node **in = NULL, **s_in = NULL, **s_out = NULL;
  size_t nin, nsin, nsout;
  int rc = 1;
  if (lc_api_vector_nodes(fn, inputs, &in, &nin) ||
      lc_api_vector_nodes(fn, s_inputs, &s_in, &nsin) ||
      lc_api_vector_nodes(fn, s_outputs, &s_out, &nsout))
    goto done;
  if (nin != nsin || nin != in_axes_num) {
    lc_error("%s: inputs (%zu), traced inputs (%zu) and in axes (%zu) must have the same length",
             fn, nin, nsin, in_axes_num);
    goto done;
  }
  if (nsout != out_axes_num) {
    lc_error("%s: the number of out axes (%zu) must match the number of outputs (%zu)", fn,
             out_axes_num, nsout);
    goto done;
  }
  for (size_t i = 0; i < nin; i++) {
    int a = in_axes[i];
    if (a != -1 && (a < 0 || a >= in[i]->ndim || in[i]->ndim - 1 != s_in[i]->ndim)) {
      lc_error("%s: axis %d is invalid for input %zu with %d dimensions", fn, a, i, in[i]->ndim);
      goto done;
    }
  }
  struct lc_node **r = calloc(nsout + 1, sizeof *r);
  if (!r) {
    lc_error("out of memory");
    goto done;
  }
  if (lc_vmap_graph((int)nin, in, s_in, in_axes, (int)nsout, s_out, out_axes, r)) {
    free(r);
    goto done;
  }
  rc = give(res, r, nsout);
done:
  free(in);
  free(s_in);
  free(s_out);
  return rc;
}

/* ---- custom transforms ---- */

static int set_closure(mlx_closure *res, struct lc_closure *c) {
  if (!c) return 1;
  lc_closure_release(lc_closure_of(*res));
  res->ctx = c;
  return 0;
}

int mlx_custom_function(mlx_closure *res, const mlx_closure fun, const mlx_closure_custom fun_vjp,
                        const mlx_closure_custom_jvp fun_jvp,
                        const mlx_closure_custom_vmap fun_vmap) {
  LC_CHECK_RES("mlx_custom_function", res);
  if (!fun.ctx) return lc_error("mlx_custom_function: empty closure");
  return set_closure(res, lc_custom_make(lc_closure_of(fun), fun_vjp.ctx, fun_jvp.ctx,
                                         fun_vmap.ctx, false));
}

int mlx_custom_vjp(mlx_closure *res, const mlx_closure fun, const mlx_closure_custom fun_vjp) {
  LC_CHECK_RES("mlx_custom_vjp", res);
  if (!fun.ctx) return lc_error("mlx_custom_vjp: empty closure");
  if (!fun_vjp.ctx) return lc_error("mlx_custom_vjp: empty vjp closure");
  return set_closure(res, lc_custom_make(lc_closure_of(fun), fun_vjp.ctx, NULL, NULL, false));
}

int mlx_checkpoint(mlx_closure *res, const mlx_closure fun) {
  LC_CHECK_RES("mlx_checkpoint", res);
  if (!fun.ctx) return lc_error("mlx_checkpoint: empty closure");
  return set_closure(res, lc_custom_make(lc_closure_of(fun), NULL, NULL, NULL, true));
}
