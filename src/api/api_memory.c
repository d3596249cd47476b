/* Memory accounting: the caching allocator's counters and limits. */
#include "api/api.h"
#include "core/alloc.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"

int mlx_clear_cache(void) {
  lc_alloc_clear_cache();
  lc_gpu_graphs_clear(); /* captured graphs hold blocks for their private nodes */
  lc_gpu_clear_cache();
  return 0;
}

#define GETTER(name, expr)                   \
  int name(size_t *res) {                    \
    LC_CHECK_RES(#name, res);                \
    *res = (expr);                           \
    return 0;                                \
  }
/* Host and GPU memory together (MLX reports the one pool of its device). */
GETTER(mlx_get_active_memory, lc_alloc_active() + lc_gpu_active())
GETTER(mlx_get_cache_memory, lc_alloc_cached() + lc_gpu_cached())
GETTER(mlx_get_memory_limit, lc_alloc_memory_limit())
GETTER(mlx_get_peak_memory, lc_alloc_peak() + lc_gpu_peak())

int mlx_reset_peak_memory(void) {
  lc_alloc_reset_peak();
  lc_gpu_reset_peak();
  return 0;
}

int mlx_set_cache_limit(size_t *res, size_t limit) {
  LC_CHECK_RES("mlx_set_cache_limit", res);
  *res = lc_alloc_set_cache_limit(limit);
  return 0;
}

int mlx_set_memory_limit(size_t *res, size_t limit) {
  LC_CHECK_RES("mlx_set_memory_limit", res);
  *res = lc_alloc_set_memory_limit(limit);
  return 0;
}

/* Wired memory is a unified-memory notion; on this host it is a no-op. */
int mlx_set_wired_limit(size_t *res, size_t limit) {
  LC_CHECK_RES("mlx_set_wired_limit", res);
  (void)limit;
  *res = 0;
  return 0;
}
