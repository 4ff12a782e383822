//===- TesselToHost.cpp - Lower tessel ops to reference loops -------------===//

#include "tessel/Conversion/Passes.h"

#include "LoopUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELTOHOST
#include "tessel/Conversion/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct TesselToHostPass
    : public tessel::impl::TesselToHostBase<TesselToHostPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<TesselDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      LogicalResult lowered =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](PrefillAttentionOp o) { return host::lowerPrefillAttention(o, b); })
              .Case([&](DecodeAttentionOp o) { return host::lowerDecodeAttention(o, b); })
              .Case([&](ExtendAttentionOp o) { return host::lowerExtendAttention(o, b); })
              .Case([&](PagedAttentionOp o) { return host::lowerPagedAttention(o, b); })
              .Case([&](MLADecodeOp o) { return host::lowerMLADecode(o, b); })
              .Case([&](ReshapeAndCacheOp o) { return host::lowerReshapeAndCache(o, b); })
              .Case([&](LseMergeOp o) { return host::lowerLseMerge(o, b); })
              .Case([&](LseMergeNOp o) { return host::lowerLseMergeN(o, b); })
              .Case([&](GroupedMatmulOp o) { return host::lowerGroupedMatmul(o, b); })
              .Case([&](GroupedMatmulWgradOp o) { return host::lowerGroupedMatmulWgrad(o, b); })
              .Case([&](ExpertHistogramOp o) { return host::lowerExpertHistogram(o, b); })
              .Case([&](ExpertSortOp o) { return host::lowerExpertSort(o, b); })
              .Case([&](MoePermuteOp o) { return host::lowerMoePermute(o, b); })
              .Case([&](MoeUnpermuteOp o) { return host::lowerMoeUnpermute(o, b); })
              .Case([&](SwigluOp o) { return host::lowerSwiglu(o, b); })
              .Case([&](SwigluBackwardOp o) { return host::lowerSwigluBackward(o, b); })
              .Default([](Operation *) -> LogicalResult {
                llvm_unreachable("every tessel op has a host lowering");
              });
      if (failed(lowered))
        return signalPassFailure();
      op->erase();
    }
  }
};

} // namespace
