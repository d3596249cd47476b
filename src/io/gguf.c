/* GGUF container and file format (see gguf.h). Layout (little-endian):
 *   "GGUF", u32 version, u64 n_tensors, u64 n_kv,
 *   n_kv x (string key, u32 value type, value),
 *   n_tensors x (string name, u32 n_dims, u64 dims[n_dims] innermost first,
 *                u32 ggml type, u64 offset relative to the data section),
 *   padding to `general.alignment` (default 32), tensor data.
 * Strings are u64 length + bytes. Every count and length read from a file is
 * checked against what the file can hold before anything is allocated. */
#include "io/gguf.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/half.h"

#define MAX_NDIM 64
#define MAX_STRING (1u << 30)
#define MAX_COUNT (1u << 26) /* items of one list / tensors / keys */

enum {
  V_U8 = 0, V_I8 = 1, V_U16 = 2, V_I16 = 3, V_U32 = 4, V_I32 = 5, V_F32 = 6, V_BOOL = 7,
  V_STRING = 8, V_ARRAY = 9, V_U64 = 10, V_I64 = 11, V_F64 = 12
};

static int value_dtype(uint32_t v, mlx_dtype *t) {
  static const int map[] = {MLX_UINT8, MLX_INT8, MLX_UINT16, MLX_INT16, MLX_UINT32, MLX_INT32,
                            MLX_FLOAT32, MLX_BOOL, -1, -1, MLX_UINT64, MLX_INT64, MLX_FLOAT64};
  if (v > V_F64 || map[v] < 0) return 1;
  *t = (mlx_dtype)map[v];
  return 0;
}

static int dtype_value(mlx_dtype t, uint32_t *v) {
  for (uint32_t k = 0; k <= V_F64; k++) {
    mlx_dtype d;
    if (!value_dtype(k, &d) && d == t) return *v = k, 0;
  }
  return 1;
}

static const struct {
  uint32_t ggml;
  mlx_dtype t;
} tensor_types[] = {{0, MLX_FLOAT32}, {1, MLX_FLOAT16}, {24, MLX_INT8},  {25, MLX_INT16},
                    {26, MLX_INT32},  {27, MLX_INT64},  {28, MLX_FLOAT64}, {30, MLX_BFLOAT16}};

/* ---- container ---- */

struct lc_gguf *lc_gguf_new(void) {
  struct lc_gguf *g = calloc(1, sizeof *g);
  if (!g) lc_error("mlx_io_gguf: out of memory");
  return g;
}

void lc_gguf_meta_clear(struct lc_gguf_meta *m) {
  free(m->key);
  lc_node_release(m->arr);
  free(m->str);
  for (size_t i = 0; i < m->nstrs; i++) free(m->strs[i]);
  free(m->strs);
  memset(m, 0, sizeof *m);
}

void lc_gguf_delete(struct lc_gguf *g) {
  if (!g) return;
  for (size_t i = 0; i < g->narr; i++) {
    free(g->names[i]);
    lc_node_release(g->arrs[i]);
  }
  for (size_t i = 0; i < g->nmeta; i++) lc_gguf_meta_clear(&g->meta[i]);
  free(g->names);
  free(g->arrs);
  free(g->meta);
  free(g);
}

/* Appends key (absent from g) and n. 0, or 1 after reporting. */
static int append_array(struct lc_gguf *g, const char *key, struct lc_node *n) {
  if (g->narr == g->carr) {
    size_t nc = g->carr ? 2 * g->carr : 8;
    char **nn = realloc(g->names, nc * sizeof *nn);
    if (nn) g->names = nn;
    struct lc_node **na = nn ? realloc(g->arrs, nc * sizeof *na) : NULL;
    if (!na) return lc_error("mlx_io_gguf: out of memory");
    g->arrs = na;
    g->carr = nc;
  }
  char *k = strdup(key);
  if (!k) return lc_error("mlx_io_gguf: out of memory");
  g->names[g->narr] = k;
  g->arrs[g->narr++] = lc_node_retain(n);
  return 0;
}

