//===- core/launch.cpp - Argument validation and parameter marshalling ----===//
//
// A launch checks every tensor against the kernel's signature before the
// backend sees it: a generated kernel trusts its shapes completely, so a
// wrong size here would otherwise be an out-of-bounds access on the device.
// Symbol values (sequence lengths, token counts, ...) are not passed by the
// caller; they are derived from the tensor shapes, and every dimension that
// mentions a symbol must agree on its value. TMA tensor maps (sm90a) are
// encoded here too, per launch, from the checked arguments: they travel by
// value in the parameter block, so a launch needs no host synchronisation
// and stays capturable in a CUDA graph.
//
// The success path allocates nothing: decode launches are latency-bound.
//
//===----------------------------------------------------------------------===//

#include "dtype.h"
#include "handles.h"
#include "status.h"

#include "../support/format.h"

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace tessel;
using namespace tessel::runtime;

namespace {

/// The base alignment GPU kernels need of every buffer.
constexpr size_t kGpuAlignment = 16;

/// How messages show a dim: "T", "2*T", "T + 1", "2*T - 3", "64".
std::string dimExpr(const bundle::Dim &dim,
                    const std::vector<std::string> &symbols) {
  if (dim.isConstant())
    return format("%lld", static_cast<long long>(dim.add));
  const char *symbol = symbols[dim.sym].c_str();
  std::string out = dim.mul == 1 ? symbol : format("%d*%s", dim.mul, symbol);
  if (dim.add > 0)
    out += format(" + %lld", static_cast<long long>(dim.add));
  else if (dim.add < 0)
    out += format(" - %llu", 0ull - static_cast<unsigned long long>(dim.add));
  return out;
}

/// symbolValue * mul + add, or false if that overflows int64.
bool evalDim(const bundle::Dim &dim, int64_t symbolValue, int64_t &out) {
  int64_t product = 0;
  return !__builtin_mul_overflow(symbolValue, static_cast<int64_t>(dim.mul),
                                 &product) &&
         !__builtin_add_overflow(product, dim.add, &out);
}

/// Checks one launch's tensors and derives the kernel's symbol values.
class LaunchChecker {
public:
  explicit LaunchChecker(const tessel_kernel_t &kernel)
      : meta(kernel.meta), name(kernel.meta.name.c_str()) {
    for (int32_t &source : sourceArg)
      source = -1;
  }

  tessel_status checkArg(size_t index, const tessel_tensor &tensor);
  tessel_status checkSymbolsDerived() const;
  tessel_status computeGrid(uint32_t grid[3]) const;
  tessel_status tensorMapRequest(size_t m, const tessel_tensor &tensor,
                                 TensorMapRequest &out) const;

  int64_t symbolValues[TESSEL_BUNDLE_MAX_SYMBOLS] = {};

private:
  tessel_status checkDim(size_t index, size_t d, int64_t size);
  tessel_status checkData(size_t index, const tessel_tensor &tensor) const;
  tessel_status checkScalar(size_t index, const tessel_tensor &tensor) const;

  const char *argName(size_t index) const {
    return meta.args[index].name.c_str();
  }

  const bundle::Kernel &meta;
  const char *name;
  /// The arg and dim each symbol was derived from; -1 while underived.
  int32_t sourceArg[TESSEL_BUNDLE_MAX_SYMBOLS];
  uint32_t sourceDim[TESSEL_BUNDLE_MAX_SYMBOLS] = {};
};

tessel_status LaunchChecker::checkArg(size_t index,
                                      const tessel_tensor &tensor) {
  const bundle::Arg &arg = meta.args[index];
  const char *argN = argName(index);
  const DtypeValue dtype = dtypeValue(tensor.dtype);
  if (dtype != static_cast<DtypeValue>(arg.dtype))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' has dtype %s (value %u), "
                       "expected %s",
                       name, argN, dtypeValueName(dtype),
                       static_cast<unsigned>(dtype),
                       bundle::dtypeName(arg.dtype));
  if (tensor.rank < 0 ||
      tensor.rank > static_cast<int32_t>(TESSEL_BUNDLE_MAX_RANK))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' has rank %d; a rank must be in "
                       "[0, %u]",
                       name, argN, tensor.rank, TESSEL_BUNDLE_MAX_RANK);
  if (static_cast<size_t>(tensor.rank) != arg.dims.size())
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' has rank %d, expected %zu", name,
                       argN, tensor.rank, arg.dims.size());
  for (size_t d = 0; d < arg.dims.size(); ++d)
    if (tensor.shape[d] < 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': arg '%s' dim %zu is %lld; sizes must "
                         "be >= 0",
                         name, argN, d,
                         static_cast<long long>(tensor.shape[d]));
  for (size_t d = 0; d < arg.dims.size(); ++d)
    if (tessel_status status = checkDim(index, d, tensor.shape[d]))
      return status;
  return checkData(index, tensor);
}

