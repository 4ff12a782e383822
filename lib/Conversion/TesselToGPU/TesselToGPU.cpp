//===- TesselToGPU.cpp - Kernel functions to GPU kernels ------------------===//
//
// Each kernel function becomes a gpu.module holding one gpu.func that takes
// the runtime's parameters (data pointers and scalar values, then shape
// symbols as i64, then the TMA tensor maps a template asks for), rebuilds
// the argument memrefs and runs the op's template. The launch geometry the
// template chose (grid, block, dynamic shared memory) and its tensor maps
// are recorded on the gpu.func for tessel-aot.
//
//===----------------------------------------------------------------------===//

#include "Templates.h"

#include "tessel/Conversion/Passes.h"
#include "tessel/Conversion/Utils/KernelParams.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELTOGPU
#include "tessel/Conversion/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

Value KernelContext::scaleLog2(OpBuilder &b, Value scale) const {
  Location loc = scale.getLoc();
  Value log2e = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(llvm::numbers::log2e)));
  return arith::MulFOp::create(b, loc, arg(scale), log2e);
}

Value KernelContext::dimValue(OpBuilder &b, Value operand, unsigned d) const {
  const KernelDim &kd = dim(operand, d);
  Location loc = operand.getLoc();
  if (kd.symbol < 0)
    return arith::ConstantIndexOp::create(b, loc, kd.constant);
  Value v = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                       symbols[kd.symbol]);
  if (kd.mul != 1)
    v = arith::MulIOp::create(b, loc, v,
                              arith::ConstantIndexOp::create(b, loc, kd.mul));
  if (kd.add != 0)
    v = arith::AddIOp::create(b, loc, v,
                              arith::ConstantIndexOp::create(b, loc, kd.add));
  return v;
}

Value KernelContext::addTensorMap(TensorMapSpec spec) {
  unsigned index = kernel.getNumArguments();
  Type ptr = LLVM::LLVMPointerType::get(kernel.getContext());
  (void)kernel.insertArgument(index, ptr, DictionaryAttr(), kernel.getLoc());
  tensorMaps.push_back(std::move(spec));
  return kernel.getArgument(index);
}

namespace {

/// `tessel.grid`: per dimension [symbol, mul, add, div].
Attribute gridAttr(Builder &b, const LaunchGeometry &geometry) {
  SmallVector<Attribute> dims;
  for (const GridDim &d : geometry.grid)
    dims.push_back(b.getDenseI64ArrayAttr({d.symbol, d.mul, d.add, d.div}));
  return b.getArrayAttr(dims);
}

LogicalResult convertKernel(func::FuncOp func, const KernelSignature &sig,
                            const TargetInfo &target, int64_t stages) {
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  OpBuilder b(func);
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, func.getName());
  b.setInsertionPointToStart(gpuModule.getBody());

  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> params;
  for (const KernelArg &arg : sig.args)
    params.push_back(arg.isScalar() ? arg.type : ptr);
  params.append(sig.symbols.size(), b.getI64Type());
  auto kernel = gpu::GPUFuncOp::create(b, loc, func.getName(),
                                       b.getFunctionType(params, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToStart(&entry);

  KernelContext kc{sig, {}, {}, target, stages, kernel, {}};
  for (size_t s = 0; s < sig.symbols.size(); ++s)
    kc.symbols.push_back(kernel.getArgument(sig.args.size() + s));
  for (auto [i, arg] : llvm::enumerate(sig.args))
    kc.args.push_back(arg.isScalar() ? kernel.getArgument(i)
                                     : buildArgMemRef(b, loc, arg,
                                                      kernel.getArgument(i),
                                                      kc.symbols));

  FailureOr<LaunchGeometry> geometry =
      llvm::TypeSwitch<Operation *, FailureOr<LaunchGeometry>>(sig.op)
          .Case<GroupedMatmulOp>(
              [&](auto op) { return buildGroupedMatmul(b, op, kc); })
          .Case<GroupedMatmulWgradOp>(
              [&](auto op) { return buildGroupedMatmulWgrad(b, op, kc); })
          .Case<DecodeAttentionOp, PagedAttentionOp>(
              [&](auto op) { return buildPagedDecode(b, op, kc); })
          .Case<MLADecodeOp>(
              [&](auto op) { return buildMlaDecode(b, op, kc); })
          .Case<PrefillAttentionOp>(
              [&](auto op) { return buildPrefillAttention(b, op, kc); })
          .Case<LseMergeOp>([&](auto op) { return buildLseMerge(b, op, kc); })
          .Case<LseMergeNOp>(
              [&](auto op) { return buildLseMergeN(b, op, kc); })
          .Case<ReshapeAndCacheOp>(
              [&](auto op) { return buildReshapeAndCache(b, op, kc); })
          .Case<ExpertHistogramOp, ExpertSortOp, MoePermuteOp,
                MoeUnpermuteOp>(
              [&](Operation *op) { return buildMoEGlue(b, op, kc); })
          .Case<SwigluOp, SwigluBackwardOp>(
              [&](Operation *op) { return buildSwiglu(b, op, kc); })
          .Case<ExtendAttentionOp>([&](ExtendAttentionOp op) {
            return op.emitOpError()
                   << "is not one GPU kernel: on a GPU, extend is the new "
                      "tokens' prefill_attention and the cached context's "
                      "paged_attention (split form, with cu_seqlens), merged "
                      "by lse_merge_n (kernels <model>_extend_new and "
                      "_extend_context of the default set)";
          })
          .Default([&](Operation *) -> FailureOr<LaunchGeometry> {
            llvm_unreachable("every tessel op has a GPU template case");
          });
  if (failed(geometry))
    return failure();
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(geometry->block));
  kernel->setAttr("tessel.grid", gridAttr(b, *geometry));
  kernel->setAttr("tessel.shared_bytes",
                  b.getI64IntegerAttr(geometry->sharedBytes));
  if (!kc.tensorMaps.empty())
    kernel->setAttr(kTensorMapsAttrName, buildTensorMapsAttr(b, kc.tensorMaps));
  return success();
}

struct TesselToGPUPass
    : public tessel::impl::TesselToGPUBase<TesselToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::unique_ptr<TargetInfo>> target =
        TargetInfo::get(chip, [&] { return module.emitError(); });
    if (failed(target))
      return signalPassFailure();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func.isPublic())
        continue;
      FailureOr<KernelSignature> sig = analyzeKernel(func);
      if (failed(sig) || failed(convertKernel(func, *sig, **target, stages)))
        return signalPassFailure();
      func.erase();
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
  }
};

} // namespace
