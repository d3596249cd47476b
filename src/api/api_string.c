/* mlx_string: owned NUL-terminated strings; mlx_version. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"



mlx_string mlx_string_new(void) { return (mlx_string){NULL}; }

mlx_string mlx_string_new_data(const char *str) {
  mlx_string s = {NULL};
  if (!str) {
    lc_error("mlx_string_new_data: str is NULL");
    return s;
  }
  lc_string_assign(&s, str);
  return s;
}

/* Makes *res hold a copy of s. 0, or 1 after reporting. */
int lc_string_assign(mlx_string *res, const char *s) {
  if (!res) return lc_error("result string pointer is NULL");
  struct lc_string *n = malloc(sizeof *n);
  char *d = strdup(s ? s : "");
  if (!n || !d) {
    free(n);
    free(d);
    return lc_error("out of memory");
  }
  n->data = d;
  mlx_string_free(*res);
  res->ctx = n;
  return 0;
}

int mlx_string_set(mlx_string *str, const mlx_string src) {
  LC_CHECK_RES("mlx_string_set", str);
  if (!src.ctx) {
    mlx_string_free(*str);
    str->ctx = NULL;
    return 0;
  }
  return lc_string_assign(str, ((struct lc_string *)src.ctx)->data);
}

const char *mlx_string_data(mlx_string str) {
  return str.ctx ? ((struct lc_string *)str.ctx)->data : NULL;
}

int mlx_string_free(mlx_string str) {
  struct lc_string *s = str.ctx;
  if (s) {
    free(s->data);
    free(s);
  }
  return 0;
}

int mlx_version(mlx_string *str_) { return lc_string_assign(str_, LACE_VERSION_STRING); }
