/* mlx_map_string_to_array and mlx_map_string_to_string: small maps kept in
 * insertion order (iteration order is insertion order; insert of an existing
 * key replaces its value in place). Iterators see the map as it was when
 * they were made only if the map is not modified meanwhile. Lookups go
 * through a hash index over the entries (open addressing, linear probing),
 * so that building a map of n keys takes O(n) time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "core/hash.h"

struct entry {
  char *key;
  struct lc_node *arr; /* string-to-array maps */
  char *str;           /* string-to-string maps */
};

struct lc_map {
  size_t len, cap;
  struct entry *items;
  size_t *slots; /* nslots entries: 0 empty, else index + 1 into items */
  size_t nslots; /* 0 or a power of two > 2 * len */
};

static size_t hash_key(const char *s) {
  uint64_t h = lc_fnv1a(LC_FNV_SEED, s, strlen(s));
  return (size_t)(h ^ (h >> 29));
}

/* The slot holding key, or the empty slot where it would go. */
static size_t *slot_of(const struct lc_map *m, const char *key) {
  size_t mask = m->nslots - 1, i = hash_key(key) & mask;
  while (m->slots[i] && strcmp(m->items[m->slots[i] - 1].key, key)) i = (i + 1) & mask;
  return &m->slots[i];
}

/* Makes room in the index for one more entry. 0, or 1 after reporting. */
static int index_reserve(struct lc_map *m) {
  if (2 * (m->len + 1) < m->nslots) return 0;
  size_t n = m->nslots ? 2 * m->nslots : 16;
  size_t *ns = calloc(n, sizeof *ns);
  if (!ns) return lc_error("out of memory");
  free(m->slots);
  m->slots = ns;
  m->nslots = n;
  for (size_t i = 0; i < m->len; i++) *slot_of(m, m->items[i].key) = i + 1;
  return 0;
}

static struct lc_map *map_new(void) {
  struct lc_map *m = calloc(1, sizeof *m);
  if (!m) lc_error("out of memory");
  return m;
}

static void map_delete(struct lc_map *m) {
  if (!m) return;
  for (size_t i = 0; i < m->len; i++) {
    free(m->items[i].key);
    free(m->items[i].str);
    lc_node_release(m->items[i].arr);
  }
  free(m->items);
  free(m->slots);
  free(m);
}

static struct entry *find(struct lc_map *m, const char *key) {
  if (!m->nslots) return NULL;
  size_t k = *slot_of(m, key);
  return k ? &m->items[k - 1] : NULL;
}

/* Inserts or replaces; takes ownership of nothing (copies key/str, retains arr). */
static int map_put(struct lc_map *m, const char *key, struct lc_node *arr, const char *str) {
  char *s = NULL;
  if (str && !(s = strdup(str))) return lc_error("out of memory");
  struct entry *e = find(m, key);
  if (e) {
    free(e->str);
    lc_node_release(e->arr);
    e->str = s;
    e->arr = lc_node_retain(arr);
    return 0;
  }
  if (index_reserve(m)) {
    free(s);
    return 1;
  }
  if (m->len == m->cap) {
    size_t ncap = m->cap ? 2 * m->cap : 8;
    struct entry *ni = realloc(m->items, ncap * sizeof *ni);
    if (!ni) {
      free(s);
      return lc_error("out of memory");
    }
    m->items = ni;
    m->cap = ncap;
  }
  char *k = strdup(key);
  if (!k) {
    free(s);
    return lc_error("out of memory");
  }
  m->items[m->len] = (struct entry){k, lc_node_retain(arr), s};
  size_t *slot = slot_of(m, k);
  *slot = ++m->len;
  return 0;
}

static int map_copy(void **dst, const struct lc_map *src) {
  struct lc_map *m = map_new();
  if (!m) return 1;
  for (size_t i = 0; src && i < src->len; i++)
    if (map_put(m, src->items[i].key, src->items[i].arr, src->items[i].str)) {
      map_delete(m);
      return 1;
    }
  map_delete(*dst);
  *dst = m;
  return 0;
}

/* ---- string to array ---- */

mlx_map_string_to_array mlx_map_string_to_array_new(void) {
  return (mlx_map_string_to_array){map_new()};
}

int mlx_map_string_to_array_set(mlx_map_string_to_array *map, const mlx_map_string_to_array src) {
  LC_CHECK_RES("mlx_map_string_to_array_set", map);
  return map_copy(&map->ctx, src.ctx);
}

int mlx_map_string_to_array_free(mlx_map_string_to_array map) {
  map_delete(map.ctx);
  return 0;
}

