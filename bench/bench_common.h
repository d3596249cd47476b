/* Shared helpers of the benchmark programs: a clock, best-of-N / median
 * timing, a STREAM-style copy bandwidth measurement and the one-line
 * result format. Header-only; each bench_*.c includes it once.
 *
 * Output: one line per case, whitespace-separated key=value fields after a
 * fixed "BENCH" tag, so that people can read it and scripts (compare_numpy.py)
 * can parse it:
 *   BENCH <suite>/<case> shape=<d0xd1..> dtype=<t> best_ms=<f> median_ms=<f>
 *         [GBps=<f>] [GFLOPs=<f>] [copy_frac=<f>] [note=<word>]
 * A case whose operation lace does not implement yet prints
 *   BENCH <suite>/<case> ... skipped=not-implemented
 * Environment: LACE_BENCH_MIN_TIME (seconds per case, default 0.3),
 * LACE_BENCH_COPY_MB (size of the memory-bandwidth copy, default twice the L3
 * cache, 64..1024 MiB). */
#ifndef LACE_BENCH_COMMON_H
#define LACE_BENCH_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mlx/c/mlx.h"

static double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_env_double(const char *name, double dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end = NULL;
  double v = strtod(s, &end);
  return (end && *end == 0 && v > 0) ? v : dflt;
}

/* ---- timing ---- */

typedef struct {
  double best;   /* seconds */
  double median; /* seconds */
  int reps;
  int failed; /* the function returned non-zero */
} bench_stats;

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define BENCH_MAX_REPS 64

/* Runs fn(ctx) once to warm up, then repeatedly: at least 3 times and until
 * LACE_BENCH_MIN_TIME seconds are spent (at most BENCH_MAX_REPS runs).
 * A non-zero return from fn stops the measurement and sets .failed. */
static bench_stats bench_time(int (*fn)(void *ctx), void *ctx) {
  bench_stats st = {0, 0, 0, 0};
  double min_time = bench_env_double("LACE_BENCH_MIN_TIME", 0.3);
  double t[BENCH_MAX_REPS];
  if (fn(ctx)) {
    st.failed = 1;
    return st;
  }
  double start = bench_now();
  int n = 0;
  while (n < BENCH_MAX_REPS && (n < 3 || bench_now() - start < min_time)) {
    double t0 = bench_now();
    if (fn(ctx)) {
      st.failed = 1;
      return st;
    }
    t[n++] = bench_now() - t0;
  }
  qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
  st.best = t[0];
  st.median = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  st.reps = n;
  return st;
}

/* ---- errors: remember lace's last message, to tell "not implemented" apart ---- */

static char bench_last_error[512];

static void bench_error_handler(const char *msg, void *data) {
  (void)data;
  snprintf(bench_last_error, sizeof bench_last_error, "%s", msg);
}

static void bench_init(void) { mlx_set_error_handler(bench_error_handler, NULL, NULL); }

static int bench_not_implemented(void) { return strstr(bench_last_error, "not implemented") != NULL; }

/* ---- output ---- */

static void bench_shape_str(char *buf, size_t cap, const int *shape, int ndim) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < ndim && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, i ? "x%d" : "%d", shape[i]);
}

/* Prints one result line. bytes: memory traffic of one run (0: not
 * reported); flops: floating-point operations of one run (0: not reported);
 * copy_bw: the reference copy bandwidth in bytes/s (0: no copy_frac). */
static void bench_report(const char *name, const int *shape, int ndim, const char *dtype,
                         bench_stats st, double bytes, double flops, double copy_bw,
                         const char *note) {
  char sh[128];
  bench_shape_str(sh, sizeof sh, shape, ndim);
  printf("BENCH %-24s shape=%-14s dtype=%s", name, sh, dtype);
  if (st.failed) {
    printf(" skipped=%s\n", bench_not_implemented() ? "not-implemented" : "error");
    if (!bench_not_implemented()) fprintf(stderr, "  %s: %s\n", name, bench_last_error);
    fflush(stdout);
    return;
  }
  printf(" best_ms=%.4f median_ms=%.4f", st.best * 1e3, st.median * 1e3);
  if (bytes > 0) printf(" GBps=%.2f", bytes / st.best * 1e-9);
  if (flops > 0) printf(" GFLOPs=%.2f", flops / st.best * 1e-9);
  if (bytes > 0 && copy_bw > 0) printf(" copy_frac=%.2f", bytes / st.best / copy_bw);
  if (note && *note) printf(" note=%s", note);
  printf("\n");
  fflush(stdout);
}

