/* Communication backends and groups (internal to src/distributed/).
 *
 * A backend is a table of functions over its own communicator handle
 * (`void *comm`); lace's primitives only ever call through the table, so a
 * second backend (NCCL for GPU arrays, nccl.c) is one more table. Buffers
 * passed to the table are row-major contiguous, `n` elements of dtype `dt`,
 * in host memory, or (for a backend with `device`) in the memory of the
 * communicator's GPU: then the call is queued on that GPU's stream and
 * returns without waiting. Every function returns 0, or 1 after reporting
 * through lc_error.
 *
 * A group is refcounted (atomic) and immutable once built: rank and size are
 * read when it is created, so any thread may read it. The singleton group
 * (not launched under a launcher, or no backend) has be == NULL, rank 0,
 * size 1; collectives on it are identities and never reach a backend. */
#ifndef LC_DIST_BACKEND_H
#define LC_DIST_BACKEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mlx/c/array.h"

enum lc_dist_reduce { LC_DIST_SUM, LC_DIST_MAX, LC_DIST_MIN };

struct lc_dist_backend {
  const char *name; /* as MLX: "mpi", "nccl", ... */
  /* Whether the backend's library can be loaded (no side effect beyond
   * loading it). */
  bool (*available)(void);
  /* The world communicator in *comm, or NULL when the process was not
   * launched as part of a multi-process job (then strict reports why and
   * returns 1; non-strict returns 0 with *comm NULL). */
  int (*init)(bool strict, void **comm);
  int (*rank)(void *comm, int *rank);
  int (*size)(void *comm, int *size);
  /* Optional: the GPU whose memory the functions also take (NULL: host
   * memory only). */
  int (*device)(void *comm);
  /* MPI_Comm_split semantics: ranks with the same color form a group,
   * ordered by key. */
  int (*split)(void *comm, int color, int key, void **out);
  void (*release)(void *comm);
  /* out = op over the group of in (in == out: in place). */
  int (*all_reduce)(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt,
                    enum lc_dist_reduce op);
  /* out (size * n elements) = every rank's in, by rank. */
  int (*all_gather)(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt);
  /* out (n elements) = block `rank` of the sum of every rank's in
   * (size * n elements). */
  int (*sum_scatter)(void *comm, const void *in, void *out, int64_t n, mlx_dtype dt);
  int (*send)(void *comm, const void *buf, int64_t n, mlx_dtype dt, int dst);
  int (*recv)(void *comm, void *buf, int64_t n, mlx_dtype dt, int src);
};

/* OpenMPI loaded at run time (mpi.c). */
extern const struct lc_dist_backend lc_dist_mpi;
#ifdef LACE_CUDA
/* NCCL loaded at run time (nccl.c; CUDA builds only). */
extern const struct lc_dist_backend lc_dist_nccl;
#endif

struct lc_dist_group {
  atomic_int refs;
  const struct lc_dist_backend *be; /* NULL: the singleton group */
  void *comm;
  int rank, size;
};

/* A new group over comm (NULL comm: the singleton), refs 1. NULL after
 * reporting. Takes comm over (released with the group, or on failure). */
struct lc_dist_group *lc_dist_group_new(const struct lc_dist_backend *be, void *comm);
struct lc_dist_group *lc_dist_group_retain(struct lc_dist_group *g);
void lc_dist_group_release(struct lc_dist_group *g); /* NULL is fine */

/* The group for backend `bk` ("any", "mpi", ...; NULL = "any"), as MLX's
 * init: a backend's world group is built once and shared; non-strict gives
 * the singleton when no backend initialises. New reference, or NULL after
 * reporting. */
struct lc_dist_group *lc_dist_init(bool strict, const char *bk);
bool lc_dist_is_available(const char *bk);
/* A sub-group (key < 0: keep the order of ranks). NULL after reporting. */
struct lc_dist_group *lc_dist_split(struct lc_dist_group *g, int color, int key);

#endif