int lc_gguf_put_array(struct lc_gguf *g, const char *key, struct lc_node *n) {
  for (size_t i = 0; i < g->narr; i++)
    if (!strcmp(g->names[i], key)) {
      lc_node_release(g->arrs[i]);
      g->arrs[i] = lc_node_retain(n);
      return 0;
    }
  return append_array(g, key, n);
}

struct lc_gguf_meta *lc_gguf_find_meta(struct lc_gguf *g, const char *key) {
  for (size_t i = 0; i < g->nmeta; i++)
    if (!strcmp(g->meta[i].key, key)) return &g->meta[i];
  return NULL;
}

int lc_gguf_put_meta(struct lc_gguf *g, struct lc_gguf_meta *m) {
  struct lc_gguf_meta *old = lc_gguf_find_meta(g, m->key);
  if (old) {
    lc_gguf_meta_clear(old);
    *old = *m;
    return 0;
  }
  if (g->nmeta == g->cmeta) {
    size_t nc = g->cmeta ? 2 * g->cmeta : 8;
    struct lc_gguf_meta *nm = realloc(g->meta, nc * sizeof *nm);
    if (!nm) {
      lc_gguf_meta_clear(m);
      return lc_error("mlx_io_gguf: out of memory");
    }
    g->meta = nm;
    g->cmeta = nc;
  }
  g->meta[g->nmeta++] = *m;
  return 0;
}

/* ---- reading ---- */

static int rd_u32(struct lc_in *in, uint32_t *v, const char *what) {
  unsigned char b[4];
  if (lc_in_read(in, b, 4, what)) return 1;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return 0;
}

static int rd_u64(struct lc_in *in, uint64_t *v, const char *what) {
  unsigned char b[8];
  if (lc_in_read(in, b, 8, what)) return 1;
  *v = 0;
  for (int i = 0; i < 8; i++) *v |= (uint64_t)b[i] << (8 * i);
  return 0;
}

static char *rd_string(struct lc_in *in, const char *what) {
  uint64_t n;
  if (rd_u64(in, &n, what)) return NULL;
  if (n > MAX_STRING) {
    lc_error("%s: %s of %llu bytes in %s is implausibly long (corrupt file?)", in->fn, what,
             (unsigned long long)n, in->label);
    return NULL;
  }
  if (lc_in_check_avail(in, n, what)) return NULL;
  char *s = malloc(n + 1);
  if (!s) {
    lc_error("%s: out of memory", in->fn);
    return NULL;
  }
  if (lc_in_read(in, s, n, what)) {
    free(s);
    return NULL;
  }
  s[n] = 0;
  return s;
}

static int check_count(struct lc_in *in, uint64_t n, uint64_t min_bytes, const char *what) {
  if (n > MAX_COUNT)
    return lc_error("%s: %s count %llu in %s is implausibly large (corrupt file?)", in->fn, what,
                    (unsigned long long)n, in->label);
  return lc_in_check_avail(in, n * min_bytes, what);
}

