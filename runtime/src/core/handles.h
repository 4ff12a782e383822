//===- core/handles.h - What the opaque handles hold ------------*- C++ -*-===//
//
// Ownership: a device is reference counted (the caller's reference plus one
// per live bundle); a bundle owns its kernels; a kernel owns its backend
// handle. Handles are immutable after creation except for the device's
// reference count, which is why lookups and launches need no locks.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_HANDLES_H
#define TESSEL_RUNTIME_CORE_HANDLES_H

#include "backend.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct tessel_device_t {
  std::atomic<int> refs{1};
  std::unique_ptr<tessel::runtime::Backend> backend;
};

struct tessel_kernel_t {
  /// The kernel's signature. Its binaryOffset/binarySize point into bundle
  /// bytes that are gone once loading returns: do not read them.
  tessel::bundle::Kernel meta;
  std::unique_ptr<tessel::runtime::LoadedKernel> loaded;
  tessel::runtime::Backend *backend = nullptr;
};

struct tessel_bundle_t {
  tessel_device device = nullptr;
  /// The loaded kernels, one per name, in bundle order.
  std::vector<std::unique_ptr<tessel_kernel_t>> kernels;
  /// (name, target) of the kernels that were not loaded, so a failed lookup
  /// can say that a kernel exists, just not for this device.
  std::vector<std::pair<std::string, std::string>> otherTargets;
};

namespace tessel::runtime {

/// Takes one more reference to `device`.
void retainDevice(tessel_device device);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_HANDLES_H
