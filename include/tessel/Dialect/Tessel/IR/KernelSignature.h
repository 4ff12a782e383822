//===- KernelSignature.h - What a kernel function looks like from outside -===//
//
// A kernel is a public function whose body is one tessel op whose operands
// are the function's arguments. Its signature, as the runtime sees it, is the
// list of arguments (named after the op's operands): buffers, with each
// dimension either a constant or an affine use of a named shape symbol (T,
// B, ...), and scalars passed by value (the softmax scale); plus the integer
// shape parameters the kernel was specialised on. The host entry
// wrapper, tessel-aot and the bundle all derive from this one description.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_TESSEL_IR_KERNELSIGNATURE_H
#define TESSEL_DIALECT_TESSEL_IR_KERNELSIGNATURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::tessel {

/// One dimension: `constant` when `symbol < 0`, else
/// `symbols[symbol] * mul + add`.
struct KernelDim {
  int symbol = -1;
  int64_t mul = 1;
  int64_t add = 0;
  int64_t constant = 0;
};

struct KernelArg {
  std::string name;
  /// A MemRefType for a buffer; a float type for a scalar passed by value.
  Type type;
  bool isOutput = false;
  /// One per buffer dimension; none for a scalar.
  SmallVector<KernelDim> dims;
  /// The GPU templates read it one element at a time (a block table), so
  /// its base needs only element alignment.
  bool elementwise = false;

  bool isScalar() const { return !isa<MemRefType>(type); }
  /// The buffer's element type, or the scalar's type.
  Type elementType() const {
    if (auto memref = dyn_cast<MemRefType>(type))
      return memref.getElementType();
    return type;
  }
};

struct KernelSignature {
  Operation *op = nullptr;
  /// In function-argument order.
  SmallVector<KernelArg> args;
  /// Shape symbols, in order of first use; each becomes one i64 parameter.
  SmallVector<std::string> symbols;
  /// Named shape parameters (heads, head dims, block size, ...).
  SmallVector<std::pair<std::string, int64_t>> params;
};

/// Analyses a kernel function; emits an error naming the function and the
/// problem (not exactly one tessel op, an operand that is not a distinct
/// argument, an unused argument, a non-identity layout) on failure.
FailureOr<KernelSignature> analyzeKernel(func::FuncOp func);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TESSEL_IR_KERNELSIGNATURE_H
