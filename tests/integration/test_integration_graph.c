/* mlx-c's example-graph.c, written anew as checks: log(x / 2) built
 * lazily, the arrays named with a node namer, the graph exported as DOT and
 * printed as text, then evaluated. Checks the names (user names, letters
 * for the rest, as MLX's NodeNamer gives them), the operations in the
 * output, and the values. */
#include "integration.h"

/* Runs fn(f, namer, v) on a temporary file and returns what it wrote
 * (malloc'd, NUL-terminated), NULL on failure. */
static char *capture(int (*fn)(FILE *, mlx_node_namer, mlx_vector_array), mlx_node_namer namer,
                     mlx_vector_array v) {
  FILE *f = tmpfile();
  if (!f) return NULL;
  char *buf = NULL;
  if (!fn(f, namer, v)) {
    long len = ftell(f);
    rewind(f);
    buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len)
      buf[len] = 0;
    else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static void test_example_graph(void) {
  mlx_stream s = test_stream();
  float data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array val = mlx_array_new_data(data, shape, 2, MLX_FLOAT32);
  mlx_array two = mlx_array_new_int(2), res = mlx_array_new();
  mlx_node_namer namer = mlx_node_namer_new();
  mlx_vector_array vec = mlx_vector_array_new();
  char *dot = NULL, *text = NULL;
  NEED(mlx_divide(&res, val, two, s));
  NEED(mlx_log(&res, res, s));
  NEED(mlx_node_namer_set_name(namer, val, "inputs"));
  CHECK_OK(mlx_node_namer_set_name(namer, res, "result"));
  CHECK_OK(mlx_vector_array_append_value(vec, val));
  CHECK_OK(mlx_vector_array_append_value(vec, two));
  CHECK_OK(mlx_vector_array_append_value(vec, res));

  dot = capture(mlx_export_to_dot, namer, vec);
  CHECK(dot != NULL);
  if (dot) {
    CHECK_MSG(!strncmp(dot, "digraph {", 9), "DOT starts '%.20s'", dot);
    CHECK(strlen(dot) >= 2 && !strcmp(dot + strlen(dot) - 2, "}\n"));
    CHECK(count(dot, "inputs") == 1 && count(dot, "result") == 1);
    CHECK(count(dot, "divide") == 1 && count(dot, "log") == 1);
    CHECK(count(dot, "float32 (2,3)") >= 3); /* inputs, the quotient, result */
  }
  /* the unnamed scalar gets the next letter after the two user names */
  const char *name = NULL;
  CHECK_OK(mlx_node_namer_get_name(&name, namer, two));
  CHECK(name && !strcmp(name, "C"));
  CHECK_OK(mlx_node_namer_get_name(&name, namer, val));
  CHECK(name && !strcmp(name, "inputs"));

  text = capture(mlx_print_graph, namer, vec);
  CHECK(text != NULL);
  if (text) {
    CHECK_MSG(strstr(text, "divide inputs ") != NULL, "print_graph:\n%s", text);
    CHECK_MSG(strstr(text, " -> result\n") != NULL, "print_graph:\n%s", text);
    CHECK(count(text, "log ") == 1 && count(text, "divide ") == 1);
  }

  double ref[6];
  for (int i = 0; i < 6; i++) ref[i] = log(data[i] / 2.0);
  CHECK_CLOSE(res, ref, 6, 1e-6, 1e-7);
skip:
  free(dot);
  free(text);
  mlx_node_namer_free(namer);
  mlx_vector_array_free(vec);
  mlx_array_free(val);
  mlx_array_free(two);
  mlx_array_free(res);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_example_graph();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
