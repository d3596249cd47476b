/* Shared helpers of the io tests: a memory stream behind mlx_io_vtable,
 * raw bytes of arrays, file slurping and a temporary directory. */
#ifndef LACE_IO_UTIL_H
#define LACE_IO_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

struct mem {
  char *data;
  size_t pos, size, cap;
  bool err, growable;
  int frees; /* times the vtable's free ran */
};
static bool mem_is_open(void *d) { return d != NULL; }
static bool mem_good(void *d) { return !((struct mem *)d)->err; }
static size_t mem_tell(void *d) { return ((struct mem *)d)->pos; }
static void mem_seek(void *d, int64_t off, int whence) {
  struct mem *m = d;
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)m->pos : (int64_t)m->size;
  if (base + off < 0 || base + off > (int64_t)m->size) m->err = true;
  else m->pos = (size_t)(base + off);
}
static void mem_read(void *d, char *data, size_t n) {
  struct mem *m = d;
  if (n > m->size - m->pos) {
    m->err = true;
    return;
  }
  memcpy(data, m->data + m->pos, n);
  m->pos += n;
}
static void mem_read_at(void *d, char *data, size_t n, size_t off) {
  struct mem *m = d;
  if (off > m->size || n > m->size - off) {
    m->err = true;
    return;
  }
  memcpy(data, m->data + off, n);
}
static void mem_write(void *d, const char *data, size_t n) {
  struct mem *m = d;
  if (n > m->cap - m->pos) {
    if (!m->growable) {
      m->err = true;
      return;
    }
    size_t nc = (m->pos + n) * 2;
    char *p = realloc(m->data, nc);
    if (!p) {
      m->err = true;
      return;
    }
    m->data = p;
    m->cap = nc;
  }
  memcpy(m->data + m->pos, data, n);
  m->pos += n;
  if (m->pos > m->size) m->size = m->pos;
}
static const char *mem_label(void *d) { return "<memory stream>"; }
static void mem_free(void *d) { ((struct mem *)d)->frees++; }
static const mlx_io_vtable mem_vtable = {mem_is_open, mem_good, mem_tell, mem_seek, mem_read,
                                         mem_read_at, mem_write, mem_label, mem_free};

/* Row-major bytes of a (evaluated, contiguous copy); malloc'd. */
static void *raw_bytes(mlx_array a, size_t *n) {
  mlx_array c = mlx_array_new();
  mlx_array_set(&c, a);
  mlx_array_eval(c);
  mlx_array flat = mlx_array_new();
  int sh = (int)mlx_array_size(a);
  mlx_reshape(&flat, c, &sh, 1, test_stream()); /* contiguous row-major copy or view */
  mlx_array cp = mlx_array_new();
  mlx_copy(&cp, flat, test_stream());
  mlx_array_eval(cp);
  *n = mlx_array_nbytes(cp);
  void *out = malloc(*n ? *n : 1);
  const void *src = NULL;
  switch (mlx_array_dtype(cp)) {
    case MLX_BOOL: src = mlx_array_data_bool(cp); break;
    case MLX_UINT8: src = mlx_array_data_uint8(cp); break;
    case MLX_UINT16: src = mlx_array_data_uint16(cp); break;
    case MLX_UINT32: src = mlx_array_data_uint32(cp); break;
    case MLX_UINT64: src = mlx_array_data_uint64(cp); break;
    case MLX_INT8: src = mlx_array_data_int8(cp); break;
    case MLX_INT16: src = mlx_array_data_int16(cp); break;
    case MLX_INT32: src = mlx_array_data_int32(cp); break;
    case MLX_INT64: src = mlx_array_data_int64(cp); break;
    case MLX_FLOAT16: src = mlx_array_data_float16(cp); break;
    case MLX_FLOAT32: src = mlx_array_data_float32(cp); break;
    case MLX_FLOAT64: src = mlx_array_data_float64(cp); break;
    case MLX_BFLOAT16: src = mlx_array_data_bfloat16(cp); break;
    case MLX_COMPLEX64: src = mlx_array_data_complex64(cp); break;
  }
  if (src && *n) memcpy(out, src, *n);
  mlx_array_free(c);
  mlx_array_free(flat);
  mlx_array_free(cp);
  return out;
}

/* An array of dtype t and the given shape from random bytes (bool: 0/1;
 * floats: finite values so that comparisons are bytewise). */
static mlx_array rand_array(mlx_dtype t, const int *shape, int ndim) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  mlx_array f = test_rand_f32(shape, ndim, -100, 100);
  mlx_array r = mlx_array_new();
  mlx_astype(&r, f, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(f);
  (void)n;
  return r;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc(len > 0 ? (size_t)len : 1);
  *n = fread(p, 1, (size_t)len, f);
  fclose(f);
  return p;
}

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(p, 1, n, f);
  fclose(f);
}

static char tmp_dir[64];
static void make_tmp_dir(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/lace_io_XXXXXX");
  if (!mkdtemp(tmp_dir)) abort();
}
static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
  return buf[k];
}
static void remove_tmp_dir(const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) unlink(tmp_path(names[i]));
  rmdir(tmp_dir);
}

static const mlx_dtype all_dtypes[] = {MLX_BOOL,    MLX_UINT8,   MLX_UINT16,  MLX_UINT32, MLX_UINT64,
                                       MLX_INT8,    MLX_INT16,   MLX_INT32,   MLX_INT64,  MLX_FLOAT16,
                                       MLX_FLOAT32, MLX_FLOAT64, MLX_BFLOAT16, MLX_COMPLEX64};

#endif
