/* Ternary elementwise builders. */
#ifndef LC_TERNARY_H
#define LC_TERNARY_H

#include "core/node.h"

/* x where cond else y: cond cast to bool, x and y to their promoted dtype,
 * all three broadcast together. New reference, or NULL after reporting. */
struct lc_node *lc_where(struct lc_node *cond, struct lc_node *x, struct lc_node *y);

#endif
