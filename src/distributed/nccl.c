/* The NCCL backend (MLX's "nccl"): collectives between GPUs, NCCL loaded
 * at run time with dlopen so lace never links it. CUDA builds only.
 *
 * A communicator is bound to one GPU (the process's local rank modulo the
 * GPU count). Its functions take that GPU's memory, queued on the GPU's
 * stream (lc_gpu_stream) without waiting, or host memory, staged through
 * a device buffer and waited for (the CPU path of the primitives and the
 * size checks of prims.c). Calls on one communicator are serialised by
 * its lock: NCCL requires one caller at a time.
 *
 * Ranks: under an Open MPI launcher (OMPI_COMM_WORLD_SIZE > 1) every rank
 * of the world; the NCCL unique id goes from rank 0 to the others through
 * the MPI backend. Without one, a strict init gives a communicator of one
 * rank; a non-strict one the singleton group (as MLX's, which then has no
 * NCCL world).
 *
 * Reductions take NCCL's dtypes (float32/16/64, bfloat16, int8/32/64,
 * uint8/32/64); all_gather, send and recv move any dtype as bytes.
 * ABI values (ncclResult_t, ncclDataType_t, ncclRedOp_t) are NCCL 2's,
 * fixed since 2.0; ncclCommSplit needs NCCL >= 2.18. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/error.h"
#include "distributed/backend.h"
#include "gpu/gpu.h"

typedef struct nccl_comm_s *nccl_comm_t;
typedef struct {
  char internal[128];
} nccl_id;

enum { NCCL_OK = 0 };
enum { NC_SUM = 0, NC_MAX = 2, NC_MIN = 3 };
enum { NC_I8 = 0, NC_U8, NC_I32, NC_U32, NC_I64, NC_U64, NC_F16, NC_F32, NC_F64, NC_BF16 };

/* Entry points; read-only once loaded. */
static struct {
  void *lib;
  int (*get_version)(int *);
  int (*get_unique_id)(nccl_id *);
  int (*comm_init_rank)(nccl_comm_t *, int, nccl_id, int);
  int (*comm_destroy)(nccl_comm_t);
  int (*comm_count)(nccl_comm_t, int *);
  int (*comm_user_rank)(nccl_comm_t, int *);
  int (*comm_split)(nccl_comm_t, int, int, nccl_comm_t *, void *); /* optional */
  const char *(*error_string)(int);
  int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
  int (*all_gather)(const void *, void *, size_t, int, nccl_comm_t, void *);
  int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm_t, void *);
  int (*send)(const void *, size_t, int, int, nccl_comm_t, void *);
  int (*recv)(void *, size_t, int, int, nccl_comm_t, void *);
} N;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;

struct nccl {
  nccl_comm_t comm;
  int dev, rank, size;
  pthread_mutex_t lock;
};

#define SYM(field, name)                     \
  do {                                       \
    *(void **)&N.field = dlsym(N.lib, name); \
    if (!N.field) return false;              \
  } while (0)

static bool load_symbols(void) {
  SYM(get_version, "ncclGetVersion");
  SYM(get_unique_id, "ncclGetUniqueId");
  SYM(comm_init_rank, "ncclCommInitRank");
  SYM(comm_destroy, "ncclCommDestroy");
  SYM(comm_count, "ncclCommCount");
  SYM(comm_user_rank, "ncclCommUserRank");
  SYM(error_string, "ncclGetErrorString");
  SYM(all_reduce, "ncclAllReduce");
  SYM(all_gather, "ncclAllGather");
  SYM(reduce_scatter, "ncclReduceScatter");
  SYM(send, "ncclSend");
  SYM(recv, "ncclRecv");
  *(void **)&N.comm_split = dlsym(N.lib, "ncclCommSplit");
  return true;
}

/* Where pip puts NCCL (the nvidia-nccl-cu12/cu13 wheels), under the
 * site-packages of a virtual environment, of the python3 found on PATH,
 * of the user, or of the system. */
