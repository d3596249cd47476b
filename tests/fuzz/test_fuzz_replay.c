/* Replays the fuzz corpus under plain builds (no clang, no libFuzzer): every
 * file of tests/fuzz/corpus/<harness>/ and tests/fuzz/crashes/<harness>/
 * goes through its harness, then deterministic variants of it (truncations
 * and byte flips). A harness aborts on a contract violation; ASan builds
 * also catch memory errors and leaks. */
#include <dirent.h>
#include <sys/stat.h>

#include "fuzz_api.c"
#include "fuzz_gguf.c"
#include "fuzz_json.c"
#include "fuzz_mlxfn.c"
#include "fuzz_npy.c"
#include "fuzz_safetensors.c"

#define FUZZ_DIR LACE_TEST_DATA "/../fuzz"
#define VARIANTS 8

struct harness {
  const char *name;
  int (*run)(const uint8_t *, size_t);
};

static const struct harness harnesses[] = {{"npy", fuzz_npy},
                                           {"safetensors", fuzz_safetensors},
                                           {"gguf", fuzz_gguf},
                                           {"json", fuzz_json},
                                           {"api", fuzz_api},
                                           {"mlxfn", fuzz_mlxfn}};

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next_rand(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0, k;
  do {
    if (len == cap) {
      cap = cap ? 2 * cap : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    k = fread(buf + len, 1, cap - len, f);
    len += k;
  } while (k > 0);
  fclose(f);
  *n = len;
  return buf ? buf : malloc(1);
}

/* The input, then VARIANTS mutations of it: cut short, or bytes changed. */
static void run_with_variants(const struct harness *h, const uint8_t *data, size_t n) {
  h->run(data, n);
  uint8_t *m = malloc(n ? n : 1);
  for (int v = 0; m && n && v < VARIANTS; v++) {
    memcpy(m, data, n);
    size_t len = n;
    if (v % 2 == 0) {
      len = (size_t)(next_rand() % n);
    } else {
      for (int k = 0; k < 1 + v / 2; k++) {
        size_t at = (size_t)(next_rand() % n);
        m[at] = (uint8_t)(v == 1 ? m[at] ^ 0x80 : next_rand());
      }
    }
    h->run(m, len);
  }
  free(m);
}

/* Runs every regular file of dir; returns how many. */
static int replay_dir(const struct harness *h, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode)) continue;
    size_t n = 0;
    uint8_t *data = slurp(path, &n);
    if (!data) {
      fprintf(stderr, "cannot read %s\n", path);
      exit(1);
    }
    if (getenv("LACE_FUZZ_VERBOSE")) fprintf(stderr, "replay %s\n", path);
    run_with_variants(h, data, n);
    free(data);
    count++;
  }
  closedir(d);
  return count;
}

int main(void) {
  int failures = 0;
  for (size_t i = 0; i < sizeof harnesses / sizeof harnesses[0]; i++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/corpus/%s", FUZZ_DIR, harnesses[i].name);
    int nc = replay_dir(&harnesses[i], dir);
    snprintf(dir, sizeof dir, "%s/crashes/%s", FUZZ_DIR, harnesses[i].name);
    int nx = replay_dir(&harnesses[i], dir);
    printf("%-12s %3d corpus inputs, %3d crash inputs (each with %d variants)\n",
           harnesses[i].name, nc, nx, VARIANTS);
    if (nc == 0) {
      fprintf(stderr, "no corpus for harness %s in %s/corpus\n", harnesses[i].name, FUZZ_DIR);
      failures++;
    }
  }
  if (failures) return 1;
  printf("ok: %lu errors reported and handled\n", fuzz_errors);
  return 0;
}
