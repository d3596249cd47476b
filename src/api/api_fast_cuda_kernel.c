/* Public custom CUDA kernels (mlx/c/fast.h, mlx_fast_cuda_kernel_*):
 * handle checks, then ops/fast_cuda_kernel.c. A kernel handle holds one
 * reference to its struct lc_ck_kernel (launches hold others); a config
 * handle owns its struct lc_ck_config. Applying needs a GPU stream: on
 * the CPU it fails, as MLX's does. */
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"
#include "gpu/gpu.h"
#include "ops/fast_cuda_kernel.h"

static struct lc_ck_config *cfg(mlx_fast_cuda_kernel_config c) { return c.ctx; }

/* Reports and returns 1 when a config handle is empty. */
#define CHECK_CFG(fn, c)                                                      \
  do {                                                                        \
    if (!(c).ctx) return lc_error("%s: empty mlx_fast_cuda_kernel_config", fn); \
  } while (0)

mlx_fast_cuda_kernel_config mlx_fast_cuda_kernel_config_new(void) {
  return (mlx_fast_cuda_kernel_config){lc_ck_config_new()};
}

void mlx_fast_cuda_kernel_config_free(mlx_fast_cuda_kernel_config cls) { lc_ck_config_free(cfg(cls)); }

int mlx_fast_cuda_kernel_config_add_output_arg(mlx_fast_cuda_kernel_config cls, const int *shape,
                                               size_t size, mlx_dtype dtype) {
  const char *fn = "mlx_fast_cuda_kernel_config_add_output_arg";
  CHECK_CFG(fn, cls);
  if (lc_api_check_list(fn, "shape", shape, size)) return 1;
  return lc_ck_config_add_output(fn, cfg(cls), shape, size, dtype);
}

/* Grid and thread group: three positive extents. */
static int set3(const char *fn, const char *what, int *dst, int a, int b, int c) {
  if (a <= 0 || b <= 0 || c <= 0)
    return lc_error("%s: the %s must be positive in every dimension (got %d, %d, %d)", fn, what,
                    a, b, c);
  dst[0] = a;
  dst[1] = b;
  dst[2] = c;
  return 0;
}

int mlx_fast_cuda_kernel_config_set_grid(mlx_fast_cuda_kernel_config cls, int grid1, int grid2,
                                         int grid3) {
  CHECK_CFG("mlx_fast_cuda_kernel_config_set_grid", cls);
  return set3("mlx_fast_cuda_kernel_config_set_grid", "grid", cfg(cls)->grid, grid1, grid2, grid3);
}

int mlx_fast_cuda_kernel_config_set_thread_group(mlx_fast_cuda_kernel_config cls, int thread1,
                                                 int thread2, int thread3) {
  CHECK_CFG("mlx_fast_cuda_kernel_config_set_thread_group", cls);
  return set3("mlx_fast_cuda_kernel_config_set_thread_group", "thread group", cfg(cls)->threads,
              thread1, thread2, thread3);
}

int mlx_fast_cuda_kernel_config_set_init_value(mlx_fast_cuda_kernel_config cls, float value) {
  CHECK_CFG("mlx_fast_cuda_kernel_config_set_init_value", cls);
  cfg(cls)->has_init = true;
  cfg(cls)->init = value;
  return 0;
}

int mlx_fast_cuda_kernel_config_set_verbose(mlx_fast_cuda_kernel_config cls, bool verbose) {
  CHECK_CFG("mlx_fast_cuda_kernel_config_set_verbose", cls);
  cfg(cls)->verbose = verbose;
  return 0;
}

int mlx_fast_cuda_kernel_config_add_template_arg_dtype(mlx_fast_cuda_kernel_config cls,
                                                       const char *name, mlx_dtype dtype) {
  const char *fn = "mlx_fast_cuda_kernel_config_add_template_arg_dtype";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_DTYPE, (int)dtype);
}

int mlx_fast_cuda_kernel_config_add_template_arg_int(mlx_fast_cuda_kernel_config cls,
                                                     const char *name, int value) {
  const char *fn = "mlx_fast_cuda_kernel_config_add_template_arg_int";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_INT, value);
}