static const char *const wheel_dirs[] = {"nvidia/nccl/lib/libnccl.so.2",
                                         "nvidia/cu13/lib/libnccl.so.2"};

static bool try_open(const char *path) {
  N.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return N.lib != NULL;
}

/* dlopen of the first match of prefix + "/lib/python3*<sp>/" + a wheel
 * path, for both site-packages spellings. */
static bool try_prefix(const char *prefix) {
  static const char *const sp[] = {"site-packages", "dist-packages"};
  char pattern[PATH_MAX];
  for (size_t s = 0; s < 2; s++)
    for (size_t w = 0; w < sizeof wheel_dirs / sizeof wheel_dirs[0]; w++) {
      int len = snprintf(pattern, sizeof pattern, "%s/lib/python3*/%s/%s", prefix, sp[s],
                         wheel_dirs[w]);
      if (len <= 0 || (size_t)len >= sizeof pattern) continue;
      glob_t g;
      bool ok = false;
      if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && !ok; i++) ok = try_open(g.gl_pathv[i]);
      globfree(&g);
      if (ok) return true;
    }
  return false;
}

/* The prefix of the first python3 on PATH (dir/bin/python3 -> dir). */
static bool try_path_python(void) {
  const char *path = getenv("PATH");
  char dir[PATH_MAX], exe[PATH_MAX];
  while (path && *path) {
    size_t len = strcspn(path, ":");
    if (len > 0 && len < sizeof dir) {
      memcpy(dir, path, len);
      dir[len] = 0;
      int n = snprintf(exe, sizeof exe, "%.*s/python3", (int)(sizeof exe - 16), dir);
      char *slash = strrchr(dir, '/');
      if (n > 0 && (size_t)n < sizeof exe && slash && !strcmp(slash, "/bin") &&
          access(exe, X_OK) == 0) {
        *slash = 0;
        return try_prefix(dir);
      }
    }
    path += len + (path[len] == ':');
  }
  return false;
}

static bool find_library(void) {
  const char *env = getenv("MLX_NCCL_LIBNAME");
  if (env) return try_open(env); /* as MLX_MPI_LIBNAME: the only one tried */
  if (try_open("libnccl.so.2")) return true;
  const char *venv = getenv("VIRTUAL_ENV"), *home = getenv("HOME");
  char user[PATH_MAX];
  if (venv && try_prefix(venv)) return true;
  if (try_path_python()) return true;
  if (home && snprintf(user, sizeof user, "%s/.local", home) < (int)sizeof user &&
      try_prefix(user))
    return true;
  return try_prefix("/usr/local") || try_prefix("/usr");
}

static void load(void) {
  if (!find_library()) return;
  int version = 0;
  if (load_symbols() && N.get_version(&version) == NCCL_OK && version >= 20000) {
    loaded = true;
    return;
  }
  dlclose(N.lib);
  memset(&N, 0, sizeof N);
}

static bool nccl_loaded(void) {
  pthread_once(&load_once, load);
  return loaded;
}

static bool nccl_available(void) { return nccl_loaded() && lc_gpu_count() > 0; }

static int report(const char *what, int rc) {
  return lc_error("[nccl] %s failed: %s", what, N.error_string(rc));
}

static int cuda_report(const char *what, cudaError_t e) {
  return lc_error("[nccl] %s failed: %s", what, cudaGetErrorString(e));
}

/* ---- setup ---- */

static int enter(struct nccl *c) {
  pthread_mutex_lock(&c->lock);
  cudaError_t e = cudaSetDevice(c->dev);
  if (e == cudaSuccess) return 0;
  pthread_mutex_unlock(&c->lock);
  return cuda_report("cudaSetDevice", e);
}

static void leave(struct nccl *c) { pthread_mutex_unlock(&c->lock); }


