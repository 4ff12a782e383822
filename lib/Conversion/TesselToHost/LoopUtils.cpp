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
  return memref::DimOp::create(b, loc, memref, d);
}

Value LoopBuilder::add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
Value LoopBuilder::sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
Value LoopBuilder::mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
Value LoopBuilder::div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
Value LoopBuilder::rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
Value LoopBuilder::min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
Value LoopBuilder::max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
Value LoopBuilder::clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
Value LoopBuilder::cmp(arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
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
