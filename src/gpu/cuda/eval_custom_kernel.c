/* eval_cuda of CUSTOM_CUDA_KERNEL nodes (ops/fast_cuda_kernel.h): the
 * launch's source built by NVRTC (once per source and architecture in
 * this process; on disk across processes), outputs allocated in the
 * tuple's one buffer and filled with init_value when there is one, then
 * one launch of the user's grid whose only argument is the struct the
 * source declares, laid out by the launch's struct lc_ck_layout.
 *
 * CUDA graphs: the launch notes its argument blob (capture.h), so a
 * captured graph relocates its input and output pointers; the fill is an
 * nvcc-built kernel CUDA describes itself. Nothing here waits for the GPU
 * or copies between host and device. Never answers LC_EVAL_ON_CPU: a
 * custom kernel has no CPU version, so failures are reported.
 *
 * Module table invariants: it only grows, under `lock`, which is also held
 * while a module is built (others wait rather than build it twice); an
 * entry keeps its source to tell hash collisions apart; builds that fail
 * are not remembered (each evaluation reports the compiler's log). */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "gpu/cuda/capture.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/cuda/nvrtc.h"
#include "gpu/gpu.h"
#include "ops/fast_cuda_kernel.h"
#include "ops/prim.h"
#include "ops/tuple.h"

#define FN "mlx_fast_cuda_kernel"

/* ---- NVRTC options: the toolkit's include directories ---- */

static pthread_once_t include_once = PTHREAD_ONCE_INIT;
static char include_opt[2][1100]; /* "--include-path=..." or "" (set once) */

static bool has_file(const char *dir, const char *file) {
  char p[1100];
  int k = snprintf(p, sizeof p, "%s/%s", dir, file);
  return k > 0 && (size_t)k < sizeof p && access(p, R_OK) == 0;
}

/* The first candidate holding cuda_fp16.h, and its cccl/ directory when
 * the toolkit keeps libcu++ there (CUDA 13). Paths that do not fit are
 * skipped. */
static void find_includes(void) {
  const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
  char cand[4][1024];
  int n = 0;
  for (int r = 0; r < 2; r++) {
    if (!roots[r] || !*roots[r]) continue;
    int k = snprintf(cand[n], sizeof cand[0], "%s/include", roots[r]);
    n += k > 0 && (size_t)k < sizeof cand[0];
  }
#ifdef LACE_CUDA_INCLUDE_DIR
  n += snprintf(cand[n], sizeof cand[0], "%s", LACE_CUDA_INCLUDE_DIR) < (int)sizeof cand[0];
#endif
  snprintf(cand[n++], sizeof cand[0], "/usr/local/cuda/include");
  for (int i = 0; i < n; i++) {
    if (!has_file(cand[i], "cuda_fp16.h")) continue;
    int k = snprintf(include_opt[0], sizeof include_opt[0], "--include-path=%s", cand[i]);
    if (k < 0 || (size_t)k >= sizeof include_opt[0]) include_opt[0][0] = 0;
    if (has_file(cand[i], "cccl/cuda/std/array")) {
      k = snprintf(include_opt[1], sizeof include_opt[1], "--include-path=%s/cccl", cand[i]);
      if (k < 0 || (size_t)k >= sizeof include_opt[1]) include_opt[1][0] = 0;
    }
    return;
  }
}

void *lc_ck_cubin(const char *src, const char *kname, int arch, size_t *len, char **log) {
  pthread_once(&include_once, find_includes);
  char archopt[48], name[300];
  /* the architecture-specific variant from sm_90 on, as MLX compiles */
  snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%d%s", arch, arch >= 90 ? "a" : "");
  snprintf(name, sizeof name, "%s.cu", kname);
  const char *opts[6] = {archopt, "-std=c++17", "--device-as-default-execution-space"};
  int nopts = 3;
  for (int i = 0; i < 2; i++)
    if (include_opt[i][0]) opts[nopts++] = include_opt[i];
  return lc_nvrtc_cubin(src, name, arch, opts, nopts, len, log);
}

