//===- HostEntry.cpp - The runtime's entry into a host kernel -------------===//
//
// The runtime calls every kernel the same way, host or GPU: `entry(params)`
// where params[i] points to the i-th parameter value (the CUDA kernelParams
// convention): each buffer's data pointer, then each shape symbol as i64.
// This pass writes that entry for each kernel function: it loads the
// parameters, rebuilds row-major memref descriptors from the pointers and the
// symbolic shapes of the kernel signature, and calls the kernel body.
//
//===----------------------------------------------------------------------===//

#include "tessel/Conversion/Passes.h"
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

    SmallVector<Value> memrefs;
    for (auto [i, arg] : llvm::enumerate(sig.args))
      memrefs.push_back(descriptor(arg, loadParam(i, ptrType), symbols));
    func::CallOp::create(b, loc, kernel, memrefs);
    func::ReturnOp::create(b, loc);
  }

private:
  Value constant(int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  }

  /// *(T *)params[index]
  Value loadParam(int64_t index, Type type) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType, params,
                                     ArrayRef<LLVM::GEPArg>{index});
    Value valuePtr = LLVM::LoadOp::create(b, loc, ptrType, slot);
    return LLVM::LoadOp::create(b, loc, type, valuePtr);
  }

  /// The dense row-major memref over `data` with the argument's shape.
  Value descriptor(const KernelArg &arg, Value data, ArrayRef<Value> symbols) {
    int64_t rank = arg.type.getRank();
    SmallVector<Value> sizes;
    for (const KernelDim &d : arg.dims) {
      if (d.symbol < 0) {
        sizes.push_back(constant(d.constant));
        continue;
      }
      Value v = symbols[d.symbol];
      if (d.mul != 1)
        v = LLVM::MulOp::create(b, loc, v, constant(d.mul));
      if (d.add != 0)
        v = LLVM::AddOp::create(b, loc, v, constant(d.add));
      sizes.push_back(v);
    }
    SmallVector<Value> strides(rank);
    strides[rank - 1] = constant(1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = LLVM::MulOp::create(b, loc, strides[d + 1], sizes[d + 1]);

    auto arrayType = LLVM::LLVMArrayType::get(i64, rank);
    auto structType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), {ptrType, ptrType, i64, arrayType, arrayType});
    Value desc = LLVM::UndefOp::create(b, loc, structType);
    desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{0});
    desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{1});
    desc = LLVM::InsertValueOp::create(b, loc, desc, constant(0),
                                       ArrayRef<int64_t>{2});
    for (int64_t d = 0; d < rank; ++d) {
      desc = LLVM::InsertValueOp::create(b, loc, desc, sizes[d],
                                         ArrayRef<int64_t>{3, d});
      desc = LLVM::InsertValueOp::create(b, loc, desc, strides[d],
                                         ArrayRef<int64_t>{4, d});
    }
    // The memref-to-LLVM conversion turns `arg.type` into exactly this
    // struct, so the cast disappears in reconcile-unrealized-casts.
    return UnrealizedConversionCastOp::create(b, loc, arg.type, desc)
        .getResult(0);
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
