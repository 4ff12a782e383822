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
