/* Lazily loaded tensors: arrays whose bytes come from a file when they are
 * first evaluated (MLX's Load primitive).
 *
 * A source is one opened file shared by every array loaded from it: a
 * duplicated descriptor plus, when the system allows, a private read-only
 * mapping of the whole file. It is refcounted: each LOAD
 * node's params hold one reference (params_ref), and each evaluated array
 * whose buffer is a window of the mapping holds one through the buffer's
 * destructor, so arrays outlive the maps and handles they came from and the
 * file may be closed or deleted once opened.
 *
 * Loaders validate everything at open time (header, dtype sizes, offsets
 * within the file's length); evaluating a LOAD node only re-checks that the
 * file still holds the bytes (a file truncated after opening is reported,
 * never faulted on) and then either wraps the mapped bytes without a copy
 * (offset aligned to the item size, nothing to convert; bool bytes must all
 * be 0 or 1) or copies/decodes them into a fresh buffer. A mapped file that
 * is truncated after its arrays were evaluated zero-copy cannot be guarded
 * (the pages vanish: SIGBUS on access), as with any mmap-based loader.
 *
 * Loading from a user reader (mlx_io_reader) stays eager. LACE_LAZY_LOAD=0
 * in the environment makes file loads eager too (the previous behaviour). */
#ifndef LC_IO_LAZY_H
#define LC_IO_LAZY_H

#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"

struct lc_source;

/* Whether a loader should return lazy arrays for in: in reads a file and
 * LACE_LAZY_LOAD is not "0". */
bool lc_lazy_wanted(const struct lc_in *in);

/* A source over in's file (in->f non-NULL; in->len its length at open).
 * NULL after reporting. */
struct lc_source *lc_source_open(const struct lc_in *in);
void lc_source_release(struct lc_source *s); /* NULL is fine */

/* What a LOAD node makes of its bytes. */
enum lc_load_part {
  LC_LOAD_RAW = 0,  /* the bytes themselves, little-endian row-major */
  LC_LOAD_QWEIGHTS, /* GGUF quantized blocks -> packed uint32 weights */
  LC_LOAD_QSCALES,  /* ... -> float16 scales */
  LC_LOAD_QBIASES   /* ... -> float16 biases */
};

/* A lazy node of dtype dt and the given shape reading nbytes at byte offset
 * off of s. The caller has checked off + nbytes against the file's length
 * and, for LC_LOAD_RAW, nbytes against the shape and dtype; quant is the
 * ggml type of the quantized parts (0 for raw). Retains s. NULL after
 * reporting. */
struct lc_node *lc_load_node(struct lc_source *s, mlx_dtype dt, int ndim, const int *shape,
                             uint64_t off, uint64_t nbytes, enum lc_load_part part,
                             uint32_t quant);

#endif
