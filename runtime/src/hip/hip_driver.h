//===- hip/hip_driver.h - The HIP module API we use -------------*- C++ -*-===//
//
// Declared here rather than taken from <hip/hip_runtime_api.h>: the runtime
// must build without ROCm, and reaches libamdhip64 only through dlsym. The
// enum values used are the same in HIP 5.2 (Debian's) and 6.x/7.x; the
// properties struct is the legacy layout (hipDeviceProp_tR0000) that the
// unversioned hipGetDeviceProperties symbol fills in every one of them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_HIP_HIP_DRIVER_H
#define TESSEL_RUNTIME_HIP_HIP_DRIVER_H

#include <cstddef>

namespace tessel::runtime::hip {

using hipError_t = int;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;
using hipStream_t = struct ihipStream_t *;
using hipDeviceAttribute_t = int;
using hipFunction_attribute = int;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorInvalidValue = 1;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidContext = 201;
constexpr hipError_t hipErrorInvalidHandle = 400;
constexpr hipError_t hipErrorNotFound = 500;

constexpr hipDeviceAttribute_t hipDeviceAttributeMaxBlockDimX =
    26; // Y, Z: 27, 28
constexpr hipDeviceAttribute_t hipDeviceAttributeMaxGridDimX =
    29; // Y, Z: 30, 31
constexpr hipDeviceAttribute_t hipDeviceAttributeMaxThreadsPerBlock = 56;
constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerBlock = 74;

constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;

/// The start of hipDeviceProp_tR0000, up to the field we read. The whole
/// struct is 792 bytes; callers pass a buffer of kHipDevicePropBytes.
struct HipDevicePropPrefix {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  int computeMode;
  int clockInstructionRate;
  unsigned arch; // hipDeviceArch_t: 17 one-bit flags
  int concurrentKernels;
  int pciDomainID;
  int pciBusID;
  int pciDeviceID;
  size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard;
  int canMapHostMemory;
  int gcnArch;
  /// "gfx942:sramecc+:xnack-": the processor, then its target features.
  char gcnArchName[256];
};
static_assert(offsetof(HipDevicePropPrefix, gcnArchName) == 396,
              "the layout of hipDeviceProp_tR0000");

/// Room for the whole struct, with a wide margin.
constexpr size_t kHipDevicePropBytes = 4096;

/// The HIP functions the backend calls, filled by dlsym. Optional ones may
/// be null.
struct HipDriver {
  hipError_t (*hipInit)(unsigned flags);
  hipError_t (*hipGetDeviceCount)(int *count);
  hipError_t (*hipGetDevice)(int *device);
  hipError_t (*hipSetDevice)(int device);
  hipError_t (*hipGetDeviceProperties)(void *properties, int device);
  hipError_t (*hipDeviceGetAttribute)(int *value,
                                      hipDeviceAttribute_t attribute,
                                      int device);
  hipError_t (*hipModuleLoadData)(hipModule_t *module, const void *image);
  hipError_t (*hipModuleUnload)(hipModule_t module);
  hipError_t (*hipModuleGetFunction)(hipFunction_t *function,
                                     hipModule_t module, const char *name);
  hipError_t (*hipFuncGetAttribute)(int *value, hipFunction_attribute attribute,
                                    hipFunction_t function);
  // Optional: only the attention dispatcher copies memory.
  hipError_t (*hipMemcpyHtoDAsync)(void *dst, void *src, size_t bytes,
                                   hipStream_t stream);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t function, unsigned gridX,
                                      unsigned gridY, unsigned gridZ,
                                      unsigned blockX, unsigned blockY,
                                      unsigned blockZ, unsigned sharedBytes,
                                      hipStream_t stream, void **params,
                                      void **extra);
  // Optional: only for messages.
  const char *(*hipGetErrorName)(hipError_t error);
  const char *(*hipGetErrorString)(hipError_t error);
};

} // namespace tessel::runtime::hip

#endif // TESSEL_RUNTIME_HIP_HIP_DRIVER_H
