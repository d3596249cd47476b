/* The GPU runtime of a lace built without CUDA: no devices. Nothing here
 * is reached with a device copy present (none can be made). */
#ifndef LACE_CUDA
#include <string.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"

bool lc_gpu_built(void) { return false; }
int lc_gpu_count(void) { return 0; }
const char *lc_gpu_unavailable_reason(void) { return "lace was built without CUDA"; }

void *lc_gpu_malloc(size_t nbytes, int dev) {
  (void)nbytes;
  (void)dev;
  lc_error("no GPU: lace was built without CUDA");
  return NULL;
}
void lc_gpu_free(void *p, size_t nbytes, int dev) {
  (void)p;
  (void)nbytes;
  (void)dev;
}
size_t lc_gpu_active(void) { return 0; }
size_t lc_gpu_peak(void) { return 0; }
void lc_gpu_reset_peak(void) {}
size_t lc_gpu_cached(void) { return 0; }
void lc_gpu_clear_cache(void) {}
int lc_gpu_upload(void *dst, const void *src, size_t nbytes, int dev) {
  (void)dst, (void)src, (void)nbytes, (void)dev;
  return lc_error("no GPU: lace was built without CUDA");
}
int lc_gpu_download(void *dst, const void *src, size_t nbytes, int dev) {
  (void)dst, (void)src, (void)nbytes, (void)dev;
  return lc_error("no GPU: lace was built without CUDA");
}
int lc_gpu_sync(int dev) {
  (void)dev;
  return 0;
}
int lc_gpu_sync_all(void) { return 0; }
void *lc_gpu_stream(int dev) {
  (void)dev;
  return NULL;
}
unsigned long lc_gpu_gemv_launches(void) { return 0; }
unsigned *lc_gpu_tile_counters(int dev, size_t *n) {
  (void)dev;
  *n = 0;
  return NULL;
}
int lc_gpu_slot_of(int index) {
  (void)index;
  return 0;
}
int lc_gpu_set_slot(int dev, int slot) {
  (void)dev, (void)slot;
  return 0;
}
int lc_gpu_after(int dev, int from) {
  (void)dev, (void)from;
  return 0;
}
int lc_gpu_current_slot(int dev) {
  (void)dev;
  return 0;
}
bool lc_gpu_multi_stream(int dev) {
  (void)dev;
  return false;
}
int lc_gpu_sync_slot(int dev, int slot) {
  (void)dev, (void)slot;
  return 0;
}

int lc_gpu_graph_eval(struct lc_node *const *nodes, size_t n,
                      int (*eval_node)(struct lc_node *n, int *gpu), int *gpu) {
  (void)nodes, (void)n, (void)eval_node, (void)gpu;
  return LC_GRAPH_DECLINED;
}
void lc_gpu_graphs_set(int on) { (void)on; }
int lc_gpu_graphs_on(void) { return 0; }
void lc_gpu_graphs_clear(void) {}
void lc_gpu_graph_stats(struct lc_gpu_graph_stats *s) { memset(s, 0, sizeof *s); }
bool lc_gpu_complex_kernels(void) { return false; }
#endif
