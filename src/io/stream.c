/* Byte streams over files and user vtables (see io.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/graph.h"
#include "io/io.h"

static void set_label(char *dst, size_t cap, struct lc_io_handle *h, const char *path) {
  const char *l = path;
  if (h) l = h->vt.label ? h->vt.label(h->desc) : NULL;
  snprintf(dst, cap, "%s", l ? l : "<stream>");
}

int lc_in_open_file(struct lc_in *in, const char *fn, const char *path) {
  memset(in, 0, sizeof *in);
  in->fn = fn;
  set_label(in->label, sizeof in->label, NULL, path);
  in->f = fopen(path, "rb");
  if (!in->f) return lc_error("%s: failed to open file %s for reading", fn, path);
  in->len = -1;
  if (fseeko(in->f, 0, SEEK_END) == 0) {
    off_t e = ftello(in->f);
    if (e >= 0) in->len = (int64_t)e;
  }
  if (fseeko(in->f, 0, SEEK_SET) != 0) {
    fclose(in->f);
    in->f = NULL;
    return lc_error("%s: failed to read file %s", fn, path);
  }
  return 0;
}

int lc_in_open_reader(struct lc_in *in, const char *fn, mlx_io_reader r) {
  memset(in, 0, sizeof *in);
  in->fn = fn;
  in->h = r.ctx;
  in->len = -1;
  if (!in->h) return lc_error("%s: the reader is an empty handle", fn);
  if (!in->h->vt.read) return lc_error("%s: the reader's vtable has no read function", fn);
  set_label(in->label, sizeof in->label, in->h, NULL);
  if ((in->h->vt.is_open && !in->h->vt.is_open(in->h->desc)) ||
      (in->h->vt.good && !in->h->vt.good(in->h->desc)))
    return lc_error("%s: failed to open %s", fn, in->label);
  return 0;
}

void lc_in_close(struct lc_in *in) {
  if (in->f) fclose(in->f);
  in->f = NULL;
}

/* The permission bits a new file gets from open(..., 0666): the umask is
 * read from /proc (umask() would change process state), else 022 assumed. */
static mode_t new_file_mode(void) {
  mode_t mask = 022;
  FILE *f = fopen("/proc/self/status", "r");
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Umask:", 6)) mask = (mode_t)strtol(line + 6, NULL, 8);
  if (f) fclose(f);
  return 0666 & ~mask;
}

/* Where a save to path lands: path itself, or a symlink's target. malloc'd. */
static char *final_path(const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char *r = realpath(path, NULL);
    if (r) return r;
  }
  return strdup(path);
}

/* Opens a temporary file next to the final path, with the mode the final
 * file has (or would get). 0, or 1 without reporting (the caller falls back
 * to writing in place). */
static int open_temp(struct lc_out *out, const char *path) {
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) return 1; /* devices, fifos: write in place */
  char *dst = final_path(path);
  size_t n = dst ? strlen(dst) : 0;
  char *tmp = dst ? malloc(n + 13) : NULL;
  if (!tmp) {
    free(dst);
    return 1;
  }
  memcpy(tmp, dst, n);
  memcpy(tmp + n, ".lace-XXXXXX", 13);
  int fd = mkstemp(tmp);
  if (fd >= 0 && fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode()) == 0 &&
      (out->f = fdopen(fd, "wb"))) {
    out->tmp = tmp;
    out->dst = dst;
    return 0;
  }
  if (fd >= 0) {
    close(fd);
    unlink(tmp);
  }
  free(tmp);
  free(dst);
  return 1;
}

int lc_out_open_file(struct lc_out *out, const char *fn, const char *path) {
  memset(out, 0, sizeof *out);
  out->fn = fn;
  set_label(out->label, sizeof out->label, NULL, path);
  if (open_temp(out, path) == 0) return 0;
  out->f = fopen(path, "wb");
  if (!out->f) return lc_error("%s: failed to open file %s for writing", fn, path);
  return 0;
}

int lc_out_open_writer(struct lc_out *out, const char *fn, mlx_io_writer w) {
  memset(out, 0, sizeof *out);
  out->fn = fn;
  out->h = w.ctx;
  if (!out->h) return lc_error("%s: the writer is an empty handle", fn);
  if (!out->h->vt.write) return lc_error("%s: the writer's vtable has no write function", fn);
  set_label(out->label, sizeof out->label, out->h, NULL);
  if ((out->h->vt.is_open && !out->h->vt.is_open(out->h->desc)) ||
      (out->h->vt.good && !out->h->vt.good(out->h->desc)))
    return lc_error("%s: failed to open %s", fn, out->label);
  return 0;
}

int lc_out_close(struct lc_out *out, int failed) {
  if (out->f && fclose(out->f) != 0 && !failed)
    failed = lc_error("%s: failed to write %s", out->fn, out->label);
  out->f = NULL;
  if (out->tmp) {
    if (!failed && rename(out->tmp, out->dst) != 0)
      failed = lc_error("%s: failed to replace %s: %s", out->fn, out->label, strerror(errno));
    if (failed) unlink(out->tmp);
  }
  free(out->tmp);
  free(out->dst);
  out->tmp = out->dst = NULL;
  return failed;
}

