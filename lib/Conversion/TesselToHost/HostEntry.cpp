//===- HostEntry.cpp - The runtime's entry into a host kernel -------------===//
//
// The runtime calls every kernel the same way, host or GPU: `entry(params)`
// where params[i] points to the i-th parameter value (the CUDA kernelParams
// convention): each buffer's data pointer or scalar's value, then each
// shape symbol as i64.
// This pass writes that entry for each kernel function: it loads the
// parameters, rebuilds row-major memref descriptors from the pointers and the
// symbolic shapes of the kernel signature, and calls the kernel body.
//
//===----------------------------------------------------------------------===//

#include "tessel/Conversion/Passes.h"
#include "tessel/Conversion/Utils/KernelParams.h"
#include "tessel/Dialect/Tessel/IR/KernelSignature.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELHOSTENTRY
#include "tessel/Conversion/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Builds the entry of one kernel in front of it.
class EntryBuilder {
public:
  EntryBuilder(func::FuncOp kernel, const KernelSignature &sig)
      : kernel(kernel), sig(sig), b(kernel), loc(kernel.getLoc()),
        ptrType(LLVM::LLVMPointerType::get(kernel.getContext())),
        i64(b.getI64Type()) {}

  void build(StringRef entryName) {
    auto entry = func::FuncOp::create(b, loc, entryName,
                                      b.getFunctionType({ptrType}, {}));
    entry->setAttr("tessel.entry", b.getUnitAttr());
    b.setInsertionPointToStart(entry.addEntryBlock());
    params = entry.getArgument(0);

    size_t numArgs = sig.args.size();
    SmallVector<Value> symbols;
    for (size_t s = 0; s < sig.symbols.size(); ++s)
      symbols.push_back(loadParam(numArgs + s, i64));

    SmallVector<Value> operands;
    for (auto [i, arg] : llvm::enumerate(sig.args))
      operands.push_back(arg.isScalar()
                             ? loadParam(i, arg.type)
                             : buildArgMemRef(b, loc, arg,
                                              loadParam(i, ptrType), symbols));
    func::CallOp::create(b, loc, kernel, operands);
    func::ReturnOp::create(b, loc);
  }

private:
  /// *(T *)params[index]
  Value loadParam(int64_t index, Type type) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType, params,
                                     ArrayRef<LLVM::GEPArg>{index});
    Value valuePtr = LLVM::LoadOp::create(b, loc, ptrType, slot);
    return LLVM::LoadOp::create(b, loc, type, valuePtr);
  }

  func::FuncOp kernel;
  const KernelSignature &sig;
  OpBuilder b;
  Location loc;
  Type ptrType, i64;
  Value params;
};

struct TesselHostEntryPass
    : public tessel::impl::TesselHostEntryBase<TesselHostEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func.isPublic() || func->hasAttr("tessel.entry"))
        continue;
      FailureOr<KernelSignature> sig = analyzeKernel(func);
      if (failed(sig))
        return signalPassFailure();
      std::string name = func.getName().str();
      if (failed(symbols.rename(func, name + ".impl")))
        return signalPassFailure();
      func.setPrivate();
      EntryBuilder(func, *sig).build(name);
    }
  }
};

} // namespace
