/* The MPI backend: OpenMPI's libmpi loaded at run time with dlopen, so lace
 * neither links nor needs MPI (is_available is false where it is absent).
 *
 * This is the OpenMPI ABI: MPI_Comm, MPI_Datatype and MPI_Op are pointers,
 * and the predefined handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are
 * the addresses of exported globals (ompi_mpi_comm_world, ompi_mpi_float,
 * ompi_mpi_op_sum, ...), found with dlsym. MPICH and its derivatives use
 * integer handles with fixed constant values instead; supporting them would
 * mean a second table of handles (not done). The library is checked to be
 * Open MPI (MPI_Get_library_version) before it is used.
 *
 * Counts are `int` in MPI: reductions, send and recv go in chunks of at
 * most INT_MAX elements; all_gather and sum_scatter reject larger blocks.
 * float16 and bfloat16 travel as uint16 with lace's own reduction
 * functions (MPI_Op_create); complex64 max/min order by real part, then
 * imaginary part, as lace's max/min reductions. bool reduces with logical
 * or (sum, max) and and (min). */
#include <complex.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/dtype.h"
#include "core/half.h"
#include "distributed/backend.h"

typedef void *MPI_Comm, *MPI_Datatype, *MPI_Op, *MPI_Errhandler;
typedef struct {
  int source, tag, error, cancelled;
  size_t ucount;
} mpi_status; /* OpenMPI's struct ompi_status_public_t */
typedef void mpi_user_fn(void *in, void *inout, int *len, MPI_Datatype *dt);

#define MPI_SUCCESS 0
#define MPI_IN_PLACE ((void *)1)
#define MPI_THREAD_MULTIPLE 3
#define MPI_MAX_STRING 256
#define LC_MPI_TAG 0

/* Entry points and predefined handles; read-only once loaded. */
static struct {
  void *lib;
  int (*get_library_version)(char *, int *);
  int (*initialized)(int *);
  int (*finalized)(int *);
  int (*init_thread)(int *, char ***, int, int *);
  int (*finalize)(void);
  int (*error_string)(int, char *, int *);
  int (*comm_rank)(MPI_Comm, int *);
  int (*comm_size)(MPI_Comm, int *);
  int (*comm_split)(MPI_Comm, int, int, MPI_Comm *);
  int (*comm_free)(MPI_Comm *);
  int (*comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
  int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*allgather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
  int (*reduce_scatter_block)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
  int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, mpi_status *);
  int (*get_count)(const mpi_status *, MPI_Datatype, int *);
  int (*op_create)(mpi_user_fn *, int, MPI_Op *);
  MPI_Comm comm_world;
  MPI_Errhandler errors_return;
  MPI_Op op_sum, op_max, op_min, op_lor, op_land;
  MPI_Datatype t_bool, t_i8, t_u8, t_i16, t_u16, t_i32, t_u32, t_i64, t_u64, t_f32, t_f64, t_c64;
} M;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;

/* Set once MPI is initialised (under the groups' lock, before any group
 * exists); read by every call after. */
static struct {
  bool ours;                      /* lace called MPI_Init_thread, so it finalises at exit */
  bool serialize;                 /* the library gave less than MPI_THREAD_MULTIPLE */
  MPI_Op f16[3], bf16[3], c64[3]; /* by enum lc_dist_reduce; NULL: predefined */
} S;
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

#define SYM(field, name)                     \
  do {                                       \
    *(void **)&M.field = dlsym(M.lib, name); \
    if (!M.field) return false;              \
  } while (0)

