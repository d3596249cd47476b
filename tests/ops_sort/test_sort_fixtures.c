/* sort, argsort, partition, argpartition, topk against numpy references
 * (tests/data/sort_cases.h): random shapes and layouts, NaN placement,
 * flattened and per-axis variants. Partitions are checked as properties
 * against the sorted reference: the kth element is in place, those before
 * are not greater, those after not smaller, and the line is a permutation. */
#include "../ops_reduce/fixture.h"

#include "../data/sort_cases.h"

static int run_case(const struct fixture *f, mlx_array *r, mlx_array x) {
  mlx_stream s = test_stream();
  bool ax = f->variant == 1;
  int axis = f->axes[0];
  if (!strcmp(f->op, "sort")) return ax ? mlx_sort_axis(r, x, axis, s) : mlx_sort(r, x, s);
  if (!strcmp(f->op, "argsort"))
    return ax ? mlx_argsort_axis(r, x, axis, s) : mlx_argsort(r, x, s);
  if (!strcmp(f->op, "partition"))
    return ax ? mlx_partition_axis(r, x, f->p1, axis, s) : mlx_partition(r, x, f->p1, s);
  if (!strcmp(f->op, "argpartition"))
    return ax ? mlx_argpartition_axis(r, x, f->p1, axis, s) : mlx_argpartition(r, x, f->p1, s);
  return ax ? mlx_topk_axis(r, x, f->p1, axis, s) : mlx_topk(r, x, f->p1, s);
}

static int cmp_nan_last(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x)) return isnan(y) ? 0 : 1;
  if (isnan(y)) return -1;
  return x < y ? -1 : x > y;
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* Partition property along each line of the (row-major) result. vals are
 * the partitioned values (for argpartition: the input gathered through the
 * indices), ref the sorted reference, both laid out like the output. */
static void check_partition(const struct fixture *f, int idx, const double *vals,
                            const double *ref, const double *ix) {
  int nd = f->out_ndim, axis = f->variant == 1 ? (f->axes[0] + f->ndim) % f->ndim : 0;
  int64_t L = f->out_shape[axis], inner = 1, outer = 1;
  for (int d = axis + 1; d < nd; d++) inner *= f->out_shape[d];
  for (int d = 0; d < axis; d++) outer *= f->out_shape[d];
  int64_t k = f->p1 < 0 ? f->p1 + L : f->p1;
  double *line = malloc(sizeof(double) * (size_t)L);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      const double *v = vals + o * L * inner + j, *r = ref + o * L * inner + j;
      bool ok = same(v[k * inner], r[k * inner]);
      for (int64_t i = 0; i < L && ok; i++) {
        if (i < k && cmp_nan_last(&v[i * inner], &v[k * inner]) > 0) ok = false;
        if (i > k && cmp_nan_last(&v[i * inner], &v[k * inner]) < 0) ok = false;
        line[i] = v[i * inner];
      }
      qsort(line, (size_t)L, sizeof(double), cmp_nan_last);
      for (int64_t i = 0; i < L && ok; i++) ok = same(line[i], r[i * inner]);
      if (ix) { /* indices form a permutation */
        for (int64_t i = 0; i < L; i++) line[i] = ix[o * L * inner + j + i * inner];
        qsort(line, (size_t)L, sizeof(double), cmp_nan_last);
        for (int64_t i = 0; i < L && ok; i++) ok = line[i] == (double)i;
      }
      CHECK_MSG(ok, "case %d (%s): line %lld/%lld is not a partition at kth %lld", idx, f->op,
                (long long)o, (long long)j, (long long)k);
      if (!ok) goto done;
    }
done:
  free(line);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  size_t n = sizeof sort_cases / sizeof sort_cases[0];
  for (size_t i = 0; i < n; i++) {
    const struct fixture *f = &sort_cases[i];
    mlx_array x = fixture_input(f, sort_data), r = mlx_array_new();
    int failed = test_failures;
    int rc = run_case(f, &r, x);
    CHECK_MSG(rc == 0, "case %zu (%s): failed: %s", i, f->op, test_last_error);
    if (rc == 0 && fixture_meta(f, (int)i, r)) {
      const double *ref = sort_data + f->out_off;
      if (!strcmp(f->op, "partition")) {
        double *v = test_values(r);
        check_partition(f, (int)i, v, ref, NULL);
        free(v);
      } else if (!strcmp(f->op, "argpartition")) {
        /* gather the logical input (row-major, flattened if no axis) by the indices */
        double *ix = test_values(r), *in = test_values(x);
        int nd = f->out_ndim, axis = f->variant == 1 ? (f->axes[0] + f->ndim) % f->ndim : 0;
        int64_t L = f->out_shape[axis], inner = 1, total = (int64_t)mlx_array_size(r);
        for (int d = axis + 1; d < nd; d++) inner *= f->out_shape[d];
        double *v = malloc(sizeof(double) * (size_t)(total ? total : 1));
        for (int64_t e = 0; e < total; e++) {
          int64_t o = e / (L * inner), j = e % inner;
          v[e] = in[o * L * inner + (int64_t)ix[e] * inner + j];
        }
        check_partition(f, (int)i, v, ref, ix);
        free(v);
        free(ix);
        free(in);
      } else {
        CHECK_CLOSE(r, ref, (size_t)f->out_n, 0, 0); /* sorting is exact */
      }
    }
    if (test_failures != failed)
      fprintf(stderr, "  ^ case %zu: %s dtype %d layout %d variant %d shape (%d,%d,%d,%d)\n", i,
              f->op, f->dtype, f->layout, f->variant, f->shape[0], f->shape[1], f->shape[2],
              f->shape[3]);
    mlx_array_free(x);
    mlx_array_free(r);
  }
  CHECK_MSG(test_active_memory() == before, "leaked %zu bytes",
            test_active_memory() - before);
  return test_done();
}
