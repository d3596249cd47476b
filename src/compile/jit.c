/* Native code for fused elementwise regions.
 *
 * The tile interpreter (kernel.c) runs a region one primitive at a time
 * over cache-resident tiles; every value makes a round trip through L1.
 * For float32 regions of the common arithmetic and math primitives, this
 * file instead writes the region as one C loop (values stay in registers),
 * builds it once with the system C compiler into a shared object, caches it
 * on disk and loads it with dlopen. The generated code calls the same
 * functions as the elementwise kernels (ops/vmath.h, embedded at build
 * time) and is built, like them, without FMA contraction, so a native
 * kernel gives the interpreter's (and the uncompiled ops') bits exactly.
 *
 * Invariants:
 *  - a kernel's object on disk is named by the hash of its source text,
 *    which encodes everything it depends on (instructions, which inputs
 *    are scalars, the target ISA level); in the process it is found by a
 *    cheaper key over the same facts taken from the region's description;
 *  - the process-wide table of kernels only grows, under `lock`; a
 *    kernel is built once: by a background builder thread (callers run
 *    the interpreter until it is ready, so no call waits for a compiler),
 *    or, with LACE_JIT_SYNC=1, by the first caller; a failed build is
 *    remembered (NULL) and never retried, and callers interpret;
 *  - nothing here reports errors: the JIT is an optimisation only.
 *
 * Environment: LACE_JIT=0 disables it; LACE_JIT_MIN (elements, default
 * 1M) is the smallest region it builds for (a build costs tens of
 * milliseconds, once per kernel per machine); LACE_JIT_SYNC=1 builds in
 * the calling thread (tests, benchmarks); LACE_JIT_CACHE sets the
 * directory (default $XDG_CACHE_HOME/lace, ~/.cache/lace, or
 * /tmp/lace-jit-<uid>); CC the compiler (default cc). */
#include "compile/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/strbuf.h"
#include "ops/prim.h"
#include "vmath_src.h"

extern char **environ;

/* ---- source generation ---- */

/* Appends the C expression of instruction x over operands a and b (names);
 * false when the primitive has no float32 expression here. The expressions
 * must stay those of the float32 loops in ops/unary.c and ops/binary.c
 * (test_compile_jit compares, NaNs included). */
static bool expr(struct lc_strbuf *s, const struct lc_fused_ins *x, const char *a, const char *b) {
  switch (x->op) {
  case LC_OP_ADD: lc_strbuf_put(s, "%s + %s", a, b); return true;
  case LC_OP_SUBTRACT: lc_strbuf_put(s, "%s - %s", a, b); return true;
  case LC_OP_MULTIPLY: lc_strbuf_put(s, "%s * %s", a, b); return true;
  case LC_OP_DIVIDE: lc_strbuf_put(s, "%s / %s", a, b); return true;
  case LC_OP_MAXIMUM: lc_strbuf_put(s, "((%s > %s || %s != %s) ? %s : %s)", a, b, a, a, a, b); return true;
  case LC_OP_MINIMUM: lc_strbuf_put(s, "((%s < %s || %s != %s) ? %s : %s)", a, b, a, a, a, b); return true;
  case LC_OP_NEGATIVE: lc_strbuf_put(s, "-%s", a); return true;
  case LC_OP_ABS: lc_strbuf_put(s, "__builtin_fabsf(%s)", a); return true;
  case LC_OP_SQUARE: lc_strbuf_put(s, "%s * %s", a, a); return true;
  case LC_OP_SQRT: lc_strbuf_put(s, "__builtin_sqrtf(%s)", a); return true;
  case LC_OP_RSQRT: lc_strbuf_put(s, "1.0f / __builtin_sqrtf(%s)", a); return true;
  case LC_OP_EXP: lc_strbuf_put(s, "lc_vexpf(%s)", a); return true;
  case LC_OP_LOG: lc_strbuf_put(s, "lc_vlogf(%s)", a); return true;
  case LC_OP_TANH: lc_strbuf_put(s, "lc_vtanhf(%s)", a); return true;
  case LC_OP_SIGMOID: lc_strbuf_put(s, "lc_vsigmoidf(%s)", a); return true;
  case LC_OP_ERF: lc_strbuf_put(s, "lc_verff(%s)", a); return true;
  case LC_OP_ASTYPE: lc_strbuf_put(s, "%s", a); return true; /* float32 -> float32 only */
  default: return false;
  }
}

