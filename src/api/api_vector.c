/* mlx_vector_array, mlx_vector_vector_array, mlx_vector_int, mlx_vector_string. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"

/* Grows a {len, cap, items} vector to hold `extra` more items. */
#define GROW(v, extra)                                                             \
  ((v)->len + (extra) <= (v)->cap ? 0 : grow_items((void **)&(v)->items, &(v)->cap, \
                                                   (v)->len + (extra), sizeof *(v)->items))

static int grow_items(void **items, size_t *cap, size_t need, size_t isz) {
  size_t ncap = *cap ? *cap : 4;
  while (ncap < need) ncap *= 2;
  void *p = realloc(*items, ncap * isz);
  if (!p) return lc_error("out of memory");
  *items = p;
  *cap = ncap;
  return 0;
}

/* ---- arrays ---- */

struct lc_vec_array *lc_vec_array_new(void) {
  struct lc_vec_array *v = calloc(1, sizeof *v);
  if (!v) lc_error("out of memory");
  return v;
}

int lc_vec_array_push(struct lc_vec_array *v, struct lc_node *n) {
  if (GROW(v, 1)) return 1;
  v->items[v->len++] = lc_node_retain(n);
  return 0;
}

void lc_vec_array_clear(struct lc_vec_array *v) {
  for (size_t i = 0; i < v->len; i++) lc_node_release(v->items[i]);
  v->len = 0;
}

void lc_vec_array_delete(struct lc_vec_array *v) {
  if (!v) return;
  lc_vec_array_clear(v);
  free(v->items);
  free(v);
}

static struct lc_vec_array *va(mlx_vector_array v) { return v.ctx; }

int lc_vec_array_assign(mlx_vector_array *res, struct lc_node *const *nodes, size_t n) {
  if (!res) return lc_error("result vector pointer is NULL");
  struct lc_vec_array *v = lc_vec_array_new();
  if (!v) return 1;
  for (size_t i = 0; i < n; i++)
    if (lc_vec_array_push(v, nodes[i])) {
      lc_vec_array_delete(v);
      return 1;
    }
  lc_vec_array_delete(va(*res));
  res->ctx = v;
  return 0;
}

mlx_vector_array mlx_vector_array_new(void) { return (mlx_vector_array){lc_vec_array_new()}; }

int mlx_vector_array_free(mlx_vector_array vec) {
  lc_vec_array_delete(va(vec));
  return 0;
}

int mlx_vector_array_set(mlx_vector_array *vec, const mlx_vector_array src) {
  if (!vec) return lc_error("mlx_vector_array_set: vec is NULL");
  if (!src.ctx) {
    lc_vec_array_delete(va(*vec));
    vec->ctx = NULL;
    return 0;
  }
  return lc_vec_array_assign(vec, va(src)->items, va(src)->len);
}

/* Nodes of data[0..size); 1 after reporting if any handle is empty. */
static int check_arrays(const char *fn, const mlx_array *data, size_t size) {
  if (size && !data) return lc_error("%s: data is NULL", fn);
  for (size_t i = 0; i < size; i++)
    if (!data[i].ctx) return lc_error("%s: element %zu is an empty array", fn, i);
  return 0;
}

mlx_vector_array mlx_vector_array_new_data(const mlx_array *data, size_t size) {
  mlx_vector_array v = {NULL};
  if (check_arrays("mlx_vector_array_new_data", data, size)) return v;
  if (lc_vec_array_assign(&v, (struct lc_node *const *)data, size)) return (mlx_vector_array){NULL};
  return v;
}

mlx_vector_array mlx_vector_array_new_value(const mlx_array val) {
  return mlx_vector_array_new_data(&val, 1);
}

int mlx_vector_array_set_data(mlx_vector_array *vec, const mlx_array *data, size_t size) {
  if (check_arrays("mlx_vector_array_set_data", data, size)) return 1;
  /* mlx_array is a struct of one pointer: an array of them is an array of nodes */
  return lc_vec_array_assign(vec, (struct lc_node *const *)data, size);
}

int mlx_vector_array_set_value(mlx_vector_array *vec, const mlx_array val) {
  return mlx_vector_array_set_data(vec, &val, 1);
}

