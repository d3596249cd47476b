/* The .mlxfn byte stream (see format.h): bounds-checked reads, buffered
 * writes, primitive states by signature. The host is little endian (as
 * every platform lace builds on); values are copied bytewise. */
#include "export/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/dtype.h"
#include "core/error.h"

/* ---- reading ---- */

int lc_xrd_fail(struct lc_xrd *r, const char *fmt, ...) {
  if (r->bad) return 1;
  r->bad = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return lc_error("import_function: %s: %s (at byte %zu)", r->file ? r->file : "", msg, r->pos);
}

static const uint8_t *take(struct lc_xrd *r, size_t n, const char *what) {
  if (r->bad) return NULL;
  if (n > r->len - r->pos) {
    lc_xrd_fail(r, "file truncated while reading %s", what);
    return NULL;
  }
  const uint8_t *p = r->p + r->pos;
  r->pos += n;
  return p;
}

#define READ_AS(T, what)                   \
  do {                                     \
    T v = 0;                               \
    const uint8_t *p = take(r, sizeof v, what); \
    if (p) memcpy(&v, p, sizeof v);        \
    return v;                              \
  } while (0)

uint8_t lc_xrd_u8(struct lc_xrd *r) { READ_AS(uint8_t, "a byte"); }
int32_t lc_xrd_i32(struct lc_xrd *r) { READ_AS(int32_t, "an int32"); }
uint64_t lc_xrd_u64(struct lc_xrd *r) { READ_AS(uint64_t, "a uint64"); }
float lc_xrd_f32(struct lc_xrd *r) { READ_AS(float, "a float32"); }
double lc_xrd_f64(struct lc_xrd *r) { READ_AS(double, "a float64"); }

bool lc_xrd_bool(struct lc_xrd *r) {
  uint8_t b = lc_xrd_u8(r);
  if (b > 1) lc_xrd_fail(r, "invalid bool value %u", b);
  return b == 1;
}

const uint8_t *lc_xrd_bytes(struct lc_xrd *r, size_t n) { return take(r, n, "array data"); }

uint64_t lc_xrd_count(struct lc_xrd *r, size_t elem_size, const char *what) {
  uint64_t n = lc_xrd_u64(r);
  if (r->bad) return 0;
  uint64_t left = r->len - r->pos;
  if (elem_size && n > left / elem_size) {
    lc_xrd_fail(r, "invalid count %llu of %s", (unsigned long long)n, what);
    return 0;
  }
  return n;
}

char *lc_xrd_str(struct lc_xrd *r) {
  uint64_t n = lc_xrd_count(r, 1, "string bytes");
  const uint8_t *p = take(r, (size_t)n, "a string");
  if (!p) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) {
    lc_xrd_fail(r, "out of memory");
    return NULL;
  }
  if (n) memcpy(s, p, (size_t)n);
  s[n] = 0;
  return s;
}

int lc_xrd_shape(struct lc_xrd *r, int *ndim, int **shape) {
  *ndim = 0;
  *shape = NULL;
  uint64_t n = lc_xrd_count(r, 4, "shape dimensions");
  if (r->bad) return 1;
  if (n > LC_API_MAX_DIMS) return lc_xrd_fail(r, "shape with %llu dimensions", (unsigned long long)n);
  int *s = n ? malloc(sizeof(int) * (size_t)n) : NULL;
  if (n && !s) return lc_xrd_fail(r, "out of memory");
  for (uint64_t d = 0; d < n; d++) {
    s[d] = lc_xrd_i32(r);
    if (!r->bad && s[d] < 0) lc_xrd_fail(r, "negative dimension %d in a shape", s[d]);
  }
  if (r->bad) {
    free(s);
    return 1;
  }
  *ndim = (int)n;
  *shape = s;
  return 0;
}

int lc_xrd_dtype(struct lc_xrd *r, mlx_dtype *dt) {
  int32_t v = lc_xrd_i32(r);
  uint8_t size = lc_xrd_u8(r);
  if (r->bad) return 1;
  if (v < 0 || v >= LC_NDTYPES) return lc_xrd_fail(r, "unknown dtype value %d", v);
  if (size != lc_dtype_size((mlx_dtype)v))
    return lc_xrd_fail(r, "dtype %s with size %u", lc_dtype_name((mlx_dtype)v), size);
  *dt = (mlx_dtype)v;
  return 0;
}

/* ---- writing ---- */

void lc_xwr_bytes(struct lc_xwr *w, const void *p, size_t n) {
  if (w->bad) return;
  if (n > w->cap - w->len) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->len < n) cap *= 2;
    uint8_t *b = realloc(w->buf, cap);
    if (!b) {
      w->bad = true;
      lc_error("export_function: out of memory");
      return;
    }
    w->buf = b;
    w->cap = cap;
  }
  if (n) memcpy(w->buf + w->len, p, n);
  w->len += n;
}

void lc_xwr_u8(struct lc_xwr *w, uint8_t v) { lc_xwr_bytes(w, &v, 1); }
void lc_xwr_bool(struct lc_xwr *w, bool v) { lc_xwr_u8(w, v ? 1 : 0); }
void lc_xwr_i32(struct lc_xwr *w, int32_t v) { lc_xwr_bytes(w, &v, sizeof v); }
void lc_xwr_u64(struct lc_xwr *w, uint64_t v) { lc_xwr_bytes(w, &v, sizeof v); }
void lc_xwr_f32(struct lc_xwr *w, float v) { lc_xwr_bytes(w, &v, sizeof v); }
void lc_xwr_f64(struct lc_xwr *w, double v) { lc_xwr_bytes(w, &v, sizeof v); }

