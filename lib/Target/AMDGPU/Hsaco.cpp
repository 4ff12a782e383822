//===- Hsaco.cpp - Code objects from the AMDGCN of gpu.binary ops ---------===//
//
// MLIR serializes ROCDL gpu.modules to AMDGCN assembly in-process; its own
// step from there to a code object expects a ROCm installation (for
// ld.lld). This pass does that step with LLVM MC and the lld of the LLVM
// install, so AMD bundles build on any machine with LLVM 22.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/Linker.h"
#include "tessel/Target/Passes.h"

#include "mlir/Target/LLVM/ROCDL/Utils.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELHSACO
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct TesselHsacoPass : public tessel::impl::TesselHsacoBase<TesselHsacoPass> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](gpu::BinaryOp binary) {
      return failed(addHsaco(binary)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult addHsaco(gpu::BinaryOp binary) {
    SmallVector<Attribute> objects(binary.getObjects().begin(),
                                   binary.getObjects().end());
    auto emitError = [&] { return binary.emitError(); };
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<ROCDL::ROCDLTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      FailureOr<SmallVector<char, 0>> relocatable = ROCDL::assembleIsa(
          object.getObject().getValue(), target.getTriple(), target.getChip(),
          target.getFeatures(), emitError);
      if (failed(relocatable))
        return failure();
      FailureOr<std::vector<uint8_t>> hsaco = linkSharedObject(
          emitError, "the " + target.getChip().str() + " kernel", lld,
          *relocatable);
      if (failed(hsaco))
        return failure();
      StringRef bytes(reinterpret_cast<const char *>(hsaco->data()),
                      hsaco->size());
      objects.push_back(gpu::ObjectAttr::get(
          &getContext(), target, gpu::CompilationTarget::Binary,
          StringAttr::get(&getContext(), bytes), object.getProperties(),
          object.getKernels()));
    }
    binary.setObjectsAttr(ArrayAttr::get(&getContext(), objects));
    return success();
  }
};

} // namespace
