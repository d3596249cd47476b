/* Building and caching the GPU kernels of fused regions.
 *
 * A module (the kernels of one region under one launch plan, for one GPU
 * architecture) is found in three places, cheapest first:
 *  - the process's table, keyed by a hash of the region's blob (its shape
 *    excluded: kernels take shapes as arguments), the plan and the
 *    architecture: a hit costs one hash and one probe;
 *  - the disk cache (compile/jit.h's directory), a cubin named by the
 *    hash of the generated source, the architecture and NVRTC's version:
 *    a machine builds a kernel once, not once per process;
 *  - NVRTC, from fused_src.c's source, the cubin then written to disk
 *    (a private temporary renamed into place).
 * Invariants: the table only grows, under `lock`, which is also held while
 * a module is built (others wait for it rather than build it twice); a
 * module that failed is remembered (NULL kernels) and never retried;
 * nothing here reports through lc_error (the caller falls back to the CPU).
 *
 * The disk cache and the compiler serve custom kernels too (nvrtc.h,
 * eval_custom_kernel.c), under their own options.
 *
 * Environment: LACE_CUDA_VERBOSE=1 prints NVRTC's log (and the source) of
 * failed builds, =2 also the source of every kernel built. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/jit.h"
#include "core/hash.h"
#include "gpu/cuda/fused.h"
#include "gpu/cuda/nvrtc.h"

#define NAMES 3
static const char *const kernel_names[NAMES] = {"lc_fk_ew", "lc_fk_ewv", "lc_fk_rows"};

struct module {
  uint64_t key; /* 0: empty slot */
  void *fn[NAMES];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *table;
static size_t table_n, table_cap;
static long modules_built;
static int arch_of[64]; /* per device: 10 * major + minor, 0 until asked */

static int verbose(void) {
  const char *e = getenv("LACE_CUDA_VERBOSE");
  return e && *e ? atoi(e) : 0;
}


/* Compiles src (named `name` in messages) under opts; the cubin, or NULL
 * with NVRTC's log in *log (malloc'd; when log is not NULL). */
static void *compile_with(const char *src, const char *name, const char *const *opts, int nopts,
                          size_t *len, char **log) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL) != NVRTC_SUCCESS) return NULL;
  nvrtcResult rc = nvrtcCompileProgram(prog, nopts, opts);
  void *bin = NULL;
  if (rc != NVRTC_SUCCESS) {
    size_t n = 0;
    char *text = NULL;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && (text = malloc(n + 1)) &&
        nvrtcGetProgramLog(prog, text) != NVRTC_SUCCESS)
      text[0] = 0;
    if (text && verbose())
      fprintf(stderr, "lace: NVRTC failed (%s):\n%s\n--- source ---\n%s\n",
              nvrtcGetErrorString(rc), text, src);
    if (log) *log = text;
    else free(text);
  } else if (nvrtcGetCUBINSize(prog, len) == NVRTC_SUCCESS && (bin = malloc(*len))) {
    if (nvrtcGetCUBIN(prog, bin) != NVRTC_SUCCESS) {
      free(bin);
      bin = NULL;
    }
  }
  nvrtcDestroyProgram(&prog);
  return bin;
}

void *lc_nvrtc_compile(const char *src, int arch, size_t *len) {
  char archopt[48];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%d", arch);
  /* fmad off: a product and a sum round separately, as in the nvcc-built
   * kernels and on the CPU */
  const char *opts[] = {archopt, "-std=c++17", "--fmad=false", "-w"};
  return compile_with(src, "lace_fused.cu", opts, (int)(sizeof opts / sizeof *opts), len, NULL);
}

