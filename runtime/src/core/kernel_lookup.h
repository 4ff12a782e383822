//===- core/kernel_lookup.h - Finding a kernel by what it is ----*- C++ -*-===//
//
// The dispatcher and the MoE glue find their kernels in a bundle by op,
// shape parameters and argument dtypes, whatever a spec named them. When
// none matches, the error names what was wanted and lists the bundle's
// kernels of that op, so the user sees what to compile.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_KERNEL_LOOKUP_H
#define TESSEL_RUNTIME_CORE_KERNEL_LOOKUP_H

#include "handles.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessel::runtime {

struct KernelQuery {
  /// What the kernel is for, in messages ("decode split-KV partials").
  const char *role;
  const char *op;
  std::vector<std::pair<const char *, int64_t>> params;
  /// The kernel's dtype (its first float operand's); INVALID for any.
  tessel_dtype dtype = TESSEL_DTYPE_INVALID;
  /// Arguments that must exist with these dtypes.
  std::vector<std::pair<const char *, tessel_dtype>> argDtypes;
  /// Arguments that must be present (true) or absent (false).
  std::vector<std::pair<const char *, bool>> argPresent;
};

/// The first kernel of `bundle` that matches, or null.
tessel_kernel findKernel(tessel_bundle bundle, const KernelQuery &query);

/// TESSEL_UNSUPPORTED: "`who` needs a kernel for the <role>: <query>; the
/// bundle has these <op> kernels: .... Compile one for this configuration
/// `hint`".
tessel_status missingKernel(tessel_bundle bundle, const KernelQuery &query,
                            const std::string &who, const char *hint);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_KERNEL_LOOKUP_H
