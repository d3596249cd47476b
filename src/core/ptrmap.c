#include "core/ptrmap.h"

#include <stdlib.h>

#include "core/error.h"

static size_t slot(const void *key, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)key;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

void lc_ptrmap_init(struct lc_ptrmap *m) {
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->len = 0;
}

void lc_ptrmap_free(struct lc_ptrmap *m) {
  free(m->keys);
  free(m->vals);
  lc_ptrmap_init(m);
}

static int grow(struct lc_ptrmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  const void **nk = calloc(ncap, sizeof *nk);
  intptr_t *nv = malloc(ncap * sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return lc_error("out of memory");
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = slot(m->keys[i], ncap);
    while (nk[j]) j = (j + 1) & (ncap - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return 0;
}

int lc_ptrmap_put(struct lc_ptrmap *m, const void *key, intptr_t val) {
  if ((m->len + 1) * 2 > m->cap && grow(m)) return 1;
  size_t j = slot(key, m->cap);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) {
    m->keys[j] = key;
    m->len++;
  }
  m->vals[j] = val;
  return 0;
}

bool lc_ptrmap_get(const struct lc_ptrmap *m, const void *key, intptr_t *val) {
  if (!m->cap) return false;
  size_t j = slot(key, m->cap);
  while (m->keys[j]) {
    if (m->keys[j] == key) {
      if (val) *val = m->vals[j];
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return false;
}
