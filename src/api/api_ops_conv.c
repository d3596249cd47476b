/* Public convolution ops (ops.h): argument checks, then ops/conv.h. */
#include <stddef.h>

#include "api/api.h"
#include "ops/conv.h"

/* Spatial dimensions of an input: ndim - 2 when it is 1..3, else 0 (the
 * builder reports the rank error). */
static int nspatial(mlx_array a) {
  int d = lc_arr(a)->ndim - 2;
  return d >= 1 && d <= 3 ? d : 0;
}

/* Expands a per-axis argument of 0, 1 or nsp entries (MLX: 0 = dflt, 1 =
 * broadcast) into out. 0, or 1 after reporting. */
static int expand(const char *fn, const char *what, const int *v, size_t num, int nsp, int dflt,
                  int *out) {
  if (num && !v) return lc_error("%s: %s is NULL but has %zu entries", fn, what, num);
  if (num > 1 && num != (size_t)nsp)
    return lc_error("%s: invalid %s with %zu entries for %dD convolution", fn, what, num, nsp);
  for (int i = 0; i < nsp; i++) out[i] = num == 0 ? dflt : num == 1 ? v[0] : v[i];
  return 0;
}

int mlx_conv_general(mlx_array *res, const mlx_array input, const mlx_array weight,
                     const int *stride, size_t stride_num, const int *padding_lo,
                     size_t padding_lo_num, const int *padding_hi, size_t padding_hi_num,
                     const int *kernel_dilation, size_t kernel_dilation_num,
                     const int *input_dilation, size_t input_dilation_num, int groups, bool flip,
                     const mlx_stream s) {
  const char *fn = "mlx_conv_general";
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, input);
  LC_CHECK_ARR(fn, weight);
  if (lc_api_check_stream(fn, s)) return 1;
  int nsp = nspatial(input), st[3] = {1, 1, 1}, lo[3] = {0}, hi[3] = {0}, kd[3] = {1, 1, 1},
      id[3] = {1, 1, 1};
  if (nsp && (expand(fn, "stride", stride, stride_num, nsp, 1, st) ||
              expand(fn, "padding_lo", padding_lo, padding_lo_num, nsp, 0, lo) ||
              expand(fn, "padding_hi", padding_hi, padding_hi_num, nsp, 0, hi) ||
              expand(fn, "kernel_dilation", kernel_dilation, kernel_dilation_num, nsp, 1, kd) ||
              expand(fn, "input_dilation", input_dilation, input_dilation_num, nsp, 1, id)))
    return 1;
  if (groups != 1 && nsp == 3)
    return lc_error("%s: groups != 1 is only supported for 1D and 2D convolutions", fn);
  return lc_api_set(res, lc_conv_general(fn, lc_arr(input), lc_arr(weight), st, lo, hi, kd, id,
                                         groups, flip));
}

static int conv_nd(const char *fn, mlx_array *res, mlx_array input, mlx_array weight, int nsp,
                   const int *st, const int *pad, const int *dil, int groups, mlx_stream s) {
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, input);
  LC_CHECK_ARR(fn, weight);
  if (lc_api_check_stream(fn, s)) return 1;
  if (lc_arr(input)->ndim != nsp + 2)
    return lc_error("%s: invalid input array with %d dimensions for %dD convolution; expected "
                    "%d dimensions in the format [N, ..., C_in]", fn, lc_arr(input)->ndim, nsp,
                    nsp + 2);
  if (groups != 1 && nsp == 3)
    return lc_error("%s: groups != 1 is only supported for 1D and 2D convolutions", fn);
  const int one[3] = {1, 1, 1};
  return lc_api_set(res, lc_conv_general(fn, lc_arr(input), lc_arr(weight), st, pad, pad, dil,
                                         one, groups, false));
}

int mlx_conv1d(mlx_array *res, const mlx_array input, const mlx_array weight, int stride,
               int padding, int dilation, int groups, const mlx_stream s) {
  return conv_nd("mlx_conv1d", res, input, weight, 1, &stride, &padding, &dilation, groups, s);
}

