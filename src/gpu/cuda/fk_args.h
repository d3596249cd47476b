/* The one kernel argument of every NVRTC-built fused kernel, passed by
 * value. Read by both C (gpu/cuda/eval_fused.c fills it) and the generated
 * CUDA C++ (gpu/cuda/fused_src.c embeds this text), so it uses only types
 * with one layout in both and includes nothing. Under CUDA's 4 KiB kernel
 * parameter limit. */
#ifndef LC_GPU_CUDA_FK_ARGS_H
#define LC_GPU_CUDA_FK_ARGS_H

#define LC_FK_MAX_IN 32
#define LC_FK_MAX_OUT 16
#define LC_FK_MAX_DIMS 8

struct lc_fk_args {
  long long n;   /* elementwise: elements; rows: rows */
  long long L;   /* rows: the row length */
  int ndim;      /* dimensions of shape (elementwise: merged; rows: outer) */
  int shape[LC_FK_MAX_DIMS];
  const void *in[LC_FK_MAX_IN];  /* element 0 of each input */
  void *out[LC_FK_MAX_OUT];      /* contiguous outputs */
  long long st[LC_FK_MAX_IN][LC_FK_MAX_DIMS]; /* element strides over shape */
  long long inner[LC_FK_MAX_IN]; /* rows: stride along a row of FULL inputs */
};

#endif
