/* bench_allsum: mlx_distributed_all_sum bandwidth against MPI_Allreduce
 * called directly on the same buffers, in the same run. Run under
 * `mpirun -np 2 ./bench_allsum` (alone it prints why it skipped).
 *
 * For each size (float32, 1 KiB to 256 MiB by factors of 4): the input x
 * is one evaluated array; a lace iteration is all_sum(x) built and
 * evaluated (the result a fresh buffer each time, as a program would get);
 * an MPI iteration is MPI_Allreduce(data(x), out) into one preallocated
 * buffer of the same size. Iterations alternate lace / MPI after a
 * barrier; the median of each is reported with the algorithm bandwidth
 * (bytes / time) and lace's fraction of MPI's bandwidth.
 *
 * MPI's entry points come from the same libmpi lace loaded (dlopen with
 * RTLD_NOLOAD, OpenMPI ABI as in src/distributed/mpi.c), so nothing here
 * links MPI either. Output: BENCH lines (bench_common.h), rank 0 only.
 * Usage: bench_allsum [max_MiB]   (default 256) */
#include <dlfcn.h>
#include <math.h>

#include "bench_common.h"

typedef void *MPI_Comm, *MPI_Datatype, *MPI_Op;
static struct {
  int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*barrier)(MPI_Comm);
  MPI_Comm world;
  MPI_Datatype f32;
  MPI_Op sum;
} M;

static int load_mpi(void) {
  void *lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return 1;
  *(void **)&M.allreduce = dlsym(lib, "MPI_Allreduce");
  *(void **)&M.barrier = dlsym(lib, "MPI_Barrier");
  M.world = dlsym(lib, "ompi_mpi_comm_world");
  M.f32 = dlsym(lib, "ompi_mpi_float");
  M.sum = dlsym(lib, "ompi_mpi_op_sum");
  return !(M.allreduce && M.barrier && M.world && M.f32 && M.sum);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double time_lace(mlx_array x, mlx_distributed_group g, mlx_stream s, int *err) {
  mlx_array r = mlx_array_new();
  M.barrier(M.world);
  double t0 = bench_now();
  *err |= mlx_distributed_all_sum(&r, x, g, s) || mlx_array_eval(r);
  double t = bench_now() - t0;
  mlx_array_free(r);
  return t;
}

static double time_mpi(const float *in, float *out, int n, int *err) {
  M.barrier(M.world);
  double t0 = bench_now();
  *err |= M.allreduce(in, out, n, M.f32, M.sum, M.world) != 0;
  return bench_now() - t0;
}

/* Iterations per size: about 0.3 s of each from a timed warm-up, 3 to
 * 200, the same on every rank (the largest any rank asks for). */
static int iterations(double warm, mlx_distributed_group g, mlx_stream s) {
  double it = 0.3 / (warm > 1e-7 ? warm : 1e-7);
  mlx_array mine = mlx_array_new_int(it > 200 ? 200 : it < 3 ? 3 : (int)it), all = mlx_array_new();
  int n = 3;
  if (mlx_distributed_all_max(&all, mine, g, s) || mlx_array_item_int32(&n, all)) n = 3;
  mlx_array_free(mine);
  mlx_array_free(all);
  return n;
}

int main(int argc, char **argv) {
  size_t max_bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_distributed_group g = mlx_distributed_group_new();
  if (!getenv("OMPI_COMM_WORLD_SIZE") || mlx_distributed_init(&g, true, "mpi") || load_mpi()) {
    printf("BENCH allsum skipped=not-launched (run: mpirun -np 2 bench_allsum)\n");
    return 0;
  }
  int rank = mlx_distributed_group_rank(g), size = mlx_distributed_group_size(g), err = 0;
  if (rank == 0) printf("# all_sum over %d ranks (float32): lace vs MPI_Allreduce\n", size);
  for (size_t bytes = 1024; bytes <= max_bytes && !err; bytes *= 4) {
    int n = (int)(bytes / sizeof(float));
    float *buf = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) buf[i] = (float)((i + rank) % 97) * 0.25f;
    mlx_array x = mlx_array_new_data(buf, &n, 1, MLX_FLOAT32);
    mlx_array_eval(x);
    const float *xd = mlx_array_data_float32(x);
    time_lace(x, g, s, &err); /* warm-up: connections, allocator, pages */
    double warm = time_mpi(xd, out, n, &err);
    int iters = iterations(warm, g, s);
    double *tl = malloc(sizeof(double) * (size_t)iters),
           *tm = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
      tl[i] = time_lace(x, g, s, &err);
      tm[i] = time_mpi(xd, out, n, &err);
    }
    double ml = median(tl, iters), mm = median(tm, iters);
    if (rank == 0) {
      printf("BENCH allsum/lace bytes=%zu np=%d median_ms=%.4f GBps=%.3f\n", bytes, size, 1e3 * ml,
             (double)bytes / ml * 1e-9);
      printf("BENCH allsum/mpi bytes=%zu np=%d median_ms=%.4f GBps=%.3f lace_frac=%.3f\n", bytes,
             size, 1e3 * mm, (double)bytes / mm * 1e-9, mm / ml);
      fflush(stdout);
    }
    free(tl);
    free(tm);
    free(buf);
    free(out);
    mlx_array_free(x);
  }
  mlx_distributed_group_free(g);
  mlx_stream_free(s);
  if (err) fprintf(stderr, "bench_allsum: a collective failed on rank %d\n", rank);
  return err;
}
