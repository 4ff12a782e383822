//===- LoopUtils.h - Helpers for writing the host reference loops -*- C++ -*-===//
//
// The host lowering spells out every op as scf loops over memrefs. These
// helpers keep that code close to the math: index arithmetic, loads that
// widen to f32, stores that narrow back, metadata loads clamped into range.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOHOST_LOOPUTILS_H
#define TESSEL_LIB_CONVERSION_TESSELTOHOST_LOOPUTILS_H

#include "tessel/Dialect/Tessel/IR/TesselOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::tessel::host {

/// An OpBuilder with a location and the arithmetic the loops need. Index
/// values are `index`; float values are f32.
class LoopBuilder {
public:
  LoopBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location location() const { return loc; }

  Value idx(int64_t v);
  Value f32(double v);
  Value negInf();
  /// The size of dim d of a memref: a constant when it is static.
  Value dim(Value memref, unsigned d);
  /// The rank-reduced view `buffer[i, ...]` of a memref's leading dim.
  Value slice(Value buffer, Value i);
  /// The smallest of the given (memref, dim) sizes, skipping null memrefs
  /// (absent optional operands): a loop bound that overruns none of them.
  Value minDim(ArrayRef<std::pair<Value, unsigned>> dims);

  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  /// Unsigned (x / y) and (x % y) for non-negative index values.
  Value div(Value x, Value y);
  Value rem(Value x, Value y);
  Value min(Value x, Value y);
  Value max(Value x, Value y);
  /// ceil(x / y) for non-negative x and positive y.
  Value ceilDiv(Value x, Value y);
  /// clamp(x, lo, hi) = min(max(x, lo), hi).
  Value clamp(Value x, Value lo, Value hi);
  Value cmp(arith::CmpIPredicate p, Value x, Value y);
  /// 0 <= x < size, for a signed index x (e.g. loaded device metadata).
  Value inBounds(Value x, Value size);

  Value fadd(Value x, Value y);
  Value fsub(Value x, Value y);
  Value fmul(Value x, Value y);
  Value fdiv(Value x, Value y);
  Value fmax(Value x, Value y);
  Value exp(Value x);
  Value log(Value x);
  Value fcmp(arith::CmpFPredicate p, Value x, Value y);
  Value select(Value c, Value x, Value y);

  /// Loads an i32 metadata element as an index (sign-extended).
  Value loadIndex(Value memref, ValueRange indices);
  /// Loads a float element widened to f32.
  Value loadF32(Value memref, ValueRange indices);
  /// Stores an f32 value, narrowed to the memref's element type.
  void storeF32(Value value, Value memref, ValueRange indices);
  /// Stores an index value into an i32 memref.
  void storeIndex(Value value, Value memref, ValueRange indices);

  /// for (iv = lb; iv < ub; ++iv) body(iv).
  void forLoop(Value lb, Value ub, function_ref<void(Value)> body);
  /// The same with loop-carried values; returns their final values.
  SmallVector<Value> forLoop(Value lb, Value ub, ValueRange init,
                             function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// if (cond) body().
  void ifThen(Value cond, function_ref<void()> body);
  /// if (cond) thenBody() else elseBody().
  void ifThenElse(Value cond, function_ref<void()> thenBody,
                  function_ref<void()> elseBody);

  /// acc + x * y for a sum whose association the op leaves free (a dot
  /// product): it carries fastmath<reassoc, contract> so that LLVM may
  /// vectorize the reduction and fuse FMAs. Not for sums in a defined order.
  Value mulAddFree(Value acc, Value x, Value y);

  /// Stores `value` to every element of `memref`: an f32 value (narrowed to
  /// the element type) or an index value (into an integer memref).
  void fill(Value memref, Value value);

  /// Walks the first `numGroups` ragged groups given by cumulative ends
  /// (`ends[g]`, i32, with `ends[-1] = 0`): calls body(g, begin, end) for
  /// each in order, with every end clamped to [begin, limit] so that garbage
  /// device data never leads out of bounds. Returns the last end (0 when
  /// there is no group).
  Value forEachGroup(Value ends, Value numGroups, Value limit,
                     function_ref<void(Value g, Value begin, Value end)> body);

  /// Scratch buffers: an f32/i32 allocation and its release.
  Value alloc(MemRefType type, ValueRange dynamicSizes);
  void dealloc(Value memref);

private:
  OpBuilder &b;
  Location loc;
};

/// One lowering per op; each writes its loops at the op and erases nothing
/// (the pass erases the op). Grouped by file.
LogicalResult lowerPrefillAttention(PrefillAttentionOp op, OpBuilder &b);
LogicalResult lowerDecodeAttention(DecodeAttentionOp op, OpBuilder &b);
LogicalResult lowerExtendAttention(ExtendAttentionOp op, OpBuilder &b);
LogicalResult lowerPagedAttention(PagedAttentionOp op, OpBuilder &b);
LogicalResult lowerMLADecode(MLADecodeOp op, OpBuilder &b);
LogicalResult lowerReshapeAndCache(ReshapeAndCacheOp op, OpBuilder &b);
LogicalResult lowerLseMerge(LseMergeOp op, OpBuilder &b);
LogicalResult lowerLseMergeN(LseMergeNOp op, OpBuilder &b);
LogicalResult lowerGroupedMatmul(GroupedMatmulOp op, OpBuilder &b);
LogicalResult lowerGroupedMatmulWgrad(GroupedMatmulWgradOp op, OpBuilder &b);
LogicalResult lowerExpertHistogram(ExpertHistogramOp op, OpBuilder &b);
LogicalResult lowerExpertSort(ExpertSortOp op, OpBuilder &b);
LogicalResult lowerMoePermute(MoePermuteOp op, OpBuilder &b);
LogicalResult lowerMoeUnpermute(MoeUnpermuteOp op, OpBuilder &b);
LogicalResult lowerSwiglu(SwigluOp op, OpBuilder &b);
/// act = silu(gate) * up of h ([R, 2I] or [2, R, I]): tessel.swiglu's
/// loops, also the epilogue of a grouped matmul with `act`.
void swigluLoops(OpBuilder &b, Location loc, Value h, Value act);
LogicalResult lowerSwigluBackward(SwigluBackwardOp op, OpBuilder &b);

} // namespace mlir::tessel::host

#endif // TESSEL_LIB_CONVERSION_TESSELTOHOST_LOOPUTILS_H
