/*===- test/fake_cuda.c - A fake libcuda for the CUDA backend's tests ------===*
 *
 * Implements the driver functions the CUDA backend resolves, with results
 * the tests choose through environment variables:
 *   FAKE_CUDA_INIT               cuInit's result (default 0)
 *   FAKE_CUDA_DEVICES            device count (default 1)
 *   FAKE_CUDA_CC                 compute capability as major*10+minor (90)
 *   FAKE_CUDA_FUNC_MAX_THREADS   a function's max threads per block (1024)
 *   FAKE_CUDA_STATIC_SHARED      a function's static shared bytes (0)
 *   FAKE_CUDA_LAUNCH             cuLaunchKernel's result (0)
 *   FAKE_CUDA_ENCODE             cuTensorMapEncodeTiled's result (0)
 *   FAKE_CUDA_PUSH               cuCtxPushCurrent's result (0)
 * Device limits are an H100/H200's. Module images: FAKE_IMAGE_PREFIX loads;
 * "BADPTX" fails with CUDA_ERROR_INVALID_PTX and a JIT log; "NOBINARY" with
 * CUDA_ERROR_NO_BINARY_FOR_GPU; anything else with CUDA_ERROR_INVALID_IMAGE.
 * The entry name "missing_entry" is not found.
 *
 * cuTensorMapEncodeTiled records its arguments and writes a map whose first
 * 8 bytes are the address and whose other 120 are 0xA0 + the call's index.
 *
 * Built three times: complete; FAKE_CUDA_INCOMPLETE lacks two required
 * functions; FAKE_CUDA_MINIMAL lacks the optional ones (cuTensorMapEncodeTiled
 * among them).
 *
 *===---------------------------------------------------------------------===*/

#include "fake_drivers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct fake_module *CUmodule;
typedef struct fake_module *CUfunction;
typedef void *CUcontext;

struct fake_module {
  char image[64];
  char function[64];
};

static struct fake_driver_state state;
static int primary_context; /* its address is the primary context */
static CUcontext current;
static CUcontext stack[16];

struct fake_driver_state *fake_cuda_state(void) {
  return &state;
}

static int env_int(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUDA_INIT", 0);
}

CUresult cuDeviceGetCount(int *count) {
  *count = env_int("FAKE_CUDA_DEVICES", 1);
  return 0;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  int cc = env_int("FAKE_CUDA_CC", 90);
  switch (attribute) {
  case 1: /* max threads per block */
  case 2: /* max block x */
  case 3: /* max block y */
    *value = 1024;
    return 0;
  case 4: /* max block z */
    *value = 64;
    return 0;
  case 5: /* max grid x */
    *value = 2147483647;
    return 0;
  case 6: /* max grid y */
  case 7: /* max grid z */
    *value = 65535;
    return 0;
  case 8: /* shared memory per block without opting in */
    *value = 48 * 1024;
    return 0;
  case 16: /* multiprocessors */
    *value = 132;
    return 0;
  case 97: /* with opting in */
    *value = 227 * 1024;
    return 0;
  case 75:
    *value = cc / 10;
    return 0;
  case 76:
    *value = cc % 10;
    return 0;
  }
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, int device) {
  (void)device;
  *context = &primary_context;
  ++state.retains;
  return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  (void)device;
  ++state.releases;
  return 0;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return 0;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  int result = env_int("FAKE_CUDA_PUSH", 0);
  if (result)
    return result;
  stack[state.pushes - state.pops] = current;
  current = context;
  ++state.pushes;
  return 0;
}

CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  *context = current;
  ++state.pops;
  current = stack[state.pushes - state.pops];
  return 0;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned num_options, int *options, void **values) {
  const char *text = (const char *)image; /* a C string, like PTX */
  if (strncmp(text, FAKE_IMAGE_PREFIX, strlen(FAKE_IMAGE_PREFIX)) != 0) {
    if (strcmp(text, "BADPTX") == 0) {
      for (unsigned i = 0; i < num_options; ++i)
        if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
          strcpy((char *)values[i], "ptxas fatal: fake syntax error");
      return 218; /* CUDA_ERROR_INVALID_PTX */
    }
    return strcmp(text, "NOBINARY") == 0 ? 209 : 200;
  }
  struct fake_module *m = calloc(1, sizeof *m);
  strncpy(m->image, text, sizeof m->image - 1);
  strcpy(state.last_image, m->image);
  ++state.modules_loaded;
  *module = m;
  return 0;
}

