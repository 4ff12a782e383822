//===- Pipelines.cpp - Tessel compilation pipelines -----------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "tessel/Conversion/Passes.h"
#include "tessel/Dialect/Tessel/Transforms/Passes.h"
#include "tessel/Target/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
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

void mlir::tessel::buildNVVMPipeline(OpPassManager &pm,
                                     const NVVMPipelineOptions &options) {
  buildNVVMKernelPipeline(pm, options);
  buildNVVMSerializePipeline(pm, options);
}

void mlir::tessel::buildNVVMKernelPipeline(OpPassManager &pm,
                                           const NVVMPipelineOptions &options) {
  // One gpu.module per kernel, written with gpu/arith/scf/memref/vector ops
  // plus nvgpu/nvvm ops from the sm80 TargetInfo.
  TesselToGPUOptions toGPU;
  toGPU.chip = options.chip;
  toGPU.stages = options.stages;
  pm.addPass(createTesselToGPU(toGPU));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tessel::buildNVVMSerializePipeline(
    OpPassManager &pm, const NVVMPipelineOptions &options) {
  // Inside each gpu.module everything is in the NVVM/LLVM dialects: nvgpu
  // copies and ldmatrix become nvvm ops on pointers computed from the memref
  // descriptors, then vector and gpu (thread ids, shuffles, barriers,
  // workgroup buffers as .shared globals) follow.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());

  // The target must name the chip and PTX version: the defaults (sm_50,
  // ptx60) have no bf16 mma.sync or cp.async.
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.features = options.features;
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!options.serialize)
    return;

  // gpu.binary holding the PTX, from the LLVM NVPTX back end in-process.
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  if (!options.toolkit.empty())
    toBinary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(toBinary));

  // Plus the cubin of the GPU we ship for (ptxas; skipped with a warning
  // where there is none).
  if (!options.cubinArch.empty()) {
    TesselPtxasOptions ptxas;
    ptxas.arch = options.cubinArch;
    ptxas.toolkit = options.toolkit;
    ptxas.required = options.ptxasRequired;
    ptxas.verbose = options.ptxasVerbose;
    pm.addPass(createTesselPtxas(ptxas));
  }
}

void mlir::tessel::registerNVVMPipelineDependencies(DialectRegistry &registry) {
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  registerNVVMTranslations(registry);
}

void mlir::tessel::registerTesselPipelines() {
  PassPipelineRegistration<HostPipelineOptions>(
      "tessel-host-pipeline",
      "Lower tessel kernel functions to the LLVM dialect for the host",
      buildHostPipeline);
  PassPipelineRegistration<NVVMPipelineOptions>(
      "tessel-nvvm-pipeline",
      "Lower tessel kernel functions to NVVM and serialize them to PTX (and "
      "a cubin)",
      buildNVVMPipeline);
}
