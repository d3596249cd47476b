/* The closure kinds besides mlx_closure: kwargs, value_and_grad, custom
 * (a vjp), custom_jvp and custom_vmap. Each handle points at a struct
 * lc_xclosure (handles.h); _set shares, _free drops a reference. */
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"

struct lc_xclosure *lc_xclosure_make(void (*fn)(void), bool has_payload, void *payload,
                                     void (*dtor)(void *)) {
  struct lc_xclosure *c = calloc(1, sizeof *c);
  if (!c) {
    if (dtor) dtor(payload);
    lc_error("out of memory");
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->fn = fn;
  c->has_payload = has_payload;
  c->payload = payload;
  c->dtor = dtor;
  return c;
}

struct lc_xclosure *lc_xclosure_retain(struct lc_xclosure *c) {
  if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

void lc_xclosure_release(struct lc_xclosure *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  if (c->dtor) c->dtor(c->payload);
  free(c);
}

/* new / free / set / new_func / new_func_payload for kind T whose plain
 * function type is F and payload function type is FP. */
#define XCLOSURE_BASICS(T, F, FP)                                                   \
  T T##_new(void) { return (T){NULL}; }                                             \
  int T##_free(T cls) {                                                             \
    lc_xclosure_release(cls.ctx);                                                   \
    return 0;                                                                       \
  }                                                                                 \
  int T##_set(T *cls, const T src) {                                                \
    LC_CHECK_RES(#T "_set", cls);                                                   \
    struct lc_xclosure *c = lc_xclosure_retain(src.ctx);                            \
    lc_xclosure_release(cls->ctx);                                                  \
    cls->ctx = c;                                                                   \
    return 0;                                                                       \
  }                                                                                 \
  T T##_new_func(F fun) {                                                           \
    if (!fun) {                                                                     \
      lc_error(#T "_new_func: fun is NULL");                                        \
      return (T){NULL};                                                             \
    }                                                                               \
    return (T){lc_xclosure_make((void (*)(void))fun, false, NULL, NULL)};           \
  }                                                                                 \
  T T##_new_func_payload(FP fun, void *payload, void (*dtor)(void *)) {             \
    if (!fun) {                                                                     \
      lc_error(#T "_new_func_payload: fun is NULL");                                \
      if (dtor) dtor(payload);                                                      \
      return (T){NULL};                                                             \
    }                                                                               \
    return (T){lc_xclosure_make((void (*)(void))fun, true, payload, dtor)};         \
  }

XCLOSURE_BASICS(mlx_closure_kwargs, lc_kw_fn, lc_kw_fnp)
XCLOSURE_BASICS(mlx_closure_value_and_grad, lc_vag_fn, lc_vag_fnp)
XCLOSURE_BASICS(mlx_closure_custom, lc_cu_fn, lc_cu_fnp)
XCLOSURE_BASICS(mlx_closure_custom_jvp, lc_jv_fn, lc_jv_fnp)
XCLOSURE_BASICS(mlx_closure_custom_vmap, lc_vm_fn, lc_vm_fnp)

/* Runs a user function with lace's failure reporting around it. */
#define XCALL(c, F, FP, ...)                                                  \
  do {                                                                        \
    unsigned long before_ = lc_error_count();                                 \
    int st_ = LC_XCLOSURE_CALL(c, F, FP, __VA_ARGS__);                        \
    return lc_closure_failed(st_, before_);                                   \
  } while (0)

#define CHECK_CLS(fn, cls) \
  if (!(cls).ctx) return lc_error("%s: empty closure", fn)
#define CHECK_VEC(fn, v) \
  if (!(v).ctx) return lc_error("%s: argument '%s' is an empty vector", fn, #v)

int mlx_closure_kwargs_apply(mlx_vector_array *res, mlx_closure_kwargs cls,
                             const mlx_vector_array input_0, const mlx_map_string_to_array input_1) {
  LC_CHECK_RES("mlx_closure_kwargs_apply", res);
  CHECK_CLS("mlx_closure_kwargs_apply", cls);
  CHECK_VEC("mlx_closure_kwargs_apply", input_0);
  CHECK_VEC("mlx_closure_kwargs_apply", input_1);
  struct lc_xclosure *c = cls.ctx;
  XCALL(c, lc_kw_fn, lc_kw_fnp, res, input_0, input_1);
}

int mlx_closure_value_and_grad_apply(mlx_vector_array *res_0, mlx_vector_array *res_1,
                                     mlx_closure_value_and_grad cls, const mlx_vector_array input) {
  LC_CHECK_RES("mlx_closure_value_and_grad_apply", res_0);
  LC_CHECK_RES("mlx_closure_value_and_grad_apply", res_1);
  CHECK_CLS("mlx_closure_value_and_grad_apply", cls);
  CHECK_VEC("mlx_closure_value_and_grad_apply", input);
  struct lc_xclosure *c = cls.ctx;
  XCALL(c, lc_vag_fn, lc_vag_fnp, res_0, res_1, input);
}

int mlx_closure_custom_apply(mlx_vector_array *res, mlx_closure_custom cls,
                             const mlx_vector_array input_0, const mlx_vector_array input_1,
                             const mlx_vector_array input_2) {
  LC_CHECK_RES("mlx_closure_custom_apply", res);
  CHECK_CLS("mlx_closure_custom_apply", cls);
  CHECK_VEC("mlx_closure_custom_apply", input_0);
  CHECK_VEC("mlx_closure_custom_apply", input_1);
  CHECK_VEC("mlx_closure_custom_apply", input_2);
  struct lc_xclosure *c = cls.ctx;
  XCALL(c, lc_cu_fn, lc_cu_fnp, res, input_0, input_1, input_2);
}

int mlx_closure_custom_jvp_apply(mlx_vector_array *res, mlx_closure_custom_jvp cls,
                                 const mlx_vector_array input_0, const mlx_vector_array input_1,
                                 const int *input_2, size_t input_2_num) {
  LC_CHECK_RES("mlx_closure_custom_jvp_apply", res);
  CHECK_CLS("mlx_closure_custom_jvp_apply", cls);
  CHECK_VEC("mlx_closure_custom_jvp_apply", input_0);
  CHECK_VEC("mlx_closure_custom_jvp_apply", input_1);
  if (lc_api_check_list("mlx_closure_custom_jvp_apply", "argnums", input_2, input_2_num)) return 1;
  struct lc_xclosure *c = cls.ctx;
  XCALL(c, lc_jv_fn, lc_jv_fnp, res, input_0, input_1, input_2, input_2_num);
}

int mlx_closure_custom_vmap_apply(mlx_vector_array *res_0, mlx_vector_int *res_1,
                                  mlx_closure_custom_vmap cls, const mlx_vector_array input_0,
                                  const int *input_1, size_t input_1_num) {
  LC_CHECK_RES("mlx_closure_custom_vmap_apply", res_0);
  LC_CHECK_RES("mlx_closure_custom_vmap_apply", res_1);
  CHECK_CLS("mlx_closure_custom_vmap_apply", cls);
  CHECK_VEC("mlx_closure_custom_vmap_apply", input_0);
  if (lc_api_check_list("mlx_closure_custom_vmap_apply", "in_axes", input_1, input_1_num)) return 1;
  struct lc_xclosure *c = cls.ctx;
  XCALL(c, lc_vm_fn, lc_vm_fnp, res_0, res_1, input_0, input_1, input_1_num);
}
