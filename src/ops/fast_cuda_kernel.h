/* Custom CUDA kernels (mlx_fast_cuda_kernel_*, MLX's mx.fast.cuda_kernel).
 *
 * A kernel (struct lc_ck_kernel) is a user's function body with the names
 * of its inputs and outputs; a config (struct lc_ck_config) says, per call,
 * the outputs' shapes and dtypes, the launch size and template arguments.
 * Applying a kernel to inputs generates the full CUDA C++ source (the
 * prelude, the user's header, an argument struct and the __global__
 * function whose body is the user's source) and builds one CUSTOM_CUDA_KERNEL
 * tuple node (ops/tuple.h) whose params hold one counted reference to a
 * struct lc_ck_launch, which the CUDA evaluator (gpu/cuda/eval_custom_kernel.c)
 * compiles with NVRTC and launches.
 *
 * MLX's semantics, kept:
 *  - input k is `const T* name` (T its dtype's CUDA type), output j is
 *    `T* name`; `name_shape` (Shape: int32_t[MAX_NDIM]), `name_strides`
 *    (Strides: int64_t[MAX_NDIM], element units) and `name_ndim` (int) of
 *    an input exist when its name followed by that suffix occurs in the
 *    source;
 *  - template arguments become, at the top of the body, `constexpr int N =
 *    v;`, `constexpr bool B = true;` or `using T = float;`, and suffixes
 *    of the kernel's name: custom_kernel_<name>_<v>_t_float... (a negative
 *    int v is written n<|v|>, which keeps the name an identifier);
 *  - grid is in threads, as Metal's: blocks = ceil(grid / thread_group),
 *    threads per block = min(thread_group, grid), per dimension;
 *  - ensure_row_contiguous copies inputs that are not row-major contiguous;
 *    otherwise an input is passed as it lies (element 0, any strides);
 *  - init_value fills every output (converted to its dtype) before the
 *    launch; without it outputs start uninitialised;
 *  - shared_memory bytes of dynamic shared memory (extern __shared__);
 *  - verbose prints the generated source when the kernel is applied;
 *  - only a GPU runs them.
 * The body runs inside namespace mlx::core::cu, where the prelude defines
 * Shape, Strides, complex64_t and elem_to_loc (MLX's names), and `cg` names
 * cooperative_groups. */
#ifndef LC_FAST_CUDA_KERNEL_H
#define LC_FAST_CUDA_KERNEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

/* The extent of Shape and Strides (MLX's MAX_NDIM). */
#define LC_CK_MAX_NDIM 10
/* The most bytes of the argument struct (CUDA's classic parameter limit). */
#define LC_CK_MAX_ARG_BYTES 4096

/* An immutable kernel, shared by its handle and every launch made of it. */
struct lc_ck_kernel {
  atomic_int refs;
  char *name, *source, *header;
  int nin, nout;
  char **in_names, **out_names;
  /* per input: whether the source names its _shape, _strides, _ndim */
  bool (*uses)[3];
  bool ensure_row_contiguous;
  int shared_memory;
};

enum lc_ck_targ_kind { LC_CK_TARG_INT, LC_CK_TARG_BOOL, LC_CK_TARG_DTYPE };
struct lc_ck_targ {
  char *name;
  enum lc_ck_targ_kind kind;
  int value; /* int, bool (0/1) or mlx_dtype */
};

/* A config: owned by its handle alone (mlx-c's value object). grid and
 * thread_group are 0 until set. */
struct lc_ck_config {
  int nout;
  int *out_ndim;
  int **out_shape;
  mlx_dtype *out_dtype;
  int grid[3], threads[3];
  bool has_init;
  float init;
  bool verbose;
  int ntarg;
  struct lc_ck_targ *targ;
};

/* Where each argument lies in the kernel's argument struct (byte offsets;
 * -1: absent). Pointers come first (inputs, then outputs), then the
 * inputs' Strides, Shapes and ndims, so nothing needs padding. */
struct lc_ck_layout {
  int nin, nout;
  int *ptr;    /* nin + nout */
  int *strides, *shape, *ndim; /* nin each */
  int size;    /* total, a multiple of 8 */
};

/* One application: what the evaluator needs. Counted (node params). */
struct lc_ck_launch {
  atomic_int refs;
  struct lc_ck_kernel *k; /* one reference */
  char *kname;            /* custom_kernel_<name><template suffix> */
  char *src;              /* the full generated source */
  uint64_t hash;          /* of src */
  unsigned grid[3], block[3]; /* in blocks and threads per block */
  int nout;
  mlx_dtype *out_dtype;
  int64_t *out_bytes;     /* each output's size in bytes */
  bool has_init;
  uint64_t *init_bits;    /* per output: init_value in its dtype (8 bytes) */
  struct lc_ck_layout lay;
};

/* CUSTOM_CUDA_KERNEL params: one counted launch (params_ref). */
struct lc_ck_params {
  struct lc_ck_launch *L;
};

/* Kernel objects: NULL after reporting (with the public function's name). */
struct lc_ck_kernel *lc_ck_kernel_new(const char *name, int nin, const char *const *in_names,
                                      int nout, const char *const *out_names, const char *source,
                                      const char *header, bool ensure_row_contiguous,
                                      int shared_memory);
void lc_ck_kernel_release(struct lc_ck_kernel *k); /* NULL is fine */

struct lc_ck_config *lc_ck_config_new(void); /* NULL after reporting */
void lc_ck_config_free(struct lc_ck_config *c); /* NULL is fine */
/* Config setters: 0, or 1 after reporting (fn: the public name). */
int lc_ck_config_add_output(const char *fn, struct lc_ck_config *c, const int *shape, size_t ndim,
                            mlx_dtype dtype);
int lc_ck_config_add_targ(const char *fn, struct lc_ck_config *c, const char *name,
                          enum lc_ck_targ_kind kind, int value);

/* The generated source for kernel k on inputs of dtypes in_dt under
 * config c: malloc'd, with the kernel's name in *kname (malloc'd) and the
 * argument layout in *lay (free with lc_ck_layout_free). NULL after
 * reporting. Needs no GPU (tests compile it with NVRTC anywhere). */
char *lc_ck_source(const struct lc_ck_kernel *k, const mlx_dtype *in_dt,
                   const struct lc_ck_config *c, char **kname, struct lc_ck_layout *lay);
void lc_ck_layout_free(struct lc_ck_layout *lay);

/* Applies k to in[0..nin) (borrowed) under c on the current build device
 * (a GPU): new references to the outputs in outs[0..k->nout). 0, or 1
 * after reporting. */
int lc_ck_apply(struct lc_ck_kernel *k, struct lc_node *const *in, int nin,
                const struct lc_ck_config *c, struct lc_node **outs);

#endif