/* Reads one metadata value of type vt into m (key already set). */
static int rd_value(struct lc_in *in, uint32_t vt, struct lc_gguf_meta *m) {
  mlx_dtype t;
  if (vt == V_STRING) {
    m->kind = LC_GGUF_STRING;
    return !(m->str = rd_string(in, "a metadata string"));
  }
  if (vt == V_ARRAY) {
    uint32_t et;
    uint64_t n;
    if (rd_u32(in, &et, "a metadata array type") || rd_u64(in, &n, "a metadata array length"))
      return 1;
    if (et == V_STRING) {
      if (check_count(in, n, 8, "metadata string list")) return 1;
      m->kind = LC_GGUF_STRINGS;
      m->strs = calloc(n ? n : 1, sizeof *m->strs);
      if (!m->strs) return lc_error("%s: out of memory", in->fn);
      for (; m->nstrs < n; m->nstrs++)
        if (!(m->strs[m->nstrs] = rd_string(in, "a metadata string"))) return 1;
      return 0;
    }
    if (value_dtype(et, &t))
      return lc_error("%s: metadata '%s' in %s: unsupported array element type %u", in->fn, m->key,
                      in->label, et);
    if (check_count(in, n, lc_dtype_size(t), "metadata array")) return 1;
    int shape = (int)n;
    m->kind = LC_GGUF_ARRAY;
    return !(m->arr = lc_in_read_node(in, t, 1, &shape, "a metadata array"));
  }
  if (value_dtype(vt, &t))
    return lc_error("%s: metadata '%s' in %s has unknown value type %u", in->fn, m->key, in->label,
                    vt);
  m->kind = LC_GGUF_ARRAY;
  return !(m->arr = lc_in_read_node(in, t, 0, NULL, "a metadata value"));
}

struct tinfo {
  char *name;
  mlx_dtype t;
  uint32_t quant; /* 0, or the ggml type Q4_0 (2), Q4_1 (3), Q8_0 (8) */
  int ndim, shape[MAX_NDIM];
  uint64_t off, bytes;
};

static int cmp_off(const void *a, const void *b) {
  const struct tinfo *x = *(const struct tinfo *const *)a, *y = *(const struct tinfo *const *)b;
  return x->off < y->off ? -1 : x->off > y->off;
}

static int rd_tinfo(struct lc_in *in, struct tinfo *ti) {
  if (!(ti->name = rd_string(in, "a tensor name"))) return 1;
  uint32_t nd, type;
  if (rd_u32(in, &nd, "a tensor's dimension count")) return 1;
  if (nd > MAX_NDIM)
    return lc_error("%s: tensor '%s' in %s has %u dimensions", in->fn, ti->name, in->label, nd);
  ti->ndim = (int)nd;
  uint64_t count = 1;
  for (uint32_t k = 0; k < nd; k++) {
    uint64_t d;
    if (rd_u64(in, &d, "a tensor dimension")) return 1;
    if (d > INT_MAX)
      return lc_error("%s: tensor '%s' in %s: dimension %llu exceeds INT_MAX", in->fn, ti->name,
                      in->label, (unsigned long long)d);
    ti->shape[nd - 1 - k] = (int)d;
    if (__builtin_mul_overflow(count, d, &count) || count > (UINT64_MAX >> 4))
      return lc_error("%s: tensor '%s' in %s is too large", in->fn, ti->name, in->label);
  }
  if (rd_u32(in, &type, "a tensor type") || rd_u64(in, &ti->off, "a tensor offset")) return 1;
  if (type == 2 || type == 3 || type == 8) {
    if (nd == 0 || ti->shape[nd - 1] % 32)
      return lc_error("%s: quantized tensor '%s' in %s: the innermost dimension must be a "
                      "multiple of 32", in->fn, ti->name, in->label);
    ti->quant = type;
    ti->t = MLX_UINT32;
    ti->bytes = count / 32 * (type == 2 ? 18 : type == 3 ? 20 : 34);
    return 0;
  }
  size_t i;
  for (i = 0; i < sizeof tensor_types / sizeof tensor_types[0]; i++)
    if (tensor_types[i].ggml == type) break;
  if (i == sizeof tensor_types / sizeof tensor_types[0])
    return lc_error("%s: tensor '%s' in %s has ggml type %u, which is unsupported (supported: "
                    "F32, F16, BF16, F64, I8, I16, I32, I64, Q4_0, Q4_1, Q8_0)",
                    in->fn, ti->name, in->label, type);
  ti->t = tensor_types[i].t;
  ti->bytes = count * lc_dtype_size(ti->t);
  return 0;
}

