//===- Pipelines.h - Tessel compilation pipelines ---------------*- C++ -*-===//
//
// The pipelines from tessel ops to a target's LLVM dialect, as C++ functions
// with options. tessel-opt registers them; tessel-aot (and later the Python
// package) call the same functions.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PIPELINES_PIPELINES_H
#define TESSEL_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::tessel {

struct HostPipelineOptions : public PassPipelineOptions<HostPipelineOptions> {
  Option<bool> decompose{*this, "decompose",
                         llvm::cl::desc("Run tessel-decompose-phases (chunked "
                                        "extend, split-KV decode)"),
                         llvm::cl::init(true)};
  Option<int64_t> chunkTokens{
      *this, "chunk-tokens",
      llvm::cl::desc("Cached-context tokens per extend chunk"),
      llvm::cl::init(32768)};
  Option<int64_t> splitKvTokens{
      *this, "split-kv-tokens",
      llvm::cl::desc("Context tokens per split-KV decode partial (0: none)"),
      llvm::cl::init(16384)};
};

/// Kernel functions of tessel ops -> LLVM dialect for the host: each kernel
/// gets a `void (void **params)` entry and reference loops.
void buildHostPipeline(OpPassManager &pm, const HostPipelineOptions &options);

struct NVVMPipelineOptions : public PassPipelineOptions<NVVMPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("NVIDIA chip of the PTX (sm_80 "
                                          "runs on every sm80+ GPU; sm_90a "
                                          "adds Hopper's wgmma/TMA main "
                                          "loops, for 9.0 only)"),
                           llvm::cl::init("sm_80")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (the default "
                                              "ptx60 cannot express sm80)"),
                               llvm::cl::init("+ptx80")};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Shared-memory pipeline stages of "
                                        "matmul main loops (0: the target's "
                                        "default)"),
                         llvm::cl::init(0)};
  Option<bool> serialize{*this, "serialize",
                         llvm::cl::desc("Serialize each gpu.module to PTX "
                                        "(gpu.binary)"),
                         llvm::cl::init(true)};
  Option<std::string> cubinArch{
      *this, "cubin-arch",
      llvm::cl::desc("Also assemble the PTX with ptxas for this arch, when "
                     "ptxas is found (empty: PTX only)"),
      llvm::cl::init("sm_90")};
  Option<std::string> toolkit{*this, "toolkit",
                              llvm::cl::desc("CUDA toolkit folder (ptxas)"),
                              llvm::cl::init("")};
  Option<bool> ptxasRequired{*this, "ptxas-required",
                             llvm::cl::desc("Fail when ptxas is not found "
                                            "(instead of PTX only)"),
                             llvm::cl::init(false)};
  Option<bool> ptxasVerbose{*this, "ptxas-verbose",
                            llvm::cl::desc("Report ptxas resource usage "
                                           "(registers, spills) as remarks"),
                            llvm::cl::init(false)};
};

/// Kernel functions of tessel ops -> GPU kernels (tessel-to-gpu, sm80
/// TargetInfo) -> NVVM/LLVM -> PTX in a gpu.binary, plus a cubin for
/// `cubin-arch` when ptxas is available.
void buildNVVMPipeline(OpPassManager &pm, const NVVMPipelineOptions &options);

/// The two halves of buildNVVMPipeline, for callers that read the kernels'
/// launch geometry (`tessel.grid`, `known_block_size` on each gpu.func) in
/// between: kernel functions -> gpu.modules, then gpu.modules -> gpu.binary.
void buildNVVMKernelPipeline(OpPassManager &pm,
                             const NVVMPipelineOptions &options);
void buildNVVMSerializePipeline(OpPassManager &pm,
                                const NVVMPipelineOptions &options);

struct ROCDLPipelineOptions
    : public PassPipelineOptions<ROCDLPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("AMD chip (gfx942: MI300X/MI325X, "
                                          "gfx950: MI355X)"),
                           llvm::cl::init("gfx942")};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Shared-memory (LDS) pipeline stages "
                                        "of matmul main loops (0: the "
                                        "target's default)"),
                         llvm::cl::init(0)};
  Option<bool> serialize{*this, "serialize",
                         llvm::cl::desc("Serialize each gpu.module to AMDGCN "
                                        "assembly and an hsaco (gpu.binary)"),
                         llvm::cl::init(true)};
  Option<std::string> lld{*this, "lld",
                          llvm::cl::desc("ld.lld to link hsaco with (empty: "
                                         "the LLVM install's)"),
                          llvm::cl::init("")};
};

/// Kernel functions of tessel ops -> GPU kernels (tessel-to-gpu, CDNA
/// TargetInfo) -> ROCDL/LLVM -> AMDGCN assembly and an hsaco (code object
/// v5) in a gpu.binary. Needs no ROCm installation.
void buildROCDLPipeline(OpPassManager &pm, const ROCDLPipelineOptions &options);

/// The halves of buildROCDLPipeline, as for NVVM.
void buildROCDLKernelPipeline(OpPassManager &pm,
                              const ROCDLPipelineOptions &options);
void buildROCDLSerializePipeline(OpPassManager &pm,
                                 const ROCDLPipelineOptions &options);

struct EmulatorPipelineOptions
    : public PassPipelineOptions<EmulatorPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("The chip whose kernels are "
                                          "emulated: gfx942, gfx950 or "
                                          "sm_80"),
                           llvm::cl::init("gfx942")};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Shared-memory pipeline stages of "
                                        "matmul main loops (0: the chip's "
                                        "default)"),
                         llvm::cl::init(0)};
};

/// Kernel functions of tessel ops -> the chip's GPU kernels, lowered as for
/// the chip up to its back end (ROCDL or NVVM) -> host LLVM dialect run lane
/// by lane by the runtime's emulator (tessel-emulate-gpu); in two halves as
/// for NVVM, the first being the chip's own kernel pipeline.
void buildEmulatorPipeline(OpPassManager &pm,
                           const EmulatorPipelineOptions &options);
void buildEmulatorKernelPipeline(OpPassManager &pm,
                                 const EmulatorPipelineOptions &options);
void buildEmulatorSerializePipeline(OpPassManager &pm,
                                    const EmulatorPipelineOptions &options);

/// Registers what buildNVVMPipeline needs beyond its passes' dependent
/// dialects: the convert-to-LLVM interfaces that convert-gpu-to-nvvm applies
/// to every loaded dialect, and the LLVM IR translations of serialization.
void registerNVVMPipelineDependencies(DialectRegistry &registry);
/// The same for buildROCDLPipeline.
void registerROCDLPipelineDependencies(DialectRegistry &registry);

/// Registers `tessel-host-pipeline`, `tessel-nvvm-pipeline`,
/// `tessel-rocdl-pipeline` and `tessel-emulator-pipeline` with tessel-opt.
void registerTesselPipelines();

} // namespace mlir::tessel

#endif // TESSEL_PIPELINES_PIPELINES_H
