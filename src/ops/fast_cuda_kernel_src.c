/* The CUDA C++ source of a custom kernel (see fast_cuda_kernel.h).
 *
 * Layout of the generated text:
 *   prelude            includes and MLX's helper names (below)
 *   user header        as given
 *   namespace mlx::core::cu {
 *   struct <kname>_args { pointers; Strides; Shapes; ndims; };
 *   static_assert on its size (the host lays the same bytes out)
 *   extern "C" __global__ void <kname>(const __grid_constant__ <kname>_args lc_ck_args) {
 *     one local per argument, named as MLX's parameters (references to
 *     the grid constant for Shape and Strides);
 *     template arguments;
 *     user source
 *   } }
 * The kernel takes one struct so that a launch has one argument blob,
 * which CUDA graphs relocate (gpu/cuda/capture.h notes it) and which
 * never needs padding: 8-byte members first, then the 4-byte ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/strbuf.h"
#include "ops/fast_cuda_kernel.h"

/* The names every kernel's body sees: MLX's (Shape, Strides, complex64_t,
 * elem_to_loc, MAX_NDIM), defined here in lace's words. */
static const char prelude[] =
    "// lace: prelude of custom CUDA kernels\n"
    "#include <cooperative_groups.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda/std/array>\n"
    "#include <cuda/std/complex>\n"
    "#include <cuda/std/cstdint>\n"
    "\n"
    "#ifndef MAX_NDIM\n"
    "#define MAX_NDIM 10\n"
    "#endif\n"
    "\n"
    "namespace mlx::core::cu {\n"
    "// An input's extents and element strides, MAX_NDIM entries of which\n"
    "// the first ndim are meaningful.\n"
    "using Shape = cuda::std::array<int32_t, MAX_NDIM>;\n"
    "using Strides = cuda::std::array<int64_t, MAX_NDIM>;\n"
    "using complex64_t = cuda::std::complex<float>;\n"
    "static_assert(sizeof(Shape) == 4 * MAX_NDIM && sizeof(Strides) == 8 * MAX_NDIM, \"layout\");\n"
    "\n"
    "// Where the elem-th element in row-major order lies, in elements from\n"
    "// element 0, in an array of the given shape and strides.\n"
    "template <typename IdxT = int64_t>\n"
    "__host__ __device__ inline IdxT elem_to_loc(IdxT elem, const int *shape,\n"
    "                                            const int64_t *strides, int ndim) {\n"
    "  IdxT loc = 0;\n"
    "  for (int d = ndim - 1; d >= 0 && elem > 0; d--) {\n"
    "    loc += (elem % shape[d]) * IdxT(strides[d]);\n"
    "    elem /= shape[d];\n"
    "  }\n"
    "  return loc;\n"
    "}\n"
    "} // namespace mlx::core::cu\n"
    "\n";

/* The CUDA type of elements of dtype t in the kernel's signature. */
static const char *cuda_type(mlx_dtype t) {
  switch (t) {
  case MLX_BOOL: return "bool";
  case MLX_UINT8: return "uint8_t";
  case MLX_UINT16: return "uint16_t";
  case MLX_UINT32: return "uint32_t";
  case MLX_UINT64: return "uint64_t";
  case MLX_INT8: return "int8_t";
  case MLX_INT16: return "int16_t";
  case MLX_INT32: return "int32_t";
  case MLX_INT64: return "int64_t";
  case MLX_FLOAT16: return "__half";
  case MLX_FLOAT32: return "float";
  case MLX_FLOAT64: return "double";
  case MLX_BFLOAT16: return "__nv_bfloat16";
  case MLX_COMPLEX64: return "mlx::core::cu::complex64_t";
  }
  return NULL;
}

/* The dtype's word in kernel names (MLX's type strings). */
static const char *type_word(mlx_dtype t) {
  switch (t) {
  case MLX_FLOAT16: return "float16_t";
  case MLX_BFLOAT16: return "bfloat16_t";
  case MLX_COMPLEX64: return "complex64_t";
  default: return cuda_type(t);
  }
}

void lc_ck_layout_free(struct lc_ck_layout *lay) {
  free(lay->ptr);
  memset(lay, 0, sizeof *lay);
}

/* Byte offsets of every argument (see struct lc_ck_layout). */
static int make_layout(const struct lc_ck_kernel *k, struct lc_ck_layout *lay) {
  int nin = k->nin, nout = k->nout;
  int *a = malloc(sizeof(int) * (size_t)(4 * nin + nout + 1));
  if (!a) return lc_error("out of memory");
  lay->nin = nin;
  lay->nout = nout;
  lay->ptr = a;
  lay->strides = a + nin + nout;
  lay->shape = lay->strides + nin;
  lay->ndim = lay->shape + nin;
  int off = 0;
  for (int i = 0; i < nin + nout; i++, off += 8) lay->ptr[i] = off;
  for (int i = 0; i < nin; i++) {
    lay->strides[i] = k->uses[i][1] ? off : -1;
    off += k->uses[i][1] ? 8 * LC_CK_MAX_NDIM : 0;
  }
  for (int i = 0; i < nin; i++) { /* 40 bytes each: 8-byte alignment kept */
    lay->shape[i] = k->uses[i][0] ? off : -1;
    off += k->uses[i][0] ? 4 * LC_CK_MAX_NDIM : 0;
  }
  for (int i = 0; i < nin; i++) {
    lay->ndim[i] = k->uses[i][2] ? off : -1;
    off += k->uses[i][2] ? 4 : 0;
  }
  lay->size = (off + 7) / 8 * 8; /* > 0: a kernel has an output */
  return 0;
}

