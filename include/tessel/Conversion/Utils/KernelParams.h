//===- KernelParams.h - Memrefs from kernel parameters ----------*- C++ -*-===//
//
// Every kernel, host or GPU, receives its buffers as bare data pointers, its
// scalars by value and its shape symbols as i64, then (sm90a) its TMA tensor
// maps by value (the runtime's parameter convention, see
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

/// A TMA tensor map a kernel takes (bundle::TensorMap): buffer argument
/// `arg` seen with dims, innermost first, that are products of its dims
/// [first, last), copied in boxes of `box` elements, swizzled per `swizzle`
/// (CUtensorMapSwizzle: 3 is 128 bytes).
struct TensorMapSpec {
  unsigned arg = 0;
  SmallVector<std::pair<unsigned, unsigned>> dims;
  SmallVector<int64_t> box;
  int64_t swizzle = 0;
};

/// The attribute of a GPU kernel that lists its tensor maps, which are its
/// last parameters: per map [arg, swizzle, rank, first_0, last_0, ...,
/// box_0, ...].
constexpr StringLiteral kTensorMapsAttrName = "tessel.tensor_maps";
Attribute buildTensorMapsAttr(Builder &b, ArrayRef<TensorMapSpec> maps);
/// The maps of `kernel`'s kTensorMapsAttrName (none without it), or
/// failure for a malformed attribute.
FailureOr<SmallVector<TensorMapSpec>> readTensorMaps(Operation *kernel);

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_UTILS_KERNELPARAMS_H