/* The extra array names of quantized tensor `name` ("x.weight" gives
 * "x.scales" and "x.biases"; other names get the suffixes appended) into
 * buffers of strlen(name) + 8 bytes. */
static void quant_names(const char *name, char *scales, char *biases) {
  size_t nl = strlen(name);
  int stem = nl >= 7 && !strcmp(name + nl - 7, ".weight") ? (int)(nl - 7) : (int)nl;
  snprintf(scales, nl + 8, "%.*s.scales", stem, name);
  snprintf(biases, nl + 8, "%.*s.biases", stem, name);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every array name the tensors produce (quantized ones three) must be
 * unique: sorted, duplicates are neighbours, O(n log n). 0, or 1 after
 * reporting. */
static int check_names(struct lc_in *in, const struct tinfo *ti, uint64_t nt) {
  const char **names = calloc(nt ? 3 * nt : 1, sizeof *names);
  char **made = calloc(nt ? 2 * nt : 1, sizeof *made); /* the quantized extras */
  size_t n = 0, nm = 0;
  int rc = 1;
  if (!names || !made) {
    lc_error("%s: out of memory", in->fn);
    goto out;
  }
  for (uint64_t i = 0; i < nt; i++) {
    names[n++] = ti[i].name;
    if (!ti[i].quant) continue;
    size_t cap = strlen(ti[i].name) + 8;
    char *sc = malloc(cap), *bi = malloc(cap);
    if (sc) made[nm++] = sc;
    if (bi) made[nm++] = bi;
    if (!sc || !bi) {
      lc_error("%s: out of memory", in->fn);
      goto out;
    }
    quant_names(ti[i].name, sc, bi);
    names[n++] = sc;
    names[n++] = bi;
  }
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(names[i - 1], names[i])) {
      lc_error("%s: duplicate array name '%s' in %s (quantized tensors add '.scales' and "
               "'.biases' arrays)", in->fn, names[i], in->label);
      goto out;
    }
  rc = 0;
out:
  for (size_t i = 0; made && i < nm; i++) free(made[i]);
  free(made);
  free(names);
  return rc;
}

/* Q4_0 / Q4_1 / Q8_0 blocks of 32 weights become MLX's affine quantized
 * layout with group size 32 (as MLX's load_gguf): `name` (uint32, 8 4-bit
 * or 4 8-bit values per word, value j of a word at bits j*bits),
 * `stem.scales` and `stem.biases` (float16, one per group; stem is name
 * without a trailing ".weight", else name itself), so that
 * weight = q * scale + bias. Q4_0: q = nibble, bias = -8 d; Q4_1: bias = m;
 * Q8_0: q = int8 + 128, bias = -128 d. ggml's Q4 block stores weight j in
 * the low nibble of byte j and weight j + 16 in its high nibble. */
static size_t block_bytes(uint32_t quant) { return quant == 2 ? 18 : quant == 3 ? 20 : 34; }

/* The 32 unsigned weights of one block. */
static void block_weights(uint32_t quant, const unsigned char *b, unsigned char q[32]) {
  if (quant == 8) {
    for (int j = 0; j < 32; j++) q[j] = (unsigned char)((signed char)b[2 + j] + 128);
    return;
  }
  const unsigned char *qs = b + (quant == 2 ? 2 : 4);
  for (int j = 0; j < 16; j++) q[j] = qs[j] & 15, q[j + 16] = qs[j] >> 4;
}

static uint16_t block_bias(uint32_t quant, const unsigned char *b) {
  float d = lc_f16_to_f32((uint16_t)(b[0] | b[1] << 8));
  if (quant == 3) return (uint16_t)(b[2] | b[3] << 8);
  return lc_f32_to_f16((quant == 8 ? -128.0f : -8.0f) * d);
}