static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* The unique id of rank 0, on every rank of the MPI world. */
static int share_id(nccl_id *id, int rank, int size) {
  void *mpi = NULL;
  if (lc_dist_mpi.init(true, &mpi)) return 1;
  int mrank = -1, msize = 0;
  if (lc_dist_mpi.rank(mpi, &mrank) || lc_dist_mpi.size(mpi, &msize)) return 1;
  if (mrank != rank || msize != size)
    return lc_error("[nccl] MPI sees rank %d of %d, the launcher said %d of %d", mrank, msize,
                    rank, size);
  memset(id, 0, sizeof *id);
  if (rank == 0 && N.get_unique_id(id) != NCCL_OK)
    return lc_error("[nccl] ncclGetUniqueId failed");
  unsigned char *all = malloc((size_t)size * sizeof *id);
  if (!all) return lc_error("[nccl] out of memory");
  int rc = lc_dist_mpi.all_gather(mpi, id, all, (int64_t)sizeof *id, MLX_UINT8);
  if (!rc) memcpy(id, all, sizeof *id);
  free(all);
  return rc;
}

static int make_comm(int rank, int size, int dev, nccl_id id, void **out) {
  struct nccl *c = calloc(1, sizeof *c);
  if (!c) return lc_error("[nccl] out of memory");
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    free(c);
    return cuda_report("cudaSetDevice", e);
  }
  int rc = N.comm_init_rank(&c->comm, size, id, rank);
  if (rc != NCCL_OK) {
    free(c);
    return report("ncclCommInitRank", rc);
  }
  c->dev = dev;
  c->rank = rank;
  c->size = size;
  pthread_mutex_init(&c->lock, NULL);
  *out = c;
  return 0;
}

/* Called under the groups' lock (group.c), so at most once at a time. */
static int nccl_init(bool strict, void **comm) {
  *comm = NULL;
  if (!nccl_loaded()) {
    if (!strict) return 0;
    return lc_error(
        "[nccl] Cannot initialize NCCL: libnccl.so.2 could not be loaded (set "
        "MLX_NCCL_LIBNAME to its path, e.g. the nvidia/nccl/lib folder of the "
        "nvidia-nccl-cu13 Python package)");
  }
  int ngpu = lc_gpu_count();
  if (ngpu == 0) {
    if (!strict) return 0;
    return lc_error("[nccl] Cannot initialize NCCL: no GPU (%s)", lc_gpu_unavailable_reason());
  }
  int size = env_int("OMPI_COMM_WORLD_SIZE", 1), rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", rank);
  int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  if (size <= 1 && !strict) return 0;
  if (size > 1 && local_size > ngpu) {
    if (!strict) return 0;
    return lc_error("[nccl] %d ranks on this host but %d GPU%s: NCCL needs one GPU per rank",
                    local_size, ngpu, ngpu == 1 ? "" : "s");
  }
  if (rank < 0 || rank >= size || local < 0)
    return lc_error("[nccl] invalid launcher rank %d of %d", rank, size);
  /* NVLink multicast (NVLS) can take shared GPUs out of service; it stays
   * off unless the user asked for it. */
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  nccl_id id;
  if (size > 1) {
    if (share_id(&id, rank, size)) return 1;
  } else if (N.get_unique_id(&id) != NCCL_OK) {
    return lc_error("[nccl] ncclGetUniqueId failed");
  }
  return make_comm(rank, size, local % ngpu, id, comm);
}

static int nccl_rank(void *comm, int *rank) {
  *rank = ((struct nccl *)comm)->rank;
  return 0;
}

static int nccl_size(void *comm, int *size) {
  *size = ((struct nccl *)comm)->size;
  return 0;
}

static int nccl_device(void *comm) { return ((struct nccl *)comm)->dev; }

/* ncclCommSplit's own semantics match MPI_Comm_split's (color, then key);
 * every rank of c must call it. */
