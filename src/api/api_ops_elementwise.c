/* Public elementwise ops: argument checks, then the builders. */
#include "api/api.h"
#include "ops/binary.h"
#include "ops/elementwise.h"

int mlx_add(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) {
  LC_CHECK_RES("mlx_add", res);
  LC_CHECK_ARR("mlx_add", a);
  LC_CHECK_ARR("mlx_add", b);
  if (lc_api_check_stream("mlx_add", s)) return 1;
  return lc_api_set(res, lc_add(lc_arr(a), lc_arr(b)));
}

int mlx_astype(mlx_array *res, const mlx_array a, mlx_dtype dtype, const mlx_stream s) {
  LC_CHECK_RES("mlx_astype", res);
  LC_CHECK_ARR("mlx_astype", a);
  if (lc_api_check_stream("mlx_astype", s)) return 1;
  return lc_api_set(res, lc_astype(lc_arr(a), dtype));
}