void lc_gguf_decode(uint32_t quant, enum lc_load_part part, const unsigned char *raw,
                    uint64_t nbytes, void *out) {
  uint64_t nblocks = nbytes / block_bytes(quant);
  int bits = quant == 8 ? 8 : 4, per = 32 / bits;
  uint32_t *wq = out;
  uint16_t *h = out;
  for (uint64_t k = 0; k < nblocks; k++) {
    const unsigned char *b = raw + k * block_bytes(quant);
    if (part == LC_LOAD_QSCALES) {
      h[k] = (uint16_t)(b[0] | b[1] << 8);
    } else if (part == LC_LOAD_QBIASES) {
      h[k] = block_bias(quant, b);
    } else {
      unsigned char q[32];
      block_weights(quant, b, q);
      for (int j = 0; j < 32 / per; j++) {
        uint32_t word = 0;
        for (int e = 0; e < per; e++) word |= (uint32_t)q[j * per + e] << (e * bits);
        wq[k * (uint64_t)(32 / per) + (uint64_t)j] = word;
      }
    }
  }
}

/* The shapes of a quantized tensor's weights and of its scales/biases. */
static void quant_shapes(const struct tinfo *t, int *ws, int *ss) {
  int nd = t->ndim, bits = t->quant == 8 ? 8 : 4;
  memcpy(ws, t->shape, sizeof(int) * (size_t)nd);
  memcpy(ss, t->shape, sizeof(int) * (size_t)nd);
  ws[nd - 1] = t->shape[nd - 1] / (32 / bits);
  ss[nd - 1] = t->shape[nd - 1] / 32;
}

/* Appends the three arrays of quantized tensor t (names are unique:
 * check_names). vals are borrowed. 0, or 1 after reporting. */
static int append_quantized(struct lc_in *in, struct lc_gguf *g, const struct tinfo *t,
                            struct lc_node *const vals[3]) {
  size_t nl = strlen(t->name);
  char *ks = malloc(nl + 8), *kb = malloc(nl + 8);
  int rc = 1;
  if (!ks || !kb) {
    lc_error("%s: out of memory", in->fn);
  } else {
    quant_names(t->name, ks, kb);
    const char *keys[3] = {t->name, ks, kb};
    rc = 0;
    for (int k = 0; k < 3 && !rc; k++) rc = append_array(g, keys[k], vals[k]);
  }
  free(ks);
  free(kb);
  return rc;
}

static int read_quantized(struct lc_in *in, struct lc_gguf *g, const struct tinfo *t,
                          const char *what) {
  int ws[MAX_NDIM], ss[MAX_NDIM];
  quant_shapes(t, ws, ss);
  if (lc_in_check_avail(in, t->bytes, what)) return 1;
  unsigned char *raw = malloc(t->bytes ? (size_t)t->bytes : 1);
  struct lc_node *v[3] = {NULL, NULL, NULL};
  int rc = 1;
  if (!raw) {
    lc_error("%s: out of memory", in->fn);
    goto out;
  }
  if (lc_in_read(in, raw, (size_t)t->bytes, what)) goto out;
  v[0] = lc_node_alloc(MLX_UINT32, t->ndim, ws);
  v[1] = lc_node_alloc(MLX_FLOAT16, t->ndim, ss);
  v[2] = lc_node_alloc(MLX_FLOAT16, t->ndim, ss);
  for (int k = 0; k < 3; k++)
    if (!v[k] || lc_node_alloc_data(v[k])) goto out;
  for (int k = 0; k < 3; k++)
    lc_gguf_decode(t->quant, (enum lc_load_part)(LC_LOAD_QWEIGHTS + k), raw, t->bytes,
                   lc_node_data(v[k]));
  rc = append_quantized(in, g, t, v);
out:
  free(raw);
  for (int k = 0; k < 3; k++) lc_node_release(v[k]);
  return rc;
}

/* Lazy arrays of tensor t at byte data + t->off of the file (bounds
 * checked by the caller). 0, or 1 after reporting. */
