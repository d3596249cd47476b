/* mlx_device and mlx_stream.
 * lace has one CPU device and, when built with CUDA and a GPU is present,
 * GPU devices 0..n-1. Each op call's stream (or the default) decides where
 * the nodes it builds run (lc_set_build_device). Built with CUDA, a GPU
 * stream without that GPU is an error; built without CUDA, work on a GPU
 * stream runs on the CPU, as lace always did. The default device and
 * stream are per thread (as MLX's scoped defaults), starting at the CPU. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"
#include "gpu/gpu.h"

static _Thread_local struct lc_device default_device = {MLX_CPU, 0};
static _Thread_local int default_stream_index = 0;

static struct lc_device *dev_of(mlx_device d) { return d.ctx; }
static struct lc_stream *str_of(mlx_stream s) { return s.ctx; }

static mlx_device make_device(mlx_device_type type, int index) {
  struct lc_device *d = malloc(sizeof *d);
  if (!d) {
    lc_error("out of memory");
    return (mlx_device){NULL};
  }
  d->type = type;
  d->index = index;
  return (mlx_device){d};
}

static mlx_stream make_stream(struct lc_device dev, int index) {
  struct lc_stream *s = malloc(sizeof *s);
  if (!s) {
    lc_error("out of memory");
    return (mlx_stream){NULL};
  }
  s->dev = dev;
  s->index = index;
  return (mlx_stream){s};
}

/* The node device of work on device d: a GPU index, or the CPU. */
static int resolve_device(const char *fn, struct lc_device d, int *dev) {
  *dev = LC_DEV_CPU;
  if (d.type == MLX_CPU) return 0;
  if (!lc_gpu_built()) return 0;
  int n = lc_gpu_count();
  if (d.index < 0 || d.index >= n)
    return n ? lc_error("%s: no GPU %d (this machine has %d)", fn, d.index, n)
             : lc_error("%s: no GPU is available: %s", fn, lc_gpu_unavailable_reason());
  *dev = d.index;
  return 0;
}

int lc_api_check_stream(const char *fn, mlx_stream s) {
  struct lc_stream *st = str_of(s);
  if (st && st->dev.type != MLX_CPU && st->dev.type != MLX_GPU)
    return lc_error("%s: invalid stream", fn);
  int dev;
  if (resolve_device(fn, st ? st->dev : default_device, &dev)) return 1;
  lc_set_build_device(dev);
  lc_set_build_stream(st ? st->index : default_stream_index);
  return 0;
}

int lc_api_use_default_device(const char *fn) {
  int dev;
  if (resolve_device(fn, default_device, &dev)) return 1;
  lc_set_build_device(dev);
  lc_set_build_stream(default_stream_index);
  return 0;
}

mlx_device mlx_device_new(void) { return (mlx_device){NULL}; }

mlx_device mlx_device_new_type(mlx_device_type type, int index) {
  if (type != MLX_CPU && type != MLX_GPU) {
    lc_error("mlx_device_new_type: invalid device type %d", (int)type);
    return mlx_device_new();
  }
  return make_device(type, index);
}

int mlx_device_free(mlx_device dev) {
  free(dev_of(dev));
  return 0;
}

int mlx_device_set(mlx_device *dev, const mlx_device src) {
  LC_CHECK_RES("mlx_device_set", dev);
  mlx_device n = {NULL};
  if (src.ctx) {
    n = make_device(dev_of(src)->type, dev_of(src)->index);
    if (!n.ctx) return 1;
  }
  mlx_device_free(*dev);
  *dev = n;
  return 0;
}

int mlx_device_tostring(mlx_string *str, mlx_device dev) {
  if (!dev.ctx) return lc_error("mlx_device_tostring: empty device");
  char buf[64];
  snprintf(buf, sizeof buf, "Device(%s, %d)", dev_of(dev)->type == MLX_CPU ? "cpu" : "gpu",
           dev_of(dev)->index);
  return lc_string_assign(str, buf);
}

bool mlx_device_equal(mlx_device lhs, mlx_device rhs) {
  if (!lhs.ctx || !rhs.ctx) return lhs.ctx == rhs.ctx;
  return dev_of(lhs)->type == dev_of(rhs)->type && dev_of(lhs)->index == dev_of(rhs)->index;
}

int mlx_device_get_index(int *index, mlx_device dev) {
  LC_CHECK_RES("mlx_device_get_index", index);
  if (!dev.ctx) return lc_error("mlx_device_get_index: empty device");
  *index = dev_of(dev)->index;
  return 0;
}

int mlx_device_get_type(mlx_device_type *type, mlx_device dev) {
  LC_CHECK_RES("mlx_device_get_type", type);
  if (!dev.ctx) return lc_error("mlx_device_get_type: empty device");
  *type = dev_of(dev)->type;
  return 0;
}

int mlx_get_default_device(mlx_device *dev) {
  LC_CHECK_RES("mlx_get_default_device", dev);
  mlx_device n = make_device(default_device.type, default_device.index);
  if (!n.ctx) return 1;
  mlx_device_free(*dev);
  *dev = n;
  return 0;
}