static bool load_symbols(void) {
  SYM(get_library_version, "MPI_Get_library_version");
  SYM(initialized, "MPI_Initialized");
  SYM(finalized, "MPI_Finalized");
  SYM(init_thread, "MPI_Init_thread");
  SYM(finalize, "MPI_Finalize");
  SYM(error_string, "MPI_Error_string");
  SYM(comm_rank, "MPI_Comm_rank");
  SYM(comm_size, "MPI_Comm_size");
  SYM(comm_split, "MPI_Comm_split");
  SYM(comm_free, "MPI_Comm_free");
  SYM(comm_set_errhandler, "MPI_Comm_set_errhandler");
  SYM(allreduce, "MPI_Allreduce");
  SYM(allgather, "MPI_Allgather");
  SYM(reduce_scatter_block, "MPI_Reduce_scatter_block");
  SYM(send, "MPI_Send");
  SYM(recv, "MPI_Recv");
  SYM(get_count, "MPI_Get_count");
  SYM(op_create, "MPI_Op_create");
  SYM(comm_world, "ompi_mpi_comm_world");
  SYM(errors_return, "ompi_mpi_errors_return");
  SYM(op_sum, "ompi_mpi_op_sum");
  SYM(op_max, "ompi_mpi_op_max");
  SYM(op_min, "ompi_mpi_op_min");
  SYM(op_lor, "ompi_mpi_op_lor");
  SYM(op_land, "ompi_mpi_op_land");
  SYM(t_bool, "ompi_mpi_c_bool");
  SYM(t_i8, "ompi_mpi_int8_t");
  SYM(t_u8, "ompi_mpi_uint8_t");
  SYM(t_i16, "ompi_mpi_int16_t");
  SYM(t_u16, "ompi_mpi_uint16_t");
  SYM(t_i32, "ompi_mpi_int32_t");
  SYM(t_u32, "ompi_mpi_uint32_t");
  SYM(t_i64, "ompi_mpi_int64_t");
  SYM(t_u64, "ompi_mpi_uint64_t");
  SYM(t_f32, "ompi_mpi_float");
  SYM(t_f64, "ompi_mpi_double");
  SYM(t_c64, "ompi_mpi_c_float_complex");
  return true;
}

static bool is_open_mpi(void) {
  char v[MPI_MAX_STRING + 1] = {0};
  int len = 0;
  return M.get_library_version(v, &len) == MPI_SUCCESS && strstr(v, "Open MPI");
}

/* MLX_MPI_LIBNAME (as MLX) names the library, the only one tried then;
 * else OpenMPI's soname, then the development name. */
static void load(void) {
  const char *env = getenv("MLX_MPI_LIBNAME");
  const char *names[] = {env ? env : "libmpi.so.40", env ? NULL : "libmpi.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !M.lib; i++)
    if (names[i]) M.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!M.lib) return;
  if (load_symbols() && is_open_mpi()) {
    loaded = true;
    return;
  }
  dlclose(M.lib);
  memset(&M, 0, sizeof M);
}

static bool mpi_available(void) {
  pthread_once(&load_once, load);
  return loaded;
}

static int report(const char *what, int rc) {
  char msg[MPI_MAX_STRING + 1] = {0};
  int len = 0;
  if (M.error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
  return lc_error("[mpi] %s failed: %s", what, msg);
}

/* ---- reductions MPI has no predefined op for ---- */

#define HALF_OP(NAME, TO, FROM, EXPR)                                   \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) { \
    (void)dt;                                                           \
    const uint16_t *a = in;                                             \
    uint16_t *b = inout;                                                \
    for (int i = 0; i < *len; i++) {                                    \
      float x = TO(a[i]), y = TO(b[i]);                                 \
      b[i] = FROM(EXPR);                                                \
    }                                                                   \
  }
HALF_OP(f16_sum, lc_f16_to_f32, lc_f32_to_f16, x + y)
HALF_OP(f16_max, lc_f16_to_f32, lc_f32_to_f16, (x > y || x != x) ? x : y)
HALF_OP(f16_min, lc_f16_to_f32, lc_f32_to_f16, (x < y || x != x) ? x : y)
HALF_OP(bf16_sum, lc_bf16_to_f32, lc_f32_to_bf16, x + y)
HALF_OP(bf16_max, lc_bf16_to_f32, lc_f32_to_bf16, (x > y || x != x) ? x : y)
HALF_OP(bf16_min, lc_bf16_to_f32, lc_f32_to_bf16, (x < y || x != x) ? x : y)

static bool c64_greater(float _Complex a, float _Complex b) {
  return crealf(a) > crealf(b) || (crealf(a) == crealf(b) && cimagf(a) > cimagf(b));
}
static void c64_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const float _Complex *a = in;
  float _Complex *b = inout;
  for (int i = 0; i < *len; i++)
    if (c64_greater(a[i], b[i])) b[i] = a[i];
}
static void c64_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const float _Complex *a = in;
  float _Complex *b = inout;
  for (int i = 0; i < *len; i++)
    if (c64_greater(b[i], a[i])) b[i] = a[i];
}

static int create_ops(void) {
  mpi_user_fn *fns[] = {f16_sum, f16_max, f16_min, bf16_sum, bf16_max, bf16_min};
  MPI_Op *dst[] = {&S.f16[0], &S.f16[1], &S.f16[2], &S.bf16[0], &S.bf16[1], &S.bf16[2]};
  for (int i = 0; i < 6; i++) {
    int rc = M.op_create(fns[i], 1, dst[i]);
    if (rc != MPI_SUCCESS) return report("MPI_Op_create", rc);
  }
  int rc = M.op_create(c64_max, 1, &S.c64[LC_DIST_MAX]);
  if (rc == MPI_SUCCESS) rc = M.op_create(c64_min, 1, &S.c64[LC_DIST_MIN]);
  return rc == MPI_SUCCESS ? 0 : report("MPI_Op_create", rc);
}