static bool eligible(const struct lc_fused_hdr *h) {
  if (h->rows || h->ninstr < 1) return false;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  for (int k = 0; k < h->nin; k++)
    if (fin[k].dtype != MLX_FLOAT32) return false;
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &fi[m];
    if (x->dtype != MLX_FLOAT32 || x->in_dt != MLX_FLOAT32 || x->nin > 2) return false;
    struct lc_strbuf probe = {0};
    bool ok = expr(&probe, x, "a", "b");
    free(probe.data);
    if (!ok) return false;
  }
  return true;
}

/* The ISA level the kernel is built for (part of its identity). */
static const char *isa_flag(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "-march=x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "-march=x86-64-v3";
#endif
  return "-O3"; /* baseline x86-64 (a harmless repeat of -O3) */
}

/* Operand name of argument a of an instruction. */
static void operand(char *buf, size_t len, int a) {
  if (a < 0)
    snprintf(buf, len, "x%d", -a - 1);
  else
    snprintf(buf, len, "t%d", a);
}

/* One loop body: loads (stride expression per input), the instructions,
 * the stores. */
static void body(struct lc_strbuf *s, const struct lc_fused_hdr *h, unsigned scalars, bool unit) {
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  for (int k = 0; k < h->nin; k++) {
    if (scalars >> k & 1) continue;
    if (unit)
      lc_strbuf_put(s, "    const float x%d = i%d[i];\n", k, k);
    else
      lc_strbuf_put(s, "    const float x%d = i%d[i * s%d];\n", k, k, k);
  }
  for (int m = 0; m < h->ninstr; m++) {
    char a[24] = "", b[24] = "";
    operand(a, sizeof a, fi[m].arg[0]);
    if (fi[m].nin > 1) operand(b, sizeof b, fi[m].arg[1]);
    lc_strbuf_put(s, "    const float t%d = ", m);
    expr(s, &fi[m], a, b);
    lc_strbuf_put(s, ";\n");
    if (fi[m].out >= 0) lc_strbuf_put(s, "    o%d[i] = t%d;\n", fi[m].out, m);
  }
}

/* The kernel's C source; NULL when out of memory. */
static char *generate(const struct lc_fused_hdr *h, unsigned scalars, const char *isa) {
  struct lc_strbuf s = {0};
  /* The header names the build flags that matter for the bits, so that a
   * kernel built under other flags (an older cache) has another name. */
  lc_strbuf_put(&s, "/* lace fused kernel (%s, fp-contract=off) */\n%s\n", isa, lc_vmath_src);
  lc_strbuf_put(&s, "void lace_fused(long n, void *const *out, const void *const *in, const long *is) {\n");
  for (int k = 0; k < h->nin; k++) {
    if (scalars >> k & 1)
      lc_strbuf_put(&s, "  const float x%d = *(const float *)in[%d];\n", k, k);
    else
      lc_strbuf_put(&s, "  const float *i%d = in[%d];\n  const long s%d = is[%d];\n", k, k, k, k);
  }
  for (int o = 0; o < h->nout; o++) lc_strbuf_put(&s, "  float *o%d = out[%d];\n", o, o);
  lc_strbuf_put(&s, "  if (1");
  for (int k = 0; k < h->nin; k++)
    if (!(scalars >> k & 1)) lc_strbuf_put(&s, " && s%d == 1", k);
  lc_strbuf_put(&s, ") {\n  for (long b = 0; b < n; b += 64) {\n    long e = b + 64 < n ? b + 64 : n;\n");
  /* streamed inputs are prefetched 8 KiB ahead, a block of 64 at a time,
   * so that memory traffic overlaps the arithmetic (the hardware prefetcher
   * alone lags behind: gelu 5.6 -> 5.2 ms, BENCHMARKS.md) */
  for (int k = 0; k < h->nin; k++)
    if (!(scalars >> k & 1))
      for (int q = 0; q < 4; q++) lc_strbuf_put(&s, "    __builtin_prefetch(i%d + b + 2048 + %d);\n", k, 16 * q);
  lc_strbuf_put(&s, "  for (long i = b; i < e; i++) {\n");
  body(&s, h, scalars, true);
  lc_strbuf_put(&s, "  }\n  }\n  } else {\n  for (long i = 0; i < n; i++) {\n");
  body(&s, h, scalars, false);
  lc_strbuf_put(&s, "  }\n  }\n}\n");
  /* params are unused by the whitelisted primitives: nothing else to add */
  if (s.oom) {
    free(s.data);
    return NULL;
  }
  return s.data;
}

