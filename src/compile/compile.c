/* mlx_compile's compiled closure: look up the cache, trace on a miss (trace
 * -> simplify -> fuse -> shape check), replay.
 *
 * Modes (enum mlx_compile_mode, process-wide, atomic): DISABLED when
 * mlx_compile is called makes it return the function itself; DISABLED
 * when a compiled closure is called makes that call run the function
 * directly. NO_SIMPLIFY skips simplify, NO_FUSE skips fusion, both read
 * when an entry is traced (entries keep the form they were traced in).
 * The environment variable MLX_DISABLE_COMPILE (any value) makes the
 * initial mode DISABLED; it is read once, at first use.
 *
 * A failed trace (the function returns non-zero, an op fails, or it tries
 * to evaluate a traced array) reports, returns non-zero and caches nothing:
 * the next call traces again.
 *
 * Inside another transform's trace (an outer compile, vjp, jvp or vmap on
 * this thread), a compiled function called on that trace's arrays, or
 * capturing them, runs as itself, as in MLX: its ops join the enclosing
 * trace (and fuse with it), and transforms see its stop_gradients. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "api/api.h"
#include "core/graph.h"
#include "mlx/c/compile.h"

static atomic_int mode = MLX_COMPILE_MODE_ENABLED;
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;

static void mode_init(void) {
  if (getenv("MLX_DISABLE_COMPILE")) atomic_store(&mode, MLX_COMPILE_MODE_DISABLED);
}

int lc_compile_mode(void) {
  pthread_once(&mode_once, mode_init);
  return atomic_load(&mode);
}

void lc_compile_set_mode(int m) {
  pthread_once(&mode_once, mode_init);
  atomic_store(&mode, m);
}

struct cfun {
  struct lc_closure *fun;
  int kind;
  uintptr_t id;
  bool shapeless;
  size_t nconst;
  uint64_t *consts;
};

static void cfun_free(void *payload) {
  struct cfun *f = payload;
  if (!f) return;
  if (f->kind == 0) lc_cache_erase(0, f->id);
  lc_closure_release(f->fun);
  free(f->consts);
  free(f);
}

/* Runs the passes on a fresh trace. */
static int optimise(struct lc_cprog *p, bool shapeless) {
  int m = lc_compile_mode();
  lc_compile_dump(p, "traced");
  if (m != MLX_COMPILE_MODE_NO_SIMPLIFY && lc_compile_simplify(p)) return 1;
  if (m != MLX_COMPILE_MODE_NO_FUSE && (lc_compile_fuse_epilogues(p) || lc_compile_group_products(p) ||
                                        lc_compile_fuse(p)))
    return 1;
  if (!lc_cprog_valid(p)) return lc_error("internal: compile produced an invalid program");
  if (shapeless) lc_compile_check_poly(p);
  lc_compile_dump(p, "compiled");
  return 0;
}

static bool same_shapes(const struct lc_cprog *p, struct lc_node *const *in) {
  for (int i = 0; i < p->nin; i++)
    if (!lc_shape_equal(in[i]->ndim, in[i]->shape, p->vals[i].ndim, p->vals[i].shape))
      return false;
  return true;
}

#define MAX_CANDIDATES 8

/* Replays p over in into *res. 0 done; 1 after reporting; -1 p does not
 * cover these input shapes (nothing reported). */
static int replay_into(const struct lc_cprog *p, struct lc_node *const *in, mlx_vector_array *res) {
  struct lc_node *local[8];
  struct lc_node **outs = p->nout <= 8 ? local : malloc(sizeof *outs * (size_t)p->nout);
  if (!outs) return lc_error("out of memory");
  if (lc_api_use_default_device("compiled function")) {
    if (outs != local) free(outs);
    return 1;
  }
  bool reported = false;
  int rc = lc_compile_replay(p, in, !same_shapes(p, in), outs, &reported);
  if (rc == 0) {
    rc = lc_vec_array_assign(res, outs, (size_t)p->nout);
    for (int o = 0; o < p->nout; o++) lc_node_release(outs[o]);
  } else if (!reported) {
    rc = -1;
  }
  if (outs != local) free(outs);
  return rc;
}

/* Replays the first candidate that covers the inputs; releases them all.
 * Returns as replay_into (-1: none covers them). */
