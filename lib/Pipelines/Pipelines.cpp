//===- Pipelines.cpp - Tessel compilation pipelines -----------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "tessel/Conversion/Passes.h"
#include "tessel/Dialect/Tessel/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tessel;

void mlir::tessel::buildHostPipeline(OpPassManager &pm,
                                     const HostPipelineOptions &options) {
  // Every public kernel function gets its runtime entry while the tessel op
  // still describes its signature; the body moves to a private `.impl`.
  pm.addPass(createTesselHostEntry());

  // Extend becomes chunks + merges, long decode becomes split-KV partials.
  if (options.decompose) {
    TesselDecomposePhasesOptions decompose;
    decompose.chunkTokens = options.chunkTokens;
    decompose.splitKvTokens = options.splitKvTokens;
    pm.addNestedPass<func::FuncOp>(createTesselDecomposePhases(decompose));
  }

  // No tessel op remains: scf loops over memrefs with arith/math.
  pm.addPass(createTesselToHost());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // bf16 conversions become integer code (no libgcc helpers needed), strided
  // subviews become plain descriptor arithmetic (affine, then arith).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());

  // Everything is in the LLVM dialect.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tessel::registerTesselPipelines() {
  PassPipelineRegistration<HostPipelineOptions>(
      "tessel-host-pipeline",
      "Lower tessel kernel functions to the LLVM dialect for the host",
      buildHostPipeline);
}
