//===- Pipelines.cpp - Tessel compilation pipelines -----------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "tessel/Conversion/Passes.h"
#include "tessel/Dialect/Tessel/Transforms/Passes.h"
#include "tessel/Target/Passes.h"

#include "mlir/Conversion/AMDGPUToROCDL/AMDGPUToROCDL.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
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

/// One gpu.module per kernel, written with gpu/arith/scf/memref/vector ops
/// plus the target ops of the chip's TargetInfo.
static void buildGPUKernelPipeline(OpPassManager &pm, StringRef chip,
                                   int64_t stages) {
  TesselToGPUOptions toGPU;
  toGPU.chip = chip.str();
  toGPU.stages = stages;
  pm.addPass(createTesselToGPU(toGPU));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tessel::buildNVVMKernelPipeline(OpPassManager &pm,
                                           const NVVMPipelineOptions &options) {
  buildGPUKernelPipeline(pm, options.chip, options.stages);
}

void mlir::tessel::buildNVVMSerializePipeline(
    OpPassManager &pm, const NVVMPipelineOptions &options) {
  // Inside each gpu.module everything is in the NVVM/LLVM dialects: nvgpu
  // copies and ldmatrix become nvvm ops on pointers computed from the memref
  // descriptors, then gpu (thread ids, shuffles, barriers, workgroup
  // buffers as .shared globals), vector, memref and arith go to NVVM/LLVM in
  // one conversion (a separate vector conversion before it would not know
  // the shared address space).
  // On sm_90a, the Hopper ops with no LLVM intrinsic (wgmma.mma_async,
  // mbarrier waits) become inline PTX, and TMA tensor maps become by-value
  // kernel parameters.
  bool hopper = options.chip == "sm_90a";
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  if (hopper)
    kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  if (hopper)
    pm.addPass(createTesselTensorMapParams());

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

void mlir::tessel::buildROCDLPipeline(OpPassManager &pm,
                                      const ROCDLPipelineOptions &options) {
  buildROCDLKernelPipeline(pm, options);
  buildROCDLSerializePipeline(pm, options);
}

void mlir::tessel::buildROCDLKernelPipeline(
    OpPassManager &pm, const ROCDLPipelineOptions &options) {
  buildGPUKernelPipeline(pm, options.chip, options.stages);
}

void mlir::tessel::buildROCDLSerializePipeline(
    OpPassManager &pm, const ROCDLPipelineOptions &options) {
  // amdgpu.mfma becomes the chip's rocdl.mfma intrinsic first; then gpu ops
  // (workitem ids, ds_bpermute shuffles, barriers, LDS as addrspace 3),
  // vector, memref and arith go to ROCDL/LLVM in one conversion.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  ConvertAMDGPUToROCDLPassOptions mfma;
  mfma.chipset = options.chip;
  kernels.addPass(createConvertAMDGPUToROCDLPass(mfma));
  ConvertGpuOpsToROCDLOpsOptions toROCDL;
  toROCDL.chipset = options.chip;
  toROCDL.runtime = gpu::amd::Runtime::HIP;
  kernels.addPass(createConvertGpuOpsToROCDLOps(toROCDL));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  pm.addPass(createTesselAMDGPUNoIEEE());
  pm.addPass(createTesselLoopAnnotations());
  pm.addPass(createTesselLoadsToSharedScopes());

  // Code object v5: what ROCm 5.x and 6.x load (v6 needs ROCm 6.2+).
  GpuROCDLAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.abiVersion = "500";
  attach.optLevel = 3;
  pm.addPass(createGpuROCDLAttachTarget(attach));
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!options.serialize)
    return;

  // AMDGCN assembly from the LLVM AMDGPU back end in-process, then the
  // hsaco (LLVM MC + ld.lld).
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
  TesselHsacoOptions hsaco;
  hsaco.lld = options.lld;
  pm.addPass(createTesselHsaco(hsaco));
}

static bool isNVIDIAChip(StringRef chip) { return chip.starts_with("sm_"); }

void mlir::tessel::buildEmulatorPipeline(
    OpPassManager &pm, const EmulatorPipelineOptions &options) {
  buildEmulatorKernelPipeline(pm, options);
  buildEmulatorSerializePipeline(pm, options);
}

void mlir::tessel::buildEmulatorKernelPipeline(
    OpPassManager &pm, const EmulatorPipelineOptions &options) {
  buildGPUKernelPipeline(pm, options.chip, options.stages);
}

void mlir::tessel::buildEmulatorSerializePipeline(
    OpPassManager &pm, const EmulatorPipelineOptions &options) {
  // The chip's own lowering, stopped where its back end would start.
  if (isNVIDIAChip(options.chip)) {
    NVVMPipelineOptions nvvm;
    nvvm.chip = options.chip;
    nvvm.serialize = false;
    buildNVVMSerializePipeline(pm, nvvm);
  } else {
    ROCDLPipelineOptions rocdl;
    rocdl.chip = options.chip;
    rocdl.serialize = false;
    buildROCDLSerializePipeline(pm, rocdl);
  }
  pm.addPass(createTesselEmulateGPU());
  pm.addPass(createCanonicalizerPass());
}

/// The convert-to-LLVM interfaces that the gpu-to-{nvvm,rocdl} conversions
/// apply to every loaded dialect.
static void registerConvertToLLVMInterfaces(DialectRegistry &registry) {
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

void mlir::tessel::registerROCDLPipelineDependencies(
    DialectRegistry &registry) {
  registerConvertToLLVMInterfaces(registry);
  registerROCDLTranslations(registry);
}

void mlir::tessel::registerNVVMPipelineDependencies(DialectRegistry &registry) {
  registerConvertToLLVMInterfaces(registry);
  registerConvertNVVMToLLVMInterface(registry);
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
  PassPipelineRegistration<ROCDLPipelineOptions>(
      "tessel-rocdl-pipeline",
      "Lower tessel kernel functions to ROCDL and serialize them to AMDGCN "
      "assembly and an hsaco",
      buildROCDLPipeline);
  PassPipelineRegistration<EmulatorPipelineOptions>(
      "tessel-emulator-pipeline",
      "Lower tessel kernel functions to a chip's GPU kernels and those to "
      "host code that the runtime's emulator runs lane by lane",
      buildEmulatorPipeline);
}
