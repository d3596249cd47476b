/* MLX_DISABLE_COMPILE, read at first use, makes mlx_compile return the
 * function itself (a passthrough that calls it every time); an explicit
 * mode change afterwards takes over. */
#include <unistd.h>

#include "test.h"

static int calls;
static int fun(mlx_vector_array *res, const mlx_vector_array in) {
  calls++;
  mlx_array x = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_vector_array_append_value(*res, x);
  mlx_array_free(x);
  return rc;
}

/* exp(x) + x: one fused kernel */
static int fun2(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array x = mlx_array_new(), e = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_exp(&e, x, s);
  if (!rc) rc = mlx_add(&e, e, x, s);
  if (!rc) rc = mlx_vector_array_append_value(*res, e);
  mlx_array_free(x);
  mlx_array_free(e);
  mlx_stream_free(s);
  return rc;
}

static void apply(mlx_closure f, mlx_array x) {
  mlx_vector_array in = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, in));
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
}

int main(void) {
  test_init();
  setenv("MLX_DISABLE_COMPILE", "1", 1);
  mlx_closure f = mlx_closure_new_func(fun), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  CHECK(cf.ctx == f.ctx); /* the function itself */
  mlx_array x = mlx_array_new_float(1.0f);
  apply(cf, x);
  apply(cf, x);
  CHECK(calls == 2);
  mlx_closure_free(cf);
  cf = mlx_closure_new();
  CHECK_OK(mlx_enable_compile());
  CHECK_OK(mlx_compile(&cf, f, false));
  CHECK(cf.ctx != f.ctx);
  apply(cf, x);
  apply(cf, x);
  CHECK(calls == 3);
  mlx_closure_free(cf);
  /* LACE_DUMP_GRAPH prints the traced and compiled programs as DOT and
   * the fused kernels */
  setenv("LACE_DUMP_GRAPH", "1", 1);
  char path[] = "/tmp/lace_dump_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  mlx_closure g = mlx_closure_new_func(fun2), cg = mlx_closure_new();
  CHECK_OK(mlx_compile(&cg, g, false));
  apply(cg, x);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buf[8192] = {0};
  lseek(fd, 0, SEEK_SET);
  ssize_t got = read(fd, buf, sizeof buf - 1);
  CHECK(got > 0);
  CHECK(strstr(buf, "digraph \"traced\"") != NULL);
  CHECK(strstr(buf, "digraph \"compiled\"") != NULL);
  CHECK(strstr(buf, "fused kernel") != NULL);
  CHECK(strstr(buf, "exp<float32>") != NULL);
  close(fd);
  unlink(path);
  unsetenv("LACE_DUMP_GRAPH");
  mlx_closure_free(cg);
  mlx_closure_free(g);
  mlx_closure_free(f);
  mlx_array_free(x);
  return test_done();
}
