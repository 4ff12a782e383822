//===- MoEToLoops.cpp - host lowering (being written) ---------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult host::lowerExpertHistogram(ExpertHistogramOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerExpertSort(ExpertSortOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerMoePermute(MoePermuteOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerMoeUnpermute(MoeUnpermuteOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

