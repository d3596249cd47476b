/* An open-addressing hash map from pointers to intptr_t values.
 * Keys must be non-NULL. The map owns only its table. */
#ifndef LC_PTRMAP_H
#define LC_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_ptrmap {
  const void **keys;
  intptr_t *vals;
  size_t cap, len; /* cap is 0 or a power of two */
};

void lc_ptrmap_init(struct lc_ptrmap *m);
void lc_ptrmap_free(struct lc_ptrmap *m);
/* Inserts or overwrites. 0, or 1 after reporting out of memory. */
int lc_ptrmap_put(struct lc_ptrmap *m, const void *key, intptr_t val);
/* True and *val set (val may be NULL) when key is present. */
bool lc_ptrmap_get(const struct lc_ptrmap *m, const void *key, intptr_t *val);

#endif
