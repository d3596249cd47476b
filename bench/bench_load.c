/* Loading a large safetensors checkpoint: lazy (LOAD nodes over a mapping
 * of the file) against eager (LACE_LAZY_LOAD=0: every tensor read at open).
 *
 *   bench_load [MiB]      (default 1024; LACE_BENCH_LOAD_DIR, default /tmp)
 *
 * Writes files of 16 float32 tensors totalling MiB mebibytes, then runs
 * each case in a fresh child process (so that peak RSS is the case's own):
 *   open        mlx_load_safetensors only
 *   eval_one    open + evaluate one tensor
 *   eval_all    open + evaluate every tensor
 *   sum_all     open + evaluate the sum of every tensor (reads every byte)
 * for lazy loading (aligned tensors: zero-copy windows of the mapping), lazy
 * loading of a second file whose tensors are all unaligned (copied at eval)
 * and eager loading. Each prints one line:
 *   BENCH load/<case> mode=<lazy|lazy_copy|eager> MiB=<n> open_ms=<f> total_ms=<f>
 *         rss_MiB=<peak RSS minus RSS before opening> alloc_MiB=<lace's
 *         allocator peak> check=<sum of the sums, same in both modes>
 * The files are read through the page cache, warm (just written), and are
 * deleted at the end. */
#include <fcntl.h>
#include <sys/wait.h>

#include "bench_common.h"

#define NT 16

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') v = strtol(line + kl + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

/* 16 tensors "w00".."w15" of n float32 each, values from an LCG in [-1, 1);
 * with pad, a 1-byte tensor "_pad" first, so that every float32 tensor is
 * unaligned (the copying path of lazy loading). */
static int write_file(const char *path, int64_t n, int pad) {
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  char hdr[4096];
  size_t len = 0;
  uint64_t off = pad ? 1 : 0, bytes = (uint64_t)n * 4;
  len += (size_t)snprintf(hdr + len, sizeof hdr - len, "{");
  if (pad)
    len += (size_t)snprintf(hdr + len, sizeof hdr - len,
                            "\"_pad\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},");
  for (int t = 0; t < NT; t++, off += bytes)
    len += (size_t)snprintf(hdr + len, sizeof hdr - len,
                            "%s\"w%02d\":{\"dtype\":\"F32\",\"shape\":[%lld],"
                            "\"data_offsets\":[%llu,%llu]}",
                            t ? "," : "", t, (long long)n, (unsigned long long)off,
                            (unsigned long long)(off + bytes));
  len += (size_t)snprintf(hdr + len, sizeof hdr - len, "}");
  while (len % 8) hdr[len++] = ' ';
  unsigned char l8[8];
  for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
  int bad = fwrite(l8, 1, 8, f) != 8 || fwrite(hdr, 1, len, f) != len ||
            (pad && fputc(0, f) == EOF);
  enum { CHUNK = 1 << 18 };
  float *buf = malloc(CHUNK * sizeof *buf);
  uint64_t s = 12345;
  for (int64_t done = 0; !bad && buf && done < (int64_t)NT * n; done += CHUNK) {
    int64_t k = (int64_t)NT * n - done < CHUNK ? (int64_t)NT * n - done : CHUNK;
    for (int64_t i = 0; i < k; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      buf[i] = (float)((double)(s >> 40) / (double)(1 << 23) - 1.0);
    }
    bad = fwrite(buf, sizeof *buf, (size_t)k, f) != (size_t)k;
  }
  free(buf);
  return fclose(f) != 0 || bad || !buf;
}

static int run_case(const char *path, const char *what, const char *mode, int mib) {
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  long rss0 = status_kib("VmRSS");
  mlx_reset_peak_memory();
  double t0 = bench_now();
  if (mlx_load_safetensors(&m, &md, path, s)) return 1;
  double t1 = bench_now();
  double check = 0;
  int ntouch = !strcmp(what, "open") ? 0 : !strcmp(what, "eval_one") ? 1 : NT;
  for (int t = 0; t < ntouch; t++) {
    char key[16];
    snprintf(key, sizeof key, "w%02d", t);
    mlx_array a = mlx_array_new(), r = mlx_array_new();
    if (mlx_map_string_to_array_get(&a, m, key)) return 1;
    if (!strcmp(what, "sum_all")) {
      float v = 0;
      if (mlx_sum(&r, a, false, s) || mlx_array_item_float32(&v, r)) return 1;
      check += v;
    } else if (mlx_array_eval(a)) {
      return 1;
    }
    mlx_array_free(r);
    mlx_array_free(a);
  }
  double t2 = bench_now();
  size_t peak = 0;
  mlx_get_peak_memory(&peak);
  printf("BENCH load/%s mode=%s MiB=%d open_ms=%.3f total_ms=%.1f rss_MiB=%.1f alloc_MiB=%.1f "
         "check=%.6g\n",
         what, mode, mib, 1e3 * (t1 - t0), 1e3 * (t2 - t0),
         (double)(status_kib("VmHWM") - rss0) / 1024.0, (double)peak / 1048576.0, check);
  fflush(stdout);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_string_free(md);
  mlx_stream_free(s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--case")) /* child: --case path what mode */
    return run_case(argv[2], argv[3], argv[4], atoi(getenv("LACE_BENCH_LOAD_MIB")));
  int mib = argc > 1 ? atoi(argv[1]) : 1024;
  if (mib < 16) mib = 16;
  const char *dir = getenv("LACE_BENCH_LOAD_DIR");
  char path[2][512], mibs[16];
  for (int k = 0; k < 2; k++)
    snprintf(path[k], sizeof path[k], "%s/lace_bench_load_%d%s.safetensors", dir ? dir : "/tmp",
             (int)getpid(), k ? "_unaligned" : "");
  snprintf(mibs, sizeof mibs, "%d", mib);
  setenv("LACE_BENCH_LOAD_MIB", mibs, 1);
  for (int k = 0; k < 2; k++) {
    double t0 = bench_now();
    if (write_file(path[k], (int64_t)mib * 1048576 / 4 / NT, k)) {
      fprintf(stderr, "bench_load: cannot write %s\n", path[k]);
      unlink(path[0]);
      unlink(path[1]);
      return 1;
    }
    printf("# wrote %s (%d MiB, %d tensors%s) in %.1f s\n", path[k], mib, NT,
           k ? ", all unaligned" : "", bench_now() - t0);
  }
  fflush(stdout);
  const char *cases[] = {"open", "eval_one", "eval_all", "sum_all"};
  /* lazy: zero-copy windows; lazy_copy: the unaligned file (copied at
   * eval); eager: LACE_LAZY_LOAD=0 */
  const char *modes[] = {"lazy", "lazy_copy", "eager"};
  int rc = 0;
  for (int c = 0; c < 4; c++)
    for (int k = 0; k < 3; k++) {
      pid_t p = fork();
      if (p == 0) {
        setenv("LACE_LAZY_LOAD", k == 2 ? "0" : "1", 1);
        execl("/proc/self/exe", argv[0], "--case", path[k == 1], cases[c], modes[k],
              (char *)NULL);
        _exit(127);
      }
      int st = 0;
      if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        printf("BENCH load/%s mode=%s skipped=error\n", cases[c], modes[k]);
        rc = 1;
      }
      fflush(stdout);
    }
  unlink(path[0]);
  unlink(path[1]);
  return rc;
}
