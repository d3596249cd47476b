/* What the opaque mlx-c handles point at.
 * Vectors and strings have value semantics (_set copies); closures are
 * refcounted (_set shares; the payload destructor runs once, when the last
 * reference goes). Devices and streams are small immutable values. */
#ifndef LC_HANDLES_H
#define LC_HANDLES_H

#include <stdatomic.h>

#include "core/node.h"
#include "mlx/c/mlx.h"

struct lc_vec_array {
  size_t len, cap;
  struct lc_node **items; /* owned references */
};

struct lc_vec_int {
  size_t len, cap;
  int *items;
};

struct lc_vec_string {
  size_t len, cap;
  char **items; /* owned */
};

struct lc_vec_vec_array {
  size_t len, cap;
  struct lc_vec_array **items; /* owned */
};

struct lc_string {
  char *data; /* owned, NUL-terminated */
};

struct lc_device {
  mlx_device_type type;
  int index;
};

struct lc_stream {
  struct lc_device dev;
  int index;
};

/* A closure: one of several C signatures, a payload and its destructor.
 * `call` is the uniform entry point (vector in, vector out). */
struct lc_closure {
  atomic_int refs;
  int (*call)(struct lc_closure *c, mlx_vector_array *res, const mlx_vector_array in);
  int (*fun)(mlx_vector_array *, const mlx_vector_array);
  int (*fun_payload)(mlx_vector_array *, const mlx_vector_array, void *);
  int (*fun_unary)(mlx_array *, const mlx_array);
  void *payload;
  void (*dtor)(void *);
  bool user; /* a user function: failures are reported for it */
};

/* Makes a closure from a payload entry point; used by transforms (compile)
 * to return their results as closures. NULL (reported) on failure, in which
 * case dtor(payload) has been called. */
struct lc_closure *lc_closure_make(int (*fun)(mlx_vector_array *, const mlx_vector_array, void *),
                                   void *payload, void (*dtor)(void *));
struct lc_closure *lc_closure_retain(struct lc_closure *c);
void lc_closure_release(struct lc_closure *c);

/* Calls c on the nodes in[0..nin) (borrowed). On success *out is a malloc'd
 * array of *nout new references. 0, or 1 after reporting. */
int lc_closure_call_nodes(struct lc_closure *c, struct lc_node *const *in, size_t nin,
                          struct lc_node ***out, size_t *nout);

/* The other closure kinds of mlx-c (kwargs, value_and_grad, custom,
 * custom_jvp, custom_vmap): one C function of the kind's signature (with a
 * trailing payload argument when has_payload), refcounted as closures. */
struct lc_xclosure {
  atomic_int refs;
  void (*fn)(void); /* cast back to the kind's signature before calling */
  bool has_payload;
  void *payload;
  void (*dtor)(void *);
};
/* The kinds' C signatures (plain, then with the trailing payload). */
typedef int (*lc_kw_fn)(mlx_vector_array *, const mlx_vector_array, const mlx_map_string_to_array);
typedef int (*lc_kw_fnp)(mlx_vector_array *, const mlx_vector_array, const mlx_map_string_to_array,
                      void *);
typedef int (*lc_vag_fn)(mlx_vector_array *, mlx_vector_array *, const mlx_vector_array);
typedef int (*lc_vag_fnp)(mlx_vector_array *, mlx_vector_array *, const mlx_vector_array, void *);
typedef int (*lc_cu_fn)(mlx_vector_array *, const mlx_vector_array, const mlx_vector_array,
                     const mlx_vector_array);
typedef int (*lc_cu_fnp)(mlx_vector_array *, const mlx_vector_array, const mlx_vector_array,
                      const mlx_vector_array, void *);
typedef int (*lc_jv_fn)(mlx_vector_array *, const mlx_vector_array, const mlx_vector_array,
                     const int *, size_t);
typedef int (*lc_jv_fnp)(mlx_vector_array *, const mlx_vector_array, const mlx_vector_array,
                      const int *, size_t, void *);
typedef int (*lc_vm_fn)(mlx_vector_array *, mlx_vector_int *, const mlx_vector_array, const int *,
                     size_t);
typedef int (*lc_vm_fnp)(mlx_vector_array *, mlx_vector_int *, const mlx_vector_array, const int *,
                      size_t, void *);

/* Calls closure c (struct lc_xclosure *) of plain type F / payload type FP
 * with the arguments (the payload appended when it has one). */
#define LC_XCLOSURE_CALL(c, F, FP, ...) \
  ((c)->has_payload ? ((FP)(c)->fn)(__VA_ARGS__, (c)->payload) : ((F)(c)->fn)(__VA_ARGS__))

/* NULL (reported) on failure, in which case dtor(payload) has been called. */
struct lc_xclosure *lc_xclosure_make(void (*fn)(void), bool has_payload, void *payload,
                                     void (*dtor)(void *));
struct lc_xclosure *lc_xclosure_retain(struct lc_xclosure *c);
void lc_xclosure_release(struct lc_xclosure *c);
/* Reports a user function's failure that lace did not already report
 * (`before`: lc_error_count() before the call); returns status. */
int lc_closure_failed(int status, unsigned long before);

/* Vector helpers used across the API. */
struct lc_vec_array *lc_vec_array_new(void);
int lc_vec_array_push(struct lc_vec_array *v, struct lc_node *n); /* retains n */
void lc_vec_array_clear(struct lc_vec_array *v);
void lc_vec_array_delete(struct lc_vec_array *v);
/* Makes *res hold the given nodes (borrowed, retained); 0 or 1 after reporting. */
int lc_vec_array_assign(mlx_vector_array *res, struct lc_node *const *nodes, size_t n);

/* Makes *res hold a copy of s (NULL: ""). 0, or 1 after reporting. */
int lc_string_assign(mlx_string *res, const char *s);

static inline struct lc_closure *lc_closure_of(mlx_closure c) { return (struct lc_closure *)c.ctx; }

#endif
