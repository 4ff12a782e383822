/*===- test/fake_drivers.h - State of the fake GPU drivers -----*- C -*-===*
 *
 * fake_cuda.c and fake_hip.c are stand-ins for libcuda and libamdhip64 that
 * the tests load through TESSEL_CUDA_LIBRARY / TESSEL_HIP_LIBRARY, so that
 * device open, target selection, the launch-limit checks and the calls the
 * backends make can be tested without a GPU. Their behaviour is set through
 * environment variables (read at each call; see each file) and what they saw
 * is recorded in this state, which the tests read through fake_*_state().
 *
 *===---------------------------------------------------------------------===*/
#ifndef TESSEL_TEST_FAKE_DRIVERS_H
#define TESSEL_TEST_FAKE_DRIVERS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Module images the fakes accept start with this; the rest is recorded. */
#define FAKE_IMAGE_PREFIX "FAKE:"

struct fake_launch {
  unsigned grid[3], block[3], shared;
  void *stream;
  /* The values params[0 .. num_params) point to, all 8 bytes wide. */
  uint64_t params[8];
  /* The device (HIP) or context (CUDA, as an integer) current at launch. */
  intptr_t current;
  /* The name the launched function was looked up by. */
  char function[64];
  /* CUDA: the 128 bytes params[num_params + j] point to, j < num_maps, and
   * where they were. */
  uint8_t maps[4][128];
  uintptr_t map_addresses[4];
};

/* CUDA: the arguments of one cuTensorMapEncodeTiled call. */
struct fake_tensor_map_call {
  int data_type;
  unsigned rank;
  uintptr_t address;
  uint64_t dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  /* Where it was asked to write the 128-byte map. */
  uintptr_t map;
  /* The context current during the call (0: none; the real driver then
   * answers CUDA_ERROR_INVALID_CONTEXT). */
  intptr_t current;
};

struct fake_driver_state {
  int modules_loaded, modules_unloaded;
  /* The image of the last module loaded (up to its NUL for CUDA). */
  char last_image[64];
  int launches;
  /* How many params each launch records: set by the test; then num_maps
   * 128-byte tensor maps after them (CUDA). */
  int num_params, num_maps;
  struct fake_launch last_launch;
  /* CUDA: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) calls. */
  int shared_opt_ins, last_opt_in;
  /* CUDA: cuTensorMapEncodeTiled calls (the first 8 recorded). */
  int encodes;
  struct fake_tensor_map_call encode_calls[8];
  /* CUDA: primary contexts retained and released; pushes and pops. */
  int retains, releases, pushes, pops;
  /* HIP: hipSetDevice calls, and the current device. */
  int set_device_calls, current_device;
};

struct fake_driver_state *fake_cuda_state(void);
struct fake_driver_state *fake_hip_state(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_TEST_FAKE_DRIVERS_H */
