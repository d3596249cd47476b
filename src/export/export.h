/* Functions as .mlxfn files, both ways with MLX (mlx-c's export.h).
 *
 * File layout (MLX 0.32's): header = version string, int32 function count,
 * bool shapeless, metadata string; then per function: kwarg keys (vector
 * of strings), input ids (vector<uint64>), inputs (vector of shape +
 * dtype), output ids, and the tape: uint64 count, then per entry its
 * uint64 id and
 *  - true, input ids, the primitive (stream, name, state), a uint64
 *    sibling count; 0: the shape and dtype; else the ids, shapes and
 *    dtypes of all outputs;
 *  - false, true: a constant (shape, dtype, raw bytes; only the first
 *    time its id appears in the file, later functions refer to it);
 *  - false, false: a function input.
 * Ids are arbitrary and unique within a file.
 *
 * Export traces the closure (compile's trace + simplify, never fused) and
 * writes each instruction as MLX primitives (opmap tables, lace op ->
 * MLX name + state, sometimes several primitives). Import parses the file
 * into per-function node lists (MLX name, state, inputs), and each call
 * rebuilds them with lace's builders (opmap tables, MLX name -> builder),
 * which infer shapes, so shapeless files recompute shapes as MLX does. */
#ifndef LC_EXPORT_H
#define LC_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api/handles.h"
#include "compile/compile.h"
#include "core/node.h"
#include "export/format.h"

/* The version lace writes; lace reads files of MLX 0.32.x. */
#define LC_XFN_VERSION "0.32.4"

/* ---- import side ---- */

/* One MLX primitive application to rebuild. */
struct lc_xnode {
  const struct lc_ximp *imp;
  struct lc_xstate st;
  int nin, nout;
  int *in, *out; /* value slots (in: nin, out: nout) */
};

/* A value's recorded dtype and shape. */
struct lc_xval {
  mlx_dtype dtype;
  int ndim;
  int *shape; /* owned */
};

struct lc_xfun {
  int nkw;
  char **kw; /* sorted keyword names (the last nkw inputs) */
  int nin, nout, nval, nnode;
  int *in, *out;           /* slots of inputs and outputs */
  struct lc_xval *vals;    /* nval */
  struct lc_node **consts; /* nval; evaluated constants (owned) or NULL */
  struct lc_xnode *nodes;
};

struct lc_xfile {
  bool shapeless;
  int nfun;
  struct lc_xfun *funs;
};

/* Parses a whole file. NULL after reporting. */
struct lc_xfile *lc_xfile_read(const char *path);
/* Parses bytes (path is for messages). NULL after reporting. */
struct lc_xfile *lc_xfile_parse(const uint8_t *data, size_t len, const char *path);
void lc_xfile_free(struct lc_xfile *f);
/* The function matching nargs positional inputs and nkw keyword inputs
 * (keys sorted, values kwv), or -1 after reporting what the file holds. */
int lc_xfile_match(const struct lc_xfile *f, int nargs, struct lc_node *const *args, int nkw,
                   const char *const *keys, struct lc_node *const *kwv);
/* Whether fn takes these inputs (MLX's rule: same count, every keyword of
 * fn given, dtypes and ranks equal, shapes too unless shapeless). */
bool lc_xfun_matches(const struct lc_xfun *fn, bool shapeless, int nargs,
                     struct lc_node *const *args, int nkw, const char *const *keys,
                     struct lc_node *const *kwv);
/* Builds function fi over in[0..nin) (borrowed): out receives nout new
 * references to lazy nodes. 0, or 1 after reporting. */
int lc_xfun_call(const struct lc_xfile *f, int fi, struct lc_node *const *in,
                 struct lc_node **out);

/* What an import builder gets: the node's state, its inputs (built) and
 * its recorded outputs; it writes nout new references into out. */
struct lc_xbuild {
  const char *name;
  const struct lc_xstate *st;
  int nin, nout;
  struct lc_node *const *in;
  const struct lc_xval *rec; /* nout recorded outputs */
  struct lc_node **out;
};

