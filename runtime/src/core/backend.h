//===- core/backend.h - The interface of a device backend -------*- C++ -*-===//
//
// The core (device, bundle and launch code) is backend-neutral: it validates
// bundles and launch arguments, computes launch geometry and marshals kernel
// parameters, then hands the result to a Backend. A backend only knows how to
// turn one kernel's binary into something launchable and how to launch it.
//
// Backends that talk to a driver (CUDA: the driver API from a dlopen'ed
// libcuda.so.1; HIP: libamdhip64.so) resolve the driver in their factory, so
// a missing driver is a TESSEL_UNAVAILABLE from tessel_device_open, never a
// link-time dependency of libtessel_runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_BACKEND_H
#define TESSEL_RUNTIME_CORE_BACKEND_H

#include "status.h"

#include "tessel/bundle.hpp"
#include "tessel/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel::runtime {

/// A kernel a backend has loaded (a dlopen handle, a CUmodule/CUfunction, a
/// hipModule_t/hipFunction_t). Destroying it unloads it; the owning Backend
/// outlives it.
class LoadedKernel {
public:
  virtual ~LoadedKernel() = default;
};

/// One TMA tensor map to encode (cuTensorMapEncodeTiled), as the core
/// computed it from a checked argument (core/launch.cpp): a dense row-major
/// view, element strides 1, no interleave, L2 promotion 128B, out-of-bounds
/// elements read as zeros.
struct TensorMapRequest {
  tessel_dtype dtype = TESSEL_DTYPE_INVALID;
  uint32_t rank = 0; ///< 1 .. TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK
  void *address = nullptr; ///< 16-byte aligned
  /// Elements per dim, innermost first, each in [1, 2^32].
  uint64_t dims[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK] = {};
  /// Bytes between consecutive indices of dims 1 .. rank-1: multiples of 16,
  /// below 2^40.
  uint64_t strides[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK - 1] = {};
  uint32_t box[TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK] = {}; ///< each 1 .. 256
  uint8_t swizzle = 0; ///< CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B
};

/// The size of an encoded tensor map (CUtensorMap), and its alignment.
constexpr size_t kTensorMapBytes = 128;
constexpr size_t kTensorMapAlign = 64;

/// One opened device. Instances are created by a BackendFactory and owned by
/// a tessel_device. Calls may come from several threads at once (loads of
/// different bundles, launches of loaded kernels), so implementations must be
/// thread-safe; the host backend holds no mutable state.
class Backend {
public:
  virtual ~Backend() = default;

  /// The name tessel_device_open accepts: "host", "cuda", "hip",
  /// "emu-gfx942", "emu-gfx950", "emu-sm80".
  virtual const char *name() const = 0;

  /// The bundle targets whose kernels this device runs, most preferred
  /// first; never empty. An sm_90 GPU runs {"sm90a", "sm90", "sm80"}:
  /// sm90a (wgmma/TMA) or sm90 cubins where the bundle has them, else the
  /// sm80 kernels' PTX through the driver's JIT. Bundle loading keeps, per kernel name, the kernel of the
  /// first of these targets that the bundle has.
  virtual const std::vector<std::string> &targets() const = 0;

  /// Makes `kernel` launchable. The reader has validated it, and its target
  /// is one of targets(). `binary` (its bytes, not empty) lives only during
  /// the call: keep a copy if the driver needs the bytes afterwards. On
  /// success sets `out`; on failure returns a status whose message carries
  /// the driver's or loader's own error text.
  virtual tessel_status loadKernel(const bundle::Kernel &kernel,
                                   bundle::ByteSpan binary,
                                   std::unique_ptr<LoadedKernel> &out) = 0;

  /// Launches `kernel`. `params` follows the kernel parameter convention
  /// (docs/bundle-format.md): params[i] points to the value of parameter i,
  /// first each argument's data pointer, then each symbol as int64_t, then
  /// each tensor map's kTensorMapBytes; it is
  /// only valid during the call (cuLaunchKernel and hipModuleLaunchKernel copy
  /// it). Every grid and block component is >= 1; checking them against the
  /// device's limits is the backend's job, before it launches anything.
  /// `stream` is the caller's CUstream/hipStream_t, or NULL.
  virtual tessel_status launch(LoadedKernel &kernel, void **params,
                               const uint32_t grid[3], const uint32_t block[3],
                               uint32_t sharedBytes, void *stream) = 0;

  /// Encodes `request` into the kTensorMapBytes at `out` (kTensorMapAlign
  /// aligned), which the core passes to the kernel by value. Called once per
  /// map for every launch of a kernel with maps, so it must not synchronize
  /// (launches stay CUDA-graph capturable). Only devices with TMA (the CUDA
  /// backend) implement it; the others refuse.
  virtual tessel_status encodeTensorMap(const TensorMapRequest &request,
                                        void *out) {
    (void)request, (void)out;
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "the %s backend cannot encode TMA tensor maps (kernels "
                       "that take them run on NVIDIA sm_90 GPUs through the "
                       "cuda backend)",
                       name());
  }

  /// SMs (CUDA), CUs (HIP), hardware threads (host) or the emulated chip's
  /// SMs or CUs: what the dispatcher sizes split-KV work to fill. Never 0.
  virtual uint32_t computeUnits() const = 0;

  /// Copies `bytes` of host memory to device memory `dst` in order on
  /// `stream` (the dispatcher's per-batch metadata, a few KB). `src` may be
  /// reused as soon as this returns.
  virtual tessel_status copyToDevice(void *dst, const void *src, size_t bytes,
                                     void *stream) = 0;
};

/// Opens device `ordinal` of one backend. Fails with TESSEL_UNAVAILABLE when
/// the driver or device is missing, listing every attempt that failed.
using BackendFactory = tessel_status (*)(int ordinal,
                                         std::unique_ptr<Backend> &out);

/// The host backend: kernels are ELF shared objects run on the calling thread.
tessel_status createHostBackend(int ordinal, std::unique_ptr<Backend> &out);
/// NVIDIA GPUs through the CUDA driver API of a dlopen'ed libcuda.
tessel_status createCudaBackend(int ordinal, std::unique_ptr<Backend> &out);
/// AMD GPUs through the HIP module API of a dlopen'ed libamdhip64.
tessel_status createHipBackend(int ordinal, std::unique_ptr<Backend> &out);
/// A gfx942, gfx950 or sm_80 GPU emulated on the CPU, lane by lane
/// (emulator/): kernels of the bundle targets of the same names.
tessel_status createEmuGfx942Backend(int ordinal,
                                     std::unique_ptr<Backend> &out);
tessel_status createEmuGfx950Backend(int ordinal,
                                     std::unique_ptr<Backend> &out);
tessel_status createEmuSm80Backend(int ordinal, std::unique_ptr<Backend> &out);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_BACKEND_H
