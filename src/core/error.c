#include "core/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlx/c/error.h"

/* Recursive: a handler may itself call into lace and fail. */
static pthread_mutex_t handler_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static mlx_error_handler_func handler_fn; /* NULL: print to stderr */
static void *handler_data;
static void (*handler_dtor)(void *);

static _Thread_local char last_msg[1024];
static _Thread_local int muted;
static _Thread_local unsigned long reported;

void mlx_set_error_handler(mlx_error_handler_func handler, void *data, void (*dtor)(void *)) {
  pthread_mutex_lock(&handler_lock);
  void *old = handler_data;
  void (*old_dtor)(void *) = handler_dtor;
  handler_fn = handler;
  handler_data = data;
  handler_dtor = dtor;
  pthread_mutex_unlock(&handler_lock);
  if (old_dtor) old_dtor(old);
}

int lc_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
  reported++;
  if (muted > 0) return 1;
  /* The handler runs under the lock so that a concurrent
   * mlx_set_error_handler cannot free its data while it runs. */
  pthread_mutex_lock(&handler_lock);
  if (handler_fn)
    handler_fn(last_msg, handler_data);
  else
    fprintf(stderr, "lace error: %s\n", last_msg);
  pthread_mutex_unlock(&handler_lock);
  return 1;
}

const char *lc_last_error(void) { return last_msg; }

unsigned long lc_error_count(void) { return reported; }

void lc_error_mute(int delta) { muted += delta; }

void _mlx_error(const char *file, const int line, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
  va_end(ap);
  lc_error("%s at %s:%d", msg, file ? file : "?", line);
}
