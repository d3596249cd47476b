/* NVRTC builds through the disk cache (gpu/cuda/nvrtc.c), shared by the
 * fused kernels and the custom kernels. Needs no GPU. */
#ifndef LC_GPU_CUDA_NVRTC_H
#define LC_GPU_CUDA_NVRTC_H

#include <stddef.h>

/* The cubin of src for sm_<arch> (malloc'd, *len): from the disk cache
 * (compile/jit.h's directory; the file named by a hash of the source, the
 * options, the architecture and NVRTC's version), else compiled by NVRTC
 * and stored. opts: NVRTC's options, the architecture among them; NULL:
 * the fused kernels' (lc_nvrtc_compile). name: the program's name in
 * NVRTC's messages. NULL when it does not compile, with NVRTC's log in
 * *log (malloc'd; NULL when there is none) when log is not NULL. */
void *lc_nvrtc_cubin(const char *src, const char *name, int arch, const char *const *opts,
                     int nopts, size_t *len, char **log);

/* A custom kernel's cubin (ops/fast_cuda_kernel.h: kname is its kernel's
 * name) for sm_<arch>, under the custom kernels' options (the toolkit's
 * headers found at run time: CUDA_HOME, CUDA_PATH, the build's toolkit,
 * /usr/local/cuda), through the disk cache (gpu/cuda/eval_custom_kernel.c).
 * As lc_nvrtc_cubin otherwise. */
void *lc_ck_cubin(const char *src, const char *kname, int arch, size_t *len, char **log);

#endif
