/* The vectorisable helpers behind reductions and softmax: float16 loads are
 * bit-exact with core/half.h for all 65536 patterns; lc_expf_fast stays
 * within 3e-7 relative error over the float range and handles inf, NaN,
 * underflow and overflow; the selects pick the right operand. */
#include <math.h>

#include "core/half.h"
#include "ops/reduce_math.h"
#include "test.h"

int main(void) {
  test_init();
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = lc_f16_to_f32((uint16_t)h), b = lc_f16_to_f32_fast((uint16_t)h);
    if (memcmp(&a, &b, 4) != 0 && bad++ < 5)
      fprintf(stderr, "f16 %04x: %a vs %a\n", h, (double)a, (double)b);
  }
  CHECK_MSG(bad == 0, "%d float16 patterns convert differently", bad);
  double worst = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.00123f) {
    double e = exp((double)x), rel = fabs(lc_expf_fast(x) - e) / e;
    worst = rel > worst ? rel : worst;
  }
  CHECK_MSG(worst < 3e-7, "expf relative error %.3g", worst);
  CHECK(lc_expf_fast(0) == 1);
  CHECK(lc_expf_fast(-INFINITY) == 0 && lc_expf_fast(-200) == 0);
  CHECK(isinf(lc_expf_fast(INFINITY)) && isinf(lc_expf_fast(100)));
  CHECK(isnan(lc_expf_fast(NAN)));
  CHECK(lc__fsel(1, 2.0f, 3.0f) == 2.0f && lc__fsel(0, 2.0f, 3.0f) == 3.0f);
  CHECK(LC_FSEL(1, 2.0, 3.0) == 2.0 && LC_FSEL(0, 2.0, 3.0) == 3.0);
  return test_done();
}
