//===- MatmulToLoops.cpp - host lowering (being written) ---------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult host::lowerGroupedMatmul(GroupedMatmulOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerGroupedMatmulWgrad(GroupedMatmulWgradOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

