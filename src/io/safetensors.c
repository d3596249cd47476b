/* safetensors files: u64 LE header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
 *    "__metadata__": {"key": "value", ...}}
 * then the tensor data (little-endian, row-major) where offsets are relative
 * to the end of the header. Saving writes tensors in map order, packed, with
 * the header padded by spaces to a multiple of 8 bytes; "__metadata__" is
 * written only when the metadata map is non-empty. Loading validates every
 * entry (dtype, shape, offsets consistent with the size and the file) and
 * reads each tensor into a contiguous evaluated leaf. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "io/io.h"
#include "io/json.h"

#define MAX_NDIM 64
#define MAX_HEADER (100u << 20)

static const struct {
  const char *name;
  mlx_dtype t;
} dtypes[] = {{"BOOL", MLX_BOOL}, {"U8", MLX_UINT8},    {"U16", MLX_UINT16},  {"U32", MLX_UINT32},
              {"U64", MLX_UINT64}, {"I8", MLX_INT8},    {"I16", MLX_INT16},   {"I32", MLX_INT32},
              {"I64", MLX_INT64}, {"F16", MLX_FLOAT16}, {"F32", MLX_FLOAT32}, {"F64", MLX_FLOAT64},
              {"BF16", MLX_BFLOAT16}, {"C64", MLX_COMPLEX64}};

static const char *st_name(mlx_dtype t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].t == t) return dtypes[i].name;
  return NULL;
}

int lc_st_save(struct lc_out *out, mlx_map_string_to_array params, mlx_map_string_to_string meta) {
  const char *fn = out->fn;
  struct lc_sbuf h = {0};
  struct lc_node **nodes = NULL;
  size_t nn = 0, cap = 0;
  int rc = 1;
  uint64_t off = 0;
  lc_sbuf_putn(&h, "{", 1);
  if (meta.ctx) {
    mlx_map_string_to_string_iterator it = mlx_map_string_to_string_iterator_new(meta);
    const char *k, *v;
    int first = 1;
    while (mlx_map_string_to_string_iterator_next(&k, &v, it) == 0) {
      lc_sbuf_putn(&h, first ? "\"__metadata__\":{" : ",", first ? 16 : 1);
      first = 0;
      lc_sbuf_json_string(&h, k);
      lc_sbuf_putn(&h, ":", 1);
      lc_sbuf_json_string(&h, v);
    }
    mlx_map_string_to_string_iterator_free(it);
    if (!first) lc_sbuf_putn(&h, "}", 1);
  }
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(params);
  const char *k;
  mlx_array v = mlx_array_new();
  while (mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) {
    struct lc_node *n = v.ctx;
    if (!strcmp(k, "__metadata__")) {
      lc_error("%s: '__metadata__' is reserved and cannot name an array", fn);
      goto done;
    }
    if (!n) {
      lc_error("%s: array '%s' is an empty handle", fn, k);
      goto done;
    }
    if (nn == cap) {
      cap = cap ? 2 * cap : 8;
      struct lc_node **nv = realloc(nodes, cap * sizeof *nv);
      if (!nv) {
        lc_error("%s: out of memory", fn);
        goto done;
      }
      nodes = nv;
    }
    nodes[nn++] = lc_node_retain(n);
    uint64_t bytes = (uint64_t)n->size * lc_dtype_size(n->dtype);
    if (h.len > 1) lc_sbuf_putn(&h, ",", 1);
    lc_sbuf_json_string(&h, k);
    lc_sbuf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", st_name(n->dtype));
    for (int i = 0; i < n->ndim; i++) lc_sbuf_printf(&h, i ? ",%d" : "%d", n->shape[i]);
    lc_sbuf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                   (unsigned long long)(off + bytes));
    off += bytes;
  }
  lc_sbuf_putn(&h, "}", 1);
  while (!h.failed && h.len % 8) lc_sbuf_putn(&h, " ", 1);
  if (h.failed) {
    lc_error("%s: out of memory", fn);
    goto done;
  }
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
  if (nn && lc_eval(nodes, nn)) goto done; /* before any byte is written */
  if (lc_out_write(out, len8, 8) || lc_out_write(out, h.p, h.len)) goto done;
  for (size_t i = 0; i < nn; i++)
    if (lc_out_write_node(out, nodes[i])) goto done;
  rc = 0;