int mlx_map_string_to_array_insert(mlx_map_string_to_array map, const char *key,
                                   const mlx_array value) {
  if (!map.ctx) return lc_error("mlx_map_string_to_array_insert: empty map");
  if (!key) return lc_error("mlx_map_string_to_array_insert: key is NULL");
  LC_CHECK_ARR("mlx_map_string_to_array_insert", value);
  return map_put(map.ctx, key, lc_arr(value), NULL);
}

int mlx_map_string_to_array_get(mlx_array *value, const mlx_map_string_to_array map,
                                const char *key) {
  LC_CHECK_RES("mlx_map_string_to_array_get", value);
  if (!map.ctx) return lc_error("mlx_map_string_to_array_get: empty map");
  if (!key) return lc_error("mlx_map_string_to_array_get: key is NULL");
  struct entry *e = find(map.ctx, key);
  if (!e) return 2; /* mlx-c: a missing key is not an error, just status 2 */
  return lc_api_set(value, lc_node_retain(e->arr));
}

/* Iterators: ctx holds the next index (as a heap size_t), map_ctx the map. */
mlx_map_string_to_array_iterator mlx_map_string_to_array_iterator_new(mlx_map_string_to_array map) {
  size_t *pos = calloc(1, sizeof *pos);
  if (!pos) lc_error("out of memory");
  return (mlx_map_string_to_array_iterator){pos, map.ctx};
}

int mlx_map_string_to_array_iterator_free(mlx_map_string_to_array_iterator it) {
  free(it.ctx);
  return 0;
}

/* Returns 0 with the next entry, or 2 when the iteration is over. */
int mlx_map_string_to_array_iterator_next(const char **key, mlx_array *value,
                                          mlx_map_string_to_array_iterator it) {
  LC_CHECK_RES("mlx_map_string_to_array_iterator_next", key);
  LC_CHECK_RES("mlx_map_string_to_array_iterator_next", value);
  if (!it.ctx || !it.map_ctx) return lc_error("mlx_map_string_to_array_iterator_next: empty iterator");
  size_t *pos = it.ctx;
  struct lc_map *m = it.map_ctx;
  if (*pos >= m->len) return 2;
  struct entry *e = &m->items[(*pos)++];
  *key = e->key;
  return lc_api_set(value, lc_node_retain(e->arr));
}

/* ---- string to string ---- */

mlx_map_string_to_string mlx_map_string_to_string_new(void) {
  return (mlx_map_string_to_string){map_new()};
}

int mlx_map_string_to_string_set(mlx_map_string_to_string *map, const mlx_map_string_to_string src) {
  LC_CHECK_RES("mlx_map_string_to_string_set", map);
  return map_copy(&map->ctx, src.ctx);
}

int mlx_map_string_to_string_free(mlx_map_string_to_string map) {
  map_delete(map.ctx);
  return 0;
}

int mlx_map_string_to_string_insert(mlx_map_string_to_string map, const char *key,
                                    const char *value) {
  if (!map.ctx) return lc_error("mlx_map_string_to_string_insert: empty map");
  if (!key || !value) return lc_error("mlx_map_string_to_string_insert: key or value is NULL");
  return map_put(map.ctx, key, NULL, value);
}

int mlx_map_string_to_string_get(const char **value, const mlx_map_string_to_string map,
                                 const char *key) {
  LC_CHECK_RES("mlx_map_string_to_string_get", value);
  if (!map.ctx) return lc_error("mlx_map_string_to_string_get: empty map");
  if (!key) return lc_error("mlx_map_string_to_string_get: key is NULL");
  struct entry *e = find(map.ctx, key);
  if (!e) return 2;
  *value = e->str;
  return 0;
}

mlx_map_string_to_string_iterator mlx_map_string_to_string_iterator_new(
    mlx_map_string_to_string map) {
  size_t *pos = calloc(1, sizeof *pos);
  if (!pos) lc_error("out of memory");
  return (mlx_map_string_to_string_iterator){pos, map.ctx};
}

int mlx_map_string_to_string_iterator_free(mlx_map_string_to_string_iterator it) {
  free(it.ctx);
  return 0;
}

int mlx_map_string_to_string_iterator_next(const char **key, const char **value,
                                           mlx_map_string_to_string_iterator it) {
  LC_CHECK_RES("mlx_map_string_to_string_iterator_next", key);
  LC_CHECK_RES("mlx_map_string_to_string_iterator_next", value);
  if (!it.ctx || !it.map_ctx) return lc_error("mlx_map_string_to_string_iterator_next: empty iterator");
  size_t *pos = it.ctx;
  struct lc_map *m = it.map_ctx;
  if (*pos >= m->len) return 2;
  struct entry *e = &m->items[(*pos)++];
  *key = e->key;
  *value = e->str;
  return 0;
}
