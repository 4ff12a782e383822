//===- NoIEEE.cpp - AMD kernels with the IEEE mode bit off ----------------===//

#include "tessel/Target/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELAMDGPUNOIEEE
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {

struct TesselAMDGPUNoIEEEPass
    : public tessel::impl::TesselAMDGPUNoIEEEBase<TesselAMDGPUNoIEEEPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    Attribute ieeeOff = b.getArrayAttr(
        {b.getStringAttr("amdgpu-ieee"), b.getStringAttr("false")});
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      if (!func->hasAttr(ROCDL::ROCDLDialect::getKernelFuncAttrName()))
        return;
      SmallVector<Attribute> passthrough;
      if (ArrayAttr existing = func.getPassthroughAttr())
        passthrough.append(existing.begin(), existing.end());
      if (!llvm::is_contained(passthrough, ieeeOff))
        passthrough.push_back(ieeeOff);
      func.setPassthroughAttr(b.getArrayAttr(passthrough));
    });
  }
};

} // namespace