CUresult cuModuleUnload(CUmodule module) {
  free(module);
  ++state.modules_unloaded;
  return 0;
}

CUresult cuFuncGetAttribute(int *value, int attribute, CUfunction function) {
  (void)function;
  if (attribute == 0)
    *value = env_int("FAKE_CUDA_FUNC_MAX_THREADS", 1024);
  else if (attribute == 1)
    *value = env_int("FAKE_CUDA_STATIC_SHARED", 0);
  else
    return 1;
  return 0;
}

CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value) {
  (void)function;
  if (attribute != 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    return 1;
  ++state.shared_opt_ins;
  state.last_opt_in = value;
  return 0;
}

#ifndef FAKE_CUDA_INCOMPLETE
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  if (strcmp(name, "missing_entry") == 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  strncpy(module->function, name, sizeof module->function - 1);
  *function = module;
  return 0;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra) {
  (void)extra;
  struct fake_launch *l = &state.last_launch;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  memcpy(l->grid, grid, sizeof grid);
  memcpy(l->block, block, sizeof block);
  l->shared = shared;
  l->stream = stream;
  for (int i = 0; i < state.num_params && i < 8; ++i)
    memcpy(&l->params[i], params[i], 8);
  for (int j = 0; j < state.num_maps && j < 4; ++j) {
    memcpy(l->maps[j], params[state.num_params + j], 128);
    l->map_addresses[j] = (uintptr_t)params[state.num_params + j];
  }
  l->current = (intptr_t)current;
  strcpy(l->function, f->function);
  ++state.launches;
  return env_int("FAKE_CUDA_LAUNCH", 0);
}
#endif

#ifndef FAKE_CUDA_MINIMAL
/* Fake device pointers are host memory (the tests pass host buffers). */
CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src,
                              size_t bytes, void *stream) {
  (void)stream;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return 0;
}

CUresult cuTensorMapEncodeTiled(void *map, int data_type, unsigned rank,
                                void *address, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box,
                                const unsigned *element_strides,
                                int interleave, int swizzle, int l2_promotion,
                                int oob_fill) {
  if (state.encodes < 8) {
    struct fake_tensor_map_call *c = &state.encode_calls[state.encodes];
    memset(c, 0, sizeof *c);
    c->data_type = data_type;
    c->rank = rank;
    c->address = (uintptr_t)address;
    for (unsigned i = 0; i < rank && i < 5; ++i) {
      c->dims[i] = dims[i];
      c->box[i] = box[i];
      c->element_strides[i] = element_strides[i];
      if (i > 0)
        c->strides[i - 1] = strides[i - 1];
    }
    c->interleave = interleave;
    c->swizzle = swizzle;
    c->l2_promotion = l2_promotion;
    c->oob_fill = oob_fill;
    c->map = (uintptr_t)map;
    c->current = (intptr_t)current;
  }
  int result = env_int("FAKE_CUDA_ENCODE", 0);
  if (result == 0 && !current)
    result = 201; /* CUDA_ERROR_INVALID_CONTEXT, as the real driver says */
  if (result == 0 && (uintptr_t)map % 64 != 0)
    result = 1; /* CUDA_ERROR_INVALID_VALUE: the driver's alignment rule */
  if (result == 0) {
    memset(map, 0xA0 + state.encodes, 128);
    memcpy(map, &address, sizeof address);
  }
  ++state.encodes;
  return result;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case 1:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return 0;
  case 100:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case 200:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    return 0;
  case 209:
    *name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    return 0;
  case 218:
    *name = "CUDA_ERROR_INVALID_PTX";
    return 0;
  case 400:
    *name = "CUDA_ERROR_INVALID_HANDLE";
    return 0;
  case 500:
    *name = "CUDA_ERROR_NOT_FOUND";
    return 0;
  case 700:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return 0;
  }
  return 1;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case 1:
    *text = "invalid argument";
    return 0;
  case 100:
    *text = "no CUDA-capable device is detected";
    return 0;
  case 400:
    *text = "invalid resource handle";
    return 0;
  case 700:
    *text = "an illegal memory access was encountered";
    return 0;
  }
  return 1;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  strncpy(name, "Fake GPU", (size_t)length);
  return 0;
}
#endif
