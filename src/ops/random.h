/* MLX's key-based random numbers (threefry-2x32, bit-exact with MLX's CPU
 * backend for bits, keys, split, uniform and normal).
 *
 * A key is a uint32 array of shape (2,). Builders take a key (borrowed) or
 * NULL, meaning the next key of the process-wide sequence (mlx_random_seed;
 * seeded from the clock until then; guarded by a lock). They return a new
 * reference, or NULL after reporting. Distributions follow MLX's formulas
 * op by op, with each intermediate rounded to the dtype MLX computes it in. */
#ifndef LC_RANDOM_H
#define LC_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

/* Fills `bytes` bytes of out with MLX's bit stream for one key. */
void lc_threefry_fill(uint32_t k0, uint32_t k1, void *out, size_t bytes);

struct lc_node *lc_random_key(uint64_t seed);
void lc_random_seed(uint64_t seed);

/* width: 1, 2 or 4 bytes (uint8, uint16, uint32 result). */
struct lc_node *lc_random_bits(int ndim, const int *shape, int width, struct lc_node *key);
/* (num, 2) new keys. */
struct lc_node *lc_random_split(struct lc_node *key, int num);

struct lc_node *lc_random_uniform(struct lc_node *low, struct lc_node *high, int ndim,
                                  const int *shape, mlx_dtype t, struct lc_node *key);
/* loc/scale may be NULL (0 and 1). */
struct lc_node *lc_random_normal(int ndim, const int *shape, mlx_dtype t, struct lc_node *loc,
                                 struct lc_node *scale, struct lc_node *key);
struct lc_node *lc_random_randint(struct lc_node *low, struct lc_node *high, int ndim,
                                  const int *shape, mlx_dtype t, struct lc_node *key);
struct lc_node *lc_random_bernoulli(struct lc_node *p, int ndim, const int *shape,
                                    struct lc_node *key);
struct lc_node *lc_random_truncated_normal(struct lc_node *lower, struct lc_node *upper, int ndim,
                                           const int *shape, mlx_dtype t, struct lc_node *key);
struct lc_node *lc_random_gumbel(int ndim, const int *shape, mlx_dtype t, struct lc_node *key);
struct lc_node *lc_random_laplace(int ndim, const int *shape, mlx_dtype t, float loc,
                                  float scale, struct lc_node *key);
/* Samples along axis of logits (unnormalised log-probabilities); shape must
 * broadcast-contain logits' shape without axis. uint32 result. */
struct lc_node *lc_random_categorical(struct lc_node *logits, int axis, int ndim, const int *shape,
                                      struct lc_node *key);
/* A random permutation of 0..n-1 (uint32), and x shuffled along axis. */
struct lc_node *lc_random_permutation_arange(int n, struct lc_node *key);
struct lc_node *lc_random_permutation(struct lc_node *x, int axis, struct lc_node *key);

#endif
