/* JSON reader (see json.h). Recursive descent with an explicit depth limit. */
#include "io/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_DEPTH 64

struct parser {
  const char *s;
  size_t len, pos;
  const char *fn, *label;
  int failed;
};

static void fail(struct parser *p, const char *what) {
  if (p->failed) return;
  p->failed = 1;
  lc_error("%s: invalid JSON header in %s: %s at offset %zu", p->fn, p->label, what, p->pos);
}

static void skip_ws(struct parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static struct lc_json *new_value(struct parser *p, enum lc_json_type t) {
  struct lc_json *v = calloc(1, sizeof *v);
  if (!v) {
    fail(p, "out of memory");
    return NULL;
  }
  v->type = t;
  return v;
}

void lc_json_free(struct lc_json *v) {
  if (!v) return;
  free(v->str);
  for (size_t i = 0; i < v->n; i++) {
    if (v->keys) free(v->keys[i]);
    lc_json_free(v->items[i]);
  }
  free(v->keys);
  free(v->items);
  free(v);
}

static int hex4(struct parser *p, unsigned *out) {
  if (p->len - p->pos < 4) return fail(p, "truncated \\u escape"), 1;
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return fail(p, "bad hex digit in \\u escape"), 1;
  }
  *out = v;
  return 0;
}

/* Parses a string literal at p->pos (the opening quote); returns malloc'd UTF-8. */
static char *parse_string(struct parser *p) {
  if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a string"), NULL;
  p->pos++;
  /* decoded text is never longer than the source text */
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  if (!out) return fail(p, "out of memory"), NULL;
  for (;;) {
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      break;
    }
    unsigned char c = (unsigned char)p->s[p->pos++];
    char tmp[4];
    size_t tn = 0;
    if (c == '"') {
      out[n] = 0;
      return out;
    }
    if (c < 0x20) {
      fail(p, "control character in string");
      break;
    }
    if (c != '\\') {
      tmp[tn++] = (char)c;
    } else {
      if (p->pos >= p->len) {
        fail(p, "unterminated escape");
        break;
      }
      char e = p->s[p->pos++];
      unsigned cp = 0;
      switch (e) {
        case '"': tmp[tn++] = '"'; break;
        case '\\': tmp[tn++] = '\\'; break;
        case '/': tmp[tn++] = '/'; break;
        case 'b': tmp[tn++] = '\b'; break;
        case 'f': tmp[tn++] = '\f'; break;
        case 'n': tmp[tn++] = '\n'; break;
        case 'r': tmp[tn++] = '\r'; break;
        case 't': tmp[tn++] = '\t'; break;
        case 'u':
          if (hex4(p, &cp)) goto bad;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
              fail(p, "unpaired surrogate in \\u escape");
              goto bad;
            }
            p->pos += 2;
            if (hex4(p, &lo)) goto bad;
            if (lo < 0xDC00 || lo > 0xDFFF) {
              fail(p, "unpaired surrogate in \\u escape");
              goto bad;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(p, "unpaired surrogate in \\u escape");
            goto bad;
          }
          if (cp == 0) {
            fail(p, "NUL character in string");
            goto bad;
          }
          if (cp < 0x80) {
            tmp[tn++] = (char)cp;
          } else if (cp < 0x800) {
            tmp[tn++] = (char)(0xC0 | (cp >> 6));
            tmp[tn++] = (char)(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            tmp[tn++] = (char)(0xE0 | (cp >> 12));
            tmp[tn++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            tmp[tn++] = (char)(0x80 | (cp & 0x3F));
          } else {
            tmp[tn++] = (char)(0xF0 | (cp >> 18));
            tmp[tn++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            tmp[tn++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            tmp[tn++] = (char)(0x80 | (cp & 0x3F));
          }
          break;
        default: fail(p, "invalid escape in string"); goto bad;
      }
    }
    if (n + tn + 1 > cap) {
      while (n + tn + 1 > cap) cap *= 2;
      char *no = realloc(out, cap);
      if (!no) {
        fail(p, "out of memory");
        break;
      }
      out = no;
    }
    memcpy(out + n, tmp, tn);
    n += tn;
  }
bad:
  free(out);
  return NULL;
}

static struct lc_json *parse_number(struct parser *p) {
  size_t start = p->pos;
  int is_int = 1;
  if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
  size_t digits = p->pos;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  if (p->pos == digits) return fail(p, "invalid number"), NULL;
  if (p->s[digits] == '0' && p->pos - digits > 1) return fail(p, "leading zero in number"), NULL;
  if (p->pos < p->len && p->s[p->pos] == '.') {
    is_int = 0;
    p->pos++;
    size_t d = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == d) return fail(p, "invalid number"), NULL;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    is_int = 0;
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    size_t d = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == d) return fail(p, "invalid number"), NULL;
  }
  char buf[64];
  size_t n = p->pos - start;
  if (n >= sizeof buf) return fail(p, "number too long"), NULL;
  memcpy(buf, p->s + start, n);
  buf[n] = 0;
  struct lc_json *v = new_value(p, LC_JSON_NUM);
  if (!v) return NULL;
  v->is_int = is_int;
  v->num = strtod(buf, NULL);
  if (is_int) {
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno == ERANGE) {
      lc_json_free(v);
      return fail(p, "integer out of range"), NULL;
    }
    v->i = x;
  }
  return v;
}

