/* einsum (see misc.h): parse, take diagonals of repeated labels, then
 * contract operands left to right. A pair whose shared labels all vanish
 * afterwards goes through tensordot (gemm); otherwise the pair is
 * multiplied with broadcasting and labels no longer needed are summed.
 * Labels: 0..51 letters, 52.. the broadcast ("...") dimensions. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/linalg.h"
#include "ops/misc.h"
#include "ops/reduce.h"
#include "ops/shape.h"

#define FN "mlx_einsum"
#define MAXL 64 /* labels per term */
#define ELL 52

struct term {
  int n;          /* labels */
  int lab[MAXL];  /* label per axis */
  int ell;        /* position of "..." in lab (-1: none) */
};

static int letter(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c - 'A' + 26; }

/* Parses one term up to a ',' or '-' or end; *p advanced. */
static int parse_term(const char **p, struct term *t) {
  t->n = 0;
  t->ell = -1;
  for (const char *s = *p;; s++) {
    if (*s == ' ') continue;
    if (*s == '.') {
      if (s[1] != '.' || s[2] != '.' || t->ell >= 0)
        return lc_error(FN ": invalid ellipsis in subscripts");
      t->ell = t->n;
      s += 2;
      continue;
    }
    if (isalpha((unsigned char)*s)) {
      if (t->n >= MAXL - 1) return lc_error(FN ": too many subscripts in one operand");
      t->lab[t->n++] = letter(*s);
      continue;
    }
    if (*s == ',' || *s == '-' || *s == 0) {
      *p = s;
      return 0;
    }
    return lc_error(FN ": invalid character '%c' in subscripts", *s);
  }
}

/* Replaces the "..." marker of t (for an operand of ndim dims, nell
 * broadcast dims right-aligned within maxell) by labels ELL + k. */
static int expand_ell(struct term *t, int ndim, int maxell, int idx) {
  int nell = ndim - t->n;
  if (t->ell < 0) {
    if (nell != 0)
      return lc_error(FN ": operand %d has %d dimensions but %d subscripts", idx, ndim, t->n);
    return 0;
  }
  if (nell < 0 || ndim > MAXL)
    return lc_error(FN ": operand %d has %d dimensions but %d subscripts", idx, ndim, t->n);
  memmove(t->lab + t->ell + nell, t->lab + t->ell, sizeof(int) * (size_t)(t->n - t->ell));
  for (int k = 0; k < nell; k++) t->lab[t->ell + k] = ELL + maxell - nell + k;
  t->n += nell;
  return 0;
}

static int find(const int *lab, int n, int l) {
  for (int i = 0; i < n; i++)
    if (lab[i] == l) return i;
  return -1;
}

/* Consumes x; sums the axes of x whose labels are not needed (need[l]). */
static struct lc_node *drop_unneeded(struct lc_node *x, struct term *t, const int *need) {
  int axes[MAXL], na = 0, k = 0;
  for (int i = 0; i < t->n; i++)
    if (!need[t->lab[i]]) axes[na++] = i;
    else t->lab[k++] = t->lab[i];
  if (!na) return x;
  t->n = k;
  struct lc_node *r = lc_sum(x, axes, na, false);
  lc_node_release(x);
  return r;
}

/* Consumes x; takes the diagonal of every repeated label. */
static struct lc_node *diagonals(struct lc_node *x, struct term *t) {
  for (int i = 0; x && i < t->n; i++)
    for (int j = i + 1; j < t->n; j++)
      if (t->lab[i] == t->lab[j]) {
        struct lc_node *d = lc_diagonal(x, 0, i, j);
        lc_node_release(x);
        x = d;
        int l = t->lab[i], k = 0;
        for (int m = 0; m < t->n; m++)
          if (m != i && m != j) t->lab[k++] = t->lab[m];
        t->lab[k++] = l;
        t->n = k;
        i = -1; /* restart */
        break;
      }
  return x;
}

/* need[l] = uses of label l by the output and operands after `after`. */
static void count_need(int *need, const struct term *out, const struct term *ts, int n, int after) {
  memset(need, 0, sizeof(int) * MAXL * 2);
  for (int i = 0; i < out->n; i++) need[out->lab[i]]++;
  for (int k = after + 1; k < n; k++)
    for (int i = 0; i < ts[k].n; i++) need[ts[k].lab[i]]++;
}

/* Consumes acc and y: their contraction (labels in *ta updated). */
static struct lc_node *combine(struct lc_node *acc, struct term *ta, struct lc_node *y,
                               struct term *ty, const int *need) {
  int ca[MAXL], cb[MAXL], nc = 0, batch = 0;
  for (int i = 0; i < ta->n; i++) {
    int j = find(ty->lab, ty->n, ta->lab[i]);
    if (j < 0) continue;
    if (need[ta->lab[i]] || acc->shape[i] != y->shape[j]) batch = 1;
    ca[nc] = i;
    cb[nc++] = j;
  }
  struct lc_node *r = NULL;
  if (nc && !batch && lc_dtype_is_inexact(acc->dtype) && lc_dtype_is_inexact(y->dtype)) {
    r = lc_tensordot(acc, y, ca, cb, nc);
    int k = 0, lab[MAXL];
    for (int i = 0; i < ta->n; i++)
      if (find(ty->lab, ty->n, ta->lab[i]) < 0) lab[k++] = ta->lab[i];
    for (int i = 0; i < ty->n; i++)
      if (find(ta->lab, ta->n, ty->lab[i]) < 0) lab[k++] = ty->lab[i];
    memcpy(ta->lab, lab, sizeof(int) * (size_t)k);
    ta->n = k;
  } else {
    /* union order: acc's labels, then y's new ones */
    int u[MAXL], nu = ta->n, ashape[MAXL], yshape[MAXL], perm[MAXL], np = 0;
    memcpy(u, ta->lab, sizeof(int) * (size_t)ta->n);
    for (int i = 0; i < ty->n; i++)
      if (find(u, nu, ty->lab[i]) < 0) u[nu++] = ty->lab[i];
    for (int i = 0; i < nu; i++) {
      ashape[i] = i < ta->n ? acc->shape[i] : 1;
      int j = find(ty->lab, ty->n, u[i]);
      yshape[i] = j < 0 ? 1 : y->shape[j];
      if (j >= 0) perm[np++] = j;
    }
    if (nu > MAXL - 1) {
      lc_error(FN ": too many distinct subscripts");
    } else {
      struct lc_node *a2 = lc_reshape(acc, nu, ashape);
      struct lc_node *yt = lc_transpose(y, perm);
      struct lc_node *y2 = yt ? lc_reshape(yt, nu, yshape) : NULL;
      lc_node_release(yt);
      r = a2 && y2 ? lc_multiply(a2, y2) : NULL;
      lc_node_release(a2);
      lc_node_release(y2);
      memcpy(ta->lab, u, sizeof(int) * (size_t)nu);
      ta->n = nu;
    }
  }
  lc_node_release(acc);
  lc_node_release(y);
  return r ? drop_unneeded(r, ta, need) : NULL;
}

