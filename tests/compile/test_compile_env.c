/* MLX_DISABLE_COMPILE, read at first use, makes mlx_compile return the
 * function itself (a passthrough that calls it every time); an explicit
 * mode change afterwards takes over. */
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
  mlx_closure_free(f);
  mlx_array_free(x);
  return test_done();
}