/* ---- STREAM-style copy bandwidth ----
 * Copies a buffer of LACE_BENCH_COPY_MB MiB (default: twice the L3 cache,
 * clamped to 64..1024 MiB) into another, split over nthreads threads, either
 * with memcpy or with a plain loop. Bandwidth counts read + write bytes
 * (2 * size), as STREAM does. */

static int bench_threads(void) {
  const char *s = getenv("LACE_NUM_THREADS");
  int n = s ? atoi(s) : 0;
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
    if (n > 8) n = 8; /* lace's pool default */
  }
  return n;
}

static size_t bench_copy_bytes(void) {
  double mb = bench_env_double("LACE_BENCH_COPY_MB", 0);
  if (mb <= 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    mb = l3 > 0 ? 2.0 * (double)l3 / (1 << 20) : 256;
    if (mb < 64) mb = 64;
    if (mb > 1024) mb = 1024;
  }
  return ((size_t)mb << 20) & ~(size_t)63;
}

typedef struct {
  float *dst;
  const float *src;
  size_t n; /* floats */
  int use_memcpy;
} bench_copy_part;

/* Keep GCC from turning the plain loop into a memcpy call. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static void *bench_copy_worker(void *arg) {
  bench_copy_part *p = arg;
  if (p->use_memcpy) {
    memcpy(p->dst, p->src, p->n * sizeof(float));
  } else {
    float *restrict d = p->dst;
    const float *restrict s = p->src;
    for (size_t i = 0; i < p->n; i++) d[i] = s[i];
  }
  return NULL;
}

typedef struct {
  float *dst, *src;
  size_t n;
  int nthreads, use_memcpy;
} bench_copy_ctx;

static int bench_copy_run(void *arg) {
  bench_copy_ctx *c = arg;
  pthread_t th[64];
  bench_copy_part parts[64];
  int nt = c->nthreads > 64 ? 64 : c->nthreads;
  size_t chunk = (c->n / (size_t)nt) & ~(size_t)15;
  for (int i = 0; i < nt; i++) {
    size_t lo = (size_t)i * chunk, hi = i == nt - 1 ? c->n : lo + chunk;
    parts[i] = (bench_copy_part){c->dst + lo, c->src + lo, hi - lo, c->use_memcpy};
  }
  for (int i = 1; i < nt; i++)
    if (pthread_create(&th[i], NULL, bench_copy_worker, &parts[i])) return 1;
  bench_copy_worker(&parts[0]);
  for (int i = 1; i < nt; i++) pthread_join(th[i], NULL);
  return 0;
}

/* Measures and prints copy bandwidth for memcpy and a loop, with one thread
 * and with nthreads, copying `bytes` (0: bench_copy_bytes(), the memory
 * bandwidth). Returns the best bandwidth seen (bytes/s), a reference for
 * copy_frac; 0 if the buffers cannot be allocated. */
static double bench_copy_bandwidth(int nthreads, size_t bytes) {
  if (!bytes) bytes = bench_copy_bytes();
  size_t n = bytes / sizeof(float);
  float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
  if (!a || !b) {
    free(a);
    free(b);
    fprintf(stderr, "bench: cannot allocate 2 x %zu MiB for the copy test\n", bytes >> 20);
    return 0;
  }
  /* touch every page first, so page faults are not timed */
  for (size_t i = 0; i < n; i++) a[i] = (float)(i & 1023), b[i] = 0;
  double best = 0;
  int counts[2] = {1, nthreads};
  for (int k = 0; k < (nthreads > 1 ? 2 : 1); k++) {
    for (int m = 1; m >= 0; m--) {
      bench_copy_ctx c = {b, a, n, counts[k], m};
      bench_stats st = bench_time(bench_copy_run, &c);
      char name[64];
      snprintf(name, sizeof name, "copy/%s_t%d", m ? "memcpy" : "loop", counts[k]);
      int shape[1] = {(int)(bytes >> 20)};
      bench_report(name, shape, 1, "MiB", st, 2.0 * (double)bytes, 0, 0, "");
      if (!st.failed && 2.0 * (double)bytes / st.best > best) best = 2.0 * (double)bytes / st.best;
    }
  }
  if (b[n - 1] != a[n - 1]) fprintf(stderr, "bench: copy check failed\n");
  free(a);
  free(b);
  return best;
}

#endif
