/* File headers with shapes whose sizes or strides overflow (empty dims next
 * to huge ones, products past 2^64) are rejected with a clear message by
 * the npy, safetensors and gguf loaders; a safetensors header with very
 * many empty tensors loads in linear time. */
#include <limits.h>
#include <time.h>

#include "io_util.h"

/* Loads bytes as .npy through a memory reader; returns the status. */
static int load_npy(const void *bytes, size_t n, mlx_array *out) {
  struct mem m = {(char *)bytes, 0, n, n, false, false, 0};
  mlx_io_reader rd = mlx_io_reader_new(&m, mem_vtable);
  int rc = mlx_load_reader(out, rd, test_stream());
  mlx_io_reader_free(rd);
  return rc;
}

static size_t npy_bytes(char *buf, const char *header, size_t data) {
  size_t h = strlen(header);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(h & 255);
  buf[9] = (char)(h >> 8);
  memcpy(buf + 10, header, h);
  memset(buf + 10 + h, 0, data);
  return 10 + h + data;
}

static void test_npy(void) {
  static const char *const bad[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2147483647, 2147483647, 2147483647), }",
      "{'descr': '<f8', 'fortran_order': True, 'shape': (2147483647, 0, 2147483647, 2147483647), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647), }",
      "{'descr': '|u1', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }",
  };
  char buf[512];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mlx_array a = mlx_array_new();
    size_t n = npy_bytes(buf, bad[i], 0);
    CHECK_FAILS(load_npy(buf, n, &a), "too large");
    CHECK(a.ctx == NULL);
  }
  /* an empty array with moderate dims still loads, and so does its fortran twin */
  mlx_array a = mlx_array_new();
  size_t n = npy_bytes(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 0, 70000), }", 0);
  CHECK_OK(load_npy(buf, n, &a));
  CHECK(mlx_array_size(a) == 0 && mlx_array_ndim(a) == 3 && mlx_array_shape(a)[2] == 70000);
  /* bool bytes other than 0 and 1 load as true */
  n = npy_bytes(buf, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3);
  buf[n - 3] = 17;
  buf[n - 1] = 1;
  CHECK_OK(load_npy(buf, n, &a));
  const bool *b = mlx_array_data_bool(a);
  CHECK(b && *(const uint8_t *)&b[0] == 1 && !b[1] && b[2]);
  mlx_string s = mlx_string_new();
  CHECK_OK(mlx_array_tostring(&s, a));
  CHECK(!strcmp(mlx_string_data(s), "array([true, false, true], dtype=bool)"));
  mlx_string_free(s);
  mlx_array_free(a);
}

static int load_st(const char *json, mlx_map_string_to_array *arrays) {
  size_t h = strlen(json);
  char *buf = malloc(8 + h);
  for (int i = 0; i < 8; i++) buf[i] = (char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, json, h);
  struct mem m = {buf, 0, 8 + h, 8 + h, false, false, 0};
  mlx_io_reader rd = mlx_io_reader_new(&m, mem_vtable);
  mlx_map_string_to_string meta = mlx_map_string_to_string_new();
  int rc = mlx_load_safetensors_reader(arrays, &meta, rd, test_stream());
  mlx_io_reader_free(rd);
  mlx_map_string_to_string_free(meta);
  free(buf);
  return rc;
}

static void test_safetensors(void) {
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_FAILS(load_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,2147483647,2147483647,2147483647],"
                      "\"data_offsets\":[0,0]}}", &m), "too large");
  CHECK_FAILS(load_st("{\"a\":{\"dtype\":\"U8\",\"shape\":[65536,65536,65536,65536],"
                      "\"data_offsets\":[0,0]}}", &m), "too large");
  CHECK_OK(load_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,70000,70000],"
                   "\"data_offsets\":[0,0]}}", &m));
  mlx_map_string_to_array_free(m);
}

