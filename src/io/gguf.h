/* The mlx_io_gguf container and the GGUF (v2/v3) format.
 *
 * A container holds named arrays (insertion order) and named metadata, each
 * metadata value one of: an array (0-d for a scalar, 1-d for a list of
 * numbers), a string, or a list of strings. GGUF stores tensor dimensions
 * innermost first; arrays use MLX's order (reversed). Loading supports the
 * tensor types F32, F16, BF16, F64, I8, I16, I32, I64, and Q4_0 / Q4_1 /
 * Q8_0 (converted, like MLX, to `name` uint32 packed weights plus
 * `.scales` / `.biases` float16 arrays named after name less its ".weight", group size 32), and every metadata
 * type except nested arrays; other quantized types are reported as
 * unsupported. Saving writes GGUF v3 with alignment 32, tensors of dtype
 * float32, float16, bfloat16, float64, int8, int16, int32, int64. */
#ifndef LC_GGUF_H
#define LC_GGUF_H

#include <stddef.h>

#include "io/io.h"
#include "io/lazy.h"

enum lc_gguf_kind { LC_GGUF_ARRAY, LC_GGUF_STRING, LC_GGUF_STRINGS };

struct lc_gguf_meta {
  char *key;
  enum lc_gguf_kind kind;
  struct lc_node *arr; /* LC_GGUF_ARRAY (owned reference) */
  char *str;           /* LC_GGUF_STRING */
  char **strs;         /* LC_GGUF_STRINGS: nstrs entries */
  size_t nstrs;
};

struct lc_gguf {
  size_t narr, carr;
  char **names;
  struct lc_node **arrs; /* owned references */
  size_t nmeta, cmeta;
  struct lc_gguf_meta *meta;
};

struct lc_gguf *lc_gguf_new(void);
void lc_gguf_delete(struct lc_gguf *g);
/* Insert or replace (copies key; retains n). 0, or 1 after reporting. */
int lc_gguf_put_array(struct lc_gguf *g, const char *key, struct lc_node *n);
/* Takes a filled entry (its key and payload are consumed, also on failure). */
int lc_gguf_put_meta(struct lc_gguf *g, struct lc_gguf_meta *m);
struct lc_gguf_meta *lc_gguf_find_meta(struct lc_gguf *g, const char *key);
void lc_gguf_meta_clear(struct lc_gguf_meta *m);

/* Loads a GGUF file: its tensors lazily when lc_lazy_wanted(in) (see
 * io/lazy.h), else read now; metadata always now. NULL after reporting. */
struct lc_gguf *lc_gguf_load(struct lc_in *in);
/* Decodes nbytes of Q4_0 / Q4_1 / Q8_0 blocks (ggml type quant) into one
 * part of MLX's layout (weights, scales or biases; see gguf.c). */
void lc_gguf_decode(uint32_t quant, enum lc_load_part part, const unsigned char *raw,
                    uint64_t nbytes, void *out);
int lc_gguf_save(struct lc_out *out, struct lc_gguf *g);

#endif
