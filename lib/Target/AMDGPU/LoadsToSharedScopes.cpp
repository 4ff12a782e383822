//===- LoadsToSharedScopes.cpp - LDS reads noalias with loads to LDS -----===//

#include "tessel/Target/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOADSTOSHAREDSCOPES
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {

constexpr unsigned kSharedAddressSpace = 3;

/// Whether `op` reads LDS (and takes alias scopes).
bool readsShared(Operation *op) {
  if (auto load = dyn_cast<LLVM::LoadOp>(op))
    return load.getAddr().getType().getAddressSpace() == kSharedAddressSpace;
  return isa<ROCDL::ds_read_tr16_b64, ROCDL::ds_read_tr8_b64,
             ROCDL::ds_read_tr4_b64, ROCDL::ds_read_tr6_b96>(op);
}

struct TesselLoadsToSharedScopesPass
    : public tessel::impl::TesselLoadsToSharedScopesBase<
          TesselLoadsToSharedScopesPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      SmallVector<ROCDL::RawPtrBufferLoadLdsOp> loads;
      func.walk([&](ROCDL::RawPtrBufferLoadLdsOp op) { loads.push_back(op); });
      if (loads.empty())
        return;
      auto domain = LLVM::AliasScopeDomainAttr::get(
          ctx, StringAttr::get(ctx, func.getName()));
      auto scope = LLVM::AliasScopeAttr::get(
          domain, StringAttr::get(ctx, "loads to LDS"));
      auto scopes = ArrayAttr::get(ctx, {scope});
      for (ROCDL::RawPtrBufferLoadLdsOp op : loads)
        op.setAliasScopes(scopes);
      func.walk([&](Operation *op) {
        if (!readsShared(op))
          return;
        auto aliasing = cast<LLVM::AliasAnalysisOpInterface>(op);
        SmallVector<Attribute> noalias;
        if (ArrayAttr existing = aliasing.getNoAliasScopesOrNull())
          noalias.append(existing.begin(), existing.end());
        noalias.push_back(scope);
        aliasing.setNoAliasScopes(ArrayAttr::get(ctx, noalias));
      });
    });
  }
};

} // namespace