void lc_xwr_str(struct lc_xwr *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  lc_xwr_u64(w, n);
  lc_xwr_bytes(w, s, n);
}

void lc_xwr_shape(struct lc_xwr *w, int ndim, const int *shape) {
  lc_xwr_u64(w, (uint64_t)ndim);
  for (int d = 0; d < ndim; d++) lc_xwr_i32(w, shape[d]);
}

void lc_xwr_dtype(struct lc_xwr *w, mlx_dtype dt) {
  lc_xwr_i32(w, (int32_t)dt);
  lc_xwr_u8(w, (uint8_t)lc_dtype_size(dt));
}

void lc_xwr_free(struct lc_xwr *w) {
  free(w->buf);
  memset(w, 0, sizeof *w);
}

/* ---- states ---- */

void lc_xstate_free(struct lc_xstate *st) {
  for (int k = 0; k < st->n; k++) {
    free(st->items[k].v);
    free(st->items[k].s);
  }
  free(st->items);
  st->items = NULL;
  st->n = 0;
}

static int read_vec(struct lc_xrd *r, struct lc_xitem *it, size_t esz) {
  uint64_t n = lc_xrd_count(r, esz, "vector entries");
  if (r->bad) return 1;
  if (n > LC_API_MAX_DIMS) return lc_xrd_fail(r, "state vector of %llu entries", (unsigned long long)n);
  it->n = (int)n;
  it->v = malloc(sizeof(int64_t) * (n ? (size_t)n : 1));
  if (!it->v) return lc_xrd_fail(r, "out of memory");
  for (uint64_t j = 0; j < n; j++)
    it->v[j] = esz == 4 ? (int64_t)lc_xrd_i32(r) : (int64_t)lc_xrd_u64(r);
  return r->bad;
}

static int read_item(struct lc_xrd *r, char c, struct lc_xitem *it) {
  it->kind = c;
  mlx_dtype dt;
  switch (c) {
  case 'i': it->i = lc_xrd_i32(r); break;
  case 'b': it->i = lc_xrd_bool(r); break;
  case 'f': it->f = lc_xrd_f32(r); break;
  case 'd': it->f = lc_xrd_f64(r); break;
  case 'Z': it->i = (int64_t)lc_xrd_u64(r); break;
  case 'D':
    if (!lc_xrd_dtype(r, &dt)) it->i = dt;
    break;
  case 'I': return read_vec(r, it, 4);
  case 'L':
  case 'U': return read_vec(r, it, 8);
  case 'S': it->s = lc_xrd_str(r); break;
  default: return lc_xrd_fail(r, "internal: bad state signature '%c'", c);
  }
  return r->bad;
}

int lc_xstate_read(struct lc_xrd *r, const char *sig, struct lc_xstate *st) {
  size_t n = strlen(sig);
  st->n = 0;
  st->items = calloc(n ? n : 1, sizeof *st->items);
  if (!st->items) return lc_xrd_fail(r, "out of memory");
  for (size_t k = 0; k < n; k++) {
    st->n = (int)k + 1;
    if (read_item(r, sig[k], &st->items[k])) {
      lc_xstate_free(st);
      return 1;
    }
  }
  return 0;
}

void lc_xstate_write(struct lc_xwr *w, const char *sig, ...) {
  va_list ap;
  va_start(ap, sig);
  lc_xstate_vwrite(w, sig, ap);
  va_end(ap);
}

void lc_xstate_vwrite(struct lc_xwr *w, const char *sig, va_list ap) {
  for (const char *c = sig; *c; c++) {
    switch (*c) {
    case 'i': lc_xwr_i32(w, va_arg(ap, int)); break;
    case 'b': lc_xwr_bool(w, va_arg(ap, int) != 0); break;
    case 'D': lc_xwr_dtype(w, (mlx_dtype)va_arg(ap, int)); break;
    case 'f': lc_xwr_f32(w, (float)va_arg(ap, double)); break;
    case 'd': lc_xwr_f64(w, va_arg(ap, double)); break;
    case 'Z': lc_xwr_u64(w, va_arg(ap, uint64_t)); break;
    case 'I': {
      int n = va_arg(ap, int);
      const int *v = va_arg(ap, const int *);
      lc_xwr_shape(w, n, v);
      break;
    }
    case 'L': {
      int n = va_arg(ap, int);
      const int64_t *v = va_arg(ap, const int64_t *);
      lc_xwr_u64(w, (uint64_t)n);
      for (int j = 0; j < n; j++) lc_xwr_u64(w, (uint64_t)v[j]);
      break;
    }
    case 'U': {
      int n = va_arg(ap, int);
      const int *v = va_arg(ap, const int *);
      lc_xwr_u64(w, (uint64_t)n);
      for (int j = 0; j < n; j++) lc_xwr_u64(w, (uint64_t)(int64_t)v[j]);
      break;
    }
    case 'S': lc_xwr_str(w, va_arg(ap, const char *)); break;
    default: break;
    }
  }
}

int lc_xstate_ints(const struct lc_xstate *st, int k, int *out, int cap) {
  if (k >= st->n || !st->items[k].v) return -1;
  const struct lc_xitem *it = &st->items[k];
  if (it->n > cap) return -1;
  for (int j = 0; j < it->n; j++) {
    if (it->v[j] < INT32_MIN || it->v[j] > INT32_MAX) return -1;
    out[j] = (int)it->v[j];
  }
  return it->n;
}