static int match(struct parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n)) return 0;
  p->pos += n;
  return 1;
}

static int push(struct parser *p, struct lc_json *c, char *key, struct lc_json *item, size_t *cap) {
  if (c->n == *cap) {
    size_t nc = *cap ? 2 * *cap : 4;
    struct lc_json **ni = realloc(c->items, nc * sizeof *ni);
    if (!ni) return fail(p, "out of memory"), 1;
    c->items = ni;
    if (c->type == LC_JSON_OBJ) {
      char **nk = realloc(c->keys, nc * sizeof *nk);
      if (!nk) return fail(p, "out of memory"), 1;
      c->keys = nk;
    }
    *cap = nc;
  }
  if (c->type == LC_JSON_OBJ) c->keys[c->n] = key;
  c->items[c->n++] = item;
  return 0;
}

static struct lc_json *parse_value(struct parser *p, int depth) {
  skip_ws(p);
  if (p->pos >= p->len) return fail(p, "unexpected end of text"), NULL;
  if (depth > MAX_DEPTH) return fail(p, "nesting too deep"), NULL;
  char c = p->s[p->pos];
  if (c == '"') {
    char *s = parse_string(p);
    if (!s) return NULL;
    struct lc_json *v = new_value(p, LC_JSON_STR);
    if (!v) {
      free(s);
      return NULL;
    }
    v->str = s;
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p);
  if (match(p, "true") || match(p, "false")) {
    struct lc_json *v = new_value(p, LC_JSON_BOOL);
    if (v) v->b = (p->s[p->pos - 1] == 'e' && p->s[p->pos - 2] == 'u');
    return v;
  }
  if (match(p, "null")) return new_value(p, LC_JSON_NULL);
  if (c != '[' && c != '{') return fail(p, "unexpected character"), NULL;
  int is_obj = c == '{';
  p->pos++;
  struct lc_json *v = new_value(p, is_obj ? LC_JSON_OBJ : LC_JSON_ARR);
  if (!v) return NULL;
  size_t cap = 0;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == (is_obj ? '}' : ']')) {
    p->pos++;
    return v;
  }
  for (;;) {
    char *key = NULL;
    if (is_obj) {
      skip_ws(p);
      if (!(key = parse_string(p))) goto bad;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        free(key);
        fail(p, "expected ':'");
        goto bad;
      }
      p->pos++;
    }
    struct lc_json *item = parse_value(p, depth + 1);
    if (!item || push(p, v, key, item, &cap)) {
      free(key);
      lc_json_free(item);
      goto bad;
    }
    skip_ws(p);
    if (p->pos >= p->len) {
      fail(p, "unexpected end of text");
      goto bad;
    }
    char d = p->s[p->pos++];
    if (d == ',') continue;
    if (d == (is_obj ? '}' : ']')) return v;
    p->pos--;
    fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    goto bad;
  }
bad:
  lc_json_free(v);
  return NULL;
}

struct lc_json *lc_json_parse(const char *text, size_t len, const char *fn, const char *label) {
  struct parser p = {text, len, 0, fn, label, 0};
  struct lc_json *v = parse_value(&p, 0);
  if (!v) {
    fail(&p, "malformed value");
    return NULL;
  }
  skip_ws(&p);
  if (p.pos != p.len) {
    fail(&p, "trailing characters after the value");
    lc_json_free(v);
    return NULL;
  }
  return v;
}

const struct lc_json *lc_json_get(const struct lc_json *v, const char *key) {
  if (!v || v->type != LC_JSON_OBJ) return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->keys[i], key)) return v->items[i];
  return NULL;
}
