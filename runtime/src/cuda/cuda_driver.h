//===- cuda/cuda_driver.h - The CUDA driver API we use ----------*- C++ -*-===//
//
// Declared here rather than taken from <cuda.h>: the runtime must build on
// machines with no CUDA toolkit, and it reaches libcuda only through dlsym.
// The types, values and signatures are those of the CUDA driver API (stable
// since CUDA 4; the _v2 names are the ones <cuda.h> maps the plain names to
// since CUDA 11, and the only ones newer drivers are guaranteed to keep).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_CUDA_DRIVER_H
#define TESSEL_RUNTIME_CUDA_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>

namespace tessel::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUjit_option = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X =
    2; // Y, Z: 3, 4
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X =
    5; // Y, Z: 6, 7
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK =
    8;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES =
    8;

/// TMA descriptors (CUDA 12.0+, cuda.h's CUtensorMap and its enums): an
/// opaque 128-byte, 64-byte aligned object that kernels take by value.
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};
using cuuint32_t = uint32_t;
using cuuint64_t = uint64_t;
using CUtensorMapDataType = int;
constexpr CUtensorMapDataType CU_TENSOR_MAP_DATA_TYPE_INT32 = 3;
constexpr CUtensorMapDataType CU_TENSOR_MAP_DATA_TYPE_INT64 = 5;
constexpr CUtensorMapDataType CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6;
constexpr CUtensorMapDataType CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7;
constexpr CUtensorMapDataType CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9;
using CUtensorMapInterleave = int;
constexpr CUtensorMapInterleave CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
/// CU_TENSOR_MAP_SWIZZLE_NONE = 0, _32B = 1, _64B = 2, _128B = 3: the
/// bundle's swizzle values.
using CUtensorMapSwizzle = int;
using CUtensorMapL2promotion = int;
constexpr CUtensorMapL2promotion CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
using CUtensorMapFloatOOBfill = int;
constexpr CUtensorMapFloatOOBfill CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;

constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// The driver functions the backend calls, filled by dlsym. Optional ones
/// may be null.
struct CudaDriver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attribute,
                                   CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device); // _v2
  CUresult (*cuCtxGetCurrent)(CUcontext *context);
  CUresult (*cuCtxPushCurrent)(CUcontext context); // _v2
  CUresult (*cuCtxPopCurrent)(CUcontext *context); // _v2
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image,
                                 unsigned numOptions, CUjit_option *options,
                                 void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name);
  CUresult (*cuFuncGetAttribute)(int *value, CUfunction_attribute attribute,
                                 CUfunction function);
  CUresult (*cuFuncSetAttribute)(CUfunction function,
                                 CUfunction_attribute attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream,
                             void **params, void **extra);
  // Optional: only the attention dispatcher copies memory (its per-batch
  // metadata); without it, dispatcher runs fail and kernels still launch.
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src,
                                size_t bytes, CUstream stream); // _v2
  // Optional (CUDA 12.0+): only kernels with TMA tensor maps need it; without
  // it, launching one fails and every other kernel still launches.
  CUresult (*cuTensorMapEncodeTiled)(
      CUtensorMap *tensorMap, CUtensorMapDataType dataType,
      cuuint32_t rank, void *globalAddress, const cuuint64_t *globalDim,
      const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
      const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
      CUtensorMapFloatOOBfill oobFill);
  // Optional: only for messages.
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
};

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_CUDA_DRIVER_H
