/* A small JSON reader for file headers (safetensors): builds a tree of
 * values from untrusted text. Never crashes on malformed input: reports
 * "what is wrong at offset N" and returns NULL. Nesting is limited to 64
 * levels. Strings are decoded to UTF-8 (\uXXXX and surrogate pairs); embedded
 * NUL characters are rejected. Numbers keep their double value and whether
 * they were written as an integer (then `i` holds the exact value; integers
 * beyond int64 range are rejected). */
#ifndef LC_JSON_H
#define LC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lc_json_type { LC_JSON_NULL, LC_JSON_BOOL, LC_JSON_NUM, LC_JSON_STR, LC_JSON_ARR, LC_JSON_OBJ };

struct lc_json {
  enum lc_json_type type;
  bool b;
  bool is_int;
  int64_t i;
  double num;
  char *str;               /* LC_JSON_STR */
  size_t n;                /* ARR / OBJ: number of items */
  char **keys;             /* OBJ: n keys, in file order */
  struct lc_json **items;  /* ARR / OBJ: n values */
};

/* Parses text[0..len). On error reports "<fn>: invalid JSON header in
 * <label>: <what> at offset <k>" and returns NULL. */
struct lc_json *lc_json_parse(const char *text, size_t len, const char *fn, const char *label);
void lc_json_free(struct lc_json *v);
/* Object member lookup (first match); NULL if absent or v is not an object. */
const struct lc_json *lc_json_get(const struct lc_json *v, const char *key);

#endif
