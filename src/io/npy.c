/* numpy .npy files: format versions 1.0, 2.0 and 3.0.
 * Layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.x, u32 LE
 * otherwise), a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), } padded with spaces and ending in '\n', then the data.
 * Saving writes version 1.0 (2.0 when the header needs it), little-endian,
 * C order, the whole preamble padded to a multiple of 64 bytes; bfloat16 is
 * written as '<V2' like MLX. Loading also accepts big-endian data (swapped)
 * and Fortran order (reordered to C order); loaded arrays are contiguous
 * evaluated leaves. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "io/io.h"

#define MAX_NDIM 64

static const char *descr_of(mlx_dtype t) {
  switch (t) {
    case MLX_BOOL: return "|b1";
    case MLX_UINT8: return "|u1";
    case MLX_UINT16: return "<u2";
    case MLX_UINT32: return "<u4";
    case MLX_UINT64: return "<u8";
    case MLX_INT8: return "|i1";
    case MLX_INT16: return "<i2";
    case MLX_INT32: return "<i4";
    case MLX_INT64: return "<i8";
    case MLX_FLOAT16: return "<f2";
    case MLX_FLOAT32: return "<f4";
    case MLX_FLOAT64: return "<f8";
    case MLX_BFLOAT16: return "<V2";
    case MLX_COMPLEX64: return "<c8";
  }
  return NULL;
}

/* Parses "<f4"-style descriptors: 0 with *dt and *swap set, or 1 (unreported). */
static int dtype_of(const char *d, mlx_dtype *dt, int *swap) {
  if (strlen(d) < 3) return 1;
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return 1;
  static const struct {
    const char *code;
    mlx_dtype t;
  } table[] = {{"b1", MLX_BOOL},    {"u1", MLX_UINT8},   {"u2", MLX_UINT16},  {"u4", MLX_UINT32},
               {"u8", MLX_UINT64},  {"i1", MLX_INT8},    {"i2", MLX_INT16},   {"i4", MLX_INT32},
               {"i8", MLX_INT64},   {"f2", MLX_FLOAT16}, {"f4", MLX_FLOAT32}, {"f8", MLX_FLOAT64},
               {"V2", MLX_BFLOAT16}, {"c8", MLX_COMPLEX64}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(d + 1, table[i].code)) {
      *dt = table[i].t;
      *swap = order == '>' && lc_dtype_size(*dt) > 1;
      return 0;
    }
  return 1;
}

int lc_npy_save(struct lc_out *out, struct lc_node *n) {
  if (lc_eval(&n, 1)) return 1; /* before any byte is written */
  struct lc_sbuf h = {0};
  lc_sbuf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of(n->dtype));
  for (int i = 0; i < n->ndim; i++)
    lc_sbuf_printf(&h, i + 1 < n->ndim || n->ndim > 1 ? "%d, " : "%d,", n->shape[i]);
  if (n->ndim > 1) h.len -= 2; /* "(2, 3)" rather than "(2, 3, )" */
  lc_sbuf_printf(&h, "), }");
  if (h.failed) {
    free(h.p);
    return lc_error("%s: out of memory", out->fn);
  }
  int major = 1;
  size_t pre = 10; /* magic + version + u16 length */
  if (pre + h.len + 1 > 65535) major = 2, pre = 12;
  size_t total = (pre + h.len + 1 + 63) / 64 * 64;
  while (h.len + 1 + pre < total) lc_sbuf_putn(&h, " ", 1);
  lc_sbuf_putn(&h, "\n", 1);
  if (h.failed) {
    free(h.p);
    return lc_error("%s: out of memory", out->fn);
  }
  unsigned char magic[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
  size_t hl = h.len;
  for (size_t i = 0; i < pre - 8; i++) magic[8 + i] = (unsigned char)(hl >> (8 * i));
  int rc = lc_out_write(out, magic, pre) || lc_out_write(out, h.p, h.len) ||
           lc_out_write_node(out, n);
  free(h.p);
  return rc;
}

/* ---- header dict parsing ---- */

struct hdr {
  const char *s;
  size_t len, pos;
};

static void ws(struct hdr *h) {
  while (h->pos < h->len && (h->s[h->pos] == ' ' || h->s[h->pos] == '\t' || h->s[h->pos] == '\n'))
    h->pos++;
}

static int eat(struct hdr *h, char c) {
  ws(h);
  if (h->pos < h->len && h->s[h->pos] == c) {
    h->pos++;
    return 1;
  }
  return 0;
}

/* A quoted Python string literal without escapes, into buf. */
static int str_lit(struct hdr *h, char *buf, size_t cap) {
  ws(h);
  if (h->pos >= h->len || (h->s[h->pos] != '\'' && h->s[h->pos] != '"')) return 1;
  char q = h->s[h->pos++];
  size_t n = 0;
  while (h->pos < h->len && h->s[h->pos] != q) {
    if (h->s[h->pos] == '\\' || n + 1 >= cap) return 1;
    buf[n++] = h->s[h->pos++];
  }
  if (h->pos >= h->len) return 1;
  h->pos++;
  buf[n] = 0;
  return 0;
}