struct lc_ximp {
  const char *name; /* MLX primitive name as stored in files */
  const char *sig;  /* its state's signature (format.h) */
  int nin_min, nin_max;
  int (*build)(const struct lc_xbuild *b); /* 0, or 1 after reporting */
};

/* The importer of MLX primitive `name`, or NULL. */
const struct lc_ximp *lc_ximp_find(const char *name);

/* ---- export side ---- */

/* A value written as an MLX array. */
struct lc_xout {
  uint64_t id;
  mlx_dtype dtype;
  int ndim;
  const int *shape;
};

/* The state of writing one function's tape. */
struct lc_xemit {
  const struct lc_cprog *p;
  struct lc_xwr tape;
  uint64_t ntape;
  uint64_t next_id; /* for intermediate values */
  uint64_t id_base; /* program value v is id_base + v */
  bool shapeless;   /* write shape-polymorphic forms where MLX has them */
};

static inline uint64_t lc_xe_id(const struct lc_xemit *e, int v) { return e->id_base + (uint64_t)v; }
static inline uint64_t lc_xe_new_id(struct lc_xemit *e) { return e->next_id++; }
/* Program value v as an output description. */
struct lc_xout lc_xe_val(const struct lc_xemit *e, int v);

/* Writes one primitive entry: MLX name, inputs, outputs and the state
 * (signature sig, C arguments as lc_xstate_write). 0, or 1 after
 * reporting. */
int lc_xe_prim(struct lc_xemit *e, const char *name, int nin, const uint64_t *in, int nout,
               const struct lc_xout *out, const char *sig, ...);
/* Writes a 0-d constant of dtype dt holding v; *id its id. */
int lc_xe_scalar(struct lc_xemit *e, mlx_dtype dt, double v, uint64_t *id);
/* The single-output case over the instruction's own inputs and output. */
int lc_xe_same(struct lc_xemit *e, const struct lc_cinstr *ins, const char *name,
               const char *sig, ...);

/* Writer of one lace op. */
struct lc_xexp {
  int op;
  int (*emit)(struct lc_xemit *e, const struct lc_cinstr *ins);
};
/* The writer of lace op `op`, or NULL. */
const struct lc_xexp *lc_xexp_find(int op);

/* Family tables (NULL-terminated by name / op -1). */
extern const struct lc_ximp lc_ximp_ew[], lc_ximp_shape[], lc_ximp_reduce[], lc_ximp_index[],
    lc_ximp_misc[];
extern const struct lc_xexp lc_xexp_ew[], lc_xexp_shape[], lc_xexp_reduce[], lc_xexp_index[],
    lc_xexp_misc[], lc_xexp_norm[];
/* Writes REDUCE of kind var/std as MLX's ops compose it (opmap_norm.c). */
int lc_xnorm_var(struct lc_xemit *e, const struct lc_cinstr *ins, int kind, int ddof, int naxes,
                 const int *axes);

/* ---- exporter (export.c) ---- */
struct lc_xporter {
  FILE *f;
  char *path;
  struct lc_closure *fun;    /* positional closure, or */
  struct lc_xclosure *kwfun; /* a kwargs closure */
  bool shapeless;
  int count;
  uint64_t next_id;          /* ids are unique across the file */
  struct lc_xfile done;      /* signatures exported so far (inputs only) */
};

/* Opens path and writes the header. NULL after reporting. */
struct lc_xporter *lc_xporter_new(const char *path, struct lc_closure *fun,
                                  struct lc_xclosure *kwfun, bool shapeless);
void lc_xporter_free(struct lc_xporter *x);
/* Traces the function on args (+ kwargs, keys in any order) and appends
 * it. 0, or 1 after reporting. */
int lc_xporter_apply(struct lc_xporter *x, int nargs, struct lc_node *const *args, int nkw,
                     const char *const *keys, struct lc_node *const *kwv);
/* Appends traced program p (keyword keys sorted) to the file and rewrites
 * the header; records the inputs' signature. 0, or 1 after reporting. */
int lc_xporter_write(struct lc_xporter *x, const struct lc_cprog *p, int nkw,
                     const char *const *keys);
int lc_xporter_remember(struct lc_xporter *x, int nin, struct lc_node *const *in, int nkw,
                        const char *const *keys);

#endif
