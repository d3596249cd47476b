/* Internal interface of mlx_compile: the program a trace becomes, and the
 * passes over it.
 *
 * A program (struct lc_cprog) is the immutable, thread-shareable result of
 * tracing a function once: a list of instructions over numbered values.
 *  - values [0, nin) are the function's inputs, [nin, nin + nconst) its
 *    constants (evaluated nodes, read-only, owned by the program), the rest
 *    are produced by instructions;
 *  - instructions are in topological order (an instruction's arguments are
 *    inputs, constants, or outputs of earlier instructions);
 *  - every value has a traced dtype and shape.
 * Passes (trace -> simplify -> fuse) build and rewrite a program while it is
 * private to the tracing thread; once cached it is never written again.
 * Replay instantiates a program as lazy nodes over real inputs. */
#ifndef LC_COMPILE_H
#define LC_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/handles.h"
#include "core/node.h"

struct lc_cval {
  mlx_dtype dtype;
  int ndim;
  int *shape; /* owned; NULL when ndim == 0 */
  int prod;   /* producing instruction, -1 for inputs and constants */
};

struct lc_cinstr {
  int op; /* enum lc_op */
  int nin;
  int *in; /* value ids, owned */
  int nout;
  int *out; /* value ids, owned */
  void *params; /* owned copy, params_size bytes */
  size_t params_size;
  int dev; /* where the traced node ran (LC_DEV_CPU or a GPU), or LC_DEV_ANY:
            * replay builds it there, as MLX replays on the traced streams */
  int stream; /* the traced node's mlx stream index (with dev: where it replays) */
};
#define LC_DEV_ANY (-2) /* an instruction of no particular device (imported) */

struct lc_cprog {
  int nin, nconst, nval, ninstr, nout;
  struct lc_node **consts; /* nconst evaluated nodes (owned references) */
  struct lc_cval *vals;    /* nval */
  struct lc_cinstr *instrs;
  int *outs; /* nout value ids */
  int cap_vals, cap_instrs;
  /* Shapeless replay may recompute shapes (every instruction's shape can
   * be inferred from its inputs', checked at the traced shapes). */
  bool poly;
};

/* ---- program building (program.c) ---- */
struct lc_cprog *lc_cprog_new(int nin);
void lc_cprog_free(struct lc_cprog *p);
/* A new value; returns its id or -1 after reporting. */
int lc_cprog_add_val(struct lc_cprog *p, mlx_dtype dt, int ndim, const int *shape);
/* Appends an instruction (copies in, out and params); its outputs must
 * already exist. Returns its index or -1 after reporting. */
int lc_cprog_add_instr(struct lc_cprog *p, int op, int nin, const int *in, int nout,
                       const int *out, const void *params, size_t params_size);
/* Re-sorts instructions topologically from the outputs, dropping the ones
 * no output needs and renumbering values compactly (inputs and constants
 * keep their ids; unused constants are dropped). 0, or 1 after reporting. */
int lc_cprog_compact(struct lc_cprog *p);
/* Checks the invariants above (used by tests through dumps and asserts). */
bool lc_cprog_valid(const struct lc_cprog *p);

/* ---- passes ---- */
/* Traces closure c on placeholders of the given input dtypes/shapes.
 * 0 and *out set, or 1 after reporting (nothing is left behind), or
 * LC_TRACE_CAPTURES (nothing reported): inside an enclosing trace, the
 * function uses that trace's arrays without taking them as inputs. */
#define LC_TRACE_CAPTURES 2
int lc_compile_trace(struct lc_closure *c, int nin, const mlx_dtype *dtypes, const int *ndims,
                     const int *const *shapes, struct lc_cprog **out);
/* Common-subexpression elimination, equal scalar constants merged, dead
 * instructions dropped. 0, or 1 after reporting. */
int lc_compile_simplify(struct lc_cprog *p);
/* Groups elementwise instructions of one shape, and reductions over the
 * last axis with their elementwise prologues and epilogues, into FUSED
 * instructions. 0, or 1 after reporting. */
int lc_compile_fuse(struct lc_cprog *p);
/* Rewrites add(matmul(a, b), c) as one MATMUL with c added after rounding
 * (compile/fuse_epilogue.c): on GPU instructions, where the GEMV kernels
 * add c as they write. 0, or 1 after reporting. */