/* custom_kernel_<name> and the template arguments' suffix. */
static void kernel_name(struct lc_strbuf *b, const struct lc_ck_kernel *k,
                        const struct lc_ck_config *c) {
  lc_strbuf_put(b, "custom_kernel_%s", k->name);
  for (int i = 0; i < c->ntarg; i++) {
    const struct lc_ck_targ *t = &c->targ[i];
    if (t->kind == LC_CK_TARG_INT) /* "_-2" would not be an identifier: "_n2" */
      lc_strbuf_put(b, t->value < 0 ? "_n%lld" : "_%lld", llabs((long long)t->value));
    else if (t->kind == LC_CK_TARG_BOOL) lc_strbuf_put(b, "_%s", t->value ? "t" : "f");
    else lc_strbuf_put(b, "_%s", type_word((mlx_dtype)t->value));
  }
}

/* The argument struct, in layout order (8-byte members, then 4-byte). */
static void put_struct(struct lc_strbuf *b, const char *kname, const struct lc_ck_kernel *k,
                       const mlx_dtype *in_dt, const struct lc_ck_config *c,
                       const struct lc_ck_layout *lay) {
  lc_strbuf_put(b, "struct %s_args {\n", kname);
  for (int i = 0; i < k->nin; i++)
    lc_strbuf_put(b, "  const %s *%s;\n", cuda_type(in_dt[i]), k->in_names[i]);
  for (int j = 0; j < k->nout; j++)
    lc_strbuf_put(b, "  %s *%s;\n", cuda_type(c->out_dtype[j]), k->out_names[j]);
  for (int i = 0; i < k->nin; i++)
    if (lay->strides[i] >= 0) lc_strbuf_put(b, "  Strides %s_strides;\n", k->in_names[i]);
  for (int i = 0; i < k->nin; i++)
    if (lay->shape[i] >= 0) lc_strbuf_put(b, "  Shape %s_shape;\n", k->in_names[i]);
  for (int i = 0; i < k->nin; i++)
    if (lay->ndim[i] >= 0) lc_strbuf_put(b, "  int %s_ndim;\n", k->in_names[i]);
  lc_strbuf_put(b, "};\nstatic_assert(sizeof(%s_args) == %d, \"argument layout\");\n\n", kname,
                lay->size);
}

/* The kernel: locals named as MLX's parameters, template arguments, body. */
static void put_kernel(struct lc_strbuf *b, const char *kname, const struct lc_ck_kernel *k,
                       const mlx_dtype *in_dt, const struct lc_ck_config *c,
                       const struct lc_ck_layout *lay) {
  lc_strbuf_put(b, "extern \"C\" __global__ void %s(const __grid_constant__ %s_args lc_ck_args) {\n",
                kname, kname);
  for (int i = 0; i < k->nin; i++) {
    const char *x = k->in_names[i];
    lc_strbuf_put(b, "  const %s *%s = lc_ck_args.%s;\n", cuda_type(in_dt[i]), x, x);
    if (lay->shape[i] >= 0) lc_strbuf_put(b, "  const Shape &%s_shape = lc_ck_args.%s_shape;\n", x, x);
    if (lay->strides[i] >= 0)
      lc_strbuf_put(b, "  const Strides &%s_strides = lc_ck_args.%s_strides;\n", x, x);
    if (lay->ndim[i] >= 0) lc_strbuf_put(b, "  const int %s_ndim = lc_ck_args.%s_ndim;\n", x, x);
  }
  for (int j = 0; j < k->nout; j++)
    lc_strbuf_put(b, "  %s *%s = lc_ck_args.%s;\n", cuda_type(c->out_dtype[j]),
                  k->out_names[j], k->out_names[j]);
  for (int i = 0; i < c->ntarg; i++) {
    const struct lc_ck_targ *t = &c->targ[i];
    if (t->kind == LC_CK_TARG_INT) lc_strbuf_put(b, "  constexpr int %s = %d;\n", t->name, t->value);
    else if (t->kind == LC_CK_TARG_BOOL)
      lc_strbuf_put(b, "  constexpr bool %s = %s;\n", t->name, t->value ? "true" : "false");
    else lc_strbuf_put(b, "  using %s = %s;\n", t->name, cuda_type((mlx_dtype)t->value));
  }
  lc_strbuf_put(b, "\n%s\n}\n", k->source);
}

char *lc_ck_source(const struct lc_ck_kernel *k, const mlx_dtype *in_dt,
                   const struct lc_ck_config *c, char **kname, struct lc_ck_layout *lay) {
  *kname = NULL;
  memset(lay, 0, sizeof *lay);
  if (make_layout(k, lay)) return NULL;
  struct lc_strbuf name = {0}, b = {0};
  kernel_name(&name, k, c);
  if (!name.oom) {
    lc_strbuf_put(&b, "%s", prelude);
    lc_strbuf_put(&b, "%s\n", k->header);
    lc_strbuf_put(&b, "namespace mlx::core::cu {\nnamespace cg = cooperative_groups;\n\n");
    put_struct(&b, name.data, k, in_dt, c, lay);
    put_kernel(&b, name.data, k, in_dt, c, lay);
    lc_strbuf_put(&b, "} // namespace mlx::core::cu\n");
  }
  if (name.oom || b.oom) {
    free(name.data);
    free(b.data);
    lc_ck_layout_free(lay);
    lc_error("out of memory");
    return NULL;
  }
  *kname = name.data;
  return b.data;
}
