/* Binary elementwise builders (new reference, or NULL after reporting). */
#ifndef LC_BINARY_H
#define LC_BINARY_H

#include "core/node.h"

struct lc_node *lc_add(struct lc_node *a, struct lc_node *b);

#endif