static MPI_Datatype datatype(mlx_dtype dt) {
  switch (dt) {
    case MLX_BOOL: return M.t_bool;
    case MLX_INT8: return M.t_i8;
    case MLX_UINT8: return M.t_u8;
    case MLX_INT16: return M.t_i16;
    case MLX_UINT16:
    case MLX_FLOAT16:
    case MLX_BFLOAT16: return M.t_u16;
    case MLX_INT32: return M.t_i32;
    case MLX_UINT32: return M.t_u32;
    case MLX_INT64: return M.t_i64;
    case MLX_UINT64: return M.t_u64;
    case MLX_FLOAT32: return M.t_f32;
    case MLX_FLOAT64: return M.t_f64;
    case MLX_COMPLEX64: return M.t_c64;
  }
  return NULL;
}

static MPI_Op reduce_op(mlx_dtype dt, enum lc_dist_reduce op) {
  if (dt == MLX_FLOAT16) return S.f16[op];
  if (dt == MLX_BFLOAT16) return S.bf16[op];
  if (dt == MLX_COMPLEX64 && op != LC_DIST_SUM) return S.c64[op];
  if (dt == MLX_BOOL) return op == LC_DIST_MIN ? M.op_land : M.op_lor;
  return op == LC_DIST_SUM ? M.op_sum : op == LC_DIST_MAX ? M.op_max : M.op_min;
}

/* ---- setup ---- */

static void finalize_at_exit(void) {
  int done = 1;
  if (M.finalized(&done) == MPI_SUCCESS && !done) M.finalize();
}

/* Whether a launcher (mpirun/orterun, or a PMIx/PMI launcher) started
 * this process: without one, MPI would only make a world of one. */
static bool launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

static int start_mpi(void) {
  int already = 0, provided = 0, rc = M.initialized(&already);
  if (rc != MPI_SUCCESS) return report("MPI_Initialized", rc);
  if (!already) {
    rc = M.init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return report("MPI_Init_thread", rc);
    S.ours = true;
    S.serialize = provided < MPI_THREAD_MULTIPLE;
    atexit(finalize_at_exit);
  } else {
    S.serialize = true; /* the program's own init: its thread level is unknown */
  }
  rc = M.comm_set_errhandler(M.comm_world, M.errors_return);
  if (rc != MPI_SUCCESS) return report("MPI_Comm_set_errhandler", rc);
  return create_ops();
}

/* Called under the groups' lock (group.c), so at most once at a time. */
static int mpi_init(bool strict, void **comm) {
  static bool started;
  *comm = NULL;
  if (!mpi_available()) {
    if (!strict) return 0;
    return lc_error(
        "[mpi] Cannot initialize MPI: no Open MPI library could be loaded "
        "(libmpi.so.40, or the one MLX_MPI_LIBNAME names)");
  }
  if (!started) {
    if (!launched()) {
      if (!strict) return 0;
      return lc_error(
          "[mpi] The world has a single process. Launch with mpirun to initialize "
          "the mpi backend.");
    }
    if (start_mpi()) return 1;
    started = true;
  }
  int size = 1, rc = M.comm_size(M.comm_world, &size);
  if (rc != MPI_SUCCESS) return report("MPI_Comm_size", rc);
  if (size <= 1) {
    if (!strict) return 0;
    return lc_error(
        "[mpi] The world has a single process. Launch with mpirun to initialize "
        "the mpi backend.");
  }
  *comm = M.comm_world;
  return 0;
}

/* ---- calls ---- */

static void lock(void) {
  if (S.serialize) pthread_mutex_lock(&call_lock);
}
static void unlock(void) {
  if (S.serialize) pthread_mutex_unlock(&call_lock);
}

static int mpi_rank(void *comm, int *rank) {
  int rc = M.comm_rank(comm, rank);
  return rc == MPI_SUCCESS ? 0 : report("MPI_Comm_rank", rc);
}

static int mpi_size(void *comm, int *size) {
  int rc = M.comm_size(comm, size);
  return rc == MPI_SUCCESS ? 0 : report("MPI_Comm_size", rc);
}