/* n empty tensors: a header of about 60 n bytes. */
static char *many_empty(size_t n) {
  char *s = malloc(64 * n + 16), *p = s;
  *p++ = '{';
  for (size_t i = 0; i < n; i++)
    p += sprintf(p, "%s\"t%zu\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                 i ? "," : "", i);
  *p++ = '}';
  *p = 0;
  return s;
}

static double seconds_to_load(size_t n) {
  char *json = many_empty(n);
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_OK(load_st(json, &m));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  mlx_array a = mlx_array_new();
  char key[32];
  snprintf(key, sizeof key, "t%zu", n - 1);
  CHECK_OK(mlx_map_string_to_array_get(&a, m, key));
  CHECK(a.ctx && mlx_array_size(a) == 0);
  mlx_array_free(a);
  mlx_map_string_to_array_free(m);
  free(json);
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

static void test_many_empty_tensors(void) {
  /* the fastest of three interleaved runs of each size: other processes
   * (ctest -j) slow single runs down, never speed them up */
  double t_small = 1e9, t_big = 1e9;
  for (int r = 0; r < 3; r++) {
    double a = seconds_to_load(25000), b = seconds_to_load(100000);
    t_small = a < t_small ? a : t_small;
    t_big = b < t_big ? b : t_big;
  }
  /* linear: about 4x; the former quadratic name checks made it 16x */
  CHECK_MSG(t_big < 8 * t_small + 0.1, "25k tensors: %.3f s, 100k tensors: %.3f s", t_small,
            t_big);
  if (getenv("LACE_TEST_VERBOSE")) fprintf(stderr, "%.3f s, %.3f s\n", t_small, t_big);
}

/* A GGUF v3 file with one tensor of the given dims (innermost first). */
static size_t gguf_bytes(char *buf, const uint64_t *dims, uint32_t nd) {
  char *p = buf;
  memcpy(p, "GGUF", 4), p += 4;
  uint32_t v = 3;
  uint64_t nt = 1, nkv = 0, name_len = 1, off = 0;
  uint32_t type = 0;
  memcpy(p, &v, 4), p += 4;
  memcpy(p, &nt, 8), p += 8;
  memcpy(p, &nkv, 8), p += 8;
  memcpy(p, &name_len, 8), p += 8;
  *p++ = 'w';
  memcpy(p, &nd, 4), p += 4;
  memcpy(p, dims, 8 * nd), p += 8 * nd;
  memcpy(p, &type, 4), p += 4;
  memcpy(p, &off, 8), p += 8;
  while ((p - buf) % 32) *p++ = 0;
  return (size_t)(p - buf);
}

static void test_gguf(void) {
  make_tmp_dir();
  const char *path = tmp_path("t.gguf");
  char buf[256];
  static const uint64_t bad1[] = {2147483647, 2147483647, 0, 2147483647};
  static const uint64_t bad2[] = {65536, 65536, 65536, 65536};
  static const uint64_t ok[] = {70000, 0, 70000};
  mlx_io_gguf g = mlx_io_gguf_new();
  spit(path, buf, gguf_bytes(buf, bad1, 4));
  CHECK_FAILS(mlx_load_gguf(&g, path, test_stream()), "too large");
  spit(path, buf, gguf_bytes(buf, bad2, 4));
  CHECK_FAILS(mlx_load_gguf(&g, path, test_stream()), "too large");
  spit(path, buf, gguf_bytes(buf, ok, 3));
  CHECK_OK(mlx_load_gguf(&g, path, test_stream()));
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_array(&a, g, "w"));
  CHECK(mlx_array_size(a) == 0 && mlx_array_ndim(a) == 3);
  mlx_array_free(a);
  mlx_io_gguf_free(g);
  const char *names[] = {"t.gguf"};
  remove_tmp_dir(names, 1);
}

int main(void) {
  test_init();
  test_npy();
  test_safetensors();
  test_many_empty_tensors();
  test_gguf();
  return test_done();
}
