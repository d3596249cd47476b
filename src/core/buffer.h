/* Data buffers: refcounted, shared by every node that views them.
 * A buffer either owns lace-allocated memory (returned to the caching
 * allocator) or wraps user memory with a destructor (run exactly once).
 *
 * Residency (CUDA builds): a buffer may also have a copy in one GPU's
 * memory (dev_data, from the device allocator). `valid` says which copies
 * hold the current bytes, at least one always does. A buffer made on a GPU
 * has no host copy until something on the host reads it (data == NULL
 * then); writing one copy invalidates the other. Transitions happen under
 * one lock; readers check `valid` first (acquire), so a buffer already
 * where it is needed costs one atomic load. */
#ifndef LC_BUFFER_H
#define LC_BUFFER_H

#include <stdatomic.h>
#include <stddef.h>

struct lc_buffer {
  atomic_int refs;
  void *data;
  size_t nbytes;
  int owned;            /* 1: from lc_alloc; 0: user memory */
  void (*dtor)(void *); /* user memory only: called once with dtor_arg */
  void *dtor_arg;
  void *dev_data;      /* NULL: no device copy */
  int dev;             /* the GPU holding dev_data */
  int slot;            /* the stream slot of dev that last wrote dev_data (gpu/gpu.h) */
  atomic_uint valid;   /* LC_BUF_HOST | LC_BUF_DEV */
};

#define LC_BUF_HOST 1u
#define LC_BUF_DEV 2u

struct lc_buffer *lc_buffer_new(size_t nbytes); /* NULL (reported) on failure */
struct lc_buffer *lc_buffer_wrap(void *data, size_t nbytes, void (*dtor)(void *), void *arg);
struct lc_buffer *lc_buffer_retain(struct lc_buffer *b);
void lc_buffer_release(struct lc_buffer *b); /* NULL is fine */

/* A buffer whose only copy is nbytes of GPU dev's memory, contents
 * undefined. NULL (reported) on failure. */
struct lc_buffer *lc_buffer_new_device(size_t nbytes, int dev);
/* Makes the host copy current (allocating it, copying back and waiting for
 * the GPU). 0, or 1 after reporting. */
int lc_buffer_to_host(struct lc_buffer *b);
/* Makes a copy on GPU dev current (uploading the host copy; a copy on
 * another GPU goes through the host). 0, or 1 after reporting. */
int lc_buffer_to_device(struct lc_buffer *b, int dev);
/* The host copy was just written: the device copy is stale. */
void lc_buffer_host_written(struct lc_buffer *b);
/* The device copy was just written: the host copy is stale. */
void lc_buffer_device_written(struct lc_buffer *b);

/* While > 0 on this thread (a CUDA graph is being captured), host reads
 * of buffers fail: a value read on the host would be baked into the graph.
 * lc_buffer_host_read_refused() counts the attempts. */
extern _Thread_local int lc_host_reads_refused;
int lc_buffer_refuse_host_read(void);
unsigned long lc_buffer_host_read_refused(void);

static inline int lc_buffer_on_host(struct lc_buffer *b) {
  if (lc_host_reads_refused > 0) return lc_buffer_refuse_host_read();
  return (atomic_load_explicit(&b->valid, memory_order_acquire) & LC_BUF_HOST) ? 0
                                                                                : lc_buffer_to_host(b);
}

#endif