int mlx_conv2d(mlx_array *res, const mlx_array input, const mlx_array weight, int stride_0,
               int stride_1, int padding_0, int padding_1, int dilation_0, int dilation_1,
               int groups, const mlx_stream s) {
  int st[2] = {stride_0, stride_1}, pd[2] = {padding_0, padding_1},
      dl[2] = {dilation_0, dilation_1};
  return conv_nd("mlx_conv2d", res, input, weight, 2, st, pd, dl, groups, s);
}

int mlx_conv3d(mlx_array *res, const mlx_array input, const mlx_array weight, int stride_0,
               int stride_1, int stride_2, int padding_0, int padding_1, int padding_2,
               int dilation_0, int dilation_1, int dilation_2, int groups, const mlx_stream s) {
  int st[3] = {stride_0, stride_1, stride_2}, pd[3] = {padding_0, padding_1, padding_2},
      dl[3] = {dilation_0, dilation_1, dilation_2};
  return conv_nd("mlx_conv3d", res, input, weight, 3, st, pd, dl, groups, s);
}

static int convt_nd(const char *fn, mlx_array *res, mlx_array input, mlx_array weight, int nsp,
                    const int *st, const int *pad, const int *dil, const int *opad, int groups,
                    mlx_stream s) {
  LC_CHECK_RES(fn, res);
  LC_CHECK_ARR(fn, input);
  LC_CHECK_ARR(fn, weight);
  if (lc_api_check_stream(fn, s)) return 1;
  if (lc_arr(input)->ndim != nsp + 2)
    return lc_error("%s: invalid input array with %d dimensions for %dD convolution; expected "
                    "%d dimensions in the format [N, ..., C_in]", fn, lc_arr(input)->ndim, nsp,
                    nsp + 2);
  if (groups != 1 && nsp == 3)
    return lc_error("%s: groups != 1 is only supported for 1D and 2D convolutions", fn);
  return lc_api_set(res, lc_conv_transpose(fn, lc_arr(input), lc_arr(weight), st, pad, dil, opad,
                                           groups));
}

int mlx_conv_transpose1d(mlx_array *res, const mlx_array input, const mlx_array weight,
                         int stride, int padding, int dilation, int output_padding, int groups,
                         const mlx_stream s) {
  return convt_nd("mlx_conv_transpose1d", res, input, weight, 1, &stride, &padding, &dilation,
                  &output_padding, groups, s);
}

int mlx_conv_transpose2d(mlx_array *res, const mlx_array input, const mlx_array weight,
                         int stride_0, int stride_1, int padding_0, int padding_1, int dilation_0,
                         int dilation_1, int output_padding_0, int output_padding_1, int groups,
                         const mlx_stream s) {
  int st[2] = {stride_0, stride_1}, pd[2] = {padding_0, padding_1},
      dl[2] = {dilation_0, dilation_1}, op[2] = {output_padding_0, output_padding_1};
  return convt_nd("mlx_conv_transpose2d", res, input, weight, 2, st, pd, dl, op, groups, s);
}

int mlx_conv_transpose3d(mlx_array *res, const mlx_array input, const mlx_array weight,
                         int stride_0, int stride_1, int stride_2, int padding_0, int padding_1,
                         int padding_2, int dilation_0, int dilation_1, int dilation_2,
                         int output_padding_0, int output_padding_1, int output_padding_2,
                         int groups, const mlx_stream s) {
  int st[3] = {stride_0, stride_1, stride_2}, pd[3] = {padding_0, padding_1, padding_2},
      dl[3] = {dilation_0, dilation_1, dilation_2},
      op[3] = {output_padding_0, output_padding_1, output_padding_2};
  return convt_nd("mlx_conv_transpose3d", res, input, weight, 3, st, pd, dl, op, groups, s);
}
