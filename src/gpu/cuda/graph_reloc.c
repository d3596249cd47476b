/* Relocatable CUDA graphs (the contract is in gpu/cuda/graph_reloc.h).
 * Invariants: cur[s] is the base every relocation of slot s currently has
 * in exec; a node's argument copy (blob) always holds exec's values. */
#ifdef LACE_CUDA
#include "gpu/cuda/graph_reloc.h"

#include "gpu/cuda/capture.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_KERNEL, P_MEMSET, P_MEMCPY };

struct pnode {
  cudaGraphNode_t node;
  int type;
  bool dirty;
  size_t extra_size; /* arguments given as one buffer: its size (else 0) */
  size_t nnoted, noted[4]; /* arguments from a launcher's note: their sizes */
  CUfunction dfunc; /* kernels the runtime cannot describe: the driver's view */
  CUkernel dkern;
  struct cudaKernelNodeParams kp;
  unsigned char *blob; /* kernel: the arguments, back to back */
  void **argv;         /* kernel: argv[i] points at argument i in blob */
  struct cudaMemsetParams mp;
  struct cudaMemcpy3DParms cp;
};

struct reloc {
  size_t pn, byte; /* kernel: byte in blob; memset/memcpy: 0 dst, 1 src */
  size_t slot;
  int64_t delta;
};

struct lc_reloc_graph {
  int *guard; /* slots that must not move (opaque kernels' units) */
  int *guard_unit;
  size_t nguard, capguard;
  int blocked_unit, blocked_slot; /* the last launch refused by a guard */
  cudaGraph_t g;
  cudaGraphExec_t exec;
  bool movable;
  size_t nslot;
  void **cur;
  size_t *bytes;
  struct pnode *pn;
  size_t npn;
  struct reloc *rl;
  size_t nrl, caprl;
  char why[160]; /* why the graph is fixed */
};

/* Driver entry points (through the runtime: no link to libcuda) for
 * kernels the runtime's cudaFuncGetParamInfo does not know, e.g. those
 * cuBLAS launches through the driver. */
typedef CUresult (*node_params_fn)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*func_info_fn)(CUfunction, size_t, size_t *, size_t *);
typedef CUresult (*kern_info_fn)(CUkernel, size_t, size_t *, size_t *);
static node_params_fn drv_node_params;
static func_info_fn drv_func_info;
static kern_info_fn drv_kern_info;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static void drv_init(void) {
  enum cudaDriverEntryPointQueryResult q;
  void *f = NULL;
  if (cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &f, 12000, cudaEnableDefault,
                                       &q) == cudaSuccess && q == cudaDriverEntryPointSuccess)
    drv_node_params = (node_params_fn)f;
  f = NULL;
  if (cudaGetDriverEntryPointByVersion("cuFuncGetParamInfo", &f, 12040, cudaEnableDefault, &q) ==
          cudaSuccess && q == cudaDriverEntryPointSuccess)
    drv_func_info = (func_info_fn)f;
  f = NULL;
  if (cudaGetDriverEntryPointByVersion("cuKernelGetParamInfo", &f, 12040, cudaEnableDefault, &q) ==
          cudaSuccess && q == cudaDriverEntryPointSuccess)
    drv_kern_info = (kern_info_fn)f;
  (void)cudaGetLastError();
}

