//===- AttentionToLoops.cpp - host lowering (being written) ---------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult host::lowerPrefillAttention(PrefillAttentionOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerDecodeAttention(DecodeAttentionOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerExtendAttention(ExtendAttentionOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerPagedAttention(PagedAttentionOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerMLADecode(MLADecodeOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

LogicalResult host::lowerReshapeAndCache(ReshapeAndCacheOp op, OpBuilder &b) {
  return op.emitOpError("host lowering not written yet");
}

