/* A growing string for building text (array printing, generated code). */
#ifndef LC_STRBUF_H
#define LC_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialised = empty. data is NUL-terminated once anything was
 * appended; after an allocation failure oom is set and appends do nothing
 * (the owner frees data either way). */
struct lc_strbuf {
  char *data;
  size_t len, cap;
  bool oom;
};

void lc_strbuf_put(struct lc_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
