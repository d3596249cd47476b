#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void lc_strbuf_put(struct lc_strbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if (b->data && b->len + (size_t)k < b->cap) {
      b->len += (size_t)k;
      return;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap <= b->len + (size_t)k) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
      b->oom = true;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
}
