/* safetensors files: u64 LE header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
 *    "__metadata__": {"key": "value", ...}}
 * then the tensor data (little-endian, row-major) where offsets are relative
 * to the end of the header. Saving writes keys in sorted order (as MLX's
 * JSON writer does) and the tensors packed in that order, with the header
 * padded by spaces to a multiple of 8 bytes; "__metadata__" is written only
 * when the metadata map is non-empty. Loading validates every entry (dtype,
 * shape, offsets consistent with the size and the file length) and gives
 * the arrays in name order: lazy LOAD nodes over the file (io/lazy.h), or,
 * from a user reader or with LACE_LAZY_LOAD=0, evaluated leaves read now. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "io/io.h"
#include "io/json.h"
#include "io/lazy.h"

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

/* A named item to save: an array, or a metadata string value. */
struct named {
  const char *key;
  struct lc_node *node;
  const char *str;
};

static int cmp_key(const void *a, const void *b) {
  return strcmp(((const struct named *)a)->key, ((const struct named *)b)->key);
}

/* Appends an item, growing the list. 0, or 1 after reporting. */
static int push(const char *fn, struct named **v, size_t *n, size_t *cap, struct named x) {
  if (*n == *cap) {
    size_t nc = *cap ? 2 * *cap : 8;
    struct named *nv = realloc(*v, nc * sizeof *nv);
    if (!nv) return lc_error("%s: out of memory", fn);
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = x;
  return 0;
}

/* The metadata entries, sorted by key. 0, or 1 after reporting. */
static int collect_meta(const char *fn, mlx_map_string_to_string meta, struct named **v,
                        size_t *n) {
  size_t cap = 0;
  *v = NULL;
  *n = 0;
  if (!meta.ctx) return 0;
  mlx_map_string_to_string_iterator it = mlx_map_string_to_string_iterator_new(meta);
  const char *k, *val;
  int rc = 0;
  while (!rc && mlx_map_string_to_string_iterator_next(&k, &val, it) == 0)
    rc = push(fn, v, n, &cap, (struct named){k, NULL, val});
  mlx_map_string_to_string_iterator_free(it);
  if (!rc && *n) qsort(*v, *n, sizeof **v, cmp_key);
  return rc;
}

/* The arrays (retained), sorted by name. 0, or 1 after reporting (nothing
 * retained then beyond what *v lists, which the caller releases). */
static int collect_arrays(const char *fn, mlx_map_string_to_array params, struct named **v,
                          size_t *n) {
  size_t cap = 0;
  *v = NULL;
  *n = 0;
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(params);
  const char *k;
  mlx_array a = mlx_array_new();
  int rc = 0;
  while (!rc && mlx_map_string_to_array_iterator_next(&k, &a, it) == 0) {
    struct lc_node *x = a.ctx;
    if (!strcmp(k, "__metadata__"))
      rc = lc_error("%s: '__metadata__' is reserved and cannot name an array", fn);
    else if (!x)
      rc = lc_error("%s: array '%s' is an empty handle", fn, k);
    else if (!(rc = push(fn, v, n, &cap, (struct named){k, x, NULL})))
      lc_node_retain(x);
  }
  mlx_array_free(a);
  mlx_map_string_to_array_iterator_free(it);
  if (!rc && *n) qsort(*v, *n, sizeof **v, cmp_key);
  return rc;
}

static void put_meta(struct lc_sbuf *h, const struct named *m, size_t nm) {
  lc_sbuf_putn(h, "\"__metadata__\":{", 16);
  for (size_t i = 0; i < nm; i++) {
    if (i) lc_sbuf_putn(h, ",", 1);
    lc_sbuf_json_string(h, m[i].key);
    lc_sbuf_putn(h, ":", 1);
    lc_sbuf_json_string(h, m[i].str);
  }
  lc_sbuf_putn(h, "}", 1);
}

static void put_tensor(struct lc_sbuf *h, const struct named *t, uint64_t off) {
  const struct lc_node *n = t->node;
  uint64_t bytes = (uint64_t)n->size * lc_dtype_size(n->dtype);
  lc_sbuf_json_string(h, t->key);
  lc_sbuf_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", st_name(n->dtype));
  for (int i = 0; i < n->ndim; i++) lc_sbuf_printf(h, i ? ",%d" : "%d", n->shape[i]);
  lc_sbuf_printf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + bytes));
}

/* The header: every key in sorted order ("__metadata__" among the tensor
 * names, as MLX's JSON writer orders them), padded by spaces to a multiple
 * of 8 bytes so that the data starts aligned. */
