//===- core/device_limits.h - Checks against a GPU's limits -----*- C++ -*-===//
//
// A launch that breaks a device limit fails inside the driver with a code
// such as CUDA_ERROR_INVALID_VALUE that names neither the kernel nor the
// limit. So the GPU backends check launches here first, with messages that
// say which limit and which device.
//
// The block and shared memory of a kernel are fixed by its bundle, so they
// are checked once, when it is loaded; only the grid depends on the shapes of
// each launch. A kernel that breaks a limit still loads (the rest of its
// bundle stays usable); launching it fails with TESSEL_INVALID_ARGUMENT.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_DEVICE_LIMITS_H
#define TESSEL_RUNTIME_CORE_DEVICE_LIMITS_H

#include "tessel/runtime.h"

#include <cstdint>
#include <string>

namespace tessel::runtime {

struct DeviceLimits {
  uint32_t maxThreadsPerBlock = 0;
  uint32_t maxBlock[3] = {};
  uint32_t maxGrid[3] = {};
  /// The most shared memory (static + dynamic) one block may use, after any
  /// opt-in the backend performs.
  uint32_t maxSharedPerBlock = 0;
  /// Per axis, the most blocks x threads a grid may have; 0 for no limit.
  /// HSA dispatch packets count the grid in work-items, in 32 bits.
  uint64_t maxWorkItemsPerAxis = 0;
};

/// Why a kernel with this block and shared memory cannot run on `device` (a
/// label such as "CUDA device 0 (NVIDIA H200, sm_90)"); "" if it can.
/// `kernelMaxThreads` is the kernel's own threads-per-block limit (register
/// use can lower it below the device's), or 0 if unknown.
std::string checkBlockLimits(const DeviceLimits &limits,
                             const std::string &device, const uint32_t block[3],
                             uint32_t kernelMaxThreads, uint32_t dynamicShared,
                             uint32_t staticShared);

/// Null if `grid` (blocks per axis) of `block`-sized blocks fits `device`;
/// else TESSEL_INVALID_ARGUMENT naming the axis and the limit.
tessel_status checkGridLimits(const DeviceLimits &limits,
                              const std::string &device, const uint32_t grid[3],
                              const uint32_t block[3]);

/// The status of a failed launch call (`call`, e.g. "cuLaunchKernel"): the
/// caller's fault (TESSEL_INVALID_ARGUMENT) when the driver blamed the
/// stream, i.e. another device's or a destroyed one; otherwise the device's
/// own state, e.g. a fault left by an earlier kernel (TESSEL_UNAVAILABLE).
tessel_status launchFailure(const char *call, const std::string &label,
                            const std::string &error, bool callerError);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_DEVICE_LIMITS_H
