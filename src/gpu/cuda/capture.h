/* Stream capture as the CUDA runtime (gpu/cuda/runtime.c) sees it, for
 * gpu/cuda/graph.c. While this thread captures for device dev:
 *  - lc_gpu_stream(dev) is the capture stream, so evaluators queue into
 *    the graph being captured;
 *  - every block lc_gpu_malloc hands out is recorded, in order;
 *  - blocks freed are held back (a graph may use them as scratch): the
 *    caller takes them (lc_cuda_capture_take_freed, to own or free), or
 *    lc_cuda_capture_end frees them;
 *  - copies between host and device and waits for dev fail (a graph
 *    cannot replay them) and mark the capture broken.
 * Other threads see none of this. */
#ifndef LC_GPU_CUDA_CAPTURE_H
#define LC_GPU_CUDA_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

void lc_cuda_capture_begin(int dev, void *stream);
void lc_cuda_capture_end(void);
/* Whether this thread is capturing (between begin and end). */
bool lc_cuda_capturing(void);
/* Whether something the graph cannot express was attempted. */
bool lc_cuda_capture_broken(void);
/* The blocks handed out since lc_cuda_capture_begin, in order (valid until
 * lc_cuda_capture_end); NULL with *n = 0 when recording ran out of memory
 * (which also breaks the capture). */
void *const *lc_cuda_capture_allocs(size_t *n);

/* Arguments of a kernel just queued while capturing, noted by launchers
 * whose graph nodes CUDA does not describe (kernels from NVRTC-built
 * libraries): node is the captured node, blob the arguments back to back
 * (each at an 8-byte aligned offset), size[k] argument k's size. */
struct lc_cuda_known {
  void *node;
  void *func; /* as given to cudaLaunchKernel */
  unsigned grid[3], block[3], shmem;
  unsigned char *blob;
  size_t size[4];
  int nargs;
};
void lc_cuda_capture_note_launch(void *func, const unsigned *grid, const unsigned *block,
                                 unsigned shmem, void *const *args, const size_t *sizes,
                                 int nargs);
/* The notes so far (the caller owns the array and each blob). */
size_t lc_cuda_capture_take_known(struct lc_cuda_known **known);

/* The blocks held back so far (n returned; the caller owns both arrays
 * and the blocks, which it frees with lc_gpu_free once not capturing). */
size_t lc_cuda_capture_take_freed(void ***ptrs, size_t **bytes);

/* A block kept by a captured graph for its private nodes counts as cached
 * memory, not active (delta +1 when kept, -1 just before it is released). */
void lc_cuda_arena_account(size_t nbytes, int delta);

#endif
