/* Values computed from shapes at evaluation time (MLX's NumberOfElements):
 * a rule that needs "1 / the number of elements reduced" uses this node
 * instead of a constant, so a shapeless compiled program replayed on new
 * shapes computes the new count. */
#ifndef LC_SIZE_H
#define LC_SIZE_H

#include <stdbool.h>

#include "core/node.h"

/* A 0-d array of dtype t: the product of x's extents over the listed axes
 * (all axes when naxes < 0), or its reciprocal when `inverted`. x's data is
 * never read. New reference, or NULL after reporting. */
struct lc_node *lc_number_of_elements(struct lc_node *x, const int *axes, int naxes,
                                      bool inverted, mlx_dtype t);

#endif