int mlx_set_default_device(mlx_device dev) {
  if (!dev.ctx) return lc_error("mlx_set_default_device: empty device");
  int d;
  if (resolve_device("mlx_set_default_device", *dev_of(dev), &d)) return 1;
  default_device = *dev_of(dev);
  return 0;
}

int mlx_device_is_available(bool *avail, mlx_device dev) {
  LC_CHECK_RES("mlx_device_is_available", avail);
  if (!dev.ctx) return lc_error("mlx_device_is_available: empty device");
  struct lc_device *d = dev_of(dev);
  *avail = d->type == MLX_CPU ? d->index == 0 : d->index >= 0 && d->index < lc_gpu_count();
  return 0;
}

int mlx_device_count(int *count, mlx_device_type type) {
  LC_CHECK_RES("mlx_device_count", count);
  *count = type == MLX_CPU ? 1 : type == MLX_GPU ? lc_gpu_count() : 0;
  return 0;
}

/* ---- streams ---- */

mlx_stream mlx_stream_new(void) { return (mlx_stream){NULL}; }

/* Streams made by mlx_stream_new_device get fresh indices, process-wide
 * (as MLX's new_stream); index 0 is each device's default stream. */
static atomic_int next_stream_index = 1;

mlx_stream mlx_stream_new_device(mlx_device dev) {
  if (!dev.ctx) {
    lc_error("mlx_stream_new_device: empty device");
    return mlx_stream_new();
  }
  return make_stream(*dev_of(dev), atomic_fetch_add(&next_stream_index, 1));
}

int mlx_stream_set(mlx_stream *stream, const mlx_stream src) {
  LC_CHECK_RES("mlx_stream_set", stream);
  mlx_stream n = {NULL};
  if (src.ctx) {
    n = make_stream(str_of(src)->dev, str_of(src)->index);
    if (!n.ctx) return 1;
  }
  mlx_stream_free(*stream);
  *stream = n;
  return 0;
}

int mlx_stream_free(mlx_stream stream) {
  free(str_of(stream));
  return 0;
}

int mlx_stream_tostring(mlx_string *str, mlx_stream stream) {
  if (!stream.ctx) return lc_error("mlx_stream_tostring: empty stream");
  char buf[96];
  struct lc_stream *s = str_of(stream);
  snprintf(buf, sizeof buf, "Stream(Device(%s, %d), %d)", s->dev.type == MLX_CPU ? "cpu" : "gpu",
           s->dev.index, s->index);
  return lc_string_assign(str, buf);
}

bool mlx_stream_equal(mlx_stream lhs, mlx_stream rhs) {
  if (!lhs.ctx || !rhs.ctx) return lhs.ctx == rhs.ctx;
  struct lc_stream *a = str_of(lhs), *b = str_of(rhs);
  return a->dev.type == b->dev.type && a->dev.index == b->dev.index && a->index == b->index;
}

int mlx_stream_get_device(mlx_device *dev, mlx_stream stream) {
  LC_CHECK_RES("mlx_stream_get_device", dev);
  if (!stream.ctx) return lc_error("mlx_stream_get_device: empty stream");
  mlx_device n = make_device(str_of(stream)->dev.type, str_of(stream)->dev.index);
  if (!n.ctx) return 1;
  mlx_device_free(*dev);
  *dev = n;
  return 0;
}

int mlx_stream_get_index(int *index, mlx_stream stream) {
  LC_CHECK_RES("mlx_stream_get_index", index);
  if (!stream.ctx) return lc_error("mlx_stream_get_index: empty stream");
  *index = str_of(stream)->index;
  return 0;
}

/* CPU work is synchronous: by the time a call returns its work is done.
 * A GPU stream waits for its CUDA stream (its slot, gpu/gpu.h). */
int mlx_synchronize(mlx_stream stream) {
  if (lc_api_check_stream("mlx_synchronize", stream)) return 1;
  int dev = lc_build_device();
  return dev == LC_DEV_CPU ? 0 : lc_gpu_sync_slot(dev, lc_gpu_slot_of(lc_build_stream()));
}

uint64_t lc_api_default_stream_key(void) {
  return (uint64_t)default_device.type << 48 | (uint64_t)(uint16_t)default_device.index << 32 |
         (uint32_t)default_stream_index;
}

int mlx_get_default_stream(mlx_stream *stream, mlx_device dev) {
  LC_CHECK_RES("mlx_get_default_stream", stream);
  if (!dev.ctx) return lc_error("mlx_get_default_stream: empty device");
  mlx_stream n = make_stream(*dev_of(dev), default_stream_index);
  if (!n.ctx) return 1;
  mlx_stream_free(*stream);
  *stream = n;
  return 0;
}

int mlx_set_default_stream(mlx_stream stream) {
  if (!stream.ctx) return lc_error("mlx_set_default_stream: empty stream");
  int d;
  if (resolve_device("mlx_set_default_stream", str_of(stream)->dev, &d)) return 1;
  default_device = str_of(stream)->dev;
  default_stream_index = str_of(stream)->index;
  return 0;
}

mlx_stream mlx_default_cpu_stream_new(void) {
  return make_stream((struct lc_device){MLX_CPU, 0}, 0);
}

mlx_stream mlx_default_gpu_stream_new(void) {
  return make_stream((struct lc_device){MLX_GPU, 0}, 0);
}
