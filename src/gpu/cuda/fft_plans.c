/* The cuFFT plan cache (the contract is in gpu/cuda/fft_plans.h).
 *
 * At most NPLANS plans, guarded by one lock that is also held while a plan
 * is given its stream and work area and executed, so that one plan never
 * serves two callers at once. When full, the least recently used plan is
 * destroyed after its device's stream has drained (cuFFT frees the plan's
 * tables, which queued transforms may still read); the FFT evaluator never
 * runs while a CUDA graph is captured, so that wait is allowed there. */
#ifdef LACE_CUDA
#include "gpu/cuda/fft_plans.h"

#include <cuda_runtime_api.h>
#include <cufft.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "gpu/gpu.h"

#define NPLANS 32

struct plan {
  bool used;
  int dev, kind, rank;
  long long n[LC_CUFFT_MAX_RANK], batch;
  cufftHandle h;
  size_t work; /* work-area bytes */
  unsigned long tick;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct plan plans[NPLANS];
static unsigned long clock_tick;

static int fft_check(cufftResult r, const char *what, const char *call) {
  return r == CUFFT_SUCCESS ? 0
                            : lc_error("%s on the GPU: cuFFT %s failed (error %d)", what, call,
                                       (int)r);
}

static bool same(const struct plan *p, int dev, int kind, int rank, const long long *n,
                 long long batch) {
  return p->used && p->dev == dev && p->kind == kind && p->rank == rank && p->batch == batch &&
         !memcmp(p->n, n, sizeof(long long) * (size_t)rank);
}

static void destroy(struct plan *p) {
  if (!p->used) return;
  (void)cudaSetDevice(p->dev);
  (void)cudaStreamSynchronize(lc_gpu_stream(p->dev));
  (void)cufftDestroy(p->h);
  (void)cudaGetLastError();
  memset(p, 0, sizeof *p);
}

/* The plan for the key, made in a free or the least recently used slot
 * (lock held). NULL after reporting. */
static struct plan *get(int dev, int kind, int rank, const long long *n, long long batch,
                        const char *what) {
  struct plan *v = &plans[0];
  for (int i = 0; i < NPLANS; i++) {
    if (same(&plans[i], dev, kind, rank, n, batch)) {
      plans[i].tick = ++clock_tick;
      return &plans[i];
    }
    if (!v->used) continue;
    if (!plans[i].used || plans[i].tick < v->tick) v = &plans[i];
  }
  destroy(v);
  if (cudaSetDevice(dev) != cudaSuccess) { /* destroy switched to the victim's device */
    (void)cudaGetLastError();
    lc_error("%s on the GPU: cannot use GPU %d", what, dev);
    return NULL;
  }
  struct plan p = {.dev = dev, .kind = kind, .rank = rank, .batch = batch};
  memcpy(p.n, n, sizeof(long long) * (size_t)rank);
  cufftType type = kind == LC_CUFFT_C2C ? CUFFT_C2C : kind == LC_CUFFT_R2C ? CUFFT_R2C : CUFFT_C2R;
  if (fft_check(cufftCreate(&p.h), what, "plan creation")) return NULL;
  int rc = fft_check(cufftSetAutoAllocation(p.h, 0), what, "set auto allocation");
  if (!rc)
    rc = fft_check(cufftMakePlanMany64(p.h, rank, p.n, NULL, 1, 0, NULL, 1, 0, type, batch,
                                       &p.work),
                   what, "plan");
  if (rc) {
    (void)cufftDestroy(p.h);
    (void)cudaGetLastError();
    return NULL;
  }
  p.used = true;
  p.tick = ++clock_tick;
  *v = p;
  return v;
}

int lc_cuda_fft_exec(int dev, enum lc_cufft_kind kind, int rank, const int64_t *n, int64_t batch,
                     bool inverse, void *in, void *out, const char *what) {
  if (rank < 1 || rank > LC_CUFFT_MAX_RANK || batch < 1)
    return lc_error("%s on the GPU: invalid transform (rank %d, batch %lld)", what, rank,
                    (long long)batch);
  long long ln[LC_CUFFT_MAX_RANK];
  for (int i = 0; i < rank; i++) ln[i] = n[i];
  if (cudaSetDevice(dev) != cudaSuccess) { /* plans belong to the current device */
    (void)cudaGetLastError();
    return lc_error("%s on the GPU: cannot use GPU %d", what, dev);
  }
  pthread_mutex_lock(&lock);
  struct plan *p = get(dev, kind, rank, ln, batch, what);
  void *work = NULL;
  size_t work_bytes = p ? p->work : 0;
  int rc = !p;
  if (!rc && work_bytes && !(work = lc_gpu_malloc(work_bytes, dev))) rc = 1;
  if (!rc)
    rc = fft_check(cufftSetStream(p->h, (cudaStream_t)lc_gpu_stream(dev)), what, "set stream");
  if (!rc && work) rc = fft_check(cufftSetWorkArea(p->h, work), what, "set work area");
  if (!rc) {
    cufftResult r;
    if (kind == LC_CUFFT_C2C)
      r = cufftExecC2C(p->h, in, out, inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
    else if (kind == LC_CUFFT_R2C)
      r = cufftExecR2C(p->h, in, out);
    else
      r = cufftExecC2R(p->h, in, out);
    rc = fft_check(r, what, "execution");
  }
  pthread_mutex_unlock(&lock);
  if (work) lc_gpu_free(work, work_bytes, dev); /* stream-ordered: the transform is queued */
  return rc;
}
#endif
