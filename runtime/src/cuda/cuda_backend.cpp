//===- cuda/cuda_backend.cpp - NVIDIA GPUs through the CUDA driver API ----===//
//
// The driver is dlopen'ed (libcuda.so.1, then libcuda.so, or the path in
// TESSEL_CUDA_LIBRARY) when a device is opened; nothing links against it.
// Each device uses its primary context, the one the CUDA runtime and PyTorch
// use too, so streams and allocations of those libraries work here as is.
//
// Targets by compute capability: 9.0 runs "sm90a" (wgmma/TMA kernels; sm_90a
// code runs on 9.0 only, not on later 9.x), then "sm90" cubins, else the
// "sm80" kernel, whose binary is PTX that the driver compiles when it is
// loaded; other 9.x run "sm90", then "sm80"; 8.x and 10.0 and newer run
// "sm80" (a cubin runs only on its own major version, PTX on every later
// one). Older GPUs are not supported.
//
//===----------------------------------------------------------------------===//

#include "cuda_driver.h"

#include "../core/backend.h"
#include "../core/device_limits.h"
#include "../core/driver_library.h"
#include "../core/status.h"
#include "../support/format.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <dlfcn.h>

using namespace tessel;
using namespace tessel::runtime;
using namespace tessel::runtime::cuda;

