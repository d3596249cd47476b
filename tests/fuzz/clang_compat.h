/* Force-included (-include) in the clang fuzz build only: glibc's
 * <complex.h> defines CMPLXF/CMPLX for GCC and for compilers with
 * __builtin_complex, which clang 14 lacks. */
#include <complex.h>
#ifndef CMPLXF
#define CMPLXF(x, y) ((union { float _Complex c; float f[2]; }){.f = {(x), (y)}}.c)
#endif
#ifndef CMPLX
#define CMPLX(x, y) ((union { double _Complex c; double f[2]; }){.f = {(x), (y)}}.c)
#endif