static void put_header(struct lc_sbuf *h, const struct named *t, size_t nt, const struct named *m,
                       size_t nm) {
  uint64_t off = 0;
  size_t written = 0;
  int meta_done = nm == 0;
  lc_sbuf_putn(h, "{", 1);
  for (size_t i = 0; i <= nt; i++) {
    if (!meta_done && (i == nt || strcmp("__metadata__", t[i].key) < 0)) {
      if (written++) lc_sbuf_putn(h, ",", 1);
      put_meta(h, m, nm);
      meta_done = 1;
    }
    if (i == nt) break;
    if (written++) lc_sbuf_putn(h, ",", 1);
    put_tensor(h, &t[i], off);
    off += (uint64_t)t[i].node->size * lc_dtype_size(t[i].node->dtype);
  }
  lc_sbuf_putn(h, "}", 1);
  while (!h->failed && h->len % 8) lc_sbuf_putn(h, " ", 1);
}

int lc_st_save(struct lc_out *out, mlx_map_string_to_array params, mlx_map_string_to_string meta) {
  const char *fn = out->fn;
  struct lc_sbuf h = {0};
  struct named *t = NULL, *m = NULL;
  size_t nt = 0, nm = 0;
  int rc = 1;
  if (collect_arrays(fn, params, &t, &nt) || collect_meta(fn, meta, &m, &nm)) goto done;
  put_header(&h, t, nt, m, nm);
  if (h.failed) {
    lc_error("%s: out of memory", fn);
    goto done;
  }
  for (size_t i = 0; i < nt; i++) /* before any byte is written */
    if (lc_eval(&t[i].node, 1)) goto done;
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
  if (lc_out_write(out, len8, 8) || lc_out_write(out, h.p, h.len)) goto done;
  for (size_t i = 0; i < nt; i++)
    if (lc_out_write_node(out, t[i].node)) goto done;
  rc = 0;
done:
  for (size_t i = 0; i < nt; i++) lc_node_release(t[i].node);
  free(t);
  free(m);
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
  struct lc_node *node; /* the loaded array (owned) */
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

/* Reads every tensor now, in file order (order sorted by begin, no
 * overlaps), skipping gaps. 0, or 1 after reporting. */
static int read_all(struct lc_in *in, struct entry **order, size_t ne) {
  uint64_t pos = 0;
  for (size_t i = 0; i < ne; i++) {
    struct entry *e = order[i];
    if (lc_in_skip(in, (size_t)(e->begin - pos), "padding between tensors")) return 1;
    char what[300];
    snprintf(what, sizeof what, "the data of tensor '%.256s'", e->name);
    if (!(e->node = lc_in_read_node(in, e->dt, e->ndim, e->shape, what))) return 1;
    pos = e->end;
  }
  return 0;
}

/* Gives every tensor a lazy node over in's file (io/lazy.h), after checking
 * that its data lies within the file. 0, or 1 after reporting. */
static int make_lazy(struct lc_in *in, struct entry **order, size_t ne) {
  uint64_t data = (uint64_t)in->pos, room = (uint64_t)in->len - data;
  for (size_t i = 0; i < ne; i++)
    if (order[i]->end > room)
      return lc_error("%s: the data of tensor '%s' needs bytes [%llu, %llu) of the tensor data "
                      "but only %llu remain in %s (truncated or corrupt file)",
                      in->fn, order[i]->name, (unsigned long long)order[i]->begin,
                      (unsigned long long)order[i]->end, (unsigned long long)room, in->label);
  if (!ne) return 0;
  struct lc_source *src = lc_source_open(in);
  if (!src) return 1;
  int rc = 0;
  for (size_t i = 0; i < ne && !rc; i++) {
    struct entry *e = order[i];
    e->node = lc_load_node(src, e->dt, e->ndim, e->shape, data + e->begin, e->end - e->begin,
                           LC_LOAD_RAW, 0);
    rc = !e->node;
  }
  lc_source_release(src); /* the nodes hold their own references */
  return rc;
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
  /* File order: overlapping ranges are rejected. */
  qsort(order, ne, sizeof *order, cmp_begin);
  for (size_t i = 1; i < ne; i++)
    if (order[i]->begin < order[i - 1]->end) {
      lc_error("%s: tensor '%s' in %s overlaps another tensor's data", fn, order[i]->name,
               in->label);
      goto done;
    }
  if (lc_lazy_wanted(in) ? make_lazy(in, order, ne) : read_all(in, order, ne)) goto done;
  /* The map in name order. */
  qsort(order, ne, sizeof *order, cmp_name);
  for (size_t i = 0; i < ne; i++)
    if (mlx_map_string_to_array_insert(ra, order[i]->name, (mlx_array){order[i]->node})) goto done;
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
  for (size_t i = 0; i < ne; i++) lc_node_release(ents[i].node);
  free(ents);
  free(order);
  lc_json_free(root);
  return rc;
}
