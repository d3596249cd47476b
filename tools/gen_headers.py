#!/usr/bin/env python3
"""Write lace's public headers (include/mlx/c/*.h) from tools/mlxc_api.tsv.

The TSV lists every mlx-c function (header, name, signature); the type
declarations below are lace's own. Run from the repository root:
    python3 tools/gen_headers.py
"""
import collections, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "include", "mlx", "c")

def handle(name):
    return "typedef struct %s_ {\n  void* ctx;\n} %s;\n" % (name, name)

# Types each header defines, in declaration order.
TYPES = {
    "string.h": handle("mlx_string"),
    "device.h": handle("mlx_device") + """
/* Device kinds; lace runs MLX_CPU natively, MLX_GPU through its CUDA backend when built with one. */
typedef enum mlx_device_type_ { MLX_CPU, MLX_GPU } mlx_device_type;
""" + handle("mlx_device_info"),
    "stream.h": handle("mlx_stream"),
    "array.h": """/* Element types. The numeric values are mlx-c's (positional) and are part of the ABI. */
typedef enum mlx_dtype_ {
  MLX_BOOL,
  MLX_UINT8,
  MLX_UINT16,
  MLX_UINT32,
  MLX_UINT64,
  MLX_INT8,
  MLX_INT16,
  MLX_INT32,
  MLX_INT64,
  MLX_FLOAT16,
  MLX_FLOAT32,
  MLX_FLOAT64,
  MLX_BFLOAT16,
  MLX_COMPLEX64,
} mlx_dtype;

""" + handle("mlx_array") + """
/* An empty handle, for optional array arguments ("no weight", "no key"). */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static mlx_array mlx_array_empty;

typedef float _Complex mlx_complex64_t;
""",
    "vector.h": handle("mlx_vector_array") + handle("mlx_vector_vector_array") + handle("mlx_vector_int") + handle("mlx_vector_string"),
    "map.h": handle("mlx_map_string_to_array") + """typedef struct mlx_map_string_to_array_iterator_ {
  void* ctx;
  void* map_ctx;
} mlx_map_string_to_array_iterator;
""" + handle("mlx_map_string_to_string") + """typedef struct mlx_map_string_to_string_iterator_ {
  void* ctx;
  void* map_ctx;
} mlx_map_string_to_string_iterator;
""",
    "closure.h": handle("mlx_closure") + handle("mlx_closure_kwargs") + handle("mlx_closure_value_and_grad") + handle("mlx_closure_custom") + handle("mlx_closure_custom_jvp") + handle("mlx_closure_custom_vmap"),
    "compile.h": """/* Compile modes, weakest first. DISABLED makes mlx_compile return the function
 * itself; NO_SIMPLIFY skips common-subexpression merging; NO_FUSE skips kernel
 * fusion; ENABLED runs every pass. */
typedef enum mlx_compile_mode_ {
  MLX_COMPILE_MODE_DISABLED,
  MLX_COMPILE_MODE_NO_SIMPLIFY,
  MLX_COMPILE_MODE_NO_FUSE,
  MLX_COMPILE_MODE_ENABLED
} mlx_compile_mode;
""",
    "error.h": """/* Receives every error message lace reports; data is the pointer given at registration. */
typedef void (*mlx_error_handler_func)(const char* msg, void* data);
/* Reports a printf-style message through the error handler, tagged with a
 * source location; mlx_error() supplies the caller's. */
void _mlx_error(const char* file, const int line, const char* fmt, ...);
#define mlx_error(...) _mlx_error(__FILE__, __LINE__, __VA_ARGS__)
""",
    "half.h": """/* Half-precision element types as they cross the API: float16_t and
 * bfloat16_t. Where the compiler has a native type it is used (HAS_FLOAT16 /
 * HAS_BFLOAT16 are then defined, as in mlx-c); otherwise the raw IEEE
 * binary16 / bfloat16 bit pattern in a uint16_t, so the accessors that take
 * these types exist on every platform. */
#if defined(__FLT16_MAX__) && !defined(LACE_NO_FLOAT16)
#define HAS_FLOAT16
typedef _Float16 float16_t;
#else
typedef uint16_t float16_t;
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_BF16)
#define HAS_BFLOAT16
#include <arm_bf16.h>
typedef __bf16 bfloat16_t;
#else
typedef uint16_t bfloat16_t;
#endif
""",
    "optional.h": """typedef struct mlx_optional_int_ {
  int value;
  bool has_value;
} mlx_optional_int;
typedef struct mlx_optional_float_ {
  float value;
  bool has_value;
} mlx_optional_float;
typedef struct mlx_optional_dtype_ {
  mlx_dtype value;
  bool has_value;
} mlx_optional_dtype;
""",
    "distributed_group.h": handle("mlx_distributed_group"),
    "export.h": handle("mlx_function_exporter") + handle("mlx_imported_function"),
    "fast.h": handle("mlx_fast_cuda_kernel_config") + handle("mlx_fast_cuda_kernel") + handle("mlx_fast_metal_kernel_config") + handle("mlx_fast_metal_kernel"),
    "fft.h": "typedef enum mlx_fft_norm_ {\n  MLX_FFT_NORM_BACKWARD,\n  MLX_FFT_NORM_ORTHO,\n  MLX_FFT_NORM_FORWARD\n} mlx_fft_norm;\n",
    "graph_utils.h": handle("mlx_node_namer"),
    "io_types.h": """/* A user-supplied byte stream: lace calls these for mlx_io_reader / mlx_io_writer. */
typedef struct mlx_io_vtable_ {
  bool (*is_open)(void*);
  bool (*good)(void*);
  size_t (*tell)(void*);
  void (*seek)(void*, int64_t off, int whence);
  void (*read)(void*, char* data, size_t n);
  void (*read_at_offset)(void*, char* data, size_t n, size_t off);
  void (*write)(void*, const char* data, size_t n);
  const char* (*label)(void*);
  void (*free)(void*);
} mlx_io_vtable;
""" + handle("mlx_io_reader") + handle("mlx_io_writer") + handle("mlx_io_gguf"),
}