static int mpi_split(void *comm, int color, int key, void **out) {
  MPI_Comm c = NULL;
  lock();
  int rc = M.comm_split(comm, color, key, &c);
  if (rc == MPI_SUCCESS) rc = M.comm_set_errhandler(c, M.errors_return);
  unlock();
  if (rc != MPI_SUCCESS) return report("MPI_Comm_split", rc);
  *out = c;
  return 0;
}

/* The world is never freed; a split communicator is, unless MPI is
 * already finalised (at exit). */
static void mpi_release(void *comm) {
  int done = 1;
  if (comm == M.comm_world || M.finalized(&done) != MPI_SUCCESS || done) return;
  MPI_Comm c = comm;
  lock();
  M.comm_free(&c);
  unlock();
}

static int chunk(int64_t left) { return left > INT_MAX ? INT_MAX : (int)left; }

static int mpi_all_reduce(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt,
                          enum lc_dist_reduce op) {
  size_t isz = lc_dtype_size(dt);
  MPI_Datatype t = datatype(dt);
  MPI_Op o = reduce_op(dt, op);
  int rc = MPI_SUCCESS;
  lock();
  for (int64_t at = 0; at < n && rc == MPI_SUCCESS; at += chunk(n - at)) {
    const void *src = in == out ? MPI_IN_PLACE : (const char *)in + at * isz;
    rc = M.allreduce(src, (char *)out + at * isz, chunk(n - at), t, o, comm);
  }
  unlock();
  return rc == MPI_SUCCESS ? 0 : report("MPI_Allreduce", rc);
}

static int mpi_all_gather(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt) {
  if (n > INT_MAX)
    return lc_error(
        "[mpi] all_gather: %lld elements per rank is over MPI's "
        "limit (INT_MAX)",
        (long long)n);
  lock();
  int rc = M.allgather(in, (int)n, datatype(dt), out, (int)n, datatype(dt), comm);
  unlock();
  return rc == MPI_SUCCESS ? 0 : report("MPI_Allgather", rc);
}

static int mpi_sum_scatter(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt) {
  if (n > INT_MAX)
    return lc_error(
        "[mpi] sum_scatter: %lld elements per rank is over MPI's "
        "limit (INT_MAX)",
        (long long)n);
  lock();
  int rc = M.reduce_scatter_block(in, out, (int)n, datatype(dt), reduce_op(dt, LC_DIST_SUM), comm);
  unlock();
  return rc == MPI_SUCCESS ? 0 : report("MPI_Reduce_scatter_block", rc);
}

static int mpi_send(void *comm, const void *buf, int64_t n, mlx_dtype dt, int dst) {
  size_t isz = lc_dtype_size(dt);
  int rc = MPI_SUCCESS;
  lock();
  int64_t at = 0;
  do {
    rc = M.send((const char *)buf + at * isz, chunk(n - at), datatype(dt), dst, LC_MPI_TAG, comm);
    at += chunk(n - at);
  } while (at < n && rc == MPI_SUCCESS);
  unlock();
  return rc == MPI_SUCCESS ? 0 : report("MPI_Send", rc);
}

/* A message of another size than expected is an error (MPI reports a
 * longer one as truncated; a shorter one is caught by its count). */
static int mpi_recv(void *comm, void *buf, int64_t n, mlx_dtype dt, int src) {
  size_t isz = lc_dtype_size(dt);
  int rc = MPI_SUCCESS, got = 0;
  lock();
  int64_t at = 0;
  do {
    mpi_status st;
    rc = M.recv((char *)buf + at * isz, chunk(n - at), datatype(dt), src, LC_MPI_TAG, comm, &st);
    if (rc == MPI_SUCCESS) rc = M.get_count(&st, datatype(dt), &got);
    if (rc == MPI_SUCCESS && got != chunk(n - at)) break;
    at += chunk(n - at);
  } while (at < n && rc == MPI_SUCCESS);
  unlock();
  if (rc != MPI_SUCCESS) return report("MPI_Recv", rc);
  if (at < n || (n == 0 && got != 0))
    return lc_error("[mpi] recv: expected %lld elements from rank %d, the message had fewer",
                    (long long)n, src);
  return 0;
}

const struct lc_dist_backend lc_dist_mpi = {.name = "mpi",
                                            .available = mpi_available,
                                            .init = mpi_init,
                                            .rank = mpi_rank,
                                            .size = mpi_size,
                                            .split = mpi_split,
                                            .release = mpi_release,
                                            .all_reduce = mpi_all_reduce,
                                            .all_gather = mpi_all_gather,
                                            .sum_scatter = mpi_sum_scatter,
                                            .send = mpi_send,
                                            .recv = mpi_recv};
