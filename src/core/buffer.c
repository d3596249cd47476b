#include "core/buffer.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "gpu/gpu.h"

/* Residency transitions (rare: only where host and GPU work meet). */
static pthread_mutex_t residency_lock = PTHREAD_MUTEX_INITIALIZER;

static void init_residency(struct lc_buffer *b, unsigned valid) {
  b->dev_data = NULL;
  b->dev = -1;
  b->slot = 0;
  atomic_init(&b->valid, valid);
}

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
  init_residency(b, LC_BUF_HOST);
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
  init_residency(b, LC_BUF_HOST);
  return b;
}

_Thread_local int lc_host_reads_refused;
static _Thread_local unsigned long host_reads_refused;

int lc_buffer_refuse_host_read(void) {
  host_reads_refused++;
  return lc_error("reading an array on the host cannot be part of a CUDA graph");
}

unsigned long lc_buffer_host_read_refused(void) { return host_reads_refused; }

struct lc_buffer *lc_buffer_new_device(size_t nbytes, int dev) {
  struct lc_buffer *b = malloc(sizeof *b);
  if (!b) {
    lc_error("out of memory");
    return NULL;
  }
  b->dev_data = lc_gpu_malloc(nbytes, dev);
  if (!b->dev_data) {
    free(b);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  b->data = NULL;
  b->nbytes = nbytes;
  b->owned = 1;
  b->dtor = NULL;
  b->dtor_arg = NULL;
  b->dev = dev;
  b->slot = lc_gpu_current_slot(dev); /* its first writer's, unless eval says otherwise */
  atomic_init(&b->valid, LC_BUF_DEV);
  return b;
}

int lc_buffer_to_host(struct lc_buffer *b) {
  pthread_mutex_lock(&residency_lock);
  int rc = 0;
  if (!(atomic_load_explicit(&b->valid, memory_order_relaxed) & LC_BUF_HOST)) {
    if (!b->data) b->data = lc_alloc(b->nbytes); /* only lace-owned buffers lack a host copy */
    if (!b->data)
      rc = 1;
    else if (!(rc = lc_gpu_download(b->data, b->dev_data, b->nbytes, b->dev)))
      atomic_fetch_or_explicit(&b->valid, LC_BUF_HOST, memory_order_release);
  }
  pthread_mutex_unlock(&residency_lock);
  return rc;
}

int lc_buffer_to_device(struct lc_buffer *b, int dev) {
  unsigned v = atomic_load_explicit(&b->valid, memory_order_acquire);
  if ((v & LC_BUF_DEV) && b->dev == dev) return 0;
  if (b->dev_data && b->dev != dev && lc_buffer_to_host(b)) return 1;
  pthread_mutex_lock(&residency_lock);
  int rc = 0;
  v = atomic_load_explicit(&b->valid, memory_order_relaxed);
  if (!((v & LC_BUF_DEV) && b->dev == dev)) {
    if (b->dev_data && b->dev != dev) { /* the host copy is current (above) */
      lc_gpu_free(b->dev_data, b->nbytes, b->dev);
      b->dev_data = NULL;
      atomic_fetch_and_explicit(&b->valid, ~LC_BUF_DEV, memory_order_relaxed);
    }
    if (!b->dev_data) {
      b->dev_data = lc_gpu_malloc(b->nbytes, dev);
      b->dev = dev;
    }
    if (!b->dev_data)
      rc = 1;
    else if (!(rc = lc_gpu_upload(b->dev_data, b->data, b->nbytes, dev))) {
      b->slot = lc_gpu_current_slot(dev); /* the upload's stream */
      atomic_fetch_or_explicit(&b->valid, LC_BUF_DEV, memory_order_release);
    }
  }
  pthread_mutex_unlock(&residency_lock);
  return rc;
}

void lc_buffer_host_written(struct lc_buffer *b) {
  if (b->dev_data) atomic_store_explicit(&b->valid, LC_BUF_HOST, memory_order_release);
}

void lc_buffer_device_written(struct lc_buffer *b) {
  atomic_store_explicit(&b->valid, LC_BUF_DEV, memory_order_release);
}

struct lc_buffer *lc_buffer_retain(struct lc_buffer *b) {
  if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void lc_buffer_release(struct lc_buffer *b) {
  if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  if (b->dev_data) lc_gpu_free(b->dev_data, b->nbytes, b->dev);
  if (b->owned) {
    if (b->data) lc_free(b->data, b->nbytes);
  } else if (b->dtor) {
    b->dtor(b->dtor_arg);
  }
  free(b);
}
