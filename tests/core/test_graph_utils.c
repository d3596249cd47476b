/* Graph printing, node naming, device info and backend availability. */
#include "test.h"

static void test_print_graph(void) {
  mlx_array x = mlx_array_new_float(1.0f), y = mlx_array_new_float(2.0f);
  mlx_array s = mlx_array_new(), t = mlx_array_new();
  CHECK_OK(mlx_add(&s, x, y, test_stream()));
  CHECK_OK(mlx_add(&t, s, s, test_stream()));
  mlx_node_namer namer = mlx_node_namer_new();
  CHECK_OK(mlx_node_namer_set_name(namer, x, "x"));
  mlx_vector_array outs = mlx_vector_array_new_value(t);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK_OK(mlx_print_graph(f, namer, outs));
  fclose(f);
  /* y was unnamed: it gets the next letter after the one user name */
  CHECK_MSG(strstr(buf, "add x B -> C\nadd C C -> D\n") != NULL, "got:\n%s", buf);
  free(buf);
  f = open_memstream(&buf, &len);
  CHECK_OK(mlx_export_to_dot(f, namer, outs));
  fclose(f);
  CHECK(strstr(buf, "digraph") == buf && strstr(buf, "->") != NULL);
  free(buf);
  const char *name = NULL;
  CHECK_OK(mlx_node_namer_get_name(&name, namer, x));
  CHECK(name && !strcmp(name, "x"));
  CHECK_FAILS(mlx_print_graph(NULL, namer, outs), "NULL");
  mlx_vector_array_free(outs);
  mlx_node_namer_free(namer);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(s);
  mlx_array_free(t);
}

static void test_device_info(void) {
  mlx_device dev = mlx_device_new_type(MLX_CPU, 0);
  mlx_device_info info = mlx_device_info_new();
  CHECK_OK(mlx_device_info_get(&info, dev));
  bool has = false, is_str = false;
  CHECK_OK(mlx_device_info_has_key(&has, info, "memory_size"));
  CHECK(has);
  CHECK_OK(mlx_device_info_is_string(&is_str, info, "device_name"));
  CHECK(is_str);
  size_t mem = 0;
  CHECK_OK(mlx_device_info_get_size(&mem, info, "memory_size"));
  CHECK(mem > 0);
  const char *arch = NULL;
  CHECK_OK(mlx_device_info_get_string(&arch, info, "architecture"));
  CHECK(arch && strlen(arch) > 0);
  CHECK_FAILS(mlx_device_info_get_size(&mem, info, "device_name"), "no size key");
  mlx_vector_string keys = mlx_vector_string_new();
  CHECK_OK(mlx_device_info_get_keys(&keys, info));
  CHECK(mlx_vector_string_size(keys) == 4);
  mlx_vector_string_free(keys);
  mlx_device_info_free(info);
  mlx_device_free(dev);
  bool avail = true;
  CHECK_OK(mlx_metal_is_available(&avail));
  CHECK(!avail);
  CHECK_OK(mlx_cuda_is_available(&avail));
  CHECK(!avail);
}

int main(void) {
  test_init();
  test_print_graph();
  test_device_info();
  return test_done();
}
