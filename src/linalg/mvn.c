/* random.multivariate_normal as MLX builds it: mean + z @ sqrt(cov), z
 * standard normal, sqrt(cov) = U diag(sqrt(S)) Vt from the SVD of cov
 * (float32). */
#include <string.h>

#include "core/error.h"
#include "linalg/linalg.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

#define FN "random::multivariate_normal"

static int mvn_check(const struct lc_node *mean, const struct lc_node *cov, mlx_dtype t) {
  if (t != MLX_FLOAT32) return lc_error("%s: dtype must be float32.", FN);
  if (mean->ndim < 1) return lc_error("%s: mean must have at least one dimension.", FN);
  if (cov->ndim < 2) return lc_error("%s: cov must have at least two dimensions.", FN);
  if (cov->shape[cov->ndim - 1] != cov->shape[cov->ndim - 2])
    return lc_error("%s: last two dimensions of cov must be equal.", FN);
  if (mean->shape[mean->ndim - 1] != cov->shape[cov->ndim - 1])
    return lc_error("%s: mean and cov must have compatible shapes.", FN);
  return 0;
}

/* broadcast(cov's batch, mean's batch, shape) + [n], into out; *nd set. */
static int mvn_shape(const struct lc_node *mean, const struct lc_node *cov, int ndim,
                     const int *shape, int *out, int *nd) {
  int tmp[cov->ndim + mean->ndim + ndim + 1], k;
  if (lc_broadcast_shapes(FN, cov->ndim - 2, cov->shape, mean->ndim - 1, mean->shape, &k, tmp) ||
      lc_broadcast_shapes(FN, k, tmp, ndim, shape, nd, out))
    return 1;
  out[(*nd)++] = mean->shape[mean->ndim - 1];
  return 0;
}

struct lc_node *lc_linalg_multivariate_normal(struct lc_node *mean, struct lc_node *cov, int ndim,
                                              const int *shape, mlx_dtype t, struct lc_node *key) {
  if (mvn_check(mean, cov, t)) return NULL;
  int oshape[cov->ndim + mean->ndim + ndim + 1], ond;
  if (mvn_shape(mean, cov, ndim, shape, oshape, &ond)) return NULL;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *c, *usv[3], *rs, *us, *sd, *z, *y, *r = NULL;
  int before_last = -2;
  LC_RULE_TRY(sc, c, lc_astype(cov, MLX_FLOAT32));
  if (lc_linalg_svd(c, true, usv)) goto done;
  for (int i = 0; i < 3; i++) lc_rule_keep(&sc, usv[i]);
  LC_RULE_TRY(sc, rs, lc_sqrt(usv[1]));
  LC_RULE_TRY(sc, rs, lc_expand_dims(rs, 1, &before_last));
  LC_RULE_TRY(sc, us, lc_multiply(usv[0], rs));
  LC_RULE_TRY(sc, sd, lc_matmul(us, usv[2]));
  LC_RULE_TRY(sc, sd, lc_astype(sd, t));
  LC_RULE_TRY(sc, z, lc_random_normal(ond, oshape, t, NULL, NULL, key));
  LC_RULE_TRY(sc, z, lc_expand_dims(z, 1, &before_last));
  LC_RULE_TRY(sc, y, lc_matmul(z, sd));
  LC_RULE_TRY(sc, y, lc_squeeze(y, 1, &before_last));
  LC_RULE_TRY(sc, r, lc_add(mean, y));
done:;
  struct lc_node *res = NULL;
  lc_rule_scope_end(&sc, r, &res);
  return res;
}