int mlx_fast_cuda_kernel_config_add_template_arg_bool(mlx_fast_cuda_kernel_config cls,
                                                      const char *name, bool value) {
  const char *fn = "mlx_fast_cuda_kernel_config_add_template_arg_bool";
  CHECK_CFG(fn, cls);
  return lc_ck_config_add_targ(fn, cfg(cls), name, LC_CK_TARG_BOOL, value ? 1 : 0);
}

/* The strings of a vector handle (borrowed); NULL handle: an error. */
static int names_of(const char *what, mlx_vector_string v, const char *const **names, int *n) {
  if (!v.ctx) return lc_error("mlx_fast_cuda_kernel_new: %s is an empty vector handle", what);
  const struct lc_vec_string *s = v.ctx;
  if (s->len > 65536) return lc_error("mlx_fast_cuda_kernel_new: too many %s", what);
  *names = (const char *const *)s->items;
  *n = (int)s->len;
  return 0;
}

mlx_fast_cuda_kernel mlx_fast_cuda_kernel_new(const char *name,
                                              const mlx_vector_string input_names,
                                              const mlx_vector_string output_names,
                                              const char *source, const char *header,
                                              bool ensure_row_contiguous, int shared_memory) {
  const char *const *in = NULL, *const *out = NULL;
  int nin = 0, nout = 0;
  if (names_of("input_names", input_names, &in, &nin) ||
      names_of("output_names", output_names, &out, &nout))
    return (mlx_fast_cuda_kernel){NULL};
  return (mlx_fast_cuda_kernel){lc_ck_kernel_new(name, nin, in, nout, out, source, header,
                                                 ensure_row_contiguous, shared_memory)};
}

void mlx_fast_cuda_kernel_free(mlx_fast_cuda_kernel cls) { lc_ck_kernel_release(cls.ctx); }

/* Whether stream s (empty: the default) is a GPU stream. */
static bool gpu_stream(mlx_stream s) {
  mlx_device_type t = MLX_CPU;
  if (s.ctx) {
    t = ((const struct lc_stream *)s.ctx)->dev.type;
  } else {
    mlx_device d = mlx_device_new();
    if (!mlx_get_default_device(&d)) mlx_device_get_type(&t, d);
    mlx_device_free(d);
  }
  return t == MLX_GPU;
}

int mlx_fast_cuda_kernel_apply(mlx_vector_array *outputs, mlx_fast_cuda_kernel cls,
                               const mlx_vector_array inputs,
                               const mlx_fast_cuda_kernel_config config, const mlx_stream stream) {
  const char *fn = "mlx_fast_cuda_kernel_apply";
  LC_CHECK_RES(fn, outputs);
  if (!cls.ctx) return lc_error("%s: empty mlx_fast_cuda_kernel", fn);
  CHECK_CFG(fn, config);
  struct lc_node **in;
  size_t nin;
  if (lc_api_vector_nodes(fn, inputs, &in, &nin)) return 1;
  struct lc_ck_kernel *k = cls.ctx;
  int rc = 0;
  for (size_t i = 0; i < nin && !rc; i++)
    if (!in[i]) rc = lc_error("%s: input %zu is an empty array", fn, i);
  if (!rc && nin != (size_t)k->nin)
    rc = lc_error("%s: the kernel takes %d inputs (its input_names) but got %zu", fn, k->nin, nin);
  if (!rc) rc = lc_api_check_stream(fn, stream);
  if (!rc && lc_build_device() == LC_DEV_CPU)
    rc = gpu_stream(stream)
             ? lc_error("%s: needs a GPU stream, and no GPU is available (%s)", fn,
                        lc_gpu_unavailable_reason())
             : lc_error("%s: needs a GPU stream: custom CUDA kernels run only on a GPU, and the "
                        "stream is a CPU stream", fn);
  struct lc_node *outs[k->nout];
  if (!rc) rc = lc_ck_apply(k, in, (int)nin, cfg(config), outs);
  free(in);
  if (rc) return 1;
  rc = lc_vec_array_assign(outputs, outs, (size_t)k->nout);
  for (int j = 0; j < k->nout; j++) lc_node_release(outs[j]);
  return rc;
}
