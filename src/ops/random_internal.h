/* Shared between ops/random.c (keys, bits, builders) and
 * ops/random_dist.c (distribution kernels). */
#ifndef LC_RANDOM_INTERNAL_H
#define LC_RANDOM_INTERNAL_H

#include "core/node.h"

/* What a RANDOM_DIST node computes from its uint32 bits (input 0). Extra
 * inputs, all of the output's shape:
 *   UNIFORM   lo, hi (output dtype)
 *   NORMAL    scale, loc (output dtype; used per has_scale / has_loc)
 *   LAPLACE   none (params loc, scale)
 *   GUMBEL    none
 *   TRUNC     lower, upper (output dtype)
 *   BERNOULLI p (float32 or float64); output bool
 *   RANDINT   low, high as float32, then low, high as float64 */
enum lc_dist_kind {
  LC_DIST_UNIFORM,
  LC_DIST_NORMAL,
  LC_DIST_LAPLACE,
  LC_DIST_GUMBEL,
  LC_DIST_TRUNC,
  LC_DIST_BERNOULLI,
  LC_DIST_RANDINT
};

struct lc_dist_params {
  int kind;
  int has_scale, has_loc;
  int p_f64; /* BERNOULLI: p is float64 (else float32) */
  float loc, scale;
};

#endif
