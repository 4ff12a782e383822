//===- core/kernel_lookup.cpp - Finding a kernel by what it is ------------===//

#include "kernel_lookup.h"

#include "status.h"

#include "../support/format.h"

#include <vector>

using namespace tessel;
using namespace tessel::runtime;

namespace {

const bundle::Arg *findArg(const bundle::Kernel &meta, const char *name) {
  for (const bundle::Arg &arg : meta.args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

bool hasParam(const bundle::Kernel &meta, const char *key, int64_t value) {
  for (const auto &param : meta.params)
    if (param.first == key)
      return param.second == value;
  return false;
}

bool matches(const bundle::Kernel &meta, const KernelQuery &query) {
  if (meta.op != query.op ||
      (query.dtype != TESSEL_DTYPE_INVALID && meta.dtype != query.dtype))
    return false;
  for (const auto &[name, dtype] : query.argDtypes) {
    const bundle::Arg *arg = findArg(meta, name);
    if (!arg || arg->dtype != dtype)
      return false;
  }
  for (const auto &[name, present] : query.argPresent)
    if ((findArg(meta, name) != nullptr) != present)
      return false;
  for (const auto &[key, value] : query.params)
    if (!hasParam(meta, key, value))
      return false;
  return true;
}

std::string describe(const KernelQuery &query) {
  std::string text = query.op;
  for (const auto &[name, present] : query.argPresent)
    text += format(" %s %s", present ? "with" : "without", name);
  const char *sep = " with";
  for (const auto &[key, value] : query.params) {
    text += format("%s %s=%lld", sep, key, static_cast<long long>(value));
    sep = "";
  }
  if (query.dtype != TESSEL_DTYPE_INVALID)
    text += format(", %s", tessel_dtype_name(query.dtype));
  for (const auto &[name, dtype] : query.argDtypes)
    text += format(", %s %s", name, tessel_dtype_name(dtype));
  return text;
}

std::string describe(const bundle::Kernel &meta) {
  std::string text = meta.name + " (";
  for (const auto &param : meta.params)
    text += format("%s=%lld ", param.first.c_str(),
                   static_cast<long long>(param.second));
  text += tessel_dtype_name(meta.dtype);
  for (const bundle::Arg &arg : meta.args)
    if (arg.name == "out" || arg.name == "weights" || arg.name == "cu_seqlens")
      text += format(", %s %s", arg.name.c_str(), tessel_dtype_name(arg.dtype));
  return text + ")";
}

} // namespace

tessel_kernel runtime::findKernel(tessel_bundle bundle,
                                  const KernelQuery &query) {
  for (const auto &kernel : bundle->kernels)
    if (matches(kernel->meta, query))
      return kernel.get();
  return nullptr;
}

tessel_status runtime::missingKernel(tessel_bundle bundle,
                                     const KernelQuery &query,
                                     const std::string &who,
                                     const char *hint) {
  std::vector<const bundle::Kernel *> sameOp;
  for (const auto &kernel : bundle->kernels)
    if (kernel->meta.op == query.op)
      sameOp.push_back(&kernel->meta);
  std::string has =
      sameOp.empty()
          ? format("no %s kernel", query.op)
          : format("these %s kernels: %s", query.op,
                   joinLimited(sameOp, 8, [](const bundle::Kernel *k) {
                     return describe(*k);
                   }).c_str());
  return makeStatus(TESSEL_UNSUPPORTED,
                    format("%s needs a kernel for the %s: %s; the bundle has "
                           "%s. Compile one for this configuration%s",
                           who.c_str(), query.role, describe(query).c_str(),
                           has.c_str(), hint));
}
