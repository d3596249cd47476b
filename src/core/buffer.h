/* Data buffers: refcounted, shared by every node that views them.
 * A buffer either owns lace-allocated memory (returned to the caching
 * allocator) or wraps user memory with a destructor (run exactly once). */
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
};

struct lc_buffer *lc_buffer_new(size_t nbytes); /* NULL (reported) on failure */
struct lc_buffer *lc_buffer_wrap(void *data, size_t nbytes, void (*dtor)(void *), void *arg);
struct lc_buffer *lc_buffer_retain(struct lc_buffer *b);
void lc_buffer_release(struct lc_buffer *b); /* NULL is fine */

#endif