struct lc_node *lc_einsum(const char *subscripts, int n, struct lc_node *const *ops) {
  if (n < 1) {
    lc_error(FN ": at least one operand is required");
    return NULL;
  }
  struct term *ts = calloc((size_t)n, sizeof *ts), out;
  if (!ts) {
    lc_error("out of memory");
    return NULL;
  }
  struct lc_node *acc = NULL;
  const char *p = subscripts;
  int maxell = 0, ext[MAXL * 2], need[MAXL * 2], seen[MAXL * 2] = {0};
  for (int k = 0; k < n; k++) {
    if (k && *p++ != ',') {
      lc_error(FN ": %d operands given but the subscripts name %d", n, k);
      goto fail;
    }
    if (parse_term(&p, &ts[k])) goto fail;
    if (ts[k].ell >= 0 && ops[k]->ndim - ts[k].n > maxell) maxell = ops[k]->ndim - ts[k].n;
  }
  if (*p == ',') {
    lc_error(FN ": the subscripts name more operands than the %d given", n);
    goto fail;
  }
  if (maxell > MAXL - ELL) {
    lc_error(FN ": too many broadcast dimensions");
    goto fail;
  }
  for (int k = 0; k < n; k++)
    if (expand_ell(&ts[k], ops[k]->ndim, maxell, k)) goto fail;
  for (int l = 0; l < MAXL * 2; l++) ext[l] = -1;
  for (int k = 0; k < n; k++)
    for (int i = 0; i < ts[k].n; i++) {
      int l = ts[k].lab[i], e = ops[k]->shape[i];
      seen[l]++;
      if (ext[l] < 0 || (l >= ELL && ext[l] == 1)) ext[l] = e;
      else if (ext[l] != e && !(l >= ELL && e == 1)) {
        lc_error(FN ": size of subscript %c does not match (%d and %d)",
                 l < 26 ? 'a' + l : l < ELL ? 'A' + l - 26 : '.', ext[l], e);
        goto fail;
      }
    }
  if (*p == '-') {
    if (p[1] != '>') {
      lc_error(FN ": invalid subscripts (expected '->')");
      goto fail;
    }
    p += 2;
    if (parse_term(&p, &out)) goto fail;
    if (*p) {
      lc_error(FN ": invalid output subscripts");
      goto fail;
    }
    for (int i = 0; i < out.n; i++) {
      if (!seen[out.lab[i]] || find(out.lab, i, out.lab[i]) >= 0) {
        lc_error(FN ": output subscript %d is %s", i,
                 seen[out.lab[i]] ? "repeated" : "not in any input");
        goto fail;
      }
    }
    if (out.ell >= 0) {
      memmove(out.lab + out.ell + maxell, out.lab + out.ell,
              sizeof(int) * (size_t)(out.n - out.ell));
      for (int k = 0; k < maxell; k++) out.lab[out.ell + k] = ELL + k;
      out.n += maxell;
    }
  } else { /* implicit: "..." then labels seen once, by character code */
    out.n = 0;
    for (int k = 0; k < maxell; k++) out.lab[out.n++] = ELL + k;
    for (int l = 26; l < ELL; l++)
      if (seen[l] == 1) out.lab[out.n++] = l;
    for (int l = 0; l < 26; l++)
      if (seen[l] == 1) out.lab[out.n++] = l;
  }
  for (int k = 0; k < n; k++) {
    struct lc_node *x = diagonals(lc_node_retain(ops[k]), &ts[k]);
    count_need(need, &out, ts, n, k);
    if (acc)
      for (int i = 0; i < ts[0].n; i++) need[ts[0].lab[i]]++;
    x = x ? drop_unneeded(x, &ts[k], need) : NULL;
    if (!x) goto fail;
    if (!acc) {
      acc = x;
      ts[0] = ts[k];
    } else {
      count_need(need, &out, ts, n, k);
      acc = combine(acc, &ts[0], x, &ts[k], need);
      if (!acc) goto fail;
    }
  }
  /* acc holds exactly the output labels: order them */
  int perm[MAXL];
  for (int i = 0; i < out.n; i++) perm[i] = find(ts[0].lab, ts[0].n, out.lab[i]);
  struct lc_node *r = lc_transpose(acc, perm);
  lc_node_release(acc);
  free(ts);
  return r;
fail:
  lc_node_release(acc);
  free(ts);
  return NULL;
}