int lc_in_check_avail(struct lc_in *in, uint64_t n, const char *what) {
  if (in->len >= 0 && n > (uint64_t)(in->len - in->pos))
    return lc_error("%s: %s needs %llu bytes but only %lld remain in %s (truncated or corrupt file)",
                    in->fn, what, (unsigned long long)n, (long long)(in->len - in->pos),
                    in->label);
  return 0;
}

int lc_in_read(struct lc_in *in, void *dst, size_t n, const char *what) {
  if (n == 0) return 0;
  if (lc_in_check_avail(in, n, what)) return 1;
  if (in->f) {
    if (fread(dst, 1, n, in->f) != n)
      return lc_error("%s: unexpected end of file reading %s from %s", in->fn, what, in->label);
  } else {
    in->h->vt.read(in->h->desc, dst, n);
    if (in->h->vt.good && !in->h->vt.good(in->h->desc))
      return lc_error("%s: unexpected end of stream reading %s from %s", in->fn, what, in->label);
  }
  in->pos += (int64_t)n;
  return 0;
}

int lc_in_skip(struct lc_in *in, size_t n, const char *what) {
  if (n == 0) return 0;
  if (lc_in_check_avail(in, n, what)) return 1;
  if (in->f) {
    if (fseeko(in->f, (off_t)n, SEEK_CUR) != 0)
      return lc_error("%s: failed to seek in %s", in->fn, in->label);
    in->pos += (int64_t)n;
    return 0;
  }
  char tmp[4096];
  while (n) {
    size_t k = n < sizeof tmp ? n : sizeof tmp;
    if (lc_in_read(in, tmp, k, what)) return 1;
    n -= k;
  }
  return 0;
}

int lc_out_write(struct lc_out *out, const void *src, size_t n) {
  if (n == 0) return 0;
  if (out->f) {
    if (fwrite(src, 1, n, out->f) != n)
      return lc_error("%s: failed to write %zu bytes to %s", out->fn, n, out->label);
  } else {
    out->h->vt.write(out->h->desc, src, n);
    if (out->h->vt.good && !out->h->vt.good(out->h->desc))
      return lc_error("%s: failed to write %zu bytes to %s", out->fn, n, out->label);
  }
  return 0;
}

int lc_out_write_node(struct lc_out *out, struct lc_node *n) {
  if (lc_eval(&n, 1)) return 1;
  size_t bytes = (size_t)n->size * lc_dtype_size(n->dtype);
  if (bytes == 0) return 0;
  if (lc_node_is_contiguous(n)) return lc_out_write(out, lc_node_data(n), bytes);
  void *tmp = malloc(bytes);
  if (!tmp) return lc_error("%s: out of memory (%zu bytes)", out->fn, bytes);
  lc_node_copy_out(n, tmp);
  int rc = lc_out_write(out, tmp, bytes);
  free(tmp);
  return rc;
}

struct lc_node *lc_in_read_node(struct lc_in *in, mlx_dtype dt, int ndim, const int *shape,
                                const char *what) {
  uint64_t bytes = (uint64_t)lc_shape_size(ndim, shape) * lc_dtype_size(dt);
  if (lc_in_check_avail(in, bytes, what)) return NULL;
  struct lc_node *n = lc_node_alloc(dt, ndim, shape);
  if (!n) return NULL;
  if (lc_node_alloc_data(n) || lc_in_read(in, lc_node_data(n), (size_t)bytes, what)) {
    lc_node_release(n);
    return NULL;
  }
  if (dt == MLX_BOOL) { /* any non-zero byte is true (numpy); lace's bools are 0 or 1 */
    uint8_t *p = lc_node_data(n);
    for (uint64_t i = 0; i < bytes; i++) p[i] = p[i] != 0;
  }
  return n;
}

void lc_sbuf_putn(struct lc_sbuf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (b->len + n + 1 > nc) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->failed = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void lc_sbuf_printf(struct lc_sbuf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof tmp) {
    b->failed = 1;
    return;
  }
  lc_sbuf_putn(b, tmp, (size_t)k);
}

void lc_sbuf_json_string(struct lc_sbuf *b, const char *s) {
  lc_sbuf_putn(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
      case '"': lc_sbuf_putn(b, "\\\"", 2); break;
      case '\\': lc_sbuf_putn(b, "\\\\", 2); break;
      case '\n': lc_sbuf_putn(b, "\\n", 2); break;
      case '\r': lc_sbuf_putn(b, "\\r", 2); break;
      case '\t': lc_sbuf_putn(b, "\\t", 2); break;
      default:
        if (*c < 0x20) lc_sbuf_printf(b, "\\u%04x", *c);
        else lc_sbuf_putn(b, (const char *)c, 1);
    }
  }
  lc_sbuf_putn(b, "\"", 1);
}
