/* Binary elementwise builders (new reference, or NULL after reporting;
 * arguments are borrowed). Inputs broadcast (numpy rules) and are cast to
 * MLX's promoted dtype (lc_dtype_promote) before the op, as in MLX:
 *  - divide, arctan2, logaddexp compute in at least float32 (integer
 *    division is true division);
 *  - floor_divide and remainder follow Python's sign rules (the remainder
 *    has the divisor's sign); integer division by zero gives 0;
 *  - comparisons give bool; logical_and/or cast to bool first;
 *  - bitwise ops and shifts need integer or bool types (shifts of bool
 *    compute in uint8); shifting by >= the bit width gives 0 (or -1 for a
 *    right shift of a negative value);
 *  - maximum/minimum propagate NaN;
 *  - integer power with a negative exponent gives 0 (MLX).
 * Complex64 is supported by add, subtract, multiply, divide, power, equal,
 * not_equal; the others report "not supported for complex64". */
#ifndef LC_BINARY_H
#define LC_BINARY_H

#include <stdbool.h>

#include "core/node.h"
#include "ops/ternary.h"

struct lc_node *lc_add(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_subtract(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_multiply(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_divide(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_floor_divide(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_remainder(struct lc_node *a, struct lc_node *b);
/* Quotient and remainder (floor_divide, remainder) of one multi-output node:
 * *q and *r new references. 0, or 1 after reporting. */
int lc_divmod(struct lc_node *a, struct lc_node *b, struct lc_node **q, struct lc_node **r);
struct lc_node *lc_power(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_maximum(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_minimum(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_arctan2(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_logaddexp(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_equal(struct lc_node *a, struct lc_node *b);
/* equal, counting NaN == NaN as true when equal_nan. */
struct lc_node *lc_equal_nan(struct lc_node *a, struct lc_node *b, bool equal_nan);
struct lc_node *lc_not_equal(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_greater(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_greater_equal(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_less(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_less_equal(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_logical_and(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_logical_or(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_bitwise_and(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_bitwise_or(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_bitwise_xor(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_left_shift(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_right_shift(struct lc_node *a, struct lc_node *b);
/* maximum(a, lo) then minimum(., hi); lo or hi may be NULL (no bound), not
 * both. */
struct lc_node *lc_clip(struct lc_node *a, struct lc_node *lo, struct lc_node *hi);
/* |a - b| <= atol + rtol * |b| elementwise (bool), with infinities equal
 * only to themselves and NaN equal to NaN when equal_nan. */
struct lc_node *lc_isclose(struct lc_node *a, struct lc_node *b, double rtol, double atol,
                           bool equal_nan);

/* all(isclose(...)) as a 0-d bool. */
struct lc_node *lc_allclose(struct lc_node *a, struct lc_node *b, double rtol, double atol,
                            bool equal_nan);
/* 0-d bool: same shape and all elements equal (after promotion); NaN equal
 * to NaN when equal_nan. Different shapes give false, not an error. */
struct lc_node *lc_array_equal(struct lc_node *a, struct lc_node *b, bool equal_nan);

/* Convenience for op writers: a op scalar, the scalar made an array of a's
 * dtype when a is inexact, else of float32 when v is not an integer, else
 * of a's dtype (so x * 2 keeps int32, x * 0.5 of int32 gives float32). */
struct lc_node *lc_scalar_for(struct lc_node *a, double v);

#endif
