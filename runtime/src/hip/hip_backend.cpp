//===- hip/hip_backend.cpp - AMD GPUs through the HIP module API ----------===//
//
// The HIP runtime is dlopen'ed (libamdhip64.so, then the versioned names of
// ROCm 7, 6 and 5, then /opt/rocm/lib; or the path in TESSEL_HIP_LIBRARY)
// when a device is opened; nothing links against it.
//
// HIP has no explicit contexts: modules load onto, and kernels launch from,
// the calling thread's current device. So every call that touches a device
// makes it current for its duration and restores the caller's choice.
//
// Targets by processor (gcnArchName without its feature suffix): gfx942 and
// gfx950 run the bundle target of the same name; an MI355X cannot run gfx942
// code objects, so there is no fallback. No Tessel AMD kernel has run on
// hardware yet: this backend is exercised against fake and device-less HIP
// runtimes only (see docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "hip_driver.h"

#include "../core/backend.h"
#include "../core/device_limits.h"
#include "../core/driver_library.h"
#include "../core/status.h"
#include "../support/format.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>

using namespace tessel;
using namespace tessel::runtime;
using namespace tessel::runtime::hip;

namespace {

const DriverSpec kHipSpec = {
    "HIP runtime",
    "TESSEL_HIP_LIBRARY",
    {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
     "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"},
    "is ROCm installed?",
};

/// The symbol table: which HIP functions the backend needs.
tessel_status resolveDriver(const DriverLibrary &library, HipDriver &hip) {
  SymbolResolver r(library);
  r.required(hip.hipInit, "hipInit");
  r.required(hip.hipGetDeviceCount, "hipGetDeviceCount");
  r.required(hip.hipGetDevice, "hipGetDevice");
  r.required(hip.hipSetDevice, "hipSetDevice");
  r.required(hip.hipGetDeviceProperties, "hipGetDeviceProperties");
  r.required(hip.hipDeviceGetAttribute, "hipDeviceGetAttribute");
  r.required(hip.hipModuleLoadData, "hipModuleLoadData");
  r.required(hip.hipModuleUnload, "hipModuleUnload");
  r.required(hip.hipModuleGetFunction, "hipModuleGetFunction");
  r.required(hip.hipFuncGetAttribute, "hipFuncGetAttribute");
  r.required(hip.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  r.optional(hip.hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync");
  r.optional(hip.hipGetErrorName, "hipGetErrorName");
  r.optional(hip.hipGetErrorString, "hipGetErrorString");
  return r.finish(kHipSpec);
}

/// "hipErrorNoDevice (100)", with the description where HIP has one that
/// differs from the name (HIP 5 returns the name for both).
std::string errorText(const HipDriver &hip, hipError_t error) {
  const char *name = hip.hipGetErrorName ? hip.hipGetErrorName(error) : nullptr;
  const char *text =
      hip.hipGetErrorString ? hip.hipGetErrorString(error) : nullptr;
  if (!name)
    return format("hipError_t %d", error);
  if (!text || std::strcmp(text, name) == 0)
    return format("%s (%d)", name, error);
  return format("%s (%d): %s", name, error, text);
}

/// Makes `device` the calling thread's current device for the scope.
class DeviceScope {
public:
  DeviceScope(const HipDriver &hip, int device) : hip(hip) {
    if (hip.hipGetDevice(&previous) == hipSuccess && previous == device)
      return;
    result = hip.hipSetDevice(device);
    restore = result == hipSuccess && previous >= 0;
  }
  ~DeviceScope() {
    if (restore)
      hip.hipSetDevice(previous);
  }

  /// Why the device could not be made current; hipSuccess if it is.
  hipError_t result = hipSuccess;

private:
  const HipDriver &hip;
  int previous = -1;
  bool restore = false;
};

class HipBackend;

class HipKernel final : public LoadedKernel {
public:
  HipKernel(const HipBackend &backend, std::vector<uint8_t> image)
      : backend(backend), image(std::move(image)) {}
  ~HipKernel() override;

  const HipBackend &backend;
  /// HIP keeps a pointer to the code object it was given for the module's
  /// lifetime (FatBinaryInfo::image_ in ROCm's clr), so the bytes stay here.
  const std::vector<uint8_t> image;
  hipModule_t module = nullptr;
  hipFunction_t function = nullptr;
  /// Why the kernel's block or LDS cannot launch on this device; "" if it
  /// can.
  std::string unlaunchable;
};

class HipBackend final : public Backend {
public:
  HipBackend(HipDriver hip, int ordinal, std::vector<std::string> targets,
             DeviceLimits limits, uint32_t computeUnits, std::string label)
      : hip(hip), ordinal(ordinal), targets_(std::move(targets)),
        limits(limits), computeUnits_(computeUnits), label(std::move(label)) {}

  const char *name() const override { return "hip"; }
  const std::vector<std::string> &targets() const override { return targets_; }
  tessel_status loadKernel(const bundle::Kernel &kernel,
                           bundle::ByteSpan binary,
                           std::unique_ptr<LoadedKernel> &out) override;
  tessel_status launch(LoadedKernel &kernel, void **params,
                       const uint32_t grid[3], const uint32_t block[3],
                       uint32_t sharedBytes, void *stream) override;
  uint32_t computeUnits() const override { return computeUnits_; }
  tessel_status copyToDevice(void *dst, const void *src, size_t bytes,
                             void *stream) override;

  const HipDriver hip;
  const int ordinal;

private:
  tessel_status deviceError(hipError_t result) const {
    return makeStatusf(TESSEL_UNAVAILABLE, "cannot make %s current: %s",
                       label.c_str(), errorText(hip, result).c_str());
  }

  const std::vector<std::string> targets_;
  const DeviceLimits limits;
  const uint32_t computeUnits_;
  /// "HIP device 0 (AMD Instinct MI300X, gfx942)", for messages.
  const std::string label;
};

HipKernel::~HipKernel() {
  if (!module)
    return;
  DeviceScope scope(backend.hip, backend.ordinal);
  backend.hip.hipModuleUnload(module);
}

tessel_status HipBackend::loadKernel(const bundle::Kernel &kernel,
                                     bundle::ByteSpan binary,
                                     std::unique_ptr<LoadedKernel> &out) {
  DeviceScope scope(hip, ordinal);
  if (scope.result != hipSuccess)
    return deviceError(scope.result);
  auto loaded = std::make_unique<HipKernel>(
      *this, std::vector<uint8_t>(binary.data, binary.data + binary.size));
  hipError_t result =
      hip.hipModuleLoadData(&loaded->module, loaded->image.data());
  if (result != hipSuccess) {
    loaded->module = nullptr;
    return makeStatusf(
        TESSEL_UNAVAILABLE, "cannot load the %s code object on %s: %s",
        kernel.target.c_str(), label.c_str(), errorText(hip, result).c_str());
  }
  result = hip.hipModuleGetFunction(&loaded->function, loaded->module,
                                    kernel.entry.c_str());
  if (result != hipSuccess)
    return makeStatusf(result == hipErrorNotFound ? TESSEL_CORRUPT_BUNDLE
                                                  : TESSEL_UNAVAILABLE,
                       "entry symbol '%s' not found in the %s code object: %s",
                       kernel.entry.c_str(), kernel.target.c_str(),
                       errorText(hip, result).c_str());
  // The kernel's own limits refine the device's. Some HIP versions do not
  // report them for module functions; the device limits still apply then.
  int maxThreads = 0, staticShared = 0;
  if (hip.hipFuncGetAttribute(&maxThreads,
                              HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                              loaded->function) != hipSuccess)
    maxThreads = 0;
  if (hip.hipFuncGetAttribute(&staticShared,
                              HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                              loaded->function) != hipSuccess)
    staticShared = 0;
  loaded->unlaunchable = checkBlockLimits(
      limits, label, kernel.block.data(),
      static_cast<uint32_t>(maxThreads > 0 ? maxThreads : 0),
      kernel.sharedBytes,
      static_cast<uint32_t>(staticShared > 0 ? staticShared : 0));
  out = std::move(loaded);
  return nullptr;
}

tessel_status HipBackend::launch(LoadedKernel &loaded, void **params,
                                 const uint32_t grid[3],
                                 const uint32_t block[3], uint32_t sharedBytes,
                                 void *stream) {
  auto &kernel = static_cast<HipKernel &>(loaded);
  if (!kernel.unlaunchable.empty())
    return makeStatus(TESSEL_INVALID_ARGUMENT, kernel.unlaunchable);
  if (tessel_status status = checkGridLimits(limits, label, grid, block))
    return status;
  DeviceScope scope(hip, ordinal);
  if (scope.result != hipSuccess)
    return deviceError(scope.result);
  hipError_t result = hip.hipModuleLaunchKernel(
      kernel.function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
      sharedBytes, static_cast<hipStream_t>(stream), params, nullptr);
  if (result == hipSuccess)
    return nullptr;
  bool callerError = result == hipErrorInvalidHandle ||
                     result == hipErrorInvalidContext ||
                     result == hipErrorInvalidValue;
  return launchFailure("hipModuleLaunchKernel", label, errorText(hip, result),
                       callerError);
}

tessel_status HipBackend::copyToDevice(void *dst, const void *src,
                                       size_t bytes, void *stream) {
  if (!hip.hipMemcpyHtoDAsync)
    return makeStatus(TESSEL_UNAVAILABLE,
                      "the HIP runtime lacks hipMemcpyHtoDAsync");
  DeviceScope scope(hip, ordinal);
  if (scope.result != hipSuccess)
    return deviceError(scope.result);
  hipError_t result = hip.hipMemcpyHtoDAsync(
      dst, const_cast<void *>(src), bytes, static_cast<hipStream_t>(stream));
  if (result == hipSuccess)
    return nullptr;
  return makeStatusf(TESSEL_UNAVAILABLE,
                     "hipMemcpyHtoDAsync of %zu bytes to %p on %s failed: %s",
                     bytes, dst, label.c_str(), errorText(hip, result).c_str());
}

} // namespace

tessel_status tessel::runtime::createHipBackend(int ordinal,
                                                std::unique_ptr<Backend> &out) {
  DriverLibrary library;
  if (tessel_status status = openDriverLibrary(kHipSpec, library))
    return status;
  HipDriver hip = {};
  if (tessel_status status = resolveDriver(library, hip)) {
    ::dlclose(library.handle);
    return status;
  }
  // From here on the runtime stays loaded (see core/driver_library.h).
  // HIP 5 fails hipInit on a machine without a GPU; the device count says
  // why more plainly, so it is asked first.
  hipError_t init = hip.hipInit(0);
  int count = 0;
  hipError_t result = hip.hipGetDeviceCount(&count);
  if (result == hipErrorNoDevice || (result == hipSuccess && count <= 0))
    return makeStatusf(
        TESSEL_UNAVAILABLE,
        "no AMD GPU found (HIP runtime %s): hipGetDeviceCount: %s%s",
        library.path.c_str(),
        result == hipSuccess ? "0 devices" : errorText(hip, result).c_str(),
        init == hipSuccess ? ""
                           : ("; hipInit: " + errorText(hip, init)).c_str());
  if (result != hipSuccess)
    return makeStatusf(TESSEL_UNAVAILABLE, "hipGetDeviceCount failed: %s",
                       errorText(hip, result).c_str());
  if (init != hipSuccess)
    return makeStatusf(TESSEL_UNAVAILABLE, "hipInit failed: %s",
                       errorText(hip, init).c_str());
  if (ordinal >= count)
    return makeStatusf(TESSEL_NOT_FOUND,
                       "HIP device ordinal %d is out of range: HIP reports %d "
                       "device%s (ordinals 0 to %d)",
                       ordinal, count, count == 1 ? "" : "s", count - 1);

  alignas(8) unsigned char buffer[kHipDevicePropBytes] = {};
  if ((result = hip.hipGetDeviceProperties(buffer, ordinal)) != hipSuccess)
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "hipGetDeviceProperties(%d) failed: %s", ordinal,
                       errorText(hip, result).c_str());
  HipDevicePropPrefix props;
  std::memcpy(&props, buffer, sizeof props);
  props.name[sizeof props.name - 1] = 0;
  props.gcnArchName[sizeof props.gcnArchName - 1] = 0;
  // "gfx942:sramecc+:xnack-" -> "gfx942": the features do not change which
  // code objects Tessel builds.
  std::string processor(props.gcnArchName,
                        std::strcspn(props.gcnArchName, ":"));
  std::string label = format(
      "HIP device %d (%s%s%s)", ordinal, props.name, *props.name ? ", " : "",
      processor.empty() ? "unknown architecture" : processor.c_str());
  if (processor != "gfx942" && processor != "gfx950")
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "%s is not supported: Tessel builds AMD kernels for "
                       "gfx942 and gfx950 only",
                       label.c_str());

