/* LACE_PROFILE=1: per-primitive totals of evaluation time, printed to
 * stderr at exit. Each node's time is measured from the start of its
 * evaluation to the end of its GPU work (the device is waited for after
 * every GPU node while profiling), split by where it ran. Costs one
 * branch per node when off. */
#ifndef LC_PROFILE_H
#define LC_PROFILE_H

#include <stdbool.h>

bool lc_profile_on(void);
double lc_profile_now(void);
/* Adds one evaluation of primitive op that ran on the CPU or a GPU. */
void lc_profile_add(int op, bool on_gpu, double seconds);

#endif
