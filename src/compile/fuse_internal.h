/* Shared by the fusion pass (fuse.c: grouping) and the building of fused
 * instructions (fuse_emit.c). */
#ifndef LC_FUSE_INTERNAL_H
#define LC_FUSE_INTERNAL_H

#include "compile/compile.h"

/* Limits keeping a fused kernel's per-tile state small (stack arrays). */
#define LC_FUSE_MAX_REGION 1024 /* instructions */
#define LC_FUSE_MAX_OUTS 64     /* escaping values */
#define LC_FUSE_MAX_RANK 64
/* Longest reduced axis fused into a row region: rows of FULL values live
 * in scratch, so they must stay cache-sized. */
#define LC_FUSE_ROW_MAX 65536

struct lc_fuse_ctx {
  struct lc_cprog *p;
  int ni;         /* instructions before any fused one was added */
  int *region_of; /* per instruction: its region, or -1 */
  int *space;     /* per region: a value whose shape is the region shape */
  char *rows;     /* per region: holds a reduction (a row region) */
  char *escapes;  /* per instruction: its value is read outside its region */
};

/* Kind (enum lc_fused_kind) of value v's shape in the region shape of
 * value space_v; -1 when it is none of them. */
int lc_fuse_kind(const struct lc_cprog *p, int space_v, int v);

/* The region value v belongs to: the producer's region, or, when v is a
 * chain of broadcasts and reshapes that keeps one element per row (a ROW
 * member seen as ROW or FULL), the region of the chain's root. *root is the
 * member value. -1 when v belongs to no region. */
int lc_fuse_region_of_val(const struct lc_fuse_ctx *c, int v, int *root);

/* Adds the FUSED instruction of region rid (members mem[0..nmem), in
 * program order). 0, or 1 after reporting. */
int lc_fuse_emit(struct lc_fuse_ctx *c, const int *mem, int nmem, int rid);

#endif
