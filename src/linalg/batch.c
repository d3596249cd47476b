/* The batch runner of the linalg primitives, layout copies and the
 * argument checks they share. */
#include <pthread.h>
#include <string.h>

#include "core/copy.h"
#include "core/error.h"
#include "core/parallel.h"
#include "linalg/la_internal.h"
#include "ops/tuple.h"

struct batch_ctx {
  la_item_fn item;
  void *ctx;
  size_t scratch_bytes;
  pthread_mutex_t lock; /* guards bad, info, oom */
  int64_t bad;          /* lowest failing index; -1 none */
  int info, oom;
};

static void batch_record(struct batch_ctx *b, int64_t i, int info, int oom) {
  pthread_mutex_lock(&b->lock);
  if (oom) b->oom = 1;
  else if (b->bad < 0 || i < b->bad) b->bad = i, b->info = info;
  pthread_mutex_unlock(&b->lock);
}

static void batch_range(void *arg, int64_t lo, int64_t hi) {
  struct batch_ctx *b = arg;
  void *scratch = NULL;
  if (b->scratch_bytes && !(scratch = aligned_alloc(64, (b->scratch_bytes + 63) / 64 * 64))) {
    batch_record(b, lo, 0, 1);
    return;
  }
  for (int64_t i = lo; i < hi; i++) {
    int info = b->item(b->ctx, i, scratch);
    if (info) {
      batch_record(b, i, info, 0);
      break; /* later matrices of this range cannot lower the index */
    }
  }
  free(scratch);
}

int la_batch_run(int64_t count, size_t scratch_bytes, bool parallel, la_item_fn item, void *ctx,
                 int64_t *bad, int *info) {
  struct batch_ctx b = {.item = item, .ctx = ctx, .scratch_bytes = scratch_bytes, .bad = -1};
  pthread_mutex_init(&b.lock, NULL);
  if (parallel)
    lc_parallel_for(count, 1, batch_range, &b);
  else if (count > 0)
    batch_range(&b, 0, count);
  pthread_mutex_destroy(&b.lock);
  if (b.oom) return 2;
  if (b.bad >= 0) {
    *bad = b.bad;
    *info = b.info;
    return 1;
  }
  return 0;
}

bool la_batch_parallel(int64_t count, int n) {
  /* LAPACK threads large problems itself; small ones are serial inside */
  return count > 1 && n <= 96;
}

int la_copy_in(const struct lc_node *x, void *dst, bool col_major) {
  int nd = x->ndim;
  int64_t st[nd];
  lc_shape_strides(nd, x->shape, st);
  if (col_major) {
    st[nd - 2] = 1;
    st[nd - 1] = x->shape[nd - 2];
  }
  return lc_copy_strided(nd, x->shape, lc_dtype_size(x->dtype), dst, st, 0, x->buf->data,
                         x->strides, x->offset);
}

int la_report_alloc(const char *fn) { return lc_error("%s: out of memory", fn); }

int la_check_float(const char *fn, mlx_dtype t) {
  if (t == MLX_FLOAT32 || t == MLX_FLOAT64) return 0;
  return lc_error("%s: Arrays must have type float32 or float64. Received array with type %s.", fn,
                  lc_dtype_name(t));
}

int la_check_float_or_complex(const char *fn, mlx_dtype t) {
  if (t == MLX_FLOAT32 || t == MLX_FLOAT64 || t == MLX_COMPLEX64) return 0;
  return lc_error("%s: Arrays must have type float32, float64 or complex64. Received array with "
                  "type %s.",
                  fn, lc_dtype_name(t));
}

int la_check_matrix(const char *fn, const struct lc_node *a) {
  if (a->ndim >= 2) return 0;
  return lc_error("%s: Arrays must have >= 2 dimensions. Received array with %d dimensions.", fn,
                  a->ndim);
}

int la_check_square(const char *fn, const struct lc_node *a, const char *what) {
  if (a->shape[a->ndim - 1] == a->shape[a->ndim - 2]) return 0;
  return lc_error("%s: %s", fn, what);
}

void *la_output(struct lc_node *n, int nout, const int64_t *nbytes, int k) {
  return nout == 1 ? n->buf->data : lc_tuple_data(n, nout, nbytes, k);
}