static uint64_t fnv1a(const char *p) { return lc_fnv1a(LC_FNV_SEED, p, strlen(p)); }

/* ---- building and loading ---- */

bool lc_jit_cache_dir(char *buf, size_t len) {
  const char *e = getenv("LACE_JIT_CACHE");
  int k;
  if (e && *e)
    k = snprintf(buf, len, "%s", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e)
    k = snprintf(buf, len, "%s/lace", e);
  else if ((e = getenv("HOME")) && *e)
    k = snprintf(buf, len, "%s/.cache/lace", e);
  else
    k = snprintf(buf, len, "/tmp/lace-jit-%u", (unsigned)getuid());
  if (k <= 0 || (size_t)k >= len) return false;
  /* create the path's missing directories */
  for (char *q = buf + 1; *q; q++) {
    if (*q != '/') continue;
    *q = 0;
    mkdir(buf, 0700);
    *q = '/';
  }
  if (mkdir(buf, 0700) != 0 && errno != EEXIST) return false;
  /* code is loaded from here: only a directory of ours that nobody else
   * can write to will do */
  struct stat st;
  return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
         !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Builds src_c into so through a shell that compiles to tmp_so, renames it
 * into place and removes the temporaries, so that a build still running
 * when this process exits completes for the next one. True when the
 * shell exited with status 0. */
static bool run_build(const char *isa, const char *src_c, const char *tmp_so, const char *so) {
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  static const char script[] =
      "\"$0\" -O3 \"$1\" -std=c17 -fPIC -shared -fno-math-errno -fno-trapping-math "
      "-ffp-contract=off -w -o \"$2\" \"$3\" && mv -f \"$2\" \"$4\"; s=$?; "
      "rm -f \"$2\" \"$3\"; exit $s";
  char *argv[] = {"sh", "-c",         (char *)script, (char *)cc, (char *)isa,
                  (char *)tmp_so, (char *)src_c, (char *)so, NULL};
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa)) return false;
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, "sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) return false;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Loads (building it first if needed) the kernel of source src. */
static lc_jit_fn build_and_load(const char *src, uint64_t hash, const char *isa) {
  char dir[512], so[640], tmp_c[700], tmp_so[700];
  if (!lc_jit_cache_dir(dir, sizeof dir)) return NULL;
  snprintf(so, sizeof so, "%s/fused-%016llx.so", dir, (unsigned long long)hash);
  void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    /* private temporaries, renamed into place: concurrent processes never
     * see a partial object */
    snprintf(tmp_c, sizeof tmp_c, "%s/.fused-%016llx-%ld.c", dir, (unsigned long long)hash,
             (long)getpid());
    snprintf(tmp_so, sizeof tmp_so, "%s/.fused-%016llx-%ld.so", dir, (unsigned long long)hash,
             (long)getpid());
    FILE *f = fopen(tmp_c, "w");
    if (!f) return NULL;
    bool ok = fputs(src, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || !run_build(isa, tmp_c, tmp_so, so)) {
      remove(tmp_c);
      return NULL;
    }
    lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
  }
  lc_jit_fn fn;
  void *sym = dlsym(lib, "lace_fused");
  memcpy(&fn, &sym, sizeof fn);
  return fn; /* the library stays loaded for the process's lifetime */
}

/* ---- the table of kernels and the builder ---- */

struct entry {
  uint64_t key; /* 0: empty slot */
  lc_jit_fn fn; /* NULL: not built (yet), failed, or not eligible */
};

/* A kernel to build in the background. */
struct job {
  uint64_t key;  /* its table entry */
  uint64_t hash; /* of its source: the object's name on disk */
  char *src;
  const char *isa; /* a string literal */
  struct job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static struct entry *table; /* open addressing, cap a power of two */
static size_t table_n, table_cap;
static struct job *queue; /* pending builds, newest first */
static bool builder_started;

static struct entry *find(uint64_t key) {
  for (size_t i = key & (table_cap - 1);; i = (i + 1) & (table_cap - 1))
    if (!table[i].key || table[i].key == key) return &table[i];
}

static bool grow(void) {
  size_t cap = table_cap ? 2 * table_cap : 64;
  struct entry *old = table, *nt = calloc(cap, sizeof *nt);
  if (!nt) return false;
  size_t oc = table_cap;
  table = nt;
  table_cap = cap;
  for (size_t i = 0; i < oc; i++)
    if (old[i].key) *find(old[i].key) = old[i];
  free(old);
  return true;
}

/* Records a finished build; call with lock held. */
static void finish(uint64_t key, lc_jit_fn fn) {
  find(key)->fn = fn;
}

/* The builder thread: builds queued kernels one at a time, for the life of
 * the process (a build cut short by exit leaves only temporaries). */
static void *builder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!queue) pthread_cond_wait(&work, &lock);
    struct job *j = queue;
    queue = j->next;
    pthread_mutex_unlock(&lock);
    lc_jit_fn fn = build_and_load(j->src, j->hash, j->isa);
    pthread_mutex_lock(&lock);
    finish(j->key, fn);
    free(j->src);
    free(j);
  }
  return NULL;
}

