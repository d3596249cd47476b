/* Shared by the quantization tests: affine quantization of a weight matrix
 * on the test stream, and a dtype cast, both evaluated. Include after
 * test.h. */
#ifndef LACE_TEST_QUANT_UTIL_H
#define LACE_TEST_QUANT_UTIL_H

#include "test.h"

/* w quantized (affine, group size gs, bits): out[0..3) = packed weights,
 * scales and biases, each a new evaluated array the caller frees. */
static inline void test_quantize(mlx_array w, int gs, int bits, mlx_array *out) {
  mlx_vector_array q = mlx_vector_array_new();
  mlx_optional_int g = {gs, true}, b = {bits, true};
  CHECK_OK(mlx_quantize(&q, w, g, b, "affine", (mlx_array){NULL}, test_stream()));
  for (int i = 0; i < 3; i++) {
    out[i] = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&out[i], q, (size_t)i));
    CHECK_OK(mlx_array_eval(out[i]));
  }
  mlx_vector_array_free(q);
}

/* x cast to t, evaluated: a new array the caller frees. */
static inline mlx_array test_as_type(mlx_array x, mlx_dtype t) {
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_astype(&r, x, t, test_stream()));
  CHECK_OK(mlx_array_eval(r));
  return r;
}

#endif
