//===- LoopAnnotations.cpp - scf.for annotations as LLVM loop metadata ---===//

#include "tessel/Target/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOOPANNOTATIONS
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {

constexpr StringLiteral kDiscardableName = "llvm.loop_annotation";

struct TesselLoopAnnotationsPass
    : public tessel::impl::TesselLoopAnnotationsBase<
          TesselLoopAnnotationsPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      auto annotation =
          op->getAttrOfType<LLVM::LoopAnnotationAttr>(kDiscardableName);
      if (!annotation)
        return;
      op->removeAttr(kDiscardableName);
      if (auto br = dyn_cast<LLVM::BrOp>(op))
        br.setLoopAnnotationAttr(annotation);
      else if (auto condBr = dyn_cast<LLVM::CondBrOp>(op))
        condBr.setLoopAnnotationAttr(annotation);
    });
  }
};

} // namespace
