/* Lookup over the family tables of MLX primitive importers and lace op
 * writers (opmap_*.c). */
#include <string.h>

#include "export/export.h"

static const struct lc_ximp *const imp_tables[] = {lc_ximp_ew, lc_ximp_shape, lc_ximp_reduce,
                                                   lc_ximp_index, lc_ximp_misc};
static const struct lc_xexp *const exp_tables[] = {lc_xexp_ew, lc_xexp_shape, lc_xexp_reduce,
                                                   lc_xexp_index, lc_xexp_misc, lc_xexp_norm};

const struct lc_ximp *lc_ximp_find(const char *name) {
  for (size_t t = 0; t < sizeof imp_tables / sizeof *imp_tables; t++)
    for (const struct lc_ximp *r = imp_tables[t]; r->name; r++)
      if (!strcmp(r->name, name)) return r;
  return NULL;
}

const struct lc_xexp *lc_xexp_find(int op) {
  for (size_t t = 0; t < sizeof exp_tables / sizeof *exp_tables; t++)
    for (const struct lc_xexp *r = exp_tables[t]; r->op >= 0; r++)
      if (r->op == op) return r;
  return NULL;
}