/* ---- modules ---- */

struct module {
  uint64_t hash;
  int arch;
  char *src;
  void *fn; /* cudaKernel_t */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *table;
static size_t table_n, table_cap;

/* The launch's kernel for arch, built on first use; NULL after reporting. */
static void *kernel_of(const struct lc_ck_launch *L, int arch) {
  void *fn = NULL;
  char *log = NULL;
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < table_n && !fn; i++)
    if (table[i].hash == L->hash && table[i].arch == arch && !strcmp(table[i].src, L->src))
      fn = table[i].fn;
  if (!fn) {
    size_t len = 0;
    void *bin = lc_ck_cubin(L->src, L->kname, arch, &len, &log);
    cudaLibrary_t lib;
    cudaKernel_t k;
    if (!bin) {
      why = "NVRTC could not compile it";
    } else if (cudaLibraryLoadData(&lib, bin, NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess) {
      why = "CUDA could not load the compiled module";
    } else if (cudaLibraryGetKernel(&k, lib, L->kname) != cudaSuccess) {
      why = "the compiled module lacks the kernel"; /* the library stays loaded */
    } else {
      fn = (void *)k;
    }
    (void)cudaGetLastError(); /* a failure here is not an error of later calls */
    free(bin);
    if (fn && table_n == table_cap) {
      size_t cap = table_cap ? 2 * table_cap : 16;
      struct module *t = realloc(table, cap * sizeof *t);
      if (t) {
        table = t;
        table_cap = cap;
      }
    }
    char *copy = fn && table_n < table_cap ? strdup(L->src) : NULL;
    if (copy) table[table_n++] = (struct module){L->hash, arch, copy, fn};
    /* not kept (out of memory): built again next time */
  }
  pthread_mutex_unlock(&lock);
  if (!fn) /* reported outside the lock: a handler may call back into lace */
    lc_error("%s: %s for sm_%d: %s%s%.700s", FN, L->kname, arch, why ? why : "out of memory",
             log && *log ? ":\n" : "", log ? log : "");
  free(log);
  return fn;
}

/* ---- evaluation ---- */

/* Row-major contiguous (extents of 1 ignored), read without touching x. */
static bool row_contiguous(const struct lc_node *x) {
  int64_t expect = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    if (x->shape[d] == 1) continue;
    if (x->strides[d] != expect) return x->size == 0;
    expect *= x->shape[d];
  }
  return true;
}

/* The argument struct's bytes for n's inputs and output buffer. */
static void fill_args(const struct lc_node *n, const struct lc_ck_launch *L, const int64_t *offs,
                      unsigned char *blob) {
  const struct lc_ck_layout *lay = &L->lay;
  for (int i = 0; i < n->nin; i++) {
    const struct lc_node *x = n->in[i];
    void *p = lc_node_dev_data(x);
    memcpy(blob + lay->ptr[i], &p, sizeof p);
    if (lay->strides[i] >= 0)
      memcpy(blob + lay->strides[i], x->strides, sizeof(int64_t) * (size_t)x->ndim);
    if (lay->shape[i] >= 0) memcpy(blob + lay->shape[i], x->shape, sizeof(int) * (size_t)x->ndim);
    if (lay->ndim[i] >= 0) memcpy(blob + lay->ndim[i], &x->ndim, sizeof(int));
  }
  for (int j = 0; j < L->nout; j++) {
    void *p = (char *)n->buf->dev_data + offs[j];
    memcpy(blob + lay->ptr[n->nin + j], &p, sizeof p);
  }
}