int mlx_vector_array_append_data(mlx_vector_array vec, const mlx_array *data, size_t size) {
  if (!vec.ctx) return lc_error("mlx_vector_array_append_data: empty vector handle");
  if (check_arrays("mlx_vector_array_append_data", data, size)) return 1;
  if (GROW(va(vec), size)) return 1;
  for (size_t i = 0; i < size; i++) lc_vec_array_push(va(vec), lc_arr(data[i]));
  return 0;
}

int mlx_vector_array_append_value(mlx_vector_array vec, const mlx_array val) {
  return mlx_vector_array_append_data(vec, &val, 1);
}

size_t mlx_vector_array_size(mlx_vector_array vec) { return vec.ctx ? va(vec)->len : 0; }

int mlx_vector_array_get(mlx_array *res, const mlx_vector_array vec, size_t idx) {
  LC_CHECK_RES("mlx_vector_array_get", res);
  if (!vec.ctx) return lc_error("mlx_vector_array_get: empty vector handle");
  if (idx >= va(vec)->len)
    return lc_error("mlx_vector_array_get: index %zu out of range for a vector of %zu", idx,
                    va(vec)->len);
  return lc_api_set(res, lc_node_retain(va(vec)->items[idx]));
}

int lc_api_vector_nodes(const char *fn, mlx_vector_array v, struct lc_node ***out, size_t *n) {
  if (!v.ctx) return lc_error("%s: empty vector handle", fn);
  size_t len = va(v)->len;
  struct lc_node **nodes = malloc(sizeof *nodes * (len ? len : 1));
  if (!nodes) return lc_error("out of memory");
  for (size_t i = 0; i < len; i++) nodes[i] = va(v)->items[i];
  *out = nodes;
  *n = len;
  return 0;
}

/* ---- vectors of vectors ---- */

static struct lc_vec_vec_array *vva(mlx_vector_vector_array v) { return v.ctx; }

static void vva_delete(struct lc_vec_vec_array *v) {
  if (!v) return;
  for (size_t i = 0; i < v->len; i++) lc_vec_array_delete(v->items[i]);
  free(v->items);
  free(v);
}

static int vva_push(struct lc_vec_vec_array *v, const struct lc_vec_array *src) {
  if (GROW(v, 1)) return 1;
  mlx_vector_array copy = {NULL};
  if (lc_vec_array_assign(&copy, src ? src->items : NULL, src ? src->len : 0)) return 1;
  v->items[v->len++] = copy.ctx;
  return 0;
}

static int vva_assign(mlx_vector_vector_array *res, const mlx_vector_array *data, size_t n) {
  if (!res) return lc_error("result vector pointer is NULL");
  struct lc_vec_vec_array *v = calloc(1, sizeof *v);
  if (!v) return lc_error("out of memory");
  for (size_t i = 0; i < n; i++)
    if (vva_push(v, data[i].ctx)) {
      vva_delete(v);
      return 1;
    }
  vva_delete(vva(*res));
  res->ctx = v;
  return 0;
}

