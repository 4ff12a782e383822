//===- TargetInfo.cpp - Choosing a GPU target by chip name ----------------===//

#include "tessel/Target/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tessel;

TargetInfo::~TargetInfo() = default;

Value TargetInfo::truncateProbability(OpBuilder &b, Location loc, Type elem,
                                      Value p) const {
  if (auto vec = dyn_cast<VectorType>(p.getType()))
    elem = vec.clone(elem);
  return arith::TruncFOp::create(b, loc, elem, p);
}

Value TargetInfo::reductionPartner(OpBuilder &b, Location loc, Value x,
                                   int64_t distance) const {
  return gpu::ShuffleOp::create(b, loc, x, distance, getWarpSize(),
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Value TargetInfo::butterflyStep(
    OpBuilder &b, Location loc, Value x, int64_t distance,
    function_ref<Value(Value, Value)> combine) const {
  return combine(x, reductionPartner(b, loc, x, distance));
}

std::pair<Value, Value> TargetInfo::scanPartner(OpBuilder &b, Location loc,
                                                Value x, int64_t step,
                                                Value) const {
  return shuffleUp(b, loc, x, int64_t(1) << step);
}

Value TargetInfo::readLane(OpBuilder &b, Location loc, Value x,
                           Value lane) const {
  return gpu::ShuffleOp::create(b, loc, x, lane,
                                arith::ConstantIntOp::create(
                                    b, loc, b.getI32Type(), getWarpSize()),
                                gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

Value TargetInfo::bufferResource(OpBuilder &, Location, Value, Value) const {
  llvm_unreachable("bufferResource on a target without buffer loads");
}

Value TargetInfo::bufferLoad(OpBuilder &, Location, Type, Value, Value,
                             Value) const {
  llvm_unreachable("bufferLoad on a target without buffer loads");
}

void TargetInfo::bufferLoadToShared(OpBuilder &, Location, Value, Value, Value,
                                    Value, ValueRange, int64_t) const {
  llvm_unreachable("bufferLoadToShared on a target without it");
}

void TargetInfo::waitForLoadsToShared(OpBuilder &, Location, int64_t) const {
  llvm_unreachable("waitForLoadsToShared on a target without loads to shared "
                   "memory");
}

Fragment TargetInfo::accumulatorsAsOperandB(OpBuilder &, Location,
                                            const MmaAtom &, ArrayRef<Value>,
                                            int64_t) const {
  llvm_unreachable("accumulatorsAsOperandB on a target without it");
}

Value TargetInfo::operandKOfAccumulatorRow(OpBuilder &, Location,
                                           const MmaAtom &, Value) const {
  llvm_unreachable("operandKOfAccumulatorRow on a target without it");
}

void TargetInfo::waveBarrier(OpBuilder &, Location) const {
  llvm_unreachable("waveBarrier on a target without it");
}

FailureOr<std::unique_ptr<TargetInfo>>
TargetInfo::get(StringRef chip,
                llvm::function_ref<InFlightDiagnostic()> emitError) {
  if (std::unique_ptr<TargetInfo> nvidia = createNVIDIATargetInfo(chip))
    return nvidia;
  if (std::unique_ptr<TargetInfo> amd = createAMDTargetInfo(chip))
    return amd;
  return emitError() << "unknown GPU chip '" << chip
                     << "'; known chips: sm80 (sm_80), sm90a (sm_90a), gfx942, "
                        "gfx950";
}
