/* Lazy load sources and the LOAD primitive (see lazy.h). */
#include "io/lazy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/parallel.h"
#include "io/gguf.h"
#include "ops/prim.h"

struct lc_source {
  atomic_int refs;
  int fd;
  unsigned char *map; /* the whole file, or NULL (empty file, mapping refused) */
  size_t map_len;
  const char *fn; /* the loader that opened it, for eval-time messages */
  char label[256];
};

/* LOAD params: plain data compared bytewise; src is one counted reference
 * (params_ref). No padding. */
struct load_params {
  struct lc_source *src;
  uint64_t off, nbytes;
  uint32_t part, quant;
};

bool lc_lazy_wanted(const struct lc_in *in) {
  if (!in->f || in->len < 0) return false;
  const char *e = getenv("LACE_LAZY_LOAD");
  return !(e && !strcmp(e, "0"));
}

static struct lc_source *source_retain(struct lc_source *s) {
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
  return s;
}

void lc_source_release(struct lc_source *s) {
  if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  if (s->map) munmap(s->map, s->map_len);
  close(s->fd);
  free(s);
}

struct lc_source *lc_source_open(const struct lc_in *in) {
  struct lc_source *s = calloc(1, sizeof *s);
  if (!s) {
    lc_error("%s: out of memory", in->fn);
    return NULL;
  }
  s->fd = fcntl(fileno(in->f), F_DUPFD_CLOEXEC, 0);
  if (s->fd < 0) {
    lc_error("%s: cannot keep %s open: %s", in->fn, in->label, strerror(errno));
    free(s);
    return NULL;
  }
  atomic_init(&s->refs, 1);
  s->fn = in->fn;
  snprintf(s->label, sizeof s->label, "%s", in->label);
  if (in->len > 0 && (uint64_t)in->len <= SIZE_MAX) {
    /* read-only: array data is never written in place unless its buffer
     * is lace's own (lc_prim_can_donate), and a read-only private mapping
     * is not charged against the commit limit, so files larger than memory
     * map too */
    void *m = mmap(NULL, (size_t)in->len, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (m != MAP_FAILED) {
      s->map = m;
      s->map_len = (size_t)in->len;
    }
  }
  return s;
}

/* 0 when the file still holds [off, off + n); else reports. */
static int check_extent(const struct lc_source *s, uint64_t off, uint64_t n) {
  struct stat st;
  if (fstat(s->fd, &st) != 0)
    return lc_error("%s: cannot read %s: %s", s->fn, s->label, strerror(errno));
  if (st.st_size < 0 || off + n > (uint64_t)st.st_size)
    return lc_error("%s: %s now holds %lld bytes, too few for the tensor data at bytes [%llu, "
                    "%llu) (file truncated after loading?)",
                    s->fn, s->label, (long long)st.st_size, (unsigned long long)off,
                    (unsigned long long)(off + n));
  return 0;
}

/* Reads [off, off + n) into dst with pread. 0, or the errno of a failed
 * read (-1: end of file). Safe to call from any thread; reports nothing. */
static int pread_all(int fd, uint64_t off, uint64_t n, unsigned char *dst) {
  while (n) {
    size_t k = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t got = pread(fd, dst, k, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got < 0 ? errno : -1;
    dst += got;
    off += (uint64_t)got;
    n -= (uint64_t)got;
  }
  return 0;
}

/* Chunks of a large copy, read on the thread pool: the cost of a copy from
 * the page cache is mostly faulting in the fresh destination pages, which
 * parallelises. */
#define READ_CHUNK ((int64_t)4 << 20)

struct read_job {
  int fd;
  uint64_t off, n;
  unsigned char *dst;
  atomic_int err; /* first failure's pread_all code, 0 if none */
};

static void read_chunks(void *ctx, int64_t lo, int64_t hi) {
  struct read_job *j = ctx;
  for (int64_t c = lo; c < hi; c++) {
    uint64_t at = (uint64_t)c * (uint64_t)READ_CHUNK;
    uint64_t k = j->n - at < (uint64_t)READ_CHUNK ? j->n - at : (uint64_t)READ_CHUNK;
    int e = pread_all(j->fd, j->off + at, k, j->dst + at);
    int none = 0;
    if (e) atomic_compare_exchange_strong(&j->err, &none, e);
  }
}

/* Copies [off, off + n) of the file into dst: pread, not the mapping, so
 * that the file's pages do not join the process's resident set. 0, or 1
 * after reporting. */
static int read_bytes(const struct lc_source *s, uint64_t off, uint64_t n, void *dst) {
  struct read_job j = {.fd = s->fd, .off = off, .n = n, .dst = dst};
  atomic_init(&j.err, 0);
  lc_parallel_for((int64_t)((n + (uint64_t)READ_CHUNK - 1) / (uint64_t)READ_CHUNK), 1,
                  read_chunks, &j);
  int e = atomic_load(&j.err);
  if (!e) return 0;
  return lc_error("%s: failed to read %llu bytes of tensor data at byte %llu of %s: %s", s->fn,
                  (unsigned long long)n, (unsigned long long)off, s->label,
                  e < 0 ? "unexpected end of file" : strerror(e));
}

static bool bools_valid(const unsigned char *p, uint64_t n) {
  unsigned char acc = 0;
  for (uint64_t i = 0; i < n; i++) acc |= p[i];
  return acc <= 1;
}

static void window_dtor(void *arg) { lc_source_release(arg); }

/* Makes n's data the mapped bytes at off (no copy): row-major, offset 0. */
static int wrap_window(struct lc_node *n, struct lc_source *s, uint64_t off, uint64_t nbytes) {
  struct lc_buffer *b = lc_buffer_wrap(s->map + off, (size_t)nbytes, window_dtor, s);
  if (!b) return 1;
  source_retain(s);
  lc_buffer_release(n->buf);
  n->buf = b;
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
  return 0;
}

static int eval_raw(struct lc_node *n, const struct load_params *p) {
  struct lc_source *s = p->src;
  size_t item = lc_dtype_size(n->dtype);
  if (p->nbytes && s->map && p->off % item == 0 &&
      (n->dtype != MLX_BOOL || bools_valid(s->map + p->off, p->nbytes)))
    return wrap_window(n, s, p->off, p->nbytes);
  if (lc_node_alloc_data(n) || read_bytes(s, p->off, p->nbytes, lc_node_data(n))) return 1;
  if (n->dtype == MLX_BOOL) { /* any non-zero byte is true (numpy); lace's bools are 0 or 1 */
    uint8_t *q = lc_node_data(n);
    for (uint64_t i = 0; i < p->nbytes; i++) q[i] = q[i] != 0;
  }
  return 0;
}

static int eval_quant(struct lc_node *n, const struct load_params *p) {
  struct lc_source *s = p->src;
  const unsigned char *raw = s->map ? s->map + p->off : NULL;
  unsigned char *tmp = NULL;
  if (!raw) {
    tmp = malloc(p->nbytes ? (size_t)p->nbytes : 1);
    if (!tmp) return lc_error("%s: out of memory (%llu bytes)", s->fn,
                              (unsigned long long)p->nbytes);
    if (read_bytes(s, p->off, p->nbytes, tmp)) {
      free(tmp);
      return 1;
    }
    raw = tmp;
  }
  int rc = lc_node_alloc_data(n);
  if (!rc) lc_gguf_decode(p->quant, (enum lc_load_part)p->part, raw, p->nbytes, lc_node_data(n));
  free(tmp);
  return rc;
}

static int load_eval(struct lc_node *n) {
  const struct load_params *p = n->params;
  if (check_extent(p->src, p->off, p->nbytes)) return 1;
  return p->part == LC_LOAD_RAW ? eval_raw(n, p) : eval_quant(n, p);
}

static void load_params_ref(const void *params, int delta) {
  struct lc_source *s = ((const struct load_params *)params)->src;
  if (delta > 0) source_retain(s);
  else lc_source_release(s);
}

static int load_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct load_params *p = n->params;
  snprintf(buf, len, "%s bytes [%llu, %llu)", p->src->label, (unsigned long long)p->off,
           (unsigned long long)(p->off + p->nbytes));
  return 0;
}

const struct lc_prim lc_prim_load = {.name = "load",
                                     .eval_cpu = load_eval,
                                     .params_ref = load_params_ref,
                                     .describe = load_describe};

struct lc_node *lc_load_node(struct lc_source *s, mlx_dtype dt, int ndim, const int *shape,
                             uint64_t off, uint64_t nbytes, enum lc_load_part part,
                             uint32_t quant) {
  struct load_params p;
  memset(&p, 0, sizeof p);
  p.src = s;
  p.off = off;
  p.nbytes = nbytes;
  p.part = (uint32_t)part;
  p.quant = quant;
  return lc_node_new_op(LC_OP_LOAD, dt, ndim, shape, 0, NULL, &p, sizeof p);
}