int lc_compile_fuse_epilogues(struct lc_cprog *p);
/* Groups plain matmuls that share their a into MATMUL_GROUP tuples
 * (compile/fuse_epilogue.c). 0, or 1 after reporting. */
int lc_compile_group_products(struct lc_cprog *p);
/* Decides p->poly: whether shapeless replay can recompute every shape. */
void lc_compile_check_poly(struct lc_cprog *p);

/* Instantiates p over in[0..p->nin) (borrowed): outs[0..p->nout) become
 * new references to lazy nodes. With `infer`, shapes are recomputed from
 * the inputs' (shapeless); 1 without reporting means the inputs' shapes
 * are outside what this program covers (the caller re-traces). 0, or 1
 * (also after reporting real failures: *reported set). */
int lc_compile_replay(const struct lc_cprog *p, struct lc_node *const *in, bool infer,
                      struct lc_node **outs, bool *reported);

/* ---- fused kernels (kernel.c) ---- */
/* Max arguments of one instruction inside a fused region. */
#define LC_FUSED_MAXARG 4
/* A fused kernel on a GPU reads at most this many inputs and writes at
 * most this many outputs (its arguments are one parameter block); larger
 * regions on a GPU are left unfused. */
#define LC_FUSED_GPU_MAX_IN 32
#define LC_FUSED_GPU_MAX_OUT 16

/* Layout of a FUSED node's params (plain data; all offsets in bytes from
 * the start of the header, 16-byte aligned sections):
 *   header | shape[ndim] (int32) | inputs[nin] | instrs[ninstr] |
 *   outs[nout] | nested params of the instructions.
 * Argument encoding: a >= 0 is instruction a of the region; a < 0 is region
 * input -a - 1. Region inputs are read through the numpy broadcast of their
 * shape to the shape of their mode (below).
 *
 * Elementwise regions (rows == 0): every value and input has the region
 * shape. Row regions (rows == 1) also hold reductions over the last axis:
 * with the region shape F = (O..., L), a value is FULL (shape F), or one
 * element per row: ROW_KEEP (shape (O..., 1)) or ROW_DROP (shape (O...)).
 * Instructions run row by row; an argument of kind ROW read by a FULL
 * instruction is that row's element repeated (the broadcast it was traced
 * through). */
enum lc_fused_kind { LC_FK_FULL, LC_FK_ROW_KEEP, LC_FK_ROW_DROP };

struct lc_fused_hdr {
  int32_t size; /* total bytes */
  int32_t ndim, nin, ninstr, nout, nslot;
  int32_t shape_off, in_off, instr_off, out_off;
  int32_t rows; /* 1: a row region */
};
struct lc_fused_in {
  int32_t dtype;
  int32_t plain; /* 1: has its mode's shape in the trace (not broadcast) */
  int32_t mode;  /* enum lc_fused_kind: the shape it is broadcast to */
};
struct lc_fused_ins {
  int32_t op, dtype, in_dt, nin; /* in_dt: dtype of the last argument */
  int32_t arg[LC_FUSED_MAXARG];
  int32_t slot; /* scratch tile (row: FULL values), or -1 */
  int32_t out;  /* region output index, or -1 */
  int32_t kind; /* enum lc_fused_kind of its value */
  int32_t params_off, params_size;
};
struct lc_fused_out {
  int32_t ins;   /* producing instruction */
  int32_t dtype;
  int32_t kind;  /* enum lc_fused_kind */
};

static inline const int32_t *lc_fused_shape(const struct lc_fused_hdr *h) {
  return (const int32_t *)((const char *)h + h->shape_off);
}
static inline const struct lc_fused_in *lc_fused_ins_in(const struct lc_fused_hdr *h) {
  return (const struct lc_fused_in *)((const char *)h + h->in_off);
}
static inline const struct lc_fused_ins *lc_fused_instrs(const struct lc_fused_hdr *h) {
  return (const struct lc_fused_ins *)((const char *)h + h->instr_off);
}
static inline const struct lc_fused_out *lc_fused_outs(const struct lc_fused_hdr *h) {
  return (const struct lc_fused_out *)((const char *)h + h->out_off);
}
/* The shape of kind `kind` for region shape (ndim, F) into out; its rank. */
static inline int lc_fused_kind_shape(int kind, int ndim, const int *F, int *out) {
  for (int d = 0; d < ndim; d++) out[d] = F[d];
  if (kind == LC_FK_ROW_KEEP && ndim > 0) out[ndim - 1] = 1;
  return kind == LC_FK_ROW_DROP ? ndim - 1 : ndim;
}

