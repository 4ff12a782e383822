//===- LoopUtils.cpp - Helpers for writing the host reference loops -------===//

#include "LoopUtils.h"

#include <limits>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

Value LoopBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value LoopBuilder::f32(double v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(v)));
}
Value LoopBuilder::negInf() {
  return f32(-std::numeric_limits<double>::infinity());
}
Value LoopBuilder::dim(Value memref, unsigned d) {
  int64_t size = cast<MemRefType>(memref.getType()).getDimSize(d);
  if (!ShapedType::isDynamic(size))
    return idx(size);
  return memref::DimOp::create(b, loc, memref, d);
}
Value LoopBuilder::minDim(ArrayRef<std::pair<Value, unsigned>> dims) {
  Value result;
  for (auto [memref, d] : dims) {
    if (!memref)
      continue;
    Value size = dim(memref, d);
    result = result ? min(result, size) : size;
  }
  assert(result && "minDim needs at least one memref");
  return result;
}

Value LoopBuilder::add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
Value LoopBuilder::sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
Value LoopBuilder::mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
Value LoopBuilder::div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
Value LoopBuilder::rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
Value LoopBuilder::min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
Value LoopBuilder::max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
Value LoopBuilder::ceilDiv(Value x, Value y) {
  return arith::CeilDivUIOp::create(b, loc, x, y);
}
Value LoopBuilder::slice(Value buffer, Value i) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(rank, b.getIndexAttr(1));
  offsets[0] = i;
  sizes.push_back(b.getIndexAttr(1));
  for (int64_t d = 1; d < rank; ++d)
    sizes.push_back(type.isDynamicDim(d) ? OpFoldResult(dim(buffer, d))
                                         : b.getIndexAttr(type.getDimSize(d)));
  auto resultType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().drop_front(), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(resultType),
                                   buffer, offsets, sizes, strides);
}
Value LoopBuilder::clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
Value LoopBuilder::cmp(arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value LoopBuilder::inBounds(Value x, Value size) {
  return arith::AndIOp::create(b, loc,
                               cmp(arith::CmpIPredicate::sge, x, idx(0)),
                               cmp(arith::CmpIPredicate::slt, x, size));
}

Value LoopBuilder::fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
Value LoopBuilder::fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
Value LoopBuilder::fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
Value LoopBuilder::fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
Value LoopBuilder::fmax(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
Value LoopBuilder::exp(Value x) { return math::ExpOp::create(b, loc, x); }
Value LoopBuilder::log(Value x) { return math::LogOp::create(b, loc, x); }
Value LoopBuilder::fcmp(arith::CmpFPredicate p, Value x, Value y) {
  return arith::CmpFOp::create(b, loc, p, x, y);
}
Value LoopBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}

Value LoopBuilder::loadIndex(Value memref, ValueRange indices) {
  Value v = memref::LoadOp::create(b, loc, memref, indices);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value LoopBuilder::loadF32(Value memref, ValueRange indices) {
  Value v = memref::LoadOp::create(b, loc, memref, indices);
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

void LoopBuilder::storeF32(Value value, Value memref, ValueRange indices) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  if (elem != value.getType())
    value = arith::TruncFOp::create(b, loc, elem, value);
  memref::StoreOp::create(b, loc, value, memref, indices);
}

void LoopBuilder::storeIndex(Value value, Value memref, ValueRange indices) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  memref::StoreOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, elem, value), memref, indices);
}

void LoopBuilder::forLoop(Value lb, Value ub, function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lb, ub, idx(1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

SmallVector<Value>
LoopBuilder::forLoop(Value lb, Value ub, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, idx(1), init,
      [&](OpBuilder &nested, Location, Value iv, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        SmallVector<Value> next = body(iv, acc);
        scf::YieldOp::create(b, loc, next);
      });
  return SmallVector<Value>(loop.getResults());
}

void LoopBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value LoopBuilder::alloc(MemRefType type, ValueRange dynamicSizes) {
  return memref::AllocOp::create(b, loc, type, dynamicSizes);
}

void LoopBuilder::dealloc(Value memref) {
  memref::DeallocOp::create(b, loc, memref);
}

void LoopBuilder::ifThenElse(Value cond, function_ref<void()> thenBody,
                             function_ref<void()> elseBody) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  thenBody();
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  elseBody();
}

Value LoopBuilder::mulAddFree(Value acc, Value x, Value y) {
  auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  Value prod = arith::MulFOp::create(b, loc, x, y, flags);
  return arith::AddFOp::create(b, loc, acc, prod, flags);
}

/// Stores `value` to memref[indices..., *]: one loop per remaining dimension,
/// innermost over the last (contiguous) one.
static void fillFrom(LoopBuilder &lb, Value memref, Value value,
                     SmallVectorImpl<Value> &indices) {
  if (static_cast<int64_t>(indices.size()) ==
      cast<MemRefType>(memref.getType()).getRank()) {
    if (value.getType().isIndex())
      lb.storeIndex(value, memref, indices);
    else
      lb.storeF32(value, memref, indices);
    return;
  }
  lb.forLoop(lb.idx(0), lb.dim(memref, indices.size()), [&](Value iv) {
    indices.push_back(iv);
    fillFrom(lb, memref, value, indices);
    indices.pop_back();
  });
}

void LoopBuilder::fill(Value memref, Value value) {
  SmallVector<Value> indices;
  fillFrom(*this, memref, value, indices);
}

Value LoopBuilder::forEachGroup(
    Value ends, Value numGroups, Value limit,
    function_ref<void(Value g, Value begin, Value end)> body) {
  Value zero = idx(0);
  return forLoop(zero, numGroups, zero,
                 [&](Value g, ValueRange carried) -> SmallVector<Value> {
                   Value begin = carried.front();
                   Value end = clamp(loadIndex(ends, g), begin, limit);
                   body(g, begin, end);
                   return {end};
                 })
      .front();
}