long lc_jit_kernels(void) {
  long k = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < table_cap; i++) k += table[i].key && table[i].fn;
  pthread_mutex_unlock(&lock);
  return k;
}

int64_t lc_jit_min_size(void) {
  const char *e = getenv("LACE_JIT");
  if (e && strcmp(e, "0") == 0) return -1;
  e = getenv("LACE_JIT_MIN");
  return e && *e ? atoll(e) : (int64_t)1 << 20;
}


/* The table key of a region: everything its source depends on (not its
 * shape), cheap enough to compute on every evaluation. */
static uint64_t region_key(const struct lc_fused_hdr *h, unsigned scalars, const char *isa) {
  uint64_t k = fnv1a(isa);
  int32_t counts[4] = {h->nin, h->ninstr, h->nout, (int32_t)scalars};
  k = lc_fnv1a(k, counts, sizeof counts);
  k = lc_fnv1a(k, lc_fused_ins_in(h), sizeof(struct lc_fused_in) * (size_t)h->nin);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  for (int m = 0; m < h->ninstr; m++) {
    int32_t v[4 + LC_FUSED_MAXARG + 1] = {fi[m].op, fi[m].dtype, fi[m].in_dt, fi[m].nin};
    for (int a = 0; a < LC_FUSED_MAXARG; a++) v[4 + a] = a < fi[m].nin ? fi[m].arg[a] : 0;
    v[4 + LC_FUSED_MAXARG] = fi[m].out;
    k = lc_fnv1a(k, v, sizeof v);
  }
  return k ? k : 1; /* 0 marks empty slots */
}

lc_jit_fn lc_jit_get(const struct lc_fused_hdr *h, unsigned scalars) {
  if (h->nin > 32) return NULL;
  const char *isa = isa_flag();
  uint64_t key = region_key(h, scalars, isa);
  lc_jit_fn fn = NULL;
  pthread_mutex_lock(&lock);
  struct entry *e = table_cap ? find(key) : NULL;
  bool known = e && e->key; /* built, failed, being built, or not eligible */
  if (known) fn = e->fn;
  pthread_mutex_unlock(&lock);
  if (known) return fn;
  /* first sight of this region: its source (outside the lock) */
  char *src = eligible(h) ? generate(h, scalars, isa) : NULL;
  uint64_t hash = src ? fnv1a(src) : 0;
  const char *sync_env = getenv("LACE_JIT_SYNC");
  bool sync = sync_env && strcmp(sync_env, "0") != 0;
  pthread_mutex_lock(&lock);
  if (table_n + 1 > table_cap / 2 && !grow()) goto out;
  e = find(key);
  if (e->key) { /* another thread got here first */
    fn = e->fn;
    goto out;
  }
  e->key = key;
  table_n++;
  if (!src) goto out; /* not eligible (or out of memory): interpreted for good */
  if (!sync) {
    struct job *j = malloc(sizeof *j);
    if (!builder_started && j) {
      pthread_t t;
      pthread_attr_t at;
      builder_started = pthread_attr_init(&at) == 0 &&
                        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
                        pthread_create(&t, &at, builder, NULL) == 0;
      pthread_attr_destroy(&at);
    }
    if (j && builder_started) {
      *j = (struct job){key, hash, src, isa, queue};
      queue = j;
      src = NULL; /* the job owns it */
      pthread_cond_signal(&work);
      goto out; /* interpreted until the build is done */
    }
    free(j);
  }
  /* synchronous: build here; other callers of this kernel meanwhile see it
   * as being built and interpret */
  pthread_mutex_unlock(&lock);
  fn = build_and_load(src, hash, isa);
  pthread_mutex_lock(&lock);
  finish(key, fn);
out:
  pthread_mutex_unlock(&lock);
  free(src);
  return fn;
}
