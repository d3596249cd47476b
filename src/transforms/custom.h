/* Custom transforms: a function whose vjp, jvp or vmap is given by the
 * user (mlx_custom_function, mlx_custom_vjp) or, for mlx_checkpoint, a vjp
 * that recomputes the function instead of keeping its intermediates.
 *
 * Calling the returned closure runs the function, then wraps its outputs
 * in one CUSTOM tuple node whose inputs are the primals followed by the
 * outputs (behind stop_gradient): output k is a TUPLE_GET of the tuple
 * that views the function's output k (TUPLE_GET with a second input). So
 * evaluation costs nothing extra, and the transforms reach the CUSTOM
 * node's rules, which call the user's closures. Rules not given fall back
 * to transforming the function itself. */
#ifndef LC_TRANSFORMS_CUSTOM_H
#define LC_TRANSFORMS_CUSTOM_H

#include <stdbool.h>

#include "api/handles.h"

/* vjp / jvp / vmap: struct lc_xclosure of the custom, custom_jvp and
 * custom_vmap kinds (retained), each may be NULL. checkpoint: the vjp
 * recomputes the function. NULL after reporting. */
struct lc_closure *lc_custom_make(struct lc_closure *fun, struct lc_xclosure *vjp,
                                  struct lc_xclosure *jvp, struct lc_xclosure *vmap,
                                  bool checkpoint);

#endif