tessel_status LaunchChecker::checkDim(size_t index, size_t d, int64_t size) {
  const bundle::Dim &dim = meta.args[index].dims[d];
  if (dim.isConstant()) {
    if (size == dim.add)
      return nullptr;
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' dim %zu is %lld, expected %lld",
                       name, argName(index), d, static_cast<long long>(size),
                       static_cast<long long>(dim.add));
  }
  const char *symbol = meta.symbols[dim.sym].c_str();
  if (sourceArg[dim.sym] < 0) {
    // First use: derive the symbol. size = value * mul + add, value >= 0.
    int64_t diff = 0;
    if (__builtin_sub_overflow(size, dim.add, &diff) || diff < 0 ||
        diff % dim.mul != 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': arg '%s' dim %zu is %lld, which is not "
                         "%s for any integer %s >= 0",
                         name, argName(index), d, static_cast<long long>(size),
                         dimExpr(dim, meta.symbols).c_str(), symbol);
    symbolValues[dim.sym] = diff / dim.mul;
    sourceArg[dim.sym] = static_cast<int32_t>(index);
    sourceDim[dim.sym] = static_cast<uint32_t>(d);
    return nullptr;
  }
  int64_t value = symbolValues[dim.sym];
  int64_t expected = 0;
  bool overflow = !evalDim(dim, value, expected);
  if (!overflow && expected == size)
    return nullptr;
  std::string message = format(
      "kernel '%s': arg '%s' dim %zu is %lld but arg '%s' dim %u says %s = "
      "%lld",
      name, argName(index), d, static_cast<long long>(size),
      argName(static_cast<size_t>(sourceArg[dim.sym])), sourceDim[dim.sym],
      symbol, static_cast<long long>(value));
  std::string expr = dimExpr(dim, meta.symbols);
  if (overflow)
    message += format(", and %s overflows int64", expr.c_str());
  else if (expr != symbol)
    message += format(", so it must be %s = %lld", expr.c_str(),
                      static_cast<long long>(expected));
  return makeStatus(TESSEL_INVALID_ARGUMENT, std::move(message));
}

tessel_status LaunchChecker::checkData(size_t index,
                                       const tessel_tensor &tensor) const {
  if (meta.args[index].isScalar())
    return checkScalar(index, tensor);
  // checkArg has matched the dtype with the kernel's: it is valid.
  const size_t elementSize = dtypeSize(meta.args[index].dtype);
  int64_t elements = 1, bytes = 0;
  bool overflow = false;
  for (int32_t d = 0; d < tensor.rank && !overflow; ++d)
    overflow = __builtin_mul_overflow(elements, tensor.shape[d], &elements);
  if (overflow || __builtin_mul_overflow(
                      elements, static_cast<int64_t>(elementSize), &bytes))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' is larger than 2^63 bytes", name,
                       argName(index));
  if (!tensor.data) {
    if (elements == 0)
      return nullptr; // an empty tensor needs no storage
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' data is null but it has %lld "
                       "elements",
                       name, argName(index), static_cast<long long>(elements));
  }
  if (reinterpret_cast<uintptr_t>(tensor.data) % elementSize != 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' data %p is not aligned to %zu "
                       "bytes (the size of %s)",
                       name, argName(index), tensor.data, elementSize,
                       bundle::dtypeName(meta.args[index].dtype));
  // GPU kernels move rows in 16-byte vectors (cp.async, global_load_dwordx4)
  // from the buffer's start: a misaligned base would fault on the device.
  // Arguments they read one element at a time (block tables) may start at
  // any element (checked above): the dispatcher passes a phase's rows of a
  // table, shifted by a context chunk's blocks.
  if (meta.target != "host" && !meta.args[index].elementwise &&
      reinterpret_cast<uintptr_t>(tensor.data) % kGpuAlignment != 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' data %p is not aligned to %zu "
                       "bytes (GPU kernels access buffers in 16-byte vectors)",
                       name, argName(index), tensor.data, kGpuAlignment);
  return nullptr;
}

tessel_status LaunchChecker::checkScalar(size_t index,
                                         const tessel_tensor &tensor) const {
  // The validator admits f32 scalars only, and checkArg matched the dtype.
  if (!tensor.data)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' is a scalar (rank 0) whose data "
                       "is null; it must point to the f32 value",
                       name, argName(index));
  float value;
  std::memcpy(&value, tensor.data, sizeof value);
  if (!std::isfinite(value))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': arg '%s' is %g; it must be finite", name,
                       argName(index), static_cast<double>(value));
  return nullptr;
}

