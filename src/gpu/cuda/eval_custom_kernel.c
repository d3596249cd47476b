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
 * Module table invariants: it changes only under `lock`, which is also
 * held while a module is built (others wait rather than build it twice);
 * an entry keeps its source to tell hash collisions apart; builds that
 * fail are not remembered (each evaluation reports the compiler's log).
 *
 * The table is bounded: past MAX_MODULES entries that may be unloaded, the
 * least recently used of them are unloaded (cudaLibraryUnload) and rebuilt
 * from NVRTC's disk cache if needed again. CUDA does not say that unloading
 * waits for kernels still queued or running, and a captured CUDA graph
 * launches the kernel handle it captured, so an entry may be unloaded only
 * when nothing can launch it any more:
 *  - `launching` counts evaluations between kernel_of and the end of their
 *    launch (they hold the handle outside the lock): never while nonzero;
 *  - launches already queued: every device's stream is waited for before
 *    unloading, which a thread that is capturing cannot do (a wait breaks
 *    its capture), so it never unloads (the table may then hold a few more
 *    entries until a later build outside a capture);
 *  - CUDA graphs: an entry launched while its thread was capturing
 *    (`captured`) is never unloaded, as the graph cache (gpu/cuda/graph.c)
 *    may hold a graph that launches it for as long as the process runs and
 *    does not tell when it drops it. Only these entries can grow the table
 *    past the bound: one per custom kernel a captured tape used. */
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

/* The most entries kept that may be unloaded (see the invariants above). */
#define MAX_MODULES 256

struct module {
  uint64_t hash;
  int arch;
  char *src;
  void *lib; /* cudaLibrary_t */
  void *fn;  /* cudaKernel_t */
  unsigned long used; /* clock_tick at its last lookup */
  int launching;      /* evaluations holding fn until their launch is queued */
  bool captured;      /* launched by a thread capturing a CUDA graph: kept */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *table;
static size_t table_n, table_cap;
static unsigned long clock_tick;

/* Unloads least recently used entries that may be unloaded while there
 * are more than MAX_MODULES of them (the caller holds `lock` and is not
 * capturing). Nothing is unloaded when a device's stream cannot be waited
 * for: queued work might still run the kernels. */
static void evict_locked(void) {
  size_t can = 0;
  for (size_t i = 0; i < table_n; i++) can += !table[i].captured && !table[i].launching;
  if (can <= MAX_MODULES) return;
  for (int d = 0; d < lc_gpu_count(); d++)
    if (cudaStreamSynchronize((cudaStream_t)lc_gpu_stream(d)) != cudaSuccess) {
      (void)cudaGetLastError(); /* reported by whoever waits for that work */
      return;
    }
  for (; can > MAX_MODULES; can--) {
    size_t v = table_n;
    for (size_t i = 0; i < table_n; i++)
      if (!table[i].captured && !table[i].launching &&
          (v == table_n || table[i].used < table[v].used))
        v = i;
    (void)cudaLibraryUnload((cudaLibrary_t)table[v].lib);
    (void)cudaGetLastError();
    free(table[v].src);
    table[v] = table[--table_n];
  }
}

/* The launch's kernel for arch, built on first use and held for one launch
 * (give it back with kernel_done once the launch is queued, or not made);
 * NULL after reporting. capturing: this thread is capturing a CUDA graph. */
static void *kernel_of(const struct lc_ck_launch *L, int arch, bool capturing) {
  void *fn = NULL;
  char *log = NULL;
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < table_n && !fn; i++)
    if (table[i].hash == L->hash && table[i].arch == arch && !strcmp(table[i].src, L->src)) {
      fn = table[i].fn;
      table[i].used = ++clock_tick;
      table[i].launching++;
      table[i].captured |= capturing;
    }
  if (!fn) {
    size_t len = 0;
    void *bin = lc_ck_cubin(L->src, L->kname, arch, &len, &log);
    cudaLibrary_t lib = NULL;
    cudaKernel_t k;
    if (!bin) {
      why = "NVRTC could not compile it";
    } else if (cudaLibraryLoadData(&lib, bin, NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess) {
      why = "CUDA could not load the compiled module";
      lib = NULL;
    } else if (cudaLibraryGetKernel(&k, lib, L->kname) != cudaSuccess) {
      why = "the compiled module lacks the kernel";
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
    if (copy) {
      table[table_n++] = (struct module){L->hash, arch, copy, lib, fn, ++clock_tick, 1, capturing};
      if (!capturing) evict_locked();
    } else {
      /* not kept (a failed build, or out of memory): nothing launched it */
      if (lib) (void)cudaLibraryUnload(lib);
      (void)cudaGetLastError();
      if (fn) why = NULL, fn = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
  if (!fn) /* reported outside the lock: a handler may call back into lace */
    lc_error("%s: %s for sm_%d: %s%s%.700s", FN, L->kname, arch, why ? why : "out of memory",
             log && *log ? ":\n" : "", log ? log : "");
  free(log);
  return fn;
}

/* Gives back the hold kernel_of took on fn's entry. */
static void kernel_done(void *fn) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < table_n; i++)
    if (table[i].fn == fn && table[i].launching > 0) {
      table[i].launching--;
      break;
    }
  pthread_mutex_unlock(&lock);
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
  void *fn = kernel_of(L, 10 * maj + min, lc_cuda_capturing());
  if (!fn) return 1;
  /* from here on fn is held: every path ends at kernel_done */
  int64_t offs[L->nout];
  lc_tuple_layout(L->nout, L->out_bytes, offs);
  unsigned char *blob = NULL;
  int rc = shared_memory(fn, L->k->shared_memory, dev, L->kname);
  if (!rc && !(blob = calloc(1, (size_t)L->lay.size))) rc = lc_error("out of memory");
  if (rc) {
    kernel_done(fn);
    return 1;
  }
  if (lc_cuda_alloc_output(n)) {
    kernel_done(fn);
    free(blob);
    return 1;
  }
  void *stream = lc_gpu_stream(dev);
  rc = L->has_init ? fill_outputs(n, L, offs, stream) : 0;
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
  kernel_done(fn);
  free(blob);
  return lc_cuda_finish(n, rc);
}
#endif