static int try_entries(struct lc_centry **cand, int nc, struct lc_node *const *in,
                       mlx_vector_array *res) {
  int rc = -1;
  for (int i = 0; i < nc; i++) {
    if (rc == -1) {
      rc = replay_into(lc_centry_prog(cand[i]), in, res);
      if (rc == 0) lc_cache_touch(cand[i]);
    }
    lc_centry_release(cand[i]);
  }
  return rc;
}

static bool any_traced(struct lc_node *const *in, int nin) {
  if (!lc_tracing()) return false;
  for (int i = 0; i < nin; i++)
    if (in[i]->flags & LC_NF_TRACED) return true;
  return false;
}

static int compiled_call(mlx_vector_array *res, const mlx_vector_array vin, void *payload) {
  struct cfun *f = payload;
  if (!vin.ctx) return lc_error("compiled function: empty input vector");
  if (lc_compile_mode() == MLX_COMPILE_MODE_DISABLED) return f->fun->call(f->fun, res, vin);
  struct lc_vec_array *va = vin.ctx;
  int nin = (int)va->len;
  struct lc_node **in = va->items;
  for (int i = 0; i < nin; i++)
    if (!in[i]) return lc_error("compiled function: input %d is an empty array", i);
  if (any_traced(in, nin)) return f->fun->call(f->fun, res, vin);
  mlx_dtype dtypes[nin > 0 ? nin : 1];
  int ndims[nin > 0 ? nin : 1];
  const int *shapes[nin > 0 ? nin : 1];
  for (int i = 0; i < nin; i++) {
    dtypes[i] = in[i]->dtype;
    ndims[i] = in[i]->ndim;
    shapes[i] = in[i]->shape;
  }
  struct lc_ckey key = {f->kind,     f->id,        lc_api_default_stream_key(),
                        nin,         dtypes,       ndims,
                        shapes,      f->shapeless, f->nconst,
                        f->consts};
  struct lc_centry *cand[MAX_CANDIDATES];
  int nc = lc_cache_find(&key, cand, MAX_CANDIDATES);
  int rc = try_entries(cand, nc, in, res);
  if (rc >= 0) return rc;
  /* Miss: under the function's trace lock, look again (another thread may
   * have traced it meanwhile), else trace. */
  void *token;
  if (lc_cache_lock_fn(f->kind, f->id, &token)) return 1;
  nc = lc_cache_find(&key, cand, MAX_CANDIDATES);
  rc = try_entries(cand, nc, in, res);
  if (rc < 0) {
    struct lc_cprog *p = NULL;
    rc = lc_compile_trace(f->fun, nin, dtypes, ndims, shapes, &p);
    if (rc == LC_TRACE_CAPTURES) {
      lc_cache_unlock_fn(token);
      return f->fun->call(f->fun, res, vin);
    }
    if (rc == 0) {
      rc = 1;
      if (optimise(p, f->shapeless)) {
        lc_cprog_free(p);
      } else {
        struct lc_centry *e = lc_cache_insert(&key, p);
        if (e) {
          rc = replay_into(lc_centry_prog(e), in, res);
          if (rc < 0) rc = lc_error("internal: compile could not replay a fresh trace");
          lc_centry_release(e);
        }
      }
    }
  }
  lc_cache_unlock_fn(token);
  return rc;
}

struct lc_closure *lc_compile_make(struct lc_closure *fun, int kind, uintptr_t id, bool shapeless,
                                   const uint64_t *constants, size_t nconst) {
  if (lc_compile_mode() == MLX_COMPILE_MODE_DISABLED) return lc_closure_retain(fun);
  struct cfun *f = calloc(1, sizeof *f);
  if (!f) {
    lc_error("out of memory");
    return NULL;
  }
  if (nconst) {
    f->consts = malloc(sizeof(uint64_t) * nconst);
    if (!f->consts) {
      free(f);
      lc_error("out of memory");
      return NULL;
    }
    memcpy(f->consts, constants, sizeof(uint64_t) * nconst);
  }
  f->fun = lc_closure_retain(fun);
  f->kind = kind;
  f->id = kind == 0 ? (uintptr_t)f : id;
  f->shapeless = shapeless;
  f->nconst = nconst;
  return lc_closure_make(compiled_call, f, cfun_free);
}
