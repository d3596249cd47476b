/* The transform engines on the smallest graphs: identity, broadcast,
 * functions whose outputs do not depend on their inputs. */
#include "tx_check.h"

static int f_bcast(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  int sh[3] = {3, 2, 4};
  return mlx_broadcast_to(out, in[0], sh, 3, test_stream());
}

static int f_ident(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_array_set(out, in[0]);
}

int main(void) {
  test_init();
  int s1[2] = {1, 4};
  mlx_array x = tx_rand(s1, 2, -1, 1);
  tx_check_grad("broadcast", f_bcast, NULL, 1, &x, 1e-6);
  tx_check_grad("identity", f_ident, NULL, 1, &x, 1e-6);
  int s2[2] = {5, 4};
  mlx_array xb = tx_rand(s2, 2, -1, 1);
  int ax0[1] = {0};
  tx_check_vmap("broadcast", f_bcast, NULL, 1, &xb, ax0, 1e-12);
  mlx_array_free(x);
  mlx_array_free(xb);
  return test_done();
}