static int lazy_tensor(struct lc_in *in, struct lc_gguf *g, struct lc_source *src,
                       const struct tinfo *t, uint64_t data) {
  uint64_t off = data + t->off;
  if (!t->quant) {
    struct lc_node *n = lc_load_node(src, t->t, t->ndim, t->shape, off, t->bytes, LC_LOAD_RAW, 0);
    int bad = !n || append_array(g, t->name, n);
    lc_node_release(n);
    return bad;
  }
  int ws[MAX_NDIM], ss[MAX_NDIM];
  quant_shapes(t, ws, ss);
  struct lc_node *v[3] = {
      lc_load_node(src, MLX_UINT32, t->ndim, ws, off, t->bytes, LC_LOAD_QWEIGHTS, t->quant),
      lc_load_node(src, MLX_FLOAT16, t->ndim, ss, off, t->bytes, LC_LOAD_QSCALES, t->quant),
      lc_load_node(src, MLX_FLOAT16, t->ndim, ss, off, t->bytes, LC_LOAD_QBIASES, t->quant)};
  int rc = !v[0] || !v[1] || !v[2] || append_quantized(in, g, t, v);
  for (int k = 0; k < 3; k++) lc_node_release(v[k]);
  return rc;
}

/* 0 when tensor t's data, at byte data + t->off, lies within the file. */
static int check_within(struct lc_in *in, const struct tinfo *t, uint64_t data) {
  uint64_t room = (uint64_t)in->len - data;
  if (t->off > room || t->bytes > room - t->off)
    return lc_error("%s: the data of tensor '%s' (%llu bytes at offset %llu) extends past the end "
                    "of %s (truncated or corrupt file)",
                    in->fn, t->name, (unsigned long long)t->bytes, (unsigned long long)t->off,
                    in->label);
  return 0;
}

struct lc_gguf *lc_gguf_load(struct lc_in *in) {
  unsigned char magic[4];
  uint32_t version;
  uint64_t nt, nkv;
  if (lc_in_read(in, magic, 4, "the GGUF magic")) return NULL;
  if (memcmp(magic, "GGUF", 4)) {
    lc_error("%s: %s is not a GGUF file (bad magic)", in->fn, in->label);
    return NULL;
  }
  if (rd_u32(in, &version, "the GGUF version")) return NULL;
  if (version != 2 && version != 3) {
    lc_error("%s: unsupported GGUF version %u in %s (2 and 3 are supported)", in->fn, version,
             in->label);
    return NULL;
  }
  if (rd_u64(in, &nt, "the tensor count") || rd_u64(in, &nkv, "the metadata count") ||
      check_count(in, nkv, 12, "metadata") || check_count(in, nt, 24, "tensor"))
    return NULL;
  struct lc_gguf *g = lc_gguf_new();
  struct tinfo *ti = calloc(nt ? nt : 1, sizeof *ti);
  struct tinfo **order = calloc(nt ? nt : 1, sizeof *order);
  uint64_t align = 32;
  struct lc_source *src = NULL;
  int ok = 0;
  if (!g || !ti || !order) {
    if (g) lc_error("%s: out of memory", in->fn);
    goto done;
  }
  for (uint64_t i = 0; i < nkv; i++) {
    struct lc_gguf_meta m = {0};
    uint32_t vt;
    if (!(m.key = rd_string(in, "a metadata key"))) goto done;
    if (rd_u32(in, &vt, "a metadata value type") || rd_value(in, vt, &m)) {
      lc_gguf_meta_clear(&m);
      goto done;
    }
    if (!strcmp(m.key, "general.alignment")) {
      if (vt != V_U32 || !*(uint32_t *)lc_node_data(m.arr) ||
          (*(uint32_t *)lc_node_data(m.arr) & (*(uint32_t *)lc_node_data(m.arr) - 1))) {
        lc_error("%s: general.alignment in %s must be a u32 power of two", in->fn, in->label);
        lc_gguf_meta_clear(&m);
        goto done;
      }
      align = *(uint32_t *)lc_node_data(m.arr);
    }
    if (lc_gguf_put_meta(g, &m)) goto done;
  }
  for (uint64_t i = 0; i < nt; i++) {
    if (rd_tinfo(in, &ti[i])) goto done;
    order[i] = &ti[i];
  }
  if (check_names(in, ti, nt)) goto done;
  if (lc_in_skip(in, (size_t)((align - (uint64_t)in->pos % align) % align), "the data alignment"))
    goto done;
  qsort(order, nt, sizeof *order, cmp_off);
  if (nt && lc_lazy_wanted(in) && !(src = lc_source_open(in))) goto done;
  uint64_t pos = 0, data = (uint64_t)in->pos;
  for (uint64_t i = 0; i < nt; i++) {
    struct tinfo *t = order[i];
    if (t->off < pos) {
      lc_error("%s: tensor '%s' in %s overlaps another tensor's data", in->fn, t->name, in->label);
      goto done;
    }
    if (src) {
      if (check_within(in, t, data) || lazy_tensor(in, g, src, t, data)) goto done;
      pos = t->off + t->bytes;
      continue;
    }
    if (lc_in_skip(in, (size_t)(t->off - pos), "padding between tensors")) goto done;
    char what[300];
    snprintf(what, sizeof what, "the data of tensor '%.256s'", t->name);
    if (t->quant) {
      if (read_quantized(in, g, t, what)) goto done;
      pos = t->off + t->bytes;
      continue;
    }
    struct lc_node *n = lc_in_read_node(in, t->t, t->ndim, t->shape, what);
    if (!n) goto done;
    int bad = append_array(g, t->name, n);
    lc_node_release(n);
    if (bad) goto done;
    pos = t->off + t->bytes;
  }
  ok = 1;
done:
  lc_source_release(src);
  for (uint64_t i = 0; ti && i < nt; i++) free(ti[i].name);
  free(ti);
  free(order);
  if (!ok) {
    lc_gguf_delete(g);
    return NULL;
  }
  return g;
}

