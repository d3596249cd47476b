/* Internal byte streams for loading and saving (npy, safetensors).
 *
 * An lc_in reads from a FILE* or from a user mlx_io_reader vtable; an lc_out
 * writes to a FILE* or a user mlx_io_writer. Every read/write either moves
 * exactly n bytes or reports (naming the stream's label) and returns 1.
 * Readers know their remaining length when it can be found (files: always;
 * user readers: never, len = -1), so headers claiming more data than exists
 * are rejected before anything is allocated. */
#ifndef LC_IO_H
#define LC_IO_H

#include <stdint.h>
#include <stdio.h>

#include "core/node.h"
#include "mlx/c/io_types.h"
#include "mlx/c/map.h"

/* What mlx_io_reader.ctx / mlx_io_writer.ctx point at. */
struct lc_io_handle {
  void *desc;
  mlx_io_vtable vt;
};

struct lc_in {
  FILE *f;                  /* either f ... */
  struct lc_io_handle *h;   /* ... or a user reader */
  const char *fn;           /* public function name, for messages */
  char label[256];
  int64_t len;              /* total length in bytes, -1 if unknown */
  int64_t pos;              /* bytes consumed so far */
};

struct lc_out {
  FILE *f;
  struct lc_io_handle *h;
  const char *fn;
  char label[256];
  char *tmp, *dst; /* files: f writes tmp, renamed to dst by a successful close */
};

/* Open helpers: 0, or 1 after reporting. lc_in_close/lc_out_close release
 * only what the open made (files); user streams stay with the user.
 * A file is written as a temporary file next to it (same mode) that a
 * successful close renames over the path, so a save never changes the
 * bytes of an existing file in place: arrays lazily loaded from it
 * (io/lazy.h), possibly views of its mapping, keep the old contents, and
 * a failed save leaves the old file as it was. Paths that are not regular
 * files (devices, fifos), or whose directory refuses the temporary file,
 * are written in place. */
int lc_in_open_file(struct lc_in *in, const char *fn, const char *path);
int lc_in_open_reader(struct lc_in *in, const char *fn, mlx_io_reader r);
void lc_in_close(struct lc_in *in);
int lc_out_open_file(struct lc_out *out, const char *fn, const char *path);
int lc_out_open_writer(struct lc_out *out, const char *fn, mlx_io_writer w);
/* Closes (files: flush + fclose, then the rename unless failed: the
 * temporary file is removed instead). Returns failed, or 1 after reporting
 * a failed flush or rename. */
int lc_out_close(struct lc_out *out, int failed);

/* Reads exactly n bytes; `what` names the part for the message
 * ("fn: unexpected end of file reading <what> from <label>"). */
int lc_in_read(struct lc_in *in, void *dst, size_t n, const char *what);
/* Skips n bytes forward. */
int lc_in_skip(struct lc_in *in, size_t n, const char *what);
/* Reports unless n more bytes can exist in the stream (unknown length: ok). */
int lc_in_check_avail(struct lc_in *in, uint64_t n, const char *what);
int lc_out_write(struct lc_out *out, const void *src, size_t n);

/* Evaluates n and writes its elements row-major (views copied). */
int lc_out_write_node(struct lc_out *out, struct lc_node *n);

/* A new evaluated node of the given shape whose data is read from in
 * (little-endian, row-major). NULL after reporting. */
struct lc_node *lc_in_read_node(struct lc_in *in, mlx_dtype dt, int ndim, const int *shape,
                                const char *what);

/* Formats and appends to a growing string buffer. */
struct lc_sbuf {
  char *p;
  size_t len, cap;
  int failed; /* out of memory happened */
};
void lc_sbuf_putn(struct lc_sbuf *b, const char *s, size_t n);
void lc_sbuf_printf(struct lc_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal (quoted, escaped). */
void lc_sbuf_json_string(struct lc_sbuf *b, const char *s);

/* npy (io/npy.c) */
int lc_npy_save(struct lc_out *out, struct lc_node *n);
struct lc_node *lc_npy_load(struct lc_in *in);

/* safetensors (io/safetensors.c). Results are stored into the maps, which
 * must be valid (possibly empty) handles; on failure they are untouched. */
int lc_st_save(struct lc_out *out, mlx_map_string_to_array params, mlx_map_string_to_string meta);
int lc_st_load(struct lc_in *in, mlx_map_string_to_array *arrays, mlx_map_string_to_string *meta);

#endif
