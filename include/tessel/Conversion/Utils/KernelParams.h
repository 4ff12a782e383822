//===- KernelParams.h - Memrefs from kernel parameters ----------*- C++ -*-===//
//
// Every kernel, host or GPU, receives its buffers as bare data pointers and
// its shape symbols as i64 (the runtime's parameter convention, see
// docs/bundle-format.md). Lowerings work on memrefs, so each entry point
// rebuilds the dense row-major memref of every argument from its pointer and
// the symbolic dims of the kernel signature.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CONVERSION_UTILS_KERNELPARAMS_H
#define TESSEL_CONVERSION_UTILS_KERNELPARAMS_H

#include "tessel/Dialect/Tessel/IR/KernelSignature.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessel {

/// The memref of type `arg.type` over `data` (an !llvm.ptr) with the sizes
/// of `arg.dims` evaluated on `symbols` (i64 values). Built as an LLVM-dialect
/// descriptor cast to the memref type: the memref-to-LLVM conversion produces
/// exactly that struct, so the cast folds away in reconcile-unrealized-casts.
Value buildArgMemRef(OpBuilder &b, Location loc, const KernelArg &arg,
                     Value data, ArrayRef<Value> symbols);

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_UTILS_KERNELPARAMS_H