/* ---- writing ---- */

static int wr_u32(struct lc_out *out, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  return lc_out_write(out, b, 4);
}

static int wr_u64(struct lc_out *out, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  return lc_out_write(out, b, 8);
}

static int wr_string(struct lc_out *out, const char *s) {
  size_t n = strlen(s);
  return wr_u64(out, n) || lc_out_write(out, s, n);
}

static int wr_pad(struct lc_out *out, uint64_t *pos, uint64_t align) {
  static const char zeros[256];
  uint64_t pad = (align - *pos % align) % align;
  *pos += pad;
  while (pad) {
    size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
    if (lc_out_write(out, zeros, k)) return 1;
    pad -= k;
  }
  return 0;
}

static size_t tensor_type(mlx_dtype t, uint32_t *ggml) {
  for (size_t i = 0; i < sizeof tensor_types / sizeof tensor_types[0]; i++)
    if (tensor_types[i].t == t) return *ggml = tensor_types[i].ggml, 1;
  return 0;
}

int lc_gguf_save(struct lc_out *out, struct lc_gguf *g) {
  const char *fn = out->fn;
  uint64_t align = 32, pos = 0;
  /* validate everything before writing anything */
  for (size_t i = 0; i < g->nmeta; i++) {
    struct lc_gguf_meta *m = &g->meta[i];
    uint32_t vt;
    if (m->kind != LC_GGUF_ARRAY) continue;
    if (m->arr->ndim > 1 || dtype_value(m->arr->dtype, &vt))
      return lc_error("%s: metadata '%s' must be a 0-d or 1-d array of a GGUF value type "
                      "(bool, (u)int8-64, float32, float64), got %d-d %s",
                      fn, m->key, m->arr->ndim, lc_dtype_name(m->arr->dtype));
    if (!strcmp(m->key, "general.alignment")) {
      if (m->arr->dtype != MLX_UINT32 || m->arr->ndim != 0)
        return lc_error("%s: general.alignment must be a 0-d uint32 array", fn);
      struct lc_node *n = m->arr;
      if (lc_eval(&n, 1)) return 1;
      uint32_t a = *(uint32_t *)lc_node_data(n);
      if (!a || (a & (a - 1))) return lc_error("%s: general.alignment must be a power of two", fn);
      align = a;
    }
  }
  for (size_t i = 0; i < g->narr; i++) {
    uint32_t ty;
    if (!tensor_type(g->arrs[i]->dtype, &ty))
      return lc_error("%s: array '%s' has dtype %s, which GGUF cannot store (supported: float32, "
                      "float16, bfloat16, float64, int8, int16, int32, int64)",
                      fn, g->names[i], lc_dtype_name(g->arrs[i]->dtype));
  }
  if ((g->narr && lc_eval(g->arrs, g->narr))) return 1; /* before any byte is written */
  for (size_t i = 0; i < g->nmeta; i++)
    if (g->meta[i].kind == LC_GGUF_ARRAY && lc_eval(&g->meta[i].arr, 1)) return 1;
  if (lc_out_write(out, "GGUF", 4) || wr_u32(out, 3) || wr_u64(out, g->narr) ||
      wr_u64(out, g->nmeta))
    return 1;
  pos = 24;
  for (size_t i = 0; i < g->nmeta; i++) {
    struct lc_gguf_meta *m = &g->meta[i];
    if (wr_string(out, m->key)) return 1;
    pos += 8 + strlen(m->key) + 4;
    if (m->kind == LC_GGUF_STRING) {
      if (wr_u32(out, V_STRING) || wr_string(out, m->str)) return 1;
      pos += 8 + strlen(m->str);
    } else if (m->kind == LC_GGUF_STRINGS) {
      if (wr_u32(out, V_ARRAY) || wr_u32(out, V_STRING) || wr_u64(out, m->nstrs)) return 1;
      pos += 12;
      for (size_t k = 0; k < m->nstrs; k++) {
        if (wr_string(out, m->strs[k])) return 1;
        pos += 8 + strlen(m->strs[k]);
      }
    } else {
      uint32_t vt = 0;
      dtype_value(m->arr->dtype, &vt);
      if (m->arr->ndim == 1) {
        if (wr_u32(out, V_ARRAY) || wr_u32(out, vt) || wr_u64(out, (uint64_t)m->arr->size))
          return 1;
        pos += 12;
      } else if (wr_u32(out, vt)) {
        return 1;
      }
      if (lc_out_write_node(out, m->arr)) return 1;
      pos += (uint64_t)m->arr->size * lc_dtype_size(m->arr->dtype);
    }
  }
  uint64_t off = 0;
  for (size_t i = 0; i < g->narr; i++) {
    struct lc_node *n = g->arrs[i];
    uint32_t ty = 0;
    tensor_type(n->dtype, &ty);
    if (wr_string(out, g->names[i]) || wr_u32(out, (uint32_t)n->ndim)) return 1;
    for (int k = n->ndim - 1; k >= 0; k--)
      if (wr_u64(out, (uint64_t)n->shape[k])) return 1;
    if (wr_u32(out, ty) || wr_u64(out, off)) return 1;
    pos += 8 + strlen(g->names[i]) + 4 + 8 * (uint64_t)n->ndim + 12;
    off += (uint64_t)n->size * lc_dtype_size(n->dtype);
    off = (off + align - 1) / align * align;
  }
  if (wr_pad(out, &pos, align)) return 1;
  pos = 0;
  for (size_t i = 0; i < g->narr; i++) {
    if (wr_pad(out, &pos, align) || lc_out_write_node(out, g->arrs[i])) return 1;
    pos += (uint64_t)g->arrs[i]->size * lc_dtype_size(g->arrs[i]->dtype);
  }
  return 0;
}
