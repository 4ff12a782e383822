/*===- test/fake_hip.c - A fake libamdhip64 for the HIP backend's tests ----===*
 *
 * Implements the HIP functions the HIP backend resolves, with results the
 * tests choose through environment variables:
 *   FAKE_HIP_DEVICES            device count (default 1)
 *   FAKE_HIP_ARCH               gcnArchName (default "gfx942:sramecc+:xnack-")
 *   FAKE_HIP_FUNC_MAX_THREADS   a function's max threads per block (1024)
 *   FAKE_HIP_FUNC_ATTR_FAILS    if 1, hipFuncGetAttribute fails
 *   FAKE_HIP_LAUNCH             hipModuleLaunchKernel's result (0)
 * Device limits are an MI300X's (64 KiB of LDS per workgroup). Module images
 * must start with FAKE_IMAGE_PREFIX and end with a NUL; the entry name
 * "missing_entry" is not found.
 *
 *===---------------------------------------------------------------------===*/

#include "fake_drivers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
typedef struct fake_module *hipModule_t;
typedef struct fake_module *hipFunction_t;

struct fake_module {
  const char *image; /* HIP may keep reading the caller's image */
  char function[64];
};

static struct fake_driver_state state;

struct fake_driver_state *fake_hip_state(void) {
  return &state;
}

static int env_int(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

hipError_t hipInit(unsigned flags) {
  (void)flags;
  return 0;
}

hipError_t hipGetDeviceCount(int *count) {
  *count = env_int("FAKE_HIP_DEVICES", 1);
  return *count ? 0 : 100; /* hipErrorNoDevice */
}

hipError_t hipGetDevice(int *device) {
  *device = state.current_device;
  return 0;
}

hipError_t hipSetDevice(int device) {
  ++state.set_device_calls;
  state.current_device = device;
  return 0;
}

/* Fills the legacy hipDeviceProp_t (hipDeviceProp_tR0000): 792 bytes, name
 * at offset 0, gcnArchName at offset 396. */
hipError_t hipGetDeviceProperties(void *props, int device) {
  if (device >= env_int("FAKE_HIP_DEVICES", 1))
    return 101; /* hipErrorInvalidDevice */
  const char *arch = getenv("FAKE_HIP_ARCH");
  memset(props, 0, 792);
  strcpy((char *)props, "Fake Instinct");
  strncpy((char *)props + 396, arch ? arch : "gfx942:sramecc+:xnack-", 255);
  return 0;
}

hipError_t hipDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  switch (attribute) {
  case 26: /* max block x, y, z */
  case 27:
  case 28:
  case 56: /* max threads per block */
    *value = 1024;
    return 0;
  case 29: /* max grid x, y, z */
  case 30:
  case 31:
    *value = 2147483647;
    return 0;
  case 74: /* LDS per workgroup */
    *value = 64 * 1024;
    return 0;
  }
  return 1; /* hipErrorInvalidValue */
}

hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  const char *text = (const char *)image;
  if (strncmp(text, FAKE_IMAGE_PREFIX, strlen(FAKE_IMAGE_PREFIX)) != 0)
    return 200; /* hipErrorInvalidImage */
  struct fake_module *m = calloc(1, sizeof *m);
  m->image = text;
  strncpy(state.last_image, text, sizeof state.last_image - 1);
  ++state.modules_loaded;
  *module = m;
  return 0;
}

hipError_t hipModuleUnload(hipModule_t module) {
  free(module);
  ++state.modules_unloaded;
  return 0;
}

hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module,
                                const char *name) {
  if (strcmp(name, "missing_entry") == 0)
    return 500; /* hipErrorNotFound */
  strncpy(module->function, name, sizeof module->function - 1);
  *function = module;
  return 0;
}

hipError_t hipFuncGetAttribute(int *value, int attribute,
                               hipFunction_t function) {
  (void)function;
  if (env_int("FAKE_HIP_FUNC_ATTR_FAILS", 0))
    return 801; /* hipErrorNotSupported */
  if (attribute == 0)
    *value = env_int("FAKE_HIP_FUNC_MAX_THREADS", 1024);
  else if (attribute == 1)
    *value = 0;
  else
    return 1;
  return 0;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra) {
  (void)extra;
  /* The image must still be there: see struct fake_module. */
  if (strncmp(f->image, FAKE_IMAGE_PREFIX, strlen(FAKE_IMAGE_PREFIX)) != 0)
    return 200;
  struct fake_launch *l = &state.last_launch;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  memcpy(l->grid, grid, sizeof grid);
  memcpy(l->block, block, sizeof block);
  l->shared = shared;
  l->stream = stream;
  for (int i = 0; i < state.num_params && i < 8; ++i)
    memcpy(&l->params[i], params[i], 8);
  l->current = state.current_device;
  strcpy(l->function, f->function);
  ++state.launches;
  return env_int("FAKE_HIP_LAUNCH", 0);
}

const char *hipGetErrorName(hipError_t error) {
  switch (error) {
  case 100:
    return "hipErrorNoDevice";
  case 200:
    return "hipErrorInvalidImage";
  case 400:
    return "hipErrorInvalidHandle";
  case 500:
    return "hipErrorNotFound";
  }
  return "hipErrorUnknown";
}

/* Like HIP 5: the "string" is the name. */
const char *hipGetErrorString(hipError_t error) {
  return hipGetErrorName(error);
}