  DeviceLimits limits;
  const char *failed = nullptr;
  auto get = [&](hipDeviceAttribute_t attribute, const char *what) {
    int value = 0;
    if (!failed && (result = hip.hipDeviceGetAttribute(&value, attribute,
                                                       ordinal)) != hipSuccess)
      failed = what;
    return value > 0 ? static_cast<uint32_t>(value) : 0u;
  };
  limits.maxThreadsPerBlock =
      get(hipDeviceAttributeMaxThreadsPerBlock, "max threads per block");
  for (int axis = 0; axis < 3; ++axis) {
    limits.maxBlock[axis] =
        get(hipDeviceAttributeMaxBlockDimX + axis, "max block dim");
    limits.maxGrid[axis] =
        get(hipDeviceAttributeMaxGridDimX + axis, "max grid dim");
  }
  limits.maxSharedPerBlock =
      get(hipDeviceAttributeMaxSharedMemoryPerBlock, "max shared memory");
  limits.maxWorkItemsPerAxis = UINT32_MAX;
  if (failed)
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "cannot read the %s attribute of %s: %s", failed,
                       label.c_str(), errorText(hip, result).c_str());
  out = std::make_unique<HipBackend>(hip, ordinal,
                                     std::vector<std::string>{processor},
                                     limits,
                                     static_cast<uint32_t>(std::max(
                                         1, props.multiProcessorCount)),
                                     std::move(label));
  return nullptr;
}
