//===- TensorMapParams.cpp - TMA tensor maps as by-value parameters -------===//

#include "tessel/Conversion/Utils/KernelParams.h"
#include "tessel/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELTENSORMAPPARAMS
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Bytes and alignment of a CUtensorMap.
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlignment = 64;

struct TesselTensorMapParamsPass
    : public tessel::impl::TesselTensorMapParamsBase<
          TesselTensorMapParamsPass> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      FailureOr<SmallVector<TensorMapSpec>> maps = readTensorMaps(func);
      if (failed(maps))
        return signalPassFailure();
      unsigned count = maps->size(), params = func.getNumArguments();
      if (count > params) {
        func.emitError() << "lists " << count << " tensor maps but has "
                         << params << " parameters";
        return signalPassFailure();
      }
      MLIRContext *ctx = &getContext();
      Builder b(ctx);
      auto bytes = LLVM::LLVMArrayType::get(b.getI8Type(), kTensorMapBytes);
      for (unsigned i = params - count; i < params; ++i) {
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(bytes));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(kTensorMapAlignment));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
    });
  }
};

} // namespace
