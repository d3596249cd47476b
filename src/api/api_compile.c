/* mlx_compile and its controls (the work is in src/compile/). */
#include "api/api.h"
#include "api/handles.h"
#include "compile/compile.h"
#include "mlx/c/compile.h"

static int set_closure(mlx_closure *res, struct lc_closure *c) {
  if (!c) return 1;
  lc_closure_release(lc_closure_of(*res));
  res->ctx = c;
  return 0;
}

int mlx_compile(mlx_closure *res, const mlx_closure fun, bool shapeless) {
  LC_CHECK_RES("mlx_compile", res);
  if (!fun.ctx) return lc_error("mlx_compile: empty closure");
  return set_closure(res, lc_compile_make(lc_closure_of(fun), 0, 0, shapeless, NULL, 0));
}

int mlx_detail_compile(mlx_closure *res, const mlx_closure fun, uintptr_t fun_id, bool shapeless,
                       const uint64_t *constants, size_t constants_num) {
  LC_CHECK_RES("mlx_detail_compile", res);
  if (!fun.ctx) return lc_error("mlx_detail_compile: empty closure");
  if (constants_num && !constants)
    return lc_error("mlx_detail_compile: constants is NULL but constants_num is %zu",
                    constants_num);
  return set_closure(res, lc_compile_make(lc_closure_of(fun), 1, fun_id, shapeless, constants,
                                          constants_num));
}

int mlx_detail_compile_clear_cache(void) {
  lc_cache_clear();
  return 0;
}

int mlx_detail_compile_erase(uintptr_t fun_id) {
  lc_cache_erase(1, fun_id);
  return 0;
}

int mlx_disable_compile(void) {
  lc_compile_set_mode(MLX_COMPILE_MODE_DISABLED);
  return 0;
}

int mlx_enable_compile(void) {
  lc_compile_set_mode(MLX_COMPILE_MODE_ENABLED);
  return 0;
}

int mlx_set_compile_mode(mlx_compile_mode mode) {
  if ((int)mode < MLX_COMPILE_MODE_DISABLED || (int)mode > MLX_COMPILE_MODE_ENABLED)
    return lc_error("mlx_set_compile_mode: invalid mode %d", (int)mode);
  lc_compile_set_mode((int)mode);
  return 0;
}