static int parse_header(struct hdr *h, char *descr, size_t dcap, int *fortran, int *ndim,
                        int *shape, const char **why) {
  int have_d = 0, have_f = 0, have_s = 0;
  *why = "expected a dictionary";
  if (!eat(h, '{')) return 1;
  for (;;) {
    if (eat(h, '}')) break;
    char key[32];
    *why = "expected a quoted key";
    if (str_lit(h, key, sizeof key)) return 1;
    *why = "expected ':'";
    if (!eat(h, ':')) return 1;
    if (!strcmp(key, "descr")) {
      *why = "'descr' is not a simple type string (structured dtypes are unsupported)";
      if (str_lit(h, descr, dcap)) return 1;
      have_d = 1;
    } else if (!strcmp(key, "fortran_order")) {
      ws(h);
      if (h->len - h->pos >= 4 && !memcmp(h->s + h->pos, "True", 4)) *fortran = 1, h->pos += 4;
      else if (h->len - h->pos >= 5 && !memcmp(h->s + h->pos, "False", 5)) *fortran = 0, h->pos += 5;
      else return *why = "'fortran_order' must be True or False", 1;
      have_f = 1;
    } else if (!strcmp(key, "shape")) {
      *why = "'shape' must be a tuple of non-negative integers";
      if (!eat(h, '(')) return 1;
      *ndim = 0;
      for (;;) {
        if (eat(h, ')')) break;
        ws(h);
        long long v = 0;
        int digits = 0;
        while (h->pos < h->len && h->s[h->pos] >= '0' && h->s[h->pos] <= '9') {
          v = v * 10 + (h->s[h->pos++] - '0');
          if (v > INT_MAX) return *why = "a dimension of 'shape' exceeds INT_MAX", 1;
          digits++;
        }
        if (!digits) return 1;
        if (*ndim >= MAX_NDIM) return *why = "'shape' has too many dimensions", 1;
        shape[(*ndim)++] = (int)v;
        if (eat(h, ',')) continue;
        if (eat(h, ')')) break;
        return 1;
      }
      have_s = 1;
    } else {
      return *why = "unknown key", 1;
    }
    if (eat(h, ',')) continue;
    *why = "expected ',' or '}'";
    if (eat(h, '}')) break;
    return 1;
  }
  *why = "missing 'descr', 'fortran_order' or 'shape'";
  return !(have_d && have_f && have_s);
}

static void swap_bytes(void *data, size_t count, size_t width) {
  unsigned char *p = data;
  for (size_t i = 0; i < count; i++, p += width)
    for (size_t a = 0, b = width - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

struct lc_node *lc_npy_load(struct lc_in *in) {
  unsigned char pre[8];
  if (lc_in_read(in, pre, 8, "the npy magic")) return NULL;
  if (memcmp(pre, "\x93NUMPY", 6)) {
    lc_error("%s: %s is not an npy file (bad magic string)", in->fn, in->label);
    return NULL;
  }
  if (pre[6] < 1 || pre[6] > 3) {
    lc_error("%s: unsupported npy format version %d.%d in %s", in->fn, pre[6], pre[7], in->label);
    return NULL;
  }
  unsigned char lb[4] = {0};
  size_t lsz = pre[6] == 1 ? 2 : 4;
  if (lc_in_read(in, lb, lsz, "the npy header length")) return NULL;
  size_t hlen = (size_t)lb[0] | (size_t)lb[1] << 8 | (size_t)lb[2] << 16 | (size_t)lb[3] << 24;
  if (hlen > (1u << 24)) {
    lc_error("%s: npy header of %zu bytes in %s is implausibly large", in->fn, hlen, in->label);
    return NULL;
  }
  if (lc_in_check_avail(in, hlen, "the npy header")) return NULL;
  char *text = malloc(hlen + 1);
  if (!text) {
    lc_error("%s: out of memory", in->fn);
    return NULL;
  }
  if (lc_in_read(in, text, hlen, "the npy header")) {
    free(text);
    return NULL;
  }
  char descr[32];
  int fortran = 0, ndim = 0, shape[MAX_NDIM];
  const char *why = NULL;
  struct hdr h = {text, hlen, 0};
  int bad = parse_header(&h, descr, sizeof descr, &fortran, &ndim, shape, &why);
  free(text);
  if (bad) {
    lc_error("%s: malformed npy header in %s: %s", in->fn, in->label, why);
    return NULL;
  }
  mlx_dtype dt;
  int swap = 0;
  if (dtype_of(descr, &dt, &swap)) {
    lc_error("%s: unsupported npy dtype '%s' in %s", in->fn, descr, in->label);
    return NULL;
  }
  uint64_t count = 1;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(count, (uint64_t)shape[i], &count) || count > (UINT64_MAX >> 4)) {
      lc_error("%s: npy shape in %s is too large", in->fn, in->label);
      return NULL;
    }
  int fshape[MAX_NDIM];
  for (int i = 0; i < ndim; i++) fshape[i] = fortran ? shape[ndim - 1 - i] : shape[i];
  struct lc_node *n = lc_in_read_node(in, dt, ndim, fshape, "the npy array data");
  if (!n) return NULL;
  size_t isz = lc_dtype_size(dt);
  if (swap) {
    if (dt == MLX_COMPLEX64) swap_bytes(lc_node_data(n), (size_t)count * 2, 4);
    else swap_bytes(lc_node_data(n), (size_t)count, isz);
  }
  if (fortran && ndim > 1) {
    /* n holds the reversed shape in C order; view it transposed, then copy. */
    struct lc_node *t = lc_node_alloc(dt, ndim, shape);
    if (!t) {
      lc_node_release(n);
      return NULL;
    }
    int64_t st[MAX_NDIM], s = 1;
    for (int i = 0; i < ndim; i++) st[i] = s, s *= shape[i];
    lc_node_set_view(t, n, st, 0);
    lc_node_release(n);
    if (lc_node_make_contiguous(t)) {
      lc_node_release(t);
      return NULL;
    }
    n = t;
  }
  return n;
}
