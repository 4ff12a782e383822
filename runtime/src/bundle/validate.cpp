//===- bundle/validate.cpp - Rules a decoded kernel must satisfy ----------===//
//
// Used by the reader after decoding and by the writer before encoding, so the
// two can never disagree about what a valid bundle is.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "../support/format.h"

#include <map>
#include <utility>

namespace tessel::bundle::detail {
namespace {

bool isValidDtype(int value) {
  return value >= TESSEL_DTYPE_INVALID && value <= TESSEL_DTYPE_I64;
}

/// A name must be non-empty and must survive the NUL-terminated string table.
std::string checkName(const std::string &name, const char *what) {
  if (name.empty())
    return format("%s is empty", what);
  if (name.find('\0') != std::string::npos)
    return format("%s '%s' contains a NUL byte", what, name.c_str());
  return std::string();
}

std::string checkDim(const Dim &dim, size_t numSymbols) {
  if (dim.sym == -1) {
    if (dim.mul != 1)
      return format("constant dim has mul %d; it must be 1", dim.mul);
    if (dim.add < 0)
      return format("constant dim is %lld; sizes must be >= 0",
                    static_cast<long long>(dim.add));
    return std::string();
  }
  if (dim.sym < -1)
    return format("sym is %d; it must be -1 (constant) or a symbol index",
                  dim.sym);
  if (static_cast<size_t>(dim.sym) >= numSymbols)
    return format("sym %d is out of range (the kernel has %zu symbols)",
                  dim.sym, numSymbols);
  if (dim.mul < 1)
    return format("symbolic dim has mul %d; it must be >= 1", dim.mul);
  return std::string();
}

/// Checks `names` are valid and unique; `what` is e.g. "arg".
template <typename Range, typename GetName>
std::string checkNames(const Range &items, const char *what, GetName getName) {
  std::map<std::string, size_t> seen;
  size_t index = 0;
  for (const auto &item : items) {
    const std::string &name = getName(item);
    std::string field = format("%s %zu name", what, index);
    std::string error = checkName(name, field.c_str());
    if (!error.empty())
      return error;
    auto inserted = seen.emplace(name, index);
    if (!inserted.second)
      return format("%ss %zu and %zu are both named '%s'", what,
                    inserted.first->second, index, name.c_str());
    ++index;
  }
  return std::string();
}

/// The rules of one tensor map (bundle.hpp, TensorMap): what
/// cuTensorMapEncodeTiled needs that the bundle alone can tell.
std::string checkTensorMap(const Kernel &k, const TensorMap &map) {
  if (map.arg >= k.args.size())
    return format("arg %u is out of range (the kernel has %zu args)", map.arg,
                  k.args.size());
  const Arg &arg = k.args[map.arg];
  const char *argN = arg.name.c_str();
  if (arg.isScalar())
    return format("arg %u ('%s') is a scalar; a map views a buffer", map.arg,
                  argN);
  const size_t rank = map.dims.size();
  if (rank == 0 || rank > TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK)
    return format("rank is %zu; it must be 1 to %u", rank,
                  TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK);
  if (map.box.size() != rank)
    return format("has %zu box sizes for %zu dims", map.box.size(), rank);
  // The ranges tile the arg's dims from the last back to the first: the
  // innermost map dim is made of the arg's innermost dims.
  uint32_t end = static_cast<uint32_t>(arg.dims.size());
  for (size_t i = 0; i < rank; ++i) {
    const auto &range = map.dims[i];
    if (range.second != end)
      return i == 0 ? format("dims[0] is [%u, %u); it must end at %u, the "
                             "rank of arg '%s'",
                             range.first, range.second, end, argN)
                    : format("dims[%zu] is [%u, %u); it must end at %u, where "
                             "dims[%zu] starts",
                             i, range.first, range.second, end, i - 1);
    if (range.first >= range.second)
      return format("dims[%zu] is [%u, %u), which is empty", i, range.first,
                    range.second);
    end = range.first;
  }
  if (end != 0)
    return format("dims[%zu] starts at %u; the last range must start at 0 "
                  "(every dim of arg '%s' in some map dim)",
                  rank - 1, end, argN);
  for (size_t i = 0; i < rank; ++i)
    if (map.box[i] < 1 || map.box[i] > TESSEL_BUNDLE_MAX_TENSOR_MAP_BOX)
      return format("box[%zu] is %u; it must be 1 to %u", i, map.box[i],
                    TESSEL_BUNDLE_MAX_TENSOR_MAP_BOX);
  const uint64_t rowBytes = uint64_t(map.box[0]) * dtypeSize(arg.dtype);
  if (rowBytes % 16 != 0)
    return format("box[0] is %u %s elements = %llu bytes; TMA moves "
                  "multiples of 16 bytes",
                  map.box[0], dtypeName(arg.dtype),
                  static_cast<unsigned long long>(rowBytes));
  if (map.swizzle > 3)
    return format("swizzle is %u; it must be 0 (none), 1 (32B), 2 (64B) or "
                  "3 (128B)",
                  map.swizzle);
  const uint64_t span = map.swizzle ? 16u << map.swizzle : 0;
  if (span && rowBytes > span)
    return format("box[0] is %llu bytes, wider than its %lluB swizzle span",
                  static_cast<unsigned long long>(rowBytes),
                  static_cast<unsigned long long>(span));
  return std::string();
}

std::string checkKernel(const Kernel &k) {
  const std::pair<const std::string *, const char *> fields[] = {
      {&k.name, "name"},
      {&k.op, "op"},
      {&k.target, "target"},
      {&k.entry, "entry"}};
  for (const auto &field : fields) {
    std::string error = checkName(*field.first, field.second);
    if (!error.empty())
      return error;
  }
  if (!isValidDtype(k.dtype))
    return format("dtype %d is not a valid tessel_dtype", k.dtype);

  if (k.args.size() > TESSEL_BUNDLE_MAX_ARGS)
    return format("has %zu args; the limit is %u", k.args.size(),
                  TESSEL_BUNDLE_MAX_ARGS);
  if (k.symbols.size() > TESSEL_BUNDLE_MAX_SYMBOLS)
    return format("has %zu symbols; the limit is %u", k.symbols.size(),
                  TESSEL_BUNDLE_MAX_SYMBOLS);
  if (k.params.size() > TESSEL_BUNDLE_MAX_PARAMS)
    return format("has %zu params; the limit is %u", k.params.size(),
                  TESSEL_BUNDLE_MAX_PARAMS);
  if (k.tensorMaps.size() > TESSEL_BUNDLE_MAX_TENSOR_MAPS)
    return format("has %zu tensor maps; the limit is %u", k.tensorMaps.size(),
                  TESSEL_BUNDLE_MAX_TENSOR_MAPS);

  std::string error =
      checkNames(k.args, "arg",
                 [](const Arg &a) -> const std::string & { return a.name; });
  if (error.empty())
    error = checkNames(
        k.symbols, "symbol",
        [](const std::string &s) -> const std::string & { return s; });
  if (error.empty())
    error = checkNames(
        k.params, "param",
        [](const std::pair<std::string, int64_t> &p) -> const std::string & {
          return p.first;
        });
  if (!error.empty())
    return error;

  for (const Arg &arg : k.args) {
    if (arg.dtype == TESSEL_DTYPE_INVALID || !isValidDtype(arg.dtype))
      return format("arg '%s': dtype %d is not a valid element type",
                    arg.name.c_str(), arg.dtype);
    if (arg.dims.size() > TESSEL_BUNDLE_MAX_RANK)
      return format("arg '%s': rank %zu exceeds the limit %u", arg.name.c_str(),
                    arg.dims.size(), TESSEL_BUNDLE_MAX_RANK);
    if (arg.isScalar() && (arg.isOutput || arg.elementwise ||
                           arg.dtype != TESSEL_DTYPE_F32))
      return format("arg '%s': a scalar (rank 0) must be an f32 input, not "
                    "an output or elementwise",
                    arg.name.c_str());
    for (size_t d = 0; d < arg.dims.size(); ++d)
      if (!(error = checkDim(arg.dims[d], k.symbols.size())).empty())
        return format("arg '%s' dim %zu: %s", arg.name.c_str(), d,
                      error.c_str());
  }

  for (size_t axis = 0; axis < 3; ++axis) {
    if (!(error = checkDim(k.grid[axis], k.symbols.size())).empty())
      return format("grid[%zu]: %s", axis, error.c_str());
    if (k.gridDiv[axis] == 0)
      return format("grid_div[%zu] is 0", axis);
    if (k.block[axis] == 0)
      return format("block[%zu] is 0", axis);
  }
  for (size_t m = 0; m < k.tensorMaps.size(); ++m)
    if (!(error = checkTensorMap(k, k.tensorMaps[m])).empty())
      return format("tensor map %zu: %s", m, error.c_str());
  return std::string();
}

} // namespace

std::string kernelLabel(const Kernel &kernel, size_t index) {
  return format("kernel %zu ('%s', target '%s')", index, kernel.name.c_str(),
                kernel.target.c_str());
}

std::string validateKernel(const Kernel &kernel, size_t index,
                           ParseError &kind) {
  std::string error = checkKernel(kernel);
  if (!error.empty()) {
    kind = ParseError::Corrupt;
  } else if (!isKnownTarget(kernel.target)) {
    // A target this code does not know is most likely one a newer compiler
    // added, not corruption: report it as unsupported.
    kind = ParseError::Unsupported;
    error = format("unknown target '%s' (known: %s)", kernel.target.c_str(),
                   knownTargetList());
  } else {
    return error;
  }
  return kernelLabel(kernel, index) + ": " + error;
}

std::string validateKernelSet(const std::vector<Kernel> &kernels) {
  if (kernels.size() > TESSEL_BUNDLE_MAX_KERNELS)
    return format("%zu kernels; the limit is %u", kernels.size(),
                  TESSEL_BUNDLE_MAX_KERNELS);
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto inserted =
        seen.emplace(std::make_pair(kernels[i].target, kernels[i].name), i);
    if (!inserted.second)
      return format("duplicate kernel '%s' for target '%s' (kernels %zu "
                    "and %zu)",
                    kernels[i].name.c_str(), kernels[i].target.c_str(),
                    inserted.first->second, i);
  }
  return std::string();
}

} // namespace tessel::bundle::detail
