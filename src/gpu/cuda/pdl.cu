// The switch of programmatic dependent launch (pdl.cuh), for C callers too.
#include <stdlib.h>

#include "gpu/cuda/kernels.h"

extern "C" int lc_cu_pdl_enabled(void) {
  static const bool on = [] { // read once; constant after
    const char *e = getenv("LACE_CUDA_PDL");
    return !(e && e[0] == '0' && !e[1]);
  }();
  return on;
}