/* Offset and size of argument i of node p's kernel; false past the last. */
static bool param_info(const struct pnode *p, size_t i, size_t *off, size_t *size) {
  if (!p->dfunc && !p->dkern) {
    if (cudaFuncGetParamInfo(p->kp.func, i, off, size) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  }
  if (p->dfunc) return drv_func_info && drv_func_info(p->dfunc, i, off, size) == CUDA_SUCCESS;
  return drv_kern_info && drv_kern_info(p->dkern, i, off, size) == CUDA_SUCCESS;
}

static void fixed(struct lc_reloc_graph *r, const char *what, const struct pnode *p) {
  const char *name = NULL;
  if (p && p->type == P_KERNEL && cudaFuncGetName(&name, p->kp.func) != cudaSuccess) {
    (void)cudaGetLastError();
    name = NULL;
  }
  if (r->movable)
    snprintf(r->why, sizeof r->why, "%s%s%s%s", what, name ? ": " : "", name ? name : "",
             !p || p->type != P_KERNEL ? ""
             : !p->kp.kernelParams     ? " (no argument array)"
             : p->kp.extra             ? " (arguments as extra)"
             : p->dfunc || p->dkern    ? " (driver could not describe it)"
                                       : " (no driver function)");
  r->movable = false;
}

const char *lc_reloc_why(const struct lc_reloc_graph *r) { return r->why; }
bool lc_reloc_blocked(const struct lc_reloc_graph *r, int *unit, int *slot) {
  *unit = r->blocked_unit;
  *slot = r->blocked_slot;
  return r->blocked_slot >= 0;
}

void lc_reloc_free(struct lc_reloc_graph *r) {
  if (!r) return;
  if (r->exec) (void)cudaGraphExecDestroy(r->exec); /* freed when done if in flight */
  if (r->g) (void)cudaGraphDestroy(r->g);
  for (size_t i = 0; i < r->npn; i++) {
    free(r->pn[i].blob);
    free(r->pn[i].argv);
  }
  free(r->pn);
  free(r->rl);
  free(r->guard);
  free(r->guard_unit);
  free(r->cur);
  free(r->bytes);
  free(r);
}

bool lc_reloc_movable(const struct lc_reloc_graph *r) { return r->movable; }

/* Records a relocation when word v points into a slot. False: no memory. */
static bool note(struct lc_reloc_graph *r, size_t pn, size_t byte, uint64_t v) {
  for (size_t s = 0; s < r->nslot; s++) {
    uint64_t b = (uint64_t)(uintptr_t)r->cur[s];
    if (v < b || v >= b + r->bytes[s]) continue;
    if (r->nrl == r->caprl) {
      size_t cap = r->caprl ? 2 * r->caprl : 256;
      struct reloc *a = realloc(r->rl, cap * sizeof *a);
      if (!a) return false;
      r->rl = a;
      r->caprl = cap;
    }
    r->rl[r->nrl++] = (struct reloc){pn, byte, s, (int64_t)(v - b)};
    return true;
  }
  return true;
}

/* A kernel launched with its arguments as one buffer ("extra": pointer
 * and size, as cuBLAS may launch): the copy is that buffer, whose words
 * are scanned as they lie. */
static bool read_extra(struct pnode *p) {
  void *buf = NULL;
  size_t size = 0;
  for (void **e = p->kp.extra; e && *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1];
    else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *(size_t *)e[1];
    else return false;
  }
  if (!buf) return false;
  p->blob = malloc(size ? size : 1);
  p->argv = malloc(5 * sizeof *p->argv + sizeof(size_t));
  if (!p->blob || !p->argv) return false;
  memcpy(p->blob, buf, size);
  size_t *sz = (size_t *)(p->argv + 5);
  *sz = size;
  p->argv[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  p->argv[1] = p->blob;
  p->argv[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  p->argv[3] = sz;
  p->argv[4] = CU_LAUNCH_PARAM_END;
  p->kp.extra = p->argv;
  p->extra_size = size;
  return true;
}

/* Copies a kernel node's arguments; false when their layout is unknown
 * (tried through the runtime, then through the driver). */
static bool use_driver(struct pnode *p) {
  pthread_once(&drv_once, drv_init);
  CUDA_KERNEL_NODE_PARAMS dp;
  if (!drv_node_params || drv_node_params((CUgraphNode)p->node, &dp) != CUDA_SUCCESS) {
    (void)cudaGetLastError();
    return false;
  }
  p->dfunc = dp.func;
  p->dkern = dp.func ? NULL : dp.kern;
  if (!p->kp.kernelParams && !p->kp.extra) { /* the runtime showed no arguments */
    p->kp.kernelParams = dp.kernelParams;
    p->kp.extra = dp.extra;
  }
  return p->dfunc || p->dkern;
}

/* Arguments from the launcher's note (capture.h), each 8-byte aligned. */
static bool read_noted(struct pnode *p, const struct lc_reloc_owners *o) {
  for (size_t k = 0; o && k < o->nknown; k++) {
    const struct lc_cuda_known *kn = &o->known[k];
    if (kn->node != (void *)p->node) continue;
    size_t total = 0;
    for (int j = 0; j < kn->nargs; j++) total += (kn->size[j] + 7) / 8 * 8;
    p->blob = malloc(total ? total : 1);
    p->argv = malloc(4 * sizeof *p->argv);
    if (!p->blob || !p->argv) return false;
    memcpy(p->blob, kn->blob, total);
    total = 0;
    for (int j = 0; j < kn->nargs; j++) {
      p->argv[j] = p->blob + total;
      p->noted[j] = kn->size[j];
      total += (kn->size[j] + 7) / 8 * 8;
    }
    p->nnoted = (size_t)kn->nargs;
    p->kp.func = kn->func;
    p->kp.gridDim = (dim3){kn->grid[0], kn->grid[1], kn->grid[2]};
    p->kp.blockDim = (dim3){kn->block[0], kn->block[1], kn->block[2]};
    p->kp.sharedMemBytes = kn->shmem;
    p->kp.kernelParams = p->argv;
    p->kp.extra = NULL;
    return true;
  }
  return false;
}

static bool read_kernel(struct pnode *p) {
  if (!p->kp.kernelParams && !p->kp.extra && !use_driver(p)) return false;
  if (!p->kp.kernelParams) return p->kp.extra && read_extra(p);
  if (p->kp.extra) return false;
  size_t n = 0, total = 0, off, size;
  if (!p->dfunc && !p->dkern && !param_info(p, 0, &off, &size) && !use_driver(p)) return false;
  while (param_info(p, n, &off, &size)) {
    n++;
    total += size;
  }
  if (!n) return false;
  p->blob = malloc(total ? total : 1);
  p->argv = malloc(n * sizeof *p->argv);
  if (!p->blob || !p->argv) return false;
  total = 0;
  for (size_t i = 0; i < n; i++) {
    (void)param_info(p, i, &off, &size);
    memcpy(p->blob + total, p->kp.kernelParams[i], size);
    p->argv[i] = p->blob + total;
    total += size;
  }
  p->kp.kernelParams = p->argv;
  return true;
}

/* Relocations of kernel node pn: every 8-byte word aligned in the device
 * layout of each argument. */
static bool scan_kernel(struct lc_reloc_graph *r, size_t pn) {
  struct pnode *p = &r->pn[pn];
  size_t at = 0, off, size;
  if (p->nnoted) {
    for (size_t k = 0; k < p->nnoted; k++) {
      for (size_t j = 0; j + 8 <= p->noted[k]; j += 8) {
        uint64_t v;
        memcpy(&v, p->blob + at + j, 8);
        if (!note(r, pn, at + j, v)) return false;
      }
      at += (p->noted[k] + 7) / 8 * 8;
    }
    return true;
  }
  if (p->kp.extra) { /* one buffer, laid out as on the device */
    for (size_t j = 0; j + 8 <= p->extra_size; j += 8) {
      uint64_t v;
      memcpy(&v, p->blob + j, 8);
      if (!note(r, pn, j, v)) return false;
    }
    return true;
  }
  for (size_t i = 0; param_info(p, i, &off, &size); i++) {
    for (size_t j = (8 - off % 8) % 8; j + 8 <= size; j += 8) {
      uint64_t v;
      memcpy(&v, p->blob + at + j, 8);
      if (!note(r, pn, at + j, v)) return false;
    }
    at += size;
  }
  return true;
}

/* Guards the slots of the unit that queued graph node `node`; false when
 * none is known (the graph is then fixed). */
static bool guard(struct lc_reloc_graph *r, cudaGraphNode_t node, const struct lc_reloc_owners *o) {
  if (!o) return false;
  size_t k = 0;
  while (k < o->n && o->node[k] != node) k++;
  if (k == o->n) return false;
  int u = o->unit[k];
  for (size_t j = o->first[u]; j < o->first[u + 1]; j++) {
    if (r->nguard == r->capguard) {
      size_t cap = r->capguard ? 2 * r->capguard : 64;
      int *a = realloc(r->guard, cap * sizeof *a);
      if (a) r->guard = a;
      int *b = a ? realloc(r->guard_unit, cap * sizeof *b) : NULL;
      if (b) r->guard_unit = b;
      if (!a || !b) return false;
      r->capguard = cap;
    }
    r->guard_unit[r->nguard] = u;
    r->guard[r->nguard++] = o->slots[j];
  }
  return true;
}

struct lc_reloc_graph *lc_reloc_build(cudaGraph_t g, cudaGraphExec_t exec, size_t nslot,
                                      void *const *base, const size_t *bytes,
                                      const struct lc_reloc_owners *owners) {
  struct lc_reloc_graph *r = calloc(1, sizeof *r);
  size_t n = 0;
  cudaGraphNode_t *nodes = NULL;
  if (!r) goto oom;
  r->g = g;
  r->exec = exec;
  r->movable = true;
  r->blocked_unit = r->blocked_slot = -1;
  r->nslot = nslot;
  r->cur = malloc((nslot ? nslot : 1) * sizeof *r->cur);
  r->bytes = malloc((nslot ? nslot : 1) * sizeof *r->bytes);
  if (!r->cur || !r->bytes) goto oom;
  if (nslot) memcpy(r->cur, base, nslot * sizeof *base);
  if (nslot) memcpy(r->bytes, bytes, nslot * sizeof *bytes);
  if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess) {
    (void)cudaGetLastError();
    fixed(r, "its nodes cannot be listed", NULL);
    return r;
  }
  nodes = malloc((n ? n : 1) * sizeof *nodes);
  r->pn = calloc(n ? n : 1, sizeof *r->pn);
  if (!nodes || !r->pn) goto oom;
  /* an empty capture (every node of the tape empty) has nothing to list:
   * CUDA refuses a node array with a count of 0 */
  if (n && cudaGraphGetNodes(g, nodes, &n) != cudaSuccess) {
    (void)cudaGetLastError();
    fixed(r, "its nodes cannot be listed", NULL);
    free(nodes);
    return r;
  }
  for (size_t i = 0; i < n && r->movable; i++) {
    enum cudaGraphNodeType t;
    struct pnode *p = &r->pn[r->npn];
    p->node = nodes[i];
    if (cudaGraphNodeGetType(nodes[i], &t) != cudaSuccess) {
      fixed(r, "a node of unknown type", NULL);
    } else if (t == cudaGraphNodeTypeKernel) {
      p->type = P_KERNEL;
      r->npn++;
      bool got = cudaGraphKernelNodeGetParams(nodes[i], &p->kp) == cudaSuccess && read_kernel(p);
      (void)cudaGetLastError();
      if (!got) { /* a launcher's note, if it left one */
        free(p->blob), free(p->argv);
        p->blob = NULL, p->argv = NULL;
        p->dfunc = NULL, p->dkern = NULL;
        got = read_noted(p, owners);
      }
      if (!got) {
        r->npn--; /* opaque: never rewritten, only guarded */
        if (!guard(r, nodes[i], owners))
          fixed(r, owners && owners->n ? "an opaque kernel not among the owners"
                                       : "an opaque kernel, owners unknown", p);
        free(p->blob), free(p->argv);
        memset(p, 0, sizeof *p);
      } else if (!scan_kernel(r, r->npn - 1)) {
        goto oom;
      }
    } else if (t == cudaGraphNodeTypeMemset) {
      p->type = P_MEMSET;
      r->npn++;
      if (cudaGraphMemsetNodeGetParams(nodes[i], &p->mp) != cudaSuccess) fixed(r, "a memset", NULL);
      if (r->movable && !note(r, r->npn - 1, 0, (uint64_t)(uintptr_t)p->mp.dst)) goto oom;
    } else if (t == cudaGraphNodeTypeMemcpy) {
      p->type = P_MEMCPY;
      r->npn++;
      if (cudaGraphMemcpyNodeGetParams(nodes[i], &p->cp) != cudaSuccess || p->cp.srcArray ||
          p->cp.dstArray)
        fixed(r, "a memcpy", NULL);
      if (r->movable && (!note(r, r->npn - 1, 0, (uint64_t)(uintptr_t)p->cp.dstPtr.ptr) ||
                         !note(r, r->npn - 1, 1, (uint64_t)(uintptr_t)p->cp.srcPtr.ptr)))
        goto oom;
    } else if (t != cudaGraphNodeTypeEmpty && t != cudaGraphNodeTypeWaitEvent &&
               t != cudaGraphNodeTypeEventRecord) { /* events carry no memory */
      static const char *const names[] = {"kernel", "memcpy", "memset", "host", "child graph",
                                          "empty", "event wait", "event record",
                                          "semaphore signal", "semaphore wait",
                                          "memory allocation", "memory free", "?",
                                          "conditional"};
      char what[96];
      snprintf(what, sizeof what, "a %s node", (unsigned)t < 14 ? names[t] : "unknown");
      fixed(r, what, NULL);
    }
  }
  (void)cudaGetLastError();
  free(nodes);
  return r;
oom:
  free(nodes);
  if (r) {
    lc_reloc_free(r);
  } else {
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(g);
  }
  return NULL;
}

static void put_word(struct pnode *p, size_t byte, uint64_t v) {
  void *ptr = (void *)(uintptr_t)v;
  if (p->type == P_KERNEL) memcpy(p->blob + byte, &v, 8);
  else if (p->type == P_MEMSET) p->mp.dst = ptr;
  else if (byte == 0) p->cp.dstPtr.ptr = ptr;
  else p->cp.srcPtr.ptr = ptr;
  p->dirty = true;
}

bool lc_reloc_launch(struct lc_reloc_graph *r, void *const *base, void *stream, size_t *patched) {
  *patched = 0;
  bool moved = false;
  for (size_t s = 0; s < r->nslot && !moved; s++) moved = base[s] != r->cur[s];
  for (size_t k = 0; k < r->nguard; k++)
    if (base[r->guard[k]] != r->cur[r->guard[k]]) { /* an opaque kernel's */
      r->blocked_unit = r->guard_unit[k];
      r->blocked_slot = r->guard[k];
      return false;
    }
  if (moved) {
    if (!r->movable) return false;
    for (size_t k = 0; k < r->nrl; k++) {
      const struct reloc *x = &r->rl[k];
      if (base[x->slot] != r->cur[x->slot])
        put_word(&r->pn[x->pn], x->byte, (uint64_t)(uintptr_t)base[x->slot] + (uint64_t)x->delta);
    }
    bool ok = true;
    for (size_t i = 0; i < r->npn; i++) {
      struct pnode *p = &r->pn[i];
      if (!p->dirty) continue;
      p->dirty = false;
      cudaError_t e = p->type == P_KERNEL ? cudaGraphExecKernelNodeSetParams(r->exec, p->node, &p->kp)
                      : p->type == P_MEMSET ? cudaGraphExecMemsetNodeSetParams(r->exec, p->node, &p->mp)
                                            : cudaGraphExecMemcpyNodeSetParams(r->exec, p->node, &p->cp);
      ok &= e == cudaSuccess;
      ++*patched;
    }
    memcpy(r->cur, base, r->nslot * sizeof *base);
    if (!ok) { /* exec is partly updated: never launch it again */
      (void)cudaGetLastError();
      fixed(r, "CUDA refused an update of a node", NULL);
      for (size_t s = 0; s < r->nslot; s++) r->cur[s] = NULL;
      return false;
    }
  }
  if (cudaGraphLaunch(r->exec, (cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}
#endif