static int nccl_split(void *comm, int color, int key, void **out) {
  struct nccl *c = comm;
  if (!N.comm_split) return lc_error("[nccl] split needs NCCL 2.18 or newer (ncclCommSplit)");
  struct nccl *s = calloc(1, sizeof *s);
  if (!s) return lc_error("[nccl] out of memory");
  int rc = enter(c);
  if (!rc) {
    int r = N.comm_split(c->comm, color, key, &s->comm, NULL);
    if (r == NCCL_OK && s->comm) r = N.comm_count(s->comm, &s->size);
    if (r == NCCL_OK && s->comm) r = N.comm_user_rank(s->comm, &s->rank);
    leave(c);
    if (r != NCCL_OK) rc = report("ncclCommSplit", r);
    if (!rc && !s->comm) rc = lc_error("[nccl] ncclCommSplit gave no communicator");
  }
  if (rc) {
    if (s->comm) N.comm_destroy(s->comm);
    free(s);
    return 1;
  }
  s->dev = c->dev;
  pthread_mutex_init(&s->lock, NULL);
  *out = s;
  return 0;
}

static void nccl_release(void *comm) {
  struct nccl *c = comm;
  (void)cudaSetDevice(c->dev);
  N.comm_destroy(c->comm);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* ---- calls ---- */

static int reduce_type(mlx_dtype dt) {
  switch (dt) {
    case MLX_INT8: return NC_I8;
    case MLX_UINT8: return NC_U8;
    case MLX_INT32: return NC_I32;
    case MLX_UINT32: return NC_U32;
    case MLX_INT64: return NC_I64;
    case MLX_UINT64: return NC_U64;
    case MLX_FLOAT16: return NC_F16;
    case MLX_FLOAT32: return NC_F32;
    case MLX_FLOAT64: return NC_F64;
    case MLX_BFLOAT16: return NC_BF16;
    default: return -1;
  }
}

static int check_reduce_type(const char *fn, mlx_dtype dt) {
  if (reduce_type(dt) >= 0) return 0;
  return lc_error(
      "[nccl] %s: NCCL cannot reduce %s (float32, float16, bfloat16, float64, int8, "
      "int32, int64, uint8, uint32 and uint64 only)",
      fn, lc_dtype_name(dt));
}

static bool on_device(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* A device copy of host memory for one call: dev_in holds in_bytes of
 * `in` (NULL: none), dev_out out_bytes (NULL: the call works in place). */
struct staging {
  void *in, *out;
  size_t in_bytes, out_bytes;
};

static int stage(struct nccl *c, struct staging *s, const void *in, size_t in_bytes,
                 size_t out_bytes) {
  memset(s, 0, sizeof *s);
  s->in_bytes = in_bytes;
  s->out_bytes = out_bytes;
  if (in_bytes && !(s->in = lc_gpu_malloc(in_bytes, c->dev))) return 1;
  if (out_bytes && !(s->out = lc_gpu_malloc(out_bytes, c->dev))) {
    lc_gpu_free(s->in, in_bytes, c->dev);
    return 1;
  }
  if (in && in_bytes && lc_gpu_upload(s->in, in, in_bytes, c->dev)) {
    lc_gpu_free(s->in, in_bytes, c->dev);
    lc_gpu_free(s->out, out_bytes, c->dev);
    return 1;
  }
  return 0;
}

/* Copies the result (the output buffer, or the input one when in place)
 * to host memory `out` (NULL: none) and frees the staging. */
static int unstage(struct nccl *c, struct staging *s, void *out, int rc) {
  void *res = s->out ? s->out : s->in;
  size_t bytes = s->out ? s->out_bytes : s->in_bytes;
  if (!rc && out && bytes) rc = lc_gpu_download(out, res, bytes, c->dev);
  if (!rc && !out) rc = lc_gpu_sync(c->dev);
  lc_gpu_free(s->in, s->in_bytes, c->dev);
  lc_gpu_free(s->out, s->out_bytes, c->dev);
  return rc;
}

static const int nccl_ops[] = {[LC_DIST_SUM] = NC_SUM, [LC_DIST_MAX] = NC_MAX,
                               [LC_DIST_MIN] = NC_MIN};

static int nccl_all_reduce(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt,
                           enum lc_dist_reduce op) {
  struct nccl *c = comm;
  if (check_reduce_type("all_reduce", dt)) return 1;
  size_t bytes = (size_t)n * lc_dtype_size(dt);
  bool dev = on_device(out);
  struct staging s = {0};
  if (!dev && stage(c, &s, in, bytes, 0)) return 1;
  const void *src = dev ? in : s.in;
  void *dst = dev ? out : s.in;
  int rc = enter(c);
  if (!rc) {
    int r = N.all_reduce(src, dst, (size_t)n, reduce_type(dt), nccl_ops[op], c->comm,
                         lc_gpu_stream(c->dev));
    leave(c);
    if (r != NCCL_OK) rc = report("ncclAllReduce", r);
  }
  return dev ? rc : unstage(c, &s, out, rc);
}

static int nccl_all_gather(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt) {
  struct nccl *c = comm;
  size_t bytes = (size_t)n * lc_dtype_size(dt);
  bool dev = on_device(out);
  struct staging s = {0};
  if (!dev && stage(c, &s, in, bytes, bytes * (size_t)c->size)) return 1;
  int rc = enter(c);
  if (!rc) {
    int r = N.all_gather(dev ? in : s.in, dev ? out : s.out, bytes, NC_U8, c->comm,
                         lc_gpu_stream(c->dev));
    leave(c);
    if (r != NCCL_OK) rc = report("ncclAllGather", r);
  }
  return dev ? rc : unstage(c, &s, out, rc);
}

static int nccl_sum_scatter(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt) {
  struct nccl *c = comm;
  if (check_reduce_type("sum_scatter", dt)) return 1;
  size_t bytes = (size_t)n * lc_dtype_size(dt);
  bool dev = on_device(out);
  struct staging s = {0};
  if (!dev && stage(c, &s, in, bytes * (size_t)c->size, bytes)) return 1;
  int rc = enter(c);
  if (!rc) {
    int r = N.reduce_scatter(dev ? in : s.in, dev ? out : s.out, (size_t)n, reduce_type(dt),
                             NC_SUM, c->comm, lc_gpu_stream(c->dev));
    leave(c);
    if (r != NCCL_OK) rc = report("ncclReduceScatter", r);
  }
  return dev ? rc : unstage(c, &s, out, rc);
}

static int nccl_send(void *comm, const void *buf, int64_t n, mlx_dtype dt, int dst) {
  struct nccl *c = comm;
  size_t bytes = (size_t)n * lc_dtype_size(dt);
  bool dev = on_device(buf);
  struct staging s = {0};
  if (!dev && stage(c, &s, buf, bytes, 0)) return 1;
  int rc = enter(c);
  if (!rc) {
    int r = N.send(dev ? buf : s.in, bytes, NC_U8, dst, c->comm, lc_gpu_stream(c->dev));
    leave(c);
    if (r != NCCL_OK) rc = report("ncclSend", r);
  }
  return dev ? rc : unstage(c, &s, NULL, rc);
}

static int nccl_recv(void *comm, void *buf, int64_t n, mlx_dtype dt, int src) {
  struct nccl *c = comm;
  size_t bytes = (size_t)n * lc_dtype_size(dt);
  bool dev = on_device(buf);
  struct staging s = {0};
  if (!dev && stage(c, &s, NULL, bytes, 0)) return 1;
  int rc = enter(c);
  if (!rc) {
    int r = N.recv(dev ? buf : s.in, bytes, NC_U8, src, c->comm, lc_gpu_stream(c->dev));
    leave(c);
    if (r != NCCL_OK) rc = report("ncclRecv", r);
  }
  return dev ? rc : unstage(c, &s, buf, rc);
}

const struct lc_dist_backend lc_dist_nccl = {.name = "nccl",
                                             .available = nccl_available,
                                             .init = nccl_init,
                                             .rank = nccl_rank,
                                             .size = nccl_size,
                                             .device = nccl_device,
                                             .split = nccl_split,
                                             .release = nccl_release,
                                             .all_reduce = nccl_all_reduce,
                                             .all_gather = nccl_all_gather,
                                             .sum_scatter = nccl_sum_scatter,
                                             .send = nccl_send,
                                             .recv = nccl_recv};
#endif