/* Evaluates a FUSED node of a row region (kernel_rows.c). */
int lc_fused_eval_rows(struct lc_node *n);
/* Output copies of fused kernels (kernel.c): with `stream`, non-temporal
 * stores (no read of the destination), to be fenced by
 * lc_fused_stream_done before the kernel returns; lc_fused_want_stream
 * says whether outputs of that many bytes take them. */
void lc_fused_copy_out(char *dst, const char *src, size_t n, bool stream);
void lc_fused_stream_done(bool stream);
bool lc_fused_want_stream(int64_t out_bytes);

/* Builds the FUSED node(s) for a region blob over region inputs `in` with
 * the given region shape (written into a copy of the blob). outs[k] are new
 * references (a single node, or tuple getters when nout > 1). 0, or 1
 * after reporting. */
int lc_fused_build(const struct lc_fused_hdr *blob, int ndim, const int *shape,
                   struct lc_node *const *in, struct lc_node **outs);

/* Transformation rules of FUSED nodes (fused_rules.c; the contract is
 * ops/prim.h's): the region is expanded into its instructions and the
 * transform runs over them. */
int lc_fused_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                 struct lc_node **out);
int lc_fused_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
int lc_fused_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                  struct lc_node **out, int *out_ax);

/* ---- dumps (dump.c) ---- */
/* When LACE_DUMP_GRAPH is set: prints p as DOT (and fused kernels) to
 * stderr under the given title. */
void lc_compile_dump(const struct lc_cprog *p, const char *title);
/* When LACE_DUMP_GRAPH is set: prints a printf-style note as a DOT
 * comment line to stderr (why a pass declined, and the like). */
void lc_compile_dump_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- cache (cache.c) ---- */
struct lc_centry;
struct lc_ckey {
  int kind; /* 0: a compiled closure's private id; 1: mlx_detail_compile id */
  uintptr_t id;
  uint64_t stream; /* the caller's default stream (lc_api_default_stream_key) */
  int nin;
  const mlx_dtype *dtypes;
  const int *ndims;
  const int *const *shapes;
  bool shapeless;
  size_t nconst;
  const uint64_t *consts;
};
/* Entries that may serve key (same dtypes and ranks; same shapes unless
 * shapeless and the program is shape-polymorphic), most recently used
 * first: up to max, each retained, into out. Returns how many. */
int lc_cache_find(const struct lc_ckey *key, struct lc_centry **out, int max);
/* Marks e most recently used. */
void lc_cache_touch(struct lc_centry *e);
/* Inserts a new entry holding prog (taken over, also on failure), keyed
 * by key; returns it retained, or NULL after reporting. */
struct lc_centry *lc_cache_insert(const struct lc_ckey *key, struct lc_cprog *prog);
const struct lc_cprog *lc_centry_prog(const struct lc_centry *e);
void lc_centry_release(struct lc_centry *e);
/* The function's trace lock (recursive; serialises traces of one function
 * so concurrent callers of a shared compiled closure trace it once). */
int lc_cache_lock_fn(int kind, uintptr_t id, void **token);
void lc_cache_unlock_fn(void *token);
void lc_cache_erase(int kind, uintptr_t id);
void lc_cache_clear(void);
/* Number of entries (all functions, or kind/id when id != 0). */
size_t lc_cache_count(int kind, uintptr_t id);

/* ---- the compiled closure (compile.c) ---- */
/* Mode: enum mlx_compile_mode, read atomically. */
int lc_compile_mode(void);
void lc_compile_set_mode(int mode);
/* Builds the compiled closure for fun. kind/id as in lc_ckey (kind 0: the
 * id is made private). NULL after reporting. */
struct lc_closure *lc_compile_make(struct lc_closure *fun, int kind, uintptr_t id, bool shapeless,
                                   const uint64_t *constants, size_t nconst);
/* Statistics for tests: traces run on this thread. */
long lc_compile_trace_count(void);

#endif