tessel_status LaunchChecker::checkSymbolsDerived() const {
  for (size_t s = 0; s < meta.symbols.size(); ++s)
    if (sourceArg[s] < 0)
      return makeStatusf(TESSEL_INTERNAL,
                         "kernel '%s': symbol '%s' is used by no argument, so "
                         "its value cannot be derived (a compiler bug: please "
                         "report it)",
                         name, meta.symbols[s].c_str());
  return nullptr;
}

tessel_status LaunchChecker::computeGrid(uint32_t grid[3]) const {
  static const char kAxis[] = "xyz";
  for (size_t axis = 0; axis < 3; ++axis) {
    const bundle::Dim &dim = meta.grid[axis];
    int64_t value = dim.add;
    // The expression text is built on the error paths only: a successful
    // launch allocates nothing.
    if (!dim.isConstant() && !evalDim(dim, symbolValues[dim.sym], value))
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': grid %c = %s overflows int64 for these "
                         "shapes",
                         name, kAxis[axis],
                         dimExpr(dim, meta.symbols).c_str());
    if (value < 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': grid %c = %s is %lld for these shapes; "
                         "it must be >= 0",
                         name, kAxis[axis], dimExpr(dim, meta.symbols).c_str(),
                         static_cast<long long>(value));
    uint64_t div = meta.gridDiv[axis];
    uint64_t blocks = (static_cast<uint64_t>(value) + div - 1) / div;
    if (blocks > UINT32_MAX)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': grid %c = ceildiv(%s, %u) is %llu "
                         "blocks, more than 2^32 - 1",
                         name, kAxis[axis], dimExpr(dim, meta.symbols).c_str(),
                         meta.gridDiv[axis],
                         static_cast<unsigned long long>(blocks));
    grid[axis] = static_cast<uint32_t>(blocks);
  }
  return nullptr;
}

tessel_status LaunchChecker::tensorMapRequest(size_t m,
                                              const tessel_tensor &tensor,
                                              TensorMapRequest &out) const {
  const bundle::TensorMap &map = meta.tensorMaps[m];
  const bundle::Arg &arg = meta.args[map.arg];
  const char *argN = arg.name.c_str();
  // checkData has checked the base of buffers that are not elementwise;
  // TMA needs 16 bytes of every mapped one.
  if (reinterpret_cast<uintptr_t>(tensor.data) % kGpuAlignment != 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': tensor map %zu of arg '%s': data %p is "
                       "not aligned to %zu bytes (TMA needs a 16-byte aligned "
                       "base)",
                       name, m, argN, tensor.data, kGpuAlignment);
  out.dtype = arg.dtype;
  out.rank = static_cast<uint32_t>(map.dims.size());
  out.address = tensor.data;
  out.swizzle = map.swizzle;
  uint64_t stride = dtypeSize(arg.dtype); // bytes between indices of dim i
  for (size_t i = 0; i < out.rank; ++i) {
    const auto &range = map.dims[i];
    // tensor.shape[d] >= 0 (checkArg), so the product is exact or overflows.
    uint64_t extent = 1;
    bool overflow = false;
    for (uint32_t d = range.first; d < range.second; ++d)
      overflow |= __builtin_mul_overflow(
          extent, static_cast<uint64_t>(tensor.shape[d]), &extent);
    if (overflow || extent > (uint64_t(1) << 32))
      return makeStatusf(
          TESSEL_INVALID_ARGUMENT,
          "kernel '%s': tensor map %zu of arg '%s': dim %zu (arg dims [%u, "
          "%u)) %s; TMA dims must be at most 2^32",
          name, m, argN, i, range.first, range.second,
          overflow ? "overflows 64 bits"
                   : format("is %llu elements",
                            static_cast<unsigned long long>(extent))
                         .c_str());
    if (i == 1 && stride % 16 != 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "kernel '%s': tensor map %zu of arg '%s': rows are "
                         "%llu bytes (dim 0 = %llu %s elements); TMA needs a "
                         "row stride that is a multiple of 16 bytes",
                         name, m, argN, static_cast<unsigned long long>(stride),
                         static_cast<unsigned long long>(out.dims[0]),
                         bundle::dtypeName(arg.dtype));
    if (i >= 1) {
      // Strides of later dims are multiples of the row stride.
      if (stride >= (uint64_t(1) << 40))
        return makeStatusf(TESSEL_INVALID_ARGUMENT,
                           "kernel '%s': tensor map %zu of arg '%s': the "
                           "stride of dim %zu is %llu bytes; TMA strides must "
                           "be below 2^40",
                           name, m, argN, i,
                           static_cast<unsigned long long>(stride));
      out.strides[i - 1] = stride;
    }
    // An empty tensor has no rows for the kernel to load, but TMA dims must
    // be >= 1: 0 is encoded as 1, or as box[0] for the innermost dim, whose
    // bytes are a multiple of 16 (the format's rule) as the row stride must
    // be. The strides follow the encoded dims.
    out.dims[i] = extent ? extent : i == 0 ? map.box[0] : 1;
    out.box[i] = map.box[i];
    if (__builtin_mul_overflow(stride, out.dims[i], &stride))
      stride = UINT64_MAX; // fails the 2^40 check of the next dim, if any
  }
  return nullptr;
}

