/* Backend availability and device information.
 * Metal never exists on lace. CUDA reports available only when a CUDA
 * backend is compiled in and finds a GPU (not in this build).
 * Device info for the CPU: "device_name" (string), "architecture"
 * (string), "memory_size" (bytes), "num_threads" (worker threads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "api/api.h"
#include "api/handles.h"
#include "core/parallel.h"

int mlx_cuda_is_available(bool *res) {
  LC_CHECK_RES("mlx_cuda_is_available", res);
  *res = false;
  return 0;
}

int mlx_metal_is_available(bool *res) {
  LC_CHECK_RES("mlx_metal_is_available", res);
  *res = false;
  return 0;
}

int mlx_metal_start_capture(const char *path) {
  (void)path;
  return lc_error("mlx_metal_start_capture: Metal is not available on this platform");
}

int mlx_metal_stop_capture(void) {
  return lc_error("mlx_metal_stop_capture: Metal is not available on this platform");
}

/* ---- device info: a fixed list of keys with string or size values ---- */

#define INFO_KEYS 4

struct lc_device_info {
  const char *keys[INFO_KEYS];
  char *strs[INFO_KEYS]; /* NULL for size values */
  size_t sizes[INFO_KEYS];
};

static void info_delete(struct lc_device_info *d) {
  if (!d) return;
  for (int i = 0; i < INFO_KEYS; i++) free(d->strs[i]);
  free(d);
}

static char *cpu_model(void) {
  char line[512], *res = NULL;
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10)) continue;
    char *v = strchr(line, ':');
    if (!v) break;
    v++;
    while (*v == ' ') v++;
    v[strcspn(v, "\n")] = 0;
    res = strdup(v);
    break;
  }
  if (f) fclose(f);
  return res ? res : strdup("cpu");
}

mlx_device_info mlx_device_info_new(void) { return (mlx_device_info){NULL}; }

int mlx_device_info_free(mlx_device_info info) {
  info_delete(info.ctx);
  return 0;
}

int mlx_device_info_get(mlx_device_info *info, mlx_device dev) {
  LC_CHECK_RES("mlx_device_info_get", info);
  if (!dev.ctx) return lc_error("mlx_device_info_get: empty device");
  const struct lc_device *d = dev.ctx;
  if (d->type != MLX_CPU || d->index != 0)
    return lc_error("mlx_device_info_get: device is not available");
  struct lc_device_info *n = calloc(1, sizeof *n);
  struct utsname u;
  if (!n) return lc_error("out of memory");
  n->keys[0] = "device_name";
  n->strs[0] = cpu_model();
  n->keys[1] = "architecture";
  n->strs[1] = strdup(uname(&u) == 0 ? u.machine : "unknown");
  n->keys[2] = "memory_size";
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  n->sizes[2] = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
  n->keys[3] = "num_threads";
  n->sizes[3] = (size_t)lc_parallel_threads();
  if (!n->strs[0] || !n->strs[1]) {
    info_delete(n);
    return lc_error("out of memory");
  }
  info_delete(info->ctx);
  info->ctx = n;
  return 0;
}

static int lookup(const char *fn, mlx_device_info info, const char *key) {
  if (!info.ctx) return lc_error("%s: empty device info", fn), -2;
  if (!key) return lc_error("%s: key is NULL", fn), -2;
  const struct lc_device_info *d = info.ctx;
  for (int i = 0; i < INFO_KEYS; i++)
    if (!strcmp(d->keys[i], key)) return i;
  return -1;
}

int mlx_device_info_has_key(bool *exists, mlx_device_info info, const char *key) {
  LC_CHECK_RES("mlx_device_info_has_key", exists);
  int i = lookup("mlx_device_info_has_key", info, key);
  if (i == -2) return 1;
  *exists = i >= 0;
  return 0;
}

int mlx_device_info_is_string(bool *is_string, mlx_device_info info, const char *key) {
  LC_CHECK_RES("mlx_device_info_is_string", is_string);
  int i = lookup("mlx_device_info_is_string", info, key);
  if (i == -2) return 1;
  if (i < 0) return lc_error("mlx_device_info_is_string: no key '%s'", key);
  *is_string = ((struct lc_device_info *)info.ctx)->strs[i] != NULL;
  return 0;
}

int mlx_device_info_get_string(const char **value, mlx_device_info info, const char *key) {
  LC_CHECK_RES("mlx_device_info_get_string", value);
  int i = lookup("mlx_device_info_get_string", info, key);
  if (i == -2) return 1;
  const struct lc_device_info *d = info.ctx;
  if (i < 0 || !d->strs[i])
    return lc_error("mlx_device_info_get_string: no string key '%s'", key);
  *value = d->strs[i];
  return 0;
}

int mlx_device_info_get_size(size_t *value, mlx_device_info info, const char *key) {
  LC_CHECK_RES("mlx_device_info_get_size", value);
  int i = lookup("mlx_device_info_get_size", info, key);
  if (i == -2) return 1;
  const struct lc_device_info *d = info.ctx;
  if (i < 0 || d->strs[i]) return lc_error("mlx_device_info_get_size: no size key '%s'", key);
  *value = d->sizes[i];
  return 0;
}

int mlx_device_info_get_keys(mlx_vector_string *keys, mlx_device_info info) {
  LC_CHECK_RES("mlx_device_info_get_keys", keys);
  if (!info.ctx) return lc_error("mlx_device_info_get_keys: empty device info");
  const struct lc_device_info *d = info.ctx;
  return mlx_vector_string_set_data(keys, (const char **)d->keys, INFO_KEYS);
}
