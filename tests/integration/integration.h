/* Helpers of the integration tests (programs written after mlx-c's
 * examples, using the public API only).
 *
 * NEED(expr): a call a test section depends on. When lace reports that the
 * function is "not implemented", the section is skipped (announced on
 * stdout as "SKIP ...", counted by integ_skipped) instead of failing, so the
 * section turns itself on when the function lands. Any other failure is a
 * failed check and also ends the section. Use inside functions returning
 * void. */
#ifndef LACE_INTEGRATION_H
#define LACE_INTEGRATION_H

#include "test.h"

static int integ_skipped;

static int integ_need(int rc, const char *expr, const char *file, int line) {
  test_checks++;
  if (rc == 0) return 0;
  if (strstr(test_last_error, "not implemented in lace")) {
    integ_skipped++;
    printf("SKIP %s:%d: %s: %s\n", file, line, expr, test_last_error);
    return 1;
  }
  test_failures++;
  fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expr, test_last_error);
  return 1;
}

#define NEED(expr)                                                 \
  do {                                                             \
    test_last_error[0] = 0;                                        \
    if (integ_need((expr), #expr, __FILE__, __LINE__)) goto skip; \
  } while (0)

/* Checks that mlx_array_tostring(a) is exactly `expect`. Returns the NEED
 * status: 0 when the comparison ran. */
static int integ_check_print(const char *file, int line, mlx_array a, const char *expect) {
  mlx_string s = mlx_string_new();
  test_last_error[0] = 0;
  int rc = integ_need(mlx_array_tostring(&s, a), "mlx_array_tostring", file, line);
  if (!rc) {
    const char *got = mlx_string_data(s);
    test_checks++;
    if (!got || strcmp(got, expect)) {
      test_failures++;
      fprintf(stderr, "%s:%d: printed\n%s\nexpected\n%s\n", file, line, got ? got : "(null)",
              expect);
    }
  }
  mlx_string_free(s);
  return rc;
}
#define CHECK_PRINT(a, expect) integ_check_print(__FILE__, __LINE__, (a), (expect))

static int integ_done(void) {
  if (integ_skipped) printf("%d section(s) skipped: functions not implemented yet\n", integ_skipped);
  return test_done();
}

/* mlx-c's examples run on the GPU stream; here, the GPU where this
 * machine has one, else the CPU (lace built with CUDA and no GPU reports a
 * GPU stream as an error, tests/gpu/test_gpu_unavailable.c). */
static inline mlx_stream integration_stream_new(void) {
  int n = 0;
  mlx_device_count(&n, MLX_GPU);
  return n > 0 ? mlx_default_gpu_stream_new() : mlx_default_cpu_stream_new();
}

#endif