tessel_status launchKernel(tessel_kernel kernel, const tessel_tensor *args,
                           size_t num_args, void *stream) {
  if (!kernel)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "kernel is null");
  const bundle::Kernel &meta = kernel->meta;
  const char *name = meta.name.c_str();
  if (num_args != meta.args.size())
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s' takes %zu args (%s) but %zu were given",
                       name, meta.args.size(),
                       joinLimited(meta.args, TESSEL_BUNDLE_MAX_ARGS,
                                   [](const bundle::Arg &a) { return a.name; })
                           .c_str(),
                       num_args);
  if (num_args && !args)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "kernel '%s': args is null but num_args is %zu", name,
                       num_args);

  LaunchChecker checker(*kernel);
  for (size_t i = 0; i < num_args; ++i)
    if (tessel_status status = checker.checkArg(i, args[i]))
      return status;
  if (tessel_status status = checker.checkSymbolsDerived())
    return status;
  // Map geometry is checked before the grid, so that a bad shape is
  // reported even when this call has no work.
  TensorMapRequest mapRequests[TESSEL_BUNDLE_MAX_TENSOR_MAPS];
  const size_t numMaps = meta.tensorMaps.size();
  for (size_t m = 0; m < numMaps; ++m)
    if (tessel_status status = checker.tensorMapRequest(
            m, args[meta.tensorMaps[m].arg], mapRequests[m]))
      return status;
  uint32_t grid[3];
  if (tessel_status status = checker.computeGrid(grid))
    return status;
  // An empty grid has no work (e.g. zero new tokens); CUDA and HIP would
  // reject it, so no backend sees one.
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return nullptr;

  // The kernel parameter convention: params[i] points to parameter i; the
  // args come first (a buffer's data pointer, a scalar's value, copied so
  // that the caller's may go as soon as this returns), then the symbols as
  // int64_t, then the tensor maps (CUtensorMap, 128 bytes by value).
  alignas(kTensorMapAlign) unsigned char
      maps[TESSEL_BUNDLE_MAX_TENSOR_MAPS][kTensorMapBytes];
  for (size_t m = 0; m < numMaps; ++m)
    if (tessel_status status =
            kernel->backend->encodeTensorMap(mapRequests[m], maps[m]))
      return annotate(status,
                      format("kernel '%s': tensor map %zu of arg '%s'", name,
                             m,
                             meta.args[meta.tensorMaps[m].arg].name.c_str()));
  void *pointers[TESSEL_BUNDLE_MAX_ARGS];
  float scalars[TESSEL_BUNDLE_MAX_ARGS];
  void *params[TESSEL_BUNDLE_MAX_ARGS + TESSEL_BUNDLE_MAX_SYMBOLS +
               TESSEL_BUNDLE_MAX_TENSOR_MAPS];
  size_t numParams = 0;
  for (size_t i = 0; i < num_args; ++i) {
    if (meta.args[i].isScalar()) {
      std::memcpy(&scalars[i], args[i].data, sizeof(float));
      params[numParams++] = &scalars[i];
      continue;
    }
    pointers[i] = args[i].data;
    params[numParams++] = &pointers[i];
  }
  for (size_t s = 0; s < meta.symbols.size(); ++s)
    params[numParams++] = &checker.symbolValues[s];
  for (size_t m = 0; m < numMaps; ++m)
    params[numParams++] = maps[m];

  tessel_status status =
      kernel->backend->launch(*kernel->loaded, params, grid, meta.block.data(),
                              meta.sharedBytes, stream);
  return status ? annotate(status, format("kernel '%s'", name)) : nullptr;
}

} // namespace

extern "C" {

tessel_status tessel_kernel_launch(tessel_kernel kernel,
                                   const tessel_tensor *args, size_t num_args,
                                   void *stream) {
  return guard("launching a kernel", [&] {
    return launchKernel(kernel, args, num_args, stream);
  });
}

} // extern "C"
