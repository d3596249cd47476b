/* Shared by the fuzz harnesses (tests/fuzz/fuzz_*.c).
 *
 * A harness is one function `FUZZ_ENTRY(name)` taking (data, size). Built
 * with LACE_FUZZ_LIBFUZZER it is LLVMFuzzerTestOneInput (one libFuzzer
 * program per harness, tests/fuzz/CMakeLists.txt); otherwise it is
 * fuzz_<name>, and tests/fuzz/test_fuzz_replay.c includes every harness and
 * feeds it the checked-in corpus and crash inputs under plain gcc builds.
 *
 * Contract checked by every harness (a violation aborts, which the fuzzer
 * reports as a crash): a call that returns non-zero has reported through
 * the error handler; nothing crashes, leaks or hangs. The process runs with
 * a lace memory limit of FUZZ_MEMORY_LIMIT so that sizes read from the
 * input are rejected by lace itself, never by the OOM killer. */
#ifndef LACE_FUZZ_H
#define LACE_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlx/c/mlx.h"

#ifdef LACE_FUZZ_LIBFUZZER
#define FUZZ_ENTRY(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#else
#define FUZZ_ENTRY(name) int fuzz_##name(const uint8_t *data, size_t size)
#endif

#define FUZZ_MEMORY_LIMIT ((size_t)256 << 20)

static unsigned long fuzz_errors; /* messages the handler received */

static void fuzz_silent_handler(const char *msg, void *data) {
  (void)msg;
  (void)data;
  fuzz_errors++;
  if (getenv("LACE_FUZZ_VERBOSE")) fprintf(stderr, "[lace error] %s\n", msg);
}

static void fuzz_setup(void) {
  static bool done;
  if (done) return;
  done = true;
  setenv("LACE_JIT", "0", 1);
  setenv("LACE_NUM_THREADS", "1", 0);
  mlx_set_error_handler(fuzz_silent_handler, NULL, NULL);
  size_t old;
  mlx_set_memory_limit(&old, FUZZ_MEMORY_LIMIT);
}

/* A failed call must have reported: rc != 0 with no new message aborts.
 * The count is taken before the call (a sequence point), popped after. */
static unsigned long fuzz_marks[16];
static int fuzz_depth;
static int fuzz_rc_(int rc, const char *expr, int line) {
  unsigned long before = fuzz_marks[--fuzz_depth];
  if (rc != 0 && fuzz_errors == before) {
    fprintf(stderr, "fuzz: %s (line %d) returned %d without reporting\n", expr, line, rc);
    abort();
  }
  return rc;
}
#define FUZZ_CALL(expr) \
  (fuzz_marks[fuzz_depth++] = fuzz_errors, fuzz_rc_((expr), #expr, __LINE__))

/* A temporary file per process for the path-based loaders. */
static const char *fuzz_write_temp(const char *ext, const uint8_t *data, size_t size) {
  static char path[256];
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(path, sizeof path, "%s/lace-fuzz-%ld%s", dir, (long)getpid(), ext);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  size_t w = size ? fwrite(data, 1, size, f) : 0;
  if (fclose(f) != 0 || w != size) return NULL;
  return path;
}

/* ---- in-memory streams behind mlx_io_vtable ---- */

struct fuzz_mem {
  uint8_t *data;
  size_t pos, size, cap;
  bool err, writable;
};

static bool fuzz_mem_is_open(void *d) { return d != NULL; }
static bool fuzz_mem_good(void *d) { return !((struct fuzz_mem *)d)->err; }
static size_t fuzz_mem_tell(void *d) { return ((struct fuzz_mem *)d)->pos; }
static void fuzz_mem_seek(void *d, int64_t off, int whence) {
  struct fuzz_mem *m = d;
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)m->pos : (int64_t)m->size;
  if (base + off < 0 || base + off > (int64_t)m->size) m->err = true;
  else m->pos = (size_t)(base + off);
}
static void fuzz_mem_read(void *d, char *out, size_t n) {
  struct fuzz_mem *m = d;
  if (n > m->size - m->pos) {
    m->err = true;
    return;
  }
  memcpy(out, m->data + m->pos, n);
  m->pos += n;
}
static void fuzz_mem_read_at(void *d, char *out, size_t n, size_t off) {
  struct fuzz_mem *m = d;
  if (off > m->size || n > m->size - off) {
    m->err = true;
    return;
  }
  memcpy(out, m->data + off, n);
}
static void fuzz_mem_write(void *d, const char *src, size_t n) {
  struct fuzz_mem *m = d;
  if (!m->writable) {
    m->err = true;
    return;
  }
  if (m->pos + n > m->cap) {
    size_t nc = m->cap ? m->cap : 256;
    while (nc < m->pos + n) nc *= 2;
    uint8_t *np = realloc(m->data, nc);
    if (!np) {
      m->err = true;
      return;
    }
    m->data = np;
    m->cap = nc;
  }
  memcpy(m->data + m->pos, src, n);
  m->pos += n;
  if (m->pos > m->size) m->size = m->pos;
}
static const char *fuzz_mem_label(void *d) {
  (void)d;
  return "<fuzz memory>";
}

static const mlx_io_vtable fuzz_mem_vtable = {fuzz_mem_is_open, fuzz_mem_good,  fuzz_mem_tell,
                                              fuzz_mem_seek,    fuzz_mem_read,  fuzz_mem_read_at,
                                              fuzz_mem_write,   fuzz_mem_label, NULL};

/* A reader over data (borrowed); m must outlive it. */
static mlx_io_reader fuzz_reader(struct fuzz_mem *m, const uint8_t *data, size_t size) {
  *m = (struct fuzz_mem){(uint8_t *)data, 0, size, size, false, false};
  return mlx_io_reader_new(m, fuzz_mem_vtable);
}

/* A growing writer; free m->data afterwards. */
static mlx_io_writer fuzz_writer(struct fuzz_mem *m) {
  *m = (struct fuzz_mem){NULL, 0, 0, 0, false, true};
  return mlx_io_writer_new(m, fuzz_mem_vtable);
}

/* Evaluates a and prints it when its text is small (the printer is
 * exercised on whatever a loader produced). The text has up to 7 entries
 * per dimension ("..." past 6), empty arrays included: an empty array of
 * shape (9, 9, ..., 9, 0) prints 7^k "[]", as in MLX, so the bound is on
 * that structure, not on the size. */
static bool fuzz_print_is_small(mlx_array a) {
  size_t parts = 1;
  const int *sh = mlx_array_shape(a);
  for (size_t i = 0; i < mlx_array_ndim(a); i++) {
    parts *= sh[i] < 7 ? (size_t)(sh[i] > 0 ? sh[i] : 1) : 7;
    if (parts > 4096) return false;
  }
  return true;
}

static void fuzz_touch_array(mlx_array a) {
  size_t n = mlx_array_size(a);
  if (FUZZ_CALL(mlx_array_eval(a))) return;
  if (n > 4096 || !fuzz_print_is_small(a)) return;
  mlx_string s = mlx_string_new();
  FUZZ_CALL(mlx_array_tostring(&s, a));
  mlx_string_free(s);
}

#endif
