/* The binary stream of MLX's .mlxfn files, and primitive states.
 *
 * Encoding (MLX's serialize/deserialize, little endian): arithmetic values
 * as their bytes; bool as one byte; enums as int32; strings and vectors as
 * a uint64 count then the elements; a shape is a vector of int32; a dtype
 * is its int32 value (mlx_dtype order) then its uint8 byte size; a stream
 * is three int32 (index, device type, device index).
 *
 * Reading is bounds-checked and sticky: the first failure is reported
 * once ("import_function: <file>: ...") and sets `bad`; later reads return
 * zeros without reporting, so callers test `bad` after a group of reads.
 * Counts are checked against the bytes left before anything is allocated.
 *
 * A primitive's state is described by a signature string, one character
 * per serialized item:
 *   i int32   b bool   f float32   d float64   D dtype   Z uint64
 *   I vector<int32> (shapes, axes)   L vector<int64> (strides)
 *   U vector<uint64> (size_t axes)   S string */
#ifndef LC_EXPORT_FORMAT_H
#define LC_EXPORT_FORMAT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlx/c/array.h"

/* ---- reading ---- */
struct lc_xrd {
  const uint8_t *p;
  size_t len, pos;
  bool bad;
  const char *file; /* for messages */
};

/* Reports "import_function: <file>: <message> (at byte N)" once; sets bad.
 * Returns 1. */
int lc_xrd_fail(struct lc_xrd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint8_t lc_xrd_u8(struct lc_xrd *r);
bool lc_xrd_bool(struct lc_xrd *r);
int32_t lc_xrd_i32(struct lc_xrd *r);
uint64_t lc_xrd_u64(struct lc_xrd *r);
float lc_xrd_f32(struct lc_xrd *r);
double lc_xrd_f64(struct lc_xrd *r);
/* A count of elements of elem_size bytes each that must fit in what is
 * left; 0 when bad. */
uint64_t lc_xrd_count(struct lc_xrd *r, size_t elem_size, const char *what);
/* A malloc'd NUL-terminated string (NULL when bad). */
char *lc_xrd_str(struct lc_xrd *r);
/* A shape: *ndim and a malloc'd array (NULL for ndim 0); entries >= 0,
 * at most LC_API_MAX_DIMS of them. 0, or 1 when bad. */
int lc_xrd_shape(struct lc_xrd *r, int *ndim, int **shape);
int lc_xrd_dtype(struct lc_xrd *r, mlx_dtype *dt);
/* Skips n bytes that must be present; returns a pointer to them. */
const uint8_t *lc_xrd_bytes(struct lc_xrd *r, size_t n);

/* ---- writing (into a growable buffer) ---- */
struct lc_xwr {
  uint8_t *buf;
  size_t len, cap;
  bool bad; /* out of memory (reported once) */
};

void lc_xwr_bytes(struct lc_xwr *w, const void *p, size_t n);
void lc_xwr_u8(struct lc_xwr *w, uint8_t v);
void lc_xwr_bool(struct lc_xwr *w, bool v);
void lc_xwr_i32(struct lc_xwr *w, int32_t v);
void lc_xwr_u64(struct lc_xwr *w, uint64_t v);
void lc_xwr_f32(struct lc_xwr *w, float v);
void lc_xwr_f64(struct lc_xwr *w, double v);
void lc_xwr_str(struct lc_xwr *w, const char *s);
void lc_xwr_shape(struct lc_xwr *w, int ndim, const int *shape);
void lc_xwr_dtype(struct lc_xwr *w, mlx_dtype dt);
void lc_xwr_free(struct lc_xwr *w);

/* ---- primitive states ---- */
struct lc_xitem {
  char kind;   /* the signature character */
  int64_t i;   /* i b D Z */
  double f;    /* f d */
  int64_t *v;  /* I L U: owned, n entries */
  int n;
  char *s;     /* S: owned */
};

struct lc_xstate {
  int n;
  struct lc_xitem *items; /* owned */
};

/* Reads the items of signature sig. 0, or 1 when bad (st holds nothing). */
int lc_xstate_read(struct lc_xrd *r, const char *sig, struct lc_xstate *st);
void lc_xstate_free(struct lc_xstate *st);

/* Writes a state from C arguments, one or two per signature character:
 * i b D: int; f d: double; Z: uint64_t; I: int n, const int *v;
 * L: int n, const int64_t *v; U: int n, const int *v; S: const char *. */
void lc_xstate_write(struct lc_xwr *w, const char *sig, ...);
void lc_xstate_vwrite(struct lc_xwr *w, const char *sig, va_list ap);

/* Vector item k as ints, into out (capacity cap): its length, or -1 when
 * it does not fit or an entry is outside int range. */
int lc_xstate_ints(const struct lc_xstate *st, int k, int *out, int cap);

#endif
