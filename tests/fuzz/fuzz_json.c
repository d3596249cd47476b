/* Fuzz harness: the JSON reader of file headers (io/json.c). A value that
 * parses is written back as JSON and parsed again: both trees must be
 * equal. A failed parse must have reported. */
#include "fuzz.h"

#include <math.h>

#include "io/io.h"
#include "io/json.h"

/* Writes v; false when it holds a number with no JSON spelling (inf). */
static bool json_write(struct lc_sbuf *b, const struct lc_json *v) {
  switch (v->type) {
    case LC_JSON_NULL: lc_sbuf_putn(b, "null", 4); return true;
    case LC_JSON_BOOL: lc_sbuf_printf(b, "%s", v->b ? "true" : "false"); return true;
    case LC_JSON_NUM:
      if (v->is_int) lc_sbuf_printf(b, "%lld", (long long)v->i);
      else if (!isfinite(v->num)) return false;
      else lc_sbuf_printf(b, "%.17g", v->num);
      return true;
    case LC_JSON_STR: lc_sbuf_json_string(b, v->str); return true;
    case LC_JSON_ARR:
    case LC_JSON_OBJ: {
      bool obj = v->type == LC_JSON_OBJ;
      lc_sbuf_putn(b, obj ? "{" : "[", 1);
      for (size_t i = 0; i < v->n; i++) {
        if (i) lc_sbuf_putn(b, ",", 1);
        if (obj) {
          lc_sbuf_json_string(b, v->keys[i]);
          lc_sbuf_putn(b, ":", 1);
        }
        if (!json_write(b, v->items[i])) return false;
      }
      lc_sbuf_putn(b, obj ? "}" : "]", 1);
      return true;
    }
  }
  abort();
}

static bool json_equal(const struct lc_json *a, const struct lc_json *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case LC_JSON_NULL: return true;
    case LC_JSON_BOOL: return a->b == b->b;
    case LC_JSON_NUM:
      /* an integer written as "1" stays one; "1.0" becomes "1" and an integer */
      if (a->is_int && (!b->is_int || a->i != b->i)) return false;
      return a->num == b->num;
    case LC_JSON_STR: return strcmp(a->str, b->str) == 0;
    default:
      if (a->n != b->n) return false;
      for (size_t i = 0; i < a->n; i++) {
        if (a->type == LC_JSON_OBJ && strcmp(a->keys[i], b->keys[i])) return false;
        if (!json_equal(a->items[i], b->items[i])) return false;
      }
      return true;
  }
}

FUZZ_ENTRY(json) {
  fuzz_setup();
  unsigned long before = fuzz_errors;
  struct lc_json *v = lc_json_parse((const char *)data, size, "fuzz_json", "<input>");
  if (!v) {
    if (fuzz_errors == before) abort();
    return 0;
  }
  struct lc_sbuf b = {0};
  if (json_write(&b, v) && !b.failed) {
    struct lc_json *w = lc_json_parse(b.p ? b.p : "", b.len, "fuzz_json", "<rewritten>");
    if (!w || !json_equal(v, w)) {
      fprintf(stderr, "fuzz_json: rewritten text does not parse back equal: %s\n", b.p);
      abort();
    }
    lc_json_free(w);
  }
  free(b.p);
  lc_json_free(v);
  return 0;
}
