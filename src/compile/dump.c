/* Graph dumps for debugging compile: with LACE_DUMP_GRAPH set (any value
 * but "0"), every trace prints its program as DOT before and after the
 * passes, followed by a description of each fused kernel, to stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "ops/prim.h"

static bool enabled(void) {
  const char *e = getenv("LACE_DUMP_GRAPH");
  return e && *e && strcmp(e, "0") != 0;
}

static void val_label(const struct lc_cprog *p, int v, char *buf, int len) {
  const struct lc_cval *x = &p->vals[v];
  char sh[96];
  lc_shape_str(x->ndim, x->shape, sh, sizeof sh);
  snprintf(buf, (size_t)len, "%s%s", lc_dtype_name(x->dtype), sh);
}

static void dump_fused(const struct lc_cprog *p, int i, FILE *f) {
  const struct lc_cinstr *ins = &p->instrs[i];
  const struct lc_fused_hdr *h = ins->params;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  static const char *const kinds[] = {"", " [row]", " [row]"};
  fprintf(f, "// fused kernel i%d%s: %d inputs, %d instructions, %d outputs, %d scratch %s\n", i,
          h->rows ? " (row region)" : "", h->nin, h->ninstr, h->nout, h->nslot,
          h->rows ? "rows" : "tiles");
  for (int k = 0; k < h->nin; k++) {
    char lab[128];
    val_label(p, ins->in[k], lab, sizeof lab);
    fprintf(f, "//   in%d = v%d %s%s%s\n", k, ins->in[k], lab, fin[k].plain ? "" : " (broadcast)",
            kinds[fin[k].mode]);
  }
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &fi[m];
    fprintf(f, "//   t%d%s = %s<%s>(", m, kinds[x->kind], lc_prims[x->op]->name,
            lc_dtype_name((mlx_dtype)x->dtype));
    for (int k = 0; k < x->nin; k++)
      fprintf(f, k ? ", %s%d" : "%s%d", x->arg[k] < 0 ? "in" : "t",
              x->arg[k] < 0 ? -x->arg[k] - 1 : x->arg[k]);
    if (x->out >= 0)
      fprintf(f, ") -> out%d\n", x->out);
    else if (x->slot >= 0)
      fprintf(f, ") -> %s%d\n", h->rows ? "row" : "tile", x->slot);
    else
      fprintf(f, ") -> cell\n");
  }
}

void lc_compile_dump_note(const char *fmt, ...) {
  if (!enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("// ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void lc_compile_dump(const struct lc_cprog *p, const char *title) {
  if (!enabled()) return;
  FILE *f = stderr;
  fprintf(f, "digraph \"%s\" {\n  rankdir=TB;\n  label=\"%s\";\n", title, title);
  for (int v = 0; v < p->nin + p->nconst; v++) {
    char lab[128];
    val_label(p, v, lab, sizeof lab);
    fprintf(f, "  v%d [shape=box,label=\"%s %d\\n%s\"];\n", v, v < p->nin ? "input" : "const",
            v < p->nin ? v : v - p->nin, lab);
  }
  for (int i = 0; i < p->ninstr; i++) {
    const struct lc_cinstr *ins = &p->instrs[i];
    char lab[128], desc[160] = "";
    val_label(p, ins->out[0], lab, sizeof lab);
    if (ins->op == LC_OP_FUSED) {
      const struct lc_fused_hdr *h = ins->params;
      const struct lc_fused_ins *fi = lc_fused_instrs(h);
      int q = 0;
      for (int m = 0; m < h->ninstr && q < (int)sizeof desc - 16; m++)
        q += snprintf(desc + q, sizeof desc - (size_t)q, " %s", lc_prims[fi[m].op]->name);
    }
    fprintf(f, "  i%d [label=\"%s%s\\n%s\"%s];\n", i, lc_prims[ins->op]->name, desc, lab,
            ins->op == LC_OP_FUSED ? ",style=filled,fillcolor=lightblue" : "");
    for (int k = 0; k < ins->nin; k++) {
      int v = ins->in[k], pr = p->vals[v].prod;
      if (pr >= 0)
        fprintf(f, "  i%d -> i%d;\n", pr, i);
      else
        fprintf(f, "  v%d -> i%d;\n", v, i);
    }
  }
  for (int o = 0; o < p->nout; o++) {
    int v = p->outs[o], pr = p->vals[v].prod;
    fprintf(f, "  out%d [shape=oval];\n", o);
    if (pr >= 0)
      fprintf(f, "  i%d -> out%d;\n", pr, o);
    else
      fprintf(f, "  v%d -> out%d;\n", v, o);
  }
  fprintf(f, "}\n");
  for (int i = 0; i < p->ninstr; i++)
    if (p->instrs[i].op == LC_OP_FUSED) dump_fused(p, i, f);
}