mlx_vector_vector_array mlx_vector_vector_array_new(void) {
  mlx_vector_vector_array v = {NULL};
  vva_assign(&v, NULL, 0);
  return v;
}
int mlx_vector_vector_array_free(mlx_vector_vector_array vec) {
  vva_delete(vva(vec));
  return 0;
}
int mlx_vector_vector_array_set(mlx_vector_vector_array *vec, const mlx_vector_vector_array src) {
  if (!vec) return lc_error("mlx_vector_vector_array_set: vec is NULL");
  struct lc_vec_vec_array *s = vva(src);
  if (!s) {
    vva_delete(vva(*vec));
    vec->ctx = NULL;
    return 0;
  }
  mlx_vector_vector_array tmp = {NULL};
  struct lc_vec_vec_array *v = calloc(1, sizeof *v);
  if (!v) return lc_error("out of memory");
  tmp.ctx = v;
  for (size_t i = 0; i < s->len; i++)
    if (vva_push(v, s->items[i])) {
      vva_delete(v);
      return 1;
    }
  vva_delete(vva(*vec));
  *vec = tmp;
  return 0;
}
mlx_vector_vector_array mlx_vector_vector_array_new_data(const mlx_vector_array *data, size_t size) {
  mlx_vector_vector_array v = {NULL};
  if (size && !data) {
    lc_error("mlx_vector_vector_array_new_data: data is NULL");
    return v;
  }
  vva_assign(&v, data, size);
  return v;
}
mlx_vector_vector_array mlx_vector_vector_array_new_value(const mlx_vector_array val) {
  return mlx_vector_vector_array_new_data(&val, 1);
}
int mlx_vector_vector_array_set_data(mlx_vector_vector_array *vec, const mlx_vector_array *data,
                                     size_t size) {
  if (size && !data) return lc_error("mlx_vector_vector_array_set_data: data is NULL");
  return vva_assign(vec, data, size);
}
int mlx_vector_vector_array_set_value(mlx_vector_vector_array *vec, const mlx_vector_array val) {
  return vva_assign(vec, &val, 1);
}
int mlx_vector_vector_array_append_data(mlx_vector_vector_array vec, const mlx_vector_array *data,
                                        size_t size) {
  if (!vec.ctx) return lc_error("mlx_vector_vector_array_append_data: empty vector handle");
  if (size && !data) return lc_error("mlx_vector_vector_array_append_data: data is NULL");
  for (size_t i = 0; i < size; i++)
    if (vva_push(vva(vec), data[i].ctx)) return 1;
  return 0;
}
int mlx_vector_vector_array_append_value(mlx_vector_vector_array vec, const mlx_vector_array val) {
  return mlx_vector_vector_array_append_data(vec, &val, 1);
}
size_t mlx_vector_vector_array_size(mlx_vector_vector_array vec) {
  return vec.ctx ? vva(vec)->len : 0;
}
int mlx_vector_vector_array_get(mlx_vector_array *res, const mlx_vector_vector_array vec,
                                size_t idx) {
  if (!vec.ctx) return lc_error("mlx_vector_vector_array_get: empty vector handle");
  if (idx >= vva(vec)->len)
    return lc_error("mlx_vector_vector_array_get: index %zu out of range for a vector of %zu", idx,
                    vva(vec)->len);
  struct lc_vec_array *s = vva(vec)->items[idx];
  return lc_vec_array_assign(res, s->items, s->len);
}

/* ---- ints ---- */

static struct lc_vec_int *vi(mlx_vector_int v) { return v.ctx; }

static void vi_delete(struct lc_vec_int *v) {
  if (!v) return;
  free(v->items);
  free(v);
}

static int vi_assign(mlx_vector_int *res, const int *data, size_t n) {
  if (!res) return lc_error("result vector pointer is NULL");
  if (n && !data) return lc_error("vector data is NULL");
  struct lc_vec_int *v = calloc(1, sizeof *v);
  if (!v || GROW(v, n ? n : 1)) {
    free(v);
    return lc_error("out of memory");
  }
  if (n) memcpy(v->items, data, n * sizeof(int));
  v->len = n;
  vi_delete(vi(*res));
  res->ctx = v;
  return 0;
}

mlx_vector_int mlx_vector_int_new(void) {
  mlx_vector_int v = {NULL};
  vi_assign(&v, NULL, 0);
  return v;
}
int mlx_vector_int_free(mlx_vector_int vec) {
  vi_delete(vi(vec));
  return 0;
}
int mlx_vector_int_set(mlx_vector_int *vec, const mlx_vector_int src) {
  if (!src.ctx) {
    if (!vec) return lc_error("mlx_vector_int_set: vec is NULL");
    vi_delete(vi(*vec));
    vec->ctx = NULL;
    return 0;
  }
  return vi_assign(vec, vi(src)->items, vi(src)->len);
}
mlx_vector_int mlx_vector_int_new_data(int *data, size_t size) {
  mlx_vector_int v = {NULL};
  vi_assign(&v, data, size);
  return v;
}
mlx_vector_int mlx_vector_int_new_value(int val) { return mlx_vector_int_new_data(&val, 1); }
int mlx_vector_int_set_data(mlx_vector_int *vec, int *data, size_t size) {
  return vi_assign(vec, data, size);
}
int mlx_vector_int_set_value(mlx_vector_int *vec, int val) { return vi_assign(vec, &val, 1); }
int mlx_vector_int_append_data(mlx_vector_int vec, int *data, size_t size) {
  if (!vec.ctx) return lc_error("mlx_vector_int_append_data: empty vector handle");
  if (size && !data) return lc_error("mlx_vector_int_append_data: data is NULL");
  if (GROW(vi(vec), size)) return 1;
  memcpy(vi(vec)->items + vi(vec)->len, data, size * sizeof(int));
  vi(vec)->len += size;
  return 0;
}
int mlx_vector_int_append_value(mlx_vector_int vec, int val) {
  return mlx_vector_int_append_data(vec, &val, 1);
}
size_t mlx_vector_int_size(mlx_vector_int vec) { return vec.ctx ? vi(vec)->len : 0; }
int mlx_vector_int_get(int *res, const mlx_vector_int vec, size_t idx) {
  LC_CHECK_RES("mlx_vector_int_get", res);
  if (!vec.ctx || idx >= vi(vec)->len)
    return lc_error("mlx_vector_int_get: index %zu out of range for a vector of %zu", idx,
                    mlx_vector_int_size(vec));
  *res = vi(vec)->items[idx];
  return 0;
}

