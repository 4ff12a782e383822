//===- MergeToLoops.cpp - host lowering (being written) ---------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult host::lowerLseMerge(LseMergeOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerLseMergeN(LseMergeNOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