done:
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  for (size_t i = 0; i < nn; i++) lc_node_release(nodes[i]);
  free(nodes);
  free(h.p);
  return rc;
}

/* One tensor entry, validated. */
struct entry {
  const char *name;
  mlx_dtype dt;
  int ndim;
  int shape[MAX_NDIM];
  uint64_t begin, end;
};

static int cmp_begin(const void *a, const void *b) {
  const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end; /* empty tensors first */
}

static int cmp_name(const void *a, const void *b) {
  const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
  return strcmp(x->name, y->name);
}

static int parse_entry(const char *fn, const char *label, const char *name,
                       const struct lc_json *v, struct entry *e) {
  e->name = name;
  if (v->type != LC_JSON_OBJ)
    return lc_error("%s: entry '%s' in %s is not an object", fn, name, label);
  const struct lc_json *d = lc_json_get(v, "dtype"), *s = lc_json_get(v, "shape"),
                       *o = lc_json_get(v, "data_offsets");
  if (!d || d->type != LC_JSON_STR)
    return lc_error("%s: entry '%s' in %s has no string 'dtype'", fn, name, label);
  size_t i;
  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!strcmp(d->str, dtypes[i].name)) break;
  if (i == sizeof dtypes / sizeof dtypes[0])
    return lc_error("%s: entry '%s' in %s has unsupported dtype '%s'", fn, name, label, d->str);
  e->dt = dtypes[i].t;
  if (!s || s->type != LC_JSON_ARR || s->n > MAX_NDIM)
    return lc_error("%s: entry '%s' in %s has no valid 'shape' list", fn, name, label);
  e->ndim = (int)s->n;
  uint64_t count = 1;
  for (size_t k = 0; k < s->n; k++) {
    const struct lc_json *x = s->items[k];
    if (x->type != LC_JSON_NUM || !x->is_int || x->i < 0 || x->i > INT_MAX)
      return lc_error("%s: entry '%s' in %s: shape entries must be integers in [0, INT_MAX]", fn,
                      name, label);
    e->shape[k] = (int)x->i;
    if (__builtin_mul_overflow(count, (uint64_t)x->i, &count) || count > (UINT64_MAX >> 4))
      return lc_error("%s: entry '%s' in %s: shape is too large", fn, name, label);
  }
  if (!o || o->type != LC_JSON_ARR || o->n != 2)
    return lc_error("%s: entry '%s' in %s has no valid 'data_offsets' pair", fn, name, label);
  for (int k = 0; k < 2; k++)
    if (o->items[k]->type != LC_JSON_NUM || !o->items[k]->is_int || o->items[k]->i < 0)
      return lc_error("%s: entry '%s' in %s: data_offsets must be non-negative integers", fn, name,
                      label);
  e->begin = (uint64_t)o->items[0]->i;
  e->end = (uint64_t)o->items[1]->i;
  uint64_t bytes = count * lc_dtype_size(e->dt);
  if (e->end < e->begin || e->end - e->begin != bytes)
    return lc_error("%s: entry '%s' in %s: data_offsets [%llu, %llu] do not match %llu bytes of "
                    "dtype %s and its shape",
                    fn, name, label, (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)bytes, d->str);
  return 0;
}

