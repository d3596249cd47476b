/* mlx-c's example-export.c written anew as checks: a unary closure
 * exported on a 0-d float (on the default GPU stream, as the example
 * does), imported and called positionally and then with a keyword input
 * (keywords flatten after positional inputs, so "x" feeds the single
 * input); a kwargs closure exported with keywords x and y and called with
 * new values. Each result is printed as the example prints it and
 * compared with what the example prints against mlx-c. The files are
 * written relative to the working directory, as in the example (a
 * scratch directory here). */
#include <sys/stat.h>

#include "integration.h"

static int inc_fun(mlx_array *res, mlx_array x) {
  mlx_stream s = integration_stream_new();
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_add(res, x, one, s);
  mlx_stream_free(s);
  mlx_array_free(one);
  return rc;
}

static int mul_fun(mlx_vector_array *res, const mlx_vector_array args,
                   const mlx_map_string_to_array kwargs) {
  (void)args;
  mlx_stream s = integration_stream_new();
  mlx_array x = mlx_array_new(), y = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_map_string_to_array_get(&x, kwargs, "x") ||
           mlx_map_string_to_array_get(&y, kwargs, "y") || mlx_multiply(&r, x, y, s) ||
           mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(r);
  mlx_stream_free(s);
  return rc;
}

/* The example's print_array: the message line, then the array's text. */
static char printed[4096];
static void show(const char *msg, mlx_array a) {
  mlx_string str = mlx_string_new();
  size_t n = strlen(printed);
  if (!mlx_array_tostring(&str, a))
    snprintf(printed + n, sizeof printed - n, "%s\n%s\n", msg, mlx_string_data(str));
  mlx_string_free(str);
}
static void say(const char *line) {
  size_t n = strlen(printed);
  snprintf(printed + n, sizeof printed - n, "%s\n", line);
}

/* What example-export.c prints against mlx-c. */
static const char *const expected =
    "x: \narray(1, dtype=float32)\n"
    "storing inc() function in inc_func.bin file\n"
    "loading inc() function from inc_func.bin file\n"
    "evaluating inc() over x\n"
    "+1: \narray(2, dtype=float32)\n"
    "evaluating inc() over x with kwargs\n"
    "+1: \narray(3, dtype=float32)\n"
    "storing mul() function in mul_func.bin file\n"
    "loading mul() function from mul_func.bin file\n"
    "evaluating mul() over x and x with kwargs\n"
    "x: \narray(3, dtype=float32)\n"
    "3*3: \narray(9, dtype=float32)\n";

static void test_example_export(void) {
  mlx_array x = mlx_array_new_float(1.0f), y = mlx_array_new();
  mlx_vector_array args = mlx_vector_array_new_value(x), res = mlx_vector_array_new(),
                   empty = mlx_vector_array_new();
  mlx_map_string_to_array kwargs = mlx_map_string_to_array_new();
  mlx_closure inc = mlx_closure_new_unary(inc_fun);
  mlx_closure_kwargs mul = mlx_closure_kwargs_new_func(mul_fun);
  mlx_imported_function finc = {NULL}, fmul = {NULL};
  show("x: ", x);

  say("storing inc() function in inc_func.bin file");
  NEED(mlx_export_function("inc_func.bin", inc, args, false));
  say("loading inc() function from inc_func.bin file");
  finc = mlx_imported_function_new("inc_func.bin");
  CHECK(finc.ctx != NULL);
  say("evaluating inc() over x");
  NEED(mlx_imported_function_apply(&res, finc, args));
  NEED(mlx_vector_array_get(&y, res, 0));
  show("+1: ", y);
  mlx_array_set(&x, y);

  say("evaluating inc() over x with kwargs");
  mlx_map_string_to_array_insert(kwargs, "x", x);
  NEED(mlx_imported_function_apply_kwargs(&res, finc, empty, kwargs));
  NEED(mlx_vector_array_get(&y, res, 0));
  show("+1: ", y);
  mlx_array_set(&x, y);

  say("storing mul() function in mul_func.bin file");
  mlx_map_string_to_array_insert(kwargs, "y", x);
  NEED(mlx_export_function_kwargs("mul_func.bin", mul, empty, kwargs, false));
  say("loading mul() function from mul_func.bin file");
  fmul = mlx_imported_function_new("mul_func.bin");
  CHECK(fmul.ctx != NULL);
  say("evaluating mul() over x and x with kwargs");
  show("x: ", x);
  mlx_map_string_to_array_insert(kwargs, "x", x);
  mlx_map_string_to_array_insert(kwargs, "y", x);
  NEED(mlx_imported_function_apply_kwargs(&res, fmul, empty, kwargs));
  NEED(mlx_vector_array_get(&y, res, 0));
  show("3*3: ", y);
  CHECK_MSG(!strcmp(printed, expected), "printed\n%s\nexpected\n%s", printed, expected);
  CHECK_PRINT(y, "array(9, dtype=float32)");
skip:
  mlx_imported_function_free(finc);
  mlx_imported_function_free(fmul);
  mlx_closure_free(inc);
  mlx_closure_kwargs_free(mul);
  mlx_map_string_to_array_free(kwargs);
  mlx_vector_array_free(args);
  mlx_vector_array_free(res);
  mlx_vector_array_free(empty);
  mlx_array_free(x);
  mlx_array_free(y);
}

int main(void) {
  test_init();
  char dir[256], cwd[1024];
  snprintf(dir, sizeof dir, "/tmp/lace_integ_export_%d", (int)getpid());
  mkdir(dir, 0755);
  if (!getcwd(cwd, sizeof cwd) || chdir(dir)) return fprintf(stderr, "no scratch dir\n"), 1;
  test_example_export();
  if (chdir(cwd)) fprintf(stderr, "cannot return to %s\n", cwd);
  test_remove_dir(dir);
  return integ_done();
}
