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
};

struct fake_driver_state {
  int modules_loaded, modules_unloaded;
  /* The image of the last module loaded (up to its NUL for CUDA). */
  char last_image[64];
  int launches;
  /* How many params each launch records: set by the test. */
  int num_params;
  struct fake_launch last_launch;
  /* CUDA: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) calls. */
  int shared_opt_ins, last_opt_in;
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
