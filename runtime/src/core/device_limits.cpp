//===- core/device_limits.cpp - Launch checks against a GPU's limits ------===//

#include "device_limits.h"

#include "status.h"

#include "../support/format.h"

namespace tessel::runtime {

namespace {

constexpr char kAxis[] = "xyz";

} // namespace

std::string checkBlockLimits(const DeviceLimits &limits,
                             const std::string &device, const uint32_t block[3],
                             uint32_t kernelMaxThreads, uint32_t dynamicShared,
                             uint32_t staticShared) {
  for (int axis = 0; axis < 3; ++axis)
    if (block[axis] > limits.maxBlock[axis])
      return format("block %c is %u threads; %s allows at most %u", kAxis[axis],
                    block[axis], device.c_str(), limits.maxBlock[axis]);
  const uint64_t threads =
      uint64_t(block[0]) * uint64_t(block[1]) * uint64_t(block[2]);
  const bool kernelLowers =
      kernelMaxThreads && kernelMaxThreads < limits.maxThreadsPerBlock;
  const uint32_t maxThreads =
      kernelLowers ? kernelMaxThreads : limits.maxThreadsPerBlock;
  if (threads > maxThreads)
    return format(
        "block %ux%ux%u is %llu threads; %s allows at most %u "
        "threads per block%s",
        block[0], block[1], block[2], static_cast<unsigned long long>(threads),
        device.c_str(), maxThreads,
        kernelLowers ? format(" for this kernel (%u for the device; the "
                              "kernel's register use lowers it)",
                              limits.maxThreadsPerBlock)
                           .c_str()
                     : "");
  const uint64_t shared = uint64_t(dynamicShared) + staticShared;
  if (shared > limits.maxSharedPerBlock)
    return format("needs %llu bytes of shared memory per block (%u dynamic + "
                  "%u static); %s allows at most %u",
                  static_cast<unsigned long long>(shared), dynamicShared,
                  staticShared, device.c_str(), limits.maxSharedPerBlock);
  return std::string();
}

tessel_status checkGridLimits(const DeviceLimits &limits,
                              const std::string &device, const uint32_t grid[3],
                              const uint32_t block[3]) {
  for (int axis = 0; axis < 3; ++axis) {
    if (grid[axis] > limits.maxGrid[axis])
      return makeStatusf(
          TESSEL_INVALID_ARGUMENT, "grid %c is %u blocks; %s allows at most %u",
          kAxis[axis], grid[axis], device.c_str(), limits.maxGrid[axis]);
    const uint64_t items = uint64_t(grid[axis]) * block[axis];
    if (limits.maxWorkItemsPerAxis && items > limits.maxWorkItemsPerAxis)
      return makeStatusf(
          TESSEL_INVALID_ARGUMENT,
          "grid %c is %u blocks of %u threads = %llu "
          "work-items; %s allows at most %llu per axis",
          kAxis[axis], grid[axis], block[axis],
          static_cast<unsigned long long>(items), device.c_str(),
          static_cast<unsigned long long>(limits.maxWorkItemsPerAxis));
  }
  return nullptr;
}

} // namespace tessel::runtime

tessel_status tessel::runtime::launchFailure(const char *call,
                                             const std::string &label,
                                             const std::string &error,
                                             bool callerError) {
  return makeStatusf(callerError ? TESSEL_INVALID_ARGUMENT : TESSEL_UNAVAILABLE,
                     "%s on %s failed: %s%s", call, label.c_str(),
                     error.c_str(),
                     callerError ? " (is the stream one of this device's?)"
                                 : "");
}