int lc_st_load(struct lc_in *in, mlx_map_string_to_array *arrays, mlx_map_string_to_string *meta) {
  const char *fn = in->fn;
  unsigned char len8[8];
  if (lc_in_read(in, len8, 8, "the safetensors header length")) return 1;
  uint64_t hlen = 0;
  for (int i = 0; i < 8; i++) hlen |= (uint64_t)len8[i] << (8 * i);
  if (hlen > MAX_HEADER)
    return lc_error("%s: safetensors header of %llu bytes in %s is too large (corrupt file?)", fn,
                    (unsigned long long)hlen, in->label);
  if (lc_in_check_avail(in, hlen, "the safetensors header")) return 1;
  char *text = malloc(hlen + 1);
  if (!text) return lc_error("%s: out of memory", fn);
  if (lc_in_read(in, text, hlen, "the safetensors header")) {
    free(text);
    return 1;
  }
  struct lc_json *root = lc_json_parse(text, hlen, fn, in->label);
  free(text);
  if (!root) return 1;
  int rc = 1;
  struct entry *ents = NULL, **order = NULL;
  size_t ne = 0;
  mlx_map_string_to_array ra = mlx_map_string_to_array_new();
  mlx_map_string_to_string rs = mlx_map_string_to_string_new();
  if (root->type != LC_JSON_OBJ) {
    lc_error("%s: safetensors header in %s is not a JSON object", fn, in->label);
    goto done;
  }
  ents = calloc(root->n ? root->n : 1, sizeof *ents);
  order = calloc(root->n ? root->n : 1, sizeof *order);
  if (!ents || !order) {
    lc_error("%s: out of memory", fn);
    goto done;
  }
  for (size_t i = 0; i < root->n; i++) {
    const char *key = root->keys[i];
    const struct lc_json *v = root->items[i];
    if (!strcmp(key, "__metadata__")) {
      if (v->type != LC_JSON_OBJ) {
        lc_error("%s: '__metadata__' in %s is not an object", fn, in->label);
        goto done;
      }
      for (size_t k = 0; k < v->n; k++) {
        if (v->items[k]->type != LC_JSON_STR) {
          lc_error("%s: metadata value '%s' in %s is not a string", fn, v->keys[k], in->label);
          goto done;
        }
        if (mlx_map_string_to_string_insert(rs, v->keys[k], v->items[k]->str)) goto done;
      }
      continue;
    }
    if (parse_entry(fn, in->label, key, v, &ents[ne])) goto done;
    order[ne] = &ents[ne];
    ne++;
  }
  /* Names sorted, duplicates are neighbours: O(n log n) for n tensors. */
  qsort(order, ne, sizeof *order, cmp_name);
  for (size_t i = 1; i < ne; i++)
    if (!strcmp(order[i - 1]->name, order[i]->name)) {
      lc_error("%s: duplicate tensor name '%s' in %s", fn, order[i]->name, in->label);
      goto done;
    }
  /* Read in file order, skipping gaps; overlapping ranges are rejected. */
  qsort(order, ne, sizeof *order, cmp_begin);
  uint64_t pos = 0;
  for (size_t i = 0; i < ne; i++) {
    struct entry *e = order[i];
    if (e->begin < pos) {
      lc_error("%s: tensor '%s' in %s overlaps another tensor's data", fn, e->name, in->label);
      goto done;
    }
    if (lc_in_skip(in, (size_t)(e->begin - pos), "padding between tensors")) goto done;
    char what[300];
    snprintf(what, sizeof what, "the data of tensor '%.256s'", e->name);
    struct lc_node *n = lc_in_read_node(in, e->dt, e->ndim, e->shape, what);
    if (!n) goto done;
    mlx_array a = {n};
    int bad = mlx_map_string_to_array_insert(ra, e->name, a);
    mlx_array_free(a);
    if (bad) goto done;
    pos = e->end;
  }
  mlx_map_string_to_array_free(*arrays);
  mlx_map_string_to_string_free(*meta);
  *arrays = ra;
  *meta = rs;
  ra = (mlx_map_string_to_array){NULL};
  rs = (mlx_map_string_to_string){NULL};
  rc = 0;
done:
  if (ra.ctx) mlx_map_string_to_array_free(ra);
  if (rs.ctx) mlx_map_string_to_string_free(rs);
  free(ents);
  free(order);
  lc_json_free(root);
  return rc;
}
