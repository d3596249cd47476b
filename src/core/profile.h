/* LACE_PROFILE=1: per-primitive totals of evaluation time, printed to
 * stderr at exit. Each node's time is measured from the start of its
 * evaluation to the end of its GPU work (the device is waited for after
 * every GPU node while profiling), split by where it ran: on the CPU
 * for a CPU stream, on a GPU, or on the CPU for a GPU stream (a
 * primitive, or a case of one, that the GPU does not compute: its inputs
 * were copied to the host and its result goes back). Costs one branch per
 * node when off. */
#ifndef LC_PROFILE_H
#define LC_PROFILE_H

#include <stdbool.h>

bool lc_profile_on(void);
double lc_profile_now(void);
enum lc_profile_where { LC_PROFILE_CPU, LC_PROFILE_GPU, LC_PROFILE_GPU_ON_CPU };
/* Adds one evaluation of primitive op that ran `where`. */
void lc_profile_add(int op, enum lc_profile_where where, double seconds);

#endif