namespace {

const DriverSpec kCudaSpec = {
    "CUDA driver",
    "TESSEL_CUDA_LIBRARY",
    {"libcuda.so.1", "libcuda.so"},
    "is the NVIDIA driver installed?",
};

/// The symbol table: which driver functions the backend needs.
tessel_status resolveDriver(const DriverLibrary &library, CudaDriver &cu) {
  SymbolResolver r(library);
  r.required(cu.cuInit, "cuInit");
  r.required(cu.cuDeviceGetCount, "cuDeviceGetCount");
  r.required(cu.cuDeviceGet, "cuDeviceGet");
  r.required(cu.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  r.required(cu.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  r.required(cu.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  r.required(cu.cuCtxGetCurrent, "cuCtxGetCurrent");
  r.required(cu.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
  r.required(cu.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  r.required(cu.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  r.required(cu.cuModuleUnload, "cuModuleUnload");
  r.required(cu.cuModuleGetFunction, "cuModuleGetFunction");
  r.required(cu.cuFuncGetAttribute, "cuFuncGetAttribute");
  r.required(cu.cuFuncSetAttribute, "cuFuncSetAttribute");
  r.required(cu.cuLaunchKernel, "cuLaunchKernel");
  r.optional(cu.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  r.optional(cu.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  r.optional(cu.cuGetErrorName, "cuGetErrorName");
  r.optional(cu.cuGetErrorString, "cuGetErrorString");
  r.optional(cu.cuDeviceGetName, "cuDeviceGetName");
  return r.finish(kCudaSpec);
}

/// "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected", or
/// "CUresult 100" where the driver cannot name it.
std::string errorText(const CudaDriver &cu, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (cu.cuGetErrorName && cu.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (cu.cuGetErrorString && cu.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (!name)
    return format("CUresult %d", result);
  return text ? format("%s (%d): %s", name, result, text)
              : format("%s (%d)", name, result);
}

/// Makes `context` current for the scope, unless it already is (the usual
/// case when the caller uses the CUDA runtime or PyTorch on this device).
class ContextScope {
public:
  ContextScope(const CudaDriver &cu, CUcontext context) : cu(cu) {
    CUcontext current = nullptr;
    if (cu.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)
      return;
    result = cu.cuCtxPushCurrent(context);
    pushed = result == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext popped;
    if (pushed)
      cu.cuCtxPopCurrent(&popped);
  }

  /// Why the context could not be made current; CUDA_SUCCESS if it is.
  CUresult result = CUDA_SUCCESS;

private:
  const CudaDriver &cu;
  bool pushed = false;
};

class CudaBackend;

class CudaKernel final : public LoadedKernel {
public:
  CudaKernel(const CudaBackend &backend, CUmodule module, CUfunction function,
             std::string unlaunchable)
      : backend(backend), module(module), function(function),
        unlaunchable(std::move(unlaunchable)) {}
  ~CudaKernel() override;

  const CudaBackend &backend;
  const CUmodule module;
  const CUfunction function;
  /// Why the kernel's block or shared memory cannot launch on this device;
  /// "" if it can.
  const std::string unlaunchable;
};

class CudaBackend final : public Backend {
public:
  CudaBackend(CudaDriver cu, CUdevice device, CUcontext context,
              std::vector<std::string> targets, DeviceLimits limits,
              uint32_t defaultShared, uint32_t multiprocessors,
              std::string label)
      : cu(cu), device(device), context(context), targets_(std::move(targets)),
        limits(limits), defaultShared(defaultShared),
        multiprocessors(multiprocessors), label(std::move(label)) {}
  ~CudaBackend() override { cu.cuDevicePrimaryCtxRelease(device); }

  const char *name() const override { return "cuda"; }
  const std::vector<std::string> &targets() const override { return targets_; }
  tessel_status loadKernel(const bundle::Kernel &kernel,
                           bundle::ByteSpan binary,
                           std::unique_ptr<LoadedKernel> &out) override;
  tessel_status launch(LoadedKernel &kernel, void **params,
                       const uint32_t grid[3], const uint32_t block[3],
                       uint32_t sharedBytes, void *stream) override;
  tessel_status encodeTensorMap(const TensorMapRequest &request,
                                void *out) override;
  uint32_t computeUnits() const override { return multiprocessors; }
  tessel_status copyToDevice(void *dst, const void *src, size_t bytes,
                             void *stream) override;

  const CudaDriver cu;
  const CUdevice device;
  const CUcontext context;

private:
  /// Why `scope` could not make this device's context current; null if it
  /// did.
  tessel_status contextError(const ContextScope &scope) const {
    if (scope.result == CUDA_SUCCESS)
      return nullptr;
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "cannot make the context of %s current: %s",
                       label.c_str(), errorText(cu, scope.result).c_str());
  }

  /// Checks the kernel against the device and opts in to large dynamic
  /// shared memory. Returns a status only for driver failures; a kernel that
  /// cannot launch here gets its reason in `unlaunchable`.
  tessel_status prepareFunction(const bundle::Kernel &kernel,
                                CUfunction function, std::string &unlaunchable);

  const std::vector<std::string> targets_;
  const DeviceLimits limits;
  /// Shared memory a block may use without opting in (48 KiB so far).
  const uint32_t defaultShared;
  const uint32_t multiprocessors;
  /// "CUDA device 0 (NVIDIA H200, sm_90)", for messages.
  const std::string label;
};

CudaKernel::~CudaKernel() {
  ContextScope scope(backend.cu, backend.context);
  backend.cu.cuModuleUnload(module);
}

tessel_status CudaBackend::loadKernel(const bundle::Kernel &kernel,
                                      bundle::ByteSpan binary,
                                      std::unique_ptr<LoadedKernel> &out) {
  ContextScope scope(cu, context);
  if (tessel_status status = contextError(scope))
    return status;
  // The driver reads PTX as a NUL-terminated string; the bundle stores the
  // text without the NUL. Cubins and fatbins are ELF-framed and unaffected.
  std::vector<uint8_t> image(binary.data, binary.data + binary.size);
  if (image.back() != 0)
    image.push_back(0);
  char jitLog[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {jitLog, reinterpret_cast<void *>(sizeof jitLog)};
  CUmodule module = nullptr;
  CUresult result =
      cu.cuModuleLoadDataEx(&module, image.data(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    jitLog[sizeof jitLog - 1] = 0;
    size_t n = std::strlen(jitLog);
    while (n && std::isspace(static_cast<unsigned char>(jitLog[n - 1])))
      jitLog[--n] = 0; // ptxas ends its log with a newline
    std::string message =
        format("cannot load the %s binary on %s: %s", kernel.target.c_str(),
               label.c_str(), errorText(cu, result).c_str());
    if (result == CUDA_ERROR_NO_BINARY_FOR_GPU)
      message += format(" (a cubin runs only on its own GPU generation; to "
                        "run on %s, the %s kernel must be PTX)",
                        label.c_str(), kernel.target.c_str());
    if (*jitLog)
      message += format("; JIT log: %s", jitLog);
    return makeStatus(TESSEL_UNAVAILABLE, std::move(message));
  }
  CUfunction function = nullptr;
  result = cu.cuModuleGetFunction(&function, module, kernel.entry.c_str());
  std::string unlaunchable;
  tessel_status status = nullptr;
  if (result != CUDA_SUCCESS)
    status = makeStatusf(result == CUDA_ERROR_NOT_FOUND ? TESSEL_CORRUPT_BUNDLE
                                                        : TESSEL_UNAVAILABLE,
                         "entry symbol '%s' not found in the %s binary: %s",
                         kernel.entry.c_str(), kernel.target.c_str(),
                         errorText(cu, result).c_str());
  else
    status = prepareFunction(kernel, function, unlaunchable);
  if (status) {
    cu.cuModuleUnload(module);
    return status;
  }
  out = std::make_unique<CudaKernel>(*this, module, function,
                                     std::move(unlaunchable));
  return nullptr;
}

tessel_status CudaBackend::prepareFunction(const bundle::Kernel &kernel,
                                           CUfunction function,
                                           std::string &unlaunchable) {
  int maxThreads = 0, staticShared = 0;
  CUresult result = cu.cuFuncGetAttribute(
      &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
  if (result == CUDA_SUCCESS)
    result = cu.cuFuncGetAttribute(
        &staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
  if (result != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE, "cuFuncGetAttribute failed: %s",
                       errorText(cu, result).c_str());
  unlaunchable = checkBlockLimits(
      limits, label, kernel.block.data(), static_cast<uint32_t>(maxThreads),
      kernel.sharedBytes, static_cast<uint32_t>(staticShared));
  // Past the default per-block budget, a kernel must opt in to its dynamic
  // shared memory, or every launch fails with CUDA_ERROR_INVALID_VALUE.
  if (!unlaunchable.empty() ||
      uint64_t(kernel.sharedBytes) + uint32_t(staticShared) <= defaultShared)
    return nullptr;
  result = cu.cuFuncSetAttribute(
      function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
      static_cast<int>(kernel.sharedBytes));
  if (result != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "cannot opt in to %u bytes of dynamic shared memory on "
                       "%s: %s",
                       kernel.sharedBytes, label.c_str(),
                       errorText(cu, result).c_str());
  return nullptr;
}

tessel_status CudaBackend::launch(LoadedKernel &loaded, void **params,
                                  const uint32_t grid[3],
                                  const uint32_t block[3], uint32_t sharedBytes,
                                  void *stream) {
  auto &kernel = static_cast<CudaKernel &>(loaded);
  if (!kernel.unlaunchable.empty())
    return makeStatus(TESSEL_INVALID_ARGUMENT, kernel.unlaunchable);
  if (tessel_status status = checkGridLimits(limits, label, grid, block))
    return status;
  ContextScope scope(cu, context);
  if (tessel_status status = contextError(scope))
    return status;
  CUresult result = cu.cuLaunchKernel(
      kernel.function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
      sharedBytes, static_cast<CUstream>(stream), params, nullptr);
  if (result == CUDA_SUCCESS)
    return nullptr;
  bool callerError = result == CUDA_ERROR_INVALID_HANDLE ||
                     result == CUDA_ERROR_INVALID_CONTEXT ||
                     result == CUDA_ERROR_INVALID_VALUE;
  return launchFailure("cuLaunchKernel", label, errorText(cu, result),
                       callerError);
}

/// The CUtensorMapDataType of an element type; -1 (which the driver
/// rejects) for none, which the core never asks for.
CUtensorMapDataType tensorMapDataType(tessel_dtype dtype) {
  switch (dtype) {
  case TESSEL_DTYPE_F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case TESSEL_DTYPE_F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case TESSEL_DTYPE_BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case TESSEL_DTYPE_I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case TESSEL_DTYPE_I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case TESSEL_DTYPE_INVALID:
    break;
  }
  return -1;
}

/// "[64, 128]", for messages.
template <typename T> std::string listOf(const T *values, size_t count) {
  std::string out = "[";
  for (size_t i = 0; i < count; ++i)
    out += format("%s%llu", i ? ", " : "",
                  static_cast<unsigned long long>(values[i]));
  return out + "]";
}

tessel_status CudaBackend::encodeTensorMap(const TensorMapRequest &r,
                                           void *out) {
  // Checked per launch, not at load: a driver without it still runs every
  // kernel that takes no map.
  if (!cu.cuTensorMapEncodeTiled)
    return makeStatus(TESSEL_UNAVAILABLE,
                      "the CUDA driver lacks cuTensorMapEncodeTiled (CUDA "
                      "12.0 or newer has it), which kernels with TMA tensor "
                      "maps need");
  // A host-side encoding (no stream, no synchronisation), but the driver
  // wants a current context: without one an H200 with driver 580 answers
  // CUDA_ERROR_INVALID_CONTEXT.
  ContextScope scope(cu, context);
  if (tessel_status status = contextError(scope))
    return status;
  const cuuint32_t elementStrides[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK] = {
      1, 1, 1, 1, 1};
  CUresult result = cu.cuTensorMapEncodeTiled(
      static_cast<CUtensorMap *>(out), tensorMapDataType(r.dtype), r.rank,
      r.address, r.dims, r.strides, r.box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, r.swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result == CUDA_SUCCESS)
    return nullptr;
  return makeStatusf(TESSEL_INVALID_ARGUMENT,
                     "cuTensorMapEncodeTiled(%s at %p, dims %s, strides %s, "
                     "box %s, swizzle %u) on %s failed: %s",
                     bundle::dtypeName(r.dtype), r.address,
                     listOf(r.dims, r.rank).c_str(),
                     listOf(r.strides, r.rank - 1).c_str(),
                     listOf(r.box, r.rank).c_str(), r.swizzle, label.c_str(),
                     errorText(cu, result).c_str());
}

tessel_status CudaBackend::copyToDevice(void *dst, const void *src,
                                        size_t bytes, void *stream) {
  if (!cu.cuMemcpyHtoDAsync)
    return makeStatus(TESSEL_UNAVAILABLE,
                      "the CUDA driver lacks cuMemcpyHtoDAsync_v2");
  ContextScope scope(cu, context);
  if (tessel_status status = contextError(scope))
    return status;
  CUresult result = cu.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                         src, bytes,
                                         static_cast<CUstream>(stream));
  if (result == CUDA_SUCCESS)
    return nullptr;
  return makeStatusf(result == CUDA_ERROR_INVALID_VALUE ? TESSEL_INVALID_ARGUMENT
                                                        : TESSEL_UNAVAILABLE,
                     "cuMemcpyHtoDAsync of %zu bytes to %p on %s failed: %s",
                     bytes, dst, label.c_str(), errorText(cu, result).c_str());
}

/// Reads the device attributes the backend needs, in one place so that a
/// failure names the attribute.
struct AttributeReader {
  const CudaDriver &cu;
  CUdevice device;
  CUresult result = CUDA_SUCCESS;
  const char *failed = nullptr;

  uint32_t get(CUdevice_attribute attribute, const char *name) {
    int value = 0;
    if (result == CUDA_SUCCESS) {
      result = cu.cuDeviceGetAttribute(&value, attribute, device);
      if (result != CUDA_SUCCESS)
        failed = name;
    }
    return value > 0 ? static_cast<uint32_t>(value) : 0;
  }
};

/// The bundle targets of a GPU of compute capability major.minor, most
/// preferred first; empty if Tessel has none for it.
std::vector<std::string> targetsFor(uint32_t major, uint32_t minor) {
  if (major == 9 && minor == 0)
    return {"sm90a", "sm90", "sm80"};
  if (major == 9)
    return {"sm90", "sm80"};
  if (major >= 8)
    return {"sm80"};
  return {};
}

} // namespace

tessel_status
tessel::runtime::createCudaBackend(int ordinal, std::unique_ptr<Backend> &out) {
  DriverLibrary library;
  if (tessel_status status = openDriverLibrary(kCudaSpec, library))
    return status;
  CudaDriver cu = {};
  if (tessel_status status = resolveDriver(library, cu)) {
    ::dlclose(library.handle);
    return status;
  }
  // From here on the driver stays loaded (see core/driver_library.h).
  CUresult result = cu.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    return makeStatusf(TESSEL_UNAVAILABLE, "no NVIDIA GPU found: cuInit: %s",
                       errorText(cu, result).c_str());
  if (result != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE, "cuInit failed (driver %s): %s",
                       library.path.c_str(), errorText(cu, result).c_str());
  int count = 0;
  if ((result = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE, "cuDeviceGetCount failed: %s",
                       errorText(cu, result).c_str());
  if (count <= 0)
    return makeStatus(TESSEL_UNAVAILABLE,
                      "no NVIDIA GPU found: the CUDA driver reports 0 devices "
                      "(is CUDA_VISIBLE_DEVICES empty?)");
  if (ordinal >= count)
    return makeStatusf(TESSEL_NOT_FOUND,
                       "CUDA device ordinal %d is out of range: the driver "
                       "reports %d device%s (ordinals 0 to %d)",
                       ordinal, count, count == 1 ? "" : "s", count - 1);
  CUdevice device = 0;
  if ((result = cu.cuDeviceGet(&device, ordinal)) != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE, "cuDeviceGet(%d) failed: %s",
                       ordinal, errorText(cu, result).c_str());

  AttributeReader attr{cu, device};
  uint32_t major =
      attr.get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute major");
  uint32_t minor =
      attr.get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute minor");
  DeviceLimits limits;
  limits.maxThreadsPerBlock =
      attr.get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads");
  for (int axis = 0; axis < 3; ++axis) {
    limits.maxBlock[axis] =
        attr.get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + axis, "max block dim");
    limits.maxGrid[axis] =
        attr.get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + axis, "max grid dim");
  }
  uint32_t defaultShared = attr.get(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "max shared memory");
  limits.maxSharedPerBlock =
      attr.get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
               "max opt-in shared memory");
  uint32_t multiprocessors =
      attr.get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors");
  if (attr.result != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "cannot read the %s attribute of CUDA device %d: %s",
                       attr.failed, ordinal,
                       errorText(cu, attr.result).c_str());

  char deviceName[256] = "";
  if (!cu.cuDeviceGetName ||
      cu.cuDeviceGetName(deviceName, sizeof deviceName, device) != CUDA_SUCCESS)
    deviceName[0] = 0;
  deviceName[sizeof deviceName - 1] = 0;
  std::string label = format("CUDA device %d (%s%ssm_%u%u)", ordinal,
                             deviceName, *deviceName ? ", " : "", major, minor);
  std::vector<std::string> targets = targetsFor(major, minor);
  if (targets.empty())
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "%s is not supported: Tessel's kernels need compute "
                       "capability 8.0 (sm_80) or newer",
                       label.c_str());

  CUcontext context = nullptr;
  if ((result = cu.cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS)
    return makeStatusf(TESSEL_UNAVAILABLE,
                       "cannot retain the primary context of %s: %s",
                       label.c_str(), errorText(cu, result).c_str());
  out = std::make_unique<CudaBackend>(cu, device, context, std::move(targets),
                                      limits, defaultShared,
                                      std::max(1u, multiprocessors),
                                      std::move(label));
  return nullptr;
}