void *lc_nvrtc_cubin(const char *src, const char *name, int arch, const char *const *opts,
                     int nopts, size_t *len, char **log) {
  if (log) *log = NULL;
  int maj = 0, min = 0;
  nvrtcVersion(&maj, &min);
  /* fused kernels' names are the hash of their source alone (as ever) */
  uint64_t h = lc_fnv1a(LC_FNV_SEED, src, strlen(src));
  for (int k = 0; opts && k < nopts; k++) h = lc_fnv1a(h, opts[k], strlen(opts[k]) + 1);
  char dir[512], path[640], tmp[700];
  bool have_dir = lc_jit_cache_dir(dir, sizeof dir);
  if (have_dir) {
    snprintf(path, sizeof path, "%s/cuda-%016llx-sm%d-nvrtc%d.%d.cubin", dir,
             (unsigned long long)h, arch, maj, min);
    FILE *f = fopen(path, "rb");
    if (f) {
      void *bin = NULL;
      long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
      if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (bin = malloc((size_t)n)) &&
          fread(bin, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        *len = (size_t)n;
        return bin;
      }
      free(bin);
      fclose(f);
    }
  }
  if (verbose() >= 2) fprintf(stderr, "lace: building a CUDA kernel (%s):\n%s\n", name, src);
  void *bin = opts ? compile_with(src, name, opts, nopts, len, log) : lc_nvrtc_compile(src, arch, len);
  if (bin && have_dir) {
    snprintf(tmp, sizeof tmp, "%s/.cuda-%016llx-%ld.tmp", dir, (unsigned long long)h, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f) {
      bool ok = fwrite(bin, 1, *len, f) == *len;
      ok = fclose(f) == 0 && ok;
      if (!ok || rename(tmp, path) != 0) remove(tmp);
    }
  }
  return bin;
}

static struct module *find(uint64_t key) {
  for (size_t i = key & (table_cap - 1);; i = (i + 1) & (table_cap - 1))
    if (!table[i].key || table[i].key == key) return &table[i];
}

static bool grow(void) {
  size_t cap = table_cap ? 2 * table_cap : 64;
  struct module *old = table, *nt = calloc(cap, sizeof *nt);
  if (!nt) return false;
  size_t oc = table_cap;
  table = nt;
  table_cap = cap;
  for (size_t i = 0; i < oc; i++)
    if (old[i].key) *find(old[i].key) = old[i];
  free(old);
  return true;
}

/* Builds and loads the module of (h, p) for arch into m->fn. */
static void build(struct module *m, const struct lc_fused_hdr *h, const struct lc_fk_plan *p, int arch) {
  char *src = lc_fk_source(h, p);
  if (!src) return;
  size_t len = 0;
  void *bin = lc_nvrtc_cubin(src, "lace_fused.cu", arch, NULL, 0, &len, NULL);
  free(src);
  if (!bin) return;
  cudaLibrary_t lib;
  if (cudaLibraryLoadData(&lib, bin, NULL, NULL, 0, NULL, NULL, 0) == cudaSuccess) {
    for (int k = 0; k < NAMES; k++) {
      cudaKernel_t fn;
      if (cudaLibraryGetKernel(&fn, lib, kernel_names[k]) == cudaSuccess) m->fn[k] = (void *)fn;
    }
    modules_built++; /* the library stays loaded for the process's lifetime */
  }
  (void)cudaGetLastError(); /* a missing kernel is not an error of later calls */
  free(bin);
}

void *lc_fk_kernel(const struct lc_fused_hdr *h, const struct lc_fk_plan *p, int dev, const char *name) {
  int which = -1;
  for (int k = 0; k < NAMES; k++)
    if (strcmp(name, kernel_names[k]) == 0) which = k;
  if (which < 0 || dev < 0 || dev >= 64) return NULL;
  pthread_mutex_lock(&lock);
  if (!arch_of[dev]) {
    int maj = 0, min = 0;
    if (cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
      arch_of[dev] = 10 * maj + min;
    else
      (void)cudaGetLastError();
  }
  int arch = arch_of[dev];
  uint64_t key = lc_fnv1a(LC_FNV_SEED, h, (size_t)h->shape_off);
  key = lc_fnv1a(key, (const char *)h + h->in_off, (size_t)(h->size - h->in_off));
  key = lc_fnv1a(key, p, sizeof *p);
  key = lc_fnv1a(key, &arch, sizeof arch);
  if (!key) key = 1;
  void *fn = NULL;
  struct module *m = table_cap ? find(key) : NULL;
  if (m && m->key) {
    fn = m->fn[which];
  } else if (arch && (table_n + 1 <= table_cap / 2 || grow())) {
    m = find(key);
    m->key = key;
    table_n++;
    build(m, h, p, arch);
    fn = m->fn[which];
  }
  pthread_mutex_unlock(&lock);
  return fn;
}

long lc_fk_modules(void) {
  pthread_mutex_lock(&lock);
  long n = modules_built;
  pthread_mutex_unlock(&lock);
  return n;
}
#endif
