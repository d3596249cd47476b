/* The params of the fast primitives, shared by their CPU kernels
 * (ops/fast_*.c) and the CUDA evaluators (gpu/cuda/eval_fast.c). */
#ifndef LC_FAST_PARAMS_H
#define LC_FAST_PARAMS_H

/* rms_norm, layer_norm: inputs x [, weight] [, bias]. */
struct norm_params {
  float eps;
  int has_weight;
  int has_bias;
};

/* rope: inputs x, offset [, freqs]. */
struct rope_params {
  int dims;
  int traditional;
  int has_freqs;
  int forward; /* 0: the inverse rotation (the vjp) */
  float base;
  float scale;
};

/* scaled_dot_product_attention: inputs q, k, v [, mask] [, sinks]. */
struct sdpa_params {
  float scale;
  int causal;
  int has_mask;
  int has_sinks;
};

#endif