/* ---- strings ---- */

static struct lc_vec_string *vs(mlx_vector_string v) { return v.ctx; }

static void vs_delete(struct lc_vec_string *v) {
  if (!v) return;
  for (size_t i = 0; i < v->len; i++) free(v->items[i]);
  free(v->items);
  free(v);
}

static int vs_push(struct lc_vec_string *v, const char *s) {
  if (!s) return lc_error("vector string element is NULL");
  if (GROW(v, 1)) return 1;
  char *d = strdup(s);
  if (!d) return lc_error("out of memory");
  v->items[v->len++] = d;
  return 0;
}

static int vs_assign(mlx_vector_string *res, const char *const *data, size_t n) {
  if (!res) return lc_error("result vector pointer is NULL");
  if (n && !data) return lc_error("vector data is NULL");
  struct lc_vec_string *v = calloc(1, sizeof *v);
  if (!v) return lc_error("out of memory");
  for (size_t i = 0; i < n; i++)
    if (vs_push(v, data[i])) {
      vs_delete(v);
      return 1;
    }
  vs_delete(vs(*res));
  res->ctx = v;
  return 0;
}

mlx_vector_string mlx_vector_string_new(void) {
  mlx_vector_string v = {NULL};
  vs_assign(&v, NULL, 0);
  return v;
}
int mlx_vector_string_free(mlx_vector_string vec) {
  vs_delete(vs(vec));
  return 0;
}
int mlx_vector_string_set(mlx_vector_string *vec, const mlx_vector_string src) {
  if (!src.ctx) {
    if (!vec) return lc_error("mlx_vector_string_set: vec is NULL");
    vs_delete(vs(*vec));
    vec->ctx = NULL;
    return 0;
  }
  return vs_assign(vec, (const char *const *)vs(src)->items, vs(src)->len);
}
mlx_vector_string mlx_vector_string_new_data(const char **data, size_t size) {
  mlx_vector_string v = {NULL};
  vs_assign(&v, data, size);
  return v;
}
mlx_vector_string mlx_vector_string_new_value(const char *val) {
  return mlx_vector_string_new_data(&val, 1);
}
int mlx_vector_string_set_data(mlx_vector_string *vec, const char **data, size_t size) {
  return vs_assign(vec, data, size);
}
int mlx_vector_string_set_value(mlx_vector_string *vec, const char *val) {
  return vs_assign(vec, &val, 1);
}
int mlx_vector_string_append_data(mlx_vector_string vec, const char **data, size_t size) {
  if (!vec.ctx) return lc_error("mlx_vector_string_append_data: empty vector handle");
  if (size && !data) return lc_error("mlx_vector_string_append_data: data is NULL");
  for (size_t i = 0; i < size; i++)
    if (vs_push(vs(vec), data[i])) return 1;
  return 0;
}
int mlx_vector_string_append_value(mlx_vector_string vec, const char *val) {
  return mlx_vector_string_append_data(vec, &val, 1);
}
size_t mlx_vector_string_size(mlx_vector_string vec) { return vec.ctx ? vs(vec)->len : 0; }
int mlx_vector_string_get(char **res, const mlx_vector_string vec, size_t idx) {
  LC_CHECK_RES("mlx_vector_string_get", res);
  if (!vec.ctx || idx >= vs(vec)->len)
    return lc_error("mlx_vector_string_get: index %zu out of range for a vector of %zu", idx,
                    mlx_vector_string_size(vec));
  *res = vs(vec)->items[idx];
  return 0;
}
