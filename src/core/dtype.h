/* Element types: sizes, names, classes and MLX's promotion rules.
 * mlx_dtype values are mlx-c's; LC_NDTYPES counts them. */
#ifndef LC_DTYPE_H
#define LC_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "mlx/c/array.h"

#define LC_NDTYPES 14

bool lc_dtype_valid(mlx_dtype t);
size_t lc_dtype_size(mlx_dtype t);
const char *lc_dtype_name(mlx_dtype t); /* "float32", ... */
bool lc_dtype_is_float(mlx_dtype t);    /* float16/32/64, bfloat16 */
bool lc_dtype_is_complex(mlx_dtype t);
bool lc_dtype_is_inexact(mlx_dtype t); /* float or complex */
bool lc_dtype_is_int(mlx_dtype t);     /* signed or unsigned integer, not bool */
bool lc_dtype_is_signed(mlx_dtype t);  /* signed integers and inexact types */
bool lc_dtype_is_unsigned(mlx_dtype t);

/* The type both operands of a binary op are cast to (MLX's promote_types). */
mlx_dtype lc_dtype_promote(mlx_dtype a, mlx_dtype b);

/* The float type an op that needs inexact values (mean, sqrt, ...) computes
 * in: inexact types stay, integers and bool become float32. */
mlx_dtype lc_dtype_inexact(mlx_dtype t);



/* Scalar conversion through double (complex: real part in, real part out;
 * imaginary set to 0). Integers convert with C semantics after clamping
 * NaN to 0. */
void lc_dtype_store(void *dst, mlx_dtype t, double v);
double lc_dtype_load(const void *src, mlx_dtype t);
#endif