/* Checks the inputs against what the launch was made for. */
static int check_inputs(const struct lc_node *n, const struct lc_ck_launch *L) {
  const struct lc_ck_kernel *k = L->k;
  if (n->nin != k->nin) return lc_error("%s: internal: %d inputs for %d names", FN, n->nin, k->nin);
  for (int i = 0; i < n->nin; i++) {
    const struct lc_node *x = n->in[i];
    if (k->ensure_row_contiguous && !row_contiguous(x))
      return lc_error("%s: internal: input '%s' of %s is not row-contiguous", FN, k->in_names[i],
                      L->kname);
    if ((L->lay.shape[i] >= 0 || L->lay.strides[i] >= 0) && x->ndim > LC_CK_MAX_NDIM)
      return lc_error("%s: input '%s' has %d dimensions, more than %d", FN, k->in_names[i],
                      x->ndim, LC_CK_MAX_NDIM);
  }
  return 0;
}

/* Dynamic shared memory beyond the default 48 KiB must be asked for. */
static int shared_memory(void *fn, int bytes, int dev, const char *kname) {
  if (bytes <= 48 * 1024) return 0;
  int most = 0;
  if (cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
    most = 0;
  if (bytes > most) {
    (void)cudaGetLastError();
    return lc_error("%s: %s asks for %d bytes of shared memory; GPU %d allows %d per block", FN,
                    kname, bytes, dev, most);
  }
  cudaError_t e = cudaKernelSetAttributeForDevice((cudaKernel_t)fn,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  bytes, dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return lc_error("%s: %s: cannot allow %d bytes of shared memory: %s", FN, kname, bytes,
                    cudaGetErrorString(e));
  }
  return 0;
}

/* Fills every output with its init_value bits. 0, or 1 after reporting. */
static int fill_outputs(const struct lc_node *n, const struct lc_ck_launch *L, const int64_t *offs,
                        void *stream) {
  for (int j = 0; j < L->nout; j++) {
    int isz = (int)lc_dtype_size(L->out_dtype[j]);
    int rc = lc_cu_fill((char *)n->buf->dev_data + offs[j], L->out_bytes[j] / isz, isz,
                        L->init_bits[j], stream);
    if (rc) return lc_error("%s: filling the outputs of %s with init_value: %s", FN, L->kname,
                            rc < 0 ? cudaGetErrorString((cudaError_t)-rc) : "unsupported dtype");
  }
  return 0;
}

int lc_cuda_eval_custom_kernel(struct lc_node *n) {
  const struct lc_ck_launch *L = ((const struct lc_ck_params *)n->params)->L;
  int dev = n->dev, maj = 0, min = 0;
  if (check_inputs(n, L)) return 1;
  if (cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return lc_error("%s: cannot read GPU %d's compute capability", FN, dev);
  }
  void *fn = kernel_of(L, 10 * maj + min);
  if (!fn || shared_memory(fn, L->k->shared_memory, dev, L->kname)) return 1;
  int64_t offs[L->nout];
  lc_tuple_layout(L->nout, L->out_bytes, offs);
  unsigned char *blob = calloc(1, (size_t)L->lay.size);
  if (!blob) return lc_error("out of memory");
  if (lc_cuda_alloc_output(n)) {
    free(blob);
    return 1;
  }
  void *stream = lc_gpu_stream(dev);
  int rc = L->has_init ? fill_outputs(n, L, offs, stream) : 0;
  if (!rc) {
    fill_args(n, L, offs, blob);
    void *args[1] = {blob};
    dim3 g = {L->grid[0], L->grid[1], L->grid[2]}, b = {L->block[0], L->block[1], L->block[2]};
    unsigned smem = (unsigned)L->k->shared_memory;
    cudaError_t e = cudaLaunchKernel(fn, g, b, args, smem, (cudaStream_t)stream);
    if (e == cudaSuccess) {
      size_t size = (size_t)L->lay.size;
      lc_cuda_capture_note_launch(fn, L->grid, L->block, smem, args, &size, 1); /* graphs */
    } else {
      (void)cudaGetLastError();
      rc = lc_error("%s: launching %s (%u x %u x %u blocks of %u x %u x %u threads): %s", FN,
                    L->kname, g.x, g.y, g.z, b.x, b.y, b.z, cudaGetErrorString(e));
    }
  }
  free(blob);
  return lc_cuda_finish(n, rc);
}
#endif
