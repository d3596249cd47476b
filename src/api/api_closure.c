/* mlx_closure: refcounted C functions over vectors of arrays. */
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"

/* A user function that fails without any lace call having reported the
 * cause gets mlx-c's message; when lace already reported why, that message
 * stays the last one. `before` is lc_error_count() before the call. */
int lc_closure_failed(int status, unsigned long before) {
  if (status && lc_error_count() == before) lc_error("mlx_closure returned a non-zero value");
  return status;
}
#define failed lc_closure_failed
static int call_plain(struct lc_closure *c, mlx_vector_array *res, const mlx_vector_array in) {
  unsigned long before = lc_error_count();
  return failed(c->fun(res, in), before);
}
static int call_payload(struct lc_closure *c, mlx_vector_array *res, const mlx_vector_array in) {
  unsigned long before = lc_error_count();
  int status = c->fun_payload(res, in, c->payload);
  return c->user ? failed(status, before) : status;
}
static int call_unary(struct lc_closure *c, mlx_vector_array *res, const mlx_vector_array in) {
  if (mlx_vector_array_size(in) != 1)
    return lc_error("unary closure called with %zu arguments", mlx_vector_array_size(in));
  mlx_array x = mlx_array_new(), y = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0);
  unsigned long before = lc_error_count();
  if (!rc) rc = failed(c->fun_unary(&y, x), before);
  if (!rc && !y.ctx) rc = lc_error("unary closure returned an empty array");
  if (!rc) rc = mlx_vector_array_set_value(res, y);
  mlx_array_free(x);
  mlx_array_free(y);
  return rc;
}

static struct lc_closure *alloc_closure(void) {
  struct lc_closure *c = calloc(1, sizeof *c);
  if (!c) {
    lc_error("out of memory");
    return NULL;
  }
  atomic_init(&c->refs, 1);
  return c;
}

struct lc_closure *lc_closure_make(int (*fun)(mlx_vector_array *, const mlx_vector_array, void *),
                                   void *payload, void (*dtor)(void *)) {
  struct lc_closure *c = alloc_closure();
  if (!c) {
    if (dtor) dtor(payload);
    return NULL;
  }
  c->call = call_payload;
  c->fun_payload = fun;
  c->payload = payload;
  c->dtor = dtor;
  return c;
}

struct lc_closure *lc_closure_retain(struct lc_closure *c) {
  if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

void lc_closure_release(struct lc_closure *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  if (c->dtor) c->dtor(c->payload);
  free(c);
}

int lc_closure_call_nodes(struct lc_closure *c, struct lc_node *const *in, size_t nin,
                          struct lc_node ***out, size_t *nout) {
  mlx_vector_array vin = {NULL}, vout = mlx_vector_array_new();
  if (!vout.ctx || lc_vec_array_assign(&vin, in, nin)) {
    mlx_vector_array_free(vout);
    return 1;
  }
  int rc = c->call(c, &vout, vin);
  mlx_vector_array_free(vin);
  if (!rc && !vout.ctx) rc = lc_error("closure returned an empty vector");
  if (rc) {
    mlx_vector_array_free(vout);
    return 1;
  }
  struct lc_vec_array *v = vout.ctx;
  struct lc_node **res = malloc(sizeof *res * (v->len ? v->len : 1));
  if (!res) {
    mlx_vector_array_free(vout);
    return lc_error("out of memory");
  }
  for (size_t i = 0; i < v->len; i++) res[i] = lc_node_retain(v->items[i]);
  *out = res;
  *nout = v->len;
  mlx_vector_array_free(vout);
  return 0;
}

mlx_closure mlx_closure_new(void) { return (mlx_closure){NULL}; }

int mlx_closure_free(mlx_closure cls) {
  lc_closure_release(lc_closure_of(cls));
  return 0;
}

mlx_closure mlx_closure_new_func(int (*fun)(mlx_vector_array *, const mlx_vector_array)) {
  if (!fun) {
    lc_error("mlx_closure_new_func: fun is NULL");
    return mlx_closure_new();
  }
  struct lc_closure *c = alloc_closure();
  if (c) {
    c->call = call_plain;
    c->fun = fun;
    c->user = true;
  }
  return (mlx_closure){c};
}

mlx_closure mlx_closure_new_func_payload(int (*fun)(mlx_vector_array *, const mlx_vector_array,
                                                    void *),
                                         void *payload, void (*dtor)(void *)) {
  if (!fun) {
    lc_error("mlx_closure_new_func_payload: fun is NULL");
    if (dtor) dtor(payload);
    return mlx_closure_new();
  }
  struct lc_closure *c = lc_closure_make(fun, payload, dtor);
  if (c) c->user = true;
  return (mlx_closure){c};
}

mlx_closure mlx_closure_new_unary(int (*fun)(mlx_array *, const mlx_array)) {
  if (!fun) {
    lc_error("mlx_closure_new_unary: fun is NULL");
    return mlx_closure_new();
  }
  struct lc_closure *c = alloc_closure();
  if (c) {
    c->call = call_unary;
    c->fun_unary = fun;
    c->user = true;
  }
  return (mlx_closure){c};
}

int mlx_closure_set(mlx_closure *cls, const mlx_closure src) {
  LC_CHECK_RES("mlx_closure_set", cls);
  struct lc_closure *c = lc_closure_retain(lc_closure_of(src));
  lc_closure_release(lc_closure_of(*cls));
  cls->ctx = c;
  return 0;
}

int mlx_closure_apply(mlx_vector_array *res, mlx_closure cls, const mlx_vector_array input) {
  LC_CHECK_RES("mlx_closure_apply", res);
  if (!cls.ctx) return lc_error("mlx_closure_apply: empty closure");
  if (!input.ctx) return lc_error("mlx_closure_apply: empty input vector");
  struct lc_closure *c = lc_closure_of(cls);
  mlx_vector_array out = mlx_vector_array_new();
  if (!out.ctx) return 1;
  int rc = c->call(c, &out, input);
  if (rc) {
    mlx_vector_array_free(out);
    return rc;
  }
  rc = mlx_vector_array_set(res, out);
  mlx_vector_array_free(out);
  return rc;
}
