#include "core/buffer.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"

struct lc_buffer *lc_buffer_new(size_t nbytes) {
  struct lc_buffer *b = malloc(sizeof *b);
  if (!b) {
    lc_error("out of memory");
    return NULL;
  }
  b->data = lc_alloc(nbytes);
  if (!b->data) {
    free(b);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  b->nbytes = nbytes;
  b->owned = 1;
  b->dtor = NULL;
  b->dtor_arg = NULL;
  return b;
}

struct lc_buffer *lc_buffer_wrap(void *data, size_t nbytes, void (*dtor)(void *), void *arg) {
  struct lc_buffer *b = malloc(sizeof *b);
  if (!b) {
    lc_error("out of memory");
    return NULL;
  }
  atomic_init(&b->refs, 1);
  b->data = data;
  b->nbytes = nbytes;
  b->owned = 0;
  b->dtor = dtor;
  b->dtor_arg = arg;
  return b;
}

struct lc_buffer *lc_buffer_retain(struct lc_buffer *b) {
  if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void lc_buffer_release(struct lc_buffer *b) {
  if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  if (b->owned)
    lc_free(b->data, b->nbytes);
  else if (b->dtor)
    b->dtor(b->dtor_arg);
  free(b);
}
