/*===- tessel/runtime.h - The Tessel runtime C API -----------------*- C -*-===*
 *
 * A thin C ABI that engines embed: open a device, load a kernel bundle made by
 * tessel-aot, look kernels up, launch them on caller-owned buffers.
 *
 * Conventions:
 *  - Every fallible call returns a tessel_status: NULL means success; anything
 *    else carries a code and a message and must be freed with
 *    tessel_status_free(). The runtime never aborts on bad input.
 *  - Handles are opaque. A bundle keeps its device alive until both are
 *    released; kernels are owned by their bundle.
 *  - Buffers are owned by the caller. On the host backend a "device pointer" is
 *    an ordinary pointer; on CUDA/HIP, a device allocation the caller made
 *    (cuMemAlloc, hipMalloc, a framework's allocator).
 *  - Loading and lookups are thread-safe; launches of one kernel from several
 *    threads are safe when they use distinct buffers.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/bundle_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status -------------------------------------------------------------===*/

typedef enum tessel_status_code {
  TESSEL_OK = 0,
  TESSEL_INVALID_ARGUMENT = 1, /* a caller-provided value breaks a constraint */
  TESSEL_NOT_FOUND = 2,        /* no such kernel, file or backend */
  TESSEL_CORRUPT_BUNDLE = 3,   /* the bundle failed validation */
  TESSEL_UNSUPPORTED = 4,      /* valid, but not supported here (target, version) */
  TESSEL_UNAVAILABLE = 5,      /* a driver or device is missing */
  TESSEL_INTERNAL = 6,         /* a bug in Tessel: please report it */
} tessel_status_code;

typedef struct tessel_status_t *tessel_status;

tessel_status_code tessel_status_get_code(tessel_status status);
/* The message lives as long as the status; "" for NULL (success). */
const char *tessel_status_message(tessel_status status);
void tessel_status_free(tessel_status status);
const char *tessel_status_code_name(tessel_status_code code);

/*===-- Devices ------------------------------------------------------------===*/

typedef struct tessel_device_t *tessel_device;

/* backend: "host" (always available), "cuda" or "hip". ordinal: device index
 * (for CUDA, in the driver's order, which honours CUDA_VISIBLE_DEVICES). */
tessel_status tessel_device_open(const char *backend, int ordinal,
                                 tessel_device *out_device);
void tessel_device_release(tessel_device device);
/* The bundle target this device prefers, e.g. "host", "sm90", "gfx942". */
const char *tessel_device_target(tessel_device device);
/* The bundle targets this device runs, most preferred first (index 0 is
 * tessel_device_target); NULL past the last. An sm_90 GPU runs "sm90", then
 * "sm80" (whose binaries are PTX, compiled by the driver when loaded). */
const char *tessel_device_target_at(tessel_device device, size_t index);

/*===-- Bundles ------------------------------------------------------------===*/

typedef struct tessel_bundle_t *tessel_bundle;
typedef struct tessel_kernel_t *tessel_kernel;

/* Validates the whole bundle (magic, version, checksum, bounds of every
 * offset and size, known targets, unique names) and loads, for each kernel
 * name, the kernel built for the device's most preferred target that the
 * bundle has. Fails if the bundle has no kernel for any of its targets. */
tessel_status tessel_bundle_load_file(tessel_device device, const char *path,
                                      tessel_bundle *out_bundle);
tessel_status tessel_bundle_load_memory(tessel_device device, const void *data,
                                        size_t size, tessel_bundle *out_bundle);
void tessel_bundle_release(tessel_bundle bundle);

/* The loaded kernels, one per name, in bundle order. */
size_t tessel_bundle_kernel_count(tessel_bundle bundle);
tessel_kernel tessel_bundle_kernel_at(tessel_bundle bundle, size_t index);

tessel_status tessel_bundle_find_kernel(tessel_bundle bundle, const char *name,
                                        tessel_kernel *out_kernel);

typedef struct tessel_param {
  const char *key;
  int64_t value;
} tessel_param;

/* The first kernel of this op (e.g. "tessel.prefill_attention"; dtype
 * TESSEL_DTYPE_INVALID for any) whose shape parameters include all of
 * `params`. */
tessel_status tessel_bundle_find_kernel_by_params(tessel_bundle bundle,
                                                  const char *op,
                                                  tessel_dtype dtype,
                                                  const tessel_param *params,
                                                  size_t num_params,
                                                  tessel_kernel *out_kernel);

/*===-- Kernel introspection -----------------------------------------------===*/

const char *tessel_kernel_name(tessel_kernel kernel);
const char *tessel_kernel_op(tessel_kernel kernel);
/* The bundle target of the binary that was loaded, e.g. "sm80". */
const char *tessel_kernel_target(tessel_kernel kernel);
tessel_dtype tessel_kernel_dtype(tessel_kernel kernel);
size_t tessel_kernel_num_args(tessel_kernel kernel);
const char *tessel_kernel_arg_name(tessel_kernel kernel, size_t index);
/* 1 if the kernel writes argument `index`, 0 if it only reads it (or there is
 * no such argument). */
int tessel_kernel_arg_is_output(tessel_kernel kernel, size_t index);
/* Returns 0 and sets *value if the kernel has this shape parameter. */
int tessel_kernel_param(tessel_kernel kernel, const char *key, int64_t *value);
/* The shape parameters in bundle order: the key of parameter `index`, with
 * its value in *value (if value is not NULL); NULL past the last. */
size_t tessel_kernel_num_params(tessel_kernel kernel);
const char *tessel_kernel_param_at(tessel_kernel kernel, size_t index,
                                   int64_t *value);

/*===-- Launch -------------------------------------------------------------===*/

/* A dense row-major buffer. */
typedef struct tessel_tensor {
  void *data;
  tessel_dtype dtype;
  int32_t rank;
  int64_t shape[TESSEL_BUNDLE_MAX_RANK];
} tessel_tensor;

/* Checks every tensor against the kernel's signature (count, dtype, rank,
 * static dims, the consistency of symbolic dims, alignment, null data) and
 * launches. `stream` is a CUstream/hipStream_t of the kernel's device (NULL:
 * the default stream); GPU launches are asynchronous, and the grid, block and
 * shared memory are checked against the device's limits first. The host
 * backend takes NULL only, and its launches are synchronous. */
tessel_status tessel_kernel_launch(tessel_kernel kernel,
                                   const tessel_tensor *args, size_t num_args,
                                   void *stream);

size_t tessel_dtype_size(tessel_dtype dtype);
const char *tessel_dtype_name(tessel_dtype dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_RUNTIME_H */