BLURB = {
    "array.h": "Arrays: creation from host data, metadata, evaluation and host access.",
    "closure.h": "Closures: C functions over vectors of arrays, with optional payloads.",
    "compile.h": "Graph compilation: trace once, cache, simplify, fuse, replay.",
    "cuda.h": "CUDA backend availability.",
    "device.h": "Devices.",
    "distributed.h": "Collective operations.",
    "distributed_group.h": "Process groups for collectives.",
    "error.h": "Error reporting: every failing call returns non-zero and reports here.",
    "export.h": "Exporting and importing traced functions.",
    "fast.h": "Fused building blocks for transformer models.",
    "fft.h": "Fast Fourier transforms.",
    "graph_utils.h": "Graph printing (DOT and text).",
    "io.h": "Loading and saving arrays (npy, safetensors, gguf).",
    "io_types.h": "Stream and container types used by io.h.",
    "linalg.h": "Linear algebra.",
    "map.h": "String-keyed maps.",
    "memory.h": "Memory accounting and the buffer cache.",
    "metal.h": "Metal backend (never available in lace).",
    "ops.h": "Array operations. All are lazy: results are computed on evaluation.",
    "optional.h": "Optional scalar arguments.",
    "random.h": "Random number generation with explicit or implicit keys.",
    "stream.h": "Streams: ordered queues of work on a device.",
    "string.h": "Owned strings.",
    "transforms.h": "Function transforms: eval, grad, vjp, jvp.",
    "transforms_impl.h": "Lower-level transform entry points.",
    "vector.h": "Vectors of arrays, ints and strings.",
    "version.h": "Library version.",
    "half.h": "Half-precision element types.",
}

# type name -> header that defines it
DEFINER = {}
for h, text in TYPES.items():
    for m in re.finditer(r"\}\s*(mlx_\w+);|\(\*(mlx_\w+)\)|typedef \w+ (b?float16_t);", text):
        DEFINER[m.group(1) or m.group(2) or m.group(3)] = h

def main():
    rows = collections.OrderedDict()
    with open(os.path.join(ROOT, "tools", "mlxc_api.tsv")) as f:
        next(f)
        for line in f:
            h, name, sig = line.rstrip("\n").split("\t")
            sig = re.sub(r"\(\s+", "(", sig)
            sig = re.sub(r"\s+,", ",", sig)
            sig = re.sub(r"\s+\)", ")", sig)
            sig = re.sub(r"\(\)$", "(void)", sig)
            rows.setdefault(h, []).append(sig)
    os.makedirs(OUT, exist_ok=True)
    headers = sorted(set(rows) | set(TYPES))
    for h in headers:
        body = TYPES.get(h, "") + "".join(s + ";\n" for s in rows.get(h, []))
        deps = sorted({DEFINER[t] for t in re.findall(r"\b(?:mlx_\w+|b?float16_t)", body)
                       if t in DEFINER and DEFINER[t] != h})
        guard = "MLX_C_" + h.upper().replace(".", "_")
        with open(os.path.join(OUT, h), "w") as o:
            o.write("/* lace: %s\n * Generated by tools/gen_headers.py from the mlx-c API list; edit the generator. */\n" % BLURB.get(h, h))
            o.write("#ifndef %s\n#define %s\n\n" % (guard, guard))
            o.write("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n")
            if h == "array.h":  # as mlx-c: programs rely on these coming along
                o.write("#include <complex.h>\n#include <float.h>\n#include <stdlib.h>\n")
            for d in deps:
                o.write('#include "mlx/c/%s"\n' % d)
            o.write("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n")
            o.write(body)
            o.write("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    with open(os.path.join(OUT, "mlx.h"), "w") as o:
        o.write("/* lace: the whole mlx-c API. Generated by tools/gen_headers.py. */\n#ifndef MLX_C_MLX_H\n#define MLX_C_MLX_H\n\n")
        for h in headers:
            o.write('#include "mlx/c/%s"\n' % h)
        o.write("\n#endif\n")

if __name__ == "__main__":
    main()
