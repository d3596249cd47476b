/* Public custom Metal kernels (mlx/c/fast.h, mlx_fast_metal_kernel_*).
 * lace has no Metal back-end, as MLX built without Metal: configs work
 * (they are the CUDA kernels' configs, ops/fast_cuda_kernel.h), kernels
 * are created after their arguments are checked, and applying one fails
 * with "No Metal back-end", which is what MLX reports there. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "ops/fast_cuda_kernel.h"

/* A kernel: only what apply checks before it fails. */
struct metal_kernel {
  char *name;
  size_t nin, nout;
};

static struct lc_ck_config *cfg(mlx_fast_metal_kernel_config c) { return c.ctx; }

#define CHECK_CFG(fn, c)                                                        \
  do {                                                                          \
    if (!(c).ctx) return lc_error("%s: empty mlx_fast_metal_kernel_config", fn); \
  } while (0)

mlx_fast_metal_kernel_config mlx_fast_metal_kernel_config_new(void) {
  return (mlx_fast_metal_kernel_config){lc_ck_config_new()};
}

void mlx_fast_metal_kernel_config_free(mlx_fast_metal_kernel_config cls) {
  lc_ck_config_free(cfg(cls));
}

int mlx_fast_metal_kernel_config_add_output_arg(mlx_fast_metal_kernel_config cls, const int *shape,
                                                size_t size, mlx_dtype dtype) {
  const char *fn = "mlx_fast_metal_kernel_config_add_output_arg";
  CHECK_CFG(fn, cls);
  if (lc_api_check_list(fn, "shape", shape, size)) return 1;
  return lc_ck_config_add_output(fn, cfg(cls), shape, size, dtype);
}

static int set3(const char *fn, const char *what, int *dst, int a, int b, int c) {
  if (a <= 0 || b <= 0 || c <= 0)
    return lc_error("%s: the %s must be positive in every dimension (got %d, %d, %d)", fn, what,
                    a, b, c);
  dst[0] = a;
  dst[1] = b;
  dst[2] = c;
  return 0;
}

int mlx_fast_metal_kernel_config_set_grid(mlx_fast_metal_kernel_config cls, int grid1, int grid2,
                                          int grid3) {
  const char *fn = "mlx_fast_metal_kernel_config_set_grid";
  CHECK_CFG(fn, cls);
  return set3(fn, "grid", cfg(cls)->grid, grid1, grid2, grid3);
}

int mlx_fast_metal_kernel_config_set_thread_group(mlx_fast_metal_kernel_config cls, int thread1,
                                                  int thread2, int thread3) {
  const char *fn = "mlx_fast_metal_kernel_config_set_thread_group";
  CHECK_CFG(fn, cls);
  return set3(fn, "thread group", cfg(cls)->threads, thread1, thread2, thread3);
}

int mlx_fast_metal_kernel_config_set_init_value(mlx_fast_metal_kernel_config cls, float value) {
  CHECK_CFG("mlx_fast_metal_kernel_config_set_init_value", cls);
  cfg(cls)->has_init = true;
  cfg(cls)->init = value;
  return 0;
}

int mlx_fast_metal_kernel_config_set_verbose(mlx_fast_metal_kernel_config cls, bool verbose) {
  CHECK_CFG("mlx_fast_metal_kernel_config_set_verbose", cls);
  cfg(cls)->verbose = verbose;
  return 0;
}

int mlx_fast_metal_kernel_config_add_template_arg_dtype(mlx_fast_metal_kernel_config cls,
                                                        const char *name, mlx_dtype dtype) {
  const char *fn = "mlx_fast_metal_kernel_config_add_template_arg_dtype";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_DTYPE, (int)dtype);
}

int mlx_fast_metal_kernel_config_add_template_arg_int(mlx_fast_metal_kernel_config cls,
                                                      const char *name, int value) {
  const char *fn = "mlx_fast_metal_kernel_config_add_template_arg_int";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_INT, value);
}

int mlx_fast_metal_kernel_config_add_template_arg_bool(mlx_fast_metal_kernel_config cls,
                                                       const char *name, bool value) {
  const char *fn = "mlx_fast_metal_kernel_config_add_template_arg_bool";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_BOOL, value ? 1 : 0);
}

/* The length of a vector of names; every name a non-empty string. */
static int count_names(const char *what, mlx_vector_string v, size_t *n) {
  const char *fn = "mlx_fast_metal_kernel_new";
  if (!v.ctx) return lc_error("%s: %s is an empty vector handle", fn, what);
  const struct lc_vec_string *s = v.ctx;
  for (size_t i = 0; i < s->len; i++)
    if (!s->items[i] || !*s->items[i]) return lc_error("%s: %s[%zu] is empty", fn, what, i);
  *n = s->len;
  return 0;
}

mlx_fast_metal_kernel mlx_fast_metal_kernel_new(const char *name,
                                                const mlx_vector_string input_names,
                                                const mlx_vector_string output_names,
                                                const char *source, const char *header,
                                                bool ensure_row_contiguous, bool atomic_outputs) {
  const char *fn = "mlx_fast_metal_kernel_new";
  (void)header, (void)ensure_row_contiguous, (void)atomic_outputs;
  size_t nin = 0, nout = 0;
  if (!name || !*name) return lc_error("%s: the kernel's name is empty", fn), (mlx_fast_metal_kernel){NULL};
  if (!source) return lc_error("%s: source is NULL", fn), (mlx_fast_metal_kernel){NULL};
  if (count_names("input_names", input_names, &nin) ||
      count_names("output_names", output_names, &nout))
    return (mlx_fast_metal_kernel){NULL};
  if (nout == 0)
    return lc_error("%s: the kernel needs at least one output", fn), (mlx_fast_metal_kernel){NULL};
  struct metal_kernel *k = malloc(sizeof *k);
  char *nm = k ? strdup(name) : NULL;
  if (!nm) {
    free(k);
    return lc_error("out of memory"), (mlx_fast_metal_kernel){NULL};
  }
  *k = (struct metal_kernel){nm, nin, nout};
  return (mlx_fast_metal_kernel){k};
}

void mlx_fast_metal_kernel_free(mlx_fast_metal_kernel cls) {
  struct metal_kernel *k = cls.ctx;
  if (!k) return;
  free(k->name);
  free(k);
}

int mlx_fast_metal_kernel_apply(mlx_vector_array *outputs, mlx_fast_metal_kernel cls,
                                const mlx_vector_array inputs,
                                const mlx_fast_metal_kernel_config config,
                                const mlx_stream stream) {
  const char *fn = "mlx_fast_metal_kernel_apply";
  LC_CHECK_RES(fn, outputs);
  if (!cls.ctx) return lc_error("%s: empty mlx_fast_metal_kernel", fn);
  CHECK_CFG(fn, config);
  if (lc_api_check_stream(fn, stream)) return 1;
  (void)inputs;
  const struct metal_kernel *k = cls.ctx;
  return lc_error("%s: [metal_kernel] No Metal back-end (kernel '%s'): lace runs on CPUs and "
                  "NVIDIA GPUs; use mlx_fast_cuda_kernel_* on a GPU stream",
                  fn, k->name);
}
